//! The host callback contract: [`ControlPoint`] and the errors its callbacks may return.
//!
//! Every callback has a default that fails with `workflow.callback_missing`: the kernel never
//! treats a missing callback as success, route approval or negotiation consent.

use a2aflow_model::{
    BusinessFailure, ErrorCode, Failure, MessageContent, NegotiationReply, NegotiationRequest,
    RouteDecision, RouteRequest, TaskRequest, TaskResult,
};
use async_trait::async_trait;

/// Why a host callback failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CallbackError {
    /// A failure the host reports on purpose; its code, message and details travel unchanged.
    #[error("[{}] {}", .0.code, .0.message)]
    Business(BusinessFailure),
    /// Any other error; it becomes `workflow.execution_failed` with this message kept.
    #[error("{0}")]
    Other(String),
    /// The callback is not implemented (`workflow.callback_missing`).
    #[error("{0}")]
    Missing(String),
}

impl CallbackError {
    /// The failure the kernel records for this error.
    pub fn into_failure(self) -> Failure {
        match self {
            CallbackError::Business(b) => b.into(),
            CallbackError::Other(message) => {
                let message = if message.trim().is_empty() {
                    "host callback failed without a message".to_owned()
                } else {
                    message
                };
                Failure::new(ErrorCode::WorkflowExecutionFailed, message)
            }
            CallbackError::Missing(message) => {
                Failure::new(ErrorCode::WorkflowCallbackMissing, message)
            }
        }
    }
}

impl From<BusinessFailure> for CallbackError {
    fn from(b: BusinessFailure) -> Self {
        CallbackError::Business(b)
    }
}

/// The four host callbacks. Implement the ones your workflows need; the others fail with
/// `workflow.callback_missing` when a workflow reaches them.
///
/// Callbacks run concurrently (one per subtask, one per conditional edge) and are bounded by the
/// run's deadline; a callback that is still running when the deadline passes or the run is
/// cancelled is dropped and its result is never used. A panicking callback fails its own step with
/// `workflow.callback_panicked`; the scheduler keeps running.
#[async_trait]
pub trait ControlPoint: Send + Sync {
    /// The final content to send for one remote subtask; sent unchanged.
    async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
        Err(CallbackError::Missing(format!(
            "on_task handler is required for step '{}'",
            request.step_name
        )))
    }

    /// Local work for one SELF_LOOP subtask; nothing is sent.
    async fn on_self_task(&self, request: TaskRequest) -> Result<TaskResult, CallbackError> {
        Err(CallbackError::Missing(format!(
            "on_self_task handler is required for step '{}'",
            request.step_name
        )))
    }

    /// The decision on one edge with a nonblank condition.
    async fn on_route(&self, request: RouteRequest) -> Result<RouteDecision, CallbackError> {
        Err(CallbackError::Missing(format!(
            "on_route handler is required for edge {} -> {}",
            request.source_step, request.target_step
        )))
    }

    /// The reply to one Negotiation-T proposal.
    async fn on_negotiation(
        &self,
        request: NegotiationRequest,
    ) -> Result<NegotiationReply, CallbackError> {
        let _ = request;
        Err(CallbackError::Missing(
            "on_negotiation handler is required".to_owned(),
        ))
    }
}
