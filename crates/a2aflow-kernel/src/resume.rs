//! [`resume`]: a journaled run continued by a new driver.

use crate::client::RemoteClient;
use crate::control_point::ControlPoint;
use crate::durable::{Driving, Durable, Replay, default_owner};
use crate::journal::{JournalRecord, RunStore, wall_clock_ms};
use crate::runner::{
    EventStream, RunInput, RunOptions, RunSpec, Source, channel_run, root_sink, run_with_sink,
    spawned,
};
use a2aflow_model::{ErrorCode, ExecutionResult, Failure};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// How many stored events one read returns while the next event's `seq` is looked for.
const EVENT_PAGE: usize = 1024;

/// Continues the journaled run `execution_id` of `store` and returns its result.
///
/// * A run that finished returns its journaled result; nothing is asked or sent.
/// * Otherwise this driver takes the run's lease (`store.locked` while another driver holds it),
///   rebuilds the workflow from the journal (`store.workflow_mismatch` when its hash no longer
///   matches) and continues it with the deadline it started with: finished steps and tasks keep
///   their journaled results, journaled host answers are reused (the host is not asked twice),
///   each task sent and not finished is found again through [`RemoteClient::reattach`] (resent
///   only where `options.resume_policy` allows it), a task whose content was answered but never
///   sent is dispatched, and journaled cancels not yet sent are sent. A run cancelled through its
///   journal (a run-level `CancelRequested`) cancels its in-flight work and ends cancelled.
///
/// `options` supplies what the journal does not keep (event sink, `on_finish`, catalog, lease
/// owner, resume policy); its timeout, execution id and store are taken from the journal and
/// the arguments. An unknown id is `store.unknown_execution`.
pub async fn resume(
    execution_id: &str,
    store: Arc<dyn RunStore>,
    control_point: Arc<dyn ControlPoint>,
    client: Arc<dyn RemoteClient>,
    options: RunOptions,
) -> Result<ExecutionResult, Failure> {
    let sink = root_sink(&options);
    match prepare(execution_id, store, control_point, client, options).await? {
        Prepared::Finished(result) => Ok(result),
        Prepared::Ready {
            source,
            spec,
            durable,
        } => Ok(spawned(run_with_sink(source, *spec, sink, None, Some(durable))).await),
    }
}

/// [`resume`] with the events through a bounded channel, as [`crate::run_stream`] delivers
/// them (a finished run's stream has no events; its result is the journaled one). Errors before
/// the run continues (unknown id, lock, hash) are returned at once. Must be called from within
/// a tokio runtime.
pub async fn resume_stream(
    execution_id: &str,
    store: Arc<dyn RunStore>,
    control_point: Arc<dyn ControlPoint>,
    client: Arc<dyn RemoteClient>,
    mut options: RunOptions,
) -> Result<EventStream, Failure> {
    let buffer = options.event_buffer;
    let cancel = options.cancel.child_token();
    options.cancel = cancel.clone();
    Ok(
        match prepare(execution_id, store, control_point, client, options).await? {
            Prepared::Finished(result) => channel_run(buffer, cancel, |_| async move { result }),
            Prepared::Ready {
                source,
                spec,
                durable,
            } => channel_run(buffer, cancel, |sink| {
                run_with_sink(source, *spec, sink, None, Some(durable))
            }),
        },
    )
}

/// A journaled run: finished, or ready to be driven on.
enum Prepared {
    Finished(ExecutionResult),
    Ready {
        source: Source,
        // Boxed: a run spec (its options) is much larger than the finished variant.
        spec: Box<RunSpec>,
        durable: Arc<Durable>,
    },
}

async fn prepare(
    execution_id: &str,
    store: Arc<dyn RunStore>,
    cp: Arc<dyn ControlPoint>,
    client: Arc<dyn RemoteClient>,
    mut options: RunOptions,
) -> Result<Prepared, Failure> {
    if let Some(result) = store.load(execution_id).await?.finished() {
        return Ok(Prepared::Finished(result.clone()));
    }
    let owner = options.lease_owner.clone().unwrap_or_else(default_owner);
    let lease = store.acquire(execution_id, &owner).await?;
    // Another driver may have gone on, or finished and released the lease, between that read
    // and the lease: the run goes on from the journal read under the lease.
    let journal = match store.load(execution_id).await {
        Ok(journal) => journal,
        Err(e) => {
            let _ = store.release(lease).await;
            return Err(e.into());
        }
    };
    if let Some(result) = journal.finished() {
        let _ = store.release(lease).await;
        return Ok(Prepared::Finished(result.clone()));
    }
    let started = match journal.started() {
        Ok(started) => started.clone(),
        Err(e) => {
            let _ = store.release(lease).await;
            return Err(e.into());
        }
    };
    let workflow = match started.workflow() {
        Ok(w) => w,
        Err(e) => {
            let _ = store.release(lease).await;
            return Err(e.into());
        }
    };
    let next_event_seq = match next_event_seq(&*store, execution_id).await {
        Ok(n) => n,
        Err(e) => {
            let _ = store.release(lease).await;
            return Err(e);
        }
    };
    let durable = Durable::driving(
        Driving {
            store,
            execution_id: execution_id.to_owned(),
            lease,
            replay: Replay::of(&journal),
            policy: options.resume_policy.clone(),
            next_event_seq,
            journal_seen: journal.entries.last().map_or(0, |e| e.seq + 1),
        },
        &options.cancel,
    );
    let deadline = remaining(started.deadline_ms);
    send_pending_cancels(&durable, &*client, Instant::now() + deadline).await;
    if durable.replay().cancel_run() {
        durable.stop.cancel();
    }
    started.options.apply_to(&mut options);
    options.execution_id = Some(execution_id.to_owned());
    options.timeout = deadline;
    options.cancel = durable.stop_token();
    options.store = None;
    let spec = RunSpec {
        input: RunInput {
            runtime_intent: started.runtime_intent,
        },
        cp,
        client,
        options,
    };
    Ok(Prepared::Ready {
        source: Source::Raw(Arc::new(workflow)),
        spec: Box::new(spec),
        durable,
    })
}

/// What is left of a run whose absolute deadline is `deadline_ms` (zero once it passed).
fn remaining(deadline_ms: u64) -> Duration {
    Duration::from_millis(deadline_ms.saturating_sub(wall_clock_ms()))
}

/// The `seq` after the last event `store` holds for the run.
async fn next_event_seq(store: &dyn RunStore, execution_id: &str) -> Result<u64, Failure> {
    let mut after = None;
    loop {
        let page = store.events(execution_id, after, EVENT_PAGE).await?;
        let Some(last) = page.last() else {
            return Ok(after.map_or(0, |s| s + 1));
        };
        after = Some(last.seq);
        if page.len() < EVENT_PAGE {
            return Ok(last.seq + 1);
        }
    }
}

/// Sends every journaled cancel that was not sent (and, for a cancelled run, one per in-flight
/// remote task); each one sent is journaled `CancelSent`. A cancel the client cannot send stays
/// pending for the next resume.
async fn send_pending_cancels(durable: &Durable, client: &dyn RemoteClient, deadline: Instant) {
    for c in durable.replay().pending_cancels() {
        let sent = tokio::time::timeout_at(
            deadline,
            client.cancel_remote(&c.agent, &c.remote_task_id, deadline),
        )
        .await
        .unwrap_or_else(|_| {
            Err(Failure::new(
                ErrorCode::WorkflowTimeout,
                "the run's deadline passed before the cancel was sent",
            ))
        });
        match sent {
            Ok(()) => {
                let record = JournalRecord::CancelSent {
                    local_task_id: c.local_task_id,
                    remote_task_id: c.remote_task_id,
                };
                if durable.write(vec![record]).await.is_err() {
                    return;
                }
            }
            Err(f) => tracing::warn!(
                code = %f.code,
                error = %f.message,
                remote_task_id = %c.remote_task_id,
                "a pending cancel could not be sent; it stays pending",
            ),
        }
    }
}
