//! What the functions of one run share, passed by reference: the per-run [`RunContext`] and the
//! per-subtask [`TaskCtx`], with the named emit helpers every kernel event of a run goes through
//! (one helper call per event, its typed payload built in the closure next to it).

use crate::client::RemoteClient;
use crate::control_point::ControlPoint;
use crate::delegation::{Inherited, Scope};
use crate::durable::Durable;
use crate::events::EventHub;
use crate::interrupt::{Bounds, Interrupt};
use a2aflow_model::{EventData, ExecutionResult, Failure, RetryPolicy, Step, Workflow};
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
    pub(crate) execution_id: Arc<str>,
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
    /// The retry policy of the subtasks whose workflow entry gives none.
    pub(crate) retry: Option<RetryPolicy>,
}

impl RunContext {
    /// Step `s` of the run's workflow.
    pub(crate) fn step(&self, s: usize) -> &Step {
        &self.workflow.steps[s]
    }

    /// The failure an interruption of this run's work is recorded with.
    pub(crate) fn interrupt_failure(&self, i: Interrupt) -> Failure {
        i.failure(self.timeout.as_millis())
    }

    /// A timer set to the run's deadline.
    pub(crate) fn sleep(&self) -> Sleep {
        tokio::time::sleep_until(self.deadline)
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
}

impl TaskCtx {
    /// The bounds of this task's waits, on `sleep` (a timer set to the run's deadline).
    pub(crate) fn bounds<'a>(&'a self, sleep: Pin<&'a mut Sleep>) -> Bounds<'a> {
        Bounds {
            token: &self.token,
            sleep,
            deadline: self.run.deadline,
        }
    }
}
