//! A driver paused after its write-ahead record was acknowledged (a stopped process) wakes with
//! its lease lapsed: it must not send, because another driver may have taken the run over and
//! sent the command itself. The pause is played by a store whose `taskIntent` append returns
//! only after the lease lapsed, and whose renewals wait for it, as a stopped process's would;
//! another driver takes the run over meanwhile (or, in the second test, nobody does: then the
//! driver renews its lapsed lease and sends).

use crate::support::*;
use a2aflow_kernel::journal::{JournalRecord, Lease};
use a2aflow_kernel::{
    DispatchRequest, MemoryStore, RemoteClient, RunInput, RunOptions, RunStore, SendIntent,
    StoreError, TaskFailure, TaskOutcome,
};
use a2aflow_model::ErrorCode;
use async_trait::async_trait;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::RwLock;

const TTL: Duration = Duration::from_millis(300);
const PAUSE: Duration = Duration::from_millis(900);

/// A [`MemoryStore`] whose first `taskIntent` append is committed, then "paused" past the
/// lease; renewals wait while the pause lasts.
struct Paused {
    inner: MemoryStore,
    take_over: bool,
    pause: RwLock<()>,
    paused_once: AtomicUsize,
}

#[async_trait]
impl StoreHooks for Paused {
    fn store(&self) -> &dyn RunStore {
        &self.inner
    }
    async fn append_driven(
        &self,
        lease: &Lease,
        records: Vec<JournalRecord>,
    ) -> Result<Range<u64>, StoreError> {
        let intent = records
            .iter()
            .any(|r| matches!(r, JournalRecord::TaskIntent(_)));
        let written = self.inner.append_driven(lease, records).await;
        if intent && self.paused_once.fetch_add(1, Ordering::SeqCst) == 0 {
            let _paused = self.pause.write().await;
            tokio::time::sleep(PAUSE).await;
            if self.take_over {
                self.inner
                    .acquire(&lease.execution_id, "another driver")
                    .await?;
            }
        }
        written
    }
    async fn renew(&self, lease: &Lease) -> Result<Lease, StoreError> {
        let _running = self.pause.read().await;
        self.inner.renew(lease).await
    }
}

impl Paused {
    /// The pause of a stopped process: renewals wait, the lease lapses, and another driver
    /// takes the run over when the test says so.
    async fn pause_now(&self, id: &str) {
        let _paused = self.pause.write().await;
        tokio::time::sleep(PAUSE).await;
        if self.take_over {
            self.inner.acquire(id, "another driver").await.unwrap();
        }
    }
}

/// Journals each send and counts the ones it lets go (after the journal's last check, as a
/// network client asks it when the bytes would be written).
#[derive(Default)]
struct Counting {
    sent: AtomicUsize,
    /// Pauses between `before_send` and the last check (the process stopped while connecting).
    paused_before_write: Option<Arc<Hooked<Paused>>>,
}

#[async_trait]
impl RemoteClient for Counting {
    async fn dispatch(&self, request: DispatchRequest<'_>) -> Result<TaskOutcome, TaskFailure> {
        let message_id = format!("{}-m", request.local_task_id);
        request
            .journal
            .before_send(SendIntent {
                context_id: "ctx",
                message_id: &message_id,
                remote_task_id: None,
                content: &request.content,
            })
            .await
            .map_err(TaskFailure::new)?;
        if let Some(store) = &self.paused_before_write {
            store.pause_now(request.execution_id).await;
        }
        let check = request.journal.send_check().expect("a durable run checks");
        if !check() {
            return Err(TaskFailure::new(a2aflow_model::Failure::new(
                ErrorCode::WorkflowCancelled,
                "withheld",
            )));
        }
        self.sent.fetch_add(1, Ordering::SeqCst);
        Ok(TaskOutcome::default())
    }
}

/// Where the test pauses the driver.
#[derive(Clone, Copy, PartialEq)]
enum PauseAt {
    /// In the `taskIntent` append (before the lease is checked).
    Append,
    /// After the check, before the bytes are written.
    Write,
}

/// Runs one task on a store that pauses its first send past the lease at `at`; what was sent,
/// the run's result and the kinds of its journal's records.
async fn run_paused_at(
    take_over: bool,
    at: PauseAt,
) -> (usize, a2aflow_model::ExecutionResult, Vec<&'static str>) {
    let store = Arc::new(Hooked(Paused {
        inner: MemoryStore::with_lease_ttl(TTL),
        take_over,
        pause: RwLock::new(()),
        // Already "used" when the pause is elsewhere.
        paused_once: AtomicUsize::new(usize::from(at == PauseAt::Write)),
    }));
    let client = Arc::new(Counting {
        paused_before_write: (at == PauseAt::Write).then(|| Arc::clone(&store)),
        ..Counting::default()
    });
    let options = RunOptions {
        store: Some(store.clone()),
        execution_id: Some("exec".into()),
        ..Default::default()
    };
    let w = wf(vec![step("a", &["x"], &[])]);
    let r = tokio::time::timeout(
        Duration::from_secs(30),
        a2aflow_kernel::run(
            w,
            RunInput::default(),
            Arc::new(Host::default()),
            client.clone(),
            options,
        ),
    )
    .await
    .expect("the run ends");
    let kinds = store
        .inner
        .load("exec")
        .await
        .unwrap()
        .entries
        .iter()
        .map(|e| e.record.kind())
        .collect();
    (client.sent.load(Ordering::SeqCst), r, kinds)
}

async fn run_paused(take_over: bool) -> (usize, a2aflow_model::ExecutionResult) {
    let (sent, r, _) = run_paused_at(take_over, PauseAt::Append).await;
    (sent, r)
}

/// The window the append's check leaves: a driver stopped after it, before its bytes go. The
/// last check (made where the bytes are written) finds the lease lapsed: nothing is sent,
/// nothing more is journaled, and the run stops with `store.lease_lost`, whether or not another
/// driver took it over (the check cannot ask the store; a resume goes on from the journal).
#[tokio::test]
async fn a_driver_paused_between_its_check_and_the_write_sends_nothing() {
    for take_over in [true, false] {
        let (sent, r, kinds) = run_paused_at(take_over, PauseAt::Write).await;
        assert_eq!(sent, 0, "take_over {take_over}: a lapsed lease sent");
        let failure = r.failure.expect("a failure");
        assert_eq!(failure.code, ErrorCode::StoreLeaseLost, "{failure:?}");
        assert_eq!(
            kinds.last(),
            Some(&"taskIntent"),
            "take_over {take_over}: nothing journaled after the withheld send: {kinds:?}"
        );
    }
}

#[tokio::test]
async fn a_driver_that_wakes_with_its_lease_taken_over_does_not_send() {
    let (sent, r) = run_paused(true).await;
    assert_eq!(sent, 0, "a lease taken over sent");
    assert!(!r.success);
    let failure = r.failure.expect("a failure");
    assert_eq!(failure.code, ErrorCode::StoreLeaseLost, "{failure:?}");
}

#[tokio::test]
async fn a_driver_whose_lapsed_lease_nobody_took_renews_it_and_sends() {
    let (sent, r) = run_paused(false).await;
    assert_eq!(sent, 1);
    assert!(r.success, "{:?}", r.failure);
}
