//! A gate parked against the official Python SDK peer, on both bindings: its `input …` task
//! stops at INPUT_REQUIRED, the run parks it (`GatePolicy::Park`), and the host's answer goes out
//! as a follow-up on the same task and context, which the peer completes (`work …`); declined,
//! the task fails with the host's code and the peer's task is cancelled by the CancelTask. Its
//! `auth …` task stops at AUTH_REQUIRED: the host's `AuthProvider` is told before the answer
//! goes out on the same task, which the peer completes.

use crate::peer::Peer;
use a2aflow::kernel::{CallbackError, ControlPoint, GateBoard, GatePolicy, RunInput, RunOptions};
use a2aflow::model::a2a::PartContent;
use a2aflow::model::a2a::{GetTaskRequest, TaskState};
use a2aflow::model::{
    ExecutionResult, Failure, Gate, LoadOptions, MessageContent, OpenGate, TaskRequest, Workflow,
    load_workflow_str,
};
use a2aflow::protocol::Binding;
use a2aflow::protocol::auth::{AuthProvider, AuthRequest};
use a2aflow::{EngineConfig, HostHooks, execute_workflow};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

struct Verbatim;

#[async_trait::async_trait]
impl ControlPoint for Verbatim {
    async fn on_task(&self, task: TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(MessageContent::text(task.description))
    }
}

/// One subtask for the peer, sending `description`.
fn gated(description: &str) -> Workflow {
    let text = format!(
        r#"{{"steps": [{{"name": "s", "subtasks": [{{"agent": "peer", "description": "{description}"}}]}}]}}"#
    );
    load_workflow_str(&text, LoadOptions::STRICT)
        .unwrap()
        .workflow
}

/// A run against the peer that parks at the peer's INPUT_REQUIRED gate on `binding`: the peer,
/// the board, the open gate and the run.
async fn parked(
    binding: &str,
) -> (
    Peer,
    GateBoard,
    OpenGate,
    tokio::task::JoinHandle<ExecutionResult>,
) {
    let (peer, board, gate, run) = parked_at(binding, "input needed", None).await;
    assert_eq!(gate.gate, Gate::InputRequired, "{binding}");
    assert_eq!(
        gate.text.as_deref(),
        Some("which city do you mean?"),
        "{binding}"
    );
    (peer, board, gate, run)
}

/// A run of `description` against the peer on `binding` (with the host's `auth` provider, if
/// any), once it parked at a gate: the peer, the board, the open gate and the run.
async fn parked_at(
    binding: &str,
    description: &str,
    auth: Option<Arc<dyn AuthProvider>>,
) -> (
    Peer,
    GateBoard,
    OpenGate,
    tokio::task::JoinHandle<ExecutionResult>,
) {
    let peer = Peer::start().await;
    let workflow = gated(description);
    let config = EngineConfig::from_toml_str(&format!(
        "bindings = [\"{binding}\"]\npoll_interval_ms = 100\n[timeouts]\nrun_secs = 40"
    ))
    .unwrap();
    let mut card = peer.card.clone();
    card.name = "peer".into();
    let board = GateBoard::new();
    let hooks = HostHooks {
        run_options: RunOptions {
            execution_id: Some("interop-gate".into()),
            gate_policy: GatePolicy::Park,
            gate_board: Some(board.clone()),
            ..RunOptions::default()
        },
        auth_provider: auth,
    };
    let run = tokio::spawn(async move {
        execute_workflow(
            workflow,
            &[card],
            Arc::new(Verbatim),
            &config,
            RunInput::default(),
            hooks,
        )
        .await
        .unwrap()
    });
    let wait = async {
        loop {
            if let Some(g) = board.open_gates("interop-gate").into_iter().next() {
                return g;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let gate = tokio::time::timeout(Duration::from_secs(30), wait)
        .await
        .unwrap_or_else(|_| panic!("{binding}: the gate opens"));
    (peer, board, gate, run)
}

async fn answered_gate(binding: &str) {
    let (_peer, board, gate, run) = parked(binding).await;
    board
        .answer(
            "interop-gate",
            &gate.local_task_id,
            MessageContent::text("work Paris"),
        )
        .unwrap();
    let result = tokio::time::timeout(Duration::from_secs(45), run)
        .await
        .unwrap()
        .unwrap();
    assert!(result.success, "{binding}: {:#?}", result.failure);
    let t = &result.steps[0].task_results[0];
    assert_eq!(
        t.remote_task_id, gate.remote_task_id,
        "{binding}: the same task"
    );
    assert_eq!(t.context_id, gate.context_id, "{binding}: the same context");
    let texts: Vec<&str> = t
        .outputs
        .iter()
        .flat_map(|o| o.parts.iter())
        .filter_map(|p| match &p.content {
            PartContent::Text(s) => Some(s.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["work Paris"], "{binding}: {t:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answered_gate_completes_the_peers_task_jsonrpc() {
    answered_gate("jsonrpc").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answered_gate_completes_the_peers_task_rest() {
    answered_gate("rest").await;
}

/// The host declines the peer's gate: the task fails with the host's code, and the CancelTask
/// that went out leaves the peer's task CANCELED.
async fn declined_gate(binding: &str, wire: Binding) {
    let (peer, board, gate, run) = parked(binding).await;
    board
        .decline(
            "interop-gate",
            &gate.local_task_id,
            "biz.no_city",
            "nobody knows",
        )
        .unwrap();
    let result = tokio::time::timeout(Duration::from_secs(45), run)
        .await
        .unwrap()
        .unwrap();
    assert!(!result.success, "{binding}");
    let t = &result.steps[0].task_results[0];
    assert_eq!(
        t.error_code.as_deref(),
        Some("biz.no_city"),
        "{binding}: {t:#?}"
    );
    assert_eq!(t.remote_task_id, gate.remote_task_id, "{binding}");
    let transport = crate::transport(&peer, wire);
    let request = GetTaskRequest {
        id: gate.remote_task_id.clone().unwrap(),
        history_length: Some(0),
        tenant: None,
    };
    let task = transport.get_task(&request, &crate::opts()).await.unwrap();
    assert_eq!(
        task.status.state,
        TaskState::Canceled,
        "{binding}: {task:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_gate_cancels_the_peers_task_jsonrpc() {
    declined_gate("jsonrpc", Binding::JsonRpc).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_gate_cancels_the_peers_task_rest() {
    declined_gate("rest", Binding::HttpJson).await;
}

/// A host credential source that counts the times it was told the agent wants fresh credentials.
#[derive(Default)]
struct CountingProvider(AtomicUsize);

#[async_trait::async_trait]
impl AuthProvider for CountingProvider {
    async fn headers(&self, _request: AuthRequest<'_>) -> Result<http::HeaderMap, Failure> {
        let mut headers = http::HeaderMap::new();
        let n = self.0.load(Ordering::SeqCst);
        headers.insert("authorization", format!("Bearer t{n}").parse().unwrap());
        Ok(headers)
    }

    async fn on_unauthorized(&self, _agent: &str) -> bool {
        self.0.fetch_add(1, Ordering::SeqCst);
        true
    }
}

/// The peer's AUTH_REQUIRED gate: the provider is told once, then the answer completes the
/// peer's task in its context.
async fn answered_auth_gate(binding: &str) {
    let provider = Arc::new(CountingProvider::default());
    let (_peer, board, gate, run) = parked_at(binding, "auth please", Some(provider.clone())).await;
    assert_eq!(gate.gate, Gate::AuthRequired, "{binding}");
    assert_eq!(gate.text.as_deref(), Some("sign in first"), "{binding}");
    assert_eq!(provider.0.load(Ordering::SeqCst), 0, "{binding}");
    board
        .answer(
            "interop-gate",
            &gate.local_task_id,
            MessageContent::text("work signed in"),
        )
        .unwrap();
    let result = tokio::time::timeout(Duration::from_secs(45), run)
        .await
        .unwrap()
        .unwrap();
    assert!(result.success, "{binding}: {:#?}", result.failure);
    assert_eq!(provider.0.load(Ordering::SeqCst), 1, "{binding}");
    let t = &result.steps[0].task_results[0];
    assert_eq!(t.remote_task_id, gate.remote_task_id, "{binding}");
    assert_eq!(t.context_id, gate.context_id, "{binding}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answered_auth_gate_completes_the_peers_task_jsonrpc() {
    answered_auth_gate("jsonrpc").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answered_auth_gate_completes_the_peers_task_rest() {
    answered_auth_gate("rest").await;
}
