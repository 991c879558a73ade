//! A gate parked against the official Python SDK peer, on both bindings: its `input …` task
//! stops at INPUT_REQUIRED, the run parks it (`GatePolicy::Park`), and the host's answer goes out
//! as a follow-up on the same task and context, which the peer completes (`work …`).

use crate::peer::Peer;
use a2aflow::kernel::{CallbackError, ControlPoint, GateBoard, GatePolicy, RunInput, RunOptions};
use a2aflow::model::a2a::PartContent;
use a2aflow::model::{Gate, LoadOptions, MessageContent, TaskRequest, load_workflow_str};
use a2aflow::{EngineConfig, HostHooks, execute_workflow};
use std::sync::Arc;
use std::time::Duration;

struct Verbatim;

#[async_trait::async_trait]
impl ControlPoint for Verbatim {
    async fn on_task(&self, task: TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(MessageContent::text(task.description))
    }
}

const GATED: &str =
    r#"{"steps": [{"name": "s", "subtasks": [{"agent": "peer", "description": "input needed"}]}]}"#;

async fn answered_gate(binding: &str) {
    let peer = Peer::start().await;
    let workflow = load_workflow_str(GATED, LoadOptions::STRICT)
        .unwrap()
        .workflow;
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
        ..HostHooks::default()
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
    assert_eq!(gate.gate, Gate::InputRequired, "{binding}");
    assert_eq!(
        gate.text.as_deref(),
        Some("which city do you mean?"),
        "{binding}"
    );
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
