//! Gates the host answers: what a run does when a remote task stops at INPUT_REQUIRED (with
//! nothing to negotiate) or AUTH_REQUIRED ([`GatePolicy`]), and the handle a host answers open
//! gates through ([`GateBoard`]).
//!
//! With [`GatePolicy::Park`] the logical task waits at its gate (other branches keep running)
//! until the host answers it ([`GateBoard::answer`]: a follow-up on the same remote task and
//! context), declines it ([`GateBoard::decline`]: the task fails with the host's code, and a
//! best-effort CancelTask goes out), the run is cancelled, or the run's deadline passes (the task
//! ends with the gate's own code, `a2a.input_required` or `a2a.auth_required`).

use a2aflow_model::{ErrorCode, Failure, FailureCode, MessageContent, OpenGate};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::{Notify, oneshot};

/// What a run does when a remote task stops at a gate (journaled as `"fail"` / `"park"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum GatePolicy {
    /// The task fails with the gate's failure (`negotiation.not_negotiable` or
    /// `a2a.auth_required`, its `gate` set). The default.
    #[default]
    Fail,
    /// The task parks at its gate and waits for the host's answer (see the module docs).
    Park,
}

/// The host's answer to one open gate.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum GateReply {
    /// Send this content as a follow-up on the waiting remote task.
    Answer(MessageContent),
    /// End the task with the host's code and reason.
    Decline {
        /// The host's code.
        code: FailureCode,
        /// The host's reason.
        reason: String,
    },
}

/// One open gate on the board: what it is and where its answer goes.
struct Slot {
    gate: OpenGate,
    reply: oneshot::Sender<GateReply>,
}

/// (execution id, local task id).
type Key = (String, String);

/// The open gates of the runs that share it, and the door the host answers them through.
///
/// Cloning shares the board. Pass one in [`crate::RunOptions::gate_board`]; a run with
/// [`GatePolicy::Park`] and no board gets a board of its own, which nobody can answer (its gates
/// end at the deadline or on cancellation).
#[derive(Clone, Default)]
pub struct GateBoard {
    slots: Arc<Mutex<BTreeMap<Key, Slot>>>,
}

impl std::fmt::Debug for GateBoard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GateBoard")
            .field("open", &self.lock().len())
            .finish()
    }
}

impl GateBoard {
    /// An empty board.
    pub fn new() -> Self {
        GateBoard::default()
    }

    /// The open gates of run `execution_id`, by local task id.
    pub fn open_gates(&self, execution_id: &str) -> Vec<OpenGate> {
        self.lock()
            .iter()
            .filter(|((exec, _), _)| exec == execution_id)
            .map(|(_, slot)| slot.gate.clone())
            .collect()
    }

    /// Answers the open gate of task `local_task_id` in run `execution_id`: the content is sent
    /// as a follow-up on the waiting remote task, in its context. `workflow.gate_not_open` when
    /// that task has no open gate in that run (not gated, already answered, unknown).
    pub fn answer(
        &self,
        execution_id: &str,
        local_task_id: &str,
        content: MessageContent,
    ) -> Result<(), Failure> {
        self.reply(execution_id, local_task_id, GateReply::Answer(content))
    }

    /// Declines the open gate of task `local_task_id` in run `execution_id`: the task fails with
    /// `code` and `reason`, and a best-effort CancelTask goes to the waiting remote task.
    /// `workflow.gate_not_open` as for [`GateBoard::answer`].
    pub fn decline(
        &self,
        execution_id: &str,
        local_task_id: &str,
        code: impl Into<FailureCode>,
        reason: impl Into<String>,
    ) -> Result<(), Failure> {
        let reply = GateReply::Decline {
            code: code.into(),
            reason: reason.into(),
        };
        self.reply(execution_id, local_task_id, reply)
    }

    fn reply(
        &self,
        execution_id: &str,
        local_task_id: &str,
        reply: GateReply,
    ) -> Result<(), Failure> {
        let key = (execution_id.to_owned(), local_task_id.to_owned());
        let slot = self.lock().remove(&key);
        let Some(slot) = slot else {
            return Err(not_open(execution_id, local_task_id));
        };
        // The waiting task dropped its receiver only by ending, and then removed its slot first.
        slot.reply
            .send(reply)
            .map_err(|_| not_open(execution_id, local_task_id))
    }

    /// Opens `gate` for run `execution_id`; the ticket receives the host's reply and closes the
    /// gate when dropped.
    pub(crate) fn open(&self, execution_id: &str, gate: OpenGate) -> Ticket {
        let key = (execution_id.to_owned(), gate.local_task_id.clone());
        let (tx, rx) = oneshot::channel();
        self.lock().insert(key.clone(), Slot { gate, reply: tx });
        Ticket {
            board: self.clone(),
            key,
            reply: rx,
        }
    }

    /// The slots; a panic while holding the lock leaves the map consistent (every change is one
    /// insert or remove), so a poisoned lock is used as it is.
    fn lock(&self) -> MutexGuard<'_, BTreeMap<Key, Slot>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `workflow.gate_not_open` for task `local_task_id` of run `execution_id` (the details name
/// both): what an answer or decline to a task without an open gate is refused with.
pub fn gate_not_open(execution_id: &str, local_task_id: &str) -> Failure {
    not_open(execution_id, local_task_id)
}

fn not_open(execution_id: &str, local_task_id: &str) -> Failure {
    Failure::new(
        ErrorCode::WorkflowGateNotOpen,
        format!(
            "task {local_task_id} of run {execution_id} has no open gate (it is not gated, was \
             already answered or declined, or is unknown); nothing was sent"
        ),
    )
    .with_detail("executionId", execution_id)
    .with_detail("localTaskId", local_task_id)
}

/// How a durable run that parks gates suspends (`RunOptions::suspend_when_parked`): how many of
/// its tasks wait at a gate, the executor's wake-up when that changes, and whether the run
/// suspended (its tasks then stop without a result and without a remote cancel).
#[derive(Debug, Default)]
pub(crate) struct Suspension {
    parked: AtomicUsize,
    changed: Notify,
    suspended: AtomicBool,
    gates: Mutex<Vec<OpenGate>>,
}

impl Suspension {
    /// One task waits at its gate until the guard is dropped.
    pub(crate) fn park(self: &Arc<Self>) -> ParkedGuard {
        self.parked.fetch_add(1, Ordering::AcqRel);
        self.changed.notify_one();
        ParkedGuard(self.clone())
    }

    /// How many tasks wait at a gate now.
    pub(crate) fn parked(&self) -> usize {
        self.parked.load(Ordering::Acquire)
    }

    /// Resolves when the number of parked tasks changed (a permit is kept when nobody waits).
    pub(crate) async fn changed(&self) {
        self.changed.notified().await;
    }

    /// The run suspends with `gates` open.
    pub(crate) fn suspend(&self, gates: Vec<OpenGate>) {
        *self.gates.lock().unwrap_or_else(PoisonError::into_inner) = gates;
        self.suspended.store(true, Ordering::Release);
    }

    /// Whether the run suspended.
    pub(crate) fn is_suspended(&self) -> bool {
        self.suspended.load(Ordering::Acquire)
    }

    /// The result of a suspended run: `workflow.parked` with its open gates.
    pub(crate) fn parked_failure(&self, execution_id: &str) -> Failure {
        let gates = self
            .gates
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let list = serde_json::to_value(&gates).unwrap_or_default();
        let tasks: Vec<&str> = gates.iter().map(|g| g.local_task_id.as_str()).collect();
        Failure::new(
            ErrorCode::WorkflowParked,
            format!(
                "run {execution_id} is parked at {} open gate(s) ({}): answer them, then resume it",
                gates.len(),
                tasks.join(", ")
            ),
        )
        .with_detail("executionId", execution_id)
        .with_detail("openGates", list)
    }
}

/// A parked task, counted until dropped.
pub(crate) struct ParkedGuard(Arc<Suspension>);

impl Drop for ParkedGuard {
    fn drop(&mut self) {
        self.0.parked.fetch_sub(1, Ordering::AcqRel);
        self.0.changed.notify_one();
    }
}

/// An open gate held by its waiting task: the host's reply arrives on `reply`; dropping the
/// ticket closes the gate.
pub(crate) struct Ticket {
    board: GateBoard,
    key: Key,
    pub(crate) reply: oneshot::Receiver<GateReply>,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.board.lock().remove(&self.key);
    }
}
