//! The served runs: starting a run of a published workflow for an inbound message, its task
//! snapshots while it runs (a `watch` channel per task), the record a store keeps after it, and
//! the limits (runs in flight, subscribers per task, finished tasks kept in memory).

use crate::agents::Agents;
use crate::auth::Who;
use crate::delegated::{self, Known};
use crate::gates::{GateWatch, answer_content};
use crate::index::IndexFile;
use crate::input::run_input;
use crate::quota::{CallerQuota, QuotaSlot};
use crate::record::{ServedLineage, Snapshot, TaskMeta, status_of_unfinished};
use crate::wire_error::{A2aError, ErrorKind};
use a2a::{Message, Task, TaskState};
use a2aflow::kernel::journal::wall_clock_ms;
use a2aflow::kernel::{ControlPoint, DelegationPolicy, GateBoard, GatePolicy};
use a2aflow::model::delegation::{ExecutionStatus, FlowRef, Lineage, RefusedDelegation};
use a2aflow::model::{Event, Workflow};
use a2aflow::{EngineConfig, HostHooks, RunStore, execute_workflow};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

mod resumed;

/// What a served run is given by its host.
#[derive(Clone)]
pub(crate) struct Host {
    /// The agents the runs call and the host's ControlPoint (its tasks to workflows other
    /// a2aflow servers publish carry the calling run's lineage), known or being discovered.
    pub(crate) agents: Agents,
    pub(crate) config: Arc<EngineConfig>,
    pub(crate) store: Option<Arc<dyn RunStore>>,
    /// What an inbound delegation request must pass before its run starts.
    pub(crate) delegation: DelegationPolicy,
}

/// The limits on what clients may hold open.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunLimits {
    pub(crate) runs_in_flight: usize,
    /// At most this many runs in flight per caller.
    pub(crate) runs_per_caller: usize,
    pub(crate) subscribers_per_task: usize,
    /// At most this many finished tasks are kept in memory; the oldest finished are dropped.
    pub(crate) finished_tasks_kept: usize,
    /// How long a CancelTask waits for the run to end.
    pub(crate) cancel_wait: Duration,
}

/// A task this process started: its snapshots and the token that cancels its run.
struct Live {
    state: watch::Sender<Snapshot>,
    cancel: CancellationToken,
    subscribers: Arc<AtomicUsize>,
    /// The gates the run announced (which one the task shows).
    gates: Arc<GateWatch>,
}

struct Entry {
    meta: TaskMeta,
    /// `None` for a task read back from the index (a run of an earlier process).
    live: Option<Live>,
}

/// The served tasks this process answers for. A finished task is kept until
/// [`RunLimits::finished_tasks_kept`] tasks finished after it; then it is dropped and answered
/// as a task that never existed. Running and gate-parked tasks are never dropped.
#[derive(Default)]
struct Table {
    /// Execution ids in the order the tasks were created (oldest first). The ids of dropped
    /// tasks leave it lazily: it is compacted when they are half of it.
    order: Vec<String>,
    tasks: HashMap<String, Entry>,
    /// The finished tasks, in the order they finished (oldest first): the next to drop.
    finished: VecDeque<String>,
    /// With an index file: the tasks dropped since it was last compacted.
    dropped: Option<Vec<String>>,
}

impl Table {
    /// Adds task `meta` (newest).
    fn insert(&mut self, meta: TaskMeta, live: Option<Live>) {
        self.order.push(meta.execution_id.clone());
        self.tasks
            .insert(meta.execution_id.clone(), Entry { meta, live });
    }

    /// Records that task `id` finished, then drops the oldest finished tasks past `kept`.
    /// Amortised O(1): each drop is O(1), and `order` is compacted (O(its length)) only once
    /// the dropped ids are at least half of it.
    fn finished(&mut self, id: &str, kept: usize) {
        if !self.tasks.contains_key(id) {
            return;
        }
        self.finished.push_back(id.to_owned());
        while self.finished.len() > kept {
            if let Some(oldest) = self.finished.pop_front() {
                self.tasks.remove(&oldest);
                if let Some(dropped) = &mut self.dropped {
                    dropped.push(oldest);
                }
            }
        }
        if self.order.len() >= 2 * self.tasks.len() + COMPACT_SLACK {
            let tasks = &self.tasks;
            self.order.retain(|id| tasks.contains_key(id));
        }
    }

    /// The tasks dropped since the index was last compacted, once they are as many as the
    /// tasks kept (and at least [`INDEX_COMPACT_MIN`]): compacting then costs O(the lines
    /// dropped), amortised O(1) per task. `force`: whatever their number (at start).
    fn take_dropped(&mut self, force: bool) -> Option<HashSet<String>> {
        let dropped = self.dropped.as_mut()?;
        let due = dropped.len() >= self.tasks.len().max(INDEX_COMPACT_MIN);
        if dropped.is_empty() || !(due || force) {
            return None;
        }
        Some(std::mem::take(dropped).into_iter().collect())
    }
}

/// How many dropped ids `order` may hold beyond the compaction rule's half (so a small table
/// is not compacted on every drop).
const COMPACT_SLACK: usize = 64;

/// The fewest dropped tasks the index file is compacted for while the server runs.
const INDEX_COMPACT_MIN: usize = 64;

/// Marks task `id` of `table` finished (see [`Table::finished`]); the tasks dropped for the
/// index file to be compacted without, when enough were ([`compact_off_thread`]).
fn mark_finished(table: &Mutex<Table>, id: &str, kept: usize) -> Option<HashSet<String>> {
    let mut table = table.lock().unwrap_or_else(|p| p.into_inner());
    table.finished(id, kept);
    table.take_dropped(false)
}

/// Compacts `index` without the tasks `dropped` on a blocking thread, awaited by the run's
/// task after its end was announced (so that no client waits for it and the server's shutdown
/// waits for it with the run).
async fn compact_off_thread(index: Option<Arc<IndexFile>>, dropped: Option<HashSet<String>>) {
    if let (Some(index), Some(dropped)) = (index, dropped) {
        let _ = tokio::task::spawn_blocking(move || compact_index(&index, &dropped)).await;
    }
}

/// Compacts `index` without the tasks `dropped` (a failure is logged: their lines stay, and
/// are dropped again when the server next starts).
fn compact_index(index: &IndexFile, dropped: &HashSet<String>) {
    if let Err(f) = index.compact(dropped) {
        tracing::warn!(
            target: "a2aflow::serve",
            code = %f.code,
            "the served-task index was not compacted: {}",
            f.message
        );
    }
}

/// A task's current state and where it belongs.
pub(crate) struct Current {
    pub(crate) meta: TaskMeta,
    pub(crate) snapshot: Snapshot,
}

/// An open watch on a live task; counts against the task's subscriber limit while it lives.
pub(crate) struct Watch {
    pub(crate) meta: TaskMeta,
    pub(crate) rx: watch::Receiver<Snapshot>,
    _guard: SubscriberGuard,
}

struct SubscriberGuard(Arc<AtomicUsize>);

impl Drop for SubscriberGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A page of tasks, newest first.
pub(crate) struct Page {
    pub(crate) tasks: Vec<Current>,
    pub(crate) next: Option<String>,
    pub(crate) total: usize,
}

/// Every served task of this server.
pub(crate) struct Runs {
    host: Host,
    workflows: HashMap<String, Arc<Workflow>>,
    /// Where every served run's gates park; a follow-up message answers them here.
    board: GateBoard,
    table: Arc<Mutex<Table>>,
    index: Option<Arc<IndexFile>>,
    in_flight: Arc<Semaphore>,
    per_caller: CallerQuota,
    limits: RunLimits,
    tracker: TaskTracker,
    stop: CancellationToken,
}

impl Runs {
    pub(crate) fn new(
        host: Host,
        workflows: HashMap<String, Arc<Workflow>>,
        index: Option<(IndexFile, Vec<TaskMeta>)>,
        limits: RunLimits,
    ) -> Runs {
        let mut table = Table::default();
        let index = index.map(|(file, tasks)| {
            table.dropped = Some(Vec::new());
            for meta in tasks {
                table.insert(meta, None);
            }
            Arc::new(file)
        });
        Runs {
            host,
            workflows,
            board: GateBoard::new(),
            table: Arc::new(Mutex::new(table)),
            index,
            in_flight: Arc::new(Semaphore::new(limits.runs_in_flight)),
            per_caller: CallerQuota::new(limits.runs_per_caller),
            limits,
            tracker: TaskTracker::new(),
            stop: CancellationToken::new(),
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts a run of `workflow` for `message`; the watch sees it from `PENDING` on.
    pub(crate) async fn start(
        &self,
        workflow: &str,
        who: &Who,
        message: &Message,
    ) -> Result<Watch, A2aError> {
        if let Some(task_id) = &message.task_id {
            return self.follow_up(workflow, who, task_id, message).await;
        }
        let Some(definition) = self.workflows.get(workflow).cloned() else {
            return Err(A2aError::internal(format!(
                "workflow '{workflow}' is not published here"
            )));
        };
        let input = run_input(message)?;
        let lineage = delegated::lineage(message)?;
        let permit = self.in_flight.clone().try_acquire_owned().map_err(|_| {
            A2aError::new(
                ErrorKind::UnsupportedOperation,
                format!(
                    "the server already runs {} workflows, its limit of runs in flight; \
                     send again when one has finished",
                    self.limits.runs_in_flight
                ),
            )
        })?;
        let slot = self.per_caller.take(who).ok_or_else(|| {
            A2aError::new(
                ErrorKind::UnsupportedOperation,
                format!(
                    "you already have {} runs in flight, the server's limit per caller; send \
                     again when one has finished",
                    self.per_caller.limit()
                ),
            )
        })?;
        let execution_id = uuid::Uuid::now_v7().to_string();
        let meta = TaskMeta {
            context_id: message
                .context_id
                .clone()
                .filter(|c| !c.is_empty())
                .unwrap_or_else(|| execution_id.clone()),
            execution_id,
            workflow: workflow.to_owned(),
            workflow_id: definition.id.clone(),
            created_ms: wall_clock_ms(),
            caller: who.name().map(str::to_owned),
            lineage: lineage.as_ref().map(ServedLineage::from),
        };
        if let Some(index) = &self.index {
            index
                .append(&meta)
                .map_err(|f| A2aError::internal(f.message))?;
        }
        let (state, rx) = watch::channel(Snapshot::pending());
        let cancel = self.stop.child_token();
        let subscribers = Arc::new(AtomicUsize::new(1));
        let guard = SubscriberGuard(subscribers.clone());
        let gates = Arc::new(GateWatch::default());
        // In the table before the run can end (its end drops the oldest finished tasks).
        self.table().insert(
            meta.clone(),
            Some(Live {
                state: state.clone(),
                cancel: cancel.clone(),
                subscribers,
                gates: gates.clone(),
            }),
        );
        self.spawn_run(
            definition,
            &meta,
            input,
            Driven {
                state,
                cancel,
                gates,
            },
            (permit, slot),
        );
        Ok(Watch {
            meta,
            rx,
            _guard: guard,
        })
    }

    /// The refused task record of a delegation request the policy declines before anything
    /// starts, `None` for a message that is not one or that the policy admits.
    pub(crate) fn refusal(
        &self,
        workflow: &str,
        who: &Who,
        message: &Message,
    ) -> Result<Option<Task>, A2aError> {
        let Some(lineage) = delegated::lineage(message)? else {
            return Ok(None);
        };
        let Some(definition) = self.workflows.get(workflow) else {
            return Ok(None);
        };
        let known = self.known(who, &lineage);
        let Err(refusal) =
            delegated::admit(&self.host.delegation, &definition.id, &lineage, &known)
        else {
            return Ok(None);
        };
        tracing::info!(
            target: "a2aflow::serve",
            workflow,
            reason = %refusal.reason(),
            "a delegation request was refused: {}",
            refusal.message()
        );
        let refused = RefusedDelegation {
            flow: FlowRef {
                flow_id: definition.id.clone(),
                flow_name: Some(definition.name.clone()),
            },
            lineage,
            reason: refusal.reason(),
            timestamp: SystemTime::now(),
        };
        refused
            .to_task()
            .map(Some)
            .map_err(|e| A2aError::internal(format!("the refusal record cannot be built: {e}")))
    }

    /// What this server knows of the tree of a call at `lineage`, among `who`'s served runs.
    fn known(&self, who: &Who, lineage: &Lineage) -> Known {
        let table = self.table();
        let own = |id: &str| {
            table
                .tasks
                .get(id)
                .map(|e| &e.meta)
                .filter(|m| m.visible_to(who))
        };
        let mut ancestry = Vec::new();
        let mut next = Some(lineage.parent_execution_id.clone());
        let mut steps = 0;
        while let Some(id) = next.take() {
            let Some(meta) = own(&id) else { break };
            ancestry.push(meta.workflow_id.clone());
            next = meta.lineage.as_ref().map(|l| l.parent_execution_id.clone());
            steps += 1;
            if steps > self.host.delegation.max_depth as usize + 1 {
                break;
            }
        }
        if let Some(root) = lineage.root_execution_id.as_deref().and_then(own)
            && !ancestry.contains(&root.workflow_id)
        {
            ancestry.push(root.workflow_id.clone());
        }
        ancestry.reverse();
        let context = lineage.context_id();
        let mut tree = vec![context.to_owned()];
        let mut started_by_parent = 0;
        for entry in table.tasks.values().filter(|e| e.meta.visible_to(who)) {
            let Some(l) = &entry.meta.lineage else {
                continue;
            };
            if l.parent_execution_id == lineage.parent_execution_id {
                started_by_parent += 1;
            }
            if l.root_execution_id
                .as_deref()
                .unwrap_or(&l.parent_execution_id)
                == context
            {
                tree.push(entry.meta.execution_id.clone());
            }
        }
        Known {
            ancestry,
            started_by_parent,
            tree,
        }
    }

    /// A follow-up message on task `task_id`: it answers the gate the task shows, and the
    /// watch sees the run go on from there. Refused as the official SDK refuses a message to an
    /// unknown or ended task or in another context; a task that waits at no gate is refused
    /// with `-32004` (the SDK's agents decide that themselves, so it has no words of its own).
    async fn follow_up(
        &self,
        workflow: &str,
        who: &Who,
        task_id: &str,
        message: &Message,
    ) -> Result<Watch, A2aError> {
        let current = match self.current(workflow, who, task_id).await {
            Ok(current) => current,
            Err(e) if e.kind == ErrorKind::TaskNotFound => {
                return Err(A2aError::new(
                    ErrorKind::TaskNotFound,
                    format!("Task {task_id} not found"),
                ));
            }
            Err(e) => return Err(e),
        };
        if current.snapshot.state().is_terminal() {
            return Err(terminal(task_id, current.snapshot.state()));
        }
        if let Some(context) = message.context_id.as_deref().filter(|c| !c.is_empty())
            && context != current.meta.context_id
        {
            return Err(A2aError::new(
                ErrorKind::InvalidParams,
                format!(
                    "Context {context} does not match context {} of task {task_id}",
                    current.meta.context_id
                ),
            ));
        }
        let content = answer_content(message)?;
        let (watch, live_state, gates) = self.attach(task_id, current.meta)?;
        let Some((open, announced)) = gates.first_announced(&self.board, task_id) else {
            return Err(not_waiting(task_id));
        };
        self.answer(task_id, &open.local_task_id, content, &gates)
            .await?;
        // The announcement the board's gate belongs to is the one seen now: a resumed run
        // announces its gate again (a later `seq`) before it parks it anew, and the answer may
        // have waited for that.
        let announced = gates.seq_of(&open.local_task_id).unwrap_or(announced);
        gates.answered(&open.local_task_id, announced);
        live_state.send_if_modified(|s| s.show_gate(gates.first_open(&self.board, task_id)));
        Ok(watch)
    }

    /// Answers gate `local_task_id` of run `execution_id` on the board. The run announces a
    /// gate just before the gate reaches the board: while the gate is announced and not yet
    /// there, the answer waits for it (at most [`GATE_ARRIVAL`]).
    async fn answer(
        &self,
        execution_id: &str,
        local_task_id: &str,
        content: a2aflow::model::MessageContent,
        gates: &GateWatch,
    ) -> Result<(), A2aError> {
        let deadline = tokio::time::Instant::now() + GATE_ARRIVAL;
        loop {
            if self
                .board
                .answer(execution_id, local_task_id, content.clone())
                .is_ok()
            {
                return Ok(());
            }
            let still_shown = gates
                .first_open(&self.board, execution_id)
                .is_some_and(|g| g.local_task_id == local_task_id);
            if !still_shown || tokio::time::Instant::now() >= deadline {
                return Err(not_waiting(execution_id));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// A watch on live task `id` (counted against its subscriber limit), its sender and its
    /// gates; refused for a task no run of this process drives.
    fn attach(
        &self,
        id: &str,
        meta: TaskMeta,
    ) -> Result<(Watch, watch::Sender<Snapshot>, Arc<GateWatch>), A2aError> {
        let table = self.table();
        let live = table
            .tasks
            .get(id)
            .and_then(|e| e.live.as_ref())
            .ok_or_else(|| {
                A2aError::new(
                    ErrorKind::UnsupportedOperation,
                    format!(
                        "task {id} is not driven by this server process (it stopped before the \
                         run finished); GetTask shows where it stands"
                    ),
                )
            })?;
        let limit = self.limits.subscribers_per_task;
        let taken = live
            .subscribers
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < limit).then_some(n + 1)
            });
        if taken.is_err() {
            return Err(A2aError::new(
                ErrorKind::UnsupportedOperation,
                format!("task {id} already has {limit} subscribers, the server's limit"),
            ));
        }
        let watch = Watch {
            meta,
            rx: live.state.subscribe(),
            _guard: SubscriberGuard(live.subscribers.clone()),
        };
        Ok((watch, live.state.clone(), live.gates.clone()))
    }

    fn spawn_run(
        &self,
        workflow: Arc<Workflow>,
        meta: &TaskMeta,
        input: a2aflow::kernel::RunInput,
        driven: Driven,
        permit: (OwnedSemaphorePermit, QuotaSlot),
    ) {
        let host = self.host.clone();
        let execution_id = meta.execution_id.clone();
        let Driven {
            state,
            cancel,
            gates,
        } = driven;
        let mut hooks = HostHooks::default();
        hooks.run_options.execution_id = Some(execution_id.clone());
        hooks.run_options.cancel = cancel;
        hooks.run_options.store = host.store.clone();
        hooks.run_options.gate_policy = GatePolicy::Park;
        hooks.run_options.gate_board = Some(self.board.clone());
        hooks.run_options.on_event = Some(on_event(
            state.clone(),
            gates,
            self.board.clone(),
            execution_id.clone(),
        ));
        let lineage = meta.lineage.as_ref().map(Lineage::from);
        let give_up = hooks.run_options.cancel.clone();
        let table = self.table.clone();
        let index = self.index.clone();
        let kept = self.limits.finished_tasks_kept;
        self.tracker.spawn(async move {
            let outcome = match host.agents.resolved(&give_up).await {
                Ok(resolved) => {
                    let control_point: Arc<dyn ControlPoint> =
                        Arc::new(resolved.control_point.at(lineage));
                    execute_workflow(
                        workflow,
                        &resolved.agents,
                        control_point,
                        &host.config,
                        input,
                        hooks,
                    )
                    .await
                }
                Err(failure) => Err(failure),
            };
            let snapshot = match outcome {
                Ok(result) => Snapshot::finished(&result),
                Err(failure) => {
                    tracing::warn!(
                        target: "a2aflow::serve",
                        execution_id = %execution_id,
                        code = %failure.code,
                        "the served run could not start: {}",
                        failure.message
                    );
                    if give_up.is_cancelled() {
                        // Cancelled before it could start (while its agents were discovered).
                        Snapshot {
                            status: ExecutionStatus::Cancelled,
                            ..Snapshot::failed()
                        }
                    } else {
                        Snapshot::failed()
                    }
                }
            };
            // Counted among the finished before anyone sees it finished, so that whoever does
            // finds the oldest finished tasks already dropped.
            let dropped = mark_finished(&table, &execution_id, kept);
            state.send_replace(snapshot);
            drop(permit);
            compact_off_thread(index, dropped).await;
        });
    }

    /// The task `id` of `workflow` as it stands (`Task not found` for anything else).
    pub(crate) async fn current(
        &self,
        workflow: &str,
        who: &Who,
        id: &str,
    ) -> Result<Current, A2aError> {
        let recorded = {
            let table = self.table();
            let entry = table
                .tasks
                .get(id)
                .filter(|e| e.meta.workflow == workflow && e.meta.visible_to(who))
                .ok_or_else(A2aError::task_not_found)?;
            match &entry.live {
                Some(live) => {
                    return Ok(Current {
                        meta: entry.meta.clone(),
                        snapshot: live.state.borrow().clone(),
                    });
                }
                None => entry.meta.clone(),
            }
        };
        let snapshot = self.recorded(&recorded).await?;
        Ok(Current {
            meta: recorded,
            snapshot,
        })
    }

    /// The snapshot of a task an earlier process started, from the run store.
    async fn recorded(&self, meta: &TaskMeta) -> Result<Snapshot, A2aError> {
        let Some(store) = &self.host.store else {
            return Err(A2aError::task_not_found());
        };
        let id = meta.execution_id.as_str();
        let not_found = |_| A2aError::task_not_found();
        let view = a2aflow::get_execution(store.as_ref(), id)
            .await
            .map_err(not_found)?;
        let journal = store
            .load(id)
            .await
            .map_err(|_| A2aError::task_not_found())?;
        let timestamp = SystemTime::UNIX_EPOCH + Duration::from_millis(view.started_at_ms);
        match journal.finished() {
            Some(result) => Ok(Snapshot {
                timestamp,
                ..Snapshot::finished(result)
            }),
            None => Ok(Snapshot {
                status: status_of_unfinished(view.state, !view.open_gates.is_empty())?,
                timestamp,
                result: None,
                gate: view.open_gates.first().cloned(),
            }),
        }
    }

    /// A watch on live task `id` of `workflow` for SubscribeToTask: `Task not found` for an
    /// unknown id, the SDK's terminal-state refusal for a task that ended, and a refusal when
    /// the task has as many subscribers as the limit allows.
    pub(crate) async fn subscribe(
        &self,
        workflow: &str,
        who: &Who,
        id: &str,
    ) -> Result<Watch, A2aError> {
        let current = self.current(workflow, who, id).await?;
        if current.snapshot.state().is_terminal() {
            return Err(terminal(id, current.snapshot.state()));
        }
        let (watch, _, _) = self.attach(id, current.meta)?;
        Ok(watch)
    }

    /// Cancels the run of task `id` and waits (bounded) until it has ended.
    pub(crate) async fn cancel(
        &self,
        workflow: &str,
        who: &Who,
        id: &str,
    ) -> Result<Current, A2aError> {
        let current = self.current(workflow, who, id).await?;
        if current.snapshot.state().is_terminal() {
            return Err(A2aError::new(
                ErrorKind::TaskNotCancelable,
                "Task cannot be canceled",
            ));
        }
        let live = {
            let table = self.table();
            table
                .tasks
                .get(id)
                .and_then(|e| e.live.as_ref())
                .map(|l| (l.cancel.clone(), l.state.subscribe()))
        };
        let Some((cancel, mut rx)) = live else {
            return self.cancel_recorded(current).await;
        };
        cancel.cancel();
        let ended = rx.wait_for(|s| s.state().is_terminal());
        match tokio::time::timeout(self.limits.cancel_wait, ended).await {
            Ok(Ok(snapshot)) => Ok(Current {
                meta: current.meta,
                snapshot: snapshot.clone(),
            }),
            _ => Err(A2aError::internal(format!(
                "task {id} was asked to stop and had not stopped after {:?}",
                self.limits.cancel_wait
            ))),
        }
    }

    /// A run of an earlier process: the stop request is journaled for its next driver.
    async fn cancel_recorded(&self, current: Current) -> Result<Current, A2aError> {
        let Some(store) = &self.host.store else {
            return Err(A2aError::task_not_found());
        };
        a2aflow::request_cancel(store.as_ref(), &current.meta.execution_id)
            .await
            .map_err(|f| A2aError::internal(f.message))?;
        Ok(current)
    }

    /// The tasks of `workflow` in `context` (all when `None`) with state `state` (any when
    /// `None`), newest first, `page_size` from the task after `after` (the page token).
    pub(crate) async fn list(
        &self,
        workflow: &str,
        who: &Who,
        context: Option<&str>,
        state: Option<TaskState>,
        after: Option<&str>,
        page_size: usize,
    ) -> Result<Page, A2aError> {
        let ids: Vec<String> = {
            let table = self.table();
            table
                .order
                .iter()
                .rev()
                .filter(|id| {
                    table.tasks.get(*id).is_some_and(|e| {
                        e.meta.workflow == workflow
                            && e.meta.visible_to(who)
                            && context.is_none_or(|c| e.meta.context_id == c)
                    })
                })
                .cloned()
                .collect()
        };
        let mut all = Vec::with_capacity(ids.len());
        for id in &ids {
            let current = match self.current(workflow, who, id).await {
                Ok(current) => current,
                // An index entry whose run the store never got: the process stopped between
                // the two writes, so no run exists and nothing is listed (GetTask says the same).
                Err(e) if e.kind == ErrorKind::TaskNotFound => continue,
                Err(e) => return Err(e),
            };
            if state
                .as_ref()
                .is_none_or(|s| current.snapshot.state() == *s)
            {
                all.push(current);
            }
        }
        let start = match after {
            None => 0,
            Some(token) => all
                .iter()
                .position(|c| c.meta.execution_id == token)
                .ok_or_else(|| {
                    A2aError::new(ErrorKind::InvalidParams, "Token is not a valid cursor.")
                })?,
        };
        let total = all.len();
        let mut rest = all.into_iter().skip(start);
        let tasks: Vec<Current> = rest.by_ref().take(page_size).collect();
        let next = rest.next().map(|c| c.meta.execution_id);
        Ok(Page { tasks, next, total })
    }

    /// Stops the runs still in flight and waits (at most `grace`) for them to end.
    /// Discovers the agents of `pending` on the runs' tracker until all answer or `stop`.
    pub(crate) fn discover(
        &self,
        pending: crate::agents::Pending,
        config: Arc<EngineConfig>,
        stop: CancellationToken,
    ) {
        pending.start(config, stop, &self.tracker);
    }

    pub(crate) async fn stop(&self, grace: Duration) {
        self.stop.cancel();
        self.tracker.close();
        let _ = tokio::time::timeout(grace, self.tracker.wait()).await;
    }
}

/// How long a follow-up waits for an announced gate to reach the board.
const GATE_ARRIVAL: Duration = Duration::from_secs(2);

/// The refusal of a follow-up on a task that waits at no gate.
fn not_waiting(task_id: &str) -> A2aError {
    A2aError::new(
        ErrorKind::UnsupportedOperation,
        format!(
            "task {task_id} is not waiting for input; a follow-up message can only answer a \
             task in TASK_STATE_INPUT_REQUIRED or TASK_STATE_AUTH_REQUIRED"
        ),
    )
}

/// What the driver of a run reports to: the task's snapshots, its cancellation, its gates.
struct Driven {
    state: watch::Sender<Snapshot>,
    cancel: CancellationToken,
    gates: Arc<GateWatch>,
}

/// The run's event hook: the first event makes the task `RUNNING`; every event of the run
/// itself (not of a delegated child) moves the task to the gate it shows, or back to running.
fn on_event(
    state: watch::Sender<Snapshot>,
    gates: Arc<GateWatch>,
    board: GateBoard,
    execution_id: String,
) -> a2aflow::kernel::EventCallback {
    Arc::new(move |event: &Event| {
        if event.execution_id == execution_id {
            gates.observe(event);
        }
        let open = gates.first_open(&board, &execution_id);
        state.send_if_modified(|s| s.show_gate(open));
    })
}

/// The SDK's refusal of an operation on a task that already ended.
pub(crate) fn terminal(id: &str, state: TaskState) -> A2aError {
    A2aError::new(
        ErrorKind::UnsupportedOperation,
        format!("Task {id} is in terminal state: {}", state_name(state)),
    )
}

/// The ProtoJSON name of a task state.
pub(crate) fn state_name(state: TaskState) -> String {
    serde_json::to_value(&state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{state:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(id: &str) -> TaskMeta {
        TaskMeta {
            execution_id: id.into(),
            context_id: "c".into(),
            workflow: "w".into(),
            workflow_id: "wid".into(),
            created_ms: 0,
            caller: None,
            lineage: None,
        }
    }

    /// Many tasks, every other one finishing: the finished kept never pass the limit, the
    /// unfinished all stay, and `order` stays within twice what the table holds (plus slack).
    #[test]
    fn the_oldest_finished_are_dropped_and_the_order_stays_bounded() {
        let mut table = Table::default();
        let kept = 10;
        for i in 0..10_000 {
            let id = format!("t{i}");
            table.insert(meta(&id), None);
            if i % 2 == 0 {
                table.finished(&id, kept);
            }
            assert!(table.finished.len() <= kept);
            assert!(table.order.len() < 2 * table.tasks.len() + COMPACT_SLACK);
        }
        assert_eq!(table.tasks.len(), 5_000 + kept);
        assert!(table.tasks.contains_key("t9998") && table.tasks.contains_key("t9980"));
        assert!(
            !table.tasks.contains_key("t9978"),
            "the 11th newest finished is dropped"
        );
        assert!(
            table.tasks.contains_key("t1"),
            "an unfinished task is never dropped"
        );
        let listed: Vec<&String> = table
            .order
            .iter()
            .filter(|id| table.tasks.contains_key(*id))
            .collect();
        assert_eq!(
            listed.len(),
            table.tasks.len(),
            "order still names every task once"
        );
        // A task no longer in the table (or never in it) is not counted.
        table.finished("t0", kept);
        table.finished("nope", kept);
        assert!(table.tasks.contains_key("t9980"));
        // Without an index file nothing is collected for compacting it.
        assert!(table.take_dropped(true).is_none());
    }

    /// With an index file the dropped tasks are handed over for compacting once they are as
    /// many as the tasks kept (at least INDEX_COMPACT_MIN), and each only once.
    #[test]
    fn dropped_tasks_are_compacted_in_batches_as_large_as_the_table() {
        let mut table = Table {
            dropped: Some(Vec::new()),
            ..Table::default()
        };
        let mut handed = Vec::new();
        for i in 0..5_000 {
            let id = format!("t{i}");
            table.insert(meta(&id), None);
            table.finished(&id, 100);
            if let Some(batch) = table.take_dropped(false) {
                assert!(batch.len() >= INDEX_COMPACT_MIN.max(table.tasks.len()));
                handed.extend(batch);
            }
        }
        let rest = table.take_dropped(true).unwrap_or_default();
        assert!(rest.len() < INDEX_COMPACT_MIN);
        handed.extend(rest);
        handed.sort_by_key(|id| id[1..].parse::<usize>().unwrap_or(usize::MAX));
        let want: Vec<String> = (0..4_900).map(|i| format!("t{i}")).collect();
        assert_eq!(handed, want, "every dropped task, once");
        assert!(table.take_dropped(true).is_none());
    }
}
