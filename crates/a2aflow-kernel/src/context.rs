//! What the functions of one run share, passed by reference: the per-run [`RunContext`] and the
//! per-subtask [`TaskCtx`], with the named emit helpers every kernel event of a run goes through
//! (one helper call per event, its typed payload built in the closure next to it).

use crate::client::RemoteClient;
use crate::control_point::ControlPoint;
use crate::delegation::{Inherited, Scope};
use crate::durable::Durable;
use crate::events::EventHub;
use crate::gates::{GateBoard, Suspension};
use crate::ids::ContextIds;
use crate::interrupt::{Bounds, Interrupt};
use a2aflow_model::names::visible;
use a2aflow_model::{
    ErrorCode, EventData, ExecutionResult, Failure, RetryPolicy, SharedStr, Step, Workflow,
};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;

/// A child run, driven to its end by whoever awaits it.
pub(crate) type ChildFuture = Pin<Box<dyn Future<Output = ExecutionResult> + Send>>;

/// Starts a child run of the run `parent` (the runner's; a function value so that the task code
/// that delegates does not depend on the runner that schedules it).
pub(crate) type StartChild = fn(parent: &RunContext, child: ChildRun) -> ChildFuture;

/// What a delegating subtask hands the runner to start a child run.
pub(crate) struct ChildRun {
    /// The resolved and admitted child workflow.
    pub(crate) workflow: Arc<Workflow>,
    /// The child's run-level input.
    pub(crate) runtime_intent: Option<String>,
    /// The execution id admission gave the child.
    pub(crate) execution_id: String,
    /// A child of the delegating task's token.
    pub(crate) cancel: CancellationToken,
    /// What the child takes from its parent's delegation scope.
    pub(crate) inherited: Inherited,
}

/// What every function of one run shares.
pub(crate) struct RunContext {
    pub(crate) execution_id: SharedStr,
    /// The context ids of the run's tasks, when their hosts name none.
    pub(crate) context_ids: ContextIds,
    pub(crate) workflow: Arc<Workflow>,
    pub(crate) cp: Arc<dyn ControlPoint>,
    pub(crate) client: Arc<dyn RemoteClient>,
    pub(crate) hub: Arc<EventHub>,
    pub(crate) deadline: Instant,
    pub(crate) timeout: Duration,
    pub(crate) grace: Duration,
    pub(crate) run_token: CancellationToken,
    pub(crate) semaphore: Option<Arc<Semaphore>>,
    pub(crate) runtime_intent: Option<String>,
    /// Where this run sits in a delegation tree (catalog, policy, depth, ancestry).
    pub(crate) delegation: Scope,
    /// How a delegating subtask of this run starts its child run.
    pub(crate) start_child: StartChild,
    /// The run's journal, for a durable root run.
    pub(crate) durable: Option<Arc<Durable>>,
    /// Where the run's gates park ([`crate::GatePolicy::Park`]); `None`: gates fail the task.
    pub(crate) gates: Option<GateBoard>,
    /// How the run suspends at its open gates, when it may.
    pub(crate) suspension: Option<Arc<Suspension>>,
    /// The retry policy of the subtasks whose workflow entry gives none.
    pub(crate) retry: Option<RetryPolicy>,
}

impl RunContext {
    /// Step `s` of the run's workflow.
    pub(crate) fn step(&self, s: usize) -> &Step {
        &self.workflow.steps[s]
    }

    /// Whether the run suspended at its open gates (nothing it stops is journaled as ended).
    pub(crate) fn is_suspended(&self) -> bool {
        self.suspension.as_ref().is_some_and(|s| s.is_suspended())
    }

    /// The failure an interruption of this run's work is recorded with.
    pub(crate) fn interrupt_failure(&self, i: Interrupt) -> Failure {
        i.failure(self.timeout.as_millis())
    }

    /// Emits a run-level event (no step, no task) with the payload `payload` builds (only
    /// when someone listens); its kind is the payload's.
    pub(crate) async fn emit_run<P: EventData>(&self, payload: impl FnOnce() -> P) {
        self.hub
            .emit_payload(None, None, None, || payload().into())
            .await;
    }

    /// Emits an event about step `step` with the payload `payload` builds.
    pub(crate) async fn emit_step<P: EventData>(&self, step: &str, payload: impl FnOnce() -> P) {
        self.hub
            .emit_payload(Some(step), None, None, || payload().into())
            .await;
    }

    /// Emits an event about task `task` of step `step` with the payload `payload` builds.
    pub(crate) async fn emit_task<P: EventData>(
        &self,
        step: &str,
        task: &str,
        payload: impl FnOnce() -> P,
    ) {
        self.hub
            .emit_payload(Some(step), Some(task), None, || payload().into())
            .await;
    }
}

/// What the functions of one subtask's job share: its run, which subtask it is, its token and
/// the flag that closes its event emitter.
pub(crate) struct TaskCtx {
    pub(crate) run: Arc<RunContext>,
    pub(crate) step: usize,
    pub(crate) index: usize,
    pub(crate) token: CancellationToken,
    pub(crate) closed: Arc<AtomicBool>,
    /// The task's deadline: the run's, or earlier when its step's or its own `timeout` says so.
    pub(crate) deadline: Instant,
    /// The timeout that set `deadline`, when it is not the run's.
    pub(crate) limit: Option<TaskLimit>,
}

/// A step's or a subtask's own `timeout`, when it ends the task before the run's deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TaskLimit {
    /// The step's timeout (`true`) or the subtask's.
    pub(crate) of_step: bool,
    pub(crate) timeout: Duration,
}

impl TaskLimit {
    /// The deadline of a task started now whose step started at `step_started`: the earliest of
    /// the run's deadline, the step's and the subtask's timeouts, with the limit that set it.
    pub(crate) fn deadline_of(
        run: &RunContext,
        s: usize,
        i: usize,
        step_started: Instant,
    ) -> (Instant, Option<TaskLimit>) {
        let step = run.step(s);
        let mut out = (run.deadline, None);
        let limits = [
            (step.timeout, step_started, true),
            (
                step.subtasks.get(i).and_then(|t| t.timeout),
                Instant::now(),
                false,
            ),
        ];
        for (timeout, from, of_step) in limits {
            if let Some(timeout) = timeout
                && let Some(at) = from.checked_add(timeout)
                && at < out.0
            {
                out = (at, Some(TaskLimit { of_step, timeout }));
            }
        }
        out
    }
}

impl TaskCtx {
    /// The bounds of this task's waits, on `sleep` (a timer set to [`TaskCtx::sleep`]).
    pub(crate) fn bounds<'a>(&'a self, sleep: Pin<&'a mut Sleep>) -> Bounds<'a> {
        Bounds {
            token: &self.token,
            sleep,
            deadline: self.deadline,
        }
    }

    /// A timer set to the task's deadline.
    pub(crate) fn sleep(&self) -> Sleep {
        tokio::time::sleep_until(self.deadline)
    }

    /// The failure of a task stopped by its own limit (not the run's deadline): `workflow.timeout`
    /// naming the subtask, its agent and its step.
    pub(crate) fn timeout_failure(&self, limit: TaskLimit, local_task_id: &str) -> Failure {
        let step = self.run.step(self.step);
        let agent = step
            .subtasks
            .get(self.index)
            .map_or("", |t| t.agent.as_str());
        let whose = if limit.of_step { "its step's" } else { "its" };
        let secs = limit.timeout.as_secs_f64();
        Failure::new(
            ErrorCode::WorkflowTimeout,
            format!(
                "subtask #{} (agent '{}') of step '{}' did not finish within {whose} timeout of {secs} s",
                self.index,
                visible(agent),
                visible(&step.name)
            ),
        )
        .with_detail("step", step.name.as_str())
        .with_detail("subtaskIndex", self.index)
        .with_detail("agent", agent)
        .with_detail("localTaskId", local_task_id)
        .with_detail("timeoutMs", crate::journal::millis(limit.timeout))
        .with_detail("timeoutOf", if limit.of_step { "step" } else { "subtask" })
    }
}
