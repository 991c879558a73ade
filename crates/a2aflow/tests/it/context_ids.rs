//! The context id of a logical task: the host's when its content names one, otherwise one the
//! kernel mints for the task; either way it reaches the wire unchanged, on both bindings.

use std::sync::Arc;

use a2aflow::kernel::{CallbackError, ControlPoint, RunInput};
use a2aflow::model::{
    LoadOptions, MessageContent, TaskOutcomeStatus, TaskRequest, TaskResult, Workflow,
    load_workflow_str,
};
use a2aflow::{EngineConfig, HostHooks, execute_workflow, fetch_agent_cards};
use a2aflow_testkit::{AgentSpec, Binding, Route, TestServer};
use serde_json::Value;

/// Sends `task <description>`, in the context `host-<agent>` when `own` is set.
struct ContextHost {
    own: bool,
}

#[async_trait::async_trait]
impl ControlPoint for ContextHost {
    async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
        let content = MessageContent::text(format!("task {}", request.description));
        Ok(if self.own {
            content.in_context(format!("host-{}", request.agent))
        } else {
            content
        })
    }
    async fn on_self_task(&self, _: TaskRequest) -> Result<TaskResult, CallbackError> {
        Ok(TaskResult::default())
    }
}

const TWO_AGENTS: &str = r#"{"id": "wf", "steps": [
  {"name": "ask", "subtasks": [{"agent": "rpc", "description": "one"}, {"agent": "rest", "description": "two"}]}
]}"#;

/// A server with a JSON-RPC agent `rpc` and an HTTP+JSON agent `rest`.
pub async fn two_bindings() -> TestServer {
    TestServer::builder()
        .agent(AgentSpec::new("rpc").bindings(&[Binding::JsonRpc]))
        .agent(AgentSpec::new("rest").bindings(&[Binding::HttpJson]))
        .spawn()
        .await
        .unwrap()
}

/// The messages the server received in SendMessage / SendStreamingMessage, with their agent.
pub fn sent_messages(server: &TestServer) -> Vec<(String, Value)> {
    server
        .requests()
        .iter()
        .filter(|r| matches!(r.route, Some(Route::Send | Route::Stream)))
        .filter_map(|r| {
            let body = r.body.as_ref()?;
            let message = body
                .get("params")
                .and_then(|p| p.get("message"))
                .or_else(|| body.get("message"))?;
            Some((r.agent.clone().unwrap_or_default(), message.clone()))
        })
        .collect()
}

fn workflow(text: &str) -> Workflow {
    load_workflow_str(text, LoadOptions::STRICT)
        .unwrap()
        .workflow
}

async fn run_two(own: bool) -> (TestServer, a2aflow::model::ExecutionResult) {
    let server = two_bindings().await;
    let config = EngineConfig::default();
    let urls = [server.card_url("rpc"), server.card_url("rest")];
    let cards = fetch_agent_cards(&urls, &config).await.unwrap();
    server.clear_requests();
    let result = execute_workflow(
        workflow(TWO_AGENTS),
        &cards,
        Arc::new(ContextHost { own }),
        &config,
        RunInput::default(),
        HostHooks::default(),
    )
    .await
    .unwrap();
    (server, result)
}

#[tokio::test]
async fn a_host_context_id_reaches_the_wire_unchanged_on_both_bindings() {
    let (server, result) = run_two(true).await;
    assert!(result.success, "{:#?}", result.failure);
    let sent = sent_messages(&server);
    assert_eq!(sent.len(), 2, "{sent:?}");
    for (agent, message) in &sent {
        assert_eq!(message["contextId"], format!("host-{agent}"), "{message}");
    }
    for view in &result.steps[0].task_results {
        assert_eq!(view.status, TaskOutcomeStatus::Completed);
        assert_eq!(
            view.context_id.as_deref(),
            Some(format!("host-{}", view.agent_name).as_str())
        );
    }
}

#[tokio::test]
async fn without_a_host_context_id_each_task_gets_a_minted_one() {
    let (server, result) = run_two(false).await;
    assert!(result.success, "{:#?}", result.failure);
    let sent = sent_messages(&server);
    let contexts: Vec<&str> = sent
        .iter()
        .map(|(_, m)| m["contextId"].as_str().unwrap())
        .collect();
    assert_eq!(contexts.len(), 2);
    assert_ne!(contexts[0], contexts[1]);
    for (agent, message) in &sent {
        let view = result.steps[0]
            .task_results
            .iter()
            .find(|v| &v.agent_name == agent)
            .unwrap();
        assert_eq!(view.context_id.as_deref(), message["contextId"].as_str());
    }
}

/// A host whose content names a blank context id.
struct BlankContextHost;

#[async_trait::async_trait]
impl ControlPoint for BlankContextHost {
    async fn on_task(&self, _: TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(MessageContent::text("task x").in_context(" "))
    }
    async fn on_self_task(&self, _: TaskRequest) -> Result<TaskResult, CallbackError> {
        Ok(TaskResult::default())
    }
}

#[tokio::test]
async fn a_blank_host_context_id_is_invalid_content_and_nothing_is_sent() {
    let server = two_bindings().await;
    let config = EngineConfig::default();
    let cards = fetch_agent_cards(&[server.card_url("rpc")], &config)
        .await
        .unwrap();
    server.clear_requests();
    let one = r#"{"steps": [{"name": "ask", "subtasks": [{"agent": "rpc"}]}]}"#;
    let result = execute_workflow(
        workflow(one),
        &cards,
        Arc::new(BlankContextHost),
        &config,
        RunInput::default(),
        HostHooks::default(),
    )
    .await
    .unwrap();
    let view = &result.steps[0].task_results[0];
    assert_eq!(
        view.error_code.as_deref(),
        Some("workflow.invalid_content"),
        "{view:?}"
    );
    assert!(sent_messages(&server).is_empty());
}

/// Sends each description as it is, in the context `host-<agent>`.
struct VerbatimInContext;

#[async_trait::async_trait]
impl ControlPoint for VerbatimInContext {
    async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(MessageContent::text(request.description).in_context(format!("host-{}", request.agent)))
    }
}

#[tokio::test]
async fn every_retry_of_a_task_goes_in_the_hosts_context_on_both_bindings() {
    let server = two_bindings().await;
    let config = EngineConfig::default();
    let urls = [server.card_url("rpc"), server.card_url("rest")];
    let cards = fetch_agent_cards(&urls, &config).await.unwrap();
    server.clear_requests();
    let retried = r#"{"attempts": 3, "backoff": {"initial": 0.01}, "on": ["a2a.task_failed"]}"#;
    let text = format!(
        r#"{{"steps": [{{"name": "ask", "subtasks": [
          {{"agent": "rpc", "description": "flaky 2 please", "retry": {retried}}},
          {{"agent": "rest", "description": "flaky 2 please", "retry": {retried}}}]}}]}}"#
    );
    let result = execute_workflow(
        workflow(&text),
        &cards,
        Arc::new(VerbatimInContext),
        &config,
        RunInput::default(),
        HostHooks::default(),
    )
    .await
    .unwrap();
    assert!(result.success, "{:#?}", result.failure);
    let sent = sent_messages(&server);
    assert_eq!(sent.len(), 6, "{sent:?}");
    for (agent, message) in &sent {
        assert_eq!(message["contextId"], format!("host-{agent}"), "{message}");
    }
    for view in &result.steps[0].task_results {
        assert_eq!(view.attempts, 3, "{view:?}");
        assert_eq!(
            view.context_id.as_deref(),
            Some(format!("host-{}", view.agent_name).as_str())
        );
    }
}
