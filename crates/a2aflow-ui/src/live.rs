//! The runs a host drives in the page's own process: their gate board and cancellation tokens,
//! so the page's buttons reach a live run at once instead of through its journal.
//!
//! A run driven by another process is reached through the store only: an answer or decline is
//! refused while that driver's lease is live (`store.locked`), and a cancel is journaled, which
//! the next resume acts on.

use a2aflow::kernel::{GateBoard, GatePolicy, RunOptions};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio_util::sync::CancellationToken;

/// The runs live in this process. Cheap to clone; clones share the table.
#[derive(Clone, Default)]
pub struct LiveRuns {
    board: GateBoard,
    cancels: Arc<Mutex<HashMap<String, CancellationToken>>>,
}

impl std::fmt::Debug for LiveRuns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveRuns").finish_non_exhaustive()
    }
}

impl LiveRuns {
    /// An empty table with a gate board of its own.
    pub fn new() -> Self {
        LiveRuns::default()
    }

    /// The board the page answers gates on: give it to each run as `RunOptions::gate_board`.
    pub fn board(&self) -> &GateBoard {
        &self.board
    }

    /// Prepares `options` for a run the page can reach: its gates park on this table's board,
    /// and its cancellation token is registered under `execution_id` (which `options` is given,
    /// so the run journals under the id the page knows).
    pub fn track(&self, execution_id: &str, options: &mut RunOptions) {
        options.execution_id = Some(execution_id.to_owned());
        options.gate_policy = GatePolicy::Park;
        options.gate_board = Some(self.board.clone());
        self.table()
            .insert(execution_id.to_owned(), options.cancel.clone());
    }

    /// Forgets a run (after it finished); a later cancel goes to its journal.
    pub fn untrack(&self, execution_id: &str) {
        self.table().remove(execution_id);
    }

    /// Whether run `execution_id` is tracked here.
    pub(crate) fn contains(&self, execution_id: &str) -> bool {
        self.table().contains_key(execution_id)
    }

    /// Cancels the live run `execution_id`; false when it is not live here.
    pub(crate) fn cancel(&self, execution_id: &str) -> bool {
        match self.table().get(execution_id) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        // A panic while the lock was held left the map itself whole.
        self.cancels.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
