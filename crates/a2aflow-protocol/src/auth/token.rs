//! Fetched tokens (OAuth2 client credentials and the reference login request): the
//! [`TokenFetcher`] seam, the request bodies, response parsing, and a per-scheme cache.

use std::time::Duration;

use a2aflow_model::{ErrorCode, Failure};
use async_trait::async_trait;
use bytes::Bytes;
use http::Method;
use serde_json::{Map, Value};
use tokio::sync::Mutex;
use tokio::time::Instant;

use super::file::{LoginConfig, LoginEncoding, LoginField, OAuth2Config};
use super::secret::Secret;

/// Default time a token fetch may take before it fails with `auth.token_request_failed`.
pub const DEFAULT_TOKEN_TIMEOUT: Duration = Duration::from_secs(30);
/// Default cache lifetime of a token whose response gives none (seconds).
pub const DEFAULT_TOKEN_TTL_SECS: u64 = 3600;
/// A cached token is refreshed this long before it expires (at most half its lifetime).
pub const REFRESH_MARGIN: Duration = Duration::from_secs(60);
/// The token fields tried, in order, after a login's `token_field`.
pub const LOGIN_TOKEN_FALLBACKS: [&str; 4] =
    ["accessSession", "access_session", "access_token", "token"];

/// One HTTP request for a token. The body holds secrets: a fetcher must never log it (if it uses
/// the wire log, log the request with `body` omitted).
#[derive(Debug, Clone)]
pub struct TokenRequest {
    /// Absolute URL of the token or login endpoint.
    pub url: String,
    /// HTTP method (POST for OAuth2).
    pub method: Method,
    /// `Content-Type` of the body.
    pub content_type: &'static str,
    /// `Accept` header to send.
    pub accept: String,
    /// The encoded body.
    pub body: Secret,
}

/// What the token endpoint answered. The fetcher returns every HTTP status as a response; only
/// transport faults (connection, TLS, timeout) are `Err`.
#[derive(Debug, Clone)]
pub struct TokenResponse {
    /// HTTP status code.
    pub status: u16,
    /// The response body (bounded by the fetcher).
    pub body: Bytes,
}

/// Sends token requests. The transport implements it with its HTTP client; tests use a fake.
#[async_trait]
pub trait TokenFetcher: Send + Sync {
    /// Sends `request` and returns the status and body. Must enforce its own connect/request
    /// limits; [`AgentAuth`](super::AgentAuth) additionally bounds the whole call by its token
    /// timeout.
    async fn fetch(&self, request: TokenRequest) -> Result<TokenResponse, Failure>;
}

/// What a token source needs to build its request and read its response.
#[derive(Debug, Clone)]
pub(crate) enum TokenSpec {
    OAuth2 {
        token_url: String,
        client_id: Secret,
        client_secret: Secret,
        scopes: Vec<String>,
        ttl: Option<u64>,
    },
    Login(LoginConfig),
}

impl TokenSpec {
    pub(crate) fn oauth2(cfg: &OAuth2Config, token_url: String, scopes: Vec<String>) -> Self {
        TokenSpec::OAuth2 {
            token_url,
            client_id: cfg.client_id.clone(),
            client_secret: cfg.client_secret.clone(),
            scopes,
            ttl: cfg.token_ttl,
        }
    }

    fn url(&self) -> &str {
        match self {
            TokenSpec::OAuth2 { token_url, .. } => token_url,
            TokenSpec::Login(l) => &l.login_url,
        }
    }

    fn request(&self) -> Result<TokenRequest, Failure> {
        match self {
            TokenSpec::OAuth2 {
                token_url,
                client_id,
                client_secret,
                scopes,
                ..
            } => {
                let mut pairs = vec![
                    ("grant_type", "client_credentials".to_owned()),
                    ("client_id", client_id.expose().to_owned()),
                    ("client_secret", client_secret.expose().to_owned()),
                ];
                if !scopes.is_empty() {
                    pairs.push(("scope", scopes.join(" ")));
                }
                Ok(TokenRequest {
                    url: token_url.clone(),
                    method: Method::POST,
                    content_type: FORM,
                    accept: JSON.to_owned(),
                    body: Secret::new(form_encode(pairs.iter().map(|(k, v)| (*k, v.as_str())))),
                })
            }
            TokenSpec::Login(l) => {
                let (content_type, body) = match l.encoding {
                    LoginEncoding::Form => {
                        let texts: Vec<(&str, String)> = l
                            .fields
                            .iter()
                            .map(|(k, v)| (k.as_str(), field_text(v)))
                            .collect();
                        (
                            FORM,
                            form_encode(texts.iter().map(|(k, v)| (*k, v.as_str()))),
                        )
                    }
                    LoginEncoding::Json => {
                        let mut map = Map::new();
                        for (k, v) in &l.fields {
                            let value = match v {
                                LoginField::Text(s) => Value::String(s.expose().to_owned()),
                                LoginField::Literal(v) => v.clone(),
                            };
                            map.insert(k.clone(), value);
                        }
                        (JSON, Value::Object(map).to_string())
                    }
                };
                Ok(TokenRequest {
                    url: l.login_url.clone(),
                    method: l.method.clone(),
                    content_type,
                    accept: l.accept.clone().unwrap_or_else(|| JSON.to_owned()),
                    body: Secret::new(body),
                })
            }
        }
    }

    /// Reads the token and its lifetime from a successful response body.
    fn parse(&self, body: &[u8], agent: &str) -> Result<(Secret, u64), Failure> {
        let json: Value = serde_json::from_slice(body).map_err(|_| {
            token_failure(
                agent,
                self.url(),
                "the token response is not JSON".to_owned(),
            )
        })?;
        let no_token = || {
            token_failure(
                agent,
                self.url(),
                format!("Authentication response has no nonblank token for {agent}"),
            )
        };
        match self {
            TokenSpec::OAuth2 { ttl, .. } => {
                let token = json
                    .get("access_token")
                    .and_then(Value::as_str)
                    .filter(|t| !t.trim().is_empty())
                    .ok_or_else(no_token)?;
                let expires = json
                    .get("expires_in")
                    .and_then(|v| {
                        v.as_u64()
                            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
                    })
                    .or(*ttl)
                    .unwrap_or(DEFAULT_TOKEN_TTL_SECS);
                Ok((Secret::new(token), expires))
            }
            TokenSpec::Login(l) => {
                let token = l
                    .token_field
                    .iter()
                    .map(String::as_str)
                    .chain(LOGIN_TOKEN_FALLBACKS)
                    .find_map(|path| dotted(&json, path))
                    .ok_or_else(no_token)?;
                Ok((
                    Secret::new(token),
                    l.token_ttl.unwrap_or(DEFAULT_TOKEN_TTL_SECS),
                ))
            }
        }
    }
}

const FORM: &str = "application/x-www-form-urlencoded";
const JSON: &str = "application/json";

fn field_text(v: &LoginField) -> String {
    match v {
        LoginField::Text(s) => s.expose().to_owned(),
        LoginField::Literal(Value::String(s)) => s.clone(),
        LoginField::Literal(other) => other.to_string(),
    }
}

fn dotted(json: &Value, path: &str) -> Option<String> {
    let mut cur = json;
    for part in path.split('.') {
        cur = cur.get(part)?;
    }
    cur.as_str()
        .filter(|t| !t.trim().is_empty())
        .map(str::to_owned)
}

/// `application/x-www-form-urlencoded` encoding of UTF-8 pairs: alphanumerics and `*-._` stay,
/// space becomes `+`, every other byte is `%XX`.
pub fn form_encode<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    fn enc(out: &mut String, s: &str) {
        for b in s.bytes() {
            match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => {
                    out.push(b as char)
                }
                b' ' => out.push('+'),
                _ => out.push_str(&format!("%{b:02X}")),
            }
        }
    }
    let mut out = String::new();
    for (i, (k, v)) in pairs.into_iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        enc(&mut out, k);
        out.push('=');
        enc(&mut out, v);
    }
    out
}

/// The URL without its query and fragment, safe to put in messages.
fn url_without_query(url: &str) -> &str {
    url.split(['?', '#']).next().unwrap_or(url)
}

fn token_failure(agent: &str, url: &str, why: String) -> Failure {
    Failure::new(
        ErrorCode::AuthTokenRequestFailed,
        format!("Authentication login failed for agent {agent}: {why}"),
    )
    .with_detail("agent", agent)
    .with_detail("tokenUrl", url_without_query(url))
}

struct Cached {
    token: Secret,
    refresh_at: Instant,
}

/// A token source with its cache: one fetch at a time, reused until shortly before expiry, and
/// dropped by [`TokenCache::invalidate`] (after the agent answered 401).
pub(crate) struct TokenCache {
    spec: TokenSpec,
    agent: String,
    timeout: Duration,
    state: Mutex<Option<Cached>>,
}

impl std::fmt::Debug for TokenCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCache")
            .field("url", &url_without_query(self.spec.url()))
            .finish_non_exhaustive()
    }
}

impl TokenCache {
    pub(crate) fn new(spec: TokenSpec, agent: &str, timeout: Duration) -> Self {
        TokenCache {
            spec,
            agent: agent.to_owned(),
            timeout,
            state: Mutex::new(None),
        }
    }

    /// The cached token, or a fresh one from `fetcher`.
    pub(crate) async fn token(&self, fetcher: &dyn TokenFetcher) -> Result<Secret, Failure> {
        let mut state = self.state.lock().await;
        if let Some(c) = state.as_ref()
            && Instant::now() < c.refresh_at
        {
            return Ok(c.token.clone());
        }
        let request = self.spec.request()?;
        let url = request.url.clone();
        let response = tokio::time::timeout(self.timeout, fetcher.fetch(request))
            .await
            .map_err(|_| {
                token_failure(
                    &self.agent,
                    &url,
                    format!("no answer within {} ms", self.timeout.as_millis()),
                )
            })?
            .map_err(|f| {
                token_failure(&self.agent, &url, format!("request failed [{}]", f.code))
            })?;
        if !(200..300).contains(&response.status) {
            return Err(token_failure(
                &self.agent,
                &url,
                format!("the token endpoint answered HTTP {}", response.status),
            )
            .with_detail("status", response.status));
        }
        let (token, ttl) = self.spec.parse(&response.body, &self.agent)?;
        let ttl = Duration::from_secs(ttl);
        let margin = REFRESH_MARGIN.min(ttl / 2);
        *state = Some(Cached {
            token: token.clone(),
            refresh_at: Instant::now() + ttl - margin,
        });
        Ok(token)
    }

    /// Forgets the cached token so the next request fetches a new one.
    pub(crate) async fn invalidate(&self) {
        *self.state.lock().await = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_encoding_matches_the_reference() {
        assert_eq!(
            form_encode([("user name", "a+b"), ("password", "密&码=")]),
            "user+name=a%2Bb&password=%E5%AF%86%26%E7%A0%81%3D"
        );
    }

    #[test]
    fn login_token_paths_and_fallbacks() {
        let login = |field: Option<&str>| {
            TokenSpec::Login(LoginConfig {
                login_url: "https://idp.example/t".into(),
                method: Method::POST,
                encoding: LoginEncoding::Json,
                fields: vec![],
                token_field: field.map(str::to_owned),
                token_ttl: None,
                accept: None,
            })
        };
        let (t, ttl) = login(Some("data.session"))
            .parse(br#"{"data":{"session":"T1"}}"#, "a")
            .unwrap();
        assert_eq!((t.expose(), ttl), ("T1", 3600));
        let (t, _) = login(Some("nope"))
            .parse(br#"{"access_token":"T2"}"#, "a")
            .unwrap();
        assert_eq!(t.expose(), "T2");
        let e = login(None)
            .parse(br#"{"token":"  "}"#, "agent-x")
            .unwrap_err();
        assert!(e.is(ErrorCode::AuthTokenRequestFailed));
        assert!(e.message.contains("no nonblank token for agent-x"));
    }
}
