//! Gates and retries together: a gate is never retried (it parks); an answered gate is a
//! follow-up inside its attempt; a failure after the answer that the policy retries starts a new
//! attempt in the task's one context.

use crate::support::{Host, Recorder, go_with, step, wf};
use a2aflow_kernel::{
    AgentScript, GateBoard, GatePolicy, InMemoryClient, RunOptions, ScriptedReply,
};
use a2aflow_model::retry::{Backoff, RetryPolicy};
use a2aflow_model::{ErrorCode, EventKind, Failure, Gate, MessageContent};
use std::sync::Arc;
use std::time::Duration;

const HANG: Duration = Duration::from_secs(20);

#[tokio::test]
async fn an_answered_gate_that_then_fails_is_retried_in_the_same_context() {
    // Every fresh send gates; the answer to the gate fails with a code the policy retries.
    let script = AgentScript::reply(ScriptedReply::Gate {
        gate: Gate::InputRequired,
        then: Box::new(ScriptedReply::Fail(Failure::new(
            ErrorCode::A2aTaskFailed,
            "failed after the answer",
        ))),
    });
    let client = Arc::new(InMemoryClient::new().agent("gated", script));
    let board = GateBoard::new();
    let rec = Recorder::default();
    let policy = RetryPolicy {
        attempts: 2,
        backoff: Backoff {
            initial: Duration::from_millis(1),
            ..Backoff::default()
        },
        on: vec!["a2a.task_failed".into()],
    };
    let options = RunOptions {
        gate_policy: GatePolicy::Park,
        gate_board: Some(board.clone()),
        retry: Some(policy),
        timeout: Duration::from_secs(60),
        ..rec.options()
    };
    let host = Arc::new(Host::default());
    let run = tokio::spawn({
        let client = client.clone();
        async move {
            go_with(
                wf(vec![step("ask", &["gated"], &[])]),
                &host,
                &client,
                options,
            )
            .await
        }
    });
    let wait = async {
        loop {
            if let Some(g) = board.open_gates("exec").into_iter().next() {
                return g;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    let gate = tokio::time::timeout(HANG, wait)
        .await
        .expect("a gate opens");
    board
        .answer("exec", &gate.local_task_id, MessageContent::text("Paris"))
        .unwrap();
    let r = tokio::time::timeout(HANG, run).await.unwrap().unwrap();
    assert!(!r.success);
    let view = &r.steps[0].task_results[0];
    assert_eq!(
        view.error_code.as_deref(),
        Some("a2a.task_failed"),
        "{view:?}"
    );
    assert_eq!(
        view.attempts, 2,
        "the failure after the answer was retried once"
    );
    // The answer continued the gated remote task in the task's context; the retry was a
    // fresh send (not a follow-up) after it: three sends in all, one gate, one retry. (The
    // in-memory agent keeps one remote task per logical task, so attempt 2 meets the answered
    // task again and fails at once.)
    let follow_ups = client.follow_ups();
    assert_eq!(follow_ups.len(), 1);
    assert_eq!(follow_ups[0].context_id, gate.context_id);
    assert_eq!(Some(&follow_ups[0].continues), gate.remote_task_id.as_ref());
    assert_eq!(rec.count(EventKind::AgentRequest), 3);
    assert_eq!(rec.count(EventKind::TaskGated), 1);
    assert_eq!(
        rec.count(EventKind::TaskRetry),
        1,
        "the gate itself is never retried"
    );
    assert_eq!(view.context_id, gate.context_id);
}
