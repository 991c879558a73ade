//! AgentAuth: security-requirement satisfaction (AND within, OR across), header mapping per
//! scheme kind, the host's provider, conflicting headers, and the origin binding.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use a2a::{AgentCard, SecurityScheme};
use a2aflow_model::{ErrorCode, Failure};
use a2aflow_protocol::RequestHeaders;
use a2aflow_protocol::auth::{
    AgentAuth, AuthProvider, AuthRequest, ConfiguredOrigin, Credentials, Environment,
};
use async_trait::async_trait;
use http::{HeaderMap, HeaderValue, Uri};
use serde_json::{Value, json};

const URL: &str = "https://agent.example/a2a";

fn card(schemes: Value, requirements: Value) -> Arc<AgentCard> {
    let mut doc = json!({
        "name": "Test Agent",
        "version": "1.0.0",
        "supportedInterfaces": [{"url": URL, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {},
    });
    if !schemes.is_null() {
        doc["securitySchemes"] = schemes;
    }
    if !requirements.is_null() {
        doc["securityRequirements"] = requirements;
    }
    Arc::new(serde_json::from_value(doc).unwrap())
}

fn standard_schemes() -> Value {
    json!({
        "bearer": {"httpAuthSecurityScheme": {"scheme": "bearer"}},
        "api": {"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}},
        "basic": {"httpAuthSecurityScheme": {"scheme": "Basic"}},
        "cookieKey": {"apiKeySecurityScheme": {"location": "cookie", "name": "sid"}},
        "queryKey": {"apiKeySecurityScheme": {"location": "query", "name": "k"}},
        "mtls": {"mtlsSecurityScheme": {}},
        "oidc": {"openIdConnectSecurityScheme": {"openIdConnectUrl": "https://idp.example/.well-known/openid-configuration"}}
    })
}

fn creds(doc: Value) -> Credentials {
    Credentials::from_value(&doc, &Environment::default()).unwrap()
}

fn uri(s: &str) -> Uri {
    s.parse().unwrap()
}

async fn headers(auth: &AgentAuth) -> HeaderMap {
    auth.headers_for(&uri(URL)).await.unwrap()
}

fn build(card: Arc<AgentCard>, c: &Credentials) -> Result<AgentAuth, Failure> {
    AgentAuth::builder(card, URL).credentials(c).build()
}

#[tokio::test]
async fn all_schemes_of_one_requirement_are_applied() {
    let c = creds(
        json!({"Test Agent": {"bearer": {"token": "bearer-token"}, "api": {"token": "api-token"}}}),
    );
    let auth = build(
        card(standard_schemes(), json!([{"bearer": [], "api": []}])),
        &c,
    )
    .unwrap();
    let h = headers(&auth).await;
    assert_eq!(h["authorization"], "Bearer bearer-token");
    assert_eq!(h["x-api-key"], "api-token");
    assert_eq!(h.len(), 2);
    assert!(h["authorization"].is_sensitive());
    assert_eq!(auth.scheme_names(), ["api", "bearer"]);
}

#[tokio::test]
async fn auth_header_and_prefix_override_the_scheme_placement() {
    let c = creds(json!({"Test Agent": {
        "bearer": {"token": "first", "auth_header": "X-First"},
        "api": {"token": "second", "auth_header": "X-Second", "auth_header_prefix": "Token "}
    }}));
    let auth = build(
        card(standard_schemes(), json!([{"bearer": [], "api": []}])),
        &c,
    )
    .unwrap();
    let h = headers(&auth).await;
    assert_eq!(h["x-first"], "first");
    assert_eq!(h["x-second"], "Token second");
    assert!(h.get("authorization").is_none());
    let names: Vec<String> = auth
        .sensitive_header_names()
        .iter()
        .map(|n| n.as_str().to_owned())
        .collect();
    assert_eq!(names, ["x-first", "x-second"]);
}

#[tokio::test]
async fn first_satisfiable_alternative_wins() {
    // Requirement 1 needs mtls (not configured), requirement 2 needs api: OR picks the second.
    let c = creds(json!({"Test Agent": {"api": {"token": "k"}, "bearer": {"token": "unused"}}}));
    let auth = build(
        card(standard_schemes(), json!([{"mtls": []}, {"api": []}])),
        &c,
    )
    .unwrap();
    let h = headers(&auth).await;
    assert_eq!(h["x-api-key"], "k");
    assert!(
        h.get("authorization").is_none(),
        "credentials of other requirements are not sent"
    );

    // With a client identity the first alternative is satisfied and sends no header.
    let auth = AgentAuth::builder(
        card(standard_schemes(), json!([{"mtls": []}, {"api": []}])),
        URL,
    )
    .credentials(&c)
    .client_identity(true)
    .build()
    .unwrap();
    assert!(headers(&auth).await.is_empty());
}

#[tokio::test]
async fn unsatisfied_requirements_name_the_schemes() {
    let c = creds(json!({"Test Agent": {"bearer": {"token": "t"}}}));
    let e = build(
        card(
            standard_schemes(),
            json!([{"bearer": [], "api": []}, {"queryKey": []}, {"ghost": []}]),
        ),
        &c,
    )
    .unwrap_err();
    assert!(e.is(ErrorCode::AuthRequirementUnsatisfied), "{e}");
    assert!(
        e.message
            .starts_with("Authentication requirements are not satisfied for agent Test Agent")
    );
    assert!(
        e.message
            .contains("[api AND bearer]: no credentials configured for scheme 'api'"),
        "{}",
        e.message
    );
    assert!(e.message.contains("queryKey"), "{}", e.message);
    assert!(
        e.message.contains("scheme 'ghost' is not declared"),
        "{}",
        e.message
    );
    assert_eq!(
        e.details["schemes"],
        json!(["api", "bearer", "queryKey", "ghost"])
    );
    assert!(!e.message.contains(": t"));
}

#[tokio::test]
async fn declared_authentication_without_any_configuration_fails_closed() {
    let e = build(
        card(standard_schemes(), json!([{"bearer": []}])),
        &Credentials::default(),
    )
    .unwrap_err();
    assert!(e.is(ErrorCode::AuthRequirementUnsatisfied));
    assert!(e.message.contains("none are configured"), "{}", e.message);
}

#[tokio::test]
async fn no_requirements_disable_credentials() {
    let c = creds(json!({"Test Agent": {"bearer": {"token": "t"}}}));
    for reqs in [Value::Null, json!([]), json!([{}, {"bearer": []}])] {
        let auth = build(card(standard_schemes(), reqs.clone()), &c).unwrap();
        assert!(headers(&auth).await.is_empty(), "{reqs}");
    }
}

#[tokio::test]
async fn basic_cookie_and_oidc_placements() {
    let c = creds(json!({"Test Agent": {
        "basic": {"username": "aladdin", "password": "opensesame"},
        "cookieKey": {"token": "sess-1"},
        "oidc": {"token": "id-tok"}
    }}));
    let auth = build(card(standard_schemes(), json!([{"basic": []}])), &c).unwrap();
    assert_eq!(
        headers(&auth).await["authorization"],
        "Basic YWxhZGRpbjpvcGVuc2VzYW1l"
    );
    let auth = build(card(standard_schemes(), json!([{"cookieKey": []}])), &c).unwrap();
    assert_eq!(headers(&auth).await["cookie"], "sid=sess-1");
    let auth = build(card(standard_schemes(), json!([{"oidc": []}])), &c).unwrap();
    assert_eq!(headers(&auth).await["authorization"], "Bearer id-tok");

    // Username/password cannot satisfy a bearer scheme.
    let c = creds(json!({"Test Agent": {"bearer": {"username": "u", "password": "p"}}}));
    let e = build(card(standard_schemes(), json!([{"bearer": []}])), &c).unwrap_err();
    assert!(
        e.message.contains("only fits an HTTP basic scheme"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn custom_headers_travel_with_their_scheme() {
    let c = creds(json!({"Test Agent": {
        "bearer": {"token": "t", "headers": {"X-Tenant": "blue"}},
        "api": {"headers": {"X-API-Key": "from-headers", "X-Client": "c1"}}
    }}));
    let auth = build(
        card(standard_schemes(), json!([{"bearer": [], "api": []}])),
        &c,
    )
    .unwrap();
    let h = headers(&auth).await;
    assert_eq!(h["authorization"], "Bearer t");
    assert_eq!(h["x-tenant"], "blue");
    assert_eq!(h["x-api-key"], "from-headers");
    assert_eq!(h["x-client"], "c1");

    // Headers-only entries must carry the API-key header the card names.
    let c = creds(json!({"Test Agent": {"api": {"headers": {"X-Other": "x"}}}}));
    let e = build(card(standard_schemes(), json!([{"api": []}])), &c).unwrap_err();
    assert!(e.is(ErrorCode::AuthRequirementUnsatisfied));
    assert!(
        e.message
            .contains("do not include the API-key header X-API-Key"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn credentials_are_only_sent_to_their_origin() {
    let c = creds(json!({"Test Agent": {"bearer": {"token": "t"}}}));
    let auth = build(card(standard_schemes(), json!([{"bearer": []}])), &c).unwrap();
    auth.headers_for(&uri("https://agent.example:443/a2a/tasks/1"))
        .await
        .unwrap();
    for other in [
        "https://evil.example/a2a",
        "http://agent.example/a2a",
        "https://agent.example:8443/a2a",
        "https://agent.example.evil.example/",
    ] {
        let e = auth.headers_for(&uri(other)).await.unwrap_err();
        assert!(e.is(ErrorCode::AuthHostMismatch), "{other}");
        assert_eq!(e.details["configuredOrigin"], "https://agent.example:443");
        assert!(auth.check_url(&uri(other)).is_err());
        assert!(auth.on_unauthorized(&uri(other)).await.is_err());
    }
    assert!(auth.check_url(&uri("https://AGENT.example/other")).is_ok());
}

struct Provider {
    headers: Vec<(&'static str, &'static str)>,
    covers: bool,
    calls: AtomicUsize,
}

impl Provider {
    fn new(headers: Vec<(&'static str, &'static str)>, covers: bool) -> Arc<Self> {
        Arc::new(Provider {
            headers,
            covers,
            calls: AtomicUsize::new(0),
        })
    }
}

#[async_trait]
impl AuthProvider for Provider {
    async fn headers(&self, request: AuthRequest<'_>) -> Result<HeaderMap, Failure> {
        assert_eq!(request.agent, "Test Agent");
        assert_eq!(request.card.name, "Test Agent");
        self.calls.fetch_add(1, Ordering::SeqCst);
        let mut h = HeaderMap::new();
        for (n, v) in &self.headers {
            h.append(*n, HeaderValue::from_static(v));
        }
        Ok(h)
    }

    fn covers(&self, _agent: &str, _name: &str, _scheme: &SecurityScheme) -> bool {
        self.covers
    }
}

#[tokio::test]
async fn a_provider_can_satisfy_requirements_alone_and_is_always_called() {
    let p = Provider::new(vec![("authorization", "Bearer gateway-token")], true);
    let auth = AgentAuth::builder(card(standard_schemes(), json!([{"bearer": []}])), URL)
        .provider(p.clone())
        .build()
        .unwrap();
    assert_eq!(auth.provider_scheme_names(), ["bearer"]);
    let h = headers(&auth).await;
    assert_eq!(h["authorization"], "Bearer gateway-token");
    assert!(
        h["authorization"].is_sensitive(),
        "provider values are marked sensitive"
    );
    assert_eq!(auth.sensitive_header_names()[0], "authorization");

    // Called also when the card has no schemes.
    let auth = AgentAuth::builder(card(Value::Null, Value::Null), URL)
        .provider(p.clone())
        .build()
        .unwrap();
    assert_eq!(
        headers(&auth).await["authorization"],
        "Bearer gateway-token"
    );
    assert_eq!(p.calls.load(Ordering::SeqCst), 2);

    // A provider that declines a scheme does not satisfy it.
    let declining = Provider::new(vec![], false);
    let e = AgentAuth::builder(card(standard_schemes(), json!([{"bearer": []}])), URL)
        .provider(declining)
        .build()
        .unwrap_err();
    assert!(e.is(ErrorCode::AuthRequirementUnsatisfied));
    assert!(!e.message.contains("none are configured"));
}

#[tokio::test]
async fn provider_and_credentials_conflict_case_insensitively() {
    let c = creds(json!({"Test Agent": {"bearer": {"token": "credential-token"}}}));
    let p = Provider::new(vec![("AUTHORIZATION", "Bearer provider-token")], true);
    let auth = AgentAuth::builder(card(standard_schemes(), json!([{"bearer": []}])), URL)
        .credentials(&c)
        .provider(p)
        .build()
        .unwrap();
    let e = auth.headers_for(&uri(URL)).await.unwrap_err();
    assert!(e.is(ErrorCode::AuthConflictingHeaders));
    assert_eq!(
        e.message,
        "Authentication header conflict for agent Test Agent: authorization"
    );
    assert!(!e.message.contains("token"));

    // The same value from both sources is fine.
    let p = Provider::new(
        vec![
            ("authorization", "Bearer credential-token"),
            ("x-trace", "1"),
        ],
        true,
    );
    let auth = AgentAuth::builder(card(standard_schemes(), json!([{"bearer": []}])), URL)
        .credentials(&c)
        .provider(p)
        .build()
        .unwrap();
    let h = headers(&auth).await;
    assert_eq!(h.get_all("authorization").iter().count(), 1);
    assert_eq!(h["x-trace"], "1");
}

#[tokio::test]
async fn two_schemes_setting_one_header_differently_conflict() {
    let c = creds(json!({"Test Agent": {"bearer": {"token": "a"}, "oidc": {"token": "b"}}}));
    let auth = build(
        card(standard_schemes(), json!([{"bearer": [], "oidc": []}])),
        &c,
    )
    .unwrap();
    let e = auth.headers_for(&uri(URL)).await.unwrap_err();
    assert!(e.is(ErrorCode::AuthConflictingHeaders));
}

#[tokio::test]
async fn interface_url_must_have_an_http_origin() {
    // The card names the interface URL: one without an http(s) origin is the agent's fault, even
    // when no credentials are configured.
    for url in ["agent.example:50051", "not a url", "file:///etc/passwd"] {
        let e = AgentAuth::builder(card(Value::Null, Value::Null), url)
            .build()
            .unwrap_err();
        assert!(e.is(ErrorCode::A2aInvalidResponse), "{url}: {e}");
    }
}

fn bearer_creds(extra: Value) -> Credentials {
    let mut entry = json!({"bearer": {"token": "origin-secret"}});
    if let Value::Object(m) = extra {
        entry.as_object_mut().unwrap().extend(m);
    }
    creds(json!({ "Test Agent": entry }))
}

fn bound(c: &Credentials, configured: ConfiguredOrigin) -> Result<AgentAuth, Failure> {
    AgentAuth::builder(card(standard_schemes(), json!([{"bearer": []}])), URL)
        .credentials(c)
        .configured_origin(configured)
        .build()
}

#[tokio::test]
async fn credentials_go_only_to_the_origin_the_user_configured() {
    let c = bearer_creds(Value::Null);
    // The card was fetched from the interface's origin (another path, default port spelled out).
    let same =
        ConfiguredOrigin::AgentUrl("https://Agent.Example:443/.well-known/agent-card.json".into());
    assert_eq!(
        headers(&bound(&c, same).unwrap()).await["authorization"],
        "Bearer origin-secret"
    );
    // Fetched from elsewhere: the interface the card names is not where the user pointed.
    let other = ConfiguredOrigin::AgentUrl("https://front.example/card.json".into());
    let e = bound(&c, other.clone()).unwrap_err();
    assert!(e.is(ErrorCode::AuthHostMismatch), "{e}");
    assert_eq!(e.details["configuredOrigin"], "https://front.example:443");
    assert_eq!(e.details["interfaceOrigin"], "https://agent.example:443");
    assert!(!e.message.contains("origin-secret"));
    // A card nobody configured an origin for gets nothing without an allow-list.
    let e = bound(&c, ConfiguredOrigin::Unknown).unwrap_err();
    assert!(e.is(ErrorCode::AuthHostMismatch), "{e}");
    // The per-agent opt-in.
    let allowed = bearer_creds(json!({"allowed_origins": ["https://agent.example"]}));
    bound(&allowed, other).unwrap();
    bound(&allowed, ConfiguredOrigin::Unknown).unwrap();
    // Without configured credentials there is nothing to protect: the provider alone is fine.
    AgentAuth::builder(card(standard_schemes(), json!([{"bearer": []}])), URL)
        .provider(Provider::new(vec![], true))
        .configured_origin(ConfiguredOrigin::Unknown)
        .build()
        .unwrap();
}

#[tokio::test]
async fn an_https_card_with_a_plain_http_interface_is_a_downgrade() {
    let allowed = bearer_creds(json!({"allowed_origins": ["http://agent.example"]}));
    let e = AgentAuth::builder(
        card(standard_schemes(), json!([{"bearer": []}])),
        "http://agent.example/a2a",
    )
    .credentials(&allowed)
    .configured_origin(ConfiguredOrigin::AgentUrl(
        "https://agent.example/card.json".into(),
    ))
    .build()
    .unwrap_err();
    assert!(e.is(ErrorCode::AuthInsecureDowngrade), "{e}");
}

#[tokio::test]
async fn a_card_chosen_oauth2_token_url_must_be_at_a_configured_origin() {
    let schemes = json!({"oauth": {"oauth2SecurityScheme": {"flows": {"clientCredentials": {
        "tokenUrl": "https://collector.example/token", "scopes": {}}}}}});
    let c = creds(json!({"Test Agent": {"oauth": {"client_id": "id", "client_secret": "cs"}}}));
    let e = AgentAuth::builder(card(schemes, json!([{"oauth": []}])), URL)
        .credentials(&c)
        .configured_origin(ConfiguredOrigin::AgentUrl(URL.into()))
        .build()
        .unwrap_err();
    assert!(e.is(ErrorCode::AuthHostMismatch), "{e}");
    assert_eq!(e.details["tokenOrigin"], "https://collector.example:443");
}

#[test]
fn allowed_origins_must_be_http_origins() {
    for bad in [
        json!("https://a"),
        json!(["ftp://a"]),
        json!([7]),
        json!(["not a url"]),
    ] {
        let e = Credentials::from_value(
            &json!({"A": {"allowed_origins": bad, "s": {"token": "t"}}}),
            &Environment::default(),
        )
        .unwrap_err();
        assert!(e.is(ErrorCode::ConfigInvalidCredentials), "{e}");
    }
    let c = creds(json!({
        "profiles": {"p": {"s": {"token": "t"}}},
        "agents": {"A": {"profile": "p", "allowed_origins": ["https://b.example:8443/x"]}}
    }));
    let a = c.for_agent("A").unwrap();
    assert_eq!(a.allowed_origins()[0].to_string(), "https://b.example:8443");
    assert_eq!(a.scheme_names().collect::<Vec<_>>(), ["s"]);
}

#[tokio::test]
async fn debug_of_agent_auth_shows_no_secret() {
    let c = creds(json!({"Test Agent": {"bearer": {"token": "dbg-secret-77"}}}));
    let auth = build(card(standard_schemes(), json!([{"bearer": []}])), &c).unwrap();
    let shown = format!("{auth:?}");
    assert!(shown.contains("Test Agent"));
    assert!(!shown.contains("dbg-secret-77"), "{shown}");
}

#[tokio::test]
async fn a_token_and_an_authorization_header_in_one_entry_conflict() {
    // One entry sets the token (placed in Authorization) and an explicit
    // Authorization header with another value. That is a conflict of the entry, named by agent
    // and header, not an unsatisfied requirement.
    let c = creds(json!({"Test Agent": {"bearer": {
        "token": "from-token",
        "headers": {"Authorization": "Bearer from-header"}
    }}}));
    let e = build(card(standard_schemes(), json!([{"bearer": []}])), &c).unwrap_err();
    assert!(e.is(ErrorCode::AuthConflictingHeaders), "{e}");
    assert_eq!(
        e.message,
        "Authentication header conflict for agent Test Agent: authorization (scheme bearer)"
    );
    assert_eq!(e.details["agent"], "Test Agent");
    assert!(!e.message.contains("from-"), "{}", e.message);
}
