//! The remote path of one subtask: `on_task`, the limiter, the dispatch through the remote
//! client (each attempt of it: see `retry`), and the outcome written into the view.

use super::ask_host;
use super::negotiation::KernelNegotiation;
use super::retry::attempts;
use crate::client::{
    AttachRequest, DispatchJournal, DispatchRequest, NoJournal, TaskFailure, TaskOutcome,
    project_outputs,
};
use crate::context::{RunContext, TaskCtx};
use crate::durable::TaskJournal;
use crate::events::EventEmitter;
use crate::interrupt::{Bounds, Graced, Guarded, Interrupt, guard, with_grace};
use crate::journal::TaskIntent;
use crate::view::fail_view;
use a2aflow_model::{
    ErrorCode, Failure, MessageContent, TaskOutcomeStatus, TaskRequest, TaskResultView,
};
use std::sync::atomic::AtomicU32;
use tokio::sync::OwnedSemaphorePermit;

/// What the remote client's dispatch came to.
pub(super) type Dispatched = Graced<Result<TaskOutcome, TaskFailure>>;

/// Which send of a logical task a dispatch is: its attempt, the task's context id, the earlier
/// attempts' remote tasks, and — for a resumed run — the journaled send to find again.
#[derive(Debug, Clone, Copy)]
pub(super) struct Attempt<'a> {
    /// From 1.
    pub(super) number: u32,
    pub(super) context_id: &'a str,
    /// The remote tasks of the earlier attempts, oldest first.
    pub(super) references: &'a [String],
    /// The journaled send of this attempt, when a resumed run re-attaches to it.
    pub(super) journaled: Option<&'a TaskIntent>,
}

/// A follow-up send: a message that continues the attempt's remote task in its context (a
/// gate's answer).
#[derive(Debug, Clone, Copy)]
pub(super) struct FollowUp<'a> {
    /// The remote task the message continues.
    pub(super) remote_task_id: &'a str,
}

/// Runs the remote path of one subtask; an interruption is returned for the caller to record.
pub(super) async fn execute_remote(
    t: &TaskCtx,
    request: &mut TaskRequest,
    view: &mut TaskResultView,
) -> Option<Interrupt> {
    let sleep = std::pin::pin!(t.sleep());
    let mut bounds = t.bounds(sleep);
    // A durable run takes a free slot of the limiter as soon as the host answered: the answer
    // then goes in the send's append; only a task that has to wait writes it before the wait.
    let mut taken = None;
    let acts_at_once = || match &t.run.semaphore {
        None => true,
        Some(sem) => {
            taken = sem.clone().try_acquire_owned().ok();
            taken.is_some()
        }
    };
    let mut content = match ask_host(&t.run, request, &mut bounds, view, acts_at_once).await {
        Ok(c) => c,
        Err(interrupt) => return interrupt,
    };
    let _permit = match taken {
        Some(p) => Some(p),
        None => match permit(&t.run, &mut bounds, view).await {
            Ok(p) => p,
            Err(interrupt) => return interrupt,
        },
    };
    // The content is lent: the attempts' future, boxed, then stays under the 1,032 B glibc
    // serves from its thread cache (it holds the one attempt a task without retries makes).
    let (dispatched, attempts) = Box::pin(attempts(t, request, &mut content, &mut bounds)).await;
    view.attempts = attempts;
    record(view, dispatched)
}

/// A permit of the run's remote-task limiter, when it has one. A closed limiter is written into
/// `view` (`Err(None)`); an interruption is returned (`Err(Some(_))`).
async fn permit(
    run: &RunContext,
    bounds: &mut Bounds<'_>,
    view: &mut TaskResultView,
) -> Result<Option<OwnedSemaphorePermit>, Option<Interrupt>> {
    let Some(sem) = &run.semaphore else {
        return Ok(None);
    };
    match guard(Box::pin(sem.clone().acquire_owned()), bounds).await {
        Guarded::Done(Ok(p)) => Ok(Some(p)),
        Guarded::Done(Err(_)) | Guarded::Panicked(_) => {
            // The semaphore is owned by the run and never closed while tasks run.
            let failure = Failure::new(
                ErrorCode::WorkflowExecutionFailed,
                "the remote-task limiter was closed",
            );
            fail_view(view, TaskOutcomeStatus::Failed, failure);
            Err(None)
        }
        Guarded::Interrupted(i) => Err(Some(i)),
    }
}

/// The emitter a dispatch reports its `agent_*` events through (silent without a sink).
fn emitter(t: &TaskCtx, request: &TaskRequest) -> EventEmitter {
    if !t.run.hub.enabled() {
        return EventEmitter::silent(t.closed.clone());
    }
    EventEmitter::new(
        t.run.hub.clone(),
        request.step_name.clone(),
        request.local_task_id.clone(),
        t.closed.clone(),
    )
}

/// Sends `content` (an attempt's first send, or a `follow_up` on its remote task) through the
/// remote client and waits for the outcome, with the grace period to wind down when
/// interrupted. A first send whose attempt a resumed run journaled re-attaches to it instead.
pub(super) async fn send(
    t: &TaskCtx,
    request: &TaskRequest,
    content: MessageContent,
    attempt: Attempt<'_>,
    follow_up: Option<FollowUp<'_>>,
    bounds: &mut Bounds<'_>,
) -> Dispatched {
    let run = &*t.run;
    let emitter = emitter(t, request);
    let hook = KernelNegotiation {
        run,
        token: &t.token,
        emitter: emitter.clone(),
        agent: &request.agent,
        exchanges: AtomicU32::new(0),
        attempt: attempt.number,
        deadline: t.deadline,
    };
    let task_journal;
    let journal: &dyn DispatchJournal = match &run.durable {
        Some(durable) => {
            task_journal = TaskJournal {
                durable,
                request,
                attempt: attempt.number,
            };
            &task_journal
        }
        None => &NoJournal,
    };
    // The request moves into the client's (boxed) future before the wait: built inside this
    // block, it holds no room in this future across the wait (a moved-from local still would).
    let in_flight = run
        .durable
        .as_ref()
        .zip(attempt.journaled.filter(|_| follow_up.is_none()));
    let remote_task_id = in_flight.and_then(|(d, _)| d.remote_id(&request.local_task_id));
    let dispatched = {
        let dispatch = DispatchRequest {
            execution_id: &run.execution_id,
            local_task_id: &request.local_task_id,
            agent: &request.agent,
            skill: &request.skill,
            content,
            context_id: Some(attempt.context_id),
            continues: follow_up.map(|f| f.remote_task_id),
            reference_task_ids: attempt.references,
            task: request,
            deadline: t.deadline,
            cancel: t.token.clone(),
            negotiation: &hook,
            events: emitter,
            journal,
        };
        match in_flight {
            Some((d, intent)) => run.client.reattach(AttachRequest {
                dispatch,
                context_id: &intent.context_id,
                message_id: &intent.message_id,
                remote_task_id: remote_task_id.as_deref(),
                resend: d.resend_for(&request.agent),
            }),
            None => run.client.dispatch(dispatch),
        }
    };
    with_grace(dispatched, bounds, run.grace).await
}

/// Writes what the dispatch came to into `view`; an interruption is returned.
fn record(view: &mut TaskResultView, dispatched: Dispatched) -> Option<Interrupt> {
    let first = match dispatched {
        Graced::Done(r) => r,
        Graced::Interrupted(i, late) => {
            // The client's result is dropped, except the remote identity (context id, remote
            // task id) it reported while winding down: the view keeps it.
            if let Some(Ok(r)) = late {
                let (context_id, remote_task_id) = match r {
                    Ok(o) => (o.context_id, o.remote_task_id),
                    Err(f) => (f.context_id, f.remote_task_id),
                };
                view.context_id = context_id;
                view.remote_task_id = remote_task_id;
            }
            return Some(i);
        }
    };
    match first {
        Ok(Ok(outcome)) => record_outcome(view, outcome),
        Ok(Err(failure)) => record_failure(view, failure),
        Err(m) => fail_view(
            view,
            TaskOutcomeStatus::Failed,
            Failure::new(
                ErrorCode::WorkflowExecutionFailed,
                format!("the remote client panicked: {m}"),
            ),
        ),
    }
    None
}

fn record_outcome(view: &mut TaskResultView, outcome: TaskOutcome) {
    view.context_id = outcome.context_id;
    view.remote_task_id = outcome.remote_task_id;
    view.outputs = outcome.outputs;
    view.received_messages = outcome.received_messages;
}

fn record_failure(view: &mut TaskResultView, failure: TaskFailure) {
    view.context_id = failure.context_id;
    view.remote_task_id = failure.remote_task_id;
    view.outputs = project_outputs(&failure.received_messages, false);
    view.received_messages = failure.received_messages;
    fail_view(view, TaskOutcomeStatus::Failed, failure.failure);
}
