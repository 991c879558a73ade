//! The task a client sees for a served run: the delegation task record (id = execution id,
//! `contextId` = the context the run belongs to, the state mapped through the status table,
//! the `result` artifact carrying the run's result document, the `a2aflow/` metadata).

use crate::auth::Who;
use crate::wire_error::A2aError;
use a2a::{Artifact, Message, Part, Role, Task, TaskState, TaskStatus};
use a2aflow::RunState;
use a2aflow::model::delegation::{ExecutionStatus, Lineage, MetadataKey, result_artifact};
use a2aflow::model::{ErrorCode, ExecutionResult, Gate, OpenGate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::time::SystemTime;

/// What never changes about a served task: who it is and where it belongs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskMeta {
    /// The run's execution id, which is the task id.
    pub(crate) execution_id: String,
    /// The task's context: the client's `contextId`, or the execution id for a run that is
    /// its own root.
    pub(crate) context_id: String,
    /// The name of the served workflow (the agent's name).
    pub(crate) workflow: String,
    /// The workflow's id.
    pub(crate) workflow_id: String,
    /// When the server accepted the request, milliseconds since the Unix epoch.
    pub(crate) created_ms: u64,
    /// The caller who started the run (`None`: the anonymous caller of an open server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) caller: Option<String>,
    /// Where a delegated run sits in its tree (the request's lineage); `None` for a run that
    /// is its own root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) lineage: Option<ServedLineage>,
}

/// The lineage of a delegated served run, as its request claimed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ServedLineage {
    /// The execution that made the call.
    pub(crate) parent_execution_id: String,
    /// The root of the tree; `None` when the parent is the root.
    pub(crate) root_execution_id: Option<String>,
    /// The run's depth (1: a direct child of the root).
    pub(crate) depth: u32,
}

impl From<&Lineage> for ServedLineage {
    fn from(l: &Lineage) -> Self {
        ServedLineage {
            parent_execution_id: l.parent_execution_id.clone(),
            root_execution_id: l.root_execution_id.clone(),
            depth: l.depth,
        }
    }
}

impl From<&ServedLineage> for Lineage {
    fn from(l: &ServedLineage) -> Self {
        Lineage {
            parent_execution_id: l.parent_execution_id.clone(),
            root_execution_id: l.root_execution_id.clone(),
            depth: l.depth,
        }
    }
}

impl TaskMeta {
    /// Whether `who` may see the task: only the caller who started it does.
    pub(crate) fn visible_to(&self, who: &Who) -> bool {
        self.caller.as_deref() == who.name()
    }
}

/// Where a served run stands.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Snapshot {
    /// The execution status (mapped to a task state by the status table).
    pub(crate) status: ExecutionStatus,
    /// When the status was last set.
    pub(crate) timestamp: SystemTime,
    /// The result document of a run that succeeded.
    pub(crate) result: Option<Value>,
    /// The open gate the task shows while the run waits at one (`WAITING_FOR_HUMAN`).
    pub(crate) gate: Option<OpenGate>,
}

impl Snapshot {
    /// A run accepted and not started.
    pub(crate) fn pending() -> Self {
        Snapshot {
            status: ExecutionStatus::Pending,
            timestamp: SystemTime::now(),
            result: None,
            gate: None,
        }
    }

    /// A run that finished with `result`.
    pub(crate) fn finished(result: &ExecutionResult) -> Self {
        Snapshot {
            status: status_of_result(result),
            timestamp: SystemTime::now(),
            result: result_document(result),
            gate: None,
        }
    }

    /// A run that failed before it could report a result.
    pub(crate) fn failed() -> Self {
        Snapshot {
            status: ExecutionStatus::Failed,
            timestamp: SystemTime::now(),
            result: None,
            gate: None,
        }
    }

    /// The A2A state of this snapshot: the status table's, except that a run waiting at an
    /// AUTH_REQUIRED gate is `TASK_STATE_AUTH_REQUIRED` (the table has no status for it).
    pub(crate) fn state(&self) -> TaskState {
        match &self.gate {
            Some(open)
                if self.status == ExecutionStatus::WaitingForHuman
                    && open.gate == Gate::AuthRequired =>
            {
                TaskState::AuthRequired
            }
            _ => self.status.task_state(),
        }
    }

    /// Moves a run that has not ended to what its open gates say: the first open gate
    /// (`WAITING_FOR_HUMAN`), or `RUNNING` when none is open. Whether anything changed.
    pub(crate) fn show_gate(&mut self, open: Option<OpenGate>) -> bool {
        if self.status.task_state().is_terminal() {
            return false;
        }
        let shown = self.gate.as_ref().map(|g| &g.local_task_id);
        match open {
            Some(open) if shown == Some(&open.local_task_id) => false,
            Some(open) => {
                self.status = ExecutionStatus::WaitingForHuman;
                self.gate = Some(open);
                self.timestamp = SystemTime::now();
                true
            }
            None if matches!(
                self.status,
                ExecutionStatus::Pending
                    | ExecutionStatus::Resuming
                    | ExecutionStatus::WaitingForHuman
            ) =>
            {
                self.status = ExecutionStatus::Running;
                self.gate = None;
                self.timestamp = SystemTime::now();
                true
            }
            None => false,
        }
    }

    /// Whether the client's wait ends here: a terminal or an interrupted state.
    pub(crate) fn settled(&self) -> bool {
        let state = self.state();
        state.is_terminal() || matches!(state, TaskState::InputRequired | TaskState::AuthRequired)
    }
}

/// The status of a finished run: the same rule the kernel applies to a delegated child.
pub(crate) fn status_of_result(result: &ExecutionResult) -> ExecutionStatus {
    match &result.failure {
        None if result.success => ExecutionStatus::Succeeded,
        Some(f) if f.is(ErrorCode::WorkflowCancelled) => ExecutionStatus::Cancelled,
        Some(f) if f.is(ErrorCode::WorkflowTimeout) => ExecutionStatus::TimedOut,
        _ => ExecutionStatus::Failed,
    }
}

/// The status of a journaled run that has not finished, as the store sees it: driven
/// (`running`), or waiting at a gate or for a resume. A state this table does not name is an
/// error, never a default.
pub(crate) fn status_of_unfinished(
    state: RunState,
    open_gates: bool,
) -> Result<ExecutionStatus, A2aError> {
    match state {
        RunState::Running => Ok(ExecutionStatus::Running),
        RunState::Waiting if open_gates => Ok(ExecutionStatus::WaitingForHuman),
        // No driver holds the run: the process that served it stopped before it finished.
        RunState::Waiting => Ok(ExecutionStatus::Aborted),
        other => Err(A2aError::internal(format!(
            "the run store reports an unfinished run as '{}', which has no task state",
            other.as_str()
        ))),
    }
}

/// The result document of a run that succeeded: the run's result, unchanged (what a parent's
/// delegated child reports).
fn result_document(result: &ExecutionResult) -> Option<Value> {
    if !result.success {
        return None;
    }
    serde_json::to_value(result).ok()
}

/// The task record of `meta` at `snapshot`.
pub(crate) fn task(meta: &TaskMeta, snapshot: &Snapshot) -> Task {
    Task {
        id: meta.execution_id.clone(),
        context_id: meta.context_id.clone(),
        status: status(meta, snapshot),
        artifacts: artifact(meta, snapshot).map(|a| vec![a]),
        history: None,
        metadata: Some(metadata(meta, snapshot)),
    }
}

/// `{state, timestamp}`: the record's status; at a gate, with the agent's status message (the
/// gate's text, sent as the served task's `ROLE_AGENT` message).
pub(crate) fn status(meta: &TaskMeta, snapshot: &Snapshot) -> TaskStatus {
    TaskStatus {
        state: snapshot.state(),
        message: gate_message(meta, snapshot),
        timestamp: Some(snapshot.timestamp.into()),
    }
}

/// The status message of a task at a gate: the agent's words, when it said any. Its id names
/// the gate (`{execution id}/gate/{local task id}`), so every read of one gate shows one message.
fn gate_message(meta: &TaskMeta, snapshot: &Snapshot) -> Option<Message> {
    let open = snapshot.gate.as_ref()?;
    let text = open.text.as_ref().filter(|t| !t.is_empty())?;
    let mut message = Message::new(Role::Agent, vec![Part::text(text.clone())]);
    message.message_id = format!("{}/gate/{}", meta.execution_id, open.local_task_id);
    message.context_id = Some(meta.context_id.clone());
    message.task_id = Some(meta.execution_id.clone());
    Some(message)
}

/// The `result` artifact of a run that reported a result.
pub(crate) fn artifact(meta: &TaskMeta, snapshot: &Snapshot) -> Option<Artifact> {
    snapshot
        .result
        .as_ref()
        .and_then(|r| result_artifact(&meta.execution_id, r))
}

fn metadata(meta: &TaskMeta, snapshot: &Snapshot) -> HashMap<String, Value> {
    let mut metadata = HashMap::new();
    let mut put = |key: MetadataKey, value: Value| {
        metadata.insert(key.as_str().to_owned(), value);
    };
    put(MetadataKey::Kind, Value::from("delegation_task"));
    put(
        MetadataKey::ExecutionId,
        Value::from(meta.execution_id.as_str()),
    );
    put(MetadataKey::FlowId, Value::from(meta.workflow_id.as_str()));
    put(MetadataKey::FlowName, Value::from(meta.workflow.as_str()));
    put(MetadataKey::Status, Value::from(snapshot.status.as_str()));
    if let Some(lineage) = &meta.lineage {
        put(
            MetadataKey::ParentExecutionId,
            Value::from(lineage.parent_execution_id.as_str()),
        );
        put(
            MetadataKey::RootExecutionId,
            lineage
                .root_execution_id
                .as_deref()
                .map_or(Value::Null, Value::from),
        );
        put(MetadataKey::Depth, Value::from(lineage.depth));
    } else {
        // A run no parent delegated is its own root.
        put(MetadataKey::Depth, Value::from(0));
    }
    metadata
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> TaskMeta {
        TaskMeta {
            execution_id: "e1".into(),
            context_id: "e1".into(),
            workflow: "review".into(),
            workflow_id: "wf".into(),
            created_ms: 0,
            caller: None,
            lineage: None,
        }
    }

    #[test]
    fn a_succeeded_run_is_completed_with_its_result_artifact() {
        let snapshot = Snapshot {
            status: ExecutionStatus::Succeeded,
            timestamp: SystemTime::UNIX_EPOCH,
            result: Some(serde_json::json!({"ok": true})),
            gate: None,
        };
        let task = task(&meta(), &snapshot);
        assert_eq!(task.status.state, TaskState::Completed);
        let artifacts = task.artifacts.unwrap_or_default();
        assert_eq!(artifacts.len(), 1);
        assert_eq!(artifacts[0].artifact_id, "e1/result");
        assert_eq!(
            task.metadata.and_then(|m| m.get("a2aflow/status").cloned()),
            Some(Value::from("SUCCEEDED"))
        );
    }

    #[test]
    fn unfinished_runs_map_by_the_table() {
        assert_eq!(
            status_of_unfinished(RunState::Running, false).ok(),
            Some(ExecutionStatus::Running)
        );
        assert_eq!(
            status_of_unfinished(RunState::Waiting, true).ok(),
            Some(ExecutionStatus::WaitingForHuman)
        );
        assert!(status_of_unfinished(RunState::Succeeded, false).is_err());
    }
}
