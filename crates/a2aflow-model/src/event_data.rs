//! Typed event payloads: one struct per [`EventKind`] (a family of shapes for the kinds more than
//! one emitter produces), tied to its kind by [`EventData::KIND`] and gathered in
//! [`EventPayload`]. [`ClientEvent`] holds the kinds a remote client may emit, so a client
//! cannot pair a kernel kind with its data.
//!
//! Each struct serialises (camelCase, fields in this order) to exactly the `data` object the
//! engine emits, and reads back strictly (unknown keys and wrong types are refused), so
//! [`crate::Event::payload`] answers only for data of the kind's shape. A field typed `Option`
//! without `skip` is written as `null` when absent (the schema requires the key; the reader
//! also takes a missing key as `null`). `schemas/events.schema.json` describes the
//! same shapes; a test holds the two to agreement.
//!
//! The reserved kinds (`authorization_request`, `authorization_resolved`, `notification`) have
//! no payload type: workflows never emit them.

use crate::a2a::{Message, Role, Task, TaskState};
use crate::carriers::{
    MessageContent, NegotiationReply, NegotiationRequest, ReceivedMessage, StepResult, StepStatus,
    TaskOutcomeStatus, TaskResultView,
};
use crate::definition::StepType;
use crate::error_code::FailureCode;
use crate::event::EventKind;
use crate::failure::Failure;
use crate::gate::OpenGate;
use crate::shared_str::SharedStr;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::Arc;

/// Serde for a payload's shared member (`Arc<T>`): written and read as the `T` itself, so the
/// JSON is that of an unshared member.
mod shared {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::sync::Arc;

    pub(super) fn serialize<T: Serialize, S: Serializer>(
        v: &Arc<T>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        T::serialize(v, s)
    }

    pub(super) fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Arc<T>, D::Error> {
        T::deserialize(d).map(Arc::new)
    }
}

/// A payload type: the data of events of one kind.
pub trait EventData: Serialize + DeserializeOwned + Into<EventPayload> {
    /// The kind every event with this data has.
    const KIND: EventKind;
}

/// `start`: the run started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StartData {
    /// The workflow's name.
    pub workflow: String,
    /// The workflow's id.
    pub workflow_id: String,
    /// How many steps the workflow has.
    pub steps: usize,
}

/// `complete`: the run succeeded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CompleteData {
    /// Always true (a failed run emits `error` instead).
    pub success: bool,
    /// The steps that ran, in completion order (shared with the run's result while the event
    /// is delivered: the run takes them back when no consumer kept the event).
    #[serde(with = "shared")]
    pub steps: Arc<Vec<StepResult>>,
    /// The steps that did not run.
    pub skipped_steps: Vec<String>,
}

/// `close`: nothing more will be emitted (an empty object).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CloseData {}

/// `step_start`: a step started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StepStartData {
    /// The step.
    pub step: String,
    /// The step's type.
    pub step_type: StepType,
}

/// `step_complete`: a step finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StepCompleteData {
    /// The step (shared with the step's result).
    pub step: SharedStr,
    /// How it ended.
    pub status: StepStatus,
    /// Its tasks' results (shared with the step's record while the event is delivered).
    #[serde(with = "shared")]
    pub results: Arc<Vec<TaskResultView>>,
    /// Why it failed or was cancelled (`null` when it completed).
    pub failure: Option<Failure>,
}

/// `task_request`: a logical task was requested.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskRequestData {
    /// The step.
    pub step: String,
    /// The subtask's agent (empty for a delegating subtask).
    pub agent: String,
    /// The subtask's skill.
    pub skill: String,
    /// The subtask's description.
    pub task: String,
    /// Index of the subtask within its step.
    pub subtask_index: usize,
    /// The local task id.
    pub task_id: String,
}

/// `task_response`: a logical task finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskResponseData {
    /// The step (shared with the step's result).
    pub step: SharedStr,
    /// Index of the subtask within its step.
    pub subtask_index: usize,
    /// The task's result (shared with the step's record while the event is delivered).
    #[serde(with = "shared")]
    pub result: Arc<TaskResultView>,
}

/// `task_retry`: an attempt of a logical task failed, and the task is sent again after `delayMs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskRetryData {
    /// The step.
    pub step: String,
    /// Index of the subtask within its step.
    pub subtask_index: usize,
    /// The task's agent.
    pub agent: String,
    /// The attempt that failed, from 1 (the next one is `attempt + 1`).
    pub attempt: u32,
    /// The attempts the policy allows in all.
    pub max_attempts: u32,
    /// The failed attempt's code (the cause of the retry).
    pub code: FailureCode,
    /// The failed attempt's message.
    pub message: String,
    /// The failed attempt's remote task, when the agent created one (the next attempt names it in
    /// `referenceTaskIds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_task_id: Option<String>,
    /// The wait before the next attempt, in milliseconds.
    pub delay_ms: u64,
}

/// `task_status_changed`: a logical task reached its end state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskStatusChangedData {
    /// The step.
    pub step: String,
    /// Index of the subtask within its step.
    pub subtask_index: usize,
    /// The task's agent.
    pub agent: String,
    /// How the task ended.
    pub status: TaskOutcomeStatus,
}

/// `route_decision`: an edge was decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RouteDecisionData {
    /// The edge's source step.
    pub step: String,
    /// The edge's target step.
    pub next: String,
    /// The edge's condition text (blank for an unconditional edge).
    pub condition: String,
    /// True when the host decided the edge.
    pub conditional: bool,
    /// Whether the edge is taken.
    pub allowed: bool,
    /// The host's reason (`"unconditional edge"` for an unconditional one).
    pub reason: Option<String>,
}

/// `workflow_complete`: the workflow finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkflowCompleteData {
    /// Whether it succeeded.
    pub success: bool,
}

/// `error`: a step, a route or the run failed.
///
/// One shape for every emitter: `step` is present when the error concerns one step (a failed
/// step, a failed route), `steps` when the run failed as a whole after scheduling (the steps that
/// ran); a workflow rejected before scheduling has neither.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ErrorData {
    /// The step the error concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// A short text for people.
    pub error: String,
    /// The failure's code.
    pub error_code: FailureCode,
    /// The failure.
    pub failure: Failure,
    /// The steps that ran (run-level errors after scheduling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<StepResult>>,
}

// Payloads are built once per event and serialised at once; boxing the large members would
// cost one allocation per event for no saving.
#[allow(clippy::large_enum_variant)]
/// `agent_request`: a request was sent to an agent (or a child workflow).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum AgentRequestData {
    /// A request on the wire.
    Remote(RemoteRequestData),
    /// A request to an in-process client (no context or remote task).
    Local(LocalRequestData),
    /// The delegation request that starts a child workflow.
    Delegation(DelegationRequestData),
}

/// An `agent_request` on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RemoteRequestData {
    /// The agent.
    pub agent: String,
    /// The A2A context id of the logical subtask.
    pub context_id: String,
    /// The remote task continued (`null` for a first send).
    pub remote_task_id: Option<String>,
    /// The content sent.
    pub content: MessageContent,
    /// The protocol binding the request went on (`JSONRPC`, `HTTP+JSON` or `GRPC`, as the
    /// agent card names it); absent when the client did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binding: Option<String>,
}

/// An `agent_request` of an in-process client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LocalRequestData {
    /// The agent.
    pub agent: String,
    /// The content.
    pub content: MessageContent,
}

/// The `agent_request` of a delegating subtask.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DelegationRequestData {
    /// The child workflow.
    pub workflow: String,
    /// The child run's execution id.
    pub child_execution_id: String,
    /// The delegation request as an A2A message.
    pub delegation_request: Message,
}

// Payloads are built once per event and serialised at once; boxing the large members would
// cost one allocation per event for no saving.
#[allow(clippy::large_enum_variant)]
/// `agent_response`: an agent (or a child workflow) answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum AgentResponseData {
    /// An interaction on the wire ended.
    Remote(RemoteResponseData),
    /// An in-process client answered.
    Local(LocalResponseData),
    /// A delegation's task record (accepted or refused).
    Delegation(DelegationResponseData),
}

/// The end of an interaction on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RemoteResponseData {
    /// The agent.
    pub agent: String,
    /// The A2A context id.
    pub context_id: String,
    /// The remote task id, when one is known.
    pub remote_task_id: Option<String>,
    /// Whether the interaction succeeded.
    pub success: bool,
    /// The failure's code (`null` on success).
    pub error_code: Option<FailureCode>,
    /// The evidence received.
    pub received_messages: Vec<ReceivedMessage>,
}

/// The answer of an in-process client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LocalResponseData {
    /// The agent.
    pub agent: String,
    /// Whether the task succeeded.
    pub ok: bool,
    /// How many messages were received.
    pub received_messages: usize,
}

/// A delegation's task record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DelegationResponseData {
    /// The child workflow.
    pub workflow: String,
    /// The child run's execution id (`null` when the delegation was refused).
    pub child_execution_id: Option<String>,
    /// The A2A task record (boxed, as the negotiation request is: it keeps every payload small).
    pub delegation_task: Box<Task>,
}

/// `agent_status_update`: a task snapshot or status update arrived.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentStatusUpdateData {
    /// The agent.
    pub agent: String,
    /// The remote task id, when known.
    pub task_id: Option<String>,
    /// The remote task's state, when known.
    pub state: Option<TaskState>,
    /// True when the state is terminal.
    pub is_final: bool,
    /// The status message's text, when there is one.
    pub text: Option<String>,
    /// The status update's metadata (a snapshot's: the task's).
    pub metadata: Option<Map<String, Value>>,
}

/// `agent_artifact_update`: an artifact (chunk) arrived.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentArtifactUpdateData {
    /// The agent.
    pub agent: String,
    /// The remote task id, when known.
    pub task_id: Option<String>,
    /// The artifact's id.
    pub artifact_id: Option<String>,
    /// The artifact's name.
    pub artifact_name: Option<String>,
    /// True when the chunk appends to an artifact already received.
    pub append: bool,
    /// True when this is the artifact's last chunk.
    pub last_chunk: bool,
    /// The update's metadata.
    pub metadata: Option<Map<String, Value>>,
}

/// `agent_message_event`: a direct message arrived.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentMessageEventData {
    /// The agent.
    pub agent: String,
    /// The message's role.
    pub role: Option<Role>,
    /// The message's text.
    pub text: Option<String>,
    /// The message's metadata.
    pub metadata: Option<Map<String, Value>>,
}

/// `negotiation_request`: a Negotiation-T proposal reached the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NegotiationRequestData {
    /// The agent.
    pub agent: String,
    /// The exchange number, from 1.
    pub exchange: u32,
    /// What the host's hook received (boxed: it is the largest payload member, and every event's
    /// payload is as large as the largest).
    pub request: Box<NegotiationRequest>,
}

/// `negotiation_resolved`: the host replied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NegotiationResolvedData {
    /// The agent.
    pub agent: String,
    /// The exchange number, from 1.
    pub exchange: u32,
    /// The host's reply.
    pub reply: NegotiationReply,
}

// Payloads are built once per event and serialised at once; boxing the large members would
// cost one allocation per event for no saving.
#[allow(clippy::large_enum_variant)]
/// `negotiation_failed`: a negotiation ended without success.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum NegotiationFailedData {
    /// The remote client ended it (invalid proposal, budget, checks, Stop, ABORT).
    Client(ClientNegotiationFailedData),
    /// The host's negotiation hook failed (reported by the kernel).
    Host(HostNegotiationFailedData),
}

/// A negotiation the remote client ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientNegotiationFailedData {
    /// The agent.
    pub agent: String,
    /// The A2A context id.
    pub context_id: String,
    /// The remote task id (`null` in pre-task mode).
    pub remote_task_id: Option<String>,
    /// Exchanges completed before the failure.
    pub exchange: u32,
    /// The failure's message.
    pub error: String,
    /// The failure's code.
    pub error_code: FailureCode,
    /// The offending negotiation context, when the failure names one.
    pub negotiation_context: Option<Value>,
}

/// A negotiation whose host hook failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostNegotiationFailedData {
    /// The agent.
    pub agent: String,
    /// The exchange number, from 1.
    pub exchange: u32,
    /// The failure's message.
    pub error: String,
    /// The failure's code.
    pub error_code: FailureCode,
}

// Payloads are built once per event and serialised at once; boxing the large members would
// cost one allocation per event for no saving.
#[allow(clippy::large_enum_variant)]
/// An event a remote client may emit: the `agent_*` and `negotiation_*` kinds. A client's
/// emitter takes only this type, so a kernel kind cannot come from a client.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ClientEvent {
    /// `agent_request`.
    AgentRequest(AgentRequestData),
    /// `agent_response`.
    AgentResponse(AgentResponseData),
    /// `agent_status_update`.
    AgentStatusUpdate(AgentStatusUpdateData),
    /// `agent_artifact_update`.
    AgentArtifactUpdate(AgentArtifactUpdateData),
    /// `agent_message_event`.
    AgentMessageEvent(AgentMessageEventData),
    /// `negotiation_request`.
    NegotiationRequest(NegotiationRequestData),
    /// `negotiation_resolved`.
    NegotiationResolved(NegotiationResolvedData),
    /// `negotiation_failed`.
    NegotiationFailed(NegotiationFailedData),
}

/// `task_gated`: a logical task parked at a gate and waits for the host's answer.
pub type TaskGatedData = OpenGate;

// Every event's payload is one allocation of this enum's size (an event holds it in an `Arc`):
// the rare large members are boxed (a negotiation request, a delegation's task record) so that
// the frequent small ones do not pay for them.
#[allow(clippy::large_enum_variant)]
/// The typed data of any event a run emits.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum EventPayload {
    /// `start`.
    Start(StartData),
    /// `complete`.
    Complete(CompleteData),
    /// `close`.
    Close(CloseData),
    /// `step_start`.
    StepStart(StepStartData),
    /// `step_complete`.
    StepComplete(StepCompleteData),
    /// `task_request`.
    TaskRequest(TaskRequestData),
    /// `task_response`.
    TaskResponse(TaskResponseData),
    /// `task_status_changed`.
    TaskStatusChanged(TaskStatusChangedData),
    /// `route_decision`.
    RouteDecision(RouteDecisionData),
    /// `workflow_complete`.
    WorkflowComplete(WorkflowCompleteData),
    /// `error`.
    Error(ErrorData),
    /// An `agent_*` or `negotiation_*` event.
    Client(ClientEvent),
    /// `task_gated`.
    TaskGated(TaskGatedData),
    /// `task_retry`.
    TaskRetry(TaskRetryData),
}

/// Why an event's data is not its kind's payload.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PayloadError {
    /// The kind is reserved and has no payload type.
    #[error("event kind {0} is reserved and has no payload type")]
    Reserved(EventKind),
    /// The data does not have the kind's shape.
    #[error("the data of a {kind} event does not have its shape: {source}")]
    Shape {
        /// The event's kind.
        kind: EventKind,
        /// What serde found.
        source: serde_json::Error,
    },
    /// A `host_event`: its data is the host's own and has no payload type.
    #[error("the data of a host_event is the host's own and has no payload type")]
    HostData,
}

/// Reads `data` as payload `T` of `kind`.
fn read<T: DeserializeOwned>(kind: EventKind, data: &Value) -> Result<T, PayloadError> {
    T::deserialize(data).map_err(|source| PayloadError::Shape { kind, source })
}

impl ClientEvent {
    /// The kind of the event.
    pub fn kind(&self) -> EventKind {
        match self {
            ClientEvent::AgentRequest(_) => EventKind::AgentRequest,
            ClientEvent::AgentResponse(_) => EventKind::AgentResponse,
            ClientEvent::AgentStatusUpdate(_) => EventKind::AgentStatusUpdate,
            ClientEvent::AgentArtifactUpdate(_) => EventKind::AgentArtifactUpdate,
            ClientEvent::AgentMessageEvent(_) => EventKind::AgentMessageEvent,
            ClientEvent::NegotiationRequest(_) => EventKind::NegotiationRequest,
            ClientEvent::NegotiationResolved(_) => EventKind::NegotiationResolved,
            ClientEvent::NegotiationFailed(_) => EventKind::NegotiationFailed,
        }
    }

    /// The event's `data` object.
    pub fn to_data(&self) -> Result<Value, serde_json::Error> {
        match self {
            ClientEvent::AgentRequest(d) => serde_json::to_value(d),
            ClientEvent::AgentResponse(d) => serde_json::to_value(d),
            ClientEvent::AgentStatusUpdate(d) => serde_json::to_value(d),
            ClientEvent::AgentArtifactUpdate(d) => serde_json::to_value(d),
            ClientEvent::AgentMessageEvent(d) => serde_json::to_value(d),
            ClientEvent::NegotiationRequest(d) => serde_json::to_value(d),
            ClientEvent::NegotiationResolved(d) => serde_json::to_value(d),
            ClientEvent::NegotiationFailed(d) => serde_json::to_value(d),
        }
    }
}

/// Writes the event's `data` object straight from the typed payload: the same bytes as
/// serialising [`ClientEvent::to_data`], without building the `Value` tree.
impl Serialize for ClientEvent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ClientEvent::AgentRequest(d) => d.serialize(s),
            ClientEvent::AgentResponse(d) => d.serialize(s),
            ClientEvent::AgentStatusUpdate(d) => d.serialize(s),
            ClientEvent::AgentArtifactUpdate(d) => d.serialize(s),
            ClientEvent::AgentMessageEvent(d) => d.serialize(s),
            ClientEvent::NegotiationRequest(d) => d.serialize(s),
            ClientEvent::NegotiationResolved(d) => d.serialize(s),
            ClientEvent::NegotiationFailed(d) => d.serialize(s),
        }
    }
}

/// Writes the event's `data` object straight from the typed payload: the same bytes as
/// serialising [`EventPayload::to_data`] (maps keep their insertion order), without building
/// the `Value` tree.
impl Serialize for EventPayload {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            EventPayload::Start(d) => d.serialize(s),
            EventPayload::Complete(d) => d.serialize(s),
            EventPayload::Close(d) => d.serialize(s),
            EventPayload::StepStart(d) => d.serialize(s),
            EventPayload::StepComplete(d) => d.serialize(s),
            EventPayload::TaskRequest(d) => d.serialize(s),
            EventPayload::TaskResponse(d) => d.serialize(s),
            EventPayload::TaskStatusChanged(d) => d.serialize(s),
            EventPayload::RouteDecision(d) => d.serialize(s),
            EventPayload::WorkflowComplete(d) => d.serialize(s),
            EventPayload::Error(d) => d.serialize(s),
            EventPayload::Client(c) => c.serialize(s),
            EventPayload::TaskGated(d) => d.serialize(s),
            EventPayload::TaskRetry(d) => d.serialize(s),
        }
    }
}

impl EventPayload {
    /// The kind of the event this payload belongs to.
    pub fn kind(&self) -> EventKind {
        match self {
            EventPayload::Start(_) => EventKind::Start,
            EventPayload::Complete(_) => EventKind::Complete,
            EventPayload::Close(_) => EventKind::Close,
            EventPayload::StepStart(_) => EventKind::StepStart,
            EventPayload::StepComplete(_) => EventKind::StepComplete,
            EventPayload::TaskRequest(_) => EventKind::TaskRequest,
            EventPayload::TaskResponse(_) => EventKind::TaskResponse,
            EventPayload::TaskStatusChanged(_) => EventKind::TaskStatusChanged,
            EventPayload::RouteDecision(_) => EventKind::RouteDecision,
            EventPayload::WorkflowComplete(_) => EventKind::WorkflowComplete,
            EventPayload::Error(_) => EventKind::Error,
            EventPayload::Client(c) => c.kind(),
            EventPayload::TaskGated(_) => EventKind::TaskGated,
            EventPayload::TaskRetry(_) => EventKind::TaskRetry,
        }
    }

    /// The event's `data` object. Serialising these types fails only if a nested map had
    /// non-string keys, which none has; the error is passed on rather than assumed away.
    pub fn to_data(&self) -> Result<Value, serde_json::Error> {
        match self {
            EventPayload::Start(d) => serde_json::to_value(d),
            EventPayload::Complete(d) => serde_json::to_value(d),
            EventPayload::Close(d) => serde_json::to_value(d),
            EventPayload::StepStart(d) => serde_json::to_value(d),
            EventPayload::StepComplete(d) => serde_json::to_value(d),
            EventPayload::TaskRequest(d) => serde_json::to_value(d),
            EventPayload::TaskResponse(d) => serde_json::to_value(d),
            EventPayload::TaskStatusChanged(d) => serde_json::to_value(d),
            EventPayload::RouteDecision(d) => serde_json::to_value(d),
            EventPayload::WorkflowComplete(d) => serde_json::to_value(d),
            EventPayload::Error(d) => serde_json::to_value(d),
            EventPayload::Client(c) => c.to_data(),
            EventPayload::TaskGated(d) => serde_json::to_value(d),
            EventPayload::TaskRetry(d) => serde_json::to_value(d),
        }
    }

    /// Reads the `data` of an event of `kind` as that kind's payload.
    pub fn from_data(kind: EventKind, data: &Value) -> Result<EventPayload, PayloadError> {
        use ClientEvent as C;
        use EventPayload as P;
        let client = |c: ClientEvent| P::Client(c);
        match kind {
            EventKind::Start => read(kind, data).map(P::Start),
            EventKind::Complete => read(kind, data).map(P::Complete),
            EventKind::Close => read(kind, data).map(P::Close),
            EventKind::StepStart => read(kind, data).map(P::StepStart),
            EventKind::StepComplete => read(kind, data).map(P::StepComplete),
            EventKind::TaskRequest => read(kind, data).map(P::TaskRequest),
            EventKind::TaskResponse => read(kind, data).map(P::TaskResponse),
            EventKind::TaskStatusChanged => read(kind, data).map(P::TaskStatusChanged),
            EventKind::RouteDecision => read(kind, data).map(P::RouteDecision),
            EventKind::WorkflowComplete => read(kind, data).map(P::WorkflowComplete),
            EventKind::Error => read(kind, data).map(P::Error),
            EventKind::AgentRequest => read(kind, data).map(C::AgentRequest).map(client),
            EventKind::AgentResponse => read(kind, data).map(C::AgentResponse).map(client),
            EventKind::AgentStatusUpdate => read(kind, data).map(C::AgentStatusUpdate).map(client),
            EventKind::AgentArtifactUpdate => {
                read(kind, data).map(C::AgentArtifactUpdate).map(client)
            }
            EventKind::AgentMessageEvent => read(kind, data).map(C::AgentMessageEvent).map(client),
            EventKind::NegotiationRequest => {
                read(kind, data).map(C::NegotiationRequest).map(client)
            }
            EventKind::NegotiationResolved => {
                read(kind, data).map(C::NegotiationResolved).map(client)
            }
            EventKind::NegotiationFailed => read(kind, data).map(C::NegotiationFailed).map(client),
            EventKind::AuthorizationRequest
            | EventKind::AuthorizationResolved
            | EventKind::Notification => Err(PayloadError::Reserved(kind)),
            EventKind::TaskGated => read(kind, data).map(P::TaskGated),
            EventKind::TaskRetry => read(kind, data).map(P::TaskRetry),
            EventKind::HostEvent => Err(PayloadError::HostData),
        }
    }
}

impl From<ClientEvent> for EventPayload {
    fn from(c: ClientEvent) -> Self {
        EventPayload::Client(c)
    }
}

/// Ties kernel payload structs to their kind and variant.
macro_rules! kernel_payloads {
    ($( $ty:ident => $variant:ident, )*) => {$(
        impl EventData for $ty {
            const KIND: EventKind = EventKind::$variant;
        }
        impl From<$ty> for EventPayload {
            fn from(d: $ty) -> Self {
                EventPayload::$variant(d)
            }
        }
    )*};
}

/// Ties client payload types to their kind and variant.
macro_rules! client_payloads {
    ($( $ty:ident => $variant:ident, )*) => {$(
        impl EventData for $ty {
            const KIND: EventKind = EventKind::$variant;
        }
        impl From<$ty> for ClientEvent {
            fn from(d: $ty) -> Self {
                ClientEvent::$variant(d)
            }
        }
        impl From<$ty> for EventPayload {
            fn from(d: $ty) -> Self {
                EventPayload::Client(ClientEvent::$variant(d))
            }
        }
    )*};
}

kernel_payloads! {
    StartData => Start,
    CompleteData => Complete,
    CloseData => Close,
    StepStartData => StepStart,
    StepCompleteData => StepComplete,
    TaskRequestData => TaskRequest,
    TaskResponseData => TaskResponse,
    TaskStatusChangedData => TaskStatusChanged,
    RouteDecisionData => RouteDecision,
    WorkflowCompleteData => WorkflowComplete,
    ErrorData => Error,
    TaskGatedData => TaskGated,
    TaskRetryData => TaskRetry,
}

client_payloads! {
    AgentRequestData => AgentRequest,
    AgentResponseData => AgentResponse,
    AgentStatusUpdateData => AgentStatusUpdate,
    AgentArtifactUpdateData => AgentArtifactUpdate,
    AgentMessageEventData => AgentMessageEvent,
    NegotiationRequestData => NegotiationRequest,
    NegotiationResolvedData => NegotiationResolved,
    NegotiationFailedData => NegotiationFailed,
}

/// The families' members are payloads of their family's kind and convert into it.
macro_rules! family_members {
    ($( $family:ident :: $variant:ident ( $ty:ident ) => $kind:ident, )*) => {$(
        impl EventData for $ty {
            const KIND: EventKind = EventKind::$kind;
        }
        impl From<$ty> for $family {
            fn from(d: $ty) -> Self {
                $family::$variant(d)
            }
        }
        impl From<$ty> for ClientEvent {
            fn from(d: $ty) -> Self {
                ClientEvent::from($family::$variant(d))
            }
        }
        impl From<$ty> for EventPayload {
            fn from(d: $ty) -> Self {
                EventPayload::Client(ClientEvent::from($family::$variant(d)))
            }
        }
    )*};
}

family_members! {
    AgentRequestData::Remote(RemoteRequestData) => AgentRequest,
    AgentRequestData::Local(LocalRequestData) => AgentRequest,
    AgentRequestData::Delegation(DelegationRequestData) => AgentRequest,
    AgentResponseData::Remote(RemoteResponseData) => AgentResponse,
    AgentResponseData::Local(LocalResponseData) => AgentResponse,
    AgentResponseData::Delegation(DelegationResponseData) => AgentResponse,
    NegotiationFailedData::Client(ClientNegotiationFailedData) => NegotiationFailed,
    NegotiationFailedData::Host(HostNegotiationFailedData) => NegotiationFailed,
}
