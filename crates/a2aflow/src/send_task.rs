//! One task outside a workflow: [`send_task`] sends a host's content to one agent with
//! everything a workflow task gets — the engine client built from the configuration, the
//! run's deadline, events, Negotiation-T through the host's `on_negotiation`, retries and gates
//! as the run options say, a journal when a store is configured — and gives the task's result.
//!
//! It is a run of a one-step workflow (`send_task`, step `send`, one subtask for the agent)
//! whose `on_task` answer is the host's content; its execution id, events and journal are a
//! run's.

use crate::config::EngineConfig;
use crate::execute::{HostHooks, execute_workflow};
use a2aflow_kernel::{CallbackError, ControlPoint, RunInput};
use a2aflow_model::{
    ErrorCode, Failure, MessageContent, NegotiationReply, NegotiationRequest, Step, StepType,
    Subtask, TaskRequest, TaskResultView, Workflow,
};
use a2aflow_protocol::AgentSource;
use std::sync::Arc;

/// The name of the one step a [`send_task`] run has.
pub const SEND_TASK_STEP: &str = "send";

/// Sends `content` to `agent` as one logical task and waits for its end.
///
/// `negotiator` answers Negotiation-T proposals (its `on_negotiation`; its other callbacks are
/// never called); `None`: a proposal ends the task with `workflow.callback_missing`. `hooks` are
/// [`execute_workflow`]'s (events, cancellation, execution id, gate policy, retries, store).
///
/// `Err` for what [`execute_workflow`] refuses before anything is sent, and for a run that ended
/// before its task did (a store failure before the send, cancellation before `on_task`); `Ok`
/// with the task's result view otherwise — a task that failed is a view with its status, code
/// and evidence.
pub async fn send_task<A: AgentSource>(
    agent: &A,
    content: MessageContent,
    negotiator: Option<Arc<dyn ControlPoint>>,
    config: &EngineConfig,
    hooks: HostHooks,
) -> Result<TaskResultView, Failure> {
    let workflow = one_task_workflow(&agent.card().name);
    let host = Arc::new(OneTask {
        content,
        negotiator,
    });
    let result = execute_workflow(
        workflow,
        std::slice::from_ref(agent),
        host,
        config,
        RunInput::default(),
        hooks,
    )
    .await?;
    let task = result
        .steps
        .into_iter()
        .find(|s| s.step_name == SEND_TASK_STEP)
        .and_then(|s| s.task_results.into_iter().next());
    task.ok_or_else(|| {
        result.failure.unwrap_or_else(|| {
            Failure::new(
                ErrorCode::WorkflowExecutionFailed,
                "the task's run ended without the task",
            )
        })
    })
}

/// `send_task` → step `send` → one subtask for `agent`.
fn one_task_workflow(agent: &str) -> Workflow {
    Workflow {
        id: "send_task".into(),
        name: "send_task".into(),
        steps: vec![Step {
            name: SEND_TASK_STEP.into(),
            step_type: StepType::AllSuccess,
            subtasks: vec![Subtask {
                agent: agent.into(),
                description: "send_task".into(),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// The host of a [`send_task`] run: its one `on_task` answer is the content; negotiation goes
/// to the host's negotiator.
struct OneTask {
    content: MessageContent,
    negotiator: Option<Arc<dyn ControlPoint>>,
}

#[async_trait::async_trait]
impl ControlPoint for OneTask {
    async fn on_task_ref(&self, _: &TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(self.content.clone())
    }

    async fn on_negotiation(
        &self,
        request: NegotiationRequest,
    ) -> Result<NegotiationReply, CallbackError> {
        match &self.negotiator {
            Some(n) => n.on_negotiation(request).await,
            None => Err(CallbackError::Missing(
                "send_task was given no negotiator for the agent's Negotiation-T proposal"
                    .to_owned(),
            )),
        }
    }
}
