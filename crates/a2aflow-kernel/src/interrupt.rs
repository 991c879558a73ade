//! Why work stops early, and the two guards every wait of a run goes through: [`guard`] (a
//! callback, dropped on interruption) and [`with_grace`] (work that may wind down first).

use crate::panic_guard::CatchUnwind;
use a2aflow_model::{ErrorCode, Failure};
use serde_json::json;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;

/// Why a piece of work stopped before it finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Interrupt {
    /// The run's deadline passed.
    Timeout,
    /// The task's token fired (run cancelled, consumer gone, ANY_SUCCESS loser).
    Cancelled,
}

impl Interrupt {
    pub(crate) fn failure(self, timeout_ms: u128) -> Failure {
        match self {
            Interrupt::Timeout => Failure::new(
                ErrorCode::WorkflowTimeout,
                format!("the run's deadline of {timeout_ms} ms passed"),
            )
            .with_detail("timeoutMs", json!(timeout_ms)),
            Interrupt::Cancelled => {
                Failure::new(ErrorCode::WorkflowCancelled, "the run was cancelled")
            }
        }
    }
}

/// What bounds one piece of work: its cancellation token, the run's deadline and one timer set
/// to it (made once per piece of work and reused by each of its waits).
pub(crate) struct Bounds<'a> {
    pub(crate) token: &'a CancellationToken,
    pub(crate) sleep: Pin<&'a mut Sleep>,
    pub(crate) deadline: Instant,
}

impl Bounds<'_> {
    /// What has stopped the work by now, if anything.
    fn interrupted(&self) -> Option<Interrupt> {
        interrupted(self.token, self.deadline)
    }
}

/// The whole milliseconds left until `deadline` (0 once it passed).
pub(crate) fn remaining_ms(deadline: Instant) -> u64 {
    let left = deadline.saturating_duration_since(Instant::now());
    u64::try_from(left.as_millis()).unwrap_or(u64::MAX)
}

/// The outcome of a guarded callback.
pub(crate) enum Guarded<T> {
    Done(T),
    Panicked(String),
    Interrupted(Interrupt),
}

impl<T> Guarded<T> {
    /// The same outcome with a finished value mapped by `f`.
    pub(crate) fn map<U>(self, f: impl FnOnce(T) -> U) -> Guarded<U> {
        match self {
            Guarded::Done(v) => Guarded::Done(f(v)),
            Guarded::Panicked(m) => Guarded::Panicked(m),
            Guarded::Interrupted(i) => Guarded::Interrupted(i),
        }
    }
}

/// Runs `fut` until it finishes, the token fires or the deadline passes; `fut` is not polled at
/// all when either already happened. A result that arrives when the token has fired or the
/// deadline has passed is dropped.
pub(crate) async fn guard<F: Future + Unpin>(fut: F, b: &mut Bounds<'_>) -> Guarded<F::Output> {
    // Work is never started once the run is over: a callback is not even called when the token
    // fired (e.g. inside the event callback that announced this very work) or the deadline passed.
    if let Some(i) = b.interrupted() {
        return Guarded::Interrupted(i);
    }
    let r = tokio::select! {
        biased;
        r = CatchUnwind::new(fut) => Some(r),
        _ = b.token.cancelled() => None,
        _ = b.sleep.as_mut() => None,
    };
    if let Some(i) = b.interrupted() {
        return Guarded::Interrupted(i);
    }
    match r {
        Some(Ok(v)) => Guarded::Done(v),
        Some(Err(m)) => Guarded::Panicked(m),
        None => Guarded::Interrupted(Interrupt::Timeout),
    }
}

/// What has stopped the work of `token` by now, if anything.
pub(crate) fn interrupted(token: &CancellationToken, deadline: Instant) -> Option<Interrupt> {
    if token.is_cancelled() {
        Some(Interrupt::Cancelled)
    } else if Instant::now() >= deadline {
        Some(Interrupt::Timeout)
    } else {
        None
    }
}

/// The failure of a host callback (`what`) that panicked with `message`.
pub(crate) fn panicked(what: &str, message: &str) -> Failure {
    Failure::new(
        ErrorCode::WorkflowCallbackPanicked,
        format!("{what} panicked: {message}"),
    )
}

/// What became of work that gets a grace period when it is interrupted.
pub(crate) enum Graced<T> {
    /// It finished first (`Err` = its panic message).
    Done(Result<T, String>),
    /// The token fired or the deadline passed. The token has been cancelled (stopping the work's
    /// own subtree) and the work given the grace period to wind down (e.g. a best-effort remote
    /// cancel); what it returned by then, if anything, is here — never to be forwarded as a
    /// result.
    Interrupted(Interrupt, Option<Result<T, String>>),
}

/// Runs `fut` until it finishes, the token fires or the deadline passes; on an interruption,
/// cancels the token and waits at most `grace` for `fut` to wind down.
pub(crate) async fn with_grace<F: Future + Unpin>(
    fut: F,
    b: &mut Bounds<'_>,
    grace: Duration,
) -> Graced<F::Output> {
    let mut fut = CatchUnwind::new(fut);
    let first = tokio::select! {
        biased;
        r = &mut fut => Some(r),
        _ = b.token.cancelled() => None,
        _ = b.sleep.as_mut() => None,
    };
    let i = b.interrupted();
    let late = match (first, i) {
        (Some(r), None) => return Graced::Done(r),
        (Some(r), Some(_)) => Some(r),
        (None, _) => None,
    };
    b.token.cancel();
    let late = match late {
        Some(r) => Some(r),
        // Boxed: the grace period's timer is the rare path; inline, its room (and a second copy
        // of the result) would be part of every dispatch's future.
        None => Box::pin(tokio::time::timeout(grace, fut)).await.ok(),
    };
    Graced::Interrupted(i.unwrap_or(Interrupt::Timeout), late)
}
