//! Registry and orchestration-centre clients against a fake service (a tiny hyper server).

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2aflow_model::LoadOptions;
use a2aflow_protocol::{HttpClient, Limits};
use a2aflow_services::registry::{OrchestratorClient, RegistryClient, service_client};
use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use serde_json::{Value, json};

/// One request the fake saw.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    uri: String,
    authorization: Option<String>,
    body: String,
}

type Answer = Arc<dyn Fn(&Seen) -> (u16, String) + Send + Sync>;

struct Fake {
    base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

async fn fake(answer: Answer) -> Fake {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let log = log.clone();
            let answer = answer.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req: Request<Incoming>| {
                    let log = log.clone();
                    let answer = answer.clone();
                    async move {
                        let method = req.method().to_string();
                        let uri = req.uri().to_string();
                        let authorization = req
                            .headers()
                            .get("authorization")
                            .map(|v| v.to_str().unwrap().to_owned());
                        let body = req.into_body().collect().await.unwrap().to_bytes();
                        let s = Seen {
                            method,
                            uri,
                            authorization,
                            body: String::from_utf8_lossy(&body).into_owned(),
                        };
                        let (status, text) = answer(&s);
                        log.lock().unwrap().push(s);
                        Ok::<_, Infallible>(
                            Response::builder()
                                .status(status)
                                .header("content-type", "application/json")
                                .body(Full::new(Bytes::from(text)))
                                .unwrap(),
                        )
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    Fake { base, seen }
}

fn card(name: &str) -> Value {
    json!({
        "name": name,
        "description": "d",
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": format!("http://127.0.0.1:9/{name}"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": []
    })
}

fn workflow() -> Value {
    json!({"name": "wf", "steps": [
        {"name": "a", "subtasks": [{"agent": "x", "description": "do"}], "next": [{"step": "b"}]},
        {"name": "b", "subtasks": [{"agent": "y"}], "context_from": ["a"]}
    ]})
}

#[tokio::test]
async fn s_reg_05_cards_are_fetched_with_the_token_in_the_header_only() {
    let f = fake(Arc::new(|_s: &Seen| {
        (200, json!({"agentCards": [card("alpha")]}).to_string())
    }))
    .await;
    let http = service_client(HttpClient::builder(), &f.base, Some("abc/=1")).unwrap();
    let reg = RegistryClient::new(&format!("{}/", f.base), http).unwrap();
    let cards = reg.fetch_agent_cards().await.unwrap();
    assert_eq!(cards.len(), 1);
    assert_eq!(cards[0].name, "alpha");
    let seen = f.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, "GET");
    assert_eq!(seen[0].uri, "/rest/v1/registry-center/agent-cards");
    assert_eq!(seen[0].authorization.as_deref(), Some("Bearer abc/=1"));
    assert!(!seen[0].uri.contains("access_token"));
    assert!(!seen[0].uri.contains("abc"));
}

#[tokio::test]
async fn one_card_by_name_reads_the_data_wrapper_and_encodes_the_query() {
    let f = fake(Arc::new(|s: &Seen| {
        if s.uri.contains("name=") {
            (
                200,
                json!({"data": [card("beta"), card("gamma")]}).to_string(),
            )
        } else {
            (200, json!({"data": []}).to_string())
        }
    }))
    .await;
    let reg = RegistryClient::new(&f.base, HttpClient::new().unwrap()).unwrap();
    let found = reg.fetch_agent_card("be ta", Some("o&g")).await.unwrap();
    assert_eq!(found.unwrap().name, "beta");
    let seen = f.seen.lock().unwrap().clone();
    assert_eq!(
        seen[0].uri,
        "/rest/v1/registry-center/agent-cards?name=be%20ta&organization=o%26g"
    );
    assert_eq!(seen[0].authorization, None);
}

#[tokio::test]
async fn a_registry_body_over_the_limit_is_a2a_response_too_large() {
    let f = fake(Arc::new(|_s: &Seen| {
        let big = "x".repeat(64 * 1024);
        (200, json!({"agentCards": [], "pad": big}).to_string())
    }))
    .await;
    let mut limits = Limits::default();
    limits.max_response_body = 1024;
    let http = HttpClient::builder().limits(limits).build().unwrap();
    let reg = RegistryClient::new(&f.base, http).unwrap();
    let err = reg.fetch_agent_cards().await.unwrap_err();
    assert_eq!(err.code, "a2a.response_too_large", "{err}");
}

#[tokio::test]
async fn a_registry_answer_without_a_list_is_invalid_response() {
    let f = fake(Arc::new(|_s: &Seen| (200, "{\"cards\": 1}".to_owned()))).await;
    let reg = RegistryClient::new(&f.base, HttpClient::new().unwrap()).unwrap();
    let err = reg.fetch_agent_cards().await.unwrap_err();
    assert_eq!(err.code, "a2a.invalid_response", "{err}");
}

#[tokio::test]
async fn s_reg_08_a_stalled_body_ends_at_the_request_timeout() {
    // Headers and one byte, then silence: a raw TCP server.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (release_tx, release_rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 4096];
        let _ = s.read(&mut buf).await;
        s.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{",
        )
        .await
        .unwrap();
        let _ = release_rx.await; // hold the connection open until the test ends
    });
    let mut limits = Limits::default();
    limits.request_timeout = Duration::from_millis(200);
    let http = HttpClient::builder().limits(limits).build().unwrap();
    let reg = RegistryClient::new(&base, http).unwrap();
    let err = reg.fetch_agent_cards().await.unwrap_err();
    assert_eq!(err.code, "a2a.timeout", "{err}");
    drop(release_tx);
}

#[tokio::test]
async fn s_reg_07_a_failed_registration_is_an_error_not_a_result() {
    let f = fake(Arc::new(|_s: &Seen| {
        (400, "{\"detail\":\"invalid card\"}".to_owned())
    }))
    .await;
    let reg = RegistryClient::new(&f.base, HttpClient::new().unwrap()).unwrap();
    let err = reg
        .register_agent_card(&json!({"name": "invalid"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "a2a.http_status", "{err}");
    assert!(err.message.contains("400"), "{err}");
    let seen = f.seen.lock().unwrap().clone();
    assert_eq!(seen[0].method, "POST");
    let body: Value = serde_json::from_str(&seen[0].body).unwrap();
    assert_eq!(body, json!({"agentCards": [{"name": "invalid"}]}));
}

#[tokio::test]
async fn s_reg_03_workflows_load_wrapped_or_bare_with_the_token_header() {
    let f = fake(Arc::new(|s: &Seen| {
        if s.uri.ends_with("/wrapped") {
            (200, json!({"data": workflow()}).to_string())
        } else {
            (200, workflow().to_string())
        }
    }))
    .await;
    let http = service_client(HttpClient::builder(), &f.base, Some("tok")).unwrap();
    let center = OrchestratorClient::new(&f.base, http).unwrap();
    for id in ["wrapped", "bare"] {
        let loaded = center
            .load_workflow(id, LoadOptions::default())
            .await
            .unwrap();
        assert_eq!(loaded.workflow.name, "wf");
        assert_eq!(loaded.workflow.steps.len(), 2);
        assert_eq!(loaded.workflow.steps[1].name, "b");
    }
    let seen = f.seen.lock().unwrap().clone();
    assert_eq!(seen[0].uri, "/api/v1/orchestrate/psop/wrapped");
    assert_eq!(seen[1].uri, "/api/v1/orchestrate/psop/bare");
    assert!(
        seen.iter()
            .all(|s| s.authorization.as_deref() == Some("Bearer tok"))
    );
    assert!(seen.iter().all(|s| !s.uri.contains('?')));
}

#[tokio::test]
async fn an_invalid_workflow_document_is_a_workflow_error() {
    let f = fake(Arc::new(|_s: &Seen| (200, "[1]".to_owned()))).await;
    let center = OrchestratorClient::new(&f.base, HttpClient::new().unwrap()).unwrap();
    let err = center
        .load_workflow("w", LoadOptions::default())
        .await
        .unwrap_err();
    assert!(err.code.as_str().starts_with("workflow."), "{err}");
    let blank = center
        .load_workflow(" ", LoadOptions::default())
        .await
        .unwrap_err();
    assert_eq!(blank.code, "config.invalid");
}

#[tokio::test]
async fn s_reg_12_an_orchestrator_error_body_is_redacted() {
    let f = fake(Arc::new(|_s: &Seen| {
        (
            500,
            "{\"password\":\"p4ss\",\n\"detail\":\"boom\"}".to_owned(),
        )
    }))
    .await;
    let center = OrchestratorClient::new(&f.base, HttpClient::new().unwrap()).unwrap();
    let err = center
        .load_workflow("w", LoadOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code, "a2a.http_status", "{err}");
    let shown = format!("{err} {:?}", err.details);
    assert!(!shown.contains("p4ss"), "{shown}");
}

#[tokio::test]
async fn s_reg_01_search_sends_intent_and_top_n_and_parses_results() {
    let f = fake(Arc::new(|_s: &Seen| {
        (
            200,
            json!({"data": [
                {"workflow_id": "psop-1", "workflow_type": "psop", "name": "fault_diag",
                 "description": "SPN fault diagnosis", "score": 0.95, "user_intent": "diagnose SPN",
                 "tasks_summary": "3 steps"},
                {"workflow_id": "psop-2", "name": "other", "score": 0.80}
            ]})
            .to_string(),
        )
    }))
    .await;
    let center = OrchestratorClient::new(&f.base, HttpClient::new().unwrap()).unwrap();
    let found = center.search("SPN fault", 5).await.unwrap();
    assert_eq!(found.len(), 2);
    assert_eq!(found[0].workflow_id, "psop-1");
    assert_eq!(found[0].workflow_type, "psop");
    assert_eq!(found[0].description, "SPN fault diagnosis");
    assert_eq!(found[0].score, 0.95);
    assert_eq!(found[0].tasks_summary, "3 steps");
    assert_eq!(found[1].score, 0.80);
    let seen = f.seen.lock().unwrap().clone();
    assert_eq!(seen[0].method, "POST");
    assert_eq!(seen[0].uri, "/api/v1/orchestrate/search");
    let body: Value = serde_json::from_str(&seen[0].body).unwrap();
    assert_eq!(body, json!({"intent": "SPN fault", "top_n": 5}));
}

#[tokio::test]
async fn search_without_data_is_no_result() {
    let f = fake(Arc::new(|_s: &Seen| (200, "{}".to_owned()))).await;
    let center = OrchestratorClient::new(&f.base, HttpClient::new().unwrap()).unwrap();
    assert!(center.search("x", 1).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_registry_card_with_legacy_security_schemes_is_normalised() {
    let card = json!({
        "name": "legacy", "description": "d", "version": "1",
        "supportedInterfaces": [{"url": "https://h/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {}, "defaultInputModes": [], "defaultOutputModes": [], "skills": [],
        "securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-Key"}},
        "securityRequirements": [{"schemes": {"key": {}}}]
    });
    let body = json!({"agentCards": [card]}).to_string();
    let f = fake(Arc::new(move |_s: &Seen| (200, body.clone()))).await;
    let reg = RegistryClient::new(&f.base, HttpClient::new().unwrap()).unwrap();
    let cards = reg.fetch_agent_cards().await.unwrap();
    let schemes = cards[0].security_schemes.as_ref().unwrap();
    assert!(matches!(
        &schemes["key"],
        a2aflow_model::a2a::SecurityScheme::ApiKey(k) if k.name == "X-Key" && k.location == "header"
    ));
}
