//! The whole engine (facade → kernel → engine client → transport) against the official Python SDK
//! peer, on all three bindings: a three-step workflow with the right outputs, a failing subtask, an
//! ordinary INPUT_REQUIRED gate, and ANY_SUCCESS cancelling its slow sibling remotely.

use crate::peer::Peer;
use a2aflow::kernel::{CallbackError, ControlPoint, RunInput};
use a2aflow::model::a2a::{ListTasksRequest, Part, PartContent, Task, TaskState};
use a2aflow::model::{
    ExecutionResult, LoadOptions, MessageContent, Output, TaskOutcomeStatus, TaskRequest,
    TaskResult, load_workflow_str,
};
use a2aflow::protocol::{CallOptions, HttpClient, connect};
use a2aflow::testkit::list_in_context;
use a2aflow::{AgentEndpoint, EngineConfig, HostHooks, execute_workflow};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// Sends each subtask's description as text; the SELF_LOOP step lists what it saw upstream.
struct Host;

#[async_trait::async_trait]
impl ControlPoint for Host {
    async fn on_task(&self, task: TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(MessageContent::text(task.description))
    }
    async fn on_self_task(&self, task: TaskRequest) -> Result<TaskResult, CallbackError> {
        let texts: Vec<String> = task
            .workflow_input
            .upstream_results
            .iter()
            .flat_map(|u| u.task_results.iter())
            .flat_map(|t| t.outputs.iter().flat_map(|o| o.parts.iter()))
            .filter_map(|p| match &p.content {
                PartContent::Text(t) => Some(t.clone()),
                _ => None,
            })
            .collect();
        Ok(TaskResult {
            outputs: vec![Output::data(json!({ "seen": texts }))],
        })
    }
}

async fn run(peer: &Peer, binding: &str, workflow: &str) -> ExecutionResult {
    let workflow = load_workflow_str(workflow, LoadOptions::STRICT)
        .unwrap()
        .workflow;
    let config = EngineConfig::from_toml_str(&format!(
        "bindings = [\"{binding}\"]\npoll_interval_ms = 100\n[timeouts]\nrun_secs = 40"
    ))
    .unwrap();
    // The agent as the user configured it: named `peer`, at the peer's plain http URL (so its
    // gRPC `host:port` interface is reached in the clear).
    let agent = AgentEndpoint::new("peer", &peer.base_url, peer.card.clone());
    execute_workflow(
        workflow,
        &[agent],
        Arc::new(Host),
        &config,
        RunInput::default(),
        HostHooks::default(),
    )
    .await
    .unwrap()
}

fn texts(result: &ExecutionResult, step: &str) -> Vec<String> {
    let step = result.steps.iter().find(|s| s.step_name == step).unwrap();
    step.task_results
        .iter()
        .flat_map(|t| t.outputs.iter().flat_map(|o| o.parts.iter()))
        .filter_map(|p| match &p.content {
            PartContent::Text(t) => Some(t.clone()),
            _ => None,
        })
        .collect()
}

const THREE_STEPS: &str = r#"{"id": "interop", "steps": [
  {"name": "work", "subtasks": [{"agent": "peer", "description": "work on the north city"}], "next": [{"step": "aggregate"}]},
  {"name": "stream", "subtasks": [{"agent": "peer", "description": "stream the south city"}], "next": [{"step": "aggregate"}]},
  {"name": "aggregate", "type": "SELF_LOOP", "subtasks": [{"agent": "", "description": "aggregate"}]}
]}"#;

async fn three_steps(binding: &str) {
    let peer = Peer::start().await;
    let result = run(&peer, binding, THREE_STEPS).await;
    assert!(result.success, "{binding}: {:#?}", result.failure);
    assert_eq!(
        texts(&result, "work"),
        vec!["work on the north city"],
        "{binding}"
    );
    // Three appended chunks assembled into ONE artifact whose parts are the chunks, in order.
    let stream = result
        .steps
        .iter()
        .find(|s| s.step_name == "stream")
        .unwrap();
    let outputs = &stream.task_results[0].outputs;
    assert_eq!(outputs.len(), 1, "{binding}: {outputs:#?}");
    assert_eq!(outputs[0].name.as_deref(), Some("chunks"), "{binding}");
    assert_eq!(
        texts(&result, "stream"),
        vec!["part-0 ", "part-1 ", "part-2 "],
        "{binding}"
    );
    let aggregate = result
        .steps
        .iter()
        .find(|s| s.step_name == "aggregate")
        .unwrap();
    let seen = &aggregate.task_results[0].outputs[0].parts[0];
    let Part {
        content: PartContent::Data(seen),
        ..
    } = seen
    else {
        panic!("{seen:?}")
    };
    let mut seen: Vec<String> = serde_json::from_value(seen["seen"].clone()).unwrap();
    seen.sort();
    assert_eq!(
        seen,
        vec!["part-0 ", "part-1 ", "part-2 ", "work on the north city"],
        "{binding}"
    );
}

async fn failures_and_gates(binding: &str) {
    let peer = Peer::start().await;
    let result = run(
        &peer,
        binding,
        r#"{"steps": [{"name": "s", "subtasks": [{"agent": "peer", "description": "fail please"}]}]}"#,
    )
    .await;
    assert!(!result.success);
    let t = &result.steps[0].task_results[0];
    assert_eq!(
        t.error_code.as_deref(),
        Some("a2a.task_failed"),
        "{binding}: {t:#?}"
    );
    assert!(
        t.error.as_deref().unwrap_or("").contains("could not do it"),
        "{binding}: {t:#?}"
    );

    let result = run(
        &peer,
        binding,
        r#"{"steps": [{"name": "s", "subtasks": [{"agent": "peer", "description": "input needed"}]}]}"#,
    )
    .await;
    let t = &result.steps[0].task_results[0];
    assert_eq!(
        t.error_code.as_deref(),
        Some("negotiation.not_negotiable"),
        "{binding}: {t:#?}"
    );
    assert!(
        !t.received_messages.is_empty(),
        "the gate keeps its evidence"
    );
}

async fn any_success_cancels_the_slow_sibling(binding: &str) {
    let peer = Peer::start().await;
    let result = run(
        &peer,
        binding,
        r#"{"steps": [{"name": "race", "type": "ANY_SUCCESS",
            "subtasks": [{"agent": "peer", "description": "wait 30"}, {"agent": "peer", "description": "work fast"}]}]}"#,
    )
    .await;
    assert!(result.success, "{binding}: {:#?}", result.failure);
    let slow = result.steps[0]
        .task_results
        .iter()
        .find(|t| t.task_description == "wait 30")
        .unwrap();
    assert_eq!(slow.status, TaskOutcomeStatus::Canceled, "{binding}");
    // The best-effort CancelTask reached the peer: its task for "wait 30" shows CANCELED (bounded
    // wait). The loser may have been cancelled before its stream named the task (no remote id in
    // the result); the engine then cancels the task once the late answer names it. Either way the
    // peer's task is found by the loser's context id, and the peer's own task list is the evidence.
    let context_id = slow
        .context_id
        .clone()
        .unwrap_or_else(|| panic!("{binding}: the loser keeps its context id"));
    let client = HttpClient::new().unwrap();
    let t = connect(&peer.card, &client, &[a2aflow::protocol::Binding::JsonRpc]).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let list = ListTasksRequest {
            page_size: Some(50),
            history_length: Some(10),
            ..list_in_context(&context_id)
        };
        let tasks = t
            .list_tasks(
                &list,
                &CallOptions::default().with_timeout(Duration::from_secs(5)),
            )
            .await
            .unwrap()
            .tasks;
        let waiting: Vec<&Task> = tasks
            .iter()
            .filter(|task| {
                task.context_id == context_id
                    && serde_json::to_string(&task.history)
                        .unwrap()
                        .contains("wait 30")
            })
            .collect();
        assert!(
            waiting.len() <= 1,
            "{binding}: one remote task for the slow subtask: {waiting:#?}"
        );
        let state = waiting.first().map(|task| {
            if let Some(id) = &slow.remote_task_id {
                assert_eq!(&task.id, id, "{binding}: the loser's remote task");
            }
            task.status.state.clone()
        });
        if state == Some(TaskState::Canceled) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{binding}: the slow task (remote id {:?}) is still {state:?}",
            slow.remote_task_id
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_three_step_workflow_jsonrpc() {
    three_steps("jsonrpc").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_three_step_workflow_rest() {
    three_steps("rest").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_three_step_workflow_grpc() {
    three_steps("grpc").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_failure_and_input_gate_jsonrpc() {
    failures_and_gates("jsonrpc").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_failure_and_input_gate_rest() {
    failures_and_gates("rest").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_failure_and_input_gate_grpc() {
    failures_and_gates("grpc").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_any_success_cancels_remotely_jsonrpc() {
    any_success_cancels_the_slow_sibling("jsonrpc").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_any_success_cancels_remotely_rest() {
    any_success_cancels_the_slow_sibling("rest").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_any_success_cancels_remotely_grpc() {
    any_success_cancels_the_slow_sibling("grpc").await;
}
