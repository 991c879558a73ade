//! Authorization-T: one send, then waiting through SUBMITTED / WORKING (stream, else GetTask
//! polling) to a final result within the configured deadline.

use a2aflow_model::a2a::{GetTaskRequest, SendMessageResponse, StreamResponse, TaskState};
use a2aflow_model::{ErrorCode, Failure, MessageContent, ReceivedKind, ReceivedMessage};
use a2aflow_protocol::TransportError;
use a2aflow_protocol::{ResponseReducer, end_state_code};
use a2at::AUTHORIZATION_T_EXTENSION_URI;
use futures_util::StreamExt;
use tokio::time::Instant;

use crate::sender::{ExtensionSender, Prepared};

/// How an authorization ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AuthorizationStatus {
    /// COMPLETED, or the agent answered with a direct message.
    Approved,
    /// REJECTED.
    Rejected,
    /// FAILED.
    Failed,
    /// CANCELED.
    Canceled,
    /// INPUT_REQUIRED: the agent wants more input before deciding.
    InputRequired,
    /// AUTH_REQUIRED: the agent wants credentials before deciding.
    AuthRequired,
}

/// The final result of one Authorization-T operation, with its evidence. Only
/// [`AuthorizationStatus::Approved`] is success; the others come back as values, not errors.
#[derive(Debug, Clone, PartialEq)]
pub struct AuthorizationOutcome {
    /// The agent it went to.
    pub agent: String,
    /// The fresh context id of this operation.
    pub context_id: String,
    /// The remote task id, when the agent created a task.
    pub task_id: Option<String>,
    /// How it ended.
    pub status: AuthorizationStatus,
    /// The final task state (`None` for a direct message).
    pub state: Option<TaskState>,
    /// The final task (or the direct message) as evidence.
    pub result: ReceivedMessage,
    /// Everything received, in order, ending with the final view.
    pub evidence: Vec<ReceivedMessage>,
}

impl AuthorizationOutcome {
    /// True only for [`AuthorizationStatus::Approved`].
    pub fn is_success(&self) -> bool {
        self.status == AuthorizationStatus::Approved
    }

    /// The failure a non-approved outcome stands for (`a2a.task_failed`, `a2a.task_rejected`,
    /// `a2a.task_canceled`, `a2a.auth_required`, `negotiation.not_negotiable`); `None` when
    /// approved.
    pub fn failure(&self) -> Option<Failure> {
        let what = match self.status {
            AuthorizationStatus::Approved => return None,
            AuthorizationStatus::Rejected => "rejected",
            AuthorizationStatus::Failed => "failed",
            AuthorizationStatus::Canceled => "was canceled",
            AuthorizationStatus::InputRequired => "requires input",
            AuthorizationStatus::AuthRequired => "requires auth",
        };
        // The state → code mapping is the engine client's, so both report the same codes.
        let code = self.state.as_ref().and_then(end_state_code)?;
        let mut f = Failure::new(code, format!("Authorization-T task {what}"))
            .with_detail("agent", self.agent.clone())
            .with_detail("contextId", self.context_id.clone());
        if let Some(t) = &self.task_id {
            f = f.with_detail("taskId", t.clone());
        }
        Some(f)
    }
}

fn timed_out() -> Failure {
    Failure::new(ErrorCode::A2aTimeout, "Authorization-T operation timed out")
}

fn is_transient(e: &TransportError) -> bool {
    match e {
        TransportError::Connection(_) => true,
        TransportError::HttpStatus { status, .. } => *status >= 500,
        _ => false,
    }
}

/// Transient GetTask failures tolerated in a row.
const MAX_POLL_FAILURES: u32 = 3;

impl ExtensionSender {
    /// Sends `content` to `agent` as an Authorization-T operation and waits for its final result
    /// (at most [`ExtensionConfig::authorization_timeout`](crate::ExtensionConfig)).
    ///
    /// The card must declare the Authorization-T URI (`a2a.extension_not_supported`), and the
    /// content must activate and carry it (`config.invalid`, nothing is sent); an unknown agent
    /// is `workflow.unknown_agent`. The content goes out unchanged in a fresh context, with the
    /// extension in `message.extensions` and `A2A-Extensions`. FAILED / REJECTED / CANCELED and
    /// the interrupted states come back as an [`AuthorizationOutcome`] that is not a success;
    /// transport failures, identity changes and the deadline (`a2a.timeout`) are errors.
    pub async fn send_authorization(
        &self,
        agent: &str,
        content: MessageContent,
    ) -> Result<AuthorizationOutcome, Failure> {
        let prepared = self.prepare(agent, &content, AUTHORIZATION_T_EXTENSION_URI)?;
        let deadline = Instant::now() + self.config.authorization_timeout;
        match tokio::time::timeout_at(deadline, self.authorize(prepared, deadline)).await {
            // The calls inside are bounded by the same deadline (their timeout is what is left
            // of it), so one of them can time out in the very timer tick the operation does, and
            // is polled first: that is the operation's own timeout, and reported as such.
            Ok(Err(f)) if f.is(ErrorCode::A2aTimeout) && Instant::now() >= deadline => {
                Err(timed_out())
            }
            Ok(result) => result,
            Err(_) => Err(timed_out()),
        }
    }

    async fn authorize(
        &self,
        prepared: Prepared,
        deadline: Instant,
    ) -> Result<AuthorizationOutcome, Failure> {
        let Prepared {
            agent,
            request,
            options,
            context_id,
        } = prepared;
        // The whole operation is bounded by `timeout_at(deadline)` in the caller; the stream gets
        // a timeout of the same length (a deadline alone would bound a stream to zero, see the
        // report on `CallOptions::deadline` for streams).
        let options = options.with_timeout(deadline.saturating_duration_since(Instant::now()));
        let mut reducer = agent.reducer(context_id.clone(), None);
        if agent.streaming {
            let mut stream = agent
                .transport
                .send_streaming_message(&request, &options)
                .await?;
            while let Some(event) = stream.next().await {
                match event {
                    Ok(ev) => {
                        // Only the final view is read: `fold` skips the per-chunk evidence copy.
                        reducer.fold(ev)?;
                        if is_final(&reducer) {
                            break;
                        }
                    }
                    // A dropped stream after the task exists is waited on by polling.
                    Err(e) if reducer.task_id().is_some() && is_transient(&e) => break,
                    Err(e) => return Err(e.to_failure()),
                }
            }
        } else {
            match agent.transport.send_message(&request, &options).await? {
                SendMessageResponse::Task(t) => reducer.fold(StreamResponse::Task(t))?,
                SendMessageResponse::Message(m) => reducer.fold(StreamResponse::Message(m))?,
            };
        }
        let mut failures = 0;
        while !is_final(&reducer) {
            let Some(task_id) = reducer.task_id().map(str::to_owned) else {
                return Err(Failure::new(
                    ErrorCode::A2aInvalidResponse,
                    "Authorization-T acknowledgement has no task identity",
                ));
            };
            tokio::time::sleep(self.config.poll_interval).await;
            let get = GetTaskRequest {
                id: task_id,
                history_length: None,
                tenant: None,
            };
            match agent.transport.get_task(&get, &options).await {
                Ok(task) => {
                    failures = 0;
                    reducer.apply_task(task)?;
                }
                Err(e) if is_transient(&e) && failures < MAX_POLL_FAILURES => failures += 1,
                Err(e) => return Err(e.to_failure()),
            }
        }
        outcome(&agent.name, &reducer)
    }
}

/// A direct message, or a task state that is neither SUBMITTED nor WORKING nor unknown.
fn is_final(reducer: &ResponseReducer) -> bool {
    let view = reducer.view();
    view.direct_message.is_some()
        || view
            .state
            .as_ref()
            .is_some_and(|s| !matches!(s, TaskState::Submitted | TaskState::Working))
}

fn outcome(agent: &str, reducer: &ResponseReducer) -> Result<AuthorizationOutcome, Failure> {
    let view = reducer.view();
    let status = if view.direct_message.is_some() {
        AuthorizationStatus::Approved
    } else {
        match &view.state {
            Some(TaskState::Completed) => AuthorizationStatus::Approved,
            Some(TaskState::Rejected) => AuthorizationStatus::Rejected,
            Some(TaskState::Failed) => AuthorizationStatus::Failed,
            Some(TaskState::Canceled) => AuthorizationStatus::Canceled,
            Some(TaskState::InputRequired) => AuthorizationStatus::InputRequired,
            Some(TaskState::AuthRequired) => AuthorizationStatus::AuthRequired,
            other => {
                return Err(Failure::new(
                    ErrorCode::A2aInvalidResponse,
                    format!("Authorization-T task ended in an unknown state: {other:?}"),
                ));
            }
        }
    };
    Ok(AuthorizationOutcome {
        agent: agent.to_owned(),
        context_id: reducer.context_id().to_owned(),
        task_id: reducer.task_id().map(str::to_owned),
        status,
        state: if view.direct_message.is_some() {
            None
        } else {
            view.state.clone()
        },
        result: reducer.current_evidence(ReceivedKind::Task),
        evidence: reducer.evidence(),
    })
}
