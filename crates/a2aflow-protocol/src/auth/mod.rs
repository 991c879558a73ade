//! Credentials on the wire: per-agent credential profiles, the host's [`AuthProvider`], and the
//! per-agent header source [`AgentAuth`] the transport asks for headers through
//! [`RequestHeaders`].
//!
//! - [`Credentials`] loads the reference engines' credentials file (agent-keyed or profile form)
//!   and resolves every value eagerly: `env:NAME` from an [`Environment`] (process environment,
//!   optionally completed by an explicit `.env` file), `enc:` values decrypted with AES-256-GCM
//!   ([`decrypt_secret`], key from `A2AT_CRED_KEY`). Any problem fails at construction.
//! - [`AgentAuth::builder`] matches the AgentCard's `securityRequirements` (OR of AND-groups)
//!   against the credentials and the provider, and fails with `auth.requirement_unsatisfied` when
//!   none can be met.
//! - At construction, credentials from the file are bound to an origin the user configured
//!   ([`ConfiguredOrigin`]: the agent URL its card was fetched from, or the entry's
//!   `allowed_origins`), never to one the card alone names: a card whose interface is elsewhere is
//!   `auth.host_mismatch`, one fetched over https whose interface is plain http is
//!   `auth.insecure_downgrade`.
//! - At request time [`AgentAuth`]'s [`RequestHeaders::headers_for`] (the transport's seam, defined
//!   in [`crate::headers`]) checks the URL's origin (scheme, host, port)
//!   against the interface URL the credentials were bound to (`auth.host_mismatch`), fetches or
//!   reuses tokens through a [`TokenFetcher`] ([`HttpTokenFetcher`] sends them over HTTP(S)),
//!   asks the provider, and merges everything, failing
//!   with `auth.conflicting_headers` when two sources disagree on a header.
//!
//! Secrets are held in [`Secret`], whose `Debug`/`Display` print `***`; no error message built
//! here contains a credential value.

use a2a::{AgentCard, SecurityScheme};
use a2aflow_model::{ErrorCode, Failure};
use async_trait::async_trait;
use http::{HeaderMap, HeaderName, Uri};

pub use crate::headers::RequestHeaders;

mod agent;
mod crypto;
mod env;
mod file;
mod oauth2;
mod origin;
mod requirement;
mod secret;
mod token;

pub use agent::{AgentAuth, AgentAuthBuilder, DEFAULT_PROVIDER_TIMEOUT};
pub use crypto::{
    CREDENTIAL_KEY_VAR, CredentialKey, ENCRYPTED_PREFIX, decrypt_secret, decrypt_with,
    encrypt_secret, is_encrypted,
};
pub use env::{Environment, is_valid_name, parse_env_file, read_env_file};
pub use file::{
    ALLOWED_ORIGINS_KEY, AgentCredentials, CredentialSource, Credentials, ENV_PREFIX, LoginConfig,
    LoginEncoding, LoginField, OAuth2Config, SchemeCredential, deep_merge,
};
pub use oauth2::{HttpTokenFetcher, MAX_TOKEN_RESPONSE};
pub use origin::{ConfiguredOrigin, Origin};
pub use secret::Secret;
pub use token::{
    DEFAULT_TOKEN_TIMEOUT, DEFAULT_TOKEN_TTL_SECS, LOGIN_TOKEN_FALLBACKS, REFRESH_MARGIN,
    TokenFetcher, TokenRequest, TokenResponse, form_encode,
};

/// What an [`AuthProvider`] is told about the request it supplies headers for.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct AuthRequest<'a> {
    /// The agent's card name.
    pub agent: &'a str,
    /// The agent's card.
    pub card: &'a AgentCard,
    /// The URL the request goes to (already checked against the bound origin).
    pub url: &'a Uri,
}

/// Host-supplied headers (a gateway token, a vault-issued credential, a tenant header, …).
///
/// **Async** (through `async_trait`), because real providers talk to token services; every call is
/// bounded by the builder's provider timeout. It is called for every request of the agent — also
/// when the card declares no security scheme — and its headers are merged with the credential
/// headers; a header both set to different values fails with `auth.conflicting_headers`.
/// Provider errors should carry stable codes and redacted messages; they are returned unchanged.
#[async_trait]
pub trait AuthProvider: Send + Sync {
    /// Headers for one request.
    async fn headers(&self, request: AuthRequest<'_>) -> Result<HeaderMap, Failure>;

    /// Whether this provider satisfies security scheme `scheme_name` of `agent`'s card when the
    /// credentials file does not. Used once, at construction. Default: yes (the provider takes
    /// responsibility for any scheme).
    fn covers(&self, agent: &str, scheme_name: &str, scheme: &SecurityScheme) -> bool {
        let _ = (agent, scheme_name, scheme);
        true
    }

    /// Told that `agent` answered 401; return true when the provider's next headers may differ
    /// (for example after dropping its own cached token). Default: false.
    async fn on_unauthorized(&self, agent: &str) -> bool {
        let _ = agent;
        false
    }
}

/// Merges `source` into `target`. A header present in both must have the same values (header names
/// compare case-insensitively); otherwise it fails with `auth.conflicting_headers` naming the
/// header, never the values, and `target` is left unchanged.
pub fn merge_headers(
    target: &mut HeaderMap,
    source: HeaderMap,
    agent: &str,
) -> Result<(), Failure> {
    for name in source.keys() {
        if target.contains_key(name) {
            let a: Vec<_> = target.get_all(name).iter().collect();
            let b: Vec<_> = source.get_all(name).iter().collect();
            if a != b {
                return Err(Failure::new(
                    ErrorCode::AuthConflictingHeaders,
                    format!("Authentication header conflict for agent {agent}: {name}"),
                )
                .with_detail("agent", agent)
                .with_detail("header", name.as_str()));
            }
        }
    }
    let existing: Vec<HeaderName> = target.keys().cloned().collect();
    let mut last: Option<HeaderName> = None;
    for (name, value) in source {
        if let Some(n) = name {
            last = Some(n);
        }
        // `HeaderMap::into_iter` yields the name once, then `None` for further values of it.
        let Some(name) = last.clone() else { continue };
        if !existing.contains(&name) {
            target.append(name, value);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn merge_is_case_insensitive_and_rejects_different_values() {
        let mut a = HeaderMap::new();
        a.insert("Authorization", HeaderValue::from_static("Bearer one"));
        let mut same = HeaderMap::new();
        same.insert("authorization", HeaderValue::from_static("Bearer one"));
        same.insert("x-other", HeaderValue::from_static("o"));
        merge_headers(&mut a, same, "A").unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!(a.get_all("authorization").iter().count(), 1);

        let mut other = HeaderMap::new();
        other.insert("AUTHORIZATION", HeaderValue::from_static("Bearer two"));
        let e = merge_headers(&mut a, other, "Test Agent").unwrap_err();
        assert!(e.is(ErrorCode::AuthConflictingHeaders));
        assert_eq!(
            e.message,
            "Authentication header conflict for agent Test Agent: authorization"
        );
        assert!(!e.message.contains("two"));
        assert_eq!(a["authorization"], "Bearer one");
    }
}
