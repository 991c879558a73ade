//! One subtask's life inside a run: the host callback, the concurrency permit, the dispatch
//! through the remote client and the negotiation hook — each bounded by the run's deadline and
//! the task's cancellation token, each turned into a [`TaskResultView`].
//!
//! A SELF_LOOP subtask is one host callback (here); a remote one goes through `remote` (with the
//! negotiation hook of `negotiation`); one naming a child workflow through `delegated`.

mod delegated;
mod negotiation;
mod remote;

use crate::context::{RunContext, TaskCtx};
use crate::interrupt::{Bounds, Guarded, Interrupt, guard, panicked};
use crate::view::{copy_name, fail_view, name_view, unnamed_view};
use a2aflow_model::{MessageContent, StepType, TaskOutcomeStatus, TaskRequest, TaskResultView};
use std::sync::atomic::Ordering;

/// What a subtask job hands back to the scheduler.
pub(crate) struct TaskDone {
    pub(crate) step: usize,
    pub(crate) index: usize,
    pub(crate) view: TaskResultView,
    pub(crate) interrupt: Option<Interrupt>,
}

/// Runs one subtask to its end.
pub(crate) async fn run_task(t: TaskCtx, request: TaskRequest) -> TaskDone {
    // Boxed so every allocation of a task stays small (large futures make the allocator
    // consolidate on every spawn; measured in benches/scheduling.rs).
    let mut view = Box::new(unnamed_view());
    let interrupt = match delegated::target_of(&t) {
        Some(target) => delegated::run_subtask(&t, target, request, &mut view).await,
        None => Box::pin(execute(&t, request, &mut view)).await,
    };
    if let Some(i) = interrupt {
        fail_view(
            &mut view,
            TaskOutcomeStatus::Canceled,
            t.run.interrupt_failure(i),
        );
        view.outputs.clear();
        view.received_messages.clear();
    }
    t.closed.store(true, Ordering::Release);
    TaskDone {
        step: t.step,
        index: t.index,
        view: *view,
        interrupt,
    }
}

/// A subtask that names no child workflow: remote, or SELF_LOOP.
async fn execute(
    t: &TaskCtx,
    request: TaskRequest,
    view: &mut TaskResultView,
) -> Option<Interrupt> {
    if request.step_type == StepType::SelfLoop {
        return self_loop(t, request, view).await;
    }
    let interrupt = remote::execute_remote(t, &request, view).await;
    name_view(view, request);
    interrupt
}

/// A SELF_LOOP subtask: `on_self_task`, nothing sent.
async fn self_loop(
    t: &TaskCtx,
    request: TaskRequest,
    view: &mut TaskResultView,
) -> Option<Interrupt> {
    let sleep = std::pin::pin!(t.run.sleep());
    let mut bounds = t.bounds(sleep);
    // The host gets the request itself, so the view's identity is copied first.
    copy_name(view, &request);
    match guard(t.run.cp.on_self_task(request), &mut bounds).await {
        Guarded::Done(Ok(result)) => view.outputs = result.outputs,
        Guarded::Done(Err(e)) => fail_view(view, TaskOutcomeStatus::Failed, e.into_failure()),
        Guarded::Panicked(m) => fail_view(
            view,
            TaskOutcomeStatus::Failed,
            panicked("on_self_task", &m),
        ),
        Guarded::Interrupted(i) => return Some(i),
    }
    None
}

/// Asks the host for a subtask's content (`on_task`) within `bounds`. A failed or panicking
/// callback is written into `view` (`Err(None)`); an interruption is returned (`Err(Some(_))`).
async fn ask_host(
    run: &RunContext,
    request: &TaskRequest,
    bounds: &mut Bounds<'_>,
    view: &mut TaskResultView,
) -> Result<MessageContent, Option<Interrupt>> {
    match guard(run.cp.on_task(request.clone()), bounds).await {
        Guarded::Done(Ok(c)) => Ok(c),
        Guarded::Done(Err(e)) => {
            fail_view(view, TaskOutcomeStatus::Failed, e.into_failure());
            Err(None)
        }
        Guarded::Panicked(m) => {
            fail_view(view, TaskOutcomeStatus::Failed, panicked("on_task", &m));
            Err(None)
        }
        Guarded::Interrupted(i) => Err(Some(i)),
    }
}
