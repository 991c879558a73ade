//! What a durable run's task costs in store appends: the remote states a client reports ride
//! with the driver's next write (the task's end at the latest) instead of each taking one, and
//! the journal still holds the last of them, before the task's end.

use crate::support::*;
use a2aflow_kernel::journal::{CallbackAnswered, JournalRecord, Lease};
use a2aflow_kernel::{
    DispatchRequest, MemoryStore, RemoteClient, RunInput, RunOptions, RunStore, SendIntent,
    StoreError, TaskFailure, TaskOutcome,
};
use a2aflow_model::a2a::TaskState;
use async_trait::async_trait;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

const EXEC: &str = "exec";

/// A [`MemoryStore`] that counts the driver's appends.
struct Counting {
    inner: MemoryStore,
    appends: AtomicUsize,
}

#[async_trait]
impl StoreHooks for Counting {
    fn store(&self) -> &dyn RunStore {
        &self.inner
    }
    async fn append_driven(
        &self,
        lease: &Lease,
        records: Vec<JournalRecord>,
    ) -> Result<Range<u64>, StoreError> {
        self.appends.fetch_add(1, Ordering::SeqCst);
        self.inner.append_driven(lease, records).await
    }
}

/// Sends (journaled), names its remote task, then reports three states before it answers.
struct Reporting;

#[async_trait]
impl RemoteClient for Reporting {
    async fn dispatch(&self, request: DispatchRequest<'_>) -> Result<TaskOutcome, TaskFailure> {
        let message_id = format!("{}-m", request.local_task_id);
        let remote = format!("{}-r", request.local_task_id);
        let intent = SendIntent {
            context_id: "ctx",
            message_id: &message_id,
            remote_task_id: None,
            content: &request.content,
        };
        let journal = request.journal;
        journal
            .before_send(intent)
            .await
            .map_err(TaskFailure::new)?;
        journal.remote_task_known("ctx", &remote).await;
        for state in [
            TaskState::Submitted,
            TaskState::Working,
            TaskState::Completed,
        ] {
            journal.remote_state(&remote, state).await;
        }
        Ok(TaskOutcome::default())
    }
}

#[tokio::test]
async fn remote_states_ride_with_the_next_write_and_the_last_one_is_journaled() {
    let store = Arc::new(Hooked(Counting {
        inner: MemoryStore::new(),
        appends: AtomicUsize::new(0),
    }));
    let options = RunOptions {
        store: Some(store.clone()),
        execution_id: Some(EXEC.into()),
        ..Default::default()
    };
    let w = wf(vec![step("a", &["x", "y"], &[])]);
    let r = a2aflow_kernel::run(
        w,
        RunInput::default(),
        Arc::new(Host::default()),
        Arc::new(Reporting),
        options,
    )
    .await;
    assert!(r.success, "{:?}", r.failure);
    let journal = store.load(EXEC).await.unwrap();
    for local in ["exec:a:0", "exec:a:1"] {
        let states: Vec<(usize, &TaskState)> = journal
            .entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| match &e.record {
                JournalRecord::RemoteState {
                    local_task_id,
                    state,
                } if local_task_id == local => Some((i, state)),
                _ => None,
            })
            .collect();
        assert_eq!(states.len(), 1, "{local}: {states:?}");
        assert_eq!(states[0].1, &TaskState::Completed);
        let finished = journal
            .entries
            .iter()
            .position(|e| {
                matches!(&e.record, JournalRecord::TaskFinished { local_task_id, .. } if local_task_id == local)
            })
            .unwrap();
        assert!(states[0].0 < finished, "{local}: its state after its end");
    }
    // Every record but the remote states and the host's `on_task` answers (and the first,
    // written by create_run) came in an append of its own: the states took none, and each
    // answer went in the append of its task's write-ahead record.
    let own = journal
        .entries
        .iter()
        .skip(1)
        .filter(|e| {
            !matches!(
                e.record,
                JournalRecord::RemoteState { .. }
                    | JournalRecord::CallbackAnswered(CallbackAnswered::OnTask { .. })
            )
        })
        .count();
    assert_eq!(store.appends.load(Ordering::SeqCst), own);
}
