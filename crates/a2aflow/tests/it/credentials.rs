//! Credentials follow the user, never the card: they are bound to the URL the
//! user configured for the agent (or the entry's `allowed_origins`) and selected by the name the
//! user gave it. A card fetched from one origin that names an interface at another, or a plain
//! http interface for a card fetched over https, gets no credentials; nothing is sent there.

use crate::support::execute;
use a2aflow::model::{ExecutionResult, Failure, LoadOptions};
use a2aflow::model::{Workflow, load_workflow_str};
use a2aflow::{AgentEndpoint, EngineConfig, discover_agents, fetch_agent_cards};
use a2aflow_testkit::{AgentSpec, Credential, TestServer, TlsOptions};
use serde_json::{Value, json};
use std::path::Path;

const TOKEN: &str = "alpha-s3cret-token";

fn workflow() -> Workflow {
    load_workflow_str(
        r#"{"id": "wf", "steps": [{"name": "ask", "subtasks": [{"agent": "alpha", "description": "hi"}]}]}"#,
        LoadOptions::STRICT,
    )
    .unwrap()
    .workflow
}

fn locked(name: &str) -> AgentSpec {
    AgentSpec::new(name).require_auth(Credential::Bearer(TOKEN.into()))
}

/// A config whose credentials file holds `doc`.
fn config_with(dir: &Path, doc: Value) -> EngineConfig {
    let path = dir.join("credentials.json");
    std::fs::write(&path, doc.to_string()).unwrap();
    EngineConfig {
        credentials_file: Some(path),
        ..EngineConfig::default()
    }
}

/// A card served by `front` whose interfaces point at agent `name` of `back`.
fn pointing_at(name: &str, back: &TestServer) -> AgentSpec {
    let interfaces = json!([
        {"url": back.jsonrpc_url(name), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": back.rest_url(name), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
    ]);
    locked(name).card_patch(move |card| card["supportedInterfaces"] = interfaces.clone())
}

async fn run(agents: &[AgentEndpoint], config: &EngineConfig) -> Result<ExecutionResult, Failure> {
    execute(workflow(), agents, config).await
}

fn token_seen(server: &TestServer) -> bool {
    server.requests().iter().any(|r| {
        r.headers
            .get_all("authorization")
            .iter()
            .any(|v| v.to_str().is_ok_and(|v| v.contains(TOKEN)))
    })
}

#[tokio::test]
async fn a_cross_origin_interface_gets_no_credentials_unless_the_agent_allows_its_origin() {
    let back = TestServer::single(locked("alpha")).await.unwrap();
    let front = TestServer::single(pointing_at("alpha", &back))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = config_with(dir.path(), json!({"alpha": {"bearer": {"token": TOKEN}}}));
    let agents = discover_agents(&[("alpha", front.card_url("alpha"))], &config)
        .await
        .unwrap();
    back.clear_requests();

    let e = run(&agents, &config).await.unwrap_err();
    assert_eq!(e.code, "auth.host_mismatch", "{e}");
    assert!(e.message.contains("allowed_origins"), "{e}");
    assert!(!e.message.contains(TOKEN));
    assert!(
        back.requests().is_empty(),
        "nothing may reach the other origin"
    );

    // The per-agent opt-in: the other origin listed in allowed_origins.
    let config = config_with(
        dir.path(),
        json!({"alpha": {"allowed_origins": [back.base_url()], "bearer": {"token": TOKEN}}}),
    );
    let result = run(&agents, &config).await.unwrap();
    assert!(result.success, "{:?}", result.failure);
    assert!(token_seen(&back));
    front.shutdown().await.unwrap();
    back.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_card_fetched_over_https_never_sends_credentials_to_a_plain_http_interface() {
    let back = TestServer::single(locked("alpha")).await.unwrap();
    let front = TestServer::builder()
        .agent(pointing_at("alpha", &back))
        .bind_tls(Some(TlsOptions::new()))
        .spawn()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, front.ca_pem().unwrap()).unwrap();
    // Even an explicit allow-list entry for the http origin does not permit the downgrade.
    let mut config = config_with(
        dir.path(),
        json!({"alpha": {"allowed_origins": [back.base_url()], "bearer": {"token": TOKEN}}}),
    );
    config.tls.ca_bundle = Some(ca);
    let agents = discover_agents(&[("alpha", front.card_url("alpha"))], &config)
        .await
        .unwrap();
    back.clear_requests();
    let e = run(&agents, &config).await.unwrap_err();
    assert_eq!(e.code, "auth.insecure_downgrade", "{e}");
    assert!(back.requests().is_empty());
    front.shutdown().await.unwrap();
    back.shutdown().await.unwrap();
}

#[tokio::test]
async fn credentials_are_selected_by_the_users_name_not_the_cards() {
    // The agent at this URL claims to be "victim"; the user calls it "alpha".
    let server =
        TestServer::single(locked("alpha").card_patch(|card| card["name"] = json!("victim")))
            .await
            .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = config_with(dir.path(), json!({"victim": {"bearer": {"token": TOKEN}}}));
    let agents = discover_agents(&[("alpha", server.card_url("alpha"))], &config)
        .await
        .unwrap();
    assert_eq!(agents[0].name(), "alpha");
    server.clear_requests();
    let e = run(&agents, &config).await.unwrap_err();
    assert_eq!(e.code, "auth.requirement_unsatisfied", "{e}");
    assert!(server.requests().is_empty());

    let config = config_with(dir.path(), json!({"alpha": {"bearer": {"token": TOKEN}}}));
    let result = run(&agents, &config).await.unwrap();
    assert!(result.success, "{:?}", result.failure);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_bare_card_gets_credentials_only_for_allowed_origins() {
    let server = TestServer::single(locked("alpha")).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = config_with(dir.path(), json!({"alpha": {"bearer": {"token": TOKEN}}}));
    let cards = fetch_agent_cards(&[server.card_url("alpha")], &config)
        .await
        .unwrap();
    let e = config
        .channel_factory(None)
        .unwrap()
        .connect(&cards[0])
        .err()
        .unwrap();
    assert_eq!(e.code, "auth.host_mismatch", "{e}");

    let config = config_with(
        dir.path(),
        json!({"alpha": {"allowed_origins": [server.base_url()], "bearer": {"token": TOKEN}}}),
    );
    let result = execute(workflow(), &cards, &config).await.unwrap();
    assert!(result.success, "{:?}", result.failure);
    assert!(token_seen(&server));
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_interface_url_without_an_http_origin_is_the_agents_fault() {
    // No credentials configured, so it is not a credentials problem.
    for url in ["not a url", "file:///etc/passwd"] {
        let server = TestServer::single(AgentSpec::new("alpha").card_patch(move |card| {
            card["supportedInterfaces"] =
                json!([{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]);
        }))
        .await
        .unwrap();
        let config = EngineConfig::default();
        let agents = discover_agents(&[("alpha", server.card_url("alpha"))], &config)
            .await
            .unwrap();
        let e = run(&agents, &config).await.unwrap_err();
        assert_eq!(e.code, "a2a.invalid_response", "{url}: {e}");
        server.shutdown().await.unwrap();
    }
}
