//! `execute_workflow` end to end against testkit agents: it builds what it needs from the cards,
//! runs, returns the result, and closes every connection it opened.

use crate::support::execute;
use a2aflow::model::{LoadOptions, TaskOutcomeStatus, load_workflow_str};
use a2aflow::{EngineConfig, fetch_agent_cards};
use a2aflow_testkit::{AgentSpec, Binding, Credential, TestServer};
use serde_json::json;

const WORKFLOW: &str = r#"{"id": "wf", "steps": [
  {"name": "ask", "subtasks": [{"agent": "alpha", "description": "one"}, {"agent": "beta", "description": "two"}],
   "next": [{"step": "sum"}]},
  {"name": "sum", "type": "SELF_LOOP", "subtasks": [{"agent": "", "description": "sum"}]}
]}"#;

async fn server() -> TestServer {
    TestServer::builder()
        .agent(AgentSpec::new("alpha"))
        .agent(
            AgentSpec::new("beta")
                .streaming(true)
                .bindings(&[Binding::HttpJson]),
        )
        .spawn()
        .await
        .unwrap()
}

#[tokio::test]
async fn runs_a_workflow_from_cards_and_closes_its_connections() {
    let server = server().await;
    let config = EngineConfig::default();
    let urls = vec![server.card_url("alpha"), server.card_url("beta")];
    let cards = fetch_agent_cards(&urls, &config).await.unwrap();
    let workflow = load_workflow_str(WORKFLOW, LoadOptions::STRICT)
        .unwrap()
        .workflow;
    let result = execute(workflow, &cards, &config).await.unwrap();
    assert!(result.success, "{:#?}", result.failure);
    let ask = &result.steps[0];
    assert_eq!(ask.step_name, "ask");
    for t in &ask.task_results {
        assert_eq!(t.status, TaskOutcomeStatus::Completed);
        assert_eq!(
            t.outputs[0].parts[0],
            a2aflow::model::a2a::Part::data(
                json!({"echo": format!("task {}", t.task_description)})
            )
        );
    }
    let sum = &result.steps[1];
    assert_eq!(
        sum.task_results[0].outputs[0].parts[0],
        a2aflow::model::a2a::Part::data(json!({"saw": ["ask"]}))
    );
    // Both bindings were used, as the cards and the default preference say.
    let paths: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
    assert!(
        paths.iter().any(|p| p.ends_with("/alpha/jsonrpc")),
        "{paths:?}"
    );
    assert!(
        paths
            .iter()
            .any(|p| p.contains("/beta/rest/message:stream")),
        "{paths:?}"
    );
    // Everything execute_workflow opened is closed once it returns.
    for _ in 0..200 {
        if server.open_connections() == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(server.open_connections(), 0);
}

#[tokio::test]
async fn construction_problems_fail_before_anything_is_sent() {
    let server = TestServer::builder()
        .agent(AgentSpec::new("rest-only").bindings(&[Binding::HttpJson]))
        .agent(AgentSpec::new("locked").require_auth(Credential::Bearer("s3cret-token".into())))
        .spawn()
        .await
        .unwrap();
    let config = EngineConfig::default();
    let cards = fetch_agent_cards(
        &[server.card_url("rest-only"), server.card_url("locked")],
        &config,
    )
    .await
    .unwrap();
    server.clear_requests();
    let workflow = load_workflow_str(WORKFLOW, LoadOptions::STRICT)
        .unwrap()
        .workflow;

    let jsonrpc_only = EngineConfig::from_toml_str("bindings = [\"jsonrpc\"]").unwrap();
    let err = execute(workflow.clone(), &cards[..1], &jsonrpc_only)
        .await
        .unwrap_err();
    assert_eq!(err.code, "a2a.unsupported_binding", "{err}");

    let err = execute(workflow, &cards[1..], &config).await.unwrap_err();
    assert_eq!(err.code, "auth.requirement_unsatisfied", "{err}");
    assert!(
        server.requests().is_empty(),
        "nothing may be sent when construction fails"
    );
}

/// A step of `n` subtasks to agent `slow`, which answers each after `delay`: the connections
/// `execute_workflow` opened for it under `config`.
async fn connections_of_a_wide_step(n: usize, config: &EngineConfig) -> usize {
    let delay = std::time::Duration::from_millis(1500);
    let server = TestServer::builder()
        .agent(AgentSpec::new("slow").script(move |_| {
            a2aflow_testkit::TaskScript::new()
                .working()
                .delay(delay)
                .complete()
                .into()
        }))
        .spawn()
        .await
        .unwrap();
    let cards = fetch_agent_cards(&[server.card_url("slow")], config)
        .await
        .unwrap();
    let subtasks: Vec<_> = (0..n)
        .map(|i| json!({"agent": "slow", "description": format!("t{i}")}))
        .collect();
    let text = json!({"id": "wide", "steps": [{"name": "fan", "subtasks": subtasks}]}).to_string();
    let workflow = load_workflow_str(&text, LoadOptions::STRICT)
        .unwrap()
        .workflow;
    let before = server.total_connections();
    let result = execute(workflow, &cards, config).await.unwrap();
    assert!(result.success, "{:#?}", result.failure);
    server.total_connections() - before
}

#[tokio::test]
async fn a_wide_step_sends_at_most_64_remote_tasks_at_once_by_default() {
    // Each HTTP/1 request in flight holds a connection of its own: the connections opened are
    // the most requests that were in flight at once.
    let limited = connections_of_a_wide_step(80, &EngineConfig::default()).await;
    assert!(
        limited <= 64,
        "{limited} connections under the default limit"
    );
    let unbounded = EngineConfig::from_toml_str("max_concurrent_remote_tasks = 0").unwrap();
    let opened = connections_of_a_wide_step(80, &unbounded).await;
    assert!(opened > 64, "{opened} connections without a limit");
}
