//! Durable runs: what a run with a store journals, and resume after an interruption at every
//! journal write (the run dropped there, as a killed host would leave it).

use crate::support::*;
use a2aflow_kernel::journal::{
    CallbackAnswered, JournalRecord, Lease, RunFilter, RunJournal, RunStarted, RunSummary,
    TaskIntent, TaskSlot, wall_clock_ms,
};
use a2aflow_kernel::{
    AgentScript, DispatchRequest, InMemoryClient, MemoryStore, RemoteClient, ResumePolicy,
    RunInput, RunOptions, RunStore, ScriptedReply, SendIntent, StoreError, TaskFailure,
    TaskOutcome, resume,
};
use a2aflow_model::{
    ErrorCode, Event, ExecutionResult, Failure, MessageContent, NegotiationReply, Output, StepType,
    Workflow,
};
use async_trait::async_trait;
use std::collections::HashSet;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

const EXEC: &str = "exec";

/// a (two remote tasks) -> b (SELF_LOOP, conditional) and -> c (a negotiation); both -> d.
fn workflow() -> Workflow {
    wf(vec![
        cond(
            step("a", &["billing", "shipping"], &[]),
            &[("b", "approved"), ("c", "")],
        ),
        typed(step("b", &["self"], &["d"]), StepType::SelfLoop),
        step("c", &["haggler"], &["d"]),
        step("d", &["billing"], &[]),
    ])
}

fn client() -> InMemoryClient {
    let charged = ScriptedReply::Succeed(vec![Output::text("charged")]);
    InMemoryClient::new()
        .agent(
            "billing",
            AgentScript::reply(charged).after(Duration::from_millis(5)),
        )
        .agent(
            "haggler",
            AgentScript::reply(ScriptedReply::Negotiate {
                rounds: 1,
                then: Box::new(ScriptedReply::Succeed(vec![Output::text("deal")])),
            }),
        )
}

fn host() -> Arc<Host> {
    Arc::new(Host {
        route_default: Some(Route::Allow),
        negotiation: Some(NegotiationReply::Send {
            content: MessageContent::text("counter offer"),
        }),
        ..Default::default()
    })
}

fn options(store: Arc<dyn RunStore>) -> RunOptions {
    RunOptions {
        store: Some(store),
        execution_id: Some(EXEC.into()),
        ..Default::default()
    }
}

async fn run_with(
    store: Arc<dyn RunStore>,
    host: &Arc<Host>,
    client: &Arc<InMemoryClient>,
) -> ExecutionResult {
    a2aflow_kernel::run(
        workflow(),
        RunInput {
            runtime_intent: Some("ship it".into()),
        },
        host.clone(),
        client.clone(),
        options(store),
    )
    .await
}

/// Resumes run [`EXEC`] in a new driver with default options.
async fn resume_with_defaults(
    store: Arc<dyn RunStore>,
    host: Arc<Host>,
    client: Arc<InMemoryClient>,
) -> Result<ExecutionResult, Failure> {
    resume(EXEC, store, host, client, RunOptions::default()).await
}

/// Asserts that the run failed with `code`.
#[track_caller]
fn assert_failed_with(r: &ExecutionResult, code: ErrorCode) {
    assert_eq!(
        r.failure.as_ref().map(|f| f.code.clone()),
        Some(code.into())
    );
}

fn kinds(journal: &RunJournal) -> Vec<&'static str> {
    journal.entries.iter().map(|e| e.record.kind()).collect()
}

/// Where a [`FaultyStore`] dies: at its `at`-th write (appends and event batches, from 0),
/// before or after the write reached the store.
#[derive(Debug, Clone, Copy)]
struct Crash {
    at: usize,
    after_write: bool,
}

/// What a [`FaultyStore`] refuses, every time, with a store error.
#[derive(Debug, Clone, Copy)]
enum Refuse {
    /// Every append: `store.unavailable` (a full disk).
    Appends,
    /// Every lease renewal: `store.lease_lost` (another driver took the run over).
    Renewals,
}

/// A MemoryStore with a fault: it dies at one write (from then on every call hangs, as the
/// process that made it is gone), or it refuses one kind of call. It counts writes and
/// remembers the leases it granted.
struct FaultyStore {
    inner: Arc<MemoryStore>,
    crash: Option<Crash>,
    refuse: Option<Refuse>,
    writes: AtomicUsize,
    dead: AtomicBool,
    crashed: Notify,
    leases: Mutex<Vec<Lease>>,
}

impl FaultyStore {
    fn new(inner: Arc<MemoryStore>, crash: Option<Crash>) -> Self {
        FaultyStore {
            inner,
            crash,
            refuse: None,
            writes: AtomicUsize::new(0),
            dead: AtomicBool::new(false),
            crashed: Notify::new(),
            leases: Mutex::new(Vec::new()),
        }
    }

    fn refusing(inner: MemoryStore, refuse: Refuse) -> Self {
        FaultyStore {
            refuse: Some(refuse),
            ..FaultyStore::new(Arc::new(inner), None)
        }
    }

    async fn hang_if_dead(&self) {
        if self.dead.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
    }

    /// Counts one write; at the crash point the store dies (after `write`, when so set).
    async fn write<T>(
        &self,
        write: impl std::future::Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        self.hang_if_dead().await;
        let n = self.writes.fetch_add(1, Ordering::SeqCst);
        match self.crash {
            Some(c) if c.at == n => {
                if c.after_write {
                    let _ = write.await;
                }
                self.dead.store(true, Ordering::SeqCst);
                self.crashed.notify_one();
                std::future::pending().await
            }
            _ => write.await,
        }
    }
}

#[async_trait]
impl RunStore for FaultyStore {
    async fn create_run(&self, run: RunStarted) -> Result<(), StoreError> {
        self.hang_if_dead().await;
        self.inner.create_run(run).await
    }
    async fn append_batch(
        &self,
        execution_id: &str,
        records: Vec<JournalRecord>,
    ) -> Result<Range<u64>, StoreError> {
        if let Some(Refuse::Appends) = self.refuse {
            return Err(StoreError::new(ErrorCode::StoreUnavailable, "disk full"));
        }
        self.write(self.inner.append_batch(execution_id, records))
            .await
    }
    async fn append_driven(
        &self,
        lease: &Lease,
        records: Vec<JournalRecord>,
    ) -> Result<Range<u64>, StoreError> {
        if let Some(Refuse::Appends) = self.refuse {
            return Err(StoreError::new(ErrorCode::StoreUnavailable, "disk full"));
        }
        self.write(self.inner.append_driven(lease, records)).await
    }
    async fn record_driven_events(
        &self,
        lease: &Lease,
        events: Vec<Event>,
    ) -> Result<(), StoreError> {
        self.write(self.inner.record_driven_events(lease, events))
            .await
    }
    async fn load(&self, execution_id: &str) -> Result<RunJournal, StoreError> {
        self.hang_if_dead().await;
        self.inner.load(execution_id).await
    }
    async fn list(&self, filter: RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        self.hang_if_dead().await;
        self.inner.list(filter).await
    }
    async fn record_events(
        &self,
        execution_id: &str,
        events: Vec<Event>,
    ) -> Result<(), StoreError> {
        self.write(self.inner.record_events(execution_id, events))
            .await
    }
    async fn events(
        &self,
        execution_id: &str,
        after_seq: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        self.hang_if_dead().await;
        self.inner.events(execution_id, after_seq, limit).await
    }
    async fn lease(&self, execution_id: &str) -> Result<Option<Lease>, StoreError> {
        self.hang_if_dead().await;
        self.inner.lease(execution_id).await
    }
    async fn acquire(&self, execution_id: &str, owner: &str) -> Result<Lease, StoreError> {
        self.hang_if_dead().await;
        let lease = self.inner.acquire(execution_id, owner).await?;
        self.leases.lock().unwrap().push(lease.clone());
        Ok(lease)
    }
    async fn renew(&self, lease: &Lease) -> Result<Lease, StoreError> {
        if let Some(Refuse::Renewals) = self.refuse {
            return Err(StoreError::new(ErrorCode::StoreLeaseLost, "taken over")
                .with_detail("executionId", lease.execution_id.as_str()));
        }
        self.hang_if_dead().await;
        self.inner.renew(lease).await
    }
    async fn release(&self, lease: Lease) -> Result<(), StoreError> {
        self.hang_if_dead().await;
        self.inner.release(lease).await
    }
}

#[tokio::test(start_paused = true)]
async fn a_run_with_a_store_journals_each_fact_in_order() {
    let store = Arc::new(MemoryStore::new());
    let rec = Recorder::default();
    let client = Arc::new(client());
    let mut opts = options(store.clone());
    opts.on_event = Some(rec.callback());
    let r = go_with(workflow(), &host(), &client, opts).await;
    assert!(r.success, "{:?}", r.failure);

    let journal = store.load(EXEC).await.unwrap();
    let kinds = kinds(&journal);
    assert_eq!(kinds.first(), Some(&"runStarted"));
    assert_eq!(kinds.last(), Some(&"runFinished"));
    assert_eq!(journal.finished(), Some(&r));
    // Per logical remote task: the host's content, the write-ahead record, the remote id, the end.
    for local in ["exec:a:0", "exec:d:0"] {
        let at = |kind: &str| {
            journal
                .entries
                .iter()
                .position(|e| e.record.kind() == kind && mentions(&e.record, local))
                .unwrap_or_else(|| panic!("no {kind} for {local}: {kinds:?}"))
        };
        assert!(at("callbackAnswered") < at("taskIntent"));
        assert!(at("taskIntent") < at("remoteTaskKnown"));
        assert!(at("remoteTaskKnown") < at("taskFinished"));
    }
    let count = |kind: &str| kinds.iter().filter(|k| **k == kind).count();
    assert_eq!(count("stepFinished"), 4);
    assert_eq!(count("taskFinished"), 5);
    // on_task ×4, on_self_task, on_route (one conditional edge), on_negotiation.
    assert_eq!(count("callbackAnswered"), 7);
    // The negotiation reply is journaled before it is sent, like the first message.
    assert_eq!(count("taskIntent"), 5);
    // Every event the host saw is kept, in order.
    let stored = store.events(EXEC, None, usize::MAX).await.unwrap();
    assert_eq!(stored, rec.events());
}

/// True when `record` is about the logical task `local`.
/// The journal's step and run ends name the task results its `taskFinished` records hold
/// (written once per task, not three times); read back, they are the full results.
#[tokio::test(start_paused = true)]
async fn the_step_and_run_ends_name_the_journaled_task_results() {
    let store = Arc::new(MemoryStore::new());
    let r = run_with(store.clone(), &host(), &Arc::new(client())).await;
    assert!(r.success, "{:?}", r.failure);
    let written = store.records_as_written(EXEC).unwrap();
    let written_kinds: Vec<_> = written.iter().map(JournalRecord::kind).collect();
    assert_eq!(written_kinds.last(), Some(&"runEnded"));
    assert!(
        !written_kinds.contains(&"stepFinished"),
        "{written_kinds:?}"
    );
    let mut slots = Vec::new();
    for record in &written {
        match record {
            JournalRecord::StepEnded { result } => slots.extend(&result.task_results),
            JournalRecord::RunEnded { result } => {
                slots.extend(result.steps.iter().flat_map(|s| &s.task_results));
            }
            _ => {}
        }
    }
    // Four steps of five tasks, each step's results named once by its step and once by the run.
    assert_eq!(slots.len(), 10);
    for slot in slots {
        assert!(matches!(slot, TaskSlot::Journaled(_)), "{slot:?}");
    }
    let journal = store.load(EXEC).await.unwrap();
    assert_eq!(journal.finished(), Some(&r));
    let steps: Vec<_> = journal
        .entries
        .iter()
        .filter_map(|e| match &e.record {
            JournalRecord::StepFinished { result } => Some(result.clone()),
            _ => None,
        })
        .collect();
    let mut in_result = r.steps.clone();
    let mut journaled = steps.clone();
    in_result.sort_by(|a, b| a.step_name.cmp(&b.step_name));
    journaled.sort_by(|a, b| a.step_name.cmp(&b.step_name));
    assert_eq!(journaled, in_result);
}

/// A journal written before `stepEnded` existed (full `stepFinished` records) resumes: the
/// steps it holds finished are not run again, and the run ends with the uninterrupted result.
#[tokio::test(start_paused = true)]
async fn a_journal_of_the_old_shape_resumes_without_running_its_finished_steps_again() {
    let agents = Arc::new(client());
    let full = Arc::new(MemoryStore::new());
    let baseline = run_with(full.clone(), &host(), &agents).await;
    assert!(baseline.success, "{:?}", baseline.failure);
    // Read back, the journal has the old shape; keep it up to its first step's end, as a host
    // of the previous version killed there would have left it.
    let old: Vec<JournalRecord> = full
        .load(EXEC)
        .await
        .unwrap()
        .entries
        .into_iter()
        .map(|e| e.record)
        .collect();
    let cut = old
        .iter()
        .position(|r| matches!(r, JournalRecord::StepFinished { .. }))
        .unwrap();
    let JournalRecord::RunStarted(started) = &old[0] else {
        panic!("no runStarted first: {:?}", old[0]);
    };
    let store = Arc::new(MemoryStore::new());
    store.create_run(started.clone()).await.unwrap();
    store
        .append_batch(EXEC, old[1..=cut].to_vec())
        .await
        .unwrap();
    let JournalRecord::StepFinished { result: first } = &old[cut] else {
        unreachable!()
    };
    let sends: Vec<usize> = first
        .task_results
        .iter()
        .map(|t| agents.business_sends(&t.task_id))
        .collect();

    let h = host();
    let r = resume(
        EXEC,
        store.clone(),
        h.clone(),
        agents.clone(),
        RunOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(r, baseline);
    for (t, before) in first.task_results.iter().zip(sends) {
        assert_eq!(
            agents.business_sends(&t.task_id),
            before,
            "{} sent again",
            t.task_id
        );
    }
    let written = store.records_as_written(EXEC).unwrap();
    assert!(matches!(written[cut], JournalRecord::StepFinished { .. }));
    assert!(matches!(
        written.last(),
        Some(JournalRecord::RunEnded { .. })
    ));
    assert_eq!(store.load(EXEC).await.unwrap().finished(), Some(&r));
}

fn mentions(record: &JournalRecord, local: &str) -> bool {
    match record {
        JournalRecord::CallbackAnswered(CallbackAnswered::OnTask { key, .. }) => {
            key.local_task_id == local
        }
        JournalRecord::TaskIntent(i) => i.local_task_id == local,
        JournalRecord::RemoteTaskKnown { local_task_id, .. }
        | JournalRecord::TaskFinished { local_task_id, .. } => local_task_id == local,
        _ => false,
    }
}

/// A client that checks, at the moment it would send, that the store already holds the
/// message's write-ahead record.
struct WriteAheadProbe {
    store: Arc<MemoryStore>,
    checked: AtomicUsize,
}

#[async_trait]
impl RemoteClient for WriteAheadProbe {
    async fn dispatch(&self, request: DispatchRequest<'_>) -> Result<TaskOutcome, TaskFailure> {
        let message_id = format!("{}-m", request.local_task_id);
        let intent = SendIntent {
            context_id: "ctx",
            message_id: &message_id,
            remote_task_id: None,
            content: &request.content,
        };
        request
            .journal
            .before_send(intent)
            .await
            .map_err(TaskFailure::new)?;
        // The "send": the record must be in the store by now.
        let journal = self.store.load(request.execution_id).await.unwrap();
        let journaled = journal.entries.iter().any(|e| {
            matches!(&e.record, JournalRecord::TaskIntent(TaskIntent { message_id: m, .. }) if *m == message_id)
        });
        assert!(journaled, "sent before its TaskIntent was journaled");
        self.checked.fetch_add(1, Ordering::SeqCst);
        Ok(TaskOutcome::default())
    }
}

#[tokio::test]
async fn the_write_ahead_record_is_in_the_store_before_the_send() {
    let store = Arc::new(MemoryStore::new());
    let probe = Arc::new(WriteAheadProbe {
        store: store.clone(),
        checked: AtomicUsize::new(0),
    });
    let w = wf(vec![step("a", &["x", "y"], &["b"]), step("b", &["z"], &[])]);
    let r = a2aflow_kernel::run(
        w,
        RunInput::default(),
        host(),
        probe.clone(),
        options(store.clone()),
    )
    .await;
    assert!(r.success, "{:?}", r.failure);
    assert_eq!(probe.checked.load(Ordering::SeqCst), 3);
}

#[tokio::test(start_paused = true)]
async fn resuming_a_finished_run_returns_its_result_and_does_nothing() {
    let store = Arc::new(MemoryStore::new());
    let first = run_with(store.clone(), &host(), &Arc::new(client())).await;
    let before = store.load(EXEC).await.unwrap();
    let (host2, client2) = (host(), Arc::new(client()));
    let again = resume_with_defaults(store.clone(), host2.clone(), client2.clone())
        .await
        .unwrap();
    assert_eq!(again, first);
    assert!(host2.task_calls().is_empty() && host2.route_calls().is_empty());
    assert_eq!(client2.total_dispatches() + client2.reattached(), 0);
    assert_eq!(store.load(EXEC).await.unwrap(), before);
}

#[tokio::test]
async fn resume_of_an_unknown_run_is_store_unknown_execution() {
    let store = Arc::new(MemoryStore::new());
    let err = resume(
        "nope",
        store,
        host(),
        Arc::new(client()),
        RunOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(err.is(ErrorCode::StoreUnknownExecution), "{err:?}");
}

/// A journal that holds only its `RunStarted` (started `ago_ms` before now, with `timeout`).
async fn started_run(store: &MemoryStore, ago_ms: u64, timeout: Duration) -> RunStarted {
    let opts = RunOptions {
        timeout,
        ..Default::default()
    };
    let started = RunStarted::new(
        EXEC,
        &workflow(),
        None,
        &opts,
        wall_clock_ms().saturating_sub(ago_ms),
    )
    .unwrap();
    store.create_run(started.clone()).await.unwrap();
    started
}

#[tokio::test]
async fn a_second_driver_gets_store_locked_before_any_callback_or_send() {
    let store = Arc::new(MemoryStore::new());
    started_run(&store, 0, Duration::from_secs(60)).await;
    store.acquire(EXEC, "first driver").await.unwrap();
    let (host2, client2) = (host(), Arc::new(client()));
    let err = resume_with_defaults(store.clone(), host2.clone(), client2.clone())
        .await
        .unwrap_err();
    assert!(err.is(ErrorCode::StoreLocked), "{err:?}");
    assert!(host2.task_calls().is_empty());
    assert_eq!(client2.total_dispatches(), 0);
    // A fresh run under a taken execution id is refused before anything happens too.
    let r = run_with(store.clone(), &host2, &client2).await;
    assert_failed_with(&r, ErrorCode::StoreDuplicateExecution);
    assert!(host2.task_calls().is_empty());
}

#[tokio::test]
async fn a_resumed_run_keeps_its_absolute_deadline() {
    let store = Arc::new(MemoryStore::new());
    // Started 10 s ago with a 1 s budget: its deadline passed; a fresh 600 s budget must not
    // replace it.
    started_run(&store, 10_000, Duration::from_secs(1)).await;
    let h = host();
    let r = resume_with_defaults(store.clone(), h.clone(), Arc::new(client()))
        .await
        .unwrap();
    assert_failed_with(&r, ErrorCode::WorkflowTimeout);
    assert!(h.task_calls().is_empty());
}

#[tokio::test]
async fn a_changed_journaled_workflow_is_store_workflow_mismatch() {
    let store = Arc::new(MemoryStore::new());
    let mut started = RunStarted::new(EXEC, &workflow(), None, &RunOptions::default(), 1).unwrap();
    started.workflow["name"] = "edited".into();
    store.create_run(started).await.unwrap();
    let err = resume_with_defaults(store, host(), Arc::new(client()))
        .await
        .unwrap_err();
    assert!(err.is(ErrorCode::StoreWorkflowMismatch), "{err:?}");
}

#[tokio::test(start_paused = true)]
async fn a_run_cancelled_in_its_journal_cancels_its_remote_work_and_ends_cancelled() {
    let store = Arc::new(MemoryStore::new());
    started_run(&store, 0, Duration::from_secs(60)).await;
    let content = MessageContent::text("a task");
    let records = vec![
        JournalRecord::TaskIntent(TaskIntent {
            step: "a".into(),
            subtask_index: 0,
            local_task_id: "exec:a:0".into(),
            agent: "billing".into(),
            skill: "skill".into(),
            attempt: 1,
            message_id: "m".into(),
            context_id: "ctx-exec:a:0".into(),
            content,
        }),
        JournalRecord::RemoteTaskKnown {
            local_task_id: "exec:a:0".into(),
            remote_task_id: "task-exec:a:0".into(),
        },
        JournalRecord::CancelRequested {
            local_task_id: None,
            remote_task_id: None,
        },
    ];
    store.append_batch(EXEC, records).await.unwrap();
    let (h, c) = (host(), Arc::new(client()));
    let r = resume_with_defaults(store.clone(), h.clone(), c.clone())
        .await
        .unwrap();
    assert_failed_with(&r, ErrorCode::WorkflowCancelled);
    assert_eq!(
        c.remote_cancels(),
        [("billing".to_owned(), "task-exec:a:0".to_owned())]
    );
    assert_eq!(c.total_dispatches(), 0);
    let kinds = kinds(&store.load(EXEC).await.unwrap());
    assert!(kinds.contains(&"cancelSent"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"runFinished"));
}

#[tokio::test(start_paused = true)]
async fn a_store_failure_ends_the_run_with_it_and_nothing_is_sent_unjournaled() {
    // The store refuses every append once the run started: the first one is the first send's
    // write-ahead record (with the host answer it carries), so nothing may be sent.
    let c = Arc::new(client());
    let store = FaultyStore::refusing(MemoryStore::new(), Refuse::Appends);
    let r = run_with(Arc::new(store), &host(), &c).await;
    assert!(!r.success);
    assert_failed_with(&r, ErrorCode::StoreUnavailable);
    assert!(c.sent().is_empty(), "{:?}", c.sent());
}

/// The host answers a journal held when it was interrupted: no resumed driver may ask them.
fn answered(journal: &RunJournal) -> HashSet<String> {
    let mut keys = HashSet::new();
    for e in &journal.entries {
        if let JournalRecord::CallbackAnswered(a) = &e.record {
            keys.insert(match a {
                CallbackAnswered::OnTask { key, .. } => format!("task {}", key.local_task_id),
                CallbackAnswered::OnSelfTask { key, .. } => format!("self {}", key.local_task_id),
                CallbackAnswered::OnRoute { key, .. } => {
                    format!("route {} {}", key.source_step, key.target_step)
                }
                CallbackAnswered::OnNegotiation { key, .. } => {
                    format!("negotiation {}", key.local_task_id)
                }
                _ => continue,
            });
        }
    }
    keys
}

/// What the host was asked.
fn asked(h: &Host) -> Vec<String> {
    let mut keys: Vec<String> = h
        .task_calls()
        .iter()
        .map(|t| format!("task {}", t.local_task_id))
        .collect();
    keys.extend(
        h.self_calls()
            .iter()
            .map(|t| format!("self {}", t.local_task_id)),
    );
    keys.extend(
        h.route_calls()
            .iter()
            .map(|r| format!("route {} {}", r.source_step, r.target_step)),
    );
    keys.extend(
        h.negotiation_calls
            .lock()
            .unwrap()
            .iter()
            .map(|n| format!("negotiation {}", n.task.local_task_id)),
    );
    keys
}

/// Tallies of the interruption loop.
#[derive(Debug, Default)]
struct Tally {
    interruptions: usize,
    resumes: usize,
    duplicates: usize,
    lost: usize,
    outcome_unknown: usize,
}

/// The logical remote tasks of a result (SELF_LOOP subtasks send nothing).
fn remote_tasks(r: &ExecutionResult) -> Vec<String> {
    r.steps
        .iter()
        .filter(|s| s.step_type != StepType::SelfLoop)
        .flat_map(|s| s.task_results.iter().map(|t| t.task_id.to_string()))
        .collect()
}

/// Runs the workflow on `dying` until it dies, then drops the run as a killed host would leave
/// it: its tasks go away and its lease lapses (a killed driver stops renewing). `Some` with the
/// result when the run finished without a crash.
async fn run_until_the_crash(
    dying: &Arc<FaultyStore>,
    agents: &Arc<InMemoryClient>,
) -> Option<ExecutionResult> {
    let first_host = host();
    let first = run_with(dying.clone(), &first_host, agents);
    let finished = tokio::select! {
        r = first => Some(r),
        _ = dying.crashed.notified() => None,
    };
    if finished.is_some() {
        return finished;
    }
    for _ in 0..16 {
        tokio::task::yield_now().await;
    }
    let leases: Vec<Lease> = dying.leases.lock().unwrap().drain(..).collect();
    for lease in leases {
        dying.inner.release(lease).await.unwrap();
    }
    None
}

/// Runs the workflow until the store dies at `crash`, then resumes it in a "new process" (a
/// fresh host, the same agents) and checks what the resumed run did.
async fn interrupted_and_resumed(
    crash: Crash,
    policy: &ResumePolicy,
    baseline: &ExecutionResult,
    tally: &mut Tally,
) {
    let inner = Arc::new(MemoryStore::new());
    let agents = Arc::new(client());
    let dying = Arc::new(FaultyStore::new(inner.clone(), Some(crash)));
    let finished = run_until_the_crash(&dying, &agents).await;
    assert!(finished.is_none(), "no crash at {crash:?}");
    tally.interruptions += 1;
    let held = answered(&inner.load(EXEC).await.unwrap());

    let h = host();
    let opts = RunOptions {
        resume_policy: policy.clone(),
        ..Default::default()
    };
    let r = resume(EXEC, inner.clone(), h.clone(), agents.clone(), opts)
        .await
        .unwrap_or_else(|f| panic!("resume after {crash:?} failed: {f:?}"));
    tally.resumes += 1;
    for key in asked(&h) {
        assert!(
            !held.contains(&key),
            "{crash:?}: the host was asked {key} again"
        );
    }
    for task in remote_tasks(baseline) {
        match agents.business_sends(&task) {
            0 => {
                let unknown = r.steps.iter().flat_map(|s| &s.task_results).any(|t| {
                    t.task_id == task
                        && t.error_code.as_deref()
                            == Some(ErrorCode::WorkflowOutcomeUnknown.as_str())
                });
                let stopped = !r
                    .steps
                    .iter()
                    .any(|s| s.task_results.iter().any(|t| t.task_id == task));
                if !(unknown || stopped) {
                    tally.lost += 1;
                }
            }
            1 => {}
            _ => tally.duplicates += 1,
        }
    }
    let unknown = r
        .steps
        .iter()
        .flat_map(|s| &s.task_results)
        .filter(|t| t.error_code.as_deref() == Some(ErrorCode::WorkflowOutcomeUnknown.as_str()))
        .count();
    tally.outcome_unknown += unknown;
    if policy.resend || unknown == 0 {
        assert_eq!(&r, baseline, "{crash:?}: the resumed result differs");
    }
    assert_eq!(
        inner.load(EXEC).await.unwrap().finished(),
        Some(&r),
        "{crash:?}: the resumed result is journaled"
    );
}

async fn interruption_loop(policy: ResumePolicy) -> Tally {
    let counting = Arc::new(FaultyStore::new(Arc::new(MemoryStore::new()), None));
    let baseline = run_with(counting.clone(), &host(), &Arc::new(client())).await;
    assert!(baseline.success, "{:?}", baseline.failure);
    let writes = counting.writes.load(Ordering::SeqCst);
    assert!(writes > 20, "only {writes} journal writes");
    let mut tally = Tally::default();
    for at in 0..writes {
        for after_write in [false, true] {
            let crash = Crash { at, after_write };
            interrupted_and_resumed(crash, &policy, &baseline, &mut tally).await;
        }
    }
    tally
}

#[tokio::test(start_paused = true)]
async fn a_run_interrupted_at_any_journal_write_resumes_to_the_same_result_sending_once() {
    let tally = interruption_loop(ResumePolicy::resend_all()).await;
    println!(
        "durable (resend on): interruptions {} resumes {} duplicates {} lost {} outcome_unknown {}",
        tally.interruptions, tally.resumes, tally.duplicates, tally.lost, tally.outcome_unknown
    );
    assert_eq!(
        (tally.duplicates, tally.lost, tally.outcome_unknown),
        (0, 0, 0)
    );
    assert_eq!(tally.resumes, tally.interruptions);
}

#[tokio::test(start_paused = true)]
async fn by_default_a_lost_send_ends_outcome_unknown_and_nothing_is_resent() {
    let tally = interruption_loop(ResumePolicy::default()).await;
    println!(
        "durable (default): interruptions {} resumes {} duplicates {} lost {} outcome_unknown {}",
        tally.interruptions, tally.resumes, tally.duplicates, tally.lost, tally.outcome_unknown
    );
    assert_eq!((tally.duplicates, tally.lost), (0, 0));
    // A crash between a write-ahead record and its send leaves a task nobody can find.
    assert!(tally.outcome_unknown > 0);
}

#[test]
fn a_resume_policy_answers_per_agent() {
    let mut p = ResumePolicy::default();
    assert!(!p.resend_for("a"));
    p.per_agent.insert("a".into(), true);
    assert!(p.resend_for("a") && !p.resend_for("b"));
    let mut all = ResumePolicy::resend_all();
    all.per_agent.insert("b".into(), false);
    assert!(all.resend_for("a") && !all.resend_for("b"));
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_loser_with_a_known_remote_task_journals_its_cancel() {
    let store = Arc::new(MemoryStore::new());
    let slow = ScriptedReply::Succeed(vec![Output::text("late")]);
    let c = Arc::new(InMemoryClient::new().agent(
        "slow",
        AgentScript::reply(slow).after(Duration::from_secs(5)),
    ));
    let w = wf(vec![typed(
        step("a", &["fast", "slow"], &[]),
        StepType::AnySuccess,
    )]);
    let r = a2aflow_kernel::run(w, RunInput::default(), host(), c, options(store.clone())).await;
    assert!(r.success, "{:?}", r.failure);
    let journal = store.load(EXEC).await.unwrap();
    let cancels: Vec<_> = journal
        .entries
        .iter()
        .filter_map(|e| match &e.record {
            JournalRecord::CancelRequested {
                local_task_id,
                remote_task_id,
            } => Some((local_task_id.clone(), remote_task_id.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        cancels,
        [(
            Some("exec:a:1".to_owned()),
            Some("task-exec:a:1".to_owned())
        )]
    );
}

#[tokio::test(start_paused = true)]
async fn a_pending_task_cancel_is_sent_on_resume_once() {
    let store = Arc::new(MemoryStore::new());
    started_run(&store, 0, Duration::from_secs(60)).await;
    let cancel = |local: &str, remote: &str| JournalRecord::CancelRequested {
        local_task_id: Some(local.into()),
        remote_task_id: Some(remote.into()),
    };
    let sent = JournalRecord::CancelSent {
        local_task_id: "exec:x:0".into(),
        remote_task_id: "r-x".into(),
    };
    let records = vec![cancel("exec:x:0", "r-x"), sent, cancel("exec:y:0", "r-y")];
    store.append_batch(EXEC, records).await.unwrap();
    let c = Arc::new(client());
    let r = resume_with_defaults(store.clone(), host(), c.clone())
        .await
        .unwrap();
    assert!(r.success, "{:?}", r.failure);
    assert_eq!(
        c.remote_cancels()
            .iter()
            .map(|(_, r)| r.as_str())
            .collect::<Vec<_>>(),
        ["r-y"]
    );
    let journal = store.load(EXEC).await.unwrap();
    let sent_y = journal.entries.iter().any(|e| {
        matches!(&e.record, JournalRecord::CancelSent { remote_task_id, .. } if remote_task_id == "r-y")
    });
    assert!(sent_y);
}

#[tokio::test(start_paused = true)]
async fn a_lost_lease_stops_the_run_with_the_store_failure() {
    // Leases of 30 ms that can never be renewed: the driver must stop driving.
    let store = Arc::new(FaultyStore::refusing(
        MemoryStore::with_lease_ttl(Duration::from_millis(30)),
        Refuse::Renewals,
    ));
    let c = Arc::new(InMemoryClient::new().agent(
        "slow",
        AgentScript::reply(ScriptedReply::Echo).after(Duration::from_secs(60)),
    ));
    let w = wf(vec![step("a", &["slow"], &["b"]), step("b", &["x"], &[])]);
    let r = a2aflow_kernel::run(w, RunInput::default(), host(), c.clone(), options(store)).await;
    assert_failed_with(&r, ErrorCode::StoreLeaseLost);
    assert_eq!(c.cancellations("slow"), 1);
    assert_eq!(c.dispatches("x"), 0);
}

#[tokio::test(start_paused = true)]
async fn a_resumed_stream_continues_the_stored_event_sequence() {
    let inner = Arc::new(MemoryStore::new());
    let agents = Arc::new(client());
    // Die after the second step's journal writes began (events of step `a` are stored).
    let dying = Arc::new(FaultyStore::new(
        inner.clone(),
        Some(Crash {
            at: 12,
            after_write: true,
        }),
    ));
    if run_until_the_crash(&dying, &agents).await.is_some() {
        panic!("the run did not crash");
    }
    let stored_before = inner.events(EXEC, None, usize::MAX).await.unwrap();
    assert!(
        !stored_before.is_empty(),
        "no events were stored before the crash"
    );
    let mut stream = a2aflow_kernel::resume_stream(
        EXEC,
        inner.clone(),
        host(),
        agents.clone(),
        RunOptions::default(),
    )
    .await
    .unwrap();
    let mut seen = Vec::new();
    while let Some(e) = stream.next().await {
        seen.push(e);
    }
    let r = stream.result().await;
    assert!(r.success, "{:?}", r.failure);
    let next = stored_before.last().unwrap().seq + 1;
    assert_eq!(seen.first().map(|e| e.seq), Some(next));
    let all = inner.events(EXEC, None, usize::MAX).await.unwrap();
    assert_eq!(all.len(), stored_before.len() + seen.len());
    assert_eq!(all[stored_before.len()..], seen[..]);
}

#[tokio::test(start_paused = true)]
async fn a_run_the_host_cancels_journals_the_cancel_before_it_finishes() {
    let store = Arc::new(MemoryStore::new());
    let c = Arc::new(
        InMemoryClient::new().agent(
            "slow",
            AgentScript::reply(ScriptedReply::Succeed(vec![Output::text("x")]))
                .after(Duration::from_secs(60)),
        ),
    );
    let w = wf(vec![step("a", &["slow"], &[])]);
    let opts = options(store.clone());
    let cancel = opts.cancel.clone();
    let run = a2aflow_kernel::run(w, RunInput::default(), host(), c.clone(), opts);
    let canceller = async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        cancel.cancel();
    };
    let (r, ()) = tokio::join!(run, canceller);
    assert_failed_with(&r, ErrorCode::WorkflowCancelled);
    let kinds = kinds(&store.load(EXEC).await.unwrap());
    let at = |k: &str| kinds.iter().position(|x| *x == k);
    assert!(
        at("cancelRequested").is_some() && at("cancelRequested") < at("runFinished"),
        "{kinds:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_driver_whose_run_was_taken_over_writes_nothing_more_and_stops() {
    let store = Arc::new(MemoryStore::new());
    let c = Arc::new(InMemoryClient::new().agent(
        "slow",
        AgentScript::reply(ScriptedReply::Echo).after(Duration::from_secs(5)),
    ));
    let w = wf(vec![step("a", &["slow"], &["b"]), step("b", &["x"], &[])]);
    let mut opts = options(store.clone());
    opts.lease_owner = Some("host-a".into());
    let driving = tokio::spawn(a2aflow_kernel::run(
        w,
        RunInput::default(),
        host(),
        c.clone(),
        opts,
    ));
    tokio::time::sleep(Duration::from_secs(1)).await;
    // Another host takes the run over while this driver waits (as after a long pause: its
    // lease lapsed): release the lease under the driver, then acquire it as host-b.
    let held = store.acquire(EXEC, "host-a").await.unwrap();
    store.release(held).await.unwrap();
    let taken = store.acquire(EXEC, "host-b").await.unwrap();
    let before = store.load(EXEC).await.unwrap().entries.len();
    let r = driving.await.unwrap();
    assert_failed_with(&r, ErrorCode::StoreLeaseLost);
    assert_eq!(c.dispatches("x"), 0, "the old driver went on driving");
    assert_eq!(
        store.load(EXEC).await.unwrap().entries.len(),
        before,
        "the old driver wrote after the takeover"
    );
    assert!(store.append_driven(&taken, Vec::new()).await.is_ok());
}
