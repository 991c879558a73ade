//! The host and the one-call run the facade tests share.

use std::sync::Arc;

use a2aflow::kernel::{CallbackError, ControlPoint, RunInput};
use a2aflow::model::{
    ExecutionResult, Failure, MessageContent, Output, TaskRequest, TaskResult, Workflow,
};
use a2aflow::{AgentSource, EngineConfig, HostHooks, execute_workflow};
use serde_json::json;

/// Sends `task <description>` to each agent; a SELF_LOOP step answers with the names of the
/// upstream steps it saw.
pub struct Host;

#[async_trait::async_trait]
impl ControlPoint for Host {
    async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(MessageContent::text(format!(
            "task {}",
            request.description
        )))
    }
    async fn on_self_task(&self, request: TaskRequest) -> Result<TaskResult, CallbackError> {
        let seen: Vec<String> = request
            .workflow_input
            .upstream_results
            .iter()
            .map(|u| u.step_name.to_string())
            .collect();
        Ok(TaskResult {
            outputs: vec![Output::data(json!({ "saw": seen }))],
        })
    }
}

/// `execute_workflow` with [`Host`], no runtime input and no hooks.
pub async fn execute<A: AgentSource>(
    workflow: Workflow,
    cards: &[A],
    config: &EngineConfig,
) -> Result<ExecutionResult, Failure> {
    execute_workflow(
        workflow,
        cards,
        Arc::new(Host),
        config,
        RunInput::default(),
        HostHooks::default(),
    )
    .await
}
