//! The runner: lifecycle events around the executor, validation, the
//! `on_finish` hook, and the streaming form with a bounded event channel that cancels the run
//! when the consumer goes away.

use crate::client::RemoteClient;
use crate::context::{ChildFuture, ChildRun, RunContext};
use crate::control_point::ControlPoint;
use crate::delegation::{DelegationPolicy, Inherited, Root, Scope, WorkflowCatalog};
use crate::durable::{Durable, ResumePolicy};
use crate::events::{EventCallback, EventHook, EventHub, SinkKind};
use crate::executor::Executor;
use crate::finish::FinishHook;
use crate::gates::{GateBoard, GatePolicy, Suspension};
use crate::ids::{ContextIds, fresh_execution_id};
use crate::journal::{JournaledOptions, RunStarted, RunStore, millis, wall_clock_ms};
use crate::panic_guard::panic_message;
use crate::prepared::PreparedWorkflow;
use a2aflow_model::event_data::{CloseData, CompleteData, ErrorData, StartData};
use a2aflow_model::{
    ErrorCode, Event, ExecutionResult, Failure, RetryPolicy, SharedStr, ValidationErrors, Workflow,
};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};
use tracing::Instrument;

/// The run-level input.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunInput {
    /// The host's runtime intent for the whole run (every task and route request sees it).
    pub runtime_intent: Option<String>,
}

/// Called exactly once with the run's result (success, failure or cancellation), before the
/// `close` event. A panic inside it is logged and ignored.
pub type OnFinish = Arc<dyn Fn(&ExecutionResult) + Send + Sync>;

/// How one run behaves.
#[derive(Clone)]
pub struct RunOptions {
    /// The one deadline budget of the run, shared by callbacks, remote work, waiting and
    /// negotiation. Default 600 s.
    pub timeout: Duration,
    /// At most this many remote dispatches in flight at once (host callbacks are not counted).
    /// `None` (the default) means unbounded.
    pub max_concurrent_remote_tasks: Option<usize>,
    /// Capacity of the event channel of [`run_stream`] (at least 1). Default 256. When the consumer
    /// is slower than the run, the run waits (back-pressure); memory never grows without bound.
    pub event_buffer: usize,
    /// Cancelling this token cancels the run and everything in flight.
    pub cancel: CancellationToken,
    /// Called exactly once with the result.
    pub on_finish: Option<OnFinish>,
    /// A synchronous event sink for [`run`] (ignored by [`run_stream`], which uses its channel).
    pub on_event: Option<EventCallback>,
    /// The execution id; a fresh unique one when `None`.
    pub execution_id: Option<String>,
    /// How long an interrupted remote client may take to clean up (best-effort remote cancel)
    /// before the kernel drops it. Default 5 s.
    pub cleanup_grace: Duration,
    /// Resolves the child workflows that subtasks name with `workflow` (delegation). `None` (the
    /// default): such a subtask fails with `delegation.no_catalog`.
    pub workflow_catalog: Option<Arc<dyn WorkflowCatalog>>,
    /// The limits checked before a child workflow starts (depth, fan-out, budget).
    pub delegation: DelegationPolicy,
    /// Journals the run in this store (a durable run, see [`crate::resume`]). `None` (the
    /// default): nothing is journaled and nothing of it is paid for.
    pub store: Option<Arc<dyn RunStore>>,
    /// Which lost messages a resumed run may resend (used by [`crate::resume`]; default: none).
    pub resume_policy: ResumePolicy,
    /// The name this driver holds the run's lease under; a fresh unique one when `None`.
    pub lease_owner: Option<String>,
    /// What a remote task stopped at INPUT_REQUIRED (nothing to negotiate) or AUTH_REQUIRED
    /// does: fail (the default) or park until the host answers (see [`crate::GateBoard`]).
    pub gate_policy: GatePolicy,
    /// Where the host answers the run's open gates ([`GatePolicy::Park`]); `None`: the run has
    /// a board of its own that nobody answers.
    pub gate_board: Option<GateBoard>,
    /// A durable run ([`RunOptions::store`]) with [`GatePolicy::Park`] suspends when nothing is
    /// left to do but wait at open gates: the drive ends, the lease is released, the run stays
    /// unfinished in its store with its open gates, and the result fails with
    /// `workflow.parked` (its details list `openGates`). Answer the gates, then resume the run.
    /// Ignored without a store or without `Park`. Default false.
    pub suspend_when_parked: bool,
    /// The retry policy of every subtask whose workflow entry gives none. `None` (the default):
    /// such subtasks are sent once.
    pub retry: Option<RetryPolicy>,
    /// The host's event hook: keeps, drops, changes or adds events before any consumer (the
    /// sink, the store, the finish hook) sees them. Default none.
    pub event_hook: Option<EventHook>,
    /// The host's asynchronous finish hook, called once with the result and the run's events
    /// (awaited for at most `cleanup_grace`). Default none; with one, the run keeps its events
    /// until it ends.
    pub finish_hook: Option<Arc<dyn FinishHook>>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            timeout: Duration::from_secs(600),
            max_concurrent_remote_tasks: None,
            event_buffer: 256,
            cancel: CancellationToken::new(),
            on_finish: None,
            on_event: None,
            execution_id: None,
            cleanup_grace: Duration::from_secs(5),
            workflow_catalog: None,
            delegation: DelegationPolicy::default(),
            store: None,
            resume_policy: ResumePolicy::default(),
            lease_owner: None,
            gate_policy: GatePolicy::default(),
            gate_board: None,
            suspend_when_parked: false,
            retry: None,
            event_hook: None,
            finish_hook: None,
        }
    }
}

impl JournaledOptions {
    /// What the journal keeps of `options`.
    pub fn of(options: &RunOptions) -> Self {
        JournaledOptions {
            timeout_ms: millis(options.timeout),
            max_concurrent_remote_tasks: options.max_concurrent_remote_tasks,
            cleanup_grace_ms: millis(options.cleanup_grace),
            max_delegation_depth: options.delegation.max_depth,
            max_delegation_fan_out: options.delegation.max_fan_out,
            delegation_budget: options.delegation.budget.as_ref().map(|b| b.limit),
            retry: options.retry.clone(),
            gate_policy: Some(options.gate_policy),
        }
    }

    /// Gives a resumed run the limits, retries and gate policy it started with, whatever the
    /// resuming host passes: the run's semantics were fixed when it was journaled. What stays the
    /// resuming host's: its callbacks, cancellation, event buffer, lease owner, resume policy,
    /// gate board, `suspend_when_parked`, the catalog, the firewall and the cost meter (a
    /// journaled budget limit applies to the meter the host supplies; without one, none).
    /// The deadline is the journaled absolute one (the resume computes what is left of it). A
    /// journal from before the gate policy was kept leaves the resuming host's.
    pub fn apply_to(&self, options: &mut RunOptions) {
        options.max_concurrent_remote_tasks = self.max_concurrent_remote_tasks;
        options.cleanup_grace = Duration::from_millis(self.cleanup_grace_ms);
        options.delegation.max_depth = self.max_delegation_depth;
        options.delegation.max_fan_out = self.max_delegation_fan_out;
        match (self.delegation_budget, options.delegation.budget.as_mut()) {
            (Some(limit), Some(budget)) => budget.limit = limit,
            (None, _) => options.delegation.budget = None,
            (Some(_), None) => {}
        }
        options.retry = self.retry.clone();
        if let Some(policy) = self.gate_policy {
            options.gate_policy = policy;
        }
    }
}

impl From<&RunOptions> for JournaledOptions {
    fn from(options: &RunOptions) -> Self {
        JournaledOptions::of(options)
    }
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("timeout", &self.timeout)
            .field(
                "max_concurrent_remote_tasks",
                &self.max_concurrent_remote_tasks,
            )
            .field("event_buffer", &self.event_buffer)
            .field("execution_id", &self.execution_id)
            .field("cleanup_grace", &self.cleanup_grace)
            .field("workflow_catalog", &self.workflow_catalog.is_some())
            .field("delegation", &self.delegation)
            .field("store", &self.store.is_some())
            .field("resume_policy", &self.resume_policy)
            .field("lease_owner", &self.lease_owner)
            .field("gate_policy", &self.gate_policy)
            .field("gate_board", &self.gate_board.is_some())
            .field("suspend_when_parked", &self.suspend_when_parked)
            .field("retry", &self.retry)
            .field("event_hook", &self.event_hook.is_some())
            .field("finish_hook", &self.finish_hook.is_some())
            .finish_non_exhaustive()
    }
}

/// Runs a workflow to its end and returns the result. Never panics on bad input: an invalid
/// workflow returns a failed result with its `workflow.*` code (one `error` event, no callback,
/// no send).
///
/// Events go to `options.on_event`; in order: `start`, the executor's events, `workflow_complete`,
/// then `complete` (success) or `error` (failure), then `close` — `on_finish` runs just before
/// `close`.
pub async fn run(
    workflow: impl Into<Arc<Workflow>>,
    input: RunInput,
    control_point: Arc<dyn ControlPoint>,
    client: Arc<dyn RemoteClient>,
    options: RunOptions,
) -> ExecutionResult {
    root_run(
        Source::Raw(workflow.into()),
        RunSpec {
            input,
            cp: control_point,
            client,
            options,
        },
    )
    .await
}

/// Runs a [`PreparedWorkflow`]: the same as [`run`] without validating and planning again.
pub async fn run_prepared(
    prepared: &PreparedWorkflow,
    input: RunInput,
    control_point: Arc<dyn ControlPoint>,
    client: Arc<dyn RemoteClient>,
    options: RunOptions,
) -> ExecutionResult {
    root_run(
        Source::Prepared(prepared.clone()),
        RunSpec {
            input,
            cp: control_point,
            client,
            options,
        },
    )
    .await
}

/// A root run: the host's event callback as its sink, driven as its own task ([`spawned`]).
async fn root_run(source: Source, spec: RunSpec) -> ExecutionResult {
    let sink = root_sink(&spec.options);
    spawned(start_root(source, spec, sink)).await
}

/// A root run, journaled when its options name a store: `RunStarted` and the lease come before
/// anything else (a run whose journal cannot start ends with the store's failure, nothing run).
async fn start_root(source: Source, mut spec: RunSpec, sink: SinkKind) -> ExecutionResult {
    let Some(store) = spec.options.store.take() else {
        return run_with_sink(source, spec, sink, None, None).await;
    };
    let execution_id = spec
        .options
        .execution_id
        .get_or_insert_with(fresh_execution_id)
        .clone();
    let started = RunStarted::new(
        execution_id.clone(),
        source.workflow(),
        spec.input.runtime_intent.clone(),
        &spec.options,
        wall_clock_ms(),
    );
    let durable = match started {
        Ok(started) => {
            let owner = spec.options.lease_owner.clone();
            Durable::begin(store, started, owner, &spec.options.cancel).await
        }
        Err(e) => Err(e.into()),
    };
    match durable {
        Ok(d) => {
            spec.options.cancel = d.stop_token();
            run_with_sink(source, spec, sink, None, Some(d)).await
        }
        Err(failure) => not_journaled(&source, &spec.options, execution_id, failure).await,
    }
}

/// A run whose journal could not start: failed with the store's failure, nothing run or sent.
async fn not_journaled(
    source: &Source,
    options: &RunOptions,
    execution_id: String,
    failure: Failure,
) -> ExecutionResult {
    let (code, error) = (&failure.code, &failure.message);
    tracing::warn!(%code, %error, "the run's journal could not start");
    let workflow = source.workflow();
    let result = ExecutionResult {
        execution_id,
        workflow_id: workflow.id.clone(),
        success: false,
        failure: Some(failure),
        steps: Vec::new(),
        skipped_steps: workflow.steps.iter().map(|s| s.name.clone()).collect(),
    };
    call_on_finish(options.on_finish.as_ref(), &result);
    let hook = options.finish_hook.as_deref();
    crate::finish::call(hook, &result, Vec::new(), options.cleanup_grace).await;
    result
}

/// Drives a root run as its own task of the current runtime and waits for it. The executor is
/// woken each time one of the run's tasks ends; as its own task that wake-up lands on a runtime
/// worker, where a caller blocked in `block_on` would otherwise be woken (a futex wake and a
/// context switch) once per finished task. Dropping the returned future aborts the task, which
/// drops the run exactly as dropping an unspawned run would. A panic is resumed in the caller.
pub(crate) async fn spawned(
    run: impl std::future::Future<Output = ExecutionResult> + Send + 'static,
) -> ExecutionResult {
    struct AbortOnDrop(JoinHandle<ExecutionResult>);
    impl Drop for AbortOnDrop {
        fn drop(&mut self) {
            self.0.abort();
        }
    }
    let mut task = AbortOnDrop(tokio::spawn(run.in_current_span()));
    match (&mut task.0).await {
        Ok(result) => result,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => abnormal_end(&e),
    }
}

/// The result of a run task that ended without returning one (aborted, or its runtime shut down).
fn abnormal_end(e: &tokio::task::JoinError) -> ExecutionResult {
    ExecutionResult {
        execution_id: String::new(),
        workflow_id: String::new(),
        success: false,
        failure: Some(Failure::new(
            ErrorCode::WorkflowExecutionFailed,
            format!("the run task ended abnormally: {e}"),
        )),
        steps: Vec::new(),
        skipped_steps: Vec::new(),
    }
}

/// A root run's event sink: the host's synchronous callback, or none.
pub(crate) fn root_sink(options: &RunOptions) -> SinkKind {
    match options.on_event.clone() {
        Some(cb) => SinkKind::Callback(cb),
        None => SinkKind::None,
    }
}

/// What a run starts from: a workflow still to validate, or one prepared earlier.
pub(crate) enum Source {
    Raw(Arc<Workflow>),
    Prepared(PreparedWorkflow),
}

impl Source {
    fn workflow(&self) -> &Arc<Workflow> {
        match self {
            Source::Raw(w) => w,
            Source::Prepared(p) => p.workflow(),
        }
    }

    /// The workflow validated and planned (once, for a raw one).
    fn prepare(self) -> Result<PreparedWorkflow, ValidationErrors> {
        match self {
            Source::Raw(w) => PreparedWorkflow::new(w),
            Source::Prepared(p) => Ok(p),
        }
    }
}

/// What a run is given besides its workflow, root or child.
pub(crate) struct RunSpec {
    pub(crate) input: RunInput,
    pub(crate) cp: Arc<dyn ControlPoint>,
    pub(crate) client: Arc<dyn RemoteClient>,
    pub(crate) options: RunOptions,
}

/// One run, root or child. `parent` is `None` for a root run; a delegated child run gets what
/// it inherits from its parent (crate::delegation) and a [`SinkKind::Parent`] sink. A durable
/// root run has its journal (`durable`): the result is journaled before `on_finish` sees it.
pub(crate) async fn run_with_sink(
    source: Source,
    spec: RunSpec,
    sink: SinkKind,
    parent: Option<Inherited>,
    durable: Option<Arc<Durable>>,
) -> ExecutionResult {
    let on_finish = spec.options.on_finish.clone();
    let finish_hook = spec.options.finish_hook.clone();
    let ctx = Arc::new(context(
        spec,
        source.workflow().clone(),
        sink,
        parent,
        durable.clone(),
    ));
    let span = tracing::info_span!(
        "workflow",
        execution_id = %ctx.execution_id,
        workflow_id = %ctx.workflow.id,
    );
    async move {
        ctx.emit_run(|| StartData {
            workflow: ctx.workflow.name.clone(),
            workflow_id: ctx.workflow.id.clone(),
            steps: ctx.workflow.steps.len(),
        })
        .await;
        let result = match source.prepare() {
            Err(errors) => rejected(&ctx, &errors).await,
            Ok(prepared) => scheduled(&ctx, &prepared).await,
        };
        let result = match &durable {
            // A suspended run stays unfinished in its store.
            Some(_) if ctx.is_suspended() => result,
            Some(d) => d.finish_run(result).await,
            None => result,
        };
        call_on_finish(on_finish.as_ref(), &result);
        let events = ctx.hub.recorded();
        crate::finish::call(finish_hook.as_deref(), &result, events, ctx.grace).await;
        ctx.emit_run(CloseData::default).await;
        if let Some(d) = &durable {
            d.close(ctx.is_suspended()).await;
        }
        result
    }
    .instrument(span)
    .await
}

/// The context of one run: its identity, deadline, token, delegation scope and event hub.
fn context(
    spec: RunSpec,
    workflow: Arc<Workflow>,
    sink: SinkKind,
    parent: Option<Inherited>,
    durable: Option<Arc<Durable>>,
) -> RunContext {
    let RunSpec {
        input,
        cp,
        client,
        options,
    } = spec;
    let execution_id = SharedStr::from(options.execution_id.unwrap_or_else(fresh_execution_id));
    let deadline = Instant::now() + options.timeout;
    let run_token = options.cancel.child_token();
    // A child's events pass through its root's hub: only a root run applies the host's hooks.
    let root = parent.is_none();
    let gates = match options.gate_policy {
        GatePolicy::Park => Some(options.gate_board.unwrap_or_default()),
        GatePolicy::Fail => None,
    };
    let suspension = (gates.is_some() && durable.is_some() && options.suspend_when_parked)
        .then(|| Arc::new(Suspension::default()));
    // Delegation: where this run sits in its tree (depth 0 and a fresh tree for a root run).
    let delegation = match parent {
        Some(parent) => Scope::child(parent),
        None => Scope::root(Root {
            catalog: options.workflow_catalog,
            policy: options.delegation,
            max_concurrent_remote_tasks: options.max_concurrent_remote_tasks,
            workflow_id: &workflow.id,
            execution_id: &execution_id,
        }),
    };
    let mut hub = EventHub::new(
        execution_id.clone(),
        sink,
        run_token.clone(),
        deadline + options.cleanup_grace,
    );
    if let Some(d) = &durable {
        hub = hub.journaled(d.event_log(), d.next_event_seq());
    }
    if root {
        hub = hub.hooked(options.event_hook, options.finish_hook.is_some());
    }
    RunContext {
        hub: Arc::new(hub.at_depth(delegation.depth())),
        context_ids: ContextIds::new(execution_id.clone()),
        execution_id,
        workflow,
        cp,
        client,
        deadline,
        timeout: options.timeout,
        grace: options.cleanup_grace,
        run_token,
        semaphore: delegation.semaphore(),
        runtime_intent: input.runtime_intent,
        delegation,
        start_child,
        durable,
        gates,
        suspension,
        retry: options.retry,
    }
}

/// A workflow rejected before scheduling: one `error` event, a failed result, nothing run.
async fn rejected(ctx: &RunContext, errors: &ValidationErrors) -> ExecutionResult {
    let failure = errors.to_failure();
    tracing::warn!(
        code = %failure.code,
        error = %failure.message,
        "workflow rejected before scheduling",
    );
    ctx.emit_run(|| ErrorData {
        step: None,
        error: failure.message.clone(),
        error_code: failure.code.clone(),
        failure: failure.clone(),
        steps: None,
    })
    .await;
    ExecutionResult {
        execution_id: String::from(&*ctx.execution_id),
        workflow_id: ctx.workflow.id.clone(),
        success: false,
        failure: Some(failure),
        steps: Vec::new(),
        skipped_steps: ctx.workflow.steps.iter().map(|s| s.name.clone()).collect(),
    }
}

/// A valid workflow scheduled to its end, then `complete` (success) or `error` (failure).
async fn scheduled(ctx: &Arc<RunContext>, prepared: &PreparedWorkflow) -> ExecutionResult {
    let mut result = Executor::new(ctx.clone(), prepared.plan().clone())
        .run()
        .await;
    if let Some(s) = ctx.suspension.as_ref().filter(|s| s.is_suspended()) {
        result.failure = Some(s.parked_failure(&ctx.execution_id));
    }
    match result.failure.clone() {
        None => {
            let steps = Arc::new(std::mem::take(&mut result.steps));
            ctx.emit_run(|| CompleteData {
                success: true,
                steps: steps.clone(),
                skipped_steps: result.skipped_steps.clone(),
            })
            .await;
            result.steps = crate::executor::unshared(steps);
        }
        Some(f) => {
            ctx.emit_run(|| ErrorData {
                step: None,
                error: f.message.clone(),
                error_code: f.code.clone(),
                failure: f.clone(),
                steps: Some(result.steps.clone()),
            })
            .await
        }
    }
    result
}

/// Calls the host's `on_finish` hook, if any; a panic inside it is logged and ignored.
fn call_on_finish(hook: Option<&OnFinish>, result: &ExecutionResult) {
    let Some(hook) = hook else { return };
    if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook(result))) {
        tracing::warn!(error = %panic_message(p.as_ref()), "on_finish panicked; ignored");
    }
}

/// Starts a child run of `parent` (the [`crate::context::StartChild`] of every run): the
/// parent's control point and client, its remaining deadline and grace, the parent's hub as
/// the sink, its default retry policy.
fn start_child(parent: &RunContext, child: ChildRun) -> ChildFuture {
    let options = RunOptions {
        timeout: parent.deadline.saturating_duration_since(Instant::now()),
        cancel: child.cancel,
        execution_id: Some(child.execution_id),
        cleanup_grace: parent.grace,
        retry: parent.retry.clone(),
        ..RunOptions::default()
    };
    let spec = RunSpec {
        input: RunInput {
            runtime_intent: child.runtime_intent,
        },
        cp: parent.cp.clone(),
        client: parent.client.clone(),
        options,
    };
    Box::pin(run_with_sink(
        Source::Raw(child.workflow),
        spec,
        SinkKind::Parent(parent.hub.clone()),
        Some(child.inherited),
        None,
    ))
}

/// A run whose events arrive through a bounded channel.
///
/// Dropping the stream cancels the run (everything in flight is cancelled, `on_finish` still
/// runs once). Read events with [`EventStream::next`] (or [`EventStream::poll_next`] to adapt it to
/// a `Stream`), then get the result with [`EventStream::result`].
#[derive(Debug)]
pub struct EventStream {
    rx: mpsc::Receiver<Event>,
    handle: Option<JoinHandle<ExecutionResult>>,
    _cancel_on_drop: DropGuard,
    cancel: CancellationToken,
}

impl EventStream {
    /// The next event, or `None` once `close` was delivered and the run ended.
    pub async fn next(&mut self) -> Option<Event> {
        self.rx.recv().await
    }

    /// Polls for the next event (for adapting to a `Stream` implementation).
    pub fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        self.rx.poll_recv(cx)
    }

    /// Cancels the run; events keep flowing until `close`.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Discards the remaining events and returns the run's result.
    pub async fn result(mut self) -> ExecutionResult {
        while self.rx.recv().await.is_some() {}
        match self.handle.take() {
            Some(h) => match h.await {
                Ok(r) => r,
                Err(e) => abnormal_end(&e),
            },
            None => ExecutionResult {
                execution_id: String::new(),
                workflow_id: String::new(),
                success: false,
                failure: Some(Failure::new(
                    ErrorCode::WorkflowExecutionFailed,
                    "result already taken",
                )),
                steps: Vec::new(),
                skipped_steps: Vec::new(),
            },
        }
    }
}

/// Starts a run on the current tokio runtime and returns its event stream. Must be called from
/// within a tokio runtime. The channel holds at most `options.event_buffer` events.
pub fn run_stream(
    workflow: impl Into<Arc<Workflow>>,
    input: RunInput,
    control_point: Arc<dyn ControlPoint>,
    client: Arc<dyn RemoteClient>,
    mut options: RunOptions,
) -> EventStream {
    let buffer = options.event_buffer;
    let cancel = options.cancel.child_token();
    options.cancel = cancel.clone();
    let spec = RunSpec {
        input,
        cp: control_point,
        client,
        options,
    };
    let source = Source::Raw(workflow.into());
    channel_run(buffer, cancel, |sink| start_root(source, spec, sink))
}

/// Spawns the run `start` makes with a channel sink of `buffer` events and returns its stream;
/// dropping the stream cancels `cancel` (the run's parent token).
pub(crate) fn channel_run<F>(
    buffer: usize,
    cancel: CancellationToken,
    start: impl FnOnce(SinkKind) -> F,
) -> EventStream
where
    F: std::future::Future<Output = ExecutionResult> + Send + 'static,
{
    let (tx, rx) = mpsc::channel(buffer.max(1));
    let handle = tokio::spawn(start(SinkKind::Channel(tx)));
    EventStream {
        rx,
        handle: Some(handle),
        _cancel_on_drop: cancel.clone().drop_guard(),
        cancel,
    }
}
