//! Captures every log line of a run with secrets configured — credentials loaded from the
//! environment and `enc:` values, OAuth2 and login tokens, provider headers, request and response
//! bodies, SSE events, failures — and asserts that no secret appears anywhere.

use crate::support::Capture;
use std::sync::Arc;

use a2a::AgentCard;
use a2aflow_model::Failure;
use a2aflow_protocol::RequestHeaders;
use a2aflow_protocol::auth::{
    AgentAuth, AuthProvider, AuthRequest, CredentialKey, Credentials, Environment, TokenFetcher,
    TokenRequest, TokenResponse, encrypt_secret,
};
use a2aflow_protocol::wirelog::{RedactionPolicy, WireLog};
use async_trait::async_trait;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use serde_json::json;

const URL: &str = "https://agent.example/a2a";

/// Every secret of the run: each is distinctive so any leak is found by substring search.
const SECRETS: &[&str] = &[
    "BEARER-SECRET-q7w1",
    "APIKEY-SECRET-e8r2",
    "CLIENT-SECRET-t9y3",
    "OAUTH-TOKEN-u0i4",
    "LOGIN-PASSWORD-o1p5",
    "LOGIN-TOKEN-a2s6",
    "PROVIDER-SECRET-d3f7",
    "CUSTOM-HEADER-SECRET-g4h8",
    "BODY-PASSWORD-j5k9",
    "BODY-FIELD-SECRET-l6z0",
    "COOKIE-SECRET-x7c1",
    "ENC-PLAINTEXT-v8b2",
    "URL-TOKEN-n9m3",
];

fn subscriber(capture: &Capture, json: bool) -> Box<dyn tracing::Subscriber + Send + Sync> {
    let writer = capture.clone();
    let builder = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone());
    if json {
        Box::new(builder.json().finish())
    } else {
        Box::new(builder.finish())
    }
}

struct Fetcher;

#[async_trait]
impl TokenFetcher for Fetcher {
    async fn fetch(&self, request: TokenRequest) -> Result<TokenResponse, Failure> {
        tracing::debug!(?request, "token request (Debug of the request)");
        let body = if request.url.contains("oauth") {
            r#"{"access_token":"OAUTH-TOKEN-u0i4","expires_in":3600}"#
        } else {
            r#"{"accessSession":"LOGIN-TOKEN-a2s6"}"#
        };
        Ok(TokenResponse {
            status: 200,
            body: Bytes::from_static(body.as_bytes()),
        })
    }
}

struct Provider;

#[async_trait]
impl AuthProvider for Provider {
    async fn headers(&self, _request: AuthRequest<'_>) -> Result<HeaderMap, Failure> {
        let mut h = HeaderMap::new();
        h.insert(
            "x-gateway-credential",
            HeaderValue::from_static("PROVIDER-SECRET-d3f7"),
        );
        Ok(h)
    }
}

fn card() -> Arc<AgentCard> {
    Arc::new(
        serde_json::from_value(json!({
            "name": "Wire Agent", "version": "1",
            "supportedInterfaces": [{"url": URL, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {},
            "securitySchemes": {
                "bearer": {"httpAuthSecurityScheme": {"scheme": "bearer"}},
                "api": {"apiKeySecurityScheme": {"location": "header", "name": "X-Corp-Key"}},
                "oauth": {"oauth2SecurityScheme": {"flows": {"clientCredentials": {"tokenUrl": "https://idp.example/oauth/token", "scopes": {}}}}},
                "login": {"apiKeySecurityScheme": {"location": "header", "name": "X-Session"}}
            },
            "securityRequirements": [{"bearer": [], "api": [], "oauth": [], "login": []}]
        }))
        .unwrap(),
    )
}

/// Runs one authenticated exchange through every logging path.
async fn run(capture: &Capture) {
    let key = CredentialKey::from_hex(&"5a".repeat(32)).unwrap();
    let enc = encrypt_secret("ENC-PLAINTEXT-v8b2", &key).unwrap();
    let env = Environment::from_pairs([
        ("A2AT_CRED_KEY", key.to_hex()),
        ("BEARER", "BEARER-SECRET-q7w1".to_owned()),
    ]);
    tracing::debug!(?env, ?key, "environment ready");
    let creds = Credentials::from_value(
        &json!({"Wire Agent": {
            "bearer": {"token": "env:BEARER", "headers": {"X-Custom": "CUSTOM-HEADER-SECRET-g4h8"}},
            "api": {"api_key": "APIKEY-SECRET-e8r2", "auth_header": "X-Corp-Key"},
            "oauth": {"client_id": "client-1", "client_secret": "CLIENT-SECRET-t9y3", "auth_header": "X-OAuth", "auth_header_prefix": "Bearer "},
            "login": {"login_url": "https://idp.example/login", "request_fields": {"user": "u", "password": "LOGIN-PASSWORD-o1p5", "extra": enc}}
        }}),
        &env,
    )
    .unwrap();
    tracing::info!(?creds, "credentials loaded");

    let auth = AgentAuth::builder(card(), URL)
        .credentials(&creds)
        .provider(Arc::new(Provider))
        .token_fetcher(Arc::new(Fetcher))
        .build()
        .unwrap();
    tracing::info!(?auth, "auth ready");

    let url: Uri = format!("{URL}?access_token=URL-TOKEN-n9m3&page=2")
        .parse()
        .unwrap();
    // Headers as the transport would assemble them: protocol headers + auth headers.
    let mut headers = HeaderMap::new();
    headers.insert("a2a-version", HeaderValue::from_static("1.0"));
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    headers.insert(
        "x-request-id",
        HeaderValue::from_static("request-visible-1"),
    );
    headers.insert("cookie", HeaderValue::from_static("sid=COOKIE-SECRET-x7c1"));
    for (name, value) in auth.headers_for(&url).await.unwrap() {
        headers.insert(name.unwrap(), value);
    }
    assert_eq!(
        headers["x-corp-key"], "APIKEY-SECRET-e8r2",
        "the secret is on the request"
    );

    // The transport's policy: configured API-key headers and secret fields.
    let policy = RedactionPolicy::new()
        .with_headers(
            auth.sensitive_header_names()
                .iter()
                .map(|n| n.as_str().to_owned()),
        )
        .with_json_field("mySecretField");
    let log = WireLog::enabled(policy);
    assert!(log.is_active());

    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "parts": [{"text": "hello visible-text-part"}],
        "metadata": {"credentials": {"password": "BODY-PASSWORD-j5k9", "nested": [{"mySecretField": "BODY-FIELD-SECRET-l6z0"}]}}}}});
    log.log_request(
        "Wire Agent",
        &Method::POST,
        &url.to_string(),
        &headers,
        body.to_string().as_bytes(),
    );

    let mut resp_headers = HeaderMap::new();
    resp_headers.insert(
        "set-cookie",
        HeaderValue::from_static("sid=COOKIE-SECRET-x7c1; HttpOnly"),
    );
    resp_headers.insert("content-type", HeaderValue::from_static("application/json"));
    let resp = json!({"jsonrpc": "2.0", "id": 1, "result": {"task": {"id": "t-1", "metadata": {"token": "OAUTH-TOKEN-u0i4"}}}});
    log.log_response(
        "Wire Agent",
        URL,
        StatusCode::OK,
        &resp_headers,
        resp.to_string().as_bytes(),
    );

    // A truncated (invalid JSON) body and a plain-text error echoing a bearer token.
    log.log_response(
        "Wire Agent",
        URL,
        StatusCode::BAD_GATEWAY,
        &HeaderMap::new(),
        br#"{"error": {"message": "bad", "data": {"access_token": "LOGIN-TOKEN-a2s6", "password": "BODY-PASSWORD-j5"#,
    );
    log.log_response(
        "Wire Agent",
        URL,
        StatusCode::UNAUTHORIZED,
        &HeaderMap::new(),
        b"<html>401: Authorization: Bearer BEARER-SECRET-q7w1 rejected</html>",
    );
    log.log_sse_event(
        "Wire Agent",
        URL,
        Some("message"),
        r#"{"statusUpdate": {"metadata": {"api_key": "APIKEY-SECRET-e8r2"}, "text": "visible-sse-text"}}"#,
    );

    // A conflict failure, logged as hosts would.
    let mut clash = HeaderMap::new();
    clash.insert("authorization", HeaderValue::from_static("Bearer other"));
    let mut target = headers.clone();
    let err = a2aflow_protocol::auth::merge_headers(&mut target, clash, "Wire Agent").unwrap_err();
    tracing::warn!(error = %err, ?err, "conflict");

    assert!(!capture.text().is_empty());
}

fn assert_clean(text: &str) {
    for secret in SECRETS {
        assert!(
            !text.contains(secret),
            "secret {secret} leaked into the log:\n{text}"
        );
    }
    // Also no distinctive fragment (e.g. a partial token in truncated JSON).
    assert!(!text.contains("BODY-PASSWORD-j5"), "{text}");
    for visible in [
        "request-visible-1",
        "visible-text-part",
        "visible-sse-text",
        "SendMessage",
        "page=2",
        "a2a-version: 1.0",
        "Authentication header conflict for agent Wire Agent: authorization",
    ] {
        assert!(
            text.contains(visible),
            "{visible} missing from the log:\n{text}"
        );
    }
    assert!(text.contains("***"));
}

#[tokio::test]
async fn no_secret_reaches_any_log_line_in_text_format() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(subscriber(&capture, false));
    run(&capture).await;
    let text = capture.text();
    assert!(text.contains("a2aflow::wire"), "{text}");
    assert_eq!(text.matches(">>> request").count(), 1);
    assert_eq!(text.matches("<<< response").count(), 3);
    assert_clean(&text);
}

#[tokio::test]
async fn no_secret_reaches_any_log_line_in_json_format() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(subscriber(&capture, true));
    run(&capture).await;
    let text = capture.text();
    for line in text.lines() {
        serde_json::from_str::<serde_json::Value>(line).expect("one JSON object per line");
    }
    assert_clean(&text);
}

#[tokio::test]
async fn the_wire_log_is_opt_in() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(subscriber(&capture, false));
    let mut h = HeaderMap::new();
    h.insert("authorization", HeaderValue::from_static("secret"));
    let off = WireLog::default();
    assert!(!off.is_active());
    off.log_request("A", &Method::POST, URL, &h, b"{}");
    off.log_response("A", URL, StatusCode::OK, &h, b"{}");
    off.log_sse_event("A", URL, None, "{}");
    assert_eq!(capture.text(), "");

    h.insert("x-request-id", HeaderValue::from_static("request-1"));
    WireLog::enabled(RedactionPolicy::new()).log_request("A", &Method::POST, URL, &h, b"");
    let text = capture.text();
    assert!(text.contains("authorization: ***"), "{text}");
    assert!(text.contains("request-1"));
    assert!(!text.contains("secret"));
}

#[tokio::test]
async fn nothing_is_logged_without_a_debug_subscriber_on_the_target() {
    let capture = Capture::default();
    let writer = capture.clone();
    let sub = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(sub);
    let log = WireLog::enabled(RedactionPolicy::new());
    assert!(!log.is_active());
    log.log_request("A", &Method::GET, URL, &HeaderMap::new(), b"");
    assert_eq!(capture.text(), "");
}
