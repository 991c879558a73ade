//! A resumed run keeps the options it was journaled with (its default retry policy, its gate
//! policy, its limits), whatever the resuming host passes; a journal written before a field
//! existed reads with that field's default.

use crate::support::*;
use a2aflow_kernel::journal::{JournaledOptions, RunStarted, wall_clock_ms};
use a2aflow_kernel::{
    AttachRequest, DispatchRequest, GatePolicy, MemoryStore, RemoteClient, RunOptions, RunStore,
    TaskFailure, TaskOutcome, resume,
};
use a2aflow_model::{Backoff, ErrorCode, Failure, RetryPolicy};
use async_trait::async_trait;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// An agent that is always down; counts the dispatches.
#[derive(Default)]
struct Down {
    dispatches: AtomicUsize,
}

#[async_trait]
impl RemoteClient for Down {
    async fn dispatch(&self, _request: DispatchRequest<'_>) -> Result<TaskOutcome, TaskFailure> {
        self.dispatches.fetch_add(1, Ordering::SeqCst);
        Err(TaskFailure::new(Failure::new(
            ErrorCode::A2aConnection,
            "the agent is down",
        )))
    }

    async fn reattach(&self, _request: AttachRequest<'_>) -> Result<TaskOutcome, TaskFailure> {
        Err(TaskFailure::new(Failure::new(
            ErrorCode::A2aConnection,
            "the agent is down",
        )))
    }
}

fn journaled_options() -> RunOptions {
    RunOptions {
        timeout: Duration::from_secs(60),
        max_concurrent_remote_tasks: Some(3),
        retry: Some(RetryPolicy {
            attempts: 3,
            backoff: Backoff {
                initial: Duration::ZERO,
                ..Backoff::default()
            },
            on: vec!["a2a.connection".into()],
        }),
        gate_policy: GatePolicy::Park,
        ..Default::default()
    }
}

#[tokio::test]
async fn a_resumed_run_retries_with_its_journaled_default_policy() {
    let store = Arc::new(MemoryStore::new());
    let workflow = wf(vec![step("a", &["down"], &[])]);
    let started = RunStarted::new(
        "exec",
        &workflow,
        None,
        &journaled_options(),
        wall_clock_ms(),
    )
    .unwrap();
    store.create_run(started).await.unwrap();
    let client = Arc::new(Down::default());
    // The resuming host passes no retry policy: the run's own one still applies.
    let r = resume(
        "exec",
        store.clone(),
        Arc::new(Host::default()),
        client.clone(),
        RunOptions::default(),
    )
    .await
    .unwrap();
    let view = &r.steps[0].task_results[0];
    assert_eq!(view.error_code.as_deref(), Some("a2a.connection"));
    assert_eq!(view.attempts, 3, "{view:?}");
    assert_eq!(client.dispatches.load(Ordering::SeqCst), 3);
}

#[test]
fn the_journal_keeps_the_gate_policy_and_the_retry_policy() {
    let options = JournaledOptions::of(&journaled_options());
    let json = serde_json::to_value(&options).unwrap();
    assert_eq!(json["gatePolicy"], "park");
    assert_eq!(json["retry"]["attempts"], 3);
    assert_eq!(json["maxConcurrentRemoteTasks"], 3);
    let back: JournaledOptions = serde_json::from_value(json).unwrap();
    assert_eq!(back, options);
    let mut resumed = RunOptions::default();
    back.apply_to(&mut resumed);
    assert_eq!(resumed.gate_policy, GatePolicy::Park);
    assert_eq!(resumed.max_concurrent_remote_tasks, Some(3));
    assert_eq!(resumed.retry, journaled_options().retry);
}

#[test]
fn a_journal_without_the_newer_fields_reads_with_their_defaults() {
    let old = serde_json::json!({
        "timeoutMs": 1000, "cleanupGraceMs": 5000,
        "maxDelegationDepth": 3, "maxDelegationFanOut": 16
    });
    let options: JournaledOptions = serde_json::from_value(old).unwrap();
    assert_eq!(options.gate_policy, None);
    assert_eq!(options.retry, None);
    // Such a run resumes with the resuming host's gate policy.
    let mut resumed = RunOptions {
        gate_policy: GatePolicy::Park,
        ..Default::default()
    };
    options.apply_to(&mut resumed);
    assert_eq!(resumed.gate_policy, GatePolicy::Park);
    // A default run journals its gate policy, and no retry policy.
    let json = serde_json::to_value(JournaledOptions::of(&RunOptions::default())).unwrap();
    assert_eq!(json["gatePolicy"], "fail");
    assert!(json.get("retry").is_none(), "{json}");
}
