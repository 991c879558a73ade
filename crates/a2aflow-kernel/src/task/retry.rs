//! The attempts of one remote subtask under its retry policy (the subtask's own `retry`, else the
//! run's default, else one attempt).
//!
//! Every attempt is a new dispatch in the logical task's one context id (the host's, the one a
//! resumed run journaled, or the one the kernel derives for the task), with a new message id, naming the earlier
//! attempts' remote tasks in `referenceTaskIds`. A failed attempt is retried when the policy
//! allows another one and retries its failure ([`RetryPolicy::retries`]); the wait before it is
//! the policy's backoff, bounded by the task's deadline and cancellation: an attempt never
//! starts after the deadline, so when the wait would end past it the task ends with the failed
//! attempt's failure. Each retry is a `task_retry` event, and each attempt's sends are journaled
//! with its number: a resumed run re-attaches to the journaled attempt and goes on from there.

use super::gate;
use super::remote::{Attempt, Dispatched, send};
use crate::context::{RunContext, TaskCtx};
use crate::interrupt::{Bounds, Graced, Guarded, guard};
use crate::journal::millis;
use a2aflow_model::event_data::TaskRetryData;
use a2aflow_model::{MessageContent, RetryPolicy, TaskRequest};
use std::hash::{BuildHasher, RandomState};
use std::time::Duration;
use tokio::time::Instant;

/// Runs the attempts of one remote subtask; gives what the last one came to and how many were
/// made.
pub(super) async fn attempts(
    t: &TaskCtx,
    request: &TaskRequest,
    content: &mut MessageContent,
    bounds: &mut Bounds<'_>,
) -> (Dispatched, u32) {
    let run = &*t.run;
    let policy = policy_of(run, t);
    let max = policy.map_or(1, |p| p.attempts.max(1));
    let journaled = run
        .durable
        .as_ref()
        .and_then(|d| d.replay().in_flight(&request.local_task_id));
    let context_id = context_of(
        run,
        request,
        content,
        journaled.map(|i| i.context_id.as_str()),
    );
    let references: Vec<String> = run.durable.as_ref().map_or_else(Vec::new, |d| {
        d.replay().earlier_attempts(&request.local_task_id).to_vec()
    });
    let first = Attempt {
        number: journaled.map_or(1, |i| i.attempt.max(1)),
        context_id: &context_id,
        references: &references,
        journaled,
    };
    let Some(policy) = policy.filter(|_| first.number < max) else {
        // No attempt after this one: it is made here, in this future (no second boxed one; the
        // attempt is not kept across the wait, so the future stays under 1,032 B).
        let (number, content) = (first.number, std::mem::take(content));
        return (
            attempt_once(t, request, content, first, bounds).await,
            number,
        );
    };
    // Boxed: the retries' state is room in this future only for the tasks that may retry.
    let retried = retried(t, request, content, policy, max, first, bounds);
    Box::pin(retried).await
}

/// The attempts from `first` on, of a subtask whose `policy` allows `max` of them.
async fn retried(
    t: &TaskCtx,
    request: &TaskRequest,
    content: &mut MessageContent,
    policy: &RetryPolicy,
    max: u32,
    first: Attempt<'_>,
    bounds: &mut Bounds<'_>,
) -> (Dispatched, u32) {
    let run = &*t.run;
    let mut references = first.references.to_vec();
    let mut number = first.number;
    let mut journaled = first.journaled;
    loop {
        // The last attempt takes the content; earlier ones send a copy.
        let sent = if number < max {
            content.clone()
        } else {
            std::mem::take(content)
        };
        let attempt = Attempt {
            number,
            context_id: first.context_id,
            references: &references,
            journaled: journaled.take(),
        };
        let dispatched = Box::pin(attempt_once(t, request, sent, attempt, bounds)).await;
        if number >= max {
            return (dispatched, number);
        }
        let Some(retry) = retry_of(policy, &dispatched, number, bounds.deadline) else {
            return (dispatched, number);
        };
        // Boxed: an event's delivery would otherwise be part of this future for the task's life.
        Box::pin(emit_retry(run, request, &retry, number, max)).await;
        if let Some(remote) = retry.remote_task_id {
            references.push(remote);
        }
        if let Some(d) = &run.durable {
            d.new_attempt(&request.local_task_id);
        }
        let wait = Box::pin(tokio::time::sleep(retry.delay));
        if let Guarded::Interrupted(i) = guard(wait, bounds).await {
            return (Graced::Interrupted(i, None), number);
        }
        number += 1;
    }
}

/// One attempt: what a resumed run journaled at the attempt's gate, else its send; then its
/// gates, parked until they settle (an answer is a follow-up within the attempt, not a retry).
async fn attempt_once(
    t: &TaskCtx,
    request: &TaskRequest,
    content: MessageContent,
    attempt: Attempt<'_>,
    bounds: &mut Bounds<'_>,
) -> Dispatched {
    // Only the attempt a resumed run journaled can have a journaled gate (a later attempt's
    // first send starts afresh).
    let resumed = match attempt.journaled {
        Some(_) => Box::pin(gate::resumed(t, request, attempt, bounds)).await,
        None => None,
    };
    // The send is boxed: inline, it would be most of this future, which then went over the
    // 1,032 B glibc serves from its thread cache (a large block costs more, and consolidates
    // the allocator's fast bins, with a thousand tasks in flight on every task).
    let first = match resumed {
        Some(resumed) => resumed,
        None => Box::pin(send(t, request, content, attempt, None, bounds)).await,
    };
    if t.run.gates.is_none() {
        // Nothing parks at a gate: the send's result is the attempt's (no settling future).
        return first;
    }
    Box::pin(gate::settle(t, request, attempt, first, bounds)).await
}

/// The subtask's own policy, else the run's default.
fn policy_of<'r>(run: &'r RunContext, t: &TaskCtx) -> Option<&'r RetryPolicy> {
    let subtask = run.step(t.step).subtasks.get(t.index)?;
    subtask.retry.as_ref().or(run.retry.as_ref())
}

/// The context id of a logical task: the host's (in its content), else the one a resumed run
/// journaled for it, else the one the kernel derives for the task (the same for every attempt
/// and driver: see `ids::task_context_id`).
fn context_of(
    run: &RunContext,
    request: &TaskRequest,
    content: &MessageContent,
    journaled: Option<&str>,
) -> String {
    match (&content.context_id, journaled) {
        (Some(id), _) => id.clone(),
        (None, Some(id)) => id.to_owned(),
        (None, None) => run.context_ids.of(&request.local_task_id),
    }
}

/// Why and when a failed attempt is sent again.
struct Retry {
    code: a2aflow_model::FailureCode,
    message: String,
    remote_task_id: Option<String>,
    delay: Duration,
}

/// The retry after attempt `number`, when it failed with a failure the policy retries and the
/// wait before the next attempt ends before `deadline`.
fn retry_of(
    policy: &RetryPolicy,
    dispatched: &Dispatched,
    number: u32,
    deadline: Instant,
) -> Option<Retry> {
    let Graced::Done(Ok(Err(failed))) = dispatched else {
        return None;
    };
    if !policy.retries(&failed.failure) {
        return None;
    }
    let delay = policy.backoff.delay(number, jitter_unit());
    if Instant::now() + delay >= deadline {
        return None;
    }
    Some(Retry {
        code: failed.failure.code.clone(),
        message: failed.failure.message.clone(),
        remote_task_id: failed.remote_task_id.clone(),
        delay,
    })
}

/// A number in `0.0..1.0` that differs from call to call (the jitter of one wait; nothing else
/// depends on it, so the process's hash seeds are random enough).
fn jitter_unit() -> f64 {
    let bits = RandomState::new().hash_one(Instant::now());
    // The top 53 bits as a fraction: exact in an f64.
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

async fn emit_retry(run: &RunContext, request: &TaskRequest, r: &Retry, number: u32, max: u32) {
    run.emit_task(&request.step_name, &request.local_task_id, || {
        TaskRetryData {
            step: request.step_name.to_string(),
            subtask_index: request.subtask_index,
            agent: request.agent.to_string(),
            attempt: number,
            max_attempts: max,
            code: r.code.clone(),
            message: r.message.clone(),
            remote_task_id: r.remote_task_id.clone(),
            delay_ms: millis(r.delay),
        }
    })
    .await;
}
