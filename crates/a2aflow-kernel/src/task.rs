//! One subtask's life inside a run: the host callback, the concurrency permit, the dispatch
//! through the remote client and the negotiation hook — each bounded by the run's deadline and
//! the task's cancellation token, each turned into a [`TaskResultView`].

use crate::client::{DispatchRequest, NegotiationHook, project_outputs};
use crate::control_point::CallbackError;
use crate::events::EventEmitter;
use crate::executor::RunShared;
use crate::panic_guard::CatchUnwind;
use a2aflow_model::{
    ErrorCode, EventKind, Failure, NegotiationReply, NegotiationRequest, StepType,
    TaskOutcomeStatus, TaskRequest, TaskResultView,
};
use async_trait::async_trait;
use serde_json::json;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// Why a piece of work stopped before it finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Interrupt {
    /// The run's deadline passed.
    Timeout,
    /// The task's token fired (run cancelled, consumer gone, ANY_SUCCESS loser).
    Cancelled,
}

impl Interrupt {
    pub(crate) fn failure(self, timeout_ms: u128) -> Failure {
        match self {
            Interrupt::Timeout => Failure::new(
                ErrorCode::WorkflowTimeout,
                format!("the run's deadline of {timeout_ms} ms passed"),
            )
            .with_detail("timeoutMs", json!(timeout_ms)),
            Interrupt::Cancelled => {
                Failure::new(ErrorCode::WorkflowCancelled, "the run was cancelled")
            }
        }
    }
}

/// The outcome of a guarded callback.
pub(crate) enum Guarded<T> {
    Done(T),
    Panicked(String),
    Interrupted(Interrupt),
}

/// Runs `fut` until it finishes, the token fires or the deadline passes; `fut` is not polled at
/// all when either already happened. A result that arrives when the token has fired or the
/// deadline has passed is dropped.
pub(crate) async fn guard<F: Future + Unpin>(
    fut: F,
    token: &CancellationToken,
    mut sleep: Pin<&mut Sleep>,
    deadline: Instant,
) -> Guarded<F::Output> {
    // Work is never started once the run is over: a callback is not even called when the token
    // fired (e.g. inside the event callback that announced this very work) or the deadline passed.
    if let Some(i) = interrupted(token, deadline) {
        return Guarded::Interrupted(i);
    }
    let r = tokio::select! {
        biased;
        r = CatchUnwind::new(fut) => Some(r),
        _ = token.cancelled() => None,
        _ = sleep.as_mut() => None,
    };
    if let Some(i) = interrupted(token, deadline) {
        return Guarded::Interrupted(i);
    }
    match r {
        Some(Ok(v)) => Guarded::Done(v),
        Some(Err(m)) => Guarded::Panicked(m),
        None => Guarded::Interrupted(Interrupt::Timeout),
    }
}

pub(crate) fn interrupted(token: &CancellationToken, deadline: Instant) -> Option<Interrupt> {
    if token.is_cancelled() {
        Some(Interrupt::Cancelled)
    } else if Instant::now() >= deadline {
        Some(Interrupt::Timeout)
    } else {
        None
    }
}

pub(crate) fn panicked(what: &str, message: &str) -> Failure {
    Failure::new(
        ErrorCode::WorkflowCallbackPanicked,
        format!("{what} panicked: {message}"),
    )
}

/// The view of a subtask before it ran, without its identity (see [`name_view`]).
fn unnamed_view() -> TaskResultView {
    TaskResultView {
        agent_name: String::new(),
        skill: String::new(),
        task_id: String::new(),
        task_description: String::new(),
        status: TaskOutcomeStatus::Completed,
        context_id: None,
        remote_task_id: None,
        outputs: Vec::new(),
        received_messages: Vec::new(),
        error: None,
        error_code: None,
        error_details: serde_json::Map::new(),
    }
}

/// Gives `view` the identity of the subtask `request` describes. The request is consumed: its
/// strings move into the view (the request is no longer needed once the task ended).
pub(crate) fn name_view(view: &mut TaskResultView, request: TaskRequest) {
    view.agent_name = request.agent;
    view.skill = request.skill;
    view.task_id = request.local_task_id;
    view.task_description = request.description;
}

pub(crate) fn fail_view(view: &mut TaskResultView, status: TaskOutcomeStatus, f: Failure) {
    let (code, message, details) = f.into_parts();
    view.status = status;
    view.error = Some(message);
    view.error_code = Some(code.into());
    view.error_details = details;
}

/// What a subtask job hands back to the scheduler.
pub(crate) struct TaskDone {
    pub(crate) step: usize,
    pub(crate) index: usize,
    pub(crate) view: TaskResultView,
    pub(crate) interrupt: Option<Interrupt>,
}

/// Runs one subtask to its end.
pub(crate) async fn run_task(
    sh: Arc<RunShared>,
    step: usize,
    index: usize,
    request: TaskRequest,
    token: CancellationToken,
    closed: Arc<AtomicBool>,
) -> TaskDone {
    // Boxed so every allocation of a task stays small (large futures make the allocator
    // consolidate on every spawn; measured in benches/scheduling.rs).
    let mut view = Box::new(unnamed_view());
    // Delegation hook: a subtask naming a child workflow runs it (crate::delegation).
    let interrupt = match crate::delegation::target_of(&sh, step, index) {
        Some(target) => {
            crate::delegation::run_subtask(&sh, target, request, &token, &closed, &mut view).await
        }
        None => Box::pin(execute(&sh, request, &token, &closed, &mut view)).await,
    };
    if let Some(i) = interrupt {
        fail_view(
            &mut view,
            TaskOutcomeStatus::Canceled,
            i.failure(sh.timeout.as_millis()),
        );
        view.outputs.clear();
        view.received_messages.clear();
    }
    closed.store(true, Ordering::Release);
    TaskDone {
        step,
        index,
        view: *view,
        interrupt,
    }
}

async fn execute(
    sh: &RunShared,
    request: TaskRequest,
    token: &CancellationToken,
    closed: &Arc<AtomicBool>,
    view: &mut TaskResultView,
) -> Option<Interrupt> {
    if request.step_type != StepType::SelfLoop {
        let interrupt = execute_remote(sh, &request, token, closed, view).await;
        name_view(view, request);
        return interrupt;
    }
    let sleep = tokio::time::sleep_until(sh.deadline);
    tokio::pin!(sleep);
    // The host gets the request itself, so the view's identity is copied first.
    view.agent_name = request.agent.clone();
    view.skill = request.skill.clone();
    view.task_id = request.local_task_id.clone();
    view.task_description = request.description.clone();
    match guard(sh.cp.on_self_task(request), token, sleep, sh.deadline).await {
        Guarded::Done(Ok(result)) => view.outputs = result.outputs,
        Guarded::Done(Err(e)) => fail_view(view, TaskOutcomeStatus::Failed, e.into_failure()),
        Guarded::Panicked(m) => fail_view(
            view,
            TaskOutcomeStatus::Failed,
            panicked("on_self_task", &m),
        ),
        Guarded::Interrupted(i) => return Some(i),
    }
    None
}

/// What became of work that gets a grace period when it is interrupted.
pub(crate) enum Graced<T> {
    /// It finished first (`Err` = its panic message).
    Done(Result<T, String>),
    /// The token fired or the deadline passed. The token has been cancelled (stopping the work's
    /// own subtree) and the work given the grace period to wind down (e.g. a best-effort remote
    /// cancel); what it returned by then, if anything, is here — never to be forwarded as a result.
    Interrupted(Interrupt, Option<Result<T, String>>),
}

/// Runs `fut` until it finishes, the token fires or the deadline passes; on an interruption,
/// cancels the token and waits at most `grace` for `fut` to wind down.
pub(crate) async fn with_grace<F: Future + Unpin>(
    fut: F,
    token: &CancellationToken,
    mut sleep: Pin<&mut Sleep>,
    deadline: Instant,
    grace: std::time::Duration,
) -> Graced<F::Output> {
    let fut = CatchUnwind::new(fut);
    tokio::pin!(fut);
    let first = tokio::select! {
        biased;
        r = &mut fut => Some(r),
        _ = token.cancelled() => None,
        _ = sleep.as_mut() => None,
    };
    let interrupt = interrupted(token, deadline);
    match (first, interrupt) {
        (Some(r), None) => Graced::Done(r),
        (first, i) => {
            token.cancel();
            let late = match first {
                Some(r) => Some(r),
                None => tokio::time::timeout(grace, &mut fut).await.ok(),
            };
            Graced::Interrupted(i.unwrap_or(Interrupt::Timeout), late)
        }
    }
}

/// Asks the host for a subtask's content (`on_task`), guarded by the token and the deadline. A
/// failed or panicking callback is written into `view` (`Err(None)`); an interruption is returned
/// (`Err(Some(_))`).
pub(crate) async fn ask_host(
    sh: &RunShared,
    request: &TaskRequest,
    token: &CancellationToken,
    sleep: Pin<&mut Sleep>,
    view: &mut TaskResultView,
) -> Result<a2aflow_model::MessageContent, Option<Interrupt>> {
    match guard(sh.cp.on_task(request.clone()), token, sleep, sh.deadline).await {
        Guarded::Done(Ok(c)) => Ok(c),
        Guarded::Done(Err(e)) => {
            fail_view(view, TaskOutcomeStatus::Failed, e.into_failure());
            Err(None)
        }
        Guarded::Panicked(m) => {
            fail_view(view, TaskOutcomeStatus::Failed, panicked("on_task", &m));
            Err(None)
        }
        Guarded::Interrupted(i) => Err(Some(i)),
    }
}

/// The remote path of one subtask: `on_task`, the limiter, the dispatch.
async fn execute_remote(
    sh: &RunShared,
    request: &TaskRequest,
    token: &CancellationToken,
    closed: &Arc<AtomicBool>,
    view: &mut TaskResultView,
) -> Option<Interrupt> {
    let sleep = tokio::time::sleep_until(sh.deadline);
    tokio::pin!(sleep);
    let content = match ask_host(sh, request, token, sleep.as_mut(), view).await {
        Ok(c) => c,
        Err(interrupt) => return interrupt,
    };
    let _permit = match &sh.semaphore {
        None => None,
        Some(sem) => {
            match guard(
                Box::pin(sem.clone().acquire_owned()),
                token,
                sleep.as_mut(),
                sh.deadline,
            )
            .await
            {
                Guarded::Done(Ok(p)) => Some(p),
                Guarded::Done(Err(_)) | Guarded::Panicked(_) => {
                    // The semaphore is owned by the run and never closed while tasks run.
                    fail_view(
                        view,
                        TaskOutcomeStatus::Failed,
                        Failure::new(
                            ErrorCode::WorkflowExecutionFailed,
                            "the remote-task limiter was closed",
                        ),
                    );
                    return None;
                }
                Guarded::Interrupted(i) => return Some(i),
            }
        }
    };
    Box::pin(dispatch_remote(
        sh, request, token, closed, content, sleep, view,
    ))
    .await
}

/// Sends the host's content through the remote client and waits for the outcome.
async fn dispatch_remote(
    sh: &RunShared,
    request: &TaskRequest,
    token: &CancellationToken,
    closed: &Arc<AtomicBool>,
    content: a2aflow_model::MessageContent,
    mut sleep: Pin<&mut Sleep>,
    view: &mut TaskResultView,
) -> Option<Interrupt> {
    let emitter = if sh.hub.enabled() {
        EventEmitter::new(
            sh.hub.clone(),
            Arc::from(request.step_name.as_str()),
            Arc::from(request.local_task_id.as_str()),
            closed.clone(),
        )
    } else {
        EventEmitter::silent(closed.clone())
    };
    let hook = KernelNegotiation {
        sh,
        token,
        emitter: emitter.clone(),
        agent: &request.agent,
        exchanges: AtomicU32::new(0),
    };
    let dispatch = sh.client.dispatch(DispatchRequest {
        execution_id: &sh.execution_id,
        local_task_id: &request.local_task_id,
        agent: &request.agent,
        skill: &request.skill,
        content,
        task: request,
        deadline: sh.deadline,
        cancel: token.clone(),
        negotiation: &hook,
        events: emitter,
    });
    let first = match with_grace(dispatch, token, sleep.as_mut(), sh.deadline, sh.grace).await {
        Graced::Done(r) => r,
        Graced::Interrupted(i, late) => {
            // The client's result is dropped, except the remote identity (context id, remote
            // task id) it reported while winding down: the view keeps it.
            if let Some(Ok(r)) = late {
                let (context_id, remote_task_id) = match r {
                    Ok(o) => (o.context_id, o.remote_task_id),
                    Err(f) => (f.context_id, f.remote_task_id),
                };
                view.context_id = context_id;
                view.remote_task_id = remote_task_id;
            }
            return Some(i);
        }
    };
    match first {
        Ok(Ok(outcome)) => {
            view.context_id = outcome.context_id;
            view.remote_task_id = outcome.remote_task_id;
            view.outputs = outcome.outputs;
            view.received_messages = outcome.received_messages;
        }
        Ok(Err(failure)) => {
            view.context_id = failure.context_id;
            view.remote_task_id = failure.remote_task_id;
            view.outputs = project_outputs(&failure.received_messages, false);
            view.received_messages = failure.received_messages;
            fail_view(view, TaskOutcomeStatus::Failed, failure.failure);
        }
        Err(m) => fail_view(
            view,
            TaskOutcomeStatus::Failed,
            Failure::new(
                ErrorCode::WorkflowExecutionFailed,
                format!("the remote client panicked: {m}"),
            ),
        ),
    }
    None
}

/// The kernel's side of the negotiation loop: events, deadline, the host callback.
struct KernelNegotiation<'a> {
    sh: &'a RunShared,
    token: &'a CancellationToken,
    emitter: EventEmitter,
    agent: &'a str,
    exchanges: AtomicU32,
}

#[async_trait]
impl NegotiationHook for KernelNegotiation<'_> {
    async fn negotiate(&self, request: NegotiationRequest) -> Result<NegotiationReply, Failure> {
        let exchange = self.exchanges.fetch_add(1, Ordering::Relaxed) + 1;
        // The span the `otel` feature exports for one Negotiation-T exchange (a child of `task`).
        let span = tracing::info_span!(
            "negotiation",
            task_id = %request.task.local_task_id,
            context_id = %request.context_id,
            remote_task_id = request.remote_task_id.as_deref().unwrap_or(""),
            exchange,
        );
        self.exchange(request, exchange).instrument(span).await
    }
}

impl KernelNegotiation<'_> {
    /// One exchange: events around the guarded `on_negotiation` call.
    async fn exchange(
        &self,
        request: NegotiationRequest,
        exchange: u32,
    ) -> Result<NegotiationReply, Failure> {
        if self.emitter.is_enabled() {
            self.emitter
                .emit_any(
                    EventKind::NegotiationRequest,
                    json!({"agent": self.agent, "exchange": exchange, "request": request}),
                )
                .await;
        }
        let sleep = tokio::time::sleep_until(self.sh.deadline);
        tokio::pin!(sleep);
        let r = match guard(
            self.sh.cp.on_negotiation(request),
            self.token,
            sleep,
            self.sh.deadline,
        )
        .await
        {
            Guarded::Done(Ok(reply)) => Ok(reply),
            Guarded::Done(Err(e)) => Err(CallbackError::into_failure(e)),
            Guarded::Panicked(m) => Err(panicked("on_negotiation", &m)),
            Guarded::Interrupted(i) => Err(i.failure(self.sh.timeout.as_millis())),
        };
        match &r {
            Ok(reply) => {
                self.emitter
                    .emit_any(
                        EventKind::NegotiationResolved,
                        json!({"agent": self.agent, "exchange": exchange, "reply": reply}),
                    )
                    .await
            }
            Err(f) => {
                self.emitter
                    .emit_any(
                        EventKind::NegotiationFailed,
                        json!({"agent": self.agent, "exchange": exchange, "error": f.message, "errorCode": f.code}),
                    )
                    .await
            }
        }
        r
    }
}
