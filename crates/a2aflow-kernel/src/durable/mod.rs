//! Durable runs, the kernel side: a run given a [`RunStore`] journals what it does
//! ([`Durable`]: the lease, the host's answers, each send before it goes, each task's and step's
//! end, the events, the result), and [`crate::resume`] continues a journaled run in a new process from
//! what the journal holds ([`Replay`]).
//!
//! Without a store none of this exists: the run carries `None` and nothing here is reached.

mod replay;
mod task_journal;

pub(crate) use replay::{GateState, Replay};
pub(crate) use task_journal::TaskJournal;

use crate::events::EventLog;
use crate::journal::{
    Answer, CallbackAnswered, JournalRecord, Lease, NamedExecutionResult, NamedStepResult,
    RunStarted, RunStore, StoreError, TaskKey, wall_clock_ms,
};
use a2aflow_model::{
    ErrorCode, ExecutionResult, Failure, SharedStr, StepStatus, StepType, TaskRequest,
    TaskResultView,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Whether a resumed run may resend a journaled message whose task cannot be found again
/// (the agent answered with a bare message, or the crash came between the write-ahead record
/// and the send). The default never resends: such a task ends `workflow.outcome_unknown`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResumePolicy {
    /// The answer for agents without their own entry.
    pub resend: bool,
    /// Per agent name: overrides `resend`.
    pub per_agent: HashMap<String, bool>,
}

impl ResumePolicy {
    /// A policy that resends for every agent.
    pub fn resend_all() -> Self {
        ResumePolicy {
            resend: true,
            per_agent: HashMap::new(),
        }
    }

    /// Whether a lost message to `agent` is resent.
    pub fn resend_for(&self, agent: &str) -> bool {
        self.per_agent.get(agent).copied().unwrap_or(self.resend)
    }
}

/// The journal of one running root run: its store, its lease and what it replays.
pub(crate) struct Durable {
    /// This journal itself, for the send checks that outlive a borrow of it.
    me: Weak<Durable>,
    store: Arc<dyn RunStore>,
    execution_id: String,
    /// Shared, so that each append takes a reference count, not a copy of its two strings.
    lease: Mutex<Option<Arc<Lease>>>,
    events: Arc<EventLog>,
    /// The first store failure: the run ends with it.
    failure: Mutex<Option<Failure>>,
    /// Cancelled when a store failure stops the run (the run's token is a child of it).
    pub(crate) stop: CancellationToken,
    /// Remote task ids reported during this run, by local task id.
    /// Per local task, the remote task of its current attempt: `None` once a new attempt began
    /// and before the agent named its task.
    remote_ids: Mutex<HashMap<String, Option<String>>>,
    replay: Replay,
    policy: ResumePolicy,
    /// The `seq` the run's next event gets (after the events a resumed run stored before).
    next_event_seq: u64,
    /// How many journal records this driver knows of (read on resume or written since): what
    /// a suspended run's release tells the store it saw.
    journal_seen: AtomicU64,
    renewal: Mutex<Option<JoinHandle<()>>>,
    /// Hands the buffered events to the store whenever the buffer reaches its bound.
    flusher: Mutex<Option<JoinHandle<()>>>,
    /// Held while events are taken from the buffer and written: one flush at a time keeps
    /// them in `seq` order in the store.
    flushing: tokio::sync::Mutex<()>,
    /// Records nothing waits for (the last remote state a client reported, per local task):
    /// they ride with the driver's next write instead of costing one of their own.
    riders: Mutex<Riders>,
    /// Records of one logical task that are journaled with that task's own next write (its
    /// send's `taskIntent`, or its end), by local task id: see [`Durable::hold_for`].
    held: Mutex<HashMap<String, Vec<JournalRecord>>>,
    /// The result of each task whose `taskFinished` this driver journaled, by local task id:
    /// the step's and the run's end name the results equal to these instead of repeating them.
    journaled: Mutex<HashMap<SharedStr, TaskResultView>>,
    /// Host answers waiting for their append (see [`Durable::answered`]).
    answers: Mutex<AnswerQueue>,
    /// Held by the one caller appending host answers (fair: callers take it in turn).
    answer_writer: tokio::sync::Mutex<()>,
}

/// What an append of host answers came to: `None` until it is known.
type AnswersWritten = Option<Result<(), Failure>>;

/// A step's end as [`Durable::step_finished`] journals it, lent: the step's views stay the
/// executor's (a copy of each would be made only to be named).
pub(crate) struct StepEnd<'a> {
    pub(crate) name: &'a str,
    pub(crate) step_type: StepType,
    pub(crate) status: StepStatus,
    pub(crate) views: &'a [TaskResultView],
    pub(crate) failure: Option<&'a Failure>,
}

/// The lease a driver gave up, for the store to release: the driver's own when no append holds
/// it any more, else a copy.
fn unshared(lease: Arc<Lease>) -> Lease {
    Arc::try_unwrap(lease).unwrap_or_else(|shared| Lease::clone(&shared))
}

/// The host answers of a run waiting to be journaled: the answers given while an append of
/// answers is under way wait together for the next one (group commit at the journal's door:
/// a wide step's answers cost a few appends, not one each).
struct AnswerQueue {
    /// The answers not yet taken by an append, in the order they were given.
    records: Vec<JournalRecord>,
    /// The result of the append that will take `records`, for their callers to read.
    batch: tokio::sync::watch::Sender<AnswersWritten>,
}

impl Default for AnswerQueue {
    fn default() -> Self {
        AnswerQueue {
            records: Vec::new(),
            batch: tokio::sync::watch::Sender::new(None),
        }
    }
}

/// The result of a batch of answers being appended: when its writer is dropped before the
/// result is known (a job aborted at the run's backstop), its callers hear that it was
/// abandoned, never that it was written.
struct AnswerBatch<'a> {
    batch: Option<tokio::sync::watch::Sender<AnswersWritten>>,
    execution_id: &'a str,
}

impl AnswerBatch<'_> {
    fn written(mut self, result: &Result<(), Failure>) {
        if let Some(b) = self.batch.take() {
            b.send_replace(Some(result.clone()));
        }
    }
}

impl Drop for AnswerBatch<'_> {
    fn drop(&mut self) {
        if let Some(b) = self.batch.take() {
            b.send_replace(Some(Err(abandoned(self.execution_id))));
        }
    }
}

/// The riders in the order they came, at most one `RemoteState` per local task (a newer state
/// replaces the older one in place).
#[derive(Default)]
struct Riders {
    records: Vec<JournalRecord>,
    by_task: HashMap<String, usize>,
}

impl Riders {
    fn remote_state(&mut self, local_task_id: &str, state: a2aflow_model::a2a::TaskState) {
        let record = JournalRecord::RemoteState {
            local_task_id: local_task_id.to_owned(),
            state,
        };
        match self.by_task.get(local_task_id) {
            Some(&at) => self.records[at] = record,
            None => {
                self.by_task
                    .insert(local_task_id.to_owned(), self.records.len());
                self.records.push(record);
            }
        }
    }

    fn take(&mut self) -> Vec<JournalRecord> {
        self.by_task.clear();
        std::mem::take(&mut self.records)
    }
}

impl Drop for Durable {
    fn drop(&mut self) {
        for task in [&self.renewal, &self.flusher] {
            if let Some(h) = lock(task).take() {
                h.abort();
            }
        }
    }
}

/// What a driver of a run starts from.
pub(crate) struct Driving {
    pub(crate) store: Arc<dyn RunStore>,
    pub(crate) execution_id: String,
    pub(crate) lease: Lease,
    pub(crate) replay: Replay,
    pub(crate) policy: ResumePolicy,
    pub(crate) next_event_seq: u64,
    /// How many journal records the driver read (the last `seq` + 1).
    pub(crate) journal_seen: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every update below is one assignment: a poisoned value is still whole.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A unique lease owner for a driver that was given none.
pub(crate) fn default_owner() -> String {
    format!(
        "a2aflow-{}-{}",
        std::process::id(),
        crate::ids::fresh_execution_id()
    )
}

impl Durable {
    /// Starts a fresh run's journal: `RunStarted`, then the lease — before anything else.
    pub(crate) async fn begin(
        store: Arc<dyn RunStore>,
        started: RunStarted,
        owner: Option<String>,
        parent: &CancellationToken,
    ) -> Result<Arc<Self>, Failure> {
        let execution_id = started.execution_id.clone();
        // One step where the store allows: no worker claims the run before this driver holds it.
        let lease = store
            .create_run_leased(started, &owner.unwrap_or_else(default_owner))
            .await?;
        Ok(Durable::driving(
            Driving {
                store,
                execution_id,
                lease,
                replay: Replay::default(),
                policy: ResumePolicy::default(),
                next_event_seq: 0,
                journal_seen: 1,
            },
            parent,
        ))
    }

    /// The journal of a run this driver holds the lease of; renews the lease while it lives.
    pub(crate) fn driving(d: Driving, parent: &CancellationToken) -> Arc<Self> {
        let Driving {
            store,
            execution_id,
            lease,
            replay,
            policy,
            next_event_seq,
            journal_seen,
        } = d;
        let durable = Arc::new_cyclic(|me| Durable {
            me: me.clone(),
            store,
            execution_id,
            lease: Mutex::new(Some(Arc::new(lease))),
            events: Arc::new(EventLog::default()),
            failure: Mutex::new(None),
            stop: parent.child_token(),
            remote_ids: Mutex::new(HashMap::new()),
            replay,
            policy,
            next_event_seq,
            journal_seen: AtomicU64::new(journal_seen),
            renewal: Mutex::new(None),
            flusher: Mutex::new(None),
            flushing: tokio::sync::Mutex::new(()),
            riders: Mutex::new(Riders::default()),
            held: Mutex::new(HashMap::new()),
            journaled: Mutex::new(HashMap::new()),
            answers: Mutex::new(AnswerQueue::default()),
            answer_writer: tokio::sync::Mutex::new(()),
        });
        let handle = tokio::spawn(renew_lease(Arc::downgrade(&durable)));
        *lock(&durable.renewal) = Some(handle);
        let handle = tokio::spawn(flush_when_full(
            Arc::downgrade(&durable),
            durable.events.clone(),
        ));
        *lock(&durable.flusher) = Some(handle);
        durable
    }

    /// The token the run's own token derives from (cancelled by a store failure).
    pub(crate) fn stop_token(&self) -> CancellationToken {
        self.stop.clone()
    }

    /// The buffer the run's event hub copies every event into.
    pub(crate) fn event_log(&self) -> Arc<EventLog> {
        self.events.clone()
    }

    /// The `seq` of the run's first event in this process.
    pub(crate) fn next_event_seq(&self) -> u64 {
        self.next_event_seq
    }

    pub(crate) fn replay(&self) -> &Replay {
        &self.replay
    }

    pub(crate) fn resend_for(&self, agent: &str) -> bool {
        self.policy.resend_for(agent)
    }

    /// The store failure that stopped the run, if one did.
    pub(crate) fn failure(&self) -> Option<Failure> {
        lock(&self.failure).clone()
    }

    /// A store failure: the run stops and ends with it (the first one is kept).
    fn fail(&self, f: Failure) {
        tracing::error!(code = %f.code, error = %f.message, "the run store failed; the run stops");
        lock(&self.failure).get_or_insert(f);
        self.stop.cancel();
    }

    /// The lease this driver holds, as last renewed; `store.lease_lost` once it was given up.
    fn held_lease(&self) -> Result<Arc<Lease>, StoreError> {
        lock(&self.lease).clone().ok_or_else(|| {
            StoreError::new(
                ErrorCode::StoreLeaseLost,
                format!(
                    "the driver of run '{}' gave its lease up; it writes nothing more",
                    self.execution_id
                ),
            )
            .with_detail("executionId", self.execution_id.as_str())
        })
    }

    /// Whether a business command may go out now: the lease is still this driver's. A driver
    /// paused after its write-ahead record was acknowledged (a stopped process, a long stall)
    /// may wake after another driver took the run over and resent the command: when the lease
    /// lapsed by this host's clock, it is renewed first (a store round trip), which fails when
    /// another driver took it (`store.lease_lost`: nothing is sent, the run stops here) and
    /// keeps the run when nobody did. The window this leaves (a pause between this check and
    /// the write) is closed by the send's last check, [`Durable::send_check`]; what is left is
    /// any skew between this host's clock and the store's.
    pub(crate) async fn may_send(&self) -> Result<(), Failure> {
        let lease = self.held_lease().map_err(Failure::from)?;
        if wall_clock_ms() < lease.expires_at_ms {
            return Ok(());
        }
        match self.store.renew(&lease).await {
            Ok(renewed) => match self.renewed(renewed) {
                true => Ok(()),
                // Given up meanwhile: `held_lease` says so.
                false => self.held_lease().map(drop).map_err(Failure::from),
            },
            Err(e) => {
                let f = Failure::from(e);
                self.fail(f.clone());
                Err(f)
            }
        }
    }

    /// Keeps a renewed lease, unless the lease was given up while the renewal was under way
    /// (a send's last check found it lapsed): a lease given up never comes back, so nothing
    /// more is written under it.
    /// `false` when it was given up.
    fn renewed(&self, lease: Lease) -> bool {
        match lock(&self.lease).as_mut() {
            Some(held) => {
                *held = Arc::new(lease);
                true
            }
            None => false,
        }
    }

    /// The check a send makes at the last moment, on the connection's task (see
    /// [`DispatchJournal::send_check`](crate::DispatchJournal::send_check)): closed once the
    /// journal is gone or the lease lapsed by this host's clock. It cannot renew (that is a
    /// store round trip), so a lapsed lease is given up here and the run stops with
    /// `store.lease_lost`: whether or not another driver took the run over, this one sends and
    /// writes nothing more, and the run is resumed from its journal (by a worker once the lease
    /// is claimable), which finds the unsent message missing and sends it then.
    pub(crate) fn send_check(&self) -> crate::SendCheck {
        let me = self.me.clone();
        Arc::new(move || me.upgrade().is_some_and(|d| d.lease_current()))
    }

    /// Whether the lease is still this driver's by this host's clock; gives it up and stops the
    /// run when it lapsed.
    fn lease_current(&self) -> bool {
        let lapsed = {
            let mut held = lock(&self.lease);
            match held.as_ref() {
                Some(l) if wall_clock_ms() < l.expires_at_ms => return true,
                Some(_) => held.take(),
                None => None,
            }
        };
        if let Some(lease) = lapsed {
            self.fail(Failure::from(
                StoreError::new(
                    ErrorCode::StoreLeaseLost,
                    format!(
                        "the lease of run '{}' lapsed (by this host's clock) before a message \
                         could be written: another driver may have taken the run over, so this \
                         one sent nothing and stops; resume the run to go on",
                        self.execution_id
                    ),
                )
                .with_detail("executionId", self.execution_id.as_str())
                .with_detail("expiresAtMs", lease.expires_at_ms),
            ));
        }
        false
    }

    /// Appends `records` under this driver's lease (awaited: the kernel acts only after this
    /// returned `Ok`). A driver that lost its lease writes nothing and stops.
    pub(crate) async fn write(&self, records: Vec<JournalRecord>) -> Result<(), Failure> {
        let mut riders = lock(&self.riders).take();
        let records = if riders.is_empty() {
            records
        } else {
            riders.extend(records);
            riders
        };
        let written = match self.held_lease() {
            Ok(lease) => self.store.append_driven(&lease, records).await.map(|at| {
                self.journal_seen.fetch_max(at.end, Ordering::AcqRel);
            }),
            Err(e) => Err(e),
        };
        written.map_err(|e| {
            let f = Failure::from(e);
            self.fail(f.clone());
            f
        })
    }

    /// Journals one host answer: returns once the append that holds it was acknowledged (the
    /// kernel acts on the answer only then), or with the store failure that stopped the run.
    /// Answers given while another append of answers is under way share the next one: the
    /// callers take the writer's lock in turn, and each finds its answer appended by an
    /// earlier holder or appends every answer queued so far itself.
    pub(crate) async fn answered(&self, answer: CallbackAnswered) -> Result<(), Failure> {
        let written = {
            let mut q = lock(&self.answers);
            q.records.push(JournalRecord::CallbackAnswered(answer));
            q.batch.subscribe()
        };
        let _writer = self.answer_writer.lock().await;
        // Records leave the queue only under the writer's lock, which their writer holds until
        // their result is set: either this answer's batch was written, or it is still queued.
        if let Some(result) = written.borrow().as_ref() {
            return result.clone();
        }
        let (records, batch) = {
            let mut q = lock(&self.answers);
            let batch = std::mem::replace(&mut q.batch, tokio::sync::watch::Sender::new(None));
            (std::mem::take(&mut q.records), batch)
        };
        let batch = AnswerBatch {
            batch: Some(batch),
            execution_id: &self.execution_id,
        };
        let result = self.write(records).await;
        batch.written(&result);
        result
    }

    /// Keeps `record` for the next write of the logical task `local_task_id`
    /// ([`Durable::write_for`]: its send's `taskIntent` or its end), in the same append and
    /// before that write's own records. For facts that must be durable no later than what the
    /// task does next, not at once: the host's `on_task` answer is acted on only by the send
    /// (whose `taskIntent` then carries it, write-ahead as before) or by the task's failure.
    /// A task that ends without a write of its own leaves them to the run's close.
    pub(crate) fn hold_for(&self, local_task_id: &str, record: JournalRecord) {
        lock(&self.held)
            .entry(local_task_id.to_owned())
            .or_default()
            .push(record);
    }

    /// [`Durable::write`] for the logical task `local_task_id`: the records held for it
    /// ([`Durable::hold_for`]) go first, in the same append.
    pub(crate) async fn write_for(
        &self,
        local_task_id: &str,
        records: Vec<JournalRecord>,
    ) -> Result<(), Failure> {
        let held = lock(&self.held).remove(local_task_id);
        let records = match held {
            Some(mut held) => {
                held.extend(records);
                held
            }
            None => records,
        };
        self.write(records).await
    }

    /// The last remote state a client reported for a logical task: journaled with the
    /// driver's next write (a resume does not need it; `runs show` names it).
    pub(crate) fn remote_state(&self, local_task_id: &str, state: a2aflow_model::a2a::TaskState) {
        lock(&self.riders).remote_state(local_task_id, state);
    }

    /// Writes the riders and the held records no later write took (best effort: the run has
    /// ended).
    async fn write_riders(&self) {
        let mut riders: Vec<JournalRecord> =
            lock(&self.held).drain().flat_map(|(_, r)| r).collect();
        riders.extend(lock(&self.riders).take());
        if riders.is_empty() {
            return;
        }
        let written = match self.held_lease() {
            Ok(lease) => self.store.append_driven(&lease, riders).await,
            Err(e) => Err(e),
        };
        if let Err(e) = written {
            let (code, error) = (&e.code, &e.message);
            tracing::debug!(%code, %error, "the last remote states were not journaled");
        }
    }

    /// A remote task id reported during this run.
    pub(crate) fn note_remote_id(&self, local_task_id: &str, remote_task_id: &str) {
        lock(&self.remote_ids).insert(local_task_id.to_owned(), Some(remote_task_id.to_owned()));
    }

    /// A new attempt of a logical task begins: the previous attempt's remote task is no longer
    /// the task's (a cancel or a re-attachment must not reach it).
    pub(crate) fn new_attempt(&self, local_task_id: &str) {
        lock(&self.remote_ids).insert(local_task_id.to_owned(), None);
    }

    /// The remote task id of a logical task, reported now or journaled before.
    pub(crate) fn remote_id(&self, local_task_id: &str) -> Option<String> {
        match lock(&self.remote_ids).get(local_task_id) {
            Some(current) => current.clone(),
            None => self.replay.remote_id(local_task_id).map(str::to_owned),
        }
    }

    /// The run was stopped by its host (not by a store failure, not by a cancel this driver
    /// read from the journal): a run-level `CancelRequested`. Best effort: the run may have
    /// finished in the meantime, and then the store refuses the record.
    async fn journal_host_cancel(&self) {
        if self.failure().is_some() || self.replay.cancel_run() {
            return;
        }
        let record = JournalRecord::CancelRequested {
            local_task_id: None,
            remote_task_id: None,
        };
        let written = match self.held_lease() {
            Ok(lease) => self.store.append_driven(&lease, vec![record]).await,
            Err(e) => Err(e),
        };
        if let Err(e) = written {
            let (code, error) = (&e.code, &e.message);
            tracing::debug!(%code, %error, "the run's cancel was not journaled");
        }
    }

    /// A task ended without interruption: `TaskFinished` (with the records held for it), and,
    /// once the store acknowledged it, its result kept for [`Durable::is_journaled`].
    pub(crate) async fn task_finished(&self, view: &TaskResultView) {
        let record = JournalRecord::TaskFinished {
            local_task_id: view.task_id.to_string(),
            result: view.clone(),
        };
        // A failure stops the run (see `Durable::write`); the result is then not named.
        if Box::pin(self.write_for(&view.task_id, vec![record]))
            .await
            .is_ok()
        {
            lock(&self.journaled).insert(view.task_id.clone(), view.clone());
        }
    }

    /// Whether `view` is exactly the result the journal's last `taskFinished` of its task holds
    /// (written by this driver, or before it by the run's earlier drivers), so a later record
    /// may name it.
    fn is_journaled(
        journaled: &HashMap<SharedStr, TaskResultView>,
        replay: &Replay,
        view: &TaskResultView,
    ) -> bool {
        match journaled.get(&view.task_id) {
            Some(kept) => kept == view,
            None => replay.task(&view.task_id) == Some(view),
        }
    }

    /// A step ended: `StepEnded` (its journaled task results named, only the others copied),
    /// then the events buffered so far.
    pub(crate) async fn step_finished(&self, step: StepEnd<'_>) {
        if self.replay.step(step.name).is_some() {
            return;
        }
        let result = {
            let journaled = lock(&self.journaled);
            NamedStepResult::naming_views(
                step.name.to_owned(),
                step.step_type,
                step.status,
                step.views,
                step.failure.cloned(),
                |v| Durable::is_journaled(&journaled, &self.replay, v),
            )
        };
        if self
            .write(vec![JournalRecord::StepEnded { result }])
            .await
            .is_ok()
        {
            self.flush_events().await;
        }
    }

    /// Hands the buffered events to the store (after any flush under way: they stay in order).
    pub(crate) async fn flush_events(&self) {
        let _one_at_a_time = self.flushing.lock().await;
        let events = self.events.take();
        if events.is_empty() {
            return;
        }
        let kept = match self.held_lease() {
            Ok(lease) => {
                self.store
                    .record_driven_encoded_events(&lease, events)
                    .await
            }
            Err(e) => Err(e),
        };
        if let Err(e) = kept {
            self.fail(e.into());
        }
    }

    /// The run ended: its result is journaled (`RunEnded`, its journaled task results named)
    /// before the host sees it. A store failure during the run, or now, becomes the result's
    /// failure.
    pub(crate) async fn finish_run(&self, mut result: ExecutionResult) -> ExecutionResult {
        if let Some(f) = self.failure() {
            return failed(result, f);
        }
        let named = {
            let journaled = lock(&self.journaled);
            NamedExecutionResult::naming(&result, |v| {
                Durable::is_journaled(&journaled, &self.replay, v)
            })
        };
        let finished = JournalRecord::RunEnded { result: named };
        if let Err(f) = self.write(vec![finished]).await {
            result = failed(result, f);
        }
        result
    }

    /// After the run's last event: the events flushed, the lease given up (for a run that
    /// `suspended` at its gates, with the number of records it saw: a store that hands runs
    /// out leaves it until something is appended).
    pub(crate) async fn close(&self, suspended: bool) {
        {
            // Under the flush lock the flusher is not in the middle of a write (it waits for
            // the buffer or for this lock): stopping it loses nothing.
            let _no_flush_under_way = self.flushing.lock().await;
            if let Some(h) = lock(&self.flusher).take() {
                h.abort();
            }
        }
        self.flush_events().await;
        self.write_riders().await;
        if let Some(h) = lock(&self.renewal).take() {
            h.abort();
        }
        let lease = lock(&self.lease).take();
        let Some(lease) = lease else {
            return;
        };
        let released = if suspended {
            let seen = self.journal_seen.load(Ordering::Acquire);
            self.store.release_suspended(unshared(lease), seen).await
        } else {
            self.store.release(unshared(lease)).await
        };
        if let Err(e) = released {
            tracing::warn!(code = %e.code, error = %e.message, "the run's lease was not released");
        }
    }
}

/// The failure of an answer whose append was abandoned before it was known.
fn abandoned(execution_id: &str) -> Failure {
    Failure::from(
        StoreError::new(
            ErrorCode::StoreUnavailable,
            format!(
                "the journal of run '{execution_id}' went away before a host answer was \
                 journaled"
            ),
        )
        .with_detail("executionId", execution_id),
    )
}

/// `result` ended by the store failure `f`.
fn failed(mut result: ExecutionResult, f: Failure) -> ExecutionResult {
    result.success = false;
    result.failure = Some(f);
    result
}

/// The key of a task callback for `request` (every attempt is the first: the kernel does not
/// retry).
pub(crate) fn task_key(request: &TaskRequest) -> TaskKey {
    TaskKey {
        step: request.step_name.to_string(),
        subtask_index: request.subtask_index,
        local_task_id: request.local_task_id.to_string(),
        attempt: 1,
    }
}

/// A journaled answer as the result the callback gave.
pub(crate) fn replayed<T: Clone>(answer: &Answer<T>) -> Result<T, Failure> {
    match answer {
        Answer::Value(v) => Ok(v.clone()),
        Answer::Failure(f) => Err(f.clone()),
    }
}

/// An answer as journaled.
pub(crate) fn answer_of<T: Clone>(result: &Result<T, Failure>) -> Answer<T> {
    match result {
        Ok(v) => Answer::Value(v.clone()),
        Err(f) => Answer::Failure(f.clone()),
    }
}

/// Renews the run's lease at a third of its remaining life until the run ends; a failed renew
/// stops the run (another driver may own it now: this one must stop driving). When the host
/// cancels the run, the cancel is journaled, so that a driver resuming it after a crash ends it
/// cancelled instead of going on. A renewal that finds a run-level cancel journaled by another
/// process stops the run as the host's cancel does (nothing more is journaled for it).
async fn renew_lease(durable: Weak<Durable>) {
    let mut cancel_seen = false;
    loop {
        let (wait, stop) = match durable.upgrade() {
            Some(d) => match lock(&d.lease).as_ref() {
                Some(l) => (renew_interval(l), d.stop.clone()),
                None => return,
            },
            None => return,
        };
        if cancel_seen {
            tokio::time::sleep(wait).await;
        } else {
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.cancelled() => {
                    cancel_seen = true;
                    if let Some(d) = durable.upgrade() {
                        d.journal_host_cancel().await;
                    }
                    continue;
                }
            }
        }
        let Some(d) = durable.upgrade() else { return };
        let Some(held) = lock(&d.lease).clone() else {
            return;
        };
        match d.store.heartbeat(&held).await {
            Ok(beat) => {
                // A lease given up meanwhile stays given up (see `renewed`).
                let _ = d.renewed(beat.lease);
                if beat.cancel_requested && !cancel_seen {
                    tracing::info!("the run's journal holds a cancel request; the run stops");
                    cancel_seen = true;
                    d.stop.cancel();
                }
            }
            Err(e) => {
                d.fail(e.into());
                return;
            }
        }
    }
}

/// Flushes the run's events whenever its buffer reaches its bound, until the run ends (the
/// buffer is shared, the journal only borrowed: a run that is gone stops this).
async fn flush_when_full(durable: Weak<Durable>, log: Arc<EventLog>) {
    loop {
        log.wants_flush().await;
        let Some(d) = durable.upgrade() else { return };
        d.flush_events().await;
    }
}

fn renew_interval(lease: &Lease) -> Duration {
    let left = lease.expires_at_ms.saturating_sub(wall_clock_ms());
    Duration::from_millis((left / 3).max(10))
}
