//! A resumed run continues a retried task at its journaled attempt: the journaled send is found
//! again (never re-sent as an earlier attempt), and the next attempt goes in the same context
//! naming every earlier attempt's remote task.

use crate::support::*;
use a2aflow_kernel::journal::{
    Answer, CallbackAnswered, JournalRecord, RunStarted, TaskIntent, TaskKey, wall_clock_ms,
};
use a2aflow_kernel::{
    AttachRequest, DispatchRequest, MemoryStore, RemoteClient, RunOptions, RunStore, SendIntent,
    TaskFailure, TaskOutcome, resume,
};
use a2aflow_model::{Backoff, ErrorCode, Failure, MessageContent, RetryPolicy, Workflow};
use async_trait::async_trait;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const EXEC: &str = "exec";
const LOCAL: &str = "exec:a:0";

fn workflow() -> Workflow {
    let mut a = step("a", &["down"], &[]);
    a.subtasks[0].retry = Some(RetryPolicy {
        attempts: 3,
        backoff: Backoff {
            initial: Duration::ZERO,
            ..Backoff::default()
        },
        on: vec!["a2a.connection".into()],
    });
    wf(vec![a])
}

/// What the client was asked: `(call, context id, remote task or references)`.
type Calls = Mutex<Vec<(String, String, Vec<String>)>>;

/// An agent whose every task fails with `a2a.connection`; a dispatch journals its send.
#[derive(Default)]
struct Down {
    calls: Calls,
}

fn lost(context_id: &str, remote_task_id: Option<&str>) -> TaskFailure {
    TaskFailure {
        context_id: Some(context_id.to_owned()),
        remote_task_id: remote_task_id.map(str::to_owned),
        ..TaskFailure::new(Failure::new(ErrorCode::A2aConnection, "the agent is down"))
    }
}

#[async_trait]
impl RemoteClient for Down {
    async fn dispatch(&self, request: DispatchRequest<'_>) -> Result<TaskOutcome, TaskFailure> {
        let context_id = request.context_id.unwrap_or_default().to_owned();
        self.calls.lock().unwrap().push((
            "dispatch".into(),
            context_id.clone(),
            request.reference_task_ids.to_vec(),
        ));
        let send = SendIntent {
            context_id: &context_id,
            message_id: "m3",
            remote_task_id: None,
            content: &request.content,
        };
        request
            .journal
            .before_send(send)
            .await
            .map_err(TaskFailure::new)?;
        Err(lost(&context_id, Some("r3")))
    }

    async fn reattach(&self, request: AttachRequest<'_>) -> Result<TaskOutcome, TaskFailure> {
        self.calls.lock().unwrap().push((
            "reattach".into(),
            request.context_id.to_owned(),
            request
                .remote_task_id
                .map(str::to_owned)
                .into_iter()
                .collect(),
        ));
        Err(lost(request.context_id, request.remote_task_id))
    }
}

fn intent(attempt: u32) -> JournalRecord {
    JournalRecord::TaskIntent(TaskIntent {
        step: "a".into(),
        subtask_index: 0,
        local_task_id: LOCAL.into(),
        agent: "down".into(),
        skill: "skill".into(),
        attempt,
        message_id: format!("m{attempt}"),
        context_id: "ctx-journaled".into(),
        content: MessageContent::text("work"),
    })
}

fn known(remote: &str) -> JournalRecord {
    JournalRecord::RemoteTaskKnown {
        local_task_id: LOCAL.into(),
        remote_task_id: remote.into(),
    }
}

#[tokio::test]
async fn a_resumed_run_continues_at_the_journaled_attempt_in_the_same_context() {
    let store = Arc::new(MemoryStore::new());
    let options = RunOptions {
        timeout: Duration::from_secs(60),
        ..Default::default()
    };
    let started = RunStarted::new(EXEC, &workflow(), None, &options, wall_clock_ms()).unwrap();
    store.create_run(started).await.unwrap();
    let answered = CallbackAnswered::OnTask {
        key: TaskKey {
            step: "a".into(),
            subtask_index: 0,
            local_task_id: LOCAL.into(),
            attempt: 1,
        },
        answer: Answer::Value(MessageContent::text("work")),
    };
    // Attempt 1 failed (its task r1), attempt 2 was sent (its task r2), then the driver died.
    let records = vec![
        JournalRecord::CallbackAnswered(answered),
        intent(1),
        known("r1"),
        intent(2),
        known("r2"),
    ];
    store.append_batch(EXEC, records).await.unwrap();
    let host = Arc::new(Host::default());
    let client = Arc::new(Down::default());
    let r = resume(
        EXEC,
        store.clone(),
        host.clone(),
        client.clone(),
        RunOptions::default(),
    )
    .await
    .unwrap();
    let view = &r.steps[0].task_results[0];
    assert_eq!(
        view.error_code.as_deref(),
        Some("a2a.connection"),
        "{view:?}"
    );
    assert_eq!(view.attempts, 3);
    assert!(host.task_calls().is_empty(), "the journaled answer is used");
    let calls = client.calls.lock().unwrap().clone();
    assert_eq!(
        calls,
        [
            ("reattach".into(), "ctx-journaled".into(), vec!["r2".into()]),
            (
                "dispatch".into(),
                "ctx-journaled".into(),
                vec!["r1".into(), "r2".into()]
            ),
        ]
    );
    let attempts: Vec<u32> = store
        .load(EXEC)
        .await
        .unwrap()
        .entries
        .iter()
        .filter_map(|e| match &e.record {
            JournalRecord::TaskIntent(i) => Some(i.attempt),
            _ => None,
        })
        .collect();
    assert_eq!(attempts, [1, 2, 3]);
}
