//! Served runs after a restart: the runs of earlier processes that the store holds unfinished
//! are driven again here (once their last driver's lease has lapsed or been released), so a
//! client that re-attaches — GetTask, SubscribeToTask, ListTasks by context, a follow-up on a
//! gate — follows the resumed run as it would have followed the first one.

use super::{Driven, Entry, Live, Runs, on_event};
use crate::record::{Snapshot, TaskMeta};
use a2aflow::kernel::journal::wall_clock_ms;
use a2aflow::kernel::{ControlPoint, GatePolicy, RunOptions};
use a2aflow::model::delegation::ExecutionStatus;
use a2aflow::model::delegation::Lineage;
use a2aflow::model::{ErrorCode, ExecutionResult, Failure};
use a2aflow::{HostHooks, RunStore};
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;
use tokio::sync::watch;

/// The shortest and the longest wait between two tries at a run another driver's lease holds.
const LOCKED_WAIT: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(2));

/// How one try at resuming a run ended.
enum Tried {
    /// The run ended (or its journal says it had): its result.
    Ended(Box<ExecutionResult>),
    /// Another driver holds the run: try again after its lease.
    Locked,
    /// It cannot be driven here (its workflow names an agent this server was not given, the
    /// journal is damaged, the server is stopping).
    Refused(Failure),
}

impl Runs {
    /// Starts driving every run of the index the store holds unfinished; returns how many.
    /// Each such task is live from here on: its snapshot starts from what the store says
    /// (`RESUMING`, or the gate the run waits at) and follows the resumed run. The runs the
    /// store holds finished count, in the index's order, against the finished tasks kept in
    /// memory: past the limit the oldest are dropped, as they would have been had this process
    /// served them all, and their lines leave the index file.
    pub(crate) async fn resume_unfinished(&self) -> usize {
        let Some(store) = self.host.store.clone() else {
            return 0;
        };
        let recorded: Vec<TaskMeta> = {
            let table = self.table();
            table
                .order
                .iter()
                .filter_map(|id| table.tasks.get(id))
                .filter(|e| e.live.is_none())
                .map(|e| e.meta.clone())
                .collect()
        };
        let mut resumed = 0;
        for meta in recorded {
            let Ok(journal) = store.load(&meta.execution_id).await else {
                // No run behind this index line (the process stopped between the two writes).
                continue;
            };
            if journal.finished().is_some() {
                self.table()
                    .finished(&meta.execution_id, self.limits.finished_tasks_kept);
                continue;
            }
            let Ok(mut snapshot) = self.recorded(&meta).await else {
                continue;
            };
            if snapshot.gate.is_none() {
                snapshot.status = ExecutionStatus::Resuming;
            }
            self.drive_again(&meta, snapshot, store.clone());
            resumed += 1;
        }
        // The lines of the tasks dropped at start leave the index now, whatever their number.
        let dropped = self.table().take_dropped(true);
        if let (Some(index), Some(dropped)) = (&self.index, dropped) {
            super::compact_index(index, &dropped);
        }
        if resumed > 0 {
            tracing::info!(
                target: "a2aflow::serve",
                resumed,
                "resuming the served runs an earlier process left unfinished"
            );
        }
        resumed
    }

    /// Makes task `meta` live with `snapshot` and spawns the driver that resumes its run.
    fn drive_again(&self, meta: &TaskMeta, snapshot: Snapshot, store: Arc<dyn RunStore>) {
        let gates = Arc::new(super::GateWatch::default());
        if let Some(gate) = &snapshot.gate {
            gates.recorded(gate.clone());
        }
        let (state, _) = watch::channel(snapshot);
        let cancel = self.stop.child_token();
        let driven = Driven {
            state: state.clone(),
            cancel: cancel.clone(),
            gates: gates.clone(),
        };
        {
            let mut table = self.table();
            if let Some(entry) = table.tasks.get_mut(&meta.execution_id) {
                *entry = Entry {
                    meta: meta.clone(),
                    live: Some(Live {
                        state,
                        cancel,
                        subscribers: Arc::new(AtomicUsize::new(0)),
                        gates,
                    }),
                };
            }
        }
        // A resumed run counts against the runs in flight when a place is free; it is driven
        // either way (it was admitted when it started).
        let permit = self.in_flight.clone().try_acquire_owned().ok();
        let execution_id = meta.execution_id.clone();
        let host = self.host.clone();
        let board = self.board.clone();
        let stop = self.stop.clone();
        let lease_wait = host
            .config
            .store_options()
            .map(|o| o.lease_ttl / 4)
            .unwrap_or(LOCKED_WAIT.1);
        let lineage = meta.lineage.as_ref().map(Lineage::from);
        let table = self.table.clone();
        let index = self.index.clone();
        let kept = self.limits.finished_tasks_kept;
        self.tracker.spawn(async move {
            let Driven {
                state,
                cancel,
                gates,
            } = driven;
            // The agents may still be being discovered: wait for them until the server stops.
            let resolved = loop {
                match host.agents.resolved(&stop).await {
                    Ok(resolved) => break resolved,
                    Err(_) if stop.is_cancelled() => return,
                    Err(_) => {}
                }
            };
            let control_point: Arc<dyn ControlPoint> = Arc::new(resolved.control_point.at(lineage));
            let mut cancel_journaled = false;
            let snapshot = loop {
                let mut options = RunOptions {
                    store: Some(store.clone()),
                    cancel: cancel.clone(),
                    gate_policy: GatePolicy::Park,
                    gate_board: Some(board.clone()),
                    ..RunOptions::default()
                };
                options.on_event = Some(on_event(
                    state.clone(),
                    gates.clone(),
                    board.clone(),
                    execution_id.clone(),
                ));
                let hooks = HostHooks {
                    run_options: options,
                    ..HostHooks::default()
                };
                let tried = tried(
                    a2aflow::resume(
                        &execution_id,
                        &resolved.agents,
                        control_point.clone(),
                        &host.config,
                        hooks,
                    )
                    .await,
                );
                match tried {
                    Tried::Ended(result) => break Snapshot::finished(&result),
                    Tried::Refused(failure) => {
                        tracing::warn!(
                            target: "a2aflow::serve",
                            execution_id = %execution_id,
                            code = %failure.code,
                            "a served run of an earlier process cannot be resumed: {}",
                            failure.message
                        );
                        break Snapshot {
                            status: ExecutionStatus::Aborted,
                            ..Snapshot::failed()
                        };
                    }
                    Tried::Locked => {}
                }
                if stop.is_cancelled() {
                    // The server stops: the run stays journaled for the next process.
                    return;
                }
                if cancel.is_cancelled() && !cancel_journaled {
                    // CancelTask while another driver's lease holds the run: the stop request is
                    // journaled, and the driver that gets the run next ends it.
                    cancel_journaled = true;
                    if let Err(f) = a2aflow::request_cancel(store.as_ref(), &execution_id).await {
                        tracing::warn!(
                            target: "a2aflow::serve",
                            execution_id = %execution_id,
                            "the cancel of a run waiting for its lease was not journaled: {}",
                            f.message
                        );
                    }
                }
                let wait = until_lease_lapses(store.as_ref(), &execution_id, lease_wait).await;
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = stop.cancelled() => return,
                }
            };
            // Counted among the finished before anyone sees it finished, so that whoever does
            // finds the oldest finished tasks already dropped.
            let dropped = super::mark_finished(&table, &execution_id, kept);
            state.send_replace(snapshot);
            drop(permit);
            super::compact_off_thread(index, dropped).await;
        });
    }
}

/// How a resume answered.
fn tried(outcome: Result<ExecutionResult, Failure>) -> Tried {
    let locked = |f: &Failure| f.is(ErrorCode::StoreLocked) || f.is(ErrorCode::StoreLeaseLost);
    match outcome {
        Err(f) if locked(&f) => Tried::Locked,
        Err(f) => Tried::Refused(f),
        Ok(result) if result.failure.as_ref().is_some_and(locked) => Tried::Locked,
        Ok(result) => Tried::Ended(Box::new(result)),
    }
}

/// How long until the lease on `execution_id` lapses (bounded by [`LOCKED_WAIT`] and
/// `at_most`): the next try at the run.
async fn until_lease_lapses(
    store: &dyn RunStore,
    execution_id: &str,
    at_most: Duration,
) -> Duration {
    let (shortest, longest) = LOCKED_WAIT;
    let longest = longest.min(at_most).max(shortest);
    match store.lease(execution_id).await {
        Ok(Some(lease)) => {
            Duration::from_millis(lease.expires_at_ms.saturating_sub(wall_clock_ms()))
                .clamp(shortest, longest)
        }
        _ => shortest,
    }
}
