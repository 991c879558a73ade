//! Fetched tokens with a fake [`TokenFetcher`]: OAuth2 client credentials and the reference login
//! request — request bodies, the cache, expiry (paused clock), refresh after a 401, and failures;
//! then the real [`HttpTokenFetcher`] against the testkit's token endpoint: the wire request, a
//! rejecting endpoint, an oversized answer, and a login entry.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a::AgentCard;
use a2aflow_model::{ErrorCode, Failure};
use a2aflow_protocol::RequestHeaders;
use a2aflow_protocol::auth::{
    AgentAuth, Credentials, Environment, HttpTokenFetcher, MAX_TOKEN_RESPONSE, TokenFetcher,
    TokenRequest, TokenResponse,
};
use a2aflow_protocol::{Limits, tls::TlsConfig};
use a2aflow_testkit::{TokenEndpoint, TokenMode};
use async_trait::async_trait;
use bytes::Bytes;
use http::Uri;
use serde_json::{Value, json};

const URL: &str = "https://agent.example/a2a";

/// Answers from a script (repeating the last answer) and records every request.
struct FakeFetcher {
    answers: Mutex<VecDeque<Result<(u16, String), Failure>>>,
    seen: Mutex<Vec<TokenRequest>>,
    hang: bool,
}

impl FakeFetcher {
    fn new(answers: Vec<(u16, &str)>) -> Arc<Self> {
        Arc::new(FakeFetcher {
            answers: Mutex::new(
                answers
                    .into_iter()
                    .map(|(s, b)| Ok((s, b.to_owned())))
                    .collect(),
            ),
            seen: Mutex::new(Vec::new()),
            hang: false,
        })
    }

    fn hanging() -> Arc<Self> {
        Arc::new(FakeFetcher {
            answers: Mutex::new(VecDeque::new()),
            seen: Mutex::new(Vec::new()),
            hang: true,
        })
    }

    fn failing(f: Failure) -> Arc<Self> {
        Arc::new(FakeFetcher {
            answers: Mutex::new(VecDeque::from([Err(f)])),
            seen: Mutex::new(Vec::new()),
            hang: false,
        })
    }

    fn count(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    fn request(&self, i: usize) -> TokenRequest {
        self.seen.lock().unwrap()[i].clone()
    }
}

#[async_trait]
impl TokenFetcher for FakeFetcher {
    async fn fetch(&self, request: TokenRequest) -> Result<TokenResponse, Failure> {
        self.seen.lock().unwrap().push(request);
        if self.hang {
            std::future::pending::<()>().await;
        }
        let mut answers = self.answers.lock().unwrap();
        let answer = if answers.len() > 1 {
            answers.pop_front()
        } else {
            answers.front().cloned()
        };
        let (status, body) = answer.expect("scripted answer")?;
        Ok(TokenResponse {
            status,
            body: Bytes::from(body),
        })
    }
}

fn card(schemes: Value, requirements: Value) -> Arc<AgentCard> {
    Arc::new(
        serde_json::from_value(json!({
            "name": "Test Agent", "version": "1",
            "supportedInterfaces": [{"url": URL, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}],
            "capabilities": {},
            "securitySchemes": schemes,
            "securityRequirements": requirements,
        }))
        .unwrap(),
    )
}

fn oauth_card() -> Arc<AgentCard> {
    card(
        json!({"oauth": {"oauth2SecurityScheme": {"flows": {"clientCredentials": {
            "tokenUrl": "https://idp.example/oauth/token", "scopes": {"tasks:write": "w"}}}}}}),
        json!([{"oauth": ["tasks:write", "tasks:read"]}]),
    )
}

fn creds(doc: Value) -> Credentials {
    Credentials::from_value(&doc, &Environment::default()).unwrap()
}

fn auth(card: Arc<AgentCard>, c: &Credentials, f: Arc<FakeFetcher>) -> AgentAuth {
    AgentAuth::builder(card, URL)
        .credentials(c)
        .token_fetcher(f)
        .build()
        .unwrap()
}

fn uri() -> Uri {
    URL.parse().unwrap()
}

async fn authorization(a: &AgentAuth) -> String {
    a.headers_for(&uri()).await.unwrap()["authorization"]
        .to_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(start_paused = true)]
async fn client_credentials_request_cache_and_expiry() {
    let f = FakeFetcher::new(vec![
        (
            200,
            r#"{"access_token":"tok-1","token_type":"Bearer","expires_in":300}"#,
        ),
        (200, r#"{"access_token":"tok-2","expires_in":300}"#),
    ]);
    let c = creds(
        json!({"Test Agent": {"oauth": {"client_id": "my client", "client_secret": "s3cr&t"}}}),
    );
    let a = auth(oauth_card(), &c, f.clone());

    assert_eq!(authorization(&a).await, "Bearer tok-1");
    let req = f.request(0);
    assert_eq!(
        req.url, "https://idp.example/oauth/token",
        "token URL from the card's flow"
    );
    assert_eq!(req.method, http::Method::POST);
    assert_eq!(req.content_type, "application/x-www-form-urlencoded");
    assert_eq!(
        req.body.expose(),
        "grant_type=client_credentials&client_id=my+client&client_secret=s3cr%26t&scope=tasks%3Awrite+tasks%3Aread"
    );
    assert_eq!(
        format!("{req:?}").matches("s3cr").count(),
        0,
        "TokenRequest Debug hides the body"
    );

    // Cached while fresh.
    tokio::time::advance(Duration::from_secs(200)).await;
    assert_eq!(authorization(&a).await, "Bearer tok-1");
    assert_eq!(f.count(), 1);

    // Refreshed 60 s before expiry (300 - 60 = 240).
    tokio::time::advance(Duration::from_secs(41)).await;
    assert_eq!(authorization(&a).await, "Bearer tok-2");
    assert_eq!(f.count(), 2);
}

#[tokio::test(start_paused = true)]
async fn configured_token_url_and_scopes_win_and_401_refreshes() {
    let f = FakeFetcher::new(vec![
        (200, r#"{"access_token":"old"}"#),
        (200, r#"{"access_token":"new"}"#),
    ]);
    let c = creds(
        json!({"Test Agent": {"oauth": {"client_id": "c", "client_secret": "s",
        "token_url": "https://other-idp.example/t?tenant=1", "scopes": ["only"]}}}),
    );
    let a = auth(oauth_card(), &c, f.clone());
    assert_eq!(authorization(&a).await, "Bearer old");
    let req = f.request(0);
    assert_eq!(req.url, "https://other-idp.example/t?tenant=1");
    assert!(req.body.expose().ends_with("&scope=only"));

    assert!(
        a.on_unauthorized(&uri()).await.unwrap(),
        "a refetchable token means: retry"
    );
    assert_eq!(authorization(&a).await, "Bearer new");
    assert_eq!(f.count(), 2);
}

#[tokio::test]
async fn static_credentials_do_not_ask_for_a_retry() {
    let c = creds(json!({"Test Agent": {"oauth": {"token": "fixed"}}}));
    let a = AgentAuth::builder(oauth_card(), URL)
        .credentials(&c)
        .build()
        .unwrap();
    assert_eq!(authorization(&a).await, "Bearer fixed");
    assert!(!a.on_unauthorized(&uri()).await.unwrap());
}

#[tokio::test]
async fn token_endpoint_failures_are_typed_and_redacted() {
    let c = creds(
        json!({"Test Agent": {"oauth": {"client_id": "c", "client_secret": "secret-xyz-1"}}}),
    );
    for (status, body, expect) in [
        (401, r#"{"error":"invalid_client"}"#, "answered HTTP 401"),
        (200, "<html>nope</html>", "not JSON"),
        (
            200,
            r#"{"access_token":""}"#,
            "no nonblank token for Test Agent",
        ),
        (200, r#"{"token_type":"bearer"}"#, "no nonblank token"),
    ] {
        let f = FakeFetcher::new(vec![(status, body)]);
        let a = auth(oauth_card(), &c, f);
        let e = a.headers_for(&uri()).await.unwrap_err();
        assert!(e.is(ErrorCode::AuthTokenRequestFailed), "{e}");
        assert!(
            e.message
                .contains("Authentication login failed for agent Test Agent")
        );
        assert!(e.message.contains(expect), "{}", e.message);
        assert_eq!(e.details["tokenUrl"], "https://idp.example/oauth/token");
        assert!(!format!("{e:?}").contains("secret-xyz-1"));
    }
    let f = FakeFetcher::failing(Failure::new(ErrorCode::A2aConnection, "refused"));
    let e = auth(oauth_card(), &c, f)
        .headers_for(&uri())
        .await
        .unwrap_err();
    assert!(e.is(ErrorCode::AuthTokenRequestFailed));
    assert!(e.message.contains("[a2a.connection]"), "{}", e.message);
}

#[tokio::test(start_paused = true)]
async fn a_hanging_token_endpoint_hits_the_deadline() {
    let c = creds(json!({"Test Agent": {"oauth": {"client_id": "c", "client_secret": "s"}}}));
    let f = FakeFetcher::hanging();
    let a = AgentAuth::builder(oauth_card(), URL)
        .credentials(&c)
        .token_fetcher(f)
        .token_timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let e = a.headers_for(&uri()).await.unwrap_err();
    assert!(e.is(ErrorCode::AuthTokenRequestFailed));
    assert!(
        e.message.contains("no answer within 5000 ms"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn oauth_needs_a_token_url_and_a_fetcher() {
    let bearer_card = card(
        json!({"b": {"httpAuthSecurityScheme": {"scheme": "bearer"}}}),
        json!([{"b": []}]),
    );
    let c = creds(json!({"Test Agent": {"b": {"client_id": "c", "client_secret": "s"}}}));
    let e = AgentAuth::builder(bearer_card.clone(), URL)
        .credentials(&c)
        .token_fetcher(FakeFetcher::new(vec![]))
        .build()
        .unwrap_err();
    assert!(e.is(ErrorCode::AuthRequirementUnsatisfied));
    assert!(e.message.contains("needs `token_url`"), "{}", e.message);

    let c = creds(
        json!({"Test Agent": {"b": {"client_id": "c", "client_secret": "s", "token_url": "https://i.example/t"}}}),
    );
    let e = AgentAuth::builder(bearer_card, URL)
        .credentials(&c)
        .build()
        .unwrap_err();
    assert!(e.is(ErrorCode::ConfigInvalidCredentials));
    assert!(e.message.contains("no token fetcher"), "{}", e.message);
}

#[tokio::test]
async fn login_form_encodes_utf8_and_reads_the_token_field() {
    let f = FakeFetcher::new(vec![(200, r#"{"access_token":"token-1"}"#)]);
    let c = creds(json!({"Test Agent": {"b": {
        "login_url": "https://idp.example/login", "content_type": "application/x-www-form-urlencoded",
        "request_fields": {"user name": "a+b", "password": "密&码="}, "token_field": "access_token",
        "accept_header": "application/vnd.token+json"
    }}}));
    let a = auth(
        card(
            json!({"b": {"httpAuthSecurityScheme": {"scheme": "bearer"}}}),
            json!([{"b": []}]),
        ),
        &c,
        f.clone(),
    );
    assert_eq!(authorization(&a).await, "Bearer token-1");
    let req = f.request(0);
    assert_eq!(
        req.body.expose(),
        "user+name=a%2Bb&password=%E5%AF%86%26%E7%A0%81%3D"
    );
    assert_eq!(req.accept, "application/vnd.token+json");
}

#[tokio::test]
async fn login_tokens_use_dotted_paths_and_fallbacks_each_endpoint_once() {
    let f1 = FakeFetcher::new(vec![(200, r#"{"data":{"session":"T1"}}"#)]);
    let f2 = FakeFetcher::new(vec![(200, r#"{"access_token":"T2"}"#)]);
    let schemes = json!({
        "one": {"apiKeySecurityScheme": {"location": "header", "name": "X-One"}},
        "two": {"httpAuthSecurityScheme": {"scheme": "bearer"}}
    });
    let c = creds(json!({"Test Agent": {
        "one": {"login_url": "https://idp.example/1", "username": "u", "password": "p", "token_field": "data.session"},
        "two": {"login_url": "https://idp.example/2", "request_fields": {"k": "v"}, "token_field": "missing.path"}
    }}));
    let a1 = auth(card(schemes.clone(), json!([{"one": []}])), &c, f1.clone());
    let a2 = auth(card(schemes, json!([{"two": []}])), &c, f2.clone());
    for _ in 0..2 {
        assert_eq!(a1.headers_for(&uri()).await.unwrap()["x-one"], "T1");
        assert_eq!(authorization(&a2).await, "Bearer T2");
    }
    assert_eq!((f1.count(), f2.count()), (1, 1));
    assert_eq!(
        f1.request(0).body.expose(),
        r#"{"username":"u","password":"p"}"#
    );
    assert_eq!(f1.request(0).content_type, "application/json");
}

#[tokio::test]
async fn concurrent_requests_share_one_fetch() {
    let f = FakeFetcher::new(vec![(200, r#"{"access_token":"shared"}"#)]);
    let c = creds(json!({"Test Agent": {"oauth": {"client_id": "c", "client_secret": "s"}}}));
    let a = Arc::new(auth(oauth_card(), &c, f.clone()));
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let a = a.clone();
            tokio::spawn(async move { authorization(&a).await })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap(), "Bearer shared");
    }
    assert_eq!(f.count(), 1);
}

fn http_fetcher() -> Arc<HttpTokenFetcher> {
    let tls = TlsConfig::new().client_config().unwrap();
    Arc::new(HttpTokenFetcher::new(Limits::default(), tls).unwrap())
}

fn idp_card(idp: &TokenEndpoint) -> Arc<AgentCard> {
    card(
        json!({"oauth": {"oauth2SecurityScheme": {"flows": {"clientCredentials": {
            "tokenUrl": idp.token_url(), "scopes": {"tasks:write": "w"}}}}}}),
        json!([{"oauth": ["tasks:write"]}]),
    )
}

fn idp_auth(idp: &TokenEndpoint, secret: &str) -> AgentAuth {
    let c = creds(json!({"Test Agent": {"oauth": {"client_id": "cid", "client_secret": secret}}}));
    AgentAuth::builder(idp_card(idp), URL)
        .credentials(&c)
        .token_fetcher(http_fetcher())
        .build()
        .unwrap()
}

#[tokio::test]
async fn the_http_fetcher_sends_a_form_encoded_client_credentials_grant_and_caches() {
    let idp = TokenEndpoint::spawn("cid", "p@ss w&rd", 3600)
        .await
        .unwrap();
    let a = idp_auth(&idp, "p@ss w&rd");
    assert_eq!(authorization(&a).await, "Bearer tok-1");
    assert_eq!(authorization(&a).await, "Bearer tok-1");
    assert_eq!(idp.request_count(), 1, "cached until it expires");
    let asked = &idp.requests()[0];
    assert_eq!(asked.path, "/token");
    assert_eq!(
        asked.content_type.as_deref(),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(asked.grant_type.as_deref(), Some("client_credentials"));
    assert_eq!(asked.scope.as_deref(), Some("tasks:write"));
    assert_eq!(
        asked.fields,
        ["grant_type", "client_id", "client_secret", "scope"]
    );
    assert!(!asked.a2a_version && !asked.basic_auth);
    // After a 401 from the agent the next request gets a fresh token.
    assert!(a.on_unauthorized(&uri()).await.unwrap());
    assert_eq!(authorization(&a).await, "Bearer tok-2");
    assert_eq!(idp.issued(), 2);
}

#[tokio::test]
async fn a_rejecting_or_flooding_token_endpoint_is_auth_token_request_failed() {
    let idp = TokenEndpoint::spawn("cid", "right-secret", 3600)
        .await
        .unwrap();
    let wrong = idp_auth(&idp, "wrong-secret");
    let e = wrong.headers_for(&uri()).await.unwrap_err();
    assert!(e.is(ErrorCode::AuthTokenRequestFailed), "{e}");
    assert_eq!(e.details["status"], 401);
    assert!(!e.message.contains("wrong-secret") && !e.message.contains("invalid_client"));

    let a = idp_auth(&idp, "right-secret");
    idp.set_mode(TokenMode::Reject(503));
    let e = a.headers_for(&uri()).await.unwrap_err();
    assert!(e.is(ErrorCode::AuthTokenRequestFailed), "{e}");
    assert_eq!(e.details["status"], 503);

    idp.set_mode(TokenMode::Oversized(MAX_TOKEN_RESPONSE + 1));
    let e = a.headers_for(&uri()).await.unwrap_err();
    assert!(e.is(ErrorCode::AuthTokenRequestFailed), "{e}");
    assert!(e.message.contains("a2a.response_too_large"), "{e}");
    assert_eq!(idp.issued(), 0);
}

#[tokio::test]
async fn a_login_entry_works_with_the_http_fetcher() {
    let idp = TokenEndpoint::spawn("svc-user", "svc-pass", 3600)
        .await
        .unwrap();
    let bearer = card(
        json!({"b": {"httpAuthSecurityScheme": {"scheme": "bearer"}}}),
        json!([{"b": []}]),
    );
    let c = creds(json!({"Test Agent": {"b": {
        "login_url": idp.login_url(), "username": "svc-user", "password": "svc-pass",
        "token_field": "data.session"}}}));
    let a = AgentAuth::builder(bearer, URL)
        .credentials(&c)
        .token_fetcher(http_fetcher())
        .build()
        .unwrap();
    assert_eq!(authorization(&a).await, "Bearer tok-1");
    let asked = &idp.requests()[0];
    assert_eq!(asked.path, "/login");
    assert_eq!(asked.content_type.as_deref(), Some("application/json"));
    assert_eq!(asked.fields, ["username", "password"]);
}
