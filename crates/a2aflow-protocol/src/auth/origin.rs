//! The origin (scheme, host, port) credentials are bound to, and the check that keeps them there.

use std::fmt;

use a2aflow_model::{ErrorCode, Failure};
use http::Uri;

/// Scheme, host and port of a URL, compared exactly (host case-insensitively; a missing port is
/// the scheme's default, so `https://a:443` and `https://a` are the same origin).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Origin {
    scheme: String,
    host: String,
    port: u16,
}

impl Origin {
    /// The origin of an absolute `http`/`https` URL. Anything else is `config.invalid_credentials`
    /// (credentials must be bound to a concrete origin).
    pub fn of(uri: &Uri) -> Result<Self, Failure> {
        let invalid = |why: &str| {
            Failure::new(
                ErrorCode::ConfigInvalidCredentials,
                format!("credentials need an absolute http(s) URL to bind to: {why}"),
            )
        };
        let scheme = uri
            .scheme_str()
            .ok_or_else(|| invalid("no scheme"))?
            .to_ascii_lowercase();
        let default_port = match scheme.as_str() {
            "https" => 443,
            "http" => 80,
            _ => return Err(invalid("scheme is not http or https")),
        };
        let host = uri
            .host()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| invalid("no host"))?
            .to_ascii_lowercase();
        Ok(Origin {
            scheme,
            host,
            port: uri.port_u16().unwrap_or(default_port),
        })
    }

    /// Parses `url` and takes its origin.
    pub fn parse(url: &str) -> Result<Self, Failure> {
        let uri: Uri = url.parse().map_err(|_| {
            Failure::new(
                ErrorCode::ConfigInvalidCredentials,
                "credentials need an absolute http(s) URL to bind to: the URL does not parse",
            )
        })?;
        Self::of(&uri)
    }

    /// `Ok` when `uri` has exactly this origin; `auth.host_mismatch` otherwise (also when `uri`
    /// has no usable origin). Call it for every request that would carry credentials, redirects
    /// included.
    pub fn check(&self, uri: &Uri) -> Result<(), Failure> {
        match Origin::of(uri) {
            Ok(other) if other == *self => Ok(()),
            Ok(other) => Err(Failure::new(
                ErrorCode::AuthHostMismatch,
                format!("credentials configured for {self} would be sent to {other}; refused"),
            )
            .with_detail("configuredOrigin", self.to_string())
            .with_detail("requestOrigin", other.to_string())),
            Err(_) => Err(Failure::new(
                ErrorCode::AuthHostMismatch,
                format!("credentials configured for {self} would be sent to a URL without an http(s) origin; refused"),
            )
            .with_detail("configuredOrigin", self.to_string())),
        }
    }
}

impl Origin {
    /// True for `https`.
    pub fn is_https(&self) -> bool {
        self.scheme == "https"
    }
}

/// Who chose the origin the credentials of an agent may go to (see
/// [`AgentAuthBuilder::configured_origin`](super::AgentAuthBuilder::configured_origin)).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ConfiguredOrigin {
    /// The caller chose the interface URL given to [`AgentAuth::builder`](super::AgentAuth::builder)
    /// (the default, for hosts that build transports by hand): credentials go to its origin and
    /// to the entry's `allowed_origins`.
    #[default]
    Interface,
    /// The user configured this agent URL (the card was fetched from it; the card chose the
    /// interface URL). Credentials go to the interface only when it has the agent URL's origin or
    /// one of the entry's `allowed_origins`, and never over `http` when the agent URL is `https`.
    AgentUrl(String),
    /// Nobody configured an origin for the agent (a card given without the URL it came from):
    /// credentials go only to the entry's `allowed_origins`.
    Unknown,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}:{}", self.scheme, self.host, self.port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_ports_and_case_are_normalised() {
        let o = Origin::parse("https://Agent.Example/a2a").unwrap();
        assert_eq!(o.to_string(), "https://agent.example:443");
        o.check(&"https://agent.example:443/other?x=1".parse().unwrap())
            .unwrap();
    }

    #[test]
    fn scheme_host_and_port_must_all_match() {
        let o = Origin::parse("https://agent.example/a2a").unwrap();
        for other in [
            "http://agent.example/a2a",
            "https://evil.example/a2a",
            "https://agent.example:8443/a2a",
            "https://agent.example.evil.example/a2a",
            "/relative",
        ] {
            let e = o.check(&other.parse().unwrap()).unwrap_err();
            assert!(e.is(ErrorCode::AuthHostMismatch), "{other}");
        }
    }

    #[test]
    fn binding_needs_an_http_origin() {
        for bad in ["ftp://x/", "/relative", "not a url"] {
            assert!(
                Origin::parse(bad)
                    .unwrap_err()
                    .is(ErrorCode::ConfigInvalidCredentials)
            );
        }
    }
}
