//! [`A2aEngineClient`]: the kernel's [`RemoteClient`] over A2A transports.
//!
//! One dispatch is one logical task: a fresh context id, the host's content sent unchanged as a
//! `ROLE_USER` message, waiting (stream when the card says so, else SendMessage then GetTask with
//! bounded exponential backoff; a dropped stream is resubscribed, then polled), the Negotiation-T
//! loop through the kernel's hook, and a bounded best-effort CancelTask when a local failure ends an
//! interaction whose remote task is known and not final — or, when the interaction was interrupted
//! before the task id was known, once a late answer names it (`LateAnswer`).

use super::config::ClientConfig;
use super::neg_context::Levels;
use super::negotiation::{
    Entry, FailedAt, NegotiationLoop, aborted_failure, emit_failed, not_activated, stop_failure,
};
use a2aflow_kernel::{
    AttachRequest, DispatchJournal, DispatchRequest, EventEmitter, NegotiationHook, NoJournal,
    RemoteClient, SendIntent, TaskFailure, TaskOutcome, project_outputs,
};
use a2aflow_model::a2a::{
    self, AgentCard, CancelTaskRequest, GetTaskRequest, ListTasksRequest, ListTasksResponse, Part,
    SendMessageConfiguration, SendMessageRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskState,
};
use a2aflow_model::event_data::{
    AgentArtifactUpdateData, AgentMessageEventData, AgentStatusUpdateData, RemoteRequestData,
    RemoteResponseData,
};
use a2aflow_model::{
    ClientEvent, ErrorCode, Failure, Gate, MessageContent, NegotiationReply, NegotiationRequest,
    ReceivedKind, ReceivedMessage, TaskRequest,
};
use a2aflow_protocol::SendGate;
use a2aflow_protocol::channel::{AgentChannel, AgentTable};
use a2aflow_protocol::end_state::{Observation, observe, with_identity};
use a2aflow_protocol::error::{TimeoutPhase, TransportError};
use a2aflow_protocol::headers::CallOptions;
use a2aflow_protocol::limits::Limits;
use a2aflow_protocol::outgoing::user_message_with_id;
use a2aflow_protocol::stream::StreamResponseStream;
use a2aflow_protocol::transport::Transport;
use a2aflow_protocol::view::{Folded, ResponseReducer, TaskView};
use a2at::{ActivationError, ContentExtensions, DeclaredExtension, ExtensionPlan};
use async_trait::async_trait;
use futures_util::StreamExt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// One agent the client can reach (the channel the wire crate's door built, or one over a
/// transport the host built).
type Agent = AgentChannel;

/// The A2A engine client. Cheap to share behind an `Arc`; every dispatch is independent.
#[derive(Debug, Clone)]
pub struct A2aEngineClient {
    agents: AgentTable,
    config: ClientConfig,
}

/// Emits `event` in a future of its own. A client event is about 1 KiB (its largest payload),
/// and an emit awaited inline would make it part of every future around the await: a waiting
/// task holds the largest state of each of its futures, so that much per task in flight.
pub(crate) fn emit_boxed(
    events: &EventEmitter,
    event: ClientEvent,
) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
    Box::pin(events.emit(event))
}

/// What ends every wait of one interaction: its token firing or its deadline passing, checked in
/// that order before the awaited future. Both are made once per interaction and pinned in the
/// caller's future, so an interaction keeps one timer entry and one cancellation waiter instead
/// of registering new ones for each of its waits.
struct Stop<'a> {
    cancelled: Pin<&'a mut WaitForCancellationFutureOwned>,
    timer: Pin<&'a mut Sleep>,
}

impl Stop<'_> {
    /// Waits for `fut` unless the token fires or the deadline passes first.
    async fn bounded<T>(&mut self, fut: impl Future<Output = T>) -> Result<T, Failure> {
        tokio::select! {
            biased;
            () = self.cancelled.as_mut() => Err(interrupted_by_cancel()),
            () = self.timer.as_mut() => Err(interrupted_by_deadline()),
            v = fut => Ok(v),
        }
    }
}

fn interrupted_by_cancel() -> Failure {
    Failure::new(ErrorCode::WorkflowCancelled, "Task interaction cancelled")
}

fn interrupted_by_deadline() -> Failure {
    Failure::new(ErrorCode::WorkflowTimeout, "Task interaction timed out")
}

/// The failure of content that does not fit the agent's card, with the codes the extension
/// sender reports for the same refusals: an undeclared A2A-T extension is
/// `a2a.extension_not_supported`, a required one not activated `a2a.extension_support_required`.
fn activation_failure(e: ActivationError, agent: &str) -> Failure {
    match e {
        ActivationError::NotDeclared { .. } => {
            Failure::new(ErrorCode::A2aExtensionNotSupported, format!("{e}: {agent}"))
        }
        ActivationError::RequiredNotActivated { .. } => {
            Failure::new(ErrorCode::A2aExtensionSupportRequired, e.to_string())
        }
        // Only an independent operation needs its extension used; a workflow send names none.
        other => Failure::new(ErrorCode::ConfigInvalid, other.to_string()),
    }
}

fn text_of(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(Part::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A transport error as the interaction's failure: the run's own deadline expiring inside a call
/// is the run's timeout, like every other wait.
fn transport_failure(e: &TransportError) -> Failure {
    match e {
        TransportError::Timeout {
            phase: TimeoutPhase::Deadline,
            ..
        } => interrupted_by_deadline(),
        other => other.to_failure(),
    }
}

/// How long a finished stream is read for its end before it is dropped.
const STREAM_DRAIN: Duration = Duration::from_millis(100);

/// Transient GetTask failures tolerated in a row before the interaction fails (GetTask is
/// idempotent; the business command itself is never resent).
const MAX_POLL_FAILURES: u32 = 3;

/// Connection trouble, a request timeout or a 5xx: worth one more poll.
fn is_transient(e: &TransportError) -> bool {
    match e {
        TransportError::Connection(_) => true,
        TransportError::Timeout { phase, .. } => *phase != TimeoutPhase::Deadline,
        TransportError::HttpStatus { status, .. } => *status >= 500,
        _ => false,
    }
}

/// A stream that broke under the interaction (connection lost, gone silent, ended mid-event or
/// unreadable), which a resubscribe may mend. An agent's structured error (an `event: error`, or
/// an error envelope inside the stream) is its answer, and a limit exceeded is final: neither is
/// retried.
fn is_stream_break(e: &TransportError) -> bool {
    match e {
        TransportError::Connection(_) | TransportError::InvalidResponse(_) => true,
        TransportError::Timeout { phase, .. } => *phase != TimeoutPhase::Deadline,
        _ => false,
    }
}

/// The gates: the interaction stops, the remote task may be resumed later.
fn is_gate(f: &Failure) -> bool {
    f.gate().is_some()
}

/// Which `agent_*` event a received object becomes.
#[derive(Clone, Copy)]
enum ObjectKind {
    /// A task snapshot or a status update: `agent_status_update`.
    Status,
    /// An artifact update: `agent_artifact_update`.
    Artifact,
    /// A direct message: `agent_message_event`.
    Message,
}

impl ObjectKind {
    fn of(event: &StreamResponse) -> ObjectKind {
        match event {
            StreamResponse::Task(_) | StreamResponse::StatusUpdate(_) => ObjectKind::Status,
            StreamResponse::ArtifactUpdate(_) => ObjectKind::Artifact,
            StreamResponse::Message(_) => ObjectKind::Message,
        }
    }
}

/// A send in flight, owning its request: it can outlive the wait that started it.
type PendingSend<T> = Pin<Box<dyn Future<Output = Result<T, TransportError>> + Send>>;

/// An answer still on its way when the interaction was interrupted (cancelled, deadline) before
/// any answer named the remote task: the blocking send, the streaming send still opening, or the
/// open stream whose first event has not arrived. Dropping it drops the request.
enum LateAnswer {
    /// A SendMessage in flight.
    Blocking(PendingSend<SendMessageResponse>),
    /// A SendStreamingMessage whose response head has not arrived.
    Opening(PendingSend<StreamResponseStream>),
    /// An open stream that has not yet delivered an event naming a task.
    Stream(StreamResponseStream),
}

impl LateAnswer {
    /// Waits (unbounded: the caller bounds it) for the first answer and returns the task it
    /// names with whether that task is final; `None` when the answer names no task or fails.
    async fn identity(&mut self) -> Option<(String, bool)> {
        let first = match self {
            LateAnswer::Blocking(send) => send.await.ok().map(event_of),
            LateAnswer::Opening(send) => match send.await {
                Ok(mut stream) => stream.next().await.and_then(Result::ok),
                Err(_) => None,
            },
            LateAnswer::Stream(stream) => stream.next().await.and_then(Result::ok),
        };
        named_task(&first?)
    }
}

/// A blocking answer as the stream event it is equivalent to.
fn event_of(response: SendMessageResponse) -> StreamResponse {
    match response {
        SendMessageResponse::Task(t) => StreamResponse::Task(t),
        SendMessageResponse::Message(m) => StreamResponse::Message(m),
    }
}

/// The remote task an answer names and whether it is final; `None` for a message outside any task.
fn named_task(event: &StreamResponse) -> Option<(String, bool)> {
    match event {
        StreamResponse::Task(t) => Some((t.id.clone(), t.status.state.is_terminal())),
        StreamResponse::StatusUpdate(u) => Some((u.task_id.clone(), u.status.state.is_terminal())),
        StreamResponse::ArtifactUpdate(a) => Some((a.task_id.clone(), false)),
        StreamResponse::Message(m) => m.task_id.clone().map(|id| (id, false)),
    }
}

/// Whether `evidence` ends with the view's direct message as it was folded: that entry is then
/// what the reducer's `current_evidence` would make of the view (a direct message's entry is
/// made from the message alone), so the answer need not be copied out of the view again.
fn ends_with_direct_message(evidence: &[ReceivedMessage], view: &TaskView) -> bool {
    match (evidence.last(), view.direct_message.as_ref()) {
        (Some(last), Some(message)) => {
            last.kind == ReceivedKind::Message && last.message.as_ref() == Some(message)
        }
        _ => false,
    }
}

/// The tasks of `context_id` in a ListTasks answer, in the agent's order.
fn of_context(listed: ListTasksResponse, context_id: &str) -> Vec<Task> {
    listed
        .tasks
        .into_iter()
        .filter(|t| t.context_id == context_id)
        .collect()
}

/// The task of a context a re-attach continues: the one whose history holds the journaled
/// message (when the agent shows history), else the newest by status timestamp (the first
/// listed among equals, or when the agent gives none).
fn choose(mut tasks: Vec<Task>, message_id: &str) -> Option<Task> {
    let holds = |t: &Task| {
        t.history
            .iter()
            .flatten()
            .any(|m| m.message_id == message_id)
    };
    if let Some(i) = tasks.iter().position(holds) {
        return Some(tasks.swap_remove(i));
    }
    let mut newest: Option<usize> = None;
    for (i, t) in tasks.iter().enumerate() {
        if newest.is_none_or(|n| t.status.timestamp > tasks[n].status.timestamp) {
            newest = Some(i);
        }
    }
    newest.map(|i| tasks.swap_remove(i))
}

/// An answer saying the agent has no ListTasks: UNSUPPORTED_OPERATION, a method it does not
/// know, or HTTP 404/405 on the list route (a server that predates the operation).
fn cannot_list(e: &TransportError) -> bool {
    let missing_route = |status: Option<u16>| matches!(status, Some(404 | 405));
    match e {
        TransportError::Remote(r) => {
            matches!(
                r.code,
                ErrorCode::A2aUnsupportedOperation | ErrorCode::A2aMethodNotFound
            ) || missing_route(r.http_status)
        }
        TransportError::HttpStatus { status, .. } => missing_route(Some(*status)),
        _ => false,
    }
}

/// Sends one best-effort CancelTask, bounded; failures are logged, never surfaced.
fn spawn_cancel(
    transport: Arc<dyn Transport>,
    task_id: String,
    timeout: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let request = CancelTaskRequest {
            id: task_id.clone(),
            metadata: None,
            tenant: None,
        };
        let options = CallOptions::default().with_timeout(timeout);
        match tokio::time::timeout(timeout, transport.cancel_task(&request, &options)).await {
            Ok(Ok(_)) => tracing::debug!(task_id, "remote task cancelled"),
            Ok(Err(e)) => tracing::warn!(task_id, error = %e, "best-effort CancelTask failed"),
            Err(_) => tracing::warn!(task_id, "best-effort CancelTask timed out"),
        }
    })
}

impl A2aEngineClient {
    /// A client without agents; fails with `config.invalid` when `config` is out of bounds.
    pub fn new(config: ClientConfig) -> Result<Self, Failure> {
        config.validate()?;
        Ok(A2aEngineClient {
            agents: AgentTable::new(),
            config,
        })
    }

    /// The settings in use.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// Registers the agent of `card` (by its name), reached through `transport`. Streaming is
    /// used when the card advertises it. A blank or duplicate name is `config.invalid`.
    pub fn add_agent(
        &mut self,
        card: &AgentCard,
        transport: Arc<dyn Transport>,
    ) -> Result<(), Failure> {
        // The client's own assembly caps are the ones it enforces (see `Interaction::new`).
        let mut limits = Limits::default();
        limits.max_artifact = self.config.max_artifact_bytes;
        limits.max_task_evidence = self.config.max_task_evidence_bytes;
        self.add_channel(AgentChannel::new(card, transport, limits))
    }

    /// Registers an agent channel (from [`a2aflow_protocol::ChannelFactory::channel`]) by its
    /// name. A blank or duplicate name is `config.invalid`.
    pub fn add_channel(&mut self, channel: AgentChannel) -> Result<(), Failure> {
        self.agents.insert(channel)
    }

    /// [`add_agent`](Self::add_agent) in builder form.
    pub fn with_agent(
        mut self,
        card: &AgentCard,
        transport: Arc<dyn Transport>,
    ) -> Result<Self, Failure> {
        self.add_agent(card, transport)?;
        Ok(self)
    }

    fn agent(&self, name: &str) -> Result<&Agent, Failure> {
        self.agents.get(name).map(|a| &**a)
    }

    /// The negotiation inputs of a dispatch.
    fn negotiation_of<'r>(&self, request: &DispatchRequest<'r>) -> Negotiation<'r> {
        let state = NegotiationLoop::new(&request.content, self.config.max_negotiation_exchanges);
        Negotiation {
            original: state.activated().then(|| request.content.clone()),
            state,
            hook: request.negotiation,
            task: request.task,
        }
    }

    /// Re-attaches to the live remote task of a logical task after a host restart:
    /// finds it with ListTasks filtered by `context_id` and keeps waiting on it (SubscribeToTask
    /// when the card streams, else GetTask polling) without sending anything. When no task is
    /// live, the latest one's result is returned. Negotiation cannot continue without the original
    /// submission, so an INPUT_REQUIRED task ends as a `negotiation.not_negotiable` gate.
    pub async fn attach(
        &self,
        agent: &str,
        context_id: &str,
        deadline: Instant,
        cancel: CancellationToken,
        events: EventEmitter,
    ) -> Result<TaskOutcome, TaskFailure> {
        let agent = self.agent(agent).map_err(TaskFailure::new)?;
        let cancelled = std::pin::pin!(cancel.cancelled_owned());
        let timer = std::pin::pin!(tokio::time::sleep_until(deadline));
        let stop = Stop { cancelled, timer };
        let mut run = Interaction::new(
            agent,
            &self.config,
            context_id.to_owned(),
            stop,
            events,
            None,
            &NoJournal,
        );
        let found = run.find_live_task().await;
        let result = match found {
            Ok(task) => run.run(Start::Seeded(Box::new(task))).await,
            Err(f) => Err(f),
        };
        run.finish(result).await
    }
}

#[async_trait]
impl RemoteClient for A2aEngineClient {
    async fn dispatch(&self, request: DispatchRequest<'_>) -> Result<TaskOutcome, TaskFailure> {
        let agent = self.agent(request.agent).map_err(TaskFailure::new)?;
        let cancelled = std::pin::pin!(request.cancel.clone().cancelled_owned());
        let timer = std::pin::pin!(tokio::time::sleep_until(request.deadline));
        // Built in a block: what moves into the interaction holds no room of its own in this
        // future across the waits below (a moved-from local would).
        let (mut run, start) = {
            let negotiation = self.negotiation_of(&request);
            let context_id = request
                .context_id
                .map_or_else(a2a::new_context_id, str::to_owned);
            let stop = Stop { cancelled, timer };
            let mut run = Interaction::new(
                agent,
                &self.config,
                context_id,
                stop,
                request.events,
                Some(negotiation),
                request.journal,
            );
            run.reference_task_ids = request.reference_task_ids.to_vec();
            let continues = request.continues.map(str::to_owned);
            (run, Start::Send(request.content, continues))
        };
        let result = run.run(start).await;
        match run.finish_now(result) {
            Ok(done) => done,
            Err(result) => Box::pin(run.finish(result)).await,
        }
    }

    /// Finds a journaled task again and waits on it as [`dispatch`](Self::dispatch) would.
    ///
    /// * The remote task id journaled: GetTask. A final task gives its result at once (outputs
    ///   projected as for a live task); a live one is waited on like a dispatched task
    ///   (SubscribeToTask when the card streams, the Task being its first event; else GetTask
    ///   polling). A task the agent no longer knows is `workflow.outcome_unknown`, never a
    ///   resend: it was created, so the command reached the agent.
    /// * Only the context id journaled: ListTasks filtered by it. One task: that one. Several:
    ///   the one whose history holds the journaled message id when the agent shows history,
    ///   else the newest (by status timestamp; the first listed among equals).
    /// * No task found, or an agent that cannot list tasks (UNSUPPORTED_OPERATION, method not
    ///   found, HTTP 404/405 on the list route): `workflow.outcome_unknown` and nothing is sent,
    ///   unless `request.resend`: then the agent is asked once more after the configured
    ///   `resend_grace` (the send may still be on its way in), and only when it still lists
    ///   nothing does the journaled message go again, with the same message id and context id
    ///   (the journal's `before_send` is told once more), waited on as a dispatch, negotiation
    ///   included.
    /// * A found task in INPUT_REQUIRED with a Negotiation-T proposal is negotiated as in a
    ///   dispatch, from the journaled submission (`dispatch.content`): the hook numbers the
    ///   exchanges of this attachment from 1, so a proposal of the first exchange is answered
    ///   with the reply the host journaled for it (or asked for, when none was). A later round
    ///   meets the first exchange's reply, which does not match it: the negotiation fails with
    ///   its mismatch code, and no stale reply is sent. An INPUT_REQUIRED without a proposal is
    ///   the `negotiation.not_negotiable` gate, as in a dispatch.
    async fn reattach(&self, request: AttachRequest<'_>) -> Result<TaskOutcome, TaskFailure> {
        let dispatch = &request.dispatch;
        let agent = match self.agent(dispatch.agent) {
            Ok(agent) => agent,
            Err(failure) => {
                return Err(TaskFailure {
                    context_id: Some(request.context_id.to_owned()),
                    ..TaskFailure::new(failure)
                });
            }
        };
        let cancelled = std::pin::pin!(dispatch.cancel.clone().cancelled_owned());
        let timer = std::pin::pin!(tokio::time::sleep_until(dispatch.deadline));
        let stop = Stop { cancelled, timer };
        let mut run = Interaction::new(
            agent,
            &self.config,
            request.context_id.to_owned(),
            stop,
            dispatch.events.clone(),
            Some(self.negotiation_of(dispatch)),
            dispatch.journal,
        );
        let found = match run
            .find_again(request.remote_task_id, request.message_id)
            .await
        {
            Ok(
                lost @ Found::Lost {
                    resendable: true, ..
                },
            ) if request.resend => run.find_after_grace(lost, request.message_id).await,
            other => other,
        };
        let start = match found {
            Ok(Found::Task(task)) => Start::Seeded(task),
            Ok(Found::Lost {
                resendable: true, ..
            }) if request.resend => {
                run.next_message_id = Some(request.message_id.to_owned());
                Start::Send(dispatch.content.clone(), None)
            }
            Ok(Found::Lost { why, .. }) => return Err(request.outcome_unknown(&why)),
            Err(failure) => return run.finish(Err(failure)).await,
        };
        let result = run.run(start).await;
        run.finish(result).await
    }

    /// Sends CancelTask for `remote_task_id` on `agent` (a cancel journaled before a restart),
    /// bounded by `deadline` and by the configured `cancel_timeout`, whichever comes first. An
    /// agent the client does not know is `workflow.unknown_agent`; the agent's refusal or a transport
    /// failure is its mapped failure (as every call of the client maps them); no answer in time
    /// is `a2a.timeout`. A failed cancel stays pending in the journal.
    async fn cancel_remote(
        &self,
        agent: &str,
        remote_task_id: &str,
        deadline: Instant,
    ) -> Result<(), Failure> {
        let channel = self.agent(agent)?;
        let bound = deadline.min(Instant::now() + self.config.cancel_timeout);
        let request = CancelTaskRequest {
            id: remote_task_id.to_owned(),
            metadata: None,
            tenant: None,
        };
        let options =
            CallOptions::default().with_timeout(bound.saturating_duration_since(Instant::now()));
        let sent =
            tokio::time::timeout_at(bound, channel.transport.cancel_task(&request, &options));
        let failure = match sent.await {
            Ok(Ok(_)) => {
                tracing::debug!(remote_task_id, agent, "journaled cancel sent");
                return Ok(());
            }
            Ok(Err(e)) => transport_failure(&e),
            Err(_) => Failure::new(
                ErrorCode::A2aTimeout,
                format!(
                    "CancelTask for remote task {remote_task_id} on agent {agent} got no answer \
                     in time"
                ),
            ),
        };
        Err(failure
            .with_detail("agent", agent)
            .with_detail("remoteTaskId", remote_task_id))
    }

    /// Tells the agent's channel that its credentials must be refreshed (a cached OAuth2 or
    /// login token is dropped, the host's `AuthProvider` is told through `on_unauthorized`), so
    /// the answer to its AUTH_REQUIRED gate goes out with fresh ones. `workflow.unknown_agent`
    /// for an agent the client does not know.
    async fn refresh_credentials(&self, agent: &str) -> Result<(), Failure> {
        let refreshed = self.agent(agent)?.transport.refresh_credentials().await;
        refreshed
            .map(|_| ())
            .map_err(|f| f.with_detail("agent", agent))
    }
}

/// Negotiation inputs of a dispatch (absent on attach).
struct Negotiation<'a> {
    state: NegotiationLoop,
    hook: &'a dyn NegotiationHook,
    task: &'a TaskRequest,
    /// The host's submission, kept only when it activated Negotiation-T: without activation a
    /// proposal fails (`negotiation.not_activated`) before the hook could need it.
    original: Option<MessageContent>,
}

enum Start {
    /// Send content, continuing the remote task when one is named.
    Send(MessageContent, Option<String>),
    Seeded(Box<Task>),
}

/// What the loop does next.
enum Next {
    /// Send content; `task_id` is the remote task (None on the first send and in pre-task mode).
    Send(MessageContent, Option<String>),
    Observe,
    Done,
}

/// One logical task's interaction with one agent.
struct Interaction<'a> {
    agent: &'a Agent,
    config: &'a ClientConfig,
    context_id: String,
    reducer: ResponseReducer,
    negotiation: Option<Negotiation<'a>>,
    events: EventEmitter,
    journal: &'a dyn DispatchJournal,
    deadline: Instant,
    stop: Stop<'a>,
    stream: Option<StreamResponseStream>,
    resubscribes: u32,
    poll_only: bool,
    force_poll: bool,
    poll_delay: Duration,
    poll_failures: u32,
    late: Option<LateAnswer>,
    /// The message id of the next send when the caller chose it (a journaled message resent).
    next_message_id: Option<String>,
    /// Earlier attempts' remote tasks, named by a message that starts a new task.
    reference_task_ids: Vec<String>,
    /// The remote task id the journal was last told (with a journal that records).
    journaled_task: Option<String>,
    /// The remote state the journal was last told.
    journaled_state: Option<TaskState>,
}

/// What a re-attach found.
enum Found {
    /// The journaled task, as the agent shows it now.
    Task(Box<Task>),
    /// Nothing to attach to; `resendable` when the journaled message may go again (with the
    /// host's consent): no task is known to have been created for it.
    Lost { why: String, resendable: bool },
}

/// What the journal has not been told yet about the remote task.
struct JournalNote {
    task_id: String,
    new_task: bool,
    state: Option<TaskState>,
}

impl JournalNote {
    /// Tells `journal` what this note holds.
    async fn report(self, journal: &dyn DispatchJournal, context_id: &str) {
        if self.new_task {
            journal
                .remote_task_named(context_id, &self.task_id, self.state)
                .await;
        } else if let Some(state) = self.state {
            journal.remote_state(&self.task_id, state).await;
        }
    }
}

impl<'a> Interaction<'a> {
    fn new(
        agent: &'a Agent,
        config: &'a ClientConfig,
        context_id: String,
        stop: Stop<'a>,
        events: EventEmitter,
        negotiation: Option<Negotiation<'a>>,
        journal: &'a dyn DispatchJournal,
    ) -> Self {
        // The interaction's deadline is its timer's.
        let deadline = stop.timer.deadline();
        Interaction {
            journal,
            agent,
            config,
            reducer: ResponseReducer::new(context_id.clone())
                .with_caps(config.max_artifact_bytes, config.max_task_evidence_bytes),
            context_id,
            negotiation,
            events,
            deadline,
            stop,
            stream: None,
            resubscribes: 0,
            poll_only: false,
            force_poll: false,
            poll_delay: config.poll_interval,
            poll_failures: 0,
            late: None,
            next_message_id: None,
            reference_task_ids: Vec::new(),
            journaled_task: None,
            journaled_state: None,
        }
    }

    fn options(&self) -> CallOptions {
        CallOptions::default().with_deadline(self.deadline)
    }

    /// The options of a call whose answers are only folded into the view (a resubscribe, a
    /// poll): the view keeps no history, so the answers need not carry it.
    fn fold_options(&self) -> CallOptions {
        self.options().without_history()
    }

    /// `message.extensions` and the `A2A-Extensions` header for `content`, checked against the
    /// card before anything is sent.
    fn plan(&self, content: &MessageContent) -> Result<ExtensionPlan, Failure> {
        content.check_sendable()?;
        let declared: Vec<DeclaredExtension<'_>> = self
            .agent
            .declared
            .iter()
            .map(|d| DeclaredExtension {
                uri: &d.uri,
                required: d.required,
            })
            .collect();
        let view = ContentExtensions::new(&content.extensions, content.metadata.as_ref());
        a2at::activate(&declared, view, None).map_err(|e| activation_failure(e, &self.agent.name))
    }

    async fn run(&mut self, start: Start) -> Result<(), Failure> {
        let mut next = match start {
            Start::Send(content, task_id) => Next::Send(content, task_id),
            Start::Seeded(task) => {
                self.apply(StreamResponse::Task(*task)).await?;
                self.evaluate().await?
            }
        };
        loop {
            match next {
                Next::Done => return Ok(()),
                // Boxed: a send's future (the message, the journal's and the events' futures)
                // would otherwise be part of every wait's.
                Next::Send(content, task_id) => Box::pin(self.send(content, task_id)).await?,
                Next::Observe => self.observe().await?,
            }
            next = self.evaluate().await?;
        }
    }

    /// Decides what the current view means.
    async fn evaluate(&mut self) -> Result<Next, Failure> {
        let observation = observe(self.reducer.view());
        let aborted = self.negotiation.as_ref().is_some_and(|n| n.state.aborted());
        match observation {
            Observation::Pending => Ok(Next::Observe),
            _ if aborted => Err(Box::pin(self.negotiation_failed(aborted_failure())).await),
            Observation::Completed => Ok(Next::Done),
            Observation::Terminal(f) => Err(f),
            Observation::AuthRequired => Err(a2aflow_protocol::end_state::state_failure(
                ErrorCode::A2aAuthRequired,
                self.reducer.view(),
            )
            .with_gate(Gate::AuthRequired)),
            // Boxed: the negotiation exchange (host callback, reply checks, events) would
            // otherwise more than double every wait's future, and most tasks never negotiate.
            Observation::InputRequired | Observation::DirectMessage => {
                Box::pin(self.negotiate()).await
            }
        }
    }

    async fn negotiate(&mut self) -> Result<Next, Failure> {
        let view: &TaskView = self.reducer.view();
        let taskless = view.state.is_none();
        let remote_task_id = if taskless { None } else { view.task_id.clone() };
        let message = view
            .direct_message
            .as_ref()
            .or(view.status_message.as_ref());
        let levels = Levels::new(message, view.task_metadata.as_ref(), &view.artifacts);
        let evidence = self.reducer.current_evidence(ReceivedKind::Task);
        let Some(neg) = self.negotiation.as_mut() else {
            // Attach: no original submission, so no negotiation.
            if taskless {
                return Ok(Next::Done);
            }
            return Err(Failure::new(
                ErrorCode::NegotiationNotNegotiable,
                "INPUT_REQUIRED on an attached task: negotiation needs the original submission",
            )
            .with_gate(Gate::InputRequired));
        };
        let entry = match neg
            .state
            .on_candidate(&levels, remote_task_id.as_deref(), evidence)
        {
            Ok(entry) => entry,
            // Nothing to negotiate: a gate, not a failed negotiation.
            Err(f) if f.is(ErrorCode::NegotiationNotNegotiable) => {
                return Err(f.with_gate(Gate::InputRequired));
            }
            Err(f) => return Err(self.negotiation_failed(f).await),
        };
        let proposal = match entry {
            None => return Ok(Next::Done),
            Some(Entry::Repeat) => {
                self.force_poll = true;
                return Ok(Next::Observe);
            }
            Some(Entry::Ask(p)) => p,
        };
        let Some(original) = neg.original.clone() else {
            // `on_candidate` asks only when the submission activated Negotiation-T.
            return Err(self.negotiation_failed(not_activated()).await);
        };
        self.reducer.mark_negotiating();
        let request = NegotiationRequest {
            task: neg.task.clone(),
            original,
            context_id: self.context_id.clone(),
            remote_task_id: proposal.remote_task_id.clone(),
            negotiation_context: proposal.context.to_json(),
            evidence: proposal.evidence.clone(),
            previous_exchanges: neg.state.exchanges().to_vec(),
            remaining_budget: neg.state.remaining_budget(),
            remaining_ms: 0,
        };
        let reply = self.stop.bounded(neg.hook.negotiate(request)).await??;
        match reply {
            NegotiationReply::Stop { code, reason } => {
                Err(self.negotiation_failed(stop_failure(&code, &reason)).await)
            }
            NegotiationReply::Send { content } => {
                let kind = match neg.state.check_reply(&proposal, &content) {
                    Ok(kind) => kind,
                    Err(f) => return Err(self.negotiation_failed(f).await),
                };
                let task_id = proposal.remote_task_id.clone();
                neg.state.record(*proposal, content.clone(), kind);
                Ok(Next::Send(content, task_id))
            }
        }
    }

    /// Emits `negotiation_failed` for a negotiation this client ended, and gives `failure` back.
    async fn negotiation_failed(&mut self, failure: Failure) -> Failure {
        let at = FailedAt {
            agent: &self.agent.name,
            context_id: &self.context_id,
            remote_task_id: self.reducer.task_id(),
            exchanges: self
                .negotiation
                .as_ref()
                .map_or(0, |n| n.state.exchanges().len()),
        };
        emit_failed(&self.events, at, &failure).await;
        failure
    }

    /// Sends `content` (to the remote task `task_id`, when one is named) and takes in the answer:
    /// the first event of a stream, or the blocking answer, folded.
    ///
    /// Only what every send needs is held across its waits: the write-ahead journal and the
    /// `remote_request` event (copies of the content, the announcement) are made in a future of
    /// their own when one is on, an open stream is released in one when there is one, and the
    /// answer is folded in place when applying it awaits nothing. The send's future then stays
    /// under 1 KiB, which the allocator serves from its thread cache.
    async fn send(
        &mut self,
        content: MessageContent,
        task_id: Option<String>,
    ) -> Result<(), Failure> {
        let plan = self.plan(&content)?;
        // The send may outlive an interruption by the cancel bound (its late answer can still name
        // a task to cancel, see `finish`), so the transport's own limit is extended by that bound;
        // the interaction itself still stops waiting at its deadline.
        let send_deadline = self
            .deadline
            .checked_add(self.config.cancel_timeout)
            .unwrap_or(self.deadline);
        // The answer is folded into the view, which keeps no history: it need not be converted.
        let mut options = CallOptions::default()
            .with_deadline(send_deadline)
            .with_extensions(plan.header)
            .without_history();
        if let Some(check) = self.journal.send_check() {
            // Asked on the connection when the message's bytes would be written: a driver
            // paused past its lease since `before_send` sends nothing.
            options = options.with_send_gate(SendGate::new(move || check()));
        }
        // Nothing is sent (or announced) once the run is over.
        self.stop.bounded(std::future::ready(())).await?;
        let message_id = self
            .next_message_id
            .take()
            .unwrap_or_else(a2a::new_message_id);
        let extensions = plan.message_extensions;
        let message = if self.journal.is_enabled() || self.events.is_enabled() {
            Box::pin(self.announce(content, message_id, task_id, extensions)).await?
        } else {
            self.message(content, message_id, task_id, extensions)
        };
        if self.stream.is_some() {
            Box::pin(self.release_stream()).await;
        }
        self.force_poll = false;
        self.poll_only = false;
        self.resubscribes = 0;
        self.poll_delay = self.config.poll_interval;
        self.reducer.begin_follow_up();
        let streaming = self.agent.streaming;
        let request = SendMessageRequest {
            message,
            configuration: (!streaming && self.config.return_immediately).then_some(
                SendMessageConfiguration {
                    accepted_output_modes: None,
                    task_push_notification_config: None,
                    history_length: None,
                    return_immediately: Some(true),
                },
            ),
            metadata: None,
            tenant: None,
        };
        // The send owns its request, so that when the wait is interrupted it can be kept and a
        // task id revealed late can still be cancelled (see `finish`).
        let transport = Arc::clone(&self.agent.transport);
        if streaming {
            let open: PendingSend<StreamResponseStream> =
                transport.send_streaming_message_owned(request, options);
            self.stream = Some(self.await_send(open, LateAnswer::Opening).await?);
            return Ok(());
        }
        // Handed over: the transport's own future owns the request (one box, not a second one
        // around a borrowing future), and may move its content into the wire message.
        let send: PendingSend<SendMessageResponse> = transport.send_message_owned(request, options);
        let event = event_of(self.await_send(send, LateAnswer::Blocking).await?);
        if self.quiet() {
            return self.fold(event).map(drop);
        }
        Box::pin(self.apply(event)).await
    }

    /// The message of a send, journaled first (write-ahead: ids and content, before it goes)
    /// with a run store, and announced (`remote_request`) with an event sink. A journal that
    /// failed: nothing is sent, nor announced as sent.
    async fn announce(
        &mut self,
        content: MessageContent,
        message_id: String,
        task_id: Option<String>,
        extensions: Vec<String>,
    ) -> Result<a2a::Message, Failure> {
        let announced = self.events.is_enabled().then(|| RemoteRequestData {
            agent: self.agent.name.clone(),
            context_id: self.context_id.clone(),
            remote_task_id: task_id.clone(),
            content: content.clone(),
            binding: Some(self.agent.binding().wire_name().to_owned()),
        });
        let journaled = self.journal.is_enabled().then(|| content.clone());
        let message = self.message(content, message_id, task_id, extensions);
        if let Some(content) = &journaled {
            let intent = SendIntent {
                context_id: &self.context_id,
                message_id: &message.message_id,
                remote_task_id: message.task_id.as_deref(),
                content,
            };
            self.journal.before_send(intent).await?;
        }
        if let Some(data) = announced {
            emit_boxed(&self.events, data.into()).await;
        }
        Ok(message)
    }

    /// The user message carrying `content` unchanged (its parts and metadata move into it), in
    /// this interaction's context; a message that starts a new task names the earlier attempts'.
    fn message(
        &self,
        content: MessageContent,
        message_id: String,
        task_id: Option<String>,
        extensions: Vec<String>,
    ) -> a2a::Message {
        let mut message =
            user_message_with_id(content, message_id, &self.context_id, task_id, extensions);
        if message.task_id.is_none() && !self.reference_task_ids.is_empty() {
            message.reference_task_ids = Some(self.reference_task_ids.clone());
        }
        message
    }

    /// Waits for a send; when the wait is interrupted, the send is kept (as `late`) for
    /// [`finish`](Self::finish).
    async fn await_send<T>(
        &mut self,
        mut send: PendingSend<T>,
        late: fn(PendingSend<T>) -> LateAnswer,
    ) -> Result<T, Failure> {
        match self.stop.bounded(&mut send).await {
            Ok(answer) => answer.map_err(|e| transport_failure(&e)),
            Err(f) => {
                self.late = Some(late(send));
                Err(f)
            }
        }
    }

    /// One waiting step: the next stream event, a resubscribe, or one poll.
    async fn observe(&mut self) -> Result<(), Failure> {
        if let Some(stream) = self.stream.as_mut() {
            let next = match self.stop.bounded(stream.next()).await {
                Ok(next) => next,
                Err(f) => {
                    // Interrupted before any event named the task: the stream may still do so.
                    if self.reducer.task_id().is_none() {
                        self.late = self.stream.take().map(LateAnswer::Stream);
                    }
                    return Err(f);
                }
            };
            match next {
                // Nothing to await: folded at once, no future made (nor boxed) per event.
                Some(Ok(event)) if self.quiet() => return self.fold(event).map(drop),
                Some(Ok(event)) => return Box::pin(self.apply(event)).await,
                Some(Err(e)) => {
                    self.stream = None;
                    if self.reducer.task_id().is_none() || !is_stream_break(&e) {
                        return Err(transport_failure(&e));
                    }
                    tracing::debug!(error = %e, "response stream dropped; resubscribing");
                    return Ok(());
                }
                None => {
                    self.stream = None;
                    let view = self.reducer.view();
                    if view.task_id.is_none() && view.direct_message.is_none() {
                        return Err(Failure::new(
                            ErrorCode::A2aInvalidResponse,
                            "A2A response stream ended without an event",
                        ));
                    }
                    return Ok(());
                }
            }
        }
        Box::pin(self.follow()).await
    }

    /// A waiting step without an open stream: a resubscribe when the card streams (within the
    /// attempts), else one poll after the backoff delay. Boxed by [`observe`](Self::observe):
    /// its timer, request and options would otherwise be part of every wait's future (a waiting
    /// task holds the largest state of each), and a poll or resubscribe waits far longer than
    /// one allocation takes.
    async fn follow(&mut self) -> Result<(), Failure> {
        let Some(task_id) = self.reducer.task_id().map(str::to_owned) else {
            return Err(Failure::new(
                ErrorCode::A2aInvalidResponse,
                "Non-terminal response has no remote task identity",
            ));
        };
        if self.agent.streaming
            && !self.poll_only
            && !self.force_poll
            && self.resubscribes < self.config.resubscribe.max_attempts
        {
            self.resubscribes += 1;
            let wait = self.config.resubscribe.delay(self.resubscribes);
            if !wait.is_zero() {
                self.stop.bounded(tokio::time::sleep(wait)).await?;
            }
            let request = SubscribeToTaskRequest {
                id: task_id,
                tenant: None,
            };
            let options = self.fold_options();
            let transport = &self.agent.transport;
            match self
                .stop
                .bounded(transport.subscribe_to_task(&request, &options))
                .await?
            {
                Ok(stream) => self.stream = Some(stream),
                Err(e) => {
                    tracing::debug!(error = %e, "SubscribeToTask failed; polling instead");
                    self.poll_only = true;
                }
            }
            return Ok(());
        }
        self.force_poll = false;
        self.stop
            .bounded(tokio::time::sleep(self.poll_delay))
            .await?;
        self.poll_delay = (self.poll_delay * 2).min(self.config.max_poll_interval);
        let request = GetTaskRequest {
            id: task_id,
            history_length: None,
            tenant: None,
        };
        let options = self.fold_options();
        let transport = &self.agent.transport;
        let polled = self
            .stop
            .bounded(transport.get_task(&request, &options))
            .await?;
        match polled {
            Ok(task) => {
                self.poll_failures = 0;
                let event = StreamResponse::Task(task);
                if self.quiet() {
                    self.fold(event).map(drop)
                } else {
                    Box::pin(self.apply(event)).await
                }
            }
            Err(e) if is_transient(&e) && self.poll_failures + 1 < MAX_POLL_FAILURES => {
                self.poll_failures += 1;
                tracing::debug!(error = %e, "GetTask failed; polling again");
                Ok(())
            }
            Err(e) => Err(transport_failure(&e)),
        }
    }

    /// Folds one received object into the view and emits its `agent_*` event.
    ///
    /// The fold runs when this is called (callers await at once); the returned future holds only
    /// the event to emit, not the received object, so that every wait's future stays small.
    fn apply(&mut self, event: StreamResponse) -> impl Future<Output = Result<(), Failure>> + '_ {
        // The event is boxed while the journal is told (see `emit_boxed`).
        let folded = self.fold(event).map(|e| e.map(Box::new));
        let note = folded.is_ok().then(|| self.journal_note()).flatten();
        async move {
            let event = folded?;
            if let Some(note) = note {
                note.report(self.journal, &self.context_id).await;
            }
            if let Some(event) = event {
                emit_boxed(&self.events, *event).await;
            }
            Ok(())
        }
    }

    /// Whether [`apply`](Self::apply) awaits nothing: no recording journal to tell, no event
    /// sink to emit to. Then [`fold`](Self::fold) alone is the same.
    fn quiet(&self) -> bool {
        !self.journal.is_enabled() && !self.events.is_enabled()
    }

    /// What the journal must be told after a fold: the remote task id the first time the agent
    /// names it, and the state each time it changes. `None` without a recording journal.
    fn journal_note(&mut self) -> Option<JournalNote> {
        if !self.journal.is_enabled() {
            return None;
        }
        let view = self.reducer.view();
        let task_id = view.task_id.as_ref()?;
        let new_task = self.journaled_task.as_ref() != Some(task_id);
        let state = view
            .state
            .as_ref()
            .filter(|s| new_task || self.journaled_state.as_ref() != Some(*s))
            .cloned();
        if !new_task && state.is_none() {
            return None;
        }
        let note = JournalNote {
            task_id: task_id.clone(),
            new_task,
            state,
        };
        if new_task {
            self.journaled_task = Some(note.task_id.clone());
        }
        if note.state.is_some() {
            self.journaled_state.clone_from(&note.state);
        }
        Some(note)
    }

    /// The fold of [`apply`](Self::apply), with the event when events are on.
    fn fold(&mut self, event: StreamResponse) -> Result<Option<ClientEvent>, Failure> {
        let kind = ObjectKind::of(&event);
        let folded = self.reducer.fold(event)?;
        if !self.events.is_enabled() {
            return Ok(None);
        }
        Ok(Some(self.event_of(kind, &folded)))
    }

    /// The `agent_*` event of an object just folded, read from the view: nothing assembled so
    /// far (an artifact's parts) is copied, so a chunk costs only its own size.
    fn event_of(&self, kind: ObjectKind, folded: &Folded) -> ClientEvent {
        let view = self.reducer.view();
        let agent = self.agent.name.clone();
        match kind {
            ObjectKind::Artifact => {
                let artifact = self.reducer.folded_artifact(folded);
                AgentArtifactUpdateData {
                    agent,
                    task_id: view.task_id.clone(),
                    artifact_id: artifact.map(|a| a.artifact_id.clone()),
                    artifact_name: artifact.and_then(|a| a.name.clone()),
                    append: folded.append,
                    last_chunk: folded.last_chunk,
                    metadata: folded.event_meta.clone(),
                }
                .into()
            }
            ObjectKind::Message => {
                let message = view.direct_message.as_ref();
                AgentMessageEventData {
                    agent,
                    role: message.map(|m| m.role.clone()),
                    text: message.map(|m| text_of(&m.parts)),
                    metadata: message
                        .and_then(|m| m.metadata.clone())
                        .map(|m| m.into_iter().collect()),
                }
                .into()
            }
            ObjectKind::Status => {
                // A snapshot's metadata is the task's; a status update's is its own.
                let metadata = match folded.kind {
                    ReceivedKind::StatusUpdate => folded.event_meta.as_ref(),
                    _ => view.task_metadata.as_ref(),
                };
                AgentStatusUpdateData {
                    agent,
                    task_id: view.task_id.clone(),
                    state: view.state.clone(),
                    is_final: view.state.as_ref().is_some_and(a2a::TaskState::is_terminal),
                    text: view.status_message.as_ref().map(|m| text_of(&m.parts)),
                    metadata: metadata.cloned(),
                }
                .into()
            }
        }
    }

    /// Drops the open stream, first reading what is left of it for a moment: an agent ends the
    /// stream right after a final or interrupted state, and a stream read to its end gives its
    /// connection back to the pool instead of closing it.
    async fn release_stream(&mut self) {
        if let Some(mut stream) = self.stream.take() {
            let drain = async { while stream.next().await.is_some() {} };
            let _ = self
                .stop
                .bounded(tokio::time::timeout(STREAM_DRAIN, drain))
                .await;
        }
    }

    /// ListTasks by context id: the first live task, else the latest one.
    async fn find_live_task(&mut self) -> Result<Task, Failure> {
        let mut tasks = self
            .list_context_tasks(1)
            .await?
            .map_err(|e| transport_failure(&e))?;
        tasks.sort_by_key(|t| t.status.timestamp);
        let live = tasks.iter().position(|t| !t.status.state.is_terminal());
        let chosen = match live {
            Some(i) => Some(tasks.swap_remove(i)),
            None => tasks.pop(),
        };
        chosen.ok_or_else(|| {
            Failure::new(
                ErrorCode::A2aTaskNotFound,
                format!("No remote task for context {}", self.context_id),
            )
        })
    }

    /// The journaled task again: by its remote id (GetTask) when known, else by the context id
    /// (ListTasks; see `reattach` for the choice among several).
    async fn find_again(
        &mut self,
        remote_task_id: Option<&str>,
        message_id: &str,
    ) -> Result<Found, Failure> {
        if let Some(id) = remote_task_id {
            // The journal knows this task already.
            self.journaled_task = Some(id.to_owned());
            return match self.get_task_again(id).await? {
                Ok(task) => Ok(Found::Task(Box::new(task))),
                Err(e) if e.code() == ErrorCode::A2aTaskNotFound => Ok(Found::Lost {
                    why: format!("the agent no longer knows remote task {id}"),
                    resendable: false,
                }),
                Err(e) => Err(transport_failure(&e)),
            };
        }
        match self.list_context_tasks(MAX_POLL_FAILURES).await? {
            Ok(tasks) => Ok(match choose(tasks, message_id) {
                Some(task) => Found::Task(Box::new(task)),
                None => Found::Lost {
                    why: format!("the agent lists no task for context {}", self.context_id),
                    resendable: true,
                },
            }),
            Err(e) if cannot_list(&e) => Ok(Found::Lost {
                why: format!("the agent cannot list tasks: {}", e.code()),
                resendable: true,
            }),
            Err(e) => Err(transport_failure(&e)),
        }
    }

    /// Looks for a journaled send by its context id once more, after the configured
    /// `resend_grace` (bounded by the run's deadline and cancel), before it is resent: the
    /// driver that wrote it may have stopped just after, leaving it on its way in and not yet
    /// handled by the agent (the first look, `lost`, found nothing). A zero grace keeps `lost`.
    async fn find_after_grace(&mut self, lost: Found, message_id: &str) -> Result<Found, Failure> {
        let grace = self.config.resend_grace;
        if grace.is_zero() {
            return Ok(lost);
        }
        self.stop.bounded(tokio::time::sleep(grace)).await?;
        self.find_again(None, message_id).await
    }

    /// GetTask of a journaled remote task, asked again after a transient failure.
    async fn get_task_again(&mut self, id: &str) -> Result<Result<Task, TransportError>, Failure> {
        let request = GetTaskRequest {
            id: id.to_owned(),
            history_length: None,
            tenant: None,
        };
        let options = self.options();
        let agent = self.agent;
        self.read_again(MAX_POLL_FAILURES, || {
            agent.transport.get_task(&request, &options)
        })
        .await
    }

    /// ListTasks filtered by the context id (with artifacts): the tasks of this context, in the
    /// agent's order (an agent ignoring the filter cannot hand over another context's task).
    async fn list_context_tasks(
        &mut self,
        attempts: u32,
    ) -> Result<Result<Vec<Task>, TransportError>, Failure> {
        let request = ListTasksRequest {
            context_id: Some(self.context_id.clone()),
            status: None,
            page_size: None,
            page_token: None,
            history_length: None,
            status_timestamp_after: None,
            include_artifacts: Some(true),
            tenant: None,
        };
        let options = self.options();
        let agent = self.agent;
        let listed = self
            .read_again(attempts, || agent.transport.list_tasks(&request, &options))
            .await?;
        Ok(listed.map(|l| of_context(l, &self.context_id)))
    }

    /// An idempotent read, made up to `attempts` times while it fails transiently (with the
    /// polling backoff between). The outer `Err` is the interaction's interruption.
    async fn read_again<T, F>(
        &mut self,
        attempts: u32,
        call: impl Fn() -> F,
    ) -> Result<Result<T, TransportError>, Failure>
    where
        F: Future<Output = Result<T, TransportError>>,
    {
        let mut delay = self.config.poll_interval;
        let mut failures = 1;
        loop {
            match self.stop.bounded(call()).await? {
                Err(e) if is_transient(&e) && failures < attempts => {
                    failures += 1;
                    tracing::debug!(error = %e, "read failed; asking again");
                    self.stop.bounded(tokio::time::sleep(delay)).await?;
                    delay = (delay * 2).min(self.config.max_poll_interval);
                }
                answer => return Ok(answer),
            }
        }
    }

    /// Ends the interaction: cleanup cancel when needed, the `agent_response` event, the result.
    /// The final view moves into the evidence: the interaction ends here.
    async fn finish(&mut self, result: Result<(), Failure>) -> Result<TaskOutcome, TaskFailure> {
        self.release_stream().await;
        let remote_task_id = self.reducer.task_id().map(str::to_owned);
        // Everything read from the view happens before the evidence takes it (it takes the view
        // only when the evidence ends with it).
        let ends_with_view = self.reducer.evidence_ends_with_view();
        let result = match result {
            Ok(()) => Ok(()),
            Err(failure) => Err(self.fail(failure, remote_task_id.as_deref()).await),
        };
        let (result, announced) = self.conclude(result, remote_task_id, ends_with_view);
        if let Some(data) = announced {
            emit_boxed(&self.events, data.into()).await;
        }
        result
    }

    /// [`finish`](Self::finish) when it would await nothing: no stream left to release, no
    /// failure (so no cleanup cancel), no event sink. Called directly, not in a future of its
    /// own.
    fn finish_now(
        &mut self,
        result: Result<(), Failure>,
    ) -> Result<Result<TaskOutcome, TaskFailure>, Result<(), Failure>> {
        if self.stream.is_some() || result.is_err() || self.events.is_enabled() {
            return Err(result);
        }
        let remote_task_id = self.reducer.task_id().map(str::to_owned);
        let ends_with_view = self.reducer.evidence_ends_with_view();
        Ok(self.conclude(Ok(()), remote_task_id, ends_with_view).0)
    }

    /// The result of an interaction that came to `result` (its failure already wound down), and
    /// the `agent_response` event's data when events are on. The evidence and the context id
    /// move into the result; they and the remote task id are copied only for the event.
    fn conclude(
        &mut self,
        result: Result<(), Failure>,
        remote_task_id: Option<String>,
        ends_with_view: bool,
    ) -> (Result<TaskOutcome, TaskFailure>, Option<RemoteResponseData>) {
        let evidence = self.reducer.take_evidence();
        // Outputs come from the final answer only: an earlier proposal or status message is
        // evidence, never business output. The evidence usually ends with it already (the
        // task's final view, or the direct message as it was folded); only when it does not is
        // the answer made from the current view.
        let result = result.map(|()| {
            (!ends_with_view && !ends_with_direct_message(&evidence, self.reducer.view()))
                .then(|| self.reducer.current_evidence(ReceivedKind::Task))
        });
        let announced = self.events.is_enabled().then(|| {
            let (success, error_code) = match &result {
                Ok(_) => (true, None),
                Err(f) => (false, Some(f.code.clone())),
            };
            RemoteResponseData {
                agent: self.agent.name.clone(),
                context_id: self.context_id.clone(),
                remote_task_id: remote_task_id.clone(),
                success,
                error_code,
                received_messages: evidence.clone(),
            }
        });
        // The interaction ends here (`conclude` is its last step): its context id moves into
        // the result.
        let context_id = std::mem::take(&mut self.context_id);
        let result = match result {
            Ok(answer) => {
                let outputs = answer
                    .as_ref()
                    .or(evidence.last())
                    .map(|a| project_outputs(std::slice::from_ref(a), true))
                    .unwrap_or_default();
                Ok(TaskOutcome {
                    context_id: Some(context_id),
                    remote_task_id,
                    outputs,
                    received_messages: evidence,
                })
            }
            Err(failure) => Err(TaskFailure {
                failure,
                context_id: Some(context_id),
                remote_task_id,
                received_messages: evidence,
            }),
        };
        (result, announced)
    }

    /// A failed interaction: the cleanup cancel of a known non-final remote task (gates only
    /// when configured), else of a task a late answer may still name; the failure gains the
    /// remote identity.
    async fn fail(&mut self, failure: Failure, remote_task_id: Option<&str>) -> Failure {
        let view = self.reducer.view();
        let cancel_it =
            !view.is_terminal() && (!is_gate(&failure) || self.config.cancel_gated_tasks);
        if cancel_it {
            if let Some(id) = remote_task_id {
                let handle = spawn_cancel(
                    Arc::clone(&self.agent.transport),
                    id.to_owned(),
                    self.config.cancel_timeout,
                );
                let _ = handle.await;
            } else if let Some(late) = self.late.take() {
                self.cancel_late_identity(late);
            }
        }
        with_identity(failure, self.reducer.view(), &self.context_id)
    }

    /// A send interrupted locally may still create a task: when its first answer (the blocking
    /// answer, or the first stream event) arrives within the cancel bound and names a non-final
    /// task, that task is cancelled. Detached, so the caller waits for none of it; it ends within
    /// `cancel_timeout` (waiting for the answer; the send is aborted then) plus `cancel_timeout`
    /// (the CancelTask). The late answer is never applied: the failure stays the original one.
    fn cancel_late_identity(&self, mut late: LateAnswer) {
        let transport = Arc::clone(&self.agent.transport);
        let bound = self.config.cancel_timeout;
        tokio::spawn(async move {
            let named = tokio::time::timeout(bound, late.identity()).await;
            drop(late);
            let Ok(Some((task_id, false))) = named else {
                return;
            };
            tracing::debug!(task_id, "late remote task identity; cancelling it");
            let _ = spawn_cancel(transport, task_id, bound).await;
        });
    }
}
