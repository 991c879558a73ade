//! The host callback contract: [`ControlPoint`] and the errors its callbacks may return.
//!
//! Every callback has a default that fails with `workflow.callback_missing`: the kernel never
//! treats a missing callback as success, route approval or negotiation consent.

use a2aflow_model::{
    BusinessFailure, ErrorCode, Failure, MessageContent, NegotiationReply, NegotiationRequest,
    RouteDecision, RouteRequest, TaskRequest, TaskResult,
};
use async_trait::async_trait;
use std::future::Future;
use std::pin::Pin;

/// The future of a host callback lent its request: the `#[async_trait]` form of an
/// `async fn` that returns `Result<T, CallbackError>` (see [`ControlPoint::on_task_ref`]).
pub type CallbackFuture<'a, T> =
    Pin<Box<dyn Future<Output = Result<T, CallbackError>> + Send + 'a>>;

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
    /// The final content to send for one remote subtask; sent unchanged. The kernel calls
    /// [`ControlPoint::on_task_ref`], whose default calls this with a copy of the request.
    async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
        Err(CallbackError::Missing(format!(
            "on_task handler is required for step '{}'",
            request.step_name
        )))
    }

    /// [`ControlPoint::on_task`] with the request lent instead of given: the form the kernel
    /// calls. The default hands `on_task` a copy of the request (the kernel keeps its own: it
    /// sends the content and names the task's result after it). A host that only reads the
    /// request implements this instead of `on_task` and saves that copy, its strings and
    /// context window, once per task. A host that wraps another host must forward this method
    /// too (the inner host may implement only this form: its `on_task` then answers
    /// `workflow.callback_missing`).
    ///
    /// This is the `#[async_trait]` form of `async fn on_task_ref(&self, request: &TaskRequest)
    /// -> Result<MessageContent, CallbackError>`: implement it with that `async fn` in an
    /// `#[async_trait]` impl. (Written out so that the default returns `on_task`'s own future,
    /// not a second box around it.)
    fn on_task_ref<'life0, 'life1, 'async_trait>(
        &'life0 self,
        request: &'life1 TaskRequest,
    ) -> CallbackFuture<'async_trait, MessageContent>
    where
        'life0: 'async_trait,
        'life1: 'async_trait,
        Self: 'async_trait,
    {
        self.on_task(request.clone())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{InMemoryClient, RunInput, RunOptions, run};
    use a2aflow_model::{Step, Subtask, Workflow};
    use std::sync::{Arc, Mutex};

    /// A host that implements only the lent form, and keeps what it was lent.
    #[derive(Default)]
    struct Lent {
        seen: Mutex<Vec<(String, String, String, u64)>>,
    }

    #[async_trait]
    impl ControlPoint for Lent {
        async fn on_task_ref(&self, r: &TaskRequest) -> Result<MessageContent, CallbackError> {
            let seen = (
                r.step_name.to_string(),
                r.local_task_id.to_string(),
                r.agent.to_string(),
                r.remaining_ms,
            );
            self.seen.lock().unwrap().push(seen);
            Ok(MessageContent::text(format!("lent: {}", r.description)))
        }
    }

    fn two_steps() -> Workflow {
        let step = |name: &str, agent: &str, next: Vec<a2aflow_model::Edge>| Step {
            name: name.into(),
            subtasks: vec![Subtask {
                agent: agent.into(),
                skill: "skill".into(),
                description: format!("{name} task"),
                workflow: None,
                retry: None,
                timeout: None,
            }],
            next,
            ..Default::default()
        };
        let edge = a2aflow_model::Edge {
            step: "s2".into(),
            condition: "".into(),
        };
        Workflow {
            id: "wf".into(),
            name: "lent".into(),
            steps: vec![step("s1", "A", vec![edge]), step("s2", "B", Vec::new())],
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn a_host_lent_the_request_answers_every_task_with_the_time_left() {
        let host = Arc::new(Lent::default());
        let client = Arc::new(InMemoryClient::new());
        let result = run(
            two_steps(),
            RunInput::default(),
            host.clone(),
            client.clone(),
            RunOptions::default(),
        )
        .await;
        assert!(result.success, "{result:?}");
        let seen = host.seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 2, "{seen:?}");
        for (i, (step, task, agent)) in [("s1", "A"), ("s2", "B")]
            .iter()
            .map(|(s, a)| (s, format!("{}:{s}:0", result.execution_id), a))
            .enumerate()
        {
            assert_eq!(seen[i].0, *step);
            assert_eq!(seen[i].1, task);
            assert_eq!(seen[i].2, *agent);
            assert!(seen[i].3 > 0, "the time left reaches the host: {seen:?}");
        }
        // The host's content is what was sent, and the results are named after their tasks.
        let sent: Vec<MessageContent> = client.sent().into_iter().map(|s| s.content).collect();
        assert_eq!(
            sent,
            [
                MessageContent::text("lent: s1 task"),
                MessageContent::text("lent: s2 task")
            ]
        );
        let named: Vec<(&str, &str)> = result
            .steps
            .iter()
            .flat_map(|s| &s.task_results)
            .map(|v| (v.agent_name.as_str(), v.task_description.as_str()))
            .collect();
        assert_eq!(named, [("A", "s1 task"), ("B", "s2 task")]);
    }

    /// A host that implements neither form fails the task with `workflow.callback_missing`.
    struct Neither;
    impl ControlPoint for Neither {}

    #[tokio::test]
    async fn a_host_with_neither_form_fails_the_task_as_missing() {
        let result = run(
            two_steps(),
            RunInput::default(),
            Arc::new(Neither),
            Arc::new(InMemoryClient::new()),
            RunOptions::default(),
        )
        .await;
        assert!(!result.success);
        let view = &result.steps[0].task_results[0];
        assert_eq!(
            view.error_code.as_deref(),
            Some("workflow.callback_missing")
        );
    }
}
