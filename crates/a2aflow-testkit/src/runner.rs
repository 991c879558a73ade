//! Runs a task script against its store entry.

use std::sync::Arc;
use std::vec::IntoIter;

use a2a::TaskState;
use tokio_util::task::TaskTracker;

use crate::script::Step;
use crate::store::{TaskEntry, closes_stream};

/// Runs the steps that need no waiting at once, and the rest (from the first delay or hang on)
/// on a tracked tokio task. Keeps simple scripts free of a spawn per task.
pub(crate) fn start(tracker: &TaskTracker, entry: Arc<TaskEntry>, steps: Vec<Step>) {
    let mut steps = steps.into_iter();
    match run_until_wait(&entry, &mut steps) {
        Flow::Done => {}
        Flow::Wait(step) => {
            tracker.spawn(async move {
                let mut next = Some(step);
                while let Some(step) = next.take() {
                    match step {
                        Step::Delay(d) => {
                            tokio::select! {
                                () = tokio::time::sleep(d) => {}
                                () = entry.token.cancelled() => return,
                            }
                        }
                        // Hang: wait for CancelTask or server shutdown.
                        _ => {
                            entry.token.cancelled().await;
                            return;
                        }
                    }
                    match run_until_wait(&entry, &mut steps) {
                        Flow::Done => return,
                        Flow::Wait(s) => next = Some(s),
                    }
                }
            });
        }
    }
}

enum Flow {
    Done,
    /// A step that must wait (delay or hang).
    Wait(Step),
}

fn run_until_wait(entry: &TaskEntry, steps: &mut IntoIter<Step>) -> Flow {
    for step in steps.by_ref() {
        if entry.token.is_cancelled() {
            return Flow::Done;
        }
        let wire = |m: Option<crate::message::AgentMessage>| {
            m.map(|m| m.to_wire(&entry.context_id, Some(&entry.id)))
        };
        match step {
            Step::Status { state, message } => {
                let terminal = state.is_terminal();
                if !entry.set_status(state, wire(message)) || terminal {
                    return Flow::Done;
                }
            }
            Step::Interrupt {
                state,
                message,
                then,
            } => {
                entry.interrupt(state, wire(message), then);
                return Flow::Done;
            }
            Step::Artifact(chunk) => {
                if !entry.add_artifact(&chunk) {
                    return Flow::Done;
                }
            }
            Step::Crash(message) => {
                entry.crash(&message);
                return Flow::Done;
            }
            Step::TaskMetadata(md) => entry.merge_metadata(&md),
            wait @ (Step::Delay(_) | Step::Hang) => return Flow::Wait(wait),
        }
    }
    if !closes_stream(&entry.state()) {
        entry.set_status(TaskState::Completed, None);
    }
    Flow::Done
}
