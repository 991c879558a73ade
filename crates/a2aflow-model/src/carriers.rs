//! The carriers of the host callback contract (BRIEF §3): what each callback receives and
//! returns, what a task result looks like, and what a run returns. All serialise as camelCase
//! JSON so hosts can log, persist and replay them.

use crate::definition::StepType;
use crate::error_code::{ErrorCode, Failure};
use crate::shared_str::SharedStr;
use a2a::{Artifact, Message, Part, TaskState};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::Arc;

/// The content of one outgoing message, exactly as the host wants it sent: the engine wraps it in
/// an envelope (ids, role) and never changes it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageContent {
    /// Message parts.
    pub parts: Vec<Part>,
    /// Message metadata (A2A-T metadata lives here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Extension URIs this content activates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    /// The context id the logical task is sent in, when the host owns it (a store passing its
    /// own node id, say). Every attempt, follow-up and negotiation reply of the task uses it.
    /// `None`: the kernel mints one for the logical task, once. Not a part of the message's
    /// content: it becomes the message's `contextId`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
}

impl MessageContent {
    /// Content of one text part.
    pub fn text(text: impl Into<String>) -> Self {
        MessageContent {
            parts: vec![Part::text(text)],
            ..Default::default()
        }
    }

    /// The same content, sent in the host's context id `context_id`.
    #[must_use]
    pub fn in_context(mut self, context_id: impl Into<String>) -> Self {
        self.context_id = Some(context_id.into());
        self
    }

    /// Checks that the content can go on the wire as given, before anything is sent: every
    /// extension URI is nonblank, and a host's context id is nonblank and holds no control
    /// character. A violation is `workflow.invalid_content` naming the field (and, for an
    /// extension, the index of the offending URI) in the details.
    pub fn check_sendable(&self) -> Result<(), Failure> {
        if let Some(id) = &self.context_id
            && (id.trim().is_empty() || id.chars().any(char::is_control))
        {
            return Err(Failure::new(
                ErrorCode::WorkflowInvalidContent,
                "MessageContent.context_id is blank or holds a control character; give a visible id or leave it unset for a minted one",
            )
            .with_detail("field", "contextId"));
        }
        if let Some(index) = self.extensions.iter().position(|u| u.trim().is_empty()) {
            return Err(Failure::new(
                ErrorCode::WorkflowInvalidContent,
                format!(
                    "MessageContent.extensions[{index}] is a blank extension URI; remove it or name the extension"
                ),
            )
            .with_detail("field", "extensions")
            .with_detail("index", index));
        }
        Ok(())
    }
}

/// The current task's own input: by default the subtask description as text.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskInput {
    /// Instruction text (the subtask's description, shared with [`TaskRequest::description`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<SharedStr>,
    /// Structured input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// What `on_task` and `on_self_task` receive for one logical subtask.
///
/// Its names and ids are [`SharedStr`]s: the kernel holds one per name (the run's ids, the
/// step's name, the subtask's agent, skill and description) and every task's request shares it.
/// They read like strings (`req.agent == "x"`, `req.skill.as_str()`, `format!("{}", req.step_name)`)
/// and serialise as plain JSON strings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRequest {
    /// The run's execution id.
    pub execution_id: SharedStr,
    /// The workflow's id.
    pub workflow_id: SharedStr,
    /// The step this task belongs to.
    pub step_name: SharedStr,
    /// The step's type.
    pub step_type: StepType,
    /// Index of the subtask within its step.
    pub subtask_index: usize,
    /// Stable local id of this logical subtask (the same across follow-ups and retries).
    pub local_task_id: SharedStr,
    /// The agent the task goes to (empty for local work).
    pub agent: SharedStr,
    /// The requested skill.
    pub skill: SharedStr,
    /// The subtask description.
    pub description: SharedStr,
    /// This task's input.
    pub input: TaskInput,
    /// The history window selected by the step's `contextFrom`.
    pub workflow_input: WorkflowInput,
    /// The time left for this task when the callback was called, in milliseconds: until the
    /// earliest of the run's deadline and the step's and subtask's timeouts (a host budgets its
    /// own work with it). It only decreases from one callback of a task to the next.
    #[serde(default)]
    pub remaining_ms: u64,
}

/// The run-level input and the upstream results a task may see.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowInput {
    /// The host's runtime intent for the whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_intent: Option<String>,
    /// Upstream step results selected by the step's `contextFrom`, only steps that completed:
    /// with `contextFrom` absent, the direct predecessors in declaration order (the order their
    /// steps appear in the workflow); with `"*"`, every completed ancestor, nearest first
    /// (breadth-first over the predecessors); with step names, those steps in the listed order.
    ///
    /// Each result is shared (`Arc`) with the run and with every other task that sees it, so a
    /// context window costs no copy; it serialises as a plain array of results.
    #[serde(default, with = "shared_results")]
    pub upstream_results: Vec<Arc<UpstreamResult>>,
}

/// (De)serialises shared upstream results as a plain JSON array of [`UpstreamResult`].
mod shared_results {
    use super::UpstreamResult;
    use serde::{Deserialize, Deserializer, Serializer};
    use std::sync::Arc;

    pub(super) fn serialize<S: Serializer>(
        results: &[Arc<UpstreamResult>],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(results.iter().map(|r| &**r))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<Arc<UpstreamResult>>, D::Error> {
        Ok(Vec::<UpstreamResult>::deserialize(deserializer)?
            .into_iter()
            .map(Arc::new)
            .collect())
    }
}

/// One upstream step's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpstreamResult {
    /// The step's name (shared with its tasks' requests).
    pub step_name: SharedStr,
    /// One view per subtask.
    pub task_results: Vec<TaskResultView>,
}

/// How one logical task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TaskOutcomeStatus {
    /// Succeeded.
    Completed,
    /// Failed (remote failure, local failure, gate).
    Failed,
    /// Cancelled (ANY_SUCCESS loser, run cancelled, deadline).
    Canceled,
}

/// A complete view of one task's result: nothing flattened, no metadata lost. Its identity
/// (agent, skill, task id, description) is the task's request's, shared ([`SharedStr`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskResultView {
    /// The agent (empty for local work).
    pub agent_name: SharedStr,
    /// The skill.
    pub skill: SharedStr,
    /// The stable local task id.
    pub task_id: SharedStr,
    /// The subtask description.
    pub task_description: SharedStr,
    /// How it ended.
    pub status: TaskOutcomeStatus,
    /// The A2A context id used for this logical task, when remote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// The first remote task id, when one was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_task_id: Option<String>,
    /// Business outputs (from artifacts when present, else the final message parts).
    #[serde(default)]
    pub outputs: Vec<Output>,
    /// Every remote message, task or update received, as evidence.
    #[serde(default)]
    pub received_messages: Vec<ReceivedMessage>,
    /// Error message when failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Stable error code when failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// Safe error details when failed.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub error_details: Map<String, Value>,
    /// How many times the task was sent (its retry policy's attempts so far): absent in JSON
    /// when 1, the usual case.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub attempts: u32,
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// One business output: an artifact's parts, or the final message's parts, or local output.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Output {
    /// The artifact id, when projected from an artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_id: Option<String>,
    /// The artifact name, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The parts.
    pub parts: Vec<Part>,
    /// Artifact (or local output) metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

impl Output {
    /// A local output of one data part.
    pub fn data(value: Value) -> Self {
        Output {
            parts: vec![Part::data(value)],
            ..Default::default()
        }
    }
    /// A local output of one text part.
    pub fn text(text: impl Into<String>) -> Self {
        Output {
            parts: vec![Part::text(text)],
            ..Default::default()
        }
    }
}

/// Which kind of A2A object a [`ReceivedMessage`] snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ReceivedKind {
    /// A direct Message (no task).
    Message,
    /// A Task object.
    Task,
    /// A TaskStatusUpdateEvent.
    StatusUpdate,
    /// A TaskArtifactUpdateEvent.
    ArtifactUpdate,
}

/// A snapshot of one remote message, task or update. Message metadata (inside `message`), task
/// metadata and artifact metadata stay at their own levels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReceivedMessage {
    /// Which A2A object this was.
    pub kind: ReceivedKind,
    /// The remote task id, when there is a task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The context id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// The task state, for tasks and status updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<TaskState>,
    /// The direct message, or the status message of a task / status update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// Task (or update event) metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_metadata: Option<Map<String, Value>>,
    /// Artifacts carried (assembled when they came in chunks), each with its own metadata.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
}

/// What `on_self_task` returns: local outputs; nothing is sent.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskResult {
    /// Local outputs.
    #[serde(default)]
    pub outputs: Vec<Output>,
}

/// What `on_route` receives: one nonblank edge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteRequest {
    /// The run's execution id.
    pub execution_id: String,
    /// The source step.
    pub source_step: String,
    /// The target step.
    pub target_step: String,
    /// The edge's condition text.
    pub condition: String,
    /// The source step's results.
    pub source_result: UpstreamResult,
    /// The run's runtime intent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_intent: Option<String>,
}

/// The host's decision on one edge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteDecision {
    /// True activates the edge.
    pub allowed: bool,
    /// Why (kept in events and results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl RouteDecision {
    /// Activate the edge.
    pub fn allow(reason: impl Into<String>) -> Self {
        RouteDecision {
            allowed: true,
            reason: Some(reason.into()),
        }
    }
    /// Suppress the edge.
    pub fn deny(reason: impl Into<String>) -> Self {
        RouteDecision {
            allowed: false,
            reason: Some(reason.into()),
        }
    }
}

/// One completed negotiation exchange: what the host sent and what came back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NegotiationExchange {
    /// The proposal the host answered.
    pub proposal: ReceivedMessage,
    /// The host's reply as sent.
    pub reply: MessageContent,
}

/// What `on_negotiation` receives for one Negotiation-T proposal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NegotiationRequest {
    /// The task request the original submission came from.
    pub task: TaskRequest,
    /// The original submission, as sent.
    pub original: MessageContent,
    /// The context id of the logical task.
    pub context_id: String,
    /// The remote task id (absent in pre-task mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_task_id: Option<String>,
    /// The proposal's raw `negotiationContext` (validated by the protocol layer).
    pub negotiation_context: Value,
    /// The evidence carrying the proposal.
    pub evidence: ReceivedMessage,
    /// Earlier exchanges of this task, oldest first.
    pub previous_exchanges: Vec<NegotiationExchange>,
    /// How many more replies the budget allows, this one included.
    pub remaining_budget: u32,
    /// The time left for the task when the proposal reached the host, in milliseconds (see
    /// [`TaskRequest::remaining_ms`]).
    #[serde(default)]
    pub remaining_ms: u64,
}

/// The host's answer to a proposal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "action")]
pub enum NegotiationReply {
    /// Send this content on the same task and context.
    Send {
        /// The reply content.
        content: MessageContent,
    },
    /// Stop locally: no Abort is synthesised; the task fails with this code.
    Stop {
        /// The failure code the task keeps.
        code: String,
        /// Why.
        reason: String,
    },
}

/// A failure a host callback reports on purpose, with a code of its choosing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BusinessFailure {
    /// The host's stable code. It becomes the failure's [`crate::FailureCode`]: a
    /// [`crate::FailureCode::Business`] code, or the engine code when it is a registry string.
    pub code: String,
    /// Safe message.
    pub message: String,
    /// Safe details.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub details: Map<String, Value>,
}

impl From<BusinessFailure> for Failure {
    fn from(b: BusinessFailure) -> Self {
        Failure::from_parts(crate::FailureCode::parse(b.code), b.message, b.details)
    }
}

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum StepStatus {
    /// The step succeeded.
    Completed,
    /// The step failed.
    Failed,
    /// The step was cancelled before it finished.
    Canceled,
}

/// One step's outcome in an [`ExecutionResult`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepResult {
    /// Step name (shared with its tasks' requests).
    pub step_name: SharedStr,
    /// Step type.
    pub step_type: StepType,
    /// How it ended.
    pub status: StepStatus,
    /// One view per subtask.
    pub task_results: Vec<TaskResultView>,
    /// The step's failure, when failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
}

/// What a run returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionResult {
    /// The run's execution id.
    pub execution_id: String,
    /// The workflow id.
    pub workflow_id: String,
    /// True when the run succeeded.
    pub success: bool,
    /// Why it failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    /// Steps that ran, in completion order.
    pub steps: Vec<StepResult>,
    /// Steps that never ran (not reachable through activated edges, or stopped by a failure).
    #[serde(default)]
    pub skipped_steps: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blank_extension_uris_are_not_sendable() {
        let mut c = MessageContent::text("x");
        assert!(c.check_sendable().is_ok());
        c.extensions = vec!["https://example.com/e".into(), "\t".into()];
        let e = c.check_sendable().unwrap_err();
        assert!(e.is(ErrorCode::WorkflowInvalidContent));
        assert_eq!(e.details["index"], json!(1));
        c.extensions = vec![String::new()];
        assert!(c.check_sendable().is_err());
    }

    #[test]
    fn shared_upstream_results_serialise_as_a_plain_array_and_round_trip() {
        let input = WorkflowInput {
            runtime_intent: Some("intent".into()),
            upstream_results: vec![Arc::new(UpstreamResult {
                step_name: "s1".into(),
                task_results: Vec::new(),
            })],
        };
        let value = serde_json::to_value(&input).unwrap();
        assert_eq!(
            value,
            json!({"runtimeIntent": "intent",
                   "upstreamResults": [{"stepName": "s1", "taskResults": []}]})
        );
        let back: WorkflowInput = serde_json::from_value(value).unwrap();
        assert_eq!(back, input);
        let empty: WorkflowInput = serde_json::from_value(json!({})).unwrap();
        assert!(empty.upstream_results.is_empty());
    }
}
