//! One subtask's life inside a run: the host callback, the concurrency permit, the dispatch
//! through the remote client and the negotiation hook — each bounded by the run's deadline and
//! the task's cancellation token, each turned into a [`TaskResultView`].
//!
//! A SELF_LOOP subtask is one host callback (here); a remote one goes through `remote` (with the
//! negotiation hook of `negotiation`, each attempt of its retry policy by `retry`, and a gate
//! parked by `gate`); one naming a child workflow through `delegated`.

mod delegated;
mod gate;
mod negotiation;
mod remote;
mod retry;

use crate::context::{RunContext, TaskCtx};
use crate::control_point::CallbackError;
use crate::durable::{Durable, answer_of, replayed, task_key};
use crate::interrupt::{Bounds, Guarded, Interrupt, guard, panicked, remaining_ms};
use crate::journal::{CallbackAnswered, JournalRecord};
use crate::view::{copy_name, fail_view, name_view, unnamed_view};
use a2aflow_model::{MessageContent, StepType, TaskOutcomeStatus, TaskRequest, TaskResultView};
use std::sync::atomic::Ordering;
use tokio::time::Instant;

/// What a subtask job hands back to the scheduler.
pub(crate) struct TaskDone {
    pub(crate) step: usize,
    pub(crate) index: usize,
    /// Boxed: a job's result is moved half a dozen times on its way to the executor (the job's
    /// output, the runtime's task cell, the join set, the wake-up); the view is most of it.
    pub(crate) view: Box<TaskResultView>,
    pub(crate) interrupt: Option<Interrupt>,
}

/// Runs one subtask to its end.
pub(crate) async fn run_task(t: TaskCtx, request: Box<TaskRequest>) -> TaskDone {
    if let Some(d) = &t.run.durable
        && let Some(view) = d.replay().task(&request.local_task_id)
    {
        // A resumed run: the task finished before the restart and keeps its result.
        t.closed.store(true, Ordering::Release);
        return TaskDone {
            step: t.step,
            index: t.index,
            view: Box::new(view.clone()),
            interrupt: None,
        };
    }
    // The view is boxed (it goes to the executor in its box: see `TaskDone`). `execute` is
    // part of this future, which stays under the 1,032 B glibc serves from its thread cache
    // (larger blocks make the allocator consolidate on every spawn; see benches/scheduling.rs).
    let mut view = Box::new(unnamed_view());
    let interrupt = match delegated::target_of(&t) {
        Some(target) => delegated::run_subtask(&t, target, *request, &mut view).await,
        None => execute(&t, request, &mut view).await,
    };
    let interrupt = own_timeout(&t, interrupt, &mut view);
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
    if interrupt.is_none()
        && let Some(d) = &t.run.durable
    {
        journal_finished(d, &view).await;
    }
    TaskDone {
        step: t.step,
        index: t.index,
        view,
        interrupt,
    }
}

/// A task stopped by its step's or its own `timeout` (before the run's deadline) fails alone:
/// `workflow.timeout` naming it, and no interruption of the run. Any other interruption is
/// passed on.
fn own_timeout(
    t: &TaskCtx,
    interrupt: Option<Interrupt>,
    view: &mut TaskResultView,
) -> Option<Interrupt> {
    let limit = match (interrupt, t.limit) {
        (Some(Interrupt::Timeout), Some(limit)) if Instant::now() < t.run.deadline => limit,
        _ => return interrupt,
    };
    let failure = t.timeout_failure(limit, &view.task_id);
    fail_view(view, TaskOutcomeStatus::Failed, failure);
    view.outputs.clear();
    None
}

/// `request` as a callback gets it: with the time left within `bounds`.
fn with_remaining(mut request: TaskRequest, bounds: &Bounds<'_>) -> TaskRequest {
    request.remaining_ms = remaining_ms(bounds.deadline);
    request
}

/// Journals a task's end (a store failure stops the run; see `Durable::write`).
async fn journal_finished(d: &Durable, view: &TaskResultView) {
    Box::pin(d.task_finished(view)).await;
}

/// A subtask that names no child workflow: remote, or SELF_LOOP.
async fn execute(
    t: &TaskCtx,
    mut request: Box<TaskRequest>,
    view: &mut TaskResultView,
) -> Option<Interrupt> {
    if request.step_type == StepType::SelfLoop {
        return Box::pin(self_loop(t, *request, view)).await;
    }
    let interrupt = remote::execute_remote(t, &mut request, view).await;
    name_view(view, *request);
    interrupt
}

/// A SELF_LOOP subtask: `on_self_task`, nothing sent.
async fn self_loop(
    t: &TaskCtx,
    request: TaskRequest,
    view: &mut TaskResultView,
) -> Option<Interrupt> {
    let sleep = std::pin::pin!(t.sleep());
    let mut bounds = t.bounds(sleep);
    // The host gets the request itself, so the view's identity is copied first.
    copy_name(view, &request);
    let request = with_remaining(request, &bounds);
    if let Some(d) = &t.run.durable {
        return Box::pin(journaled_self_task(t, d, request, view, &mut bounds)).await;
    }
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

/// A SELF_LOOP subtask of a durable run: the journaled answer when there is one, otherwise the
/// host's, journaled before it is used.
async fn journaled_self_task(
    t: &TaskCtx,
    d: &Durable,
    request: TaskRequest,
    view: &mut TaskResultView,
    bounds: &mut Bounds<'_>,
) -> Option<Interrupt> {
    let answer = match d.replay().on_self_task(&request.local_task_id) {
        Some(a) => replayed(a),
        None => {
            let key = task_key(&request);
            let answer = match guard(t.run.cp.on_self_task(request), bounds).await {
                Guarded::Done(r) => r.map_err(CallbackError::into_failure),
                Guarded::Panicked(m) => {
                    // A panic gave no answer: not journaled (a resumed run asks again).
                    fail_view(
                        view,
                        TaskOutcomeStatus::Failed,
                        panicked("on_self_task", &m),
                    );
                    return None;
                }
                Guarded::Interrupted(i) => return Some(i),
            };
            let journaled = CallbackAnswered::OnSelfTask {
                key,
                answer: answer_of(&answer),
            };
            if let Err(f) = d.answered(journaled).await {
                fail_view(view, TaskOutcomeStatus::Failed, f);
                return None;
            }
            answer
        }
    };
    match answer {
        Ok(result) => view.outputs = result.outputs,
        Err(f) => fail_view(view, TaskOutcomeStatus::Failed, f),
    }
    None
}

/// Asks the host for a subtask's content (`on_task`) within `bounds`. A failed or panicking
/// callback is written into `view` (`Err(None)`); an interruption is returned (`Err(Some(_))`).
/// `acts_at_once` tells a durable run, once the answer is in, whether nothing will wait between
/// it and what the task does with it (see [`journaled_on_task`]).
async fn ask_host(
    run: &RunContext,
    request: &mut TaskRequest,
    bounds: &mut Bounds<'_>,
    view: &mut TaskResultView,
    acts_at_once: impl FnOnce() -> bool,
) -> Result<MessageContent, Option<Interrupt>> {
    if let Some(d) = &run.durable {
        return Box::pin(journaled_on_task(
            run,
            d,
            request,
            bounds,
            view,
            acts_at_once,
        ))
        .await;
    }
    match lend(run, request, bounds).await {
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

/// The host's answer to `request` (`on_task_ref`: the request is lent, with the time left within
/// `bounds`, and goes on as it was built).
async fn lend(
    run: &RunContext,
    request: &mut TaskRequest,
    bounds: &mut Bounds<'_>,
) -> Guarded<Result<MessageContent, CallbackError>> {
    let built = std::mem::replace(&mut request.remaining_ms, remaining_ms(bounds.deadline));
    let answer = guard(run.cp.on_task_ref(request), bounds).await;
    // The time left was the host's; the kernel's request goes on with the value it was built with.
    request.remaining_ms = built;
    answer
}

/// `on_task` in a durable run: the journaled answer when there is one, otherwise the host's,
/// journaled before the kernel acts on it: held for the task's next write when `acts_at_once`
/// says nothing waits in between, written at once otherwise.
async fn journaled_on_task(
    run: &RunContext,
    d: &Durable,
    request: &mut TaskRequest,
    bounds: &mut Bounds<'_>,
    view: &mut TaskResultView,
    acts_at_once: impl FnOnce() -> bool,
) -> Result<MessageContent, Option<Interrupt>> {
    let answer = match d.replay().on_task(&request.local_task_id) {
        Some(a) => replayed(a),
        None => {
            let answer = match lend(run, request, bounds).await {
                Guarded::Done(r) => r.map_err(CallbackError::into_failure),
                Guarded::Panicked(m) => {
                    // A panic gave no answer: not journaled (a resumed run asks again).
                    fail_view(view, TaskOutcomeStatus::Failed, panicked("on_task", &m));
                    return Err(None);
                }
                Guarded::Interrupted(i) => return Err(Some(i)),
            };
            let journaled = CallbackAnswered::OnTask {
                key: task_key(request),
                answer: answer_of(&answer),
            };
            if acts_at_once() {
                // Nothing comes between the answer and what the task does with it (the send,
                // or its failure): the answer goes in that write's append, ahead of it.
                d.hold_for(
                    &request.local_task_id,
                    JournalRecord::CallbackAnswered(journaled),
                );
            } else if let Err(f) = d.answered(journaled).await {
                // A limiter's wait may be long: the answer is not kept in memory across it.
                fail_view(view, TaskOutcomeStatus::Failed, f);
                return Err(None);
            }
            answer
        }
    };
    answer.map_err(|f| {
        fail_view(view, TaskOutcomeStatus::Failed, f);
        None
    })
}
