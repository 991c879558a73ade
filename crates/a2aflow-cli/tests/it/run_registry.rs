//! `a2aflow run --registry URL` and `--orchestrator URL --workflow-id ID` end to end: a fake
//! registry/orchestration centre (a minimal HTTP/1.1 responder) beside testkit agents.

use crate::support::{Seen, assert_exit, read_request, reply_json};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

struct World {
    agents: a2aflow_testkit::TestServer,
    service: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    _rt: tokio::runtime::Runtime,
}

const WORKFLOW_ID: &str = "wf-1";

fn workflow() -> Value {
    json!({"id": "from-center", "steps": [
        {"name": "ask", "subtasks": [{"agent": "a", "description": "task look"}]}
    ]})
}

/// Serves `GET /rest/v1/registry-center/agent-cards` and `GET /api/v1/orchestrate/psop/wf-1`
/// (`{"data": workflow}`); anything else is 404. One request per connection.
async fn serve(listener: tokio::net::TcpListener, cards: Value, seen: Arc<Mutex<Vec<Seen>>>) {
    loop {
        let Ok((mut s, _)) = listener.accept().await else {
            return;
        };
        let cards = cards.clone();
        let seen = seen.clone();
        tokio::spawn(async move {
            let Some(request) = read_request(&mut s).await else {
                return;
            };
            let path = request.path().to_owned();
            seen.lock().unwrap().push(request);
            let (status, body) = if path == "/rest/v1/registry-center/agent-cards" {
                ("200 OK", json!({ "agentCards": cards }).to_string())
            } else if path == format!("/api/v1/orchestrate/psop/{WORKFLOW_ID}") {
                ("200 OK", json!({ "data": workflow() }).to_string())
            } else {
                ("404 Not Found", "{}".to_owned())
            };
            reply_json(&mut s, status, &body).await;
        });
    }
}

fn world() -> World {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (agents, service) = rt.block_on(async {
        let agents = a2aflow_testkit::TestServer::builder()
            .agent(a2aflow_testkit::AgentSpec::new("alpha"))
            .spawn()
            .await
            .unwrap();
        let http = a2aflow::protocol::HttpClient::new().unwrap();
        let card = http
            .fetch_agent_card(
                &agents.card_url("alpha"),
                &a2aflow::protocol::CallOptions::default(),
            )
            .await
            .unwrap();
        let mut card = serde_json::to_value(card).unwrap();
        card["name"] = json!("a"); // the workflow's name for the agent
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let service = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(serve(listener, json!([card]), seen.clone()));
        (agents, service)
    });
    World {
        agents,
        service,
        seen,
        _rt: rt,
    }
}

fn a2aflow(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2aflow"));
    cmd.args(args)
        .env_remove("A2AFLOW_REGISTRY_TOKEN")
        .env_remove("A2AFLOW_ORCHESTRATOR_TOKEN");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run a2aflow")
}

#[test]
fn run_loads_the_workflow_and_cards_from_the_services_with_header_tokens() {
    let w = world();
    let out = a2aflow(
        &[
            "run",
            "--orchestrator",
            &format!("{}/", w.service),
            "--workflow-id",
            WORKFLOW_ID,
            "--registry",
            &w.service,
            "--format",
            "json",
        ],
        &[
            ("A2AFLOW_ORCHESTRATOR_TOKEN", "orch/=1"),
            ("A2AFLOW_REGISTRY_TOKEN", "reg-2"),
        ],
    );
    assert_exit(&out, 0);
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["success"], true, "{result:#}");
    assert_eq!(result["steps"][0]["stepName"], "ask", "{result:#}");
    let seen = w.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(
        seen[0].line,
        format!("GET /api/v1/orchestrate/psop/{WORKFLOW_ID} HTTP/1.1")
    );
    assert_eq!(seen[0].authorization.as_deref(), Some("Bearer orch/=1"));
    assert_eq!(
        seen[1].line,
        "GET /rest/v1/registry-center/agent-cards HTTP/1.1"
    );
    assert_eq!(seen[1].authorization.as_deref(), Some("Bearer reg-2"));
    assert!(seen.iter().all(|s| !s.line.contains('?')), "{seen:?}");
    assert!(!w.agents.requests().is_empty());
}

#[test]
fn run_with_a_file_and_registry_cards_and_no_tokens_sends_no_authorization() {
    let w = world();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("wf.json");
    std::fs::write(&file, workflow().to_string()).unwrap();
    let out = a2aflow(
        &["run", &file.display().to_string(), "--registry", &w.service],
        &[],
    );
    assert_exit(&out, 0);
    let seen = w.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].authorization, None);
}

#[test]
fn an_unknown_workflow_id_exits_1_with_the_http_status_code() {
    let w = world();
    let out = a2aflow(
        &[
            "run",
            "--orchestrator",
            &w.service,
            "--workflow-id",
            "nope",
            "--registry",
            &w.service,
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("a2a.http_status"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn workflow_source_flags_are_checked_by_the_parser() {
    // Neither FILE nor --workflow-id.
    assert_eq!(a2aflow(&["run"], &[]).status.code(), Some(2));
    // --workflow-id without --orchestrator.
    assert_eq!(
        a2aflow(&["run", "--workflow-id", "x"], &[]).status.code(),
        Some(2)
    );
    // --orchestrator without --workflow-id.
    assert_eq!(
        a2aflow(
            &["run", "f.json", "--orchestrator", "http://127.0.0.1:9"],
            &[]
        )
        .status
        .code(),
        Some(2)
    );
    // FILE and --workflow-id together.
    assert_eq!(
        a2aflow(
            &[
                "run",
                "f.json",
                "--orchestrator",
                "http://127.0.0.1:9",
                "--workflow-id",
                "x"
            ],
            &[]
        )
        .status
        .code(),
        Some(2)
    );
}
