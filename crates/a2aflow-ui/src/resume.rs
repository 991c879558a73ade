//! Resuming a run from the page: the host supplies a [`Resumer`] (its agents, credentials and
//! ControlPoint, as `a2aflow runs resume` builds them); `POST /api/runs/{id}/resume` continues
//! a run that is not finished and has no live driver in this process, which then drives it
//! until it ends (or the process stops, which leaves it to the next resume).

use crate::api::State;
use crate::detail::is_finished;
use crate::routes::Body;
use a2aflow::get_execution;
use a2aflow::kernel::{EventStream, RunOptions};
use a2aflow::model::{ErrorCode, Failure};
use http::Response;
use serde_json::json;
use std::future::Future;
use std::pin::Pin;

/// What a [`Resumer`] returns: the resumed run's events, or why it could not continue
/// (`store.locked` while another driver's lease is live, `store.unknown_execution`,
/// `workflow.unknown_agent` for an agent the host does not have, …).
pub type ResumeFuture = Pin<Box<dyn Future<Output = Result<EventStream, Failure>> + Send>>;

/// Continues a journaled run in the page's process, as `a2aflow::resume_stream` does with the
/// host's agents, configuration and ControlPoint.
///
/// `options` carry the page's cancellation token and gate board for the run (so its cancel
/// button and gate answers reach it at once) and its execution id; the resumer adds what it
/// owns (resume policy, …) and must not replace the token or the board. A closure
/// `Fn(String, RunOptions) -> ResumeFuture` is a resumer.
pub trait Resumer: Send + Sync {
    /// Resumes run `execution_id`; the stream is returned once the run holds its lease.
    fn resume(&self, execution_id: String, options: RunOptions) -> ResumeFuture;
}

impl<F> Resumer for F
where
    F: Fn(String, RunOptions) -> ResumeFuture + Send + Sync,
{
    fn resume(&self, execution_id: String, options: RunOptions) -> ResumeFuture {
        self(execution_id, options)
    }
}

/// Why the page without a resumer cannot resume.
const NO_RESUMER: &str = "this page cannot resume runs: it was started without the workflow's \
                          agents; start `a2aflow ui` with --agent NAME=URL for each agent the \
                          run's workflow names (and --credentials FILE if they need them), or \
                          use `a2aflow runs resume ID --store …`";

/// `POST /api/runs/{id}/resume`: `{"resumed": "live"}` once the run holds its lease here.
pub(crate) async fn resume(state: &State, id: &str) -> Result<Response<Body>, Failure> {
    let Some(resumer) = &state.resumer else {
        return Err(Failure::new(ErrorCode::ConfigInvalid, NO_RESUMER));
    };
    let view = get_execution(state.store.as_ref(), id).await?;
    if is_finished(view.state) {
        return Err(Failure::new(
            ErrorCode::StoreInvalidAppend,
            format!(
                "run {id} has finished ({}): there is nothing to resume",
                view.state.as_str()
            ),
        ));
    }
    if state.live.contains(id) {
        return Err(Failure::new(
            ErrorCode::StoreLocked,
            format!("run {id} is driven in this process already"),
        ));
    }
    let mut options = RunOptions::default();
    state.live.track(id, &mut options);
    let mut stream = match resumer.resume(id.to_owned(), options).await {
        Ok(s) => s,
        Err(f) => {
            state.live.untrack(id);
            return Err(f);
        }
    };
    let (live, id_owned) = (state.live.clone(), id.to_owned());
    tokio::spawn(async move {
        // The events reach the store (and the page) through the journal; the stream is drained
        // so that the run is not held back.
        while stream.next().await.is_some() {}
        let result = stream.result().await;
        tracing::info!(execution_id = %id_owned, success = result.success, "resumed run ended");
        live.untrack(&id_owned);
    });
    Ok(crate::api::ok_json(&json!({"resumed": "live"})))
}
