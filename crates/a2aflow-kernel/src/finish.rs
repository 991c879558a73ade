//! The host's hooks at a run's end: the synchronous [`OnFinish`](crate::OnFinish) and the
//! asynchronous [`FinishHook`], which also sees the run's events (a persistence hook that can
//! await its write). Both are called exactly once per run, before the `close` event, in every
//! ending: success, failure, cancellation, rejection, a journal that could not start.

use crate::panic_guard::CatchUnwind;
use a2aflow_model::{Event, ExecutionResult};
use async_trait::async_trait;
use std::time::Duration;

/// The host's asynchronous finish hook. It is awaited for at most the run's cleanup grace (see
/// `RunOptions::cleanup_grace`); one that takes longer is abandoned (a warning says so) and the
/// run closes. A panic inside it is logged and ignored.
#[async_trait]
pub trait FinishHook: Send + Sync {
    /// The run ended with `result`; `events` are its events in order, up to this point (the
    /// `close` that follows is not among them), as the host's event hook left them.
    async fn finished(&self, result: &ExecutionResult, events: &[Event]);
}

/// Awaits `hook` with the run's `events`, for at most `grace`.
pub(crate) async fn call(
    hook: Option<&dyn FinishHook>,
    result: &ExecutionResult,
    events: Vec<Event>,
    grace: Duration,
) {
    let Some(hook) = hook else { return };
    // `async_trait` boxes the hook's future, so it is `Unpin`.
    let call = CatchUnwind::new(hook.finished(result, &events));
    match tokio::time::timeout(grace, call).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => tracing::warn!(%error, "the finish hook panicked; ignored"),
        Err(_) => tracing::warn!(
            grace_ms = u64::try_from(grace.as_millis()).unwrap_or(u64::MAX),
            "the finish hook did not return within the cleanup grace; abandoned"
        ),
    }
}
