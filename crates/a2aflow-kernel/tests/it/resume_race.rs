//! Two drivers racing to resume one run: what a resume read before it held the lease may be
//! stale by the time it holds it (the other driver went on, or finished and released the
//! lease), so the resume goes on from the journal read under the lease.

use crate::support::*;
use a2aflow_kernel::journal::{JournalRecord, RunJournal};
use a2aflow_kernel::{
    AgentScript, InMemoryClient, MemoryStore, RunInput, RunOptions, RunStore, ScriptedReply,
    StoreError, resume,
};
use a2aflow_model::Output;
use async_trait::async_trait;
use std::sync::{Arc, Mutex};

const EXEC: &str = "raced";

/// A store whose first `load` answers with the journal as it stood before another driver
/// finished the run; every later call sees the store as it is.
struct StaleFirstLoad {
    inner: Arc<MemoryStore>,
    stale: Mutex<Option<RunJournal>>,
}

#[async_trait]
impl StoreHooks for StaleFirstLoad {
    fn store(&self) -> &dyn RunStore {
        &*self.inner
    }
    async fn load(&self, execution_id: &str) -> Result<RunJournal, StoreError> {
        let stale = self.stale.lock().unwrap().take();
        match stale {
            Some(journal) => Ok(journal),
            None => self.inner.load(execution_id).await,
        }
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
    let store = Arc::new(Hooked(StaleFirstLoad {
        inner,
        stale: Mutex::new(Some(stale)),
    }));

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
