//! The remote-client contract: how the kernel hands one logical task to whatever reaches the
//! agents. The kernel knows nothing about transports; the protocol crate implements
//! [`RemoteClient`] over A2A, tests and benchmarks use [`crate::InMemoryClient`].
//!
//! # Contract for implementors
//!
//! * One call to [`RemoteClient::dispatch`] is one *logical* task: the client owns its remote
//!   identity (context id, first remote task id), waiting, and the Negotiation-T loop.
//! * `deadline` is the run's single deadline; the client must return by then. When `cancel`
//!   fires (run cancelled, ANY_SUCCESS loser, deadline passed) the client should stop waiting,
//!   make its best-effort remote cancel, and return promptly. The kernel waits a bounded grace
//!   period for that and then drops the call; results after cancellation or the deadline are
//!   discarded by the kernel in any case.
//! * Negotiation proposals go to the host through `negotiation` (never to the host directly): the
//!   kernel emits the negotiation events, bounds the callback by the deadline, and maps a panic or
//!   a missing callback to a typed failure.
//! * `events` accepts the `agent_*` events; they are ordered with the kernel's own events.
//! * Outputs: [`project_outputs`] gives the standard projection from evidence.

use crate::events::EventEmitter;
use a2aflow_model::a2a::{Artifact, TaskState};
use a2aflow_model::{
    Failure, MessageContent, NegotiationReply, NegotiationRequest, Output, ReceivedKind,
    ReceivedMessage, TaskRequest,
};
use async_trait::async_trait;
use serde_json::Map;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Everything a client needs to run one logical task.
pub struct DispatchRequest<'a> {
    /// The run's execution id.
    pub execution_id: &'a str,
    /// The stable local id of this logical task.
    pub local_task_id: &'a str,
    /// The agent to send to.
    pub agent: &'a str,
    /// The requested skill.
    pub skill: &'a str,
    /// The host's content, to be sent unchanged.
    pub content: MessageContent,
    /// The task request the content was made from (negotiation requests carry it).
    pub task: &'a TaskRequest,
    /// The run's deadline, shared by everything in the run.
    pub deadline: Instant,
    /// Fires when the task must stop (run cancelled, ANY_SUCCESS loser, deadline).
    pub cancel: CancellationToken,
    /// Reaches the host's `on_negotiation` through the kernel.
    pub negotiation: &'a dyn NegotiationHook,
    /// Emits `agent_*` events into the run's event stream.
    pub events: EventEmitter,
}

impl std::fmt::Debug for DispatchRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DispatchRequest")
            .field("execution_id", &self.execution_id)
            .field("local_task_id", &self.local_task_id)
            .field("agent", &self.agent)
            .field("skill", &self.skill)
            .field("content", &self.content)
            .finish_non_exhaustive()
    }
}

/// A logical task that ended well.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TaskOutcome {
    /// The context id used for the logical task.
    pub context_id: Option<String>,
    /// The first remote task id, when a task was created.
    pub remote_task_id: Option<String>,
    /// Business outputs (see [`project_outputs`]).
    pub outputs: Vec<Output>,
    /// Every remote message, task or update received, as evidence.
    pub received_messages: Vec<ReceivedMessage>,
}

impl TaskOutcome {
    /// An outcome whose outputs are projected from the evidence as a success.
    pub fn from_evidence(
        context_id: Option<String>,
        remote_task_id: Option<String>,
        received_messages: Vec<ReceivedMessage>,
    ) -> Self {
        TaskOutcome {
            outputs: project_outputs(&received_messages, true),
            context_id,
            remote_task_id,
            received_messages,
        }
    }
}

/// A logical task that failed, with its evidence.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{failure}")]
pub struct TaskFailure {
    /// The failure, with a stable code.
    pub failure: Failure,
    /// The context id used, when one was.
    pub context_id: Option<String>,
    /// The first remote task id, when a task was created.
    pub remote_task_id: Option<String>,
    /// Evidence received before the failure (partial artifacts become outputs).
    pub received_messages: Vec<ReceivedMessage>,
}

impl TaskFailure {
    /// A failure without remote identity or evidence.
    pub fn new(failure: Failure) -> Self {
        TaskFailure {
            failure,
            context_id: None,
            remote_task_id: None,
            received_messages: Vec::new(),
        }
    }
}

/// Reaches the host's `on_negotiation` from inside a dispatch.
#[async_trait]
pub trait NegotiationHook: Send + Sync {
    /// Asks the host for a reply to one proposal. An `Err` carries a stable code
    /// (`workflow.callback_missing`, `workflow.timeout`, `workflow.cancelled`, a host business
    /// code, …); the client fails the task with it.
    async fn negotiate(&self, request: NegotiationRequest) -> Result<NegotiationReply, Failure>;
}

/// Dispatches logical tasks to remote agents. Transport-neutral; see the module docs.
#[async_trait]
pub trait RemoteClient: Send + Sync {
    /// Runs one logical task to its end.
    async fn dispatch(&self, request: DispatchRequest<'_>) -> Result<TaskOutcome, TaskFailure>;
}

/// Projects business outputs from evidence.
///
/// Artifacts win: when any received object carries artifacts, there is one output per artifact
/// id (first-seen order, the latest snapshot of each), whatever the outcome — partial artifacts of
/// a failed task stay outputs. Without artifacts, and only when `success`, the parts of the final
/// message (a direct message, or the status message of a COMPLETED task) are one output; a
/// message without parts gives none. Failed or other status messages are evidence only. Nothing
/// is parsed, concatenated or flattened.
pub fn project_outputs(received: &[ReceivedMessage], success: bool) -> Vec<Output> {
    let mut artifacts: Vec<&Artifact> = Vec::new();
    for r in received {
        for a in &r.artifacts {
            match artifacts
                .iter_mut()
                .find(|x| x.artifact_id == a.artifact_id)
            {
                Some(slot) => *slot = a,
                None => artifacts.push(a),
            }
        }
    }
    if !artifacts.is_empty() {
        return artifacts
            .into_iter()
            .map(|a| Output {
                artifact_id: Some(a.artifact_id.clone()),
                name: a.name.clone(),
                parts: a.parts.clone(),
                metadata: a.metadata.as_ref().map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect::<Map<_, _>>()
                }),
            })
            .collect();
    }
    if !success {
        return Vec::new();
    }
    let last = received.iter().rev().find(|r| {
        r.message.is_some()
            && match r.kind {
                ReceivedKind::Message => true,
                ReceivedKind::Task | ReceivedKind::StatusUpdate => {
                    r.state == Some(TaskState::Completed)
                }
                ReceivedKind::ArtifactUpdate => false,
            }
    });
    match last.and_then(|r| r.message.as_ref()) {
        Some(m) if !m.parts.is_empty() => vec![Output {
            parts: m.parts.clone(),
            ..Default::default()
        }],
        _ => Vec::new(),
    }
}
