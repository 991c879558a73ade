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
//! * `journal` is told, before every send, what is about to be sent (write-ahead), and the remote
//!   task id as soon as it is known: with a run store the kernel journals both, so that a run
//!   resumed after a crash finds the work again instead of sending it twice. A failed
//!   [`DispatchJournal::before_send`] means the message must not be sent.
//! * [`RemoteClient::reattach`] is the resume path: find a journaled task again (GetTask by remote
//!   task id, else ListTasks by context id) and wait on it as `dispatch` would; never resend
//!   unless the request says so.
//! * Outputs: [`project_outputs`] gives the standard projection from evidence.

use crate::events::EventEmitter;
use a2aflow_model::a2a::{Artifact, TaskState};
use a2aflow_model::{
    ErrorCode, Failure, MessageContent, NegotiationReply, NegotiationRequest, Output, ReceivedKind,
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
    /// The context id to send in: the logical task's own (host-chosen, journaled, or a previous
    /// attempt's). `None`: the client mints one for this logical task.
    pub context_id: Option<&'a str>,
    /// The remote task the message continues (a gate's answer goes to the task that asked):
    /// the message carries this task id. `None`: the message starts a new remote task.
    pub continues: Option<&'a str>,
    /// The remote tasks of earlier attempts of this logical task, oldest first: a new task's
    /// first message names them in `referenceTaskIds`.
    pub reference_task_ids: &'a [String],
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
    /// Told before every send and when the remote task id is known (see the module docs).
    pub journal: &'a dyn DispatchJournal,
}

impl std::fmt::Debug for DispatchRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DispatchRequest")
            .field("execution_id", &self.execution_id)
            .field("local_task_id", &self.local_task_id)
            .field("agent", &self.agent)
            .field("skill", &self.skill)
            .field("content", &self.content)
            .field("context_id", &self.context_id)
            .field("continues", &self.continues)
            .field("reference_task_ids", &self.reference_task_ids)
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

/// What a client is about to send for a logical task: the write-ahead facts a resumed run needs
/// to find the work again, or to resend exactly the same message when the host allows it.
#[derive(Debug, Clone, Copy)]
pub struct SendIntent<'a> {
    /// The context id the message is sent in (the logical task's correlation key).
    pub context_id: &'a str,
    /// The message id of the message about to be sent.
    pub message_id: &'a str,
    /// The remote task the message continues, for a follow-up (a negotiation reply).
    pub remote_task_id: Option<&'a str>,
    /// The content about to be sent.
    pub content: &'a MessageContent,
}

/// The last check before a journaled send is written (see [`DispatchJournal::send_check`]):
/// `false` means the message must not go. Cheap and non-blocking: a client calls it inside a
/// poll, on the connection's task, at the moment the request's bytes would be written.
pub type SendCheck = std::sync::Arc<dyn Fn() -> bool + Send + Sync>;

/// Where a client reports what a dispatch is doing, so that the kernel can journal it. Without a
/// run store every call returns at once and [`DispatchJournal::is_enabled`] is false.
#[async_trait]
pub trait DispatchJournal: Send + Sync {
    /// True when reports are recorded; a client may skip building them otherwise.
    fn is_enabled(&self) -> bool;
    /// Records `send` before it goes out. An `Err` (the store failed) means: do not send; the
    /// task fails with it.
    async fn before_send(&self, send: SendIntent<'_>) -> Result<(), Failure>;
    /// The check a client makes at the last moment before the message [`before_send`] admitted
    /// is written (after its connection is ready), when the journal has one: a durable run's
    /// driver that was paused past its lease must not send, because another driver may have
    /// taken the run over and sent the command itself. A client that cannot check that late
    /// checks just before it hands the message over. `false`: nothing is sent; the run has
    /// already been stopped with the reason. Default: none.
    ///
    /// [`before_send`]: DispatchJournal::before_send
    fn send_check(&self) -> Option<SendCheck> {
        None
    }
    /// Records the remote task id, as soon as the agent names it.
    async fn remote_task_known(&self, context_id: &str, remote_task_id: &str);
    /// Records the last remote state seen.
    async fn remote_state(&self, remote_task_id: &str, state: TaskState);
    /// Records a remote task the agent just named together with the state it named it in (the
    /// state, when the reply gave one): [`DispatchJournal::remote_task_known`], then
    /// [`DispatchJournal::remote_state`]. A journal may write the two as one fact (a task
    /// named already terminal needs no write of its own before the task's end).
    async fn remote_task_named(
        &self,
        context_id: &str,
        remote_task_id: &str,
        state: Option<TaskState>,
    ) {
        self.remote_task_known(context_id, remote_task_id).await;
        if let Some(state) = state {
            self.remote_state(remote_task_id, state).await;
        }
    }
}

/// A [`DispatchJournal`] that records nothing (no run store, or a client used outside a run).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoJournal;

#[async_trait]
impl DispatchJournal for NoJournal {
    fn is_enabled(&self) -> bool {
        false
    }
    async fn before_send(&self, _: SendIntent<'_>) -> Result<(), Failure> {
        Ok(())
    }
    async fn remote_task_known(&self, _: &str, _: &str) {}
    async fn remote_state(&self, _: &str, _: TaskState) {}
}

/// A journaled task a resumed run finds again (see [`RemoteClient::reattach`]).
pub struct AttachRequest<'a> {
    /// The dispatch as it would be made now (agent, content, deadline, cancel, hooks).
    pub dispatch: DispatchRequest<'a>,
    /// The journaled context id.
    pub context_id: &'a str,
    /// The journaled message id of the last send.
    pub message_id: &'a str,
    /// The remote task id, when it was journaled.
    pub remote_task_id: Option<&'a str>,
    /// When no task is found for the context id: resend the journaled message with the same
    /// message id and context id (the host opted in), instead of `workflow.outcome_unknown`.
    pub resend: bool,
}

impl AttachRequest<'_> {
    /// The failure of a task whose outcome cannot be found again: `workflow.outcome_unknown`,
    /// with the agent, the local task id and the context id in its details.
    pub fn outcome_unknown(&self, why: &str) -> TaskFailure {
        let failure = Failure::new(
            ErrorCode::WorkflowOutcomeUnknown,
            format!(
                "the outcome of task {} on agent {} cannot be found again ({why}); nothing was resent",
                self.dispatch.local_task_id, self.dispatch.agent
            ),
        )
        .with_detail("agent", self.dispatch.agent)
        .with_detail("localTaskId", self.dispatch.local_task_id)
        .with_detail("contextId", self.context_id);
        TaskFailure {
            failure,
            context_id: Some(self.context_id.to_owned()),
            remote_task_id: self.remote_task_id.map(str::to_owned),
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

    /// Finds a journaled task again after a restart and waits on it to its end, as
    /// [`RemoteClient::dispatch`] would. The default cannot find anything: every such task ends
    /// `workflow.outcome_unknown` and nothing is sent.
    async fn reattach(&self, request: AttachRequest<'_>) -> Result<TaskOutcome, TaskFailure> {
        Err(request.outcome_unknown("this client cannot re-attach to remote tasks"))
    }

    /// Refreshes the credentials the client sends to `agent`, before the host's answer to an
    /// AUTH_REQUIRED gate of that agent goes out (the agent asked for authentication: a cached
    /// token must not be sent again). The default has no credentials to refresh. A failure ends
    /// the gated task with it, and the answer is not sent.
    async fn refresh_credentials(&self, agent: &str) -> Result<(), Failure> {
        let _ = agent;
        Ok(())
    }

    /// Sends CancelTask for `remote_task_id` on `agent` (a cancel journaled before a restart and
    /// not sent), returning by `deadline`. The default cannot: `a2a.unsupported_operation`, and
    /// the cancel stays pending in the journal.
    async fn cancel_remote(
        &self,
        agent: &str,
        remote_task_id: &str,
        deadline: Instant,
    ) -> Result<(), Failure> {
        let _ = deadline;
        Err(Failure::new(
            ErrorCode::A2aUnsupportedOperation,
            format!(
                "this client cannot cancel remote task {remote_task_id} on agent {agent} outside a \
                 dispatch"
            ),
        )
        .with_detail("agent", agent)
        .with_detail("remoteTaskId", remote_task_id))
    }
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
