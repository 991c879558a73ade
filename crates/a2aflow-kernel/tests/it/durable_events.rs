//! A durable run's events in its store: the same events its sink saw, and, in a wide step,
//! handed to the store while the step is still running (the run's buffer is bounded).

use crate::support::*;
use a2aflow_kernel::journal::{
    EncodedEvent, JournalRecord, Lease, RunFilter, RunJournal, RunStarted, RunSummary, StoreError,
};
use a2aflow_kernel::{
    DispatchRequest, MemoryStore, RemoteClient, RunInput, RunOptions, RunStore, TaskFailure,
    TaskOutcome,
};
use a2aflow_model::{ErrorCode, Event, EventKind};
use async_trait::async_trait;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

const EXEC: &str = "exec";
/// Subtasks in the wide step: several times the run's event buffer bound.
const WIDE: usize = 600;

/// Answers every task at once, except those to agent `hold`, which wait for `release`.
struct Holding {
    release: Notify,
}

#[async_trait]
impl RemoteClient for Holding {
    async fn dispatch(&self, request: DispatchRequest<'_>) -> Result<TaskOutcome, TaskFailure> {
        if request.agent == "hold" {
            self.release.notified().await;
        }
        Ok(TaskOutcome::default())
    }
}

fn wide_step() -> a2aflow_model::Workflow {
    let mut agents = vec!["fast"; WIDE];
    agents.push("hold");
    wf(vec![step("a", &agents, &[])])
}

/// The run's stored events (none while the run is not in the store yet).
async fn stored(store: &MemoryStore) -> Vec<Event> {
    match store.events(EXEC, None, usize::MAX).await {
        Err(e) if e.is(ErrorCode::StoreUnknownExecution) => Vec::new(),
        events => events.unwrap(),
    }
}

#[tokio::test]
async fn a_wide_step_hands_its_events_to_the_store_before_it_ends() {
    let store = Arc::new(MemoryStore::new());
    let client = Arc::new(Holding {
        release: Notify::new(),
    });
    let options = RunOptions {
        store: Some(store.clone()),
        execution_id: Some(EXEC.into()),
        ..Default::default()
    };
    let run = tokio::spawn(a2aflow_kernel::run(
        wide_step(),
        RunInput::default(),
        Arc::new(Host::default()),
        client.clone(),
        options,
    ));
    // The held task keeps the step open; its events reach the store meanwhile.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let early = loop {
        let events = stored(&store).await;
        if events.len() >= WIDE {
            break events;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "only {} events stored while the step runs",
            events.len()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(!run.is_finished(), "the step ended before the check");
    for (i, e) in early.iter().enumerate() {
        assert_eq!(e.seq, i as u64, "stored events out of order");
    }
    client.release.notify_one();
    let result = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the run did not end")
        .unwrap();
    assert!(result.success, "{:?}", result.failure);
    let all = stored(&store).await;
    assert!(all.len() > early.len());
    for (i, e) in all.iter().enumerate() {
        assert_eq!(e.seq, i as u64, "stored events out of order or with a gap");
    }
    assert_eq!(&all[..early.len()], &early[..]);
}

#[tokio::test]
async fn the_stored_events_are_the_events_the_sink_saw() {
    let store = Arc::new(MemoryStore::new());
    let client = Arc::new(Holding {
        release: Notify::new(),
    });
    // Nothing holds: every task answers at once.
    let w = wf(vec![
        step("a", &["fast"; 40], &["b"]),
        step("b", &["x"], &[]),
    ]);
    let rec = Recorder::default();
    let options = RunOptions {
        store: Some(store.clone()),
        ..rec.options()
    };
    let before = a2aflow_kernel::journal::wall_clock_ms();
    let result = a2aflow_kernel::run(
        w,
        RunInput::default(),
        Arc::new(Host::default()),
        client,
        options,
    )
    .await;
    assert!(result.success, "{:?}", result.failure);
    let after = a2aflow_kernel::journal::wall_clock_ms();
    let seen = rec.events();
    assert!(seen.len() > 80);
    // Each has the time it was emitted, and the store keeps that time (and everything else).
    for e in &seen {
        let ms = e.time.map(|t| t.unix_ms());
        assert!(
            ms.is_some_and(|ms| (before..=after).contains(&ms)),
            "event {} at {ms:?}, the run from {before} to {after}",
            e.seq
        );
    }
    assert_eq!(stored(&store).await, seen);
}

/// A [`MemoryStore`] that also keeps the text of every event a driver hands it as text.
#[derive(Default)]
struct TextKeeper {
    inner: MemoryStore,
    texts: std::sync::Mutex<Vec<(u64, String)>>,
}

#[async_trait]
impl RunStore for TextKeeper {
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
    async fn record_driven_encoded_events(
        &self,
        lease: &Lease,
        events: Vec<EncodedEvent>,
    ) -> Result<(), StoreError> {
        self.texts
            .lock()
            .unwrap()
            .extend(events.iter().map(|e| (e.seq(), e.json().to_owned())));
        self.inner.record_driven_encoded_events(lease, events).await
    }
    async fn load(&self, execution_id: &str) -> Result<RunJournal, StoreError> {
        self.inner.load(execution_id).await
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
    async fn lease(&self, execution_id: &str) -> Result<Option<Lease>, StoreError> {
        self.inner.lease(execution_id).await
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

#[tokio::test]
async fn a_run_without_a_sink_stores_each_event_as_the_text_serde_writes_of_it() {
    // No sink, no hook: the run's events go only to its journal, each written once as text
    // (in place, its `seq` and time last) and handed to the store as it is.
    let store = Arc::new(TextKeeper::default());
    let w = wf(vec![
        step("a", &["fast"; 40], &["b"]),
        step("b", &["x"], &[]),
    ]);
    let options = RunOptions {
        store: Some(store.clone()),
        execution_id: Some(EXEC.into()),
        ..Default::default()
    };
    let before = a2aflow_kernel::journal::wall_clock_ms();
    let result = a2aflow_kernel::run(
        w,
        RunInput::default(),
        Arc::new(Host::default()),
        Arc::new(Holding {
            release: Notify::new(),
        }),
        options,
    )
    .await;
    assert!(result.success, "{:?}", result.failure);
    let after = a2aflow_kernel::journal::wall_clock_ms();
    let texts = store.texts.lock().unwrap().clone();
    // Every kind a wide step and its run emit, each in order and once.
    assert!(texts.len() > 80, "{} events", texts.len());
    let mut kinds = std::collections::HashSet::new();
    for (i, (seq, text)) in texts.iter().enumerate() {
        assert_eq!(*seq, i as u64, "stored out of order or with a gap");
        let event: Event = serde_json::from_str(text).unwrap();
        assert_eq!(event.seq, *seq);
        assert_eq!(&serde_json::to_string(&event).unwrap(), text);
        let ms = event.time.map(|t| t.unix_ms());
        assert!(
            ms.is_some_and(|ms| (before..=after).contains(&ms)),
            "{text}"
        );
        kinds.insert(event.kind);
    }
    for kind in [
        EventKind::Start,
        EventKind::StepStart,
        EventKind::TaskRequest,
        EventKind::TaskStatusChanged,
        EventKind::TaskResponse,
        EventKind::StepComplete,
        EventKind::Complete,
        EventKind::Close,
    ] {
        assert!(kinds.contains(&kind), "no {kind} event stored");
    }
}
