//! Notification-T: a long-lived subscription. [`ExtensionSender::open_notification`] returns the
//! handle before any I/O; a spawned task sends the streaming message, feeds the listener, resubscribes
//! a dropped stream under the [`ResubscribePolicy`](crate::ResubscribePolicy), and on close
//! cancels the remote task (best effort, bounded) before resolving [`completion`].
//!
//! **Drop = close.** Dropping a [`NotificationSubscription`] without calling
//! [`close`](NotificationSubscription::close) closes it: the task stops reading, cancels the remote
//! task best-effort and exits; nothing is leaked
//! ([`ExtensionSender::live_subscriptions`] counts the tasks still running).
//!
//! [`completion`]: NotificationSubscription::completion

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use a2aflow_model::a2a::{
    CancelTaskRequest, GetTaskRequest, StreamResponse, SubscribeToTaskRequest, TaskState,
};
use a2aflow_model::{ErrorCode, Failure, MessageContent, ReceivedMessage};
use a2aflow_protocol::{CallOptions, StreamResponseStream};
use a2at::NOTIFICATION_T_EXTENSION_URI;
use futures_util::StreamExt;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::ExtensionConfig;
use crate::sender::{ExtensionSender, LiveGuard, Prepared};
use a2aflow_protocol::AgentChannel;

/// How a subscription's stream ended, when it ended without an error.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ended {
    /// The host closed it ([`NotificationSubscription::close`], the listener, or a drop).
    Closed,
    /// The agent ended the stream after the subscription's task reached `final_state`.
    RemoteEnded {
        /// The task's last state.
        final_state: Option<TaskState>,
    },
}

type Slot<T> = watch::Sender<Option<Result<T, Failure>>>;

#[derive(Debug)]
struct Shared {
    agent: String,
    context_id: String,
    closed: CancellationToken,
    events: AtomicU64,
    resubscribes: AtomicU32,
    opened_at: Instant,
    last_event_at: Mutex<Option<Instant>>,
    task_id: Mutex<Option<String>>,
    ack: Slot<ReceivedMessage>,
    done: Slot<Ended>,
}

impl Shared {
    fn close(&self) {
        self.closed.cancel();
    }

    fn settle<T: Clone>(slot: &Slot<T>, value: Result<T, Failure>) {
        slot.send_if_modified(|v| {
            if v.is_some() {
                return false;
            }
            *v = Some(value);
            true
        });
    }

    async fn wait<T: Clone>(slot: &Slot<T>) -> Result<T, Failure> {
        let mut rx = slot.subscribe();
        // The sender lives in `Shared`, which the caller holds, so the channel cannot close;
        // the task's exit guard always settles both slots.
        match rx.wait_for(Option::is_some).await {
            Ok(v) => v.clone().unwrap_or_else(|| Err(ended_unexpectedly())),
            Err(_) => Err(ended_unexpectedly()),
        }
    }
}

fn ended_unexpectedly() -> Failure {
    Failure::new(
        ErrorCode::A2aConnection,
        "Notification-T subscription task ended unexpectedly",
    )
}

fn closed_before_ack() -> Failure {
    Failure::new(
        ErrorCode::A2aTaskCanceled,
        "Notification-T subscription closed before acknowledgement",
    )
    .with_detail("reason", "closedBeforeAcknowledgement")
}

/// What a listener gets with every event: it can close the subscription from inside the
/// callback and read its figures. Not `Clone`: it lives only for the call.
#[derive(Debug)]
pub struct SubscriptionControl {
    shared: Arc<Shared>,
}

impl SubscriptionControl {
    /// Closes the subscription: no further listener call happens after this one returns.
    pub fn close(&self) {
        self.shared.close();
    }

    /// Events received so far (this one included).
    pub fn event_count(&self) -> u64 {
        self.shared.events.load(Ordering::SeqCst)
    }

    /// The remote task id, once known.
    pub fn task_id(&self) -> Option<String> {
        lock(&self.shared.task_id).clone()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// An open Notification-T subscription. Dropping it closes it (see the module docs).
#[derive(Debug)]
pub struct NotificationSubscription {
    shared: Arc<Shared>,
}

impl NotificationSubscription {
    /// The agent it listens to.
    pub fn agent(&self) -> &str {
        &self.shared.agent
    }

    /// The subscription's fresh context id.
    pub fn context_id(&self) -> &str {
        &self.shared.context_id
    }

    /// The remote task id, once the agent revealed it.
    pub fn task_id(&self) -> Option<String> {
        lock(&self.shared.task_id).clone()
    }

    /// The first protocol result: the first event whose task state is past SUBMITTED (WORKING,
    /// a final or an interrupted state), or a direct message; a SUBMITTED snapshot alone does
    /// not acknowledge. A FAILED,
    /// CANCELED or REJECTED acknowledgement resolves as `a2a.task_failed` / `a2a.task_canceled` /
    /// `a2a.task_rejected`; a transport failure, the acknowledgement deadline (`a2a.timeout`) or a
    /// close before it (`a2a.task_canceled`, reason `closedBeforeAcknowledgement`) are errors too.
    pub async fn acknowledgement(&self) -> Result<ReceivedMessage, Failure> {
        Shared::wait(&self.shared.ack).await
    }

    /// Resolves once the stream has really ended and the task has exited: [`Ended::Closed`] after
    /// a close, [`Ended::RemoteEnded`] when the agent ended it after the task's terminal state, or
    /// the failure (resubscribe budget exhausted, acknowledgement failure, identity change).
    pub async fn completion(&self) -> Result<Ended, Failure> {
        Shared::wait(&self.shared.done).await
    }

    /// True until the completion has resolved.
    pub fn is_active(&self) -> bool {
        self.shared.done.borrow().is_none()
    }

    /// Decoded events received (the liveness figure; SSE keep-alive comments are not events).
    pub fn event_count(&self) -> u64 {
        self.shared.events.load(Ordering::SeqCst)
    }

    /// When the last event arrived (`None` before the first). It does not move while a dropped
    /// stream is being resubscribed, so the gap shows.
    pub fn last_event_at(&self) -> Option<Instant> {
        *lock(&self.shared.last_event_at)
    }

    /// When the subscription was opened.
    pub fn opened_at(&self) -> Instant {
        self.shared.opened_at
    }

    /// Successful resubscriptions after dropped streams.
    pub fn resubscribes(&self) -> u32 {
        self.shared.resubscribes.load(Ordering::SeqCst)
    }

    /// Closes the subscription: idempotent, returns at once. The task stops reading (no listener
    /// call starts afterwards), cancels the remote task best-effort within the cancel bound and
    /// then resolves [`completion`](Self::completion) with [`Ended::Closed`].
    pub fn close(&self) {
        self.shared.close();
    }
}

impl Drop for NotificationSubscription {
    fn drop(&mut self) {
        self.shared.close();
    }
}

/// Settles both slots if the task exits on any path without having done so (a panicking
/// listener included), and holds the task's place in the live counter.
struct ExitGuard {
    shared: Arc<Shared>,
    live: Option<LiveGuard>,
}

impl Drop for ExitGuard {
    fn drop(&mut self) {
        Shared::settle(&self.shared.ack, Err(ended_unexpectedly()));
        Shared::settle(&self.shared.done, Err(ended_unexpectedly()));
    }
}

impl ExtensionSender {
    /// Opens a Notification-T subscription to `agent` with `content`, calling `listener` for each
    /// event. Returns the handle before any I/O (a spawned task does it), so even a listener
    /// that closes on the first event sees a handle in place.
    ///
    /// The card must declare the Notification-T URI (`a2a.extension_not_supported`) and the
    /// content must activate and carry it (`config.invalid`); an unknown agent is
    /// `workflow.unknown_agent`; outside a tokio runtime it is `config.invalid`. Nothing is sent
    /// in those cases. Terminal states of the task do not end the subscription by themselves:
    /// the agent ending the stream does. Events of other tasks are delivered and never end it.
    pub fn open_notification<L>(
        &self,
        agent: &str,
        content: MessageContent,
        listener: L,
    ) -> Result<NotificationSubscription, Failure>
    where
        L: FnMut(&SubscriptionControl, ReceivedMessage) + Send + 'static,
    {
        let prepared = self.prepare(agent, &content, NOTIFICATION_T_EXTENSION_URI)?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            Failure::new(
                ErrorCode::ConfigInvalid,
                "open_notification must be called inside a tokio runtime",
            )
        })?;
        let shared = Arc::new(Shared {
            agent: prepared.agent.name.clone(),
            context_id: prepared.context_id.clone(),
            closed: CancellationToken::new(),
            events: AtomicU64::new(0),
            resubscribes: AtomicU32::new(0),
            opened_at: Instant::now(),
            last_event_at: Mutex::new(None),
            task_id: Mutex::new(None),
            ack: watch::Sender::new(None),
            done: watch::Sender::new(None),
        });
        let guard = ExitGuard {
            shared: Arc::clone(&shared),
            live: Some(LiveGuard::new(&self.live)),
        };
        let run = Run {
            control: SubscriptionControl {
                shared: Arc::clone(&shared),
            },
            agent: Arc::clone(&prepared.agent),
            config: self.config.clone(),
            context_id: prepared.context_id.clone(),
            task_id: None,
            last_state: None,
            acked: false,
        };
        runtime.spawn(run.run(prepared, listener, guard));
        Ok(NotificationSubscription { shared })
    }
}

/// Why the read loop stopped reading the current stream.
enum Break {
    Ended(Result<Ended, Failure>),
    Dropped(Failure),
}

struct Run {
    control: SubscriptionControl,
    /// The agent's channel (its limits cap what one event may assemble).
    agent: Arc<AgentChannel>,
    config: ExtensionConfig,
    context_id: String,
    /// The subscription's remote task, once known.
    task_id: Option<String>,
    /// The last state of that task (events are not retained: only this is kept).
    last_state: Option<TaskState>,
    acked: bool,
}

impl Run {
    fn shared(&self) -> &Shared {
        &self.control.shared
    }

    async fn run<L>(mut self, prepared: Prepared, mut listener: L, guard: ExitGuard)
    where
        L: FnMut(&SubscriptionControl, ReceivedMessage) + Send + 'static,
    {
        let agent = Arc::clone(&prepared.agent);
        let result = self.drive(prepared, &mut listener).await;
        if matches!(result, Ok(Ended::Closed)) {
            self.cancel_remote(&agent).await;
        }
        let ack_failure = match &result {
            Ok(Ended::Closed) => closed_before_ack(),
            Ok(Ended::RemoteEnded { .. }) => Failure::new(
                ErrorCode::A2aInvalidResponse,
                "Notification-T stream ended before acknowledgement",
            ),
            Err(f) => f.clone(),
        };
        Shared::settle(&self.shared().ack, Err(ack_failure));
        // Leave the live count before completion resolves: a host that saw completion never
        // counts this task as live.
        let mut guard = guard;
        drop(guard.live.take());
        Shared::settle(&self.shared().done, result);
        drop(guard);
    }

    /// Best-effort, bounded CancelTask when the task is known and not final.
    async fn cancel_remote(&self, agent: &AgentChannel) {
        let Some(task_id) = self.task_id.clone() else {
            return;
        };
        if self.is_terminal() {
            return;
        }
        let request = CancelTaskRequest {
            id: task_id.clone(),
            metadata: None,
            tenant: None,
        };
        let options = CallOptions::default().with_timeout(self.config.cancel_timeout);
        match tokio::time::timeout(
            self.config.cancel_timeout,
            agent.transport.cancel_task(&request, &options),
        )
        .await
        {
            Ok(Ok(_)) => tracing::debug!(task_id, "notification task cancelled"),
            Ok(Err(e)) => tracing::warn!(task_id, error = %e, "best-effort CancelTask failed"),
            Err(_) => tracing::warn!(task_id, "best-effort CancelTask timed out"),
        }
    }

    async fn drive<L>(&mut self, prepared: Prepared, listener: &mut L) -> Result<Ended, Failure>
    where
        L: FnMut(&SubscriptionControl, ReceivedMessage),
    {
        let ack_deadline = self.shared().opened_at + self.config.acknowledgement_timeout;
        let closed = self.shared().closed.clone();
        let agent = prepared.agent;
        let opened = tokio::select! {
            biased;
            () = closed.cancelled() => return Ok(Ended::Closed),
            () = tokio::time::sleep_until(ack_deadline) => return Err(self.ack_timed_out()),
            s = agent.transport.send_streaming_message(&prepared.request, &prepared.options) => s,
        };
        let mut stream = opened.map_err(|e| e.to_failure())?;
        let mut attempts = 0u32;
        loop {
            let failure = match self.read(&mut stream, listener, ack_deadline).await {
                Break::Ended(result) => return result,
                Break::Dropped(failure) => failure,
            };
            // The stream dropped: resubscribe within the policy.
            loop {
                let Some(task_id) = self.task_id.clone() else {
                    return Err(failure);
                };
                if attempts >= self.config.resubscribe.max_attempts {
                    return Err(failure.with_detail("resubscribeAttempts", attempts));
                }
                attempts += 1;
                let wait = self.config.resubscribe.delay(attempts);
                tokio::select! {
                    biased;
                    () = closed.cancelled() => return Ok(Ended::Closed),
                    () = tokio::time::sleep(wait) => {}
                }
                let request = SubscribeToTaskRequest {
                    id: task_id.clone(),
                    tenant: None,
                };
                let options = CallOptions::default()
                    .with_extensions([NOTIFICATION_T_EXTENSION_URI.to_owned()]);
                let next = tokio::select! {
                    biased;
                    () = closed.cancelled() => return Ok(Ended::Closed),
                    s = agent.transport.subscribe_to_task(&request, &options) => s,
                };
                match next {
                    Ok(s) => {
                        stream = s;
                        self.shared().resubscribes.fetch_add(1, Ordering::SeqCst);
                        break;
                    }
                    Err(e) => {
                        // A task that ended while the stream was down cannot be resubscribed.
                        let get = GetTaskRequest {
                            id: task_id,
                            history_length: None,
                            tenant: None,
                        };
                        if let Ok(task) = agent.transport.get_task(&get, &options).await
                            && task.status.state.is_terminal()
                        {
                            let state = task.status.state.clone();
                            self.last_state = Some(state.clone());
                            return Ok(Ended::RemoteEnded {
                                final_state: Some(state),
                            });
                        }
                        tracing::debug!(error = %e, attempts, "resubscribe failed");
                    }
                }
            }
            // A resubscribed stream that delivers resets the budget (see `read`).
            attempts = 0;
        }
    }

    fn ack_timed_out(&self) -> Failure {
        Failure::new(
            ErrorCode::A2aTimeout,
            format!(
                "Notification-T acknowledgement timed out after {}s",
                self.config.acknowledgement_timeout.as_secs_f64()
            ),
        )
    }

    async fn read<L>(
        &mut self,
        stream: &mut StreamResponseStream,
        listener: &mut L,
        ack_deadline: Instant,
    ) -> Break
    where
        L: FnMut(&SubscriptionControl, ReceivedMessage),
    {
        let closed = self.shared().closed.clone();
        loop {
            let acked = self.acked;
            let next = tokio::select! {
                biased;
                () = closed.cancelled() => return Break::Ended(Ok(Ended::Closed)),
                () = tokio::time::sleep_until(ack_deadline), if !acked => {
                    return Break::Ended(Err(self.ack_timed_out()));
                }
                n = stream.next() => n,
            };
            match next {
                Some(Ok(event)) => {
                    let received = match self.apply(event) {
                        Ok(r) => r,
                        Err(f) => return Break::Ended(Err(f)),
                    };
                    self.note(&received);
                    // Never call the listener once closed (also from a concurrent close).
                    if closed.is_cancelled() {
                        return Break::Ended(Ok(Ended::Closed));
                    }
                    listener(&self.control, received);
                }
                Some(Err(e)) => return Break::Dropped(e.to_failure()),
                None if self.is_terminal() => {
                    return Break::Ended(Ok(Ended::RemoteEnded {
                        final_state: self.last_state.clone(),
                    }));
                }
                None => {
                    return Break::Dropped(Failure::new(
                        ErrorCode::A2aConnection,
                        "Notification-T stream ended before its task was final",
                    ));
                }
            }
        }
    }

    fn is_terminal(&self) -> bool {
        self.last_state.as_ref().is_some_and(TaskState::is_terminal)
    }

    /// Turns one event into evidence with a fresh reducer (so nothing accumulates over a
    /// long-lived stream; artifact chunks are delivered as they arrive). An event of the
    /// subscription's own task is identity-checked against it and moves its state; an event of
    /// another task never does.
    fn apply(&mut self, event: StreamResponse) -> Result<ReceivedMessage, Failure> {
        let (task_id, context_id) = identity(&event);
        let ours = match (self.task_id.as_deref(), task_id) {
            (Some(known), Some(t)) => known == t,
            _ => true,
        };
        if !ours {
            let ctx = context_id.unwrap_or_else(|| self.context_id.clone());
            return Ok(self.agent.reducer(ctx, None).apply(event)?.received);
        }
        let mut reducer = self
            .agent
            .reducer(self.context_id.clone(), self.task_id.as_deref());
        let received = reducer.apply(event)?.received;
        if self.task_id.is_none()
            && let Some(t) = reducer.task_id()
        {
            self.task_id = Some(t.to_owned());
            *lock(&self.shared().task_id) = Some(t.to_owned());
        }
        if received.state.is_some() {
            self.last_state = received.state.clone();
        }
        Ok(received)
    }

    fn note(&mut self, received: &ReceivedMessage) {
        let shared = &self.control.shared;
        shared.events.fetch_add(1, Ordering::SeqCst);
        *lock(&shared.last_event_at) = Some(Instant::now());
        if self.acked {
            return;
        }
        let state = received.state.clone();
        let is_message =
            received.message.is_some() && received.kind == a2aflow_model::ReceivedKind::Message;
        let ack = match state {
            Some(TaskState::Failed) => Err(TaskState::Failed),
            Some(TaskState::Canceled) => Err(TaskState::Canceled),
            Some(TaskState::Rejected) => Err(TaskState::Rejected),
            // SUBMITTED only says the request arrived; the agent's answer comes after it.
            Some(TaskState::Unspecified | TaskState::Submitted) => return,
            Some(_) => Ok(()),
            None if is_message => Ok(()),
            None => return,
        };
        self.acked = true;
        let value = match ack {
            Ok(()) => Ok(received.clone()),
            Err(state) => {
                let code = match state {
                    TaskState::Failed => ErrorCode::A2aTaskFailed,
                    TaskState::Canceled => ErrorCode::A2aTaskCanceled,
                    _ => ErrorCode::A2aTaskRejected,
                };
                let mut f = Failure::new(
                    code,
                    format!("Notification-T acknowledgement is {}", state_text(&state)),
                )
                .with_detail("contextId", shared.context_id.clone());
                if let Some(t) = &received.task_id {
                    f = f.with_detail("taskId", t.clone());
                }
                Err(f)
            }
        };
        Shared::settle(&shared.ack, value);
    }
}

fn state_text(state: &TaskState) -> &'static str {
    match state {
        TaskState::Failed => "FAILED",
        TaskState::Canceled => "CANCELED",
        TaskState::Rejected => "REJECTED",
        _ => "not final",
    }
}

/// The task id and context id an event names.
fn identity(event: &StreamResponse) -> (Option<&str>, Option<String>) {
    match event {
        StreamResponse::Task(t) => (Some(t.id.as_str()), Some(t.context_id.clone())),
        StreamResponse::StatusUpdate(s) => (Some(s.task_id.as_str()), Some(s.context_id.clone())),
        StreamResponse::ArtifactUpdate(a) => (Some(a.task_id.as_str()), Some(a.context_id.clone())),
        StreamResponse::Message(m) => (
            m.task_id.as_deref().filter(|t| !t.trim().is_empty()),
            m.context_id.clone(),
        ),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap (shop rule)

    use super::*;
    use a2aflow_model::a2a::{
        AgentCard, ListTasksRequest, ListTasksResponse, SendMessageRequest, SendMessageResponse,
        Task, TaskStatus, TaskStatusUpdateEvent,
    };
    use a2aflow_protocol::{Binding, Transport, TransportError};
    use async_trait::async_trait;
    use serde_json::{Map, json};

    /// Streams the scripted events for the request's context, then stays open.
    #[derive(Debug)]
    struct Scripted {
        events: Mutex<Vec<(String, String, TaskState)>>,
    }

    fn status(task: &str, ctx: &str, state: TaskState) -> StreamResponse {
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: task.into(),
            context_id: ctx.into(),
            status: TaskStatus {
                state,
                message: None,
                timestamp: None,
            },
            metadata: None,
        })
    }

    fn unsupported() -> TransportError {
        TransportError::InvalidRequest("not scripted".into())
    }

    #[async_trait]
    impl Transport for Scripted {
        fn binding(&self) -> Binding {
            Binding::JsonRpc
        }
        fn url(&self) -> &str {
            "http://scripted"
        }
        async fn send_message(
            &self,
            _: &SendMessageRequest,
            _: &CallOptions,
        ) -> Result<SendMessageResponse, TransportError> {
            Err(unsupported())
        }
        async fn send_streaming_message(
            &self,
            request: &SendMessageRequest,
            _: &CallOptions,
        ) -> Result<StreamResponseStream, TransportError> {
            let ours = request.message.context_id.clone().unwrap();
            let events: Vec<Result<StreamResponse, TransportError>> = lock(&self.events)
                .iter()
                .map(|(task, ctx, state)| {
                    let ctx = if ctx == "ours" {
                        ours.clone()
                    } else {
                        ctx.clone()
                    };
                    Ok(status(task, &ctx, state.clone()))
                })
                .collect();
            Ok(Box::pin(
                futures_util::stream::iter(events).chain(futures_util::stream::pending()),
            ))
        }
        async fn get_task(
            &self,
            _: &GetTaskRequest,
            _: &CallOptions,
        ) -> Result<Task, TransportError> {
            Err(unsupported())
        }
        async fn list_tasks(
            &self,
            _: &ListTasksRequest,
            _: &CallOptions,
        ) -> Result<ListTasksResponse, TransportError> {
            Err(unsupported())
        }
        async fn cancel_task(
            &self,
            _: &CancelTaskRequest,
            _: &CallOptions,
        ) -> Result<Task, TransportError> {
            Err(unsupported())
        }
        async fn subscribe_to_task(
            &self,
            _: &SubscribeToTaskRequest,
            _: &CallOptions,
        ) -> Result<StreamResponseStream, TransportError> {
            Err(unsupported())
        }
        async fn get_extended_agent_card(
            &self,
            _: &CallOptions,
        ) -> Result<AgentCard, TransportError> {
            Err(unsupported())
        }
    }

    #[tokio::test]
    async fn s_ext_16_terminal_states_of_unrelated_tasks_never_end_it() {
        let mut script = vec![("t1".to_owned(), "ours".to_owned(), TaskState::Working)];
        for state in [
            TaskState::Completed,
            TaskState::Failed,
            TaskState::Canceled,
            TaskState::Rejected,
        ] {
            script.push(("other".to_owned(), "ctx-other".to_owned(), state));
        }
        script.push(("t1".to_owned(), "ours".to_owned(), TaskState::InputRequired));
        script.push(("t1".to_owned(), "ours".to_owned(), TaskState::Working));
        let n = script.len();
        let transport = Arc::new(Scripted {
            events: Mutex::new(script),
        });
        let sender = ExtensionSender::with_transport(
            "a",
            transport,
            &[NOTIFICATION_T_EXTENSION_URI],
            ExtensionConfig::default(),
        );
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut metadata = Map::new();
        metadata.insert(NOTIFICATION_T_EXTENSION_URI.to_owned(), json!("x"));
        let content = MessageContent {
            parts: MessageContent::text("sub").parts,
            metadata: Some(metadata),
            extensions: vec![NOTIFICATION_T_EXTENSION_URI.to_owned()],
            context_id: None,
        };
        let sub = sender
            .open_notification(
                "a",
                content,
                move |_: &SubscriptionControl, r: ReceivedMessage| {
                    tx.send(r).unwrap();
                },
            )
            .unwrap();
        let mut got = Vec::new();
        for _ in 0..n {
            got.push(rx.recv().await.unwrap());
        }
        assert_eq!(
            sub.acknowledgement().await.unwrap().state,
            Some(TaskState::Working)
        );
        assert_eq!(got[1].task_id.as_deref(), Some("other"));
        assert_eq!(got[1].state, Some(TaskState::Completed));
        assert_eq!(sub.event_count(), n as u64);
        assert_eq!(sub.task_id().as_deref(), Some("t1"));
        assert!(sub.is_active());
        sub.close();
        assert_eq!(sub.completion().await.unwrap(), Ended::Closed);
        assert_eq!(sender.live_subscriptions(), 0);
    }
}
