//! A parked gate: when the run parks gates ([`crate::GatePolicy::Park`]) and a dispatch ended
//! at INPUT_REQUIRED or AUTH_REQUIRED, the task announces `task_gated`, opens its gate on the
//! run's board and waits — for the host's answer (a follow-up on the same remote task and
//! context, whose result may gate again), its decline (the host's code, a best-effort
//! CancelTask), cancellation (a best-effort CancelTask) or the deadline (the gate's own code).

use super::remote::{Attempt, Dispatched, FollowUp, send};
use crate::client::{TaskFailure, TaskOutcome};
use crate::context::TaskCtx;
use crate::durable::GateState;
use crate::gates::{GateBoard, GateReply};
use crate::interrupt::{Bounds, Graced, Guarded, Interrupt, guard};
use crate::journal::JournalRecord;
use a2aflow_model::{
    ErrorCode, Failure, FailureCode, Gate, MessageContent, OpenGate, ReceivedMessage, TaskRequest,
};
use std::time::Duration;
use tokio::time::Instant;

/// How one wait at a gate ended.
enum Settled {
    /// The host answered: the follow-up's result.
    Answered(Dispatched),
    /// The task ends here with this result.
    Ended(Dispatched),
}

/// Parks `first` while it is a gate and the run parks gates; returns what the task comes to.
pub(super) async fn settle(
    t: &TaskCtx,
    request: &TaskRequest,
    attempt: Attempt<'_>,
    first: Dispatched,
    bounds: &mut Bounds<'_>,
) -> Dispatched {
    let Some(board) = t.run.gates.clone() else {
        return first;
    };
    let mut dispatched = first;
    // The earlier rounds: the task's result keeps all of their evidence.
    let mut earlier = Earlier::default();
    loop {
        let Some((gate, failure)) = gated(&dispatched) else {
            return with_earlier(dispatched, earlier);
        };
        let open = open_gate(request, gate, failure);
        let parked = park(t, request, attempt, &board, open, failure.clone(), bounds);
        match Box::pin(parked).await {
            Settled::Answered(next) => {
                if let Graced::Done(Ok(Err(f))) = dispatched {
                    earlier.add(f);
                }
                dispatched = next;
            }
            Settled::Ended(end) => return with_earlier(end, earlier),
        }
    }
}

/// The gate a dispatch stopped at, with its failure.
fn gated(dispatched: &Dispatched) -> Option<(Gate, &TaskFailure)> {
    match dispatched {
        Graced::Done(Ok(Err(f))) => f.failure.gate().map(|g| (g, f)),
        _ => None,
    }
}

/// What the task's gate is: its identity and the text of the agent's last message.
fn open_gate(request: &TaskRequest, gate: Gate, failure: &TaskFailure) -> OpenGate {
    let text = failure
        .received_messages
        .iter()
        .rev()
        .find_map(|r| r.message.as_ref())
        .map(|m| {
            m.parts
                .iter()
                .filter_map(|p| p.as_text())
                .collect::<Vec<_>>()
                .join("\n")
        });
    OpenGate {
        step: request.step_name.to_string(),
        local_task_id: request.local_task_id.to_string(),
        agent: request.agent.to_string(),
        gate,
        context_id: failure.context_id.clone(),
        remote_task_id: failure.remote_task_id.clone(),
        text,
    }
}

/// One wait at an open gate.
async fn park(
    t: &TaskCtx,
    request: &TaskRequest,
    attempt: Attempt<'_>,
    board: &GateBoard,
    open: OpenGate,
    failure: TaskFailure,
    bounds: &mut Bounds<'_>,
) -> Settled {
    let run = &t.run;
    let opened = JournalRecord::GateOpened {
        gate: open.clone(),
        evidence: failure.received_messages.clone(),
    };
    if let Err(f) = journal(t, opened).await {
        return Settled::Ended(ended(f, failure));
    }
    run.emit_task(&request.step_name, &request.local_task_id, || open.clone())
        .await;
    let mut ticket = board.open(&run.execution_id, open.clone());
    let parked = run.suspension.as_ref().map(|s| s.park());
    let reply = guard(&mut ticket.reply, bounds).await;
    if matches!(reply, Guarded::Interrupted(_)) && run.is_suspended() {
        // A reply that arrived as the run suspended is journaled for the resume to act on.
        let late = ticket.reply.try_recv().ok();
        drop(ticket);
        if let Some(reply) = late {
            let _ = journal(t, replied(&open, reply)).await;
        }
        drop(parked);
        return Settled::Ended(Graced::Interrupted(Interrupt::Cancelled, None));
    }
    drop(ticket);
    drop(parked);
    match reply {
        Guarded::Done(Ok(GateReply::Answer(content))) => {
            let answered = JournalRecord::GateAnswered {
                local_task_id: open.local_task_id.clone(),
                content: content.clone(),
            };
            if let Err(f) = journal(t, answered).await {
                return Settled::Ended(ended(f, failure));
            }
            Settled::Answered(answer(t, request, attempt, &open, content, failure, bounds).await)
        }
        Guarded::Done(Ok(GateReply::Decline { code, reason })) => {
            let declined_record = JournalRecord::GateDeclined {
                local_task_id: open.local_task_id.clone(),
                code: code.clone(),
                reason: reason.clone(),
            };
            if let Err(f) = journal(t, declined_record).await {
                return Settled::Ended(ended(f, failure));
            }
            cancel_remote(t, &open).await;
            Settled::Ended(ended(declined(&open, code, reason), failure))
        }
        Guarded::Interrupted(Interrupt::Timeout) => {
            Settled::Ended(ended(expired(&open, run.timeout), failure))
        }
        Guarded::Interrupted(i) => {
            cancel_remote(t, &open).await;
            Settled::Ended(Graced::Interrupted(i, Some(Ok(Err(failure)))))
        }
        // The board keeps the sender until it replies; a closed channel means the board is gone.
        Guarded::Done(Err(_)) | Guarded::Panicked(_) => Settled::Ended(ended(
            Failure::new(
                ErrorCode::WorkflowExecutionFailed,
                format!(
                    "the gate of task {} closed without an answer",
                    open.local_task_id
                ),
            ),
            failure,
        )),
    }
}

/// The journal record of the host's `reply` to `open`.
fn replied(open: &OpenGate, reply: GateReply) -> JournalRecord {
    let local_task_id = open.local_task_id.clone();
    match reply {
        GateReply::Answer(content) => JournalRecord::GateAnswered {
            local_task_id,
            content,
        },
        GateReply::Decline { code, reason } => JournalRecord::GateDeclined {
            local_task_id,
            code,
            reason,
        },
    }
}

/// Sends the host's answer to `open` as a follow-up on its remote task, in its context.
async fn answer(
    t: &TaskCtx,
    request: &TaskRequest,
    attempt: Attempt<'_>,
    open: &OpenGate,
    content: MessageContent,
    gate: TaskFailure,
    bounds: &mut Bounds<'_>,
) -> Dispatched {
    let Some(remote_task_id) = open.remote_task_id.as_deref() else {
        return ended(no_task_to_continue(open), gate);
    };
    if open.gate == Gate::AuthRequired
        && let Some(end) = refresh_credentials(t, open, &gate, bounds).await
    {
        return end;
    }
    let follow_up = FollowUp { remote_task_id };
    // The answer continues the gated task in the attempt's context (the gate's own, which the
    // task's one context id is).
    let attempt = Attempt {
        context_id: open.context_id.as_deref().unwrap_or(attempt.context_id),
        journaled: None,
        ..attempt
    };
    send(t, request, content, attempt, Some(follow_up), bounds).await
}

/// Before the answer to an AUTH_REQUIRED gate: the agent's credentials refreshed, within the
/// task's bounds. `None` when the answer may go; otherwise how the task ends (the refresh's
/// failure, the gate's own code at the deadline, or the interruption after a best-effort
/// CancelTask), with the answer not sent.
async fn refresh_credentials(
    t: &TaskCtx,
    open: &OpenGate,
    gate: &TaskFailure,
    bounds: &mut Bounds<'_>,
) -> Option<Dispatched> {
    let refresh = std::pin::pin!(t.run.client.refresh_credentials(&open.agent));
    let failure = match guard(refresh, bounds).await {
        Guarded::Done(Ok(())) => return None,
        Guarded::Done(Err(f)) => f,
        Guarded::Panicked(message) => Failure::new(
            ErrorCode::WorkflowExecutionFailed,
            format!(
                "refreshing the credentials of agent {} panicked: {message}",
                open.agent
            ),
        ),
        Guarded::Interrupted(Interrupt::Timeout) => expired(open, t.run.timeout),
        Guarded::Interrupted(i) => {
            cancel_remote(t, open).await;
            return Some(Graced::Interrupted(i, Some(Ok(Err(gate.clone())))));
        }
    };
    Some(ended(with_gate_details(failure, open), gate.clone()))
}

/// Journals `record` in a durable run (a store failure stops the run; see `Durable::write`).
async fn journal(t: &TaskCtx, record: JournalRecord) -> Result<(), Failure> {
    match &t.run.durable {
        Some(d) => Box::pin(d.write(vec![record])).await,
        None => Ok(()),
    }
}

/// What a resumed run takes from a task's journaled gate instead of sending it again: an open
/// gate parks again (or fails, with the Fail policy) with its journaled evidence; an answer not
/// yet sent is sent; a decline ends the task. `None`: the task's last round was no gate.
pub(super) async fn resumed(
    t: &TaskCtx,
    request: &TaskRequest,
    attempt: Attempt<'_>,
    bounds: &mut Bounds<'_>,
) -> Option<Dispatched> {
    let state = t
        .run
        .durable
        .as_ref()?
        .replay()
        .gate(&request.local_task_id)?
        .clone();
    let at_gate = |gate: &OpenGate, evidence: Vec<ReceivedMessage>| TaskFailure {
        failure: Failure::new(
            gate.gate.code(),
            format!("task {} waits at a gate", gate.local_task_id),
        )
        .with_gate(gate.gate),
        context_id: gate.context_id.clone(),
        remote_task_id: gate.remote_task_id.clone(),
        received_messages: evidence,
    };
    Some(match state {
        GateState::Open { gate, evidence } => Graced::Done(Ok(Err(at_gate(&gate, evidence)))),
        GateState::Answered { gate, content } => {
            let failure = at_gate(&gate, Vec::new());
            answer(t, request, attempt, &gate, content, failure, bounds).await
        }
        GateState::Declined { gate, code, reason } => {
            cancel_remote(t, &gate).await;
            ended(declined(&gate, code, reason), at_gate(&gate, Vec::new()))
        }
    })
}

/// The task ends with `failure`, keeping the gate's remote identity and evidence.
fn ended(failure: Failure, gate: TaskFailure) -> Dispatched {
    Graced::Done(Ok(Err(TaskFailure { failure, ..gate })))
}

/// The host's decline.
fn declined(open: &OpenGate, code: FailureCode, reason: String) -> Failure {
    with_gate_details(Failure::coded(code, reason), open)
}

/// The deadline passed at the gate: the gate's own code.
fn expired(open: &OpenGate, timeout: Duration) -> Failure {
    let message = format!(
        "task {} on agent {} still waited at its {} gate when the run's deadline of {} ms passed",
        open.local_task_id,
        open.agent,
        gate_name(open.gate),
        timeout.as_millis()
    );
    with_gate_details(Failure::new(open.gate.expired_code(), message), open)
}

/// An answer to a gate whose remote task the agent never named: nothing to continue.
fn no_task_to_continue(open: &OpenGate) -> Failure {
    let message = format!(
        "task {} on agent {} cannot be answered: the agent named no remote task to continue",
        open.local_task_id, open.agent
    );
    with_gate_details(
        Failure::new(ErrorCode::A2aInvalidAgentResponse, message),
        open,
    )
}

fn gate_name(gate: Gate) -> &'static str {
    match gate {
        Gate::AuthRequired => "AUTH_REQUIRED",
        _ => "INPUT_REQUIRED",
    }
}

fn with_gate_details(f: Failure, open: &OpenGate) -> Failure {
    let f = f
        .with_detail("agent", open.agent.as_str())
        .with_detail("localTaskId", open.local_task_id.as_str());
    match &open.remote_task_id {
        Some(id) => f.with_detail("remoteTaskId", id.as_str()),
        None => f,
    }
}

/// A best-effort CancelTask for the gate's remote task, bounded by the cleanup grace.
async fn cancel_remote(t: &TaskCtx, open: &OpenGate) {
    let Some(remote_task_id) = &open.remote_task_id else {
        return;
    };
    let deadline = Instant::now() + t.run.grace;
    let cancel = t
        .run
        .client
        .cancel_remote(&open.agent, remote_task_id, deadline);
    match tokio::time::timeout_at(deadline, cancel).await {
        Ok(Ok(())) => {}
        Ok(Err(f)) => tracing::warn!(code = %f.code, error = %f.message, "gate cancel failed"),
        Err(_) => tracing::warn!("gate cancel timed out"),
    }
}

/// What the rounds before the last one of a gated task leave to its result.
#[derive(Default)]
struct Earlier {
    /// Their evidence, oldest first.
    evidence: Vec<ReceivedMessage>,
    /// The logical task's context id and remote task (the first round's).
    context_id: Option<String>,
    remote_task_id: Option<String>,
}

impl Earlier {
    fn add(&mut self, round: TaskFailure) {
        self.context_id = self.context_id.take().or(round.context_id);
        self.remote_task_id = self.remote_task_id.take().or(round.remote_task_id);
        self.evidence.extend(round.received_messages);
    }

    /// `later` after the earlier rounds' evidence.
    fn before(&self, mut later: Vec<ReceivedMessage>) -> Vec<ReceivedMessage> {
        let mut all = self.evidence.clone();
        all.append(&mut later);
        all
    }
}

/// `dispatched` with the earlier rounds' evidence first, and their identity where it names none
/// (an answer that the agent answers with a bare message).
fn with_earlier(dispatched: Dispatched, earlier: Earlier) -> Dispatched {
    if earlier.evidence.is_empty() && earlier.context_id.is_none() {
        return dispatched;
    }
    match dispatched {
        Graced::Done(Ok(Ok(o))) => Graced::Done(Ok(Ok(TaskOutcome {
            received_messages: earlier.before(o.received_messages),
            context_id: o.context_id.or(earlier.context_id),
            remote_task_id: o.remote_task_id.or(earlier.remote_task_id),
            ..o
        }))),
        Graced::Done(Ok(Err(f))) => Graced::Done(Ok(Err(TaskFailure {
            received_messages: earlier.before(f.received_messages),
            context_id: f.context_id.or(earlier.context_id),
            remote_task_id: f.remote_task_id.or(earlier.remote_task_id),
            ..f
        }))),
        other => other,
    }
}
