//! [`TokenEndpoint`]: an OAuth2 token endpoint (client-credentials grant, RFC 6749 §4.4) and a
//! reference-engine login endpoint on loopback, issuing numbered short-lived tokens, counting
//! requests, and able to reject.
//!
//! - `POST /token`: a form-encoded body with `grant_type=client_credentials`; the client
//!   authenticates with `client_id`/`client_secret` in the body or with HTTP Basic. Answers
//!   `{"access_token": "tok-N", "token_type": "Bearer", "expires_in": …}`; a wrong client is
//!   401 `invalid_client`, another grant 400 `unsupported_grant_type`.
//! - `POST /login`: a JSON or form body whose `username`/`password` fields match the client id
//!   and secret. Answers `{"data": {"session": "tok-N"}}` (token path `data.session`).
//!
//! Tokens are `tok-1`, `tok-2`, … in issue order, shared by both routes, so a test knows which
//! token an agent should accept ([`TokenEndpoint::token`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde_json::{Value, json};
use tokio::net::TcpListener;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::error::TestkitError;
use crate::lifecycle::Lifecycle;
use crate::server::SHUTDOWN_TIMEOUT;

/// Largest request body the endpoint reads.
const MAX_BODY: usize = 64 * 1024;

/// How the endpoint answers every request until changed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenMode {
    /// Check the client and issue a token.
    Issue,
    /// Answer this HTTP status with an OAuth2 error body, issuing nothing.
    Reject(u16),
    /// Answer 200 with a JSON body this many bytes long (a token endpoint that floods).
    Oversized(usize),
}

/// One request the endpoint received (the secret values are not kept).
#[derive(Clone, Debug)]
pub struct TokenRequestRecord {
    /// `/token` or `/login` (or whatever path was asked).
    pub path: String,
    /// The request's `Content-Type`.
    pub content_type: Option<String>,
    /// The names of the body's fields, in order (form or JSON).
    pub fields: Vec<String>,
    /// `grant_type`, when given.
    pub grant_type: Option<String>,
    /// `scope`, when given.
    pub scope: Option<String>,
    /// Whether the client authenticated with HTTP Basic.
    pub basic_auth: bool,
    /// Whether the request carried an `A2A-Version` header (it should not: not an A2A call).
    pub a2a_version: bool,
}

struct State {
    client_id: String,
    client_secret: String,
    expires_in: u64,
    mode: Mutex<TokenMode>,
    issued: AtomicU32,
    count: AtomicUsize,
    log: Mutex<Vec<TokenRequestRecord>>,
}

/// A loopback token endpoint. Dropping it stops it.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use a2aflow_testkit::TokenEndpoint;
/// let idp = TokenEndpoint::spawn("client", "s3cret", 60).await?;
/// assert!(idp.token_url().ends_with("/token"));
/// assert_eq!(idp.token(1), "tok-1");
/// idp.shutdown().await?;
/// # Ok(()) }
/// ```
pub struct TokenEndpoint {
    addr: SocketAddr,
    state: Arc<State>,
    tasks: Lifecycle,
}

impl std::fmt::Debug for TokenEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenEndpoint")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl TokenEndpoint {
    /// Binds `127.0.0.1:0`; accepts this client and issues tokens valid for `expires_in` seconds.
    pub async fn spawn(
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
        expires_in: u64,
    ) -> Result<TokenEndpoint, TestkitError> {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(TestkitError::Bind)?;
        let addr = listener.local_addr().map_err(TestkitError::Bind)?;
        let state = Arc::new(State {
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            expires_in,
            mode: Mutex::new(TokenMode::Issue),
            issued: AtomicU32::new(0),
            count: AtomicUsize::new(0),
            log: Mutex::new(Vec::new()),
        });
        let for_loop = state.clone();
        let tasks =
            Lifecycle::start(move |token, conns| accept_loop(listener, for_loop, token, conns));
        Ok(TokenEndpoint { addr, state, tasks })
    }

    /// `http://127.0.0.1:PORT/token`.
    pub fn token_url(&self) -> String {
        format!("http://{}/token", self.addr)
    }

    /// `http://127.0.0.1:PORT/login`.
    pub fn login_url(&self) -> String {
        format!("http://{}/login", self.addr)
    }

    /// The `n`-th token issued (1-based): `tok-n`.
    pub fn token(&self, n: u32) -> String {
        format!("tok-{n}")
    }

    /// Tokens issued so far.
    pub fn issued(&self) -> u32 {
        self.state.issued.load(Ordering::SeqCst)
    }

    /// Requests received so far (issued or not).
    pub fn request_count(&self) -> usize {
        self.state.count.load(Ordering::SeqCst)
    }

    /// The requests received so far, oldest first.
    pub fn requests(&self) -> Vec<TokenRequestRecord> {
        self.state
            .log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// How the endpoint answers from now on.
    pub fn set_mode(&self, mode: TokenMode) {
        *self.state.mode.lock().unwrap_or_else(|p| p.into_inner()) = mode;
    }

    /// Stops accepting and waits (at most [`SHUTDOWN_TIMEOUT`]) for open connections.
    pub async fn shutdown(&self) -> Result<(), TestkitError> {
        self.tasks.shutdown().await
    }
}

async fn accept_loop(
    listener: TcpListener,
    state: Arc<State>,
    token: CancellationToken,
    conns: TaskTracker,
) {
    loop {
        let stream = tokio::select! {
            r = listener.accept() => match r {
                Ok((s, _)) => s,
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
            () = token.cancelled() => return,
        };
        let (state, token) = (state.clone(), token.clone());
        conns.spawn(async move {
            let svc = service_fn(move |req| handle(state.clone(), req));
            let builder = auto::Builder::new(TokioExecutor::new());
            let conn = builder.serve_connection(TokioIo::new(stream), svc);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                () = token.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(SHUTDOWN_TIMEOUT, conn).await;
                }
            }
        });
    }
}

/// The body's fields: form pairs or a JSON object's string members.
fn fields(content_type: Option<&str>, body: &[u8]) -> Vec<(String, String)> {
    let is_form = content_type.is_some_and(|c| c.starts_with("application/x-www-form-urlencoded"));
    if is_form {
        return form_decode(body);
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => map
            .into_iter()
            .map(|(k, v)| {
                let text = v
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.to_string());
                (k, text)
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn form_decode(body: &[u8]) -> Vec<(String, String)> {
    fn dec(s: &str) -> String {
        let bytes = s.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'+' => out.push(b' '),
                b'%' if i + 2 < bytes.len() => {
                    let hex = |b: u8| (b as char).to_digit(16);
                    match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                        (Some(hi), Some(lo)) => {
                            out.push((hi * 16 + lo) as u8);
                            i += 2;
                        }
                        _ => out.push(b'%'),
                    }
                }
                b => out.push(b),
            }
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    }
    String::from_utf8_lossy(body)
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (dec(k), dec(v))
        })
        .collect()
}

/// The client id and secret of an HTTP Basic `Authorization` header.
fn basic(headers: &HeaderMap) -> Option<(String, String)> {
    use base64::Engine;
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let encoded = value.strip_prefix("Basic ")?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (id, secret) = text.split_once(':')?;
    Some((id.to_owned(), secret.to_owned()))
}

fn json_response(status: StatusCode, body: Value) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(Bytes::from(body.to_string())));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    resp
}

fn oauth_error(status: StatusCode, error: &str) -> Response<Full<Bytes>> {
    json_response(status, json!({ "error": error }))
}

async fn handle(
    state: Arc<State>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    state.count.fetch_add(1, Ordering::SeqCst);
    let (parts, body) = req.into_parts();
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let Ok(collected) = Limited::new(body, MAX_BODY).collect().await else {
        return Ok(oauth_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request",
        ));
    };
    let fields = fields(content_type.as_deref(), &collected.to_bytes());
    let field = |name: &str| {
        fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let basic = basic(&parts.headers);
    let path = parts.uri.path().to_owned();
    state
        .log
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(TokenRequestRecord {
            path: path.clone(),
            content_type,
            fields: fields.iter().map(|(k, _)| k.clone()).collect(),
            grant_type: field("grant_type"),
            scope: field("scope"),
            basic_auth: basic.is_some(),
            a2a_version: parts.headers.contains_key("a2a-version"),
        });
    let mode = state.mode.lock().unwrap_or_else(|p| p.into_inner()).clone();
    match mode {
        TokenMode::Reject(status) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
            return Ok(oauth_error(status, "invalid_client"));
        }
        TokenMode::Oversized(bytes) => {
            let filler = "x".repeat(bytes);
            return Ok(json_response(
                StatusCode::OK,
                json!({ "access_token": "tok-flood", "padding": filler }),
            ));
        }
        TokenMode::Issue => {}
    }
    if parts.method != Method::POST {
        return Ok(oauth_error(
            StatusCode::METHOD_NOT_ALLOWED,
            "invalid_request",
        ));
    }
    let issue = |state: &State| format!("tok-{}", state.issued.fetch_add(1, Ordering::SeqCst) + 1);
    match path.as_str() {
        "/token" => {
            if field("grant_type").as_deref() != Some("client_credentials") {
                return Ok(oauth_error(
                    StatusCode::BAD_REQUEST,
                    "unsupported_grant_type",
                ));
            }
            let client = basic.or_else(|| Some((field("client_id")?, field("client_secret")?)));
            if client != Some((state.client_id.clone(), state.client_secret.clone())) {
                return Ok(oauth_error(StatusCode::UNAUTHORIZED, "invalid_client"));
            }
            Ok(json_response(
                StatusCode::OK,
                json!({
                    "access_token": issue(&state),
                    "token_type": "Bearer",
                    "expires_in": state.expires_in,
                }),
            ))
        }
        "/login" => {
            if field("username").as_deref() != Some(state.client_id.as_str())
                || field("password").as_deref() != Some(state.client_secret.as_str())
            {
                return Ok(oauth_error(StatusCode::UNAUTHORIZED, "invalid_login"));
            }
            Ok(json_response(
                StatusCode::OK,
                json!({ "data": { "session": issue(&state) } }),
            ))
        }
        _ => Ok(oauth_error(StatusCode::NOT_FOUND, "not_found")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_bodies_decode() {
        assert_eq!(
            form_decode(b"a=1&user+name=a%2Bb&x=%E5%AF%86&bad=%zz&t=%4"),
            vec![
                ("a".to_owned(), "1".to_owned()),
                ("user name".to_owned(), "a+b".to_owned()),
                ("x".to_owned(), "密".to_owned()),
                ("bad".to_owned(), "%zz".to_owned()),
                ("t".to_owned(), "%4".to_owned()),
            ]
        );
    }
}
