//! Matching an AgentCard's `securityRequirements` against configured credentials and an
//! [`AuthProvider`](super::AuthProvider): OR across requirements, AND within one. The first
//! requirement whose every scheme is covered wins and is applied in full.

use std::sync::Arc;
use std::time::Duration;

use a2a::{AgentCard, OAuthFlows, SecurityScheme};
use a2aflow_model::{ErrorCode, Failure};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::header::{AUTHORIZATION, COOKIE};
use http::{HeaderMap, HeaderName, HeaderValue};

use super::AuthProvider;
use super::file::{AgentCredentials, CredentialSource, SchemeCredential};
use super::merge_headers;
use super::origin::Origin;
use super::secret::Secret;
use super::token::{TokenCache, TokenSpec};

/// Where a token goes on the request.
#[derive(Debug, Clone)]
pub(crate) enum Placement {
    /// `<name>: <prefix><token>`.
    Header { name: HeaderName, prefix: String },
    /// `Cookie: <name>=<token>`.
    Cookie { name: String },
}

impl Placement {
    pub(crate) fn header_name(&self) -> HeaderName {
        match self {
            Placement::Header { name, .. } => name.clone(),
            Placement::Cookie { .. } => COOKIE,
        }
    }

    /// The header carrying `token`, marked sensitive.
    pub(crate) fn render(&self, token: &Secret) -> Option<(HeaderName, HeaderValue)> {
        let text = match self {
            Placement::Header { prefix, .. } => format!("{prefix}{}", token.expose()),
            Placement::Cookie { name } => format!("{name}={}", token.expose()),
        };
        let mut value = HeaderValue::from_str(&text).ok()?;
        value.set_sensitive(true);
        Some((self.header_name(), value))
    }
}

/// What one covered scheme contributes to every request.
#[derive(Debug)]
pub(crate) struct SchemePlan {
    pub(crate) scheme: String,
    /// Headers known at construction (static tokens, custom headers).
    pub(crate) fixed: HeaderMap,
    /// A token fetched (and cached) at request time, and where it goes.
    pub(crate) fetched: Option<(Arc<TokenCache>, Placement)>,
}

/// The chosen requirement.
#[derive(Debug, Default)]
pub(crate) struct Choice {
    pub(crate) plans: Vec<SchemePlan>,
    /// Scheme names the provider is trusted to cover.
    pub(crate) by_provider: Vec<String>,
}

pub(crate) struct Inputs<'a> {
    pub(crate) card: &'a AgentCard,
    pub(crate) credentials: Option<&'a AgentCredentials>,
    pub(crate) provider: Option<&'a dyn AuthProvider>,
    pub(crate) client_identity: bool,
    pub(crate) token_timeout: Duration,
    /// When the card was not chosen by the caller: the origins the user configured, which a URL
    /// the card names (an OAuth2 `tokenUrl`) must have before a secret is sent to it.
    pub(crate) card_url_origins: Option<&'a [Origin]>,
}

/// Picks the first satisfiable requirement, or fails with `auth.requirement_unsatisfied`.
pub(crate) fn choose(inputs: &Inputs<'_>) -> Result<Choice, Failure> {
    let card = inputs.card;
    let agent = card.name.as_str();
    let requirements = card.security_requirements.as_deref().unwrap_or_default();
    if requirements.is_empty() {
        return Ok(Choice::default());
    }
    let declared = card.security_schemes.as_ref();
    let mut reasons = Vec::new();
    let mut all_schemes = Vec::new();
    for requirement in requirements {
        let mut names: Vec<(&String, &Vec<String>)> = requirement.iter().collect();
        names.sort();
        let mut choice = Choice::default();
        let mut missing = Vec::new();
        for (name, scopes) in &names {
            if !all_schemes.contains(*name) {
                all_schemes.push((*name).clone());
            }
            let Some(def) = declared.and_then(|d| d.get(name.as_str())) else {
                missing.push(format!(
                    "scheme '{name}' is not declared in securitySchemes"
                ));
                continue;
            };
            let provider_covers = inputs.provider.is_some_and(|p| p.covers(agent, name, def));
            if matches!(def, SecurityScheme::MutualTls(_)) && inputs.client_identity {
                continue;
            }
            let planned = match inputs.credentials.and_then(|c| c.scheme(name)) {
                Some(cred) => plan(name, def, cred, scopes, inputs),
                None => Err(Unusable::Missing(format!(
                    "no credentials configured for scheme '{name}'"
                ))),
            };
            match planned {
                Ok(p) => choice.plans.push(p),
                Err(Unusable::Refused(f)) => return Err(f),
                Err(_) if provider_covers => choice.by_provider.push((*name).clone()),
                Err(Unusable::Missing(why)) => missing.push(why),
            }
        }
        if missing.is_empty() {
            return Ok(choice);
        }
        let group: Vec<&str> = names.iter().map(|(n, _)| n.as_str()).collect();
        reasons.push(format!("[{}]: {}", group.join(" AND "), missing.join("; ")));
    }
    let nothing_configured =
        inputs.credentials.is_none_or(|c| c.is_empty()) && inputs.provider.is_none();
    let message = if nothing_configured {
        format!(
            "Agent {agent} declares authentication ({}) but none are configured: no credentials and no auth provider",
            all_schemes.join(", ")
        )
    } else {
        format!(
            "Authentication requirements are not satisfied for agent {agent}: {}",
            reasons.join(" OR ")
        )
    };
    Err(Failure::new(ErrorCode::AuthRequirementUnsatisfied, message)
        .with_detail("agent", agent)
        .with_detail("schemes", all_schemes))
}

/// Why a configured entry cannot be used for a scheme.
enum Unusable {
    /// The entry does not fit the scheme (another requirement, or the provider, may still do).
    Missing(String),
    /// The entry contradicts itself (two values for one header), or would send a secret where the
    /// user did not configure it: fails construction whatever else could satisfy the card.
    Refused(Failure),
}

impl From<String> for Unusable {
    fn from(why: String) -> Self {
        Unusable::Missing(why)
    }
}

fn plan(
    name: &str,
    def: &SecurityScheme,
    cred: &SchemeCredential,
    scopes: &[String],
    inputs: &Inputs<'_>,
) -> Result<SchemePlan, Unusable> {
    let agent = inputs.card.name.as_str();
    let token_timeout = inputs.token_timeout;
    let mut fixed = HeaderMap::new();
    for (n, v) in &cred.headers {
        let mut value = HeaderValue::from_str(v.expose())
            .map_err(|_| format!("scheme '{name}': a custom header value is invalid"))?;
        value.set_sensitive(true);
        fixed.append(n.clone(), value);
    }
    let mut fetched = None;
    let placement = || placement(name, def, cred);
    match &cred.source {
        CredentialSource::HeadersOnly => {
            if let SecurityScheme::ApiKey(k) = def {
                let covered = k.location.eq_ignore_ascii_case("header")
                    && HeaderName::from_bytes(k.name.as_bytes())
                        .is_ok_and(|h| fixed.contains_key(h));
                if !covered {
                    return Err(Unusable::Missing(format!(
                        "scheme '{name}': its custom headers do not include the API-key header {}",
                        k.name
                    )));
                }
            }
        }
        CredentialSource::Static(token) => {
            add_token(&mut fixed, &placement()?, token, name, agent)?;
        }
        CredentialSource::Basic { username, password } => {
            let is_basic = matches!(def, SecurityScheme::HttpAuth(h) if h.scheme.eq_ignore_ascii_case("basic"));
            if !is_basic && cred.auth_header.is_none() {
                return Err(Unusable::Missing(format!(
                    "scheme '{name}': username/password without login_url only fits an HTTP basic scheme"
                )));
            }
            let encoded = Secret::new(STANDARD.encode(format!(
                "{}:{}",
                username.expose(),
                password.expose()
            )));
            add_token(&mut fixed, &placement()?, &encoded, name, agent)?;
        }
        CredentialSource::OAuth2(cfg) => {
            let card_url = match def {
                SecurityScheme::OAuth2(o) => match &o.flows {
                    OAuthFlows::ClientCredentials(f) => Some(f.token_url.clone()),
                    _ => None,
                },
                _ => None,
            };
            let from_card = cfg.token_url.is_none();
            let token_url = cfg.token_url.clone().or(card_url).ok_or_else(|| {
                format!(
                    "scheme '{name}': OAuth2 needs `token_url` (the card declares no clientCredentials flow)"
                )
            })?;
            let token_origin = Origin::parse(&token_url).map_err(|_| {
                format!("scheme '{name}': the token URL is not an absolute http(s) URL")
            })?;
            if let Some(allowed) = inputs.card_url_origins.filter(|_| from_card)
                && !allowed.contains(&token_origin)
            {
                return Err(Unusable::Refused(
                        Failure::new(
                            ErrorCode::AuthHostMismatch,
                            format!(
                                "the card of agent {agent} names the OAuth2 token URL of scheme {name} at {token_origin}, an origin not configured for the agent; the client secret is not sent there (set token_url in the credentials entry, or list \"{token_origin}\" in allowed_origins)"
                            ),
                        )
                        .with_detail("agent", agent)
                        .with_detail("scheme", name)
                        .with_detail("tokenOrigin", token_origin.to_string()),
                    ));
            }
            let scopes = cfg.scopes.clone().unwrap_or_else(|| scopes.to_vec());
            let spec = TokenSpec::oauth2(cfg, token_url, scopes);
            fetched = Some((
                Arc::new(TokenCache::new(spec, agent, token_timeout)),
                placement()?,
            ));
        }
        CredentialSource::Login(login) => {
            fetched = Some((
                Arc::new(TokenCache::new(
                    TokenSpec::Login(login.clone()),
                    agent,
                    token_timeout,
                )),
                placement()?,
            ));
        }
    }
    Ok(SchemePlan {
        scheme: name.to_owned(),
        fixed,
        fetched,
    })
}

/// Adds the token's header to the entry's custom headers; a custom header of the same name with
/// another value is `auth.conflicting_headers` for `agent`, naming the scheme.
fn add_token(
    fixed: &mut HeaderMap,
    placement: &Placement,
    token: &Secret,
    scheme: &str,
    agent: &str,
) -> Result<(), Unusable> {
    let (n, v) = placement.render(token).ok_or_else(|| {
        Unusable::Missing(format!(
            "scheme '{scheme}': the credential is not a valid header value"
        ))
    })?;
    let mut one = HeaderMap::new();
    one.insert(n, v);
    merge_headers(fixed, one, agent).map_err(|f| {
        Unusable::Refused(
            Failure {
                message: format!("{} (scheme {scheme})", f.message),
                ..f
            }
            .with_detail("scheme", scheme),
        )
    })
}

/// Where the token of `cred` goes for scheme `def` (the reference engines' mapping).
fn placement(
    name: &str,
    def: &SecurityScheme,
    cred: &SchemeCredential,
) -> Result<Placement, String> {
    if let Some(h) = &cred.auth_header {
        return Ok(Placement::Header {
            name: h.clone(),
            prefix: cred.auth_header_prefix.clone().unwrap_or_default(),
        });
    }
    match def {
        SecurityScheme::ApiKey(k) => {
            if k.location.eq_ignore_ascii_case("header") {
                let header = HeaderName::from_bytes(k.name.trim().as_bytes()).map_err(|_| {
                    format!("scheme '{name}': the card's API-key header name is invalid")
                })?;
                Ok(Placement::Header {
                    name: header,
                    prefix: String::new(),
                })
            } else if k.location.eq_ignore_ascii_case("cookie") {
                Ok(Placement::Cookie {
                    name: k.name.clone(),
                })
            } else {
                Err(format!(
                    "scheme '{name}': API keys in `{}` are not supported (set auth_header to send it as a header)",
                    k.location
                ))
            }
        }
        SecurityScheme::HttpAuth(h) => {
            let prefix = if h.scheme.eq_ignore_ascii_case("bearer") {
                "Bearer ".to_owned()
            } else if h.scheme.eq_ignore_ascii_case("basic") {
                "Basic ".to_owned()
            } else {
                format!("{} ", h.scheme.trim())
            };
            Ok(Placement::Header {
                name: AUTHORIZATION,
                prefix,
            })
        }
        SecurityScheme::OAuth2(_) | SecurityScheme::OpenIdConnect(_) => Ok(Placement::Header {
            name: AUTHORIZATION,
            prefix: "Bearer ".to_owned(),
        }),
        SecurityScheme::MutualTls(_) => Err(format!(
            "scheme '{name}' is mutual TLS: it is satisfied by a TLS client certificate, not a header"
        )),
    }
}
