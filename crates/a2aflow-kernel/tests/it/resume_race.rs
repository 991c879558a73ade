//! Two drivers racing to resume one run: what a resume read before it held the lease may be
//! stale by the time it holds it (the other driver went on, or finished and released the
//! lease), so the resume goes on from the journal read under the lease.

use crate::support::*;
use a2aflow_kernel::journal::{
    JournalRecord, Lease, RunFilter, RunJournal, RunStarted, RunSummary,
};
use a2aflow_kernel::{
    AgentScript, InMemoryClient, MemoryStore, RunInput, RunOptions, RunStore, ScriptedReply,
    StoreError, resume,
};
use a2aflow_model::{Event, Output};
use async_trait::async_trait;
use std::ops::Range;
use std::sync::{Arc, Mutex};

const EXEC: &str = "raced";

/// A store whose first `load` answers with the journal as it stood before another driver
/// finished the run; every later call sees the store as it is.
struct StaleFirstLoad {
    inner: Arc<MemoryStore>,
    stale: Mutex<Option<RunJournal>>,
}

#[async_trait]
impl RunStore for StaleFirstLoad {
    async fn create_run(&self, run: RunStarted) -> Result<(), StoreError> {
        self.inner.create_run(run).await
    }
    async fn append_batch(
        &self,
        execution_id: &str,
        records: Vec<JournalRecord>,
    ) -> Result<Range<u64>, StoreError> {
        self.inner.append_batch(execution_id, records).await
    }
    async fn append_driven(
        &self,
        lease: &Lease,
        records: Vec<JournalRecord>,
    ) -> Result<Range<u64>, StoreError> {
        self.inner.append_driven(lease, records).await
    }
    async fn record_driven_events(
        &self,
        lease: &Lease,
        events: Vec<Event>,
    ) -> Result<(), StoreError> {
        self.inner.record_driven_events(lease, events).await
    }
    async fn lease(&self, execution_id: &str) -> Result<Option<Lease>, StoreError> {
        self.inner.lease(execution_id).await
    }
    async fn load(&self, execution_id: &str) -> Result<RunJournal, StoreError> {
        let stale = self.stale.lock().unwrap().take();
        match stale {
            Some(journal) => Ok(journal),
            None => self.inner.load(execution_id).await,
        }
    }
    async fn list(&self, filter: RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        self.inner.list(filter).await
    }
    async fn record_events(
        &self,
        execution_id: &str,
        events: Vec<Event>,
    ) -> Result<(), StoreError> {
        self.inner.record_events(execution_id, events).await
    }
    async fn events(
        &self,
        execution_id: &str,
        after_seq: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        self.inner.events(execution_id, after_seq, limit).await
    }
    async fn acquire(&self, execution_id: &str, owner: &str) -> Result<Lease, StoreError> {
        self.inner.acquire(execution_id, owner).await
    }
    async fn renew(&self, lease: &Lease) -> Result<Lease, StoreError> {
        self.inner.renew(lease).await
    }
    async fn release(&self, lease: Lease) -> Result<(), StoreError> {
        self.inner.release(lease).await
    }
}

fn client() -> Arc<InMemoryClient> {
    let charged = ScriptedReply::Succeed(vec![Output::text("charged")]);
    Arc::new(InMemoryClient::new().agent("billing", AgentScript::reply(charged)))
}

#[tokio::test]
async fn a_run_finished_by_another_driver_before_the_lease_is_not_driven_again() {
    let workflow = wf(vec![
        step("a", &["billing"], &["b"]),
        step("b", &["billing"], &[]),
    ]);
    let inner = Arc::new(MemoryStore::new());
    let first = client();
    let finished = a2aflow_kernel::run(
        workflow,
        RunInput::default(),
        Arc::new(Host::default()),
        first.clone(),
        RunOptions {
            store: Some(inner.clone()),
            execution_id: Some(EXEC.into()),
            ..Default::default()
        },
    )
    .await;
    assert!(finished.success, "{:?}", finished.failure);
    // The journal as the racing resume read it: the other driver had journaled its first
    // step's task and nothing after it.
    let mut stale = inner.load(EXEC).await.unwrap();
    let cut = stale
        .entries
        .iter()
        .position(|e| matches!(e.record, JournalRecord::StepFinished { .. }))
        .expect("the first step's end");
    stale.entries.truncate(cut);
    let store = Arc::new(StaleFirstLoad {
        inner,
        stale: Mutex::new(Some(stale)),
    });

    let second = client();
    let resumed = resume(
        EXEC,
        store,
        Arc::new(Host::default()),
        second.clone(),
        RunOptions::default(),
    )
    .await
    .expect("the resume");
    assert!(resumed.success, "{:?}", resumed.failure);
    assert_eq!(resumed.steps, finished.steps, "the other driver's result");
    assert_eq!(second.total_dispatches(), 0, "nothing is sent again");
    assert_eq!(second.reattached(), 0, "nothing is attached to again");
}
