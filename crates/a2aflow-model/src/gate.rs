//! An open gate: a logical task parked at `TASK_STATE_INPUT_REQUIRED` or
//! `TASK_STATE_AUTH_REQUIRED`, waiting for the host's answer (the `task_gated` event's data, a
//! journaled gate, a stored run's view of its open gates).

use crate::failure::Gate;
use serde::{Deserialize, Serialize};

/// A logical task parked at a gate: which task, where it waits, and what the agent said.
///
/// Serialised as camelCase JSON; absent ids and text are written as `null`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OpenGate {
    /// The step of the task.
    pub step: String,
    /// The local task id: what an answer or a decline names.
    pub local_task_id: String,
    /// The agent the task was sent to.
    pub agent: String,
    /// Which gate.
    pub gate: Gate,
    /// The context id of the logical task (every answer is sent in it).
    pub context_id: Option<String>,
    /// The remote task that waits (an answer continues it).
    pub remote_task_id: Option<String>,
    /// The text of the agent's status message, as evidence of what it asks for.
    pub text: Option<String>,
}
