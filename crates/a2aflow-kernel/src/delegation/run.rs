//! One delegating subtask, start to end: resolve the target, admit the call, ask the host for
//! the request content, run the child, and give the parent its view of the child.
//!
//! The request Message is built from the host's `on_task` content (the host decides what to
//! ask, exactly as for an agent): its text parts, joined by newlines, become the instruction
//! (and the child's `RunInput::runtime_intent`); its data parts become the structured inputs
//! (one part as is, several as an array). Other part kinds are rejected as an invalid record.

use crate::client::project_outputs;
use crate::events::{EventEmitter, SinkKind};
use crate::executor::RunShared;
use crate::runner::{RunInput, RunOptions, Source, run_with_sink};
use crate::task::{
    Graced, Guarded, Interrupt, ask_host, fail_view, guard, name_view, panicked, with_grace,
};
use a2aflow_model::a2a::{PartContent, Task};
use a2aflow_model::delegation::{
    ChildExecution, DelegationError, DelegationRequest, ExecutionStatus, FlowRef, Lineage,
    RecordKind, Refusal, RefusedDelegation, Violation,
};
use a2aflow_model::{
    ErrorCode, EventKind, ExecutionResult, Failure, MessageContent, ReceivedKind, ReceivedMessage,
    StepStatus, TaskOutcomeStatus, TaskRequest, TaskResultView,
};
use serde_json::{Value, json};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::SystemTime;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The child workflow id subtask `index` of step `step` names, if it names one.
pub(crate) fn target_of(sh: &RunShared, step: usize, index: usize) -> Option<String> {
    sh.workflow
        .steps
        .get(step)?
        .subtasks
        .get(index)?
        .workflow
        .clone()
}

/// Runs one delegating subtask to its end; like the remote path, an interruption is returned
/// for the caller to record. Boxed as a trait object: the child run it awaits contains the
/// scheduler that calls it (the recursion needs a named, `Send` future type).
pub(crate) fn run_subtask<'a>(
    sh: &'a Arc<RunShared>,
    target: String,
    request: TaskRequest,
    token: &'a CancellationToken,
    closed: &'a Arc<AtomicBool>,
    view: &'a mut TaskResultView,
) -> Pin<Box<dyn Future<Output = Option<Interrupt>> + Send + 'a>> {
    Box::pin(async move {
        let interrupt = delegate(sh, &target, &request, token, closed, view).await;
        name_view(view, request);
        interrupt
    })
}

async fn delegate(
    sh: &Arc<RunShared>,
    target: &str,
    request: &TaskRequest,
    token: &CancellationToken,
    closed: &Arc<AtomicBool>,
    view: &mut TaskResultView,
) -> Option<Interrupt> {
    let scope = &sh.delegation;
    let lineage = scope.child_lineage(&sh.execution_id);
    view.context_id = Some(lineage.context_id().to_owned());
    let Some(catalog) = scope.catalog() else {
        let failure = Failure::new(
            ErrorCode::DelegationNoCatalog,
            format!(
                "step '{}' names child workflow '{target}' but the run has no workflow catalog; \
                 set RunOptions::workflow_catalog",
                request.step_name
            ),
        )
        .with_detail("flowId", target);
        fail_view(view, TaskOutcomeStatus::Failed, failure);
        return None;
    };
    let sleep = tokio::time::sleep_until(sh.deadline);
    tokio::pin!(sleep);
    let resolved = match guard(catalog.resolve(target), token, sleep.as_mut(), sh.deadline).await {
        Guarded::Done(w) => w,
        Guarded::Panicked(m) => {
            fail_view(
                view,
                TaskOutcomeStatus::Failed,
                panicked("the workflow catalog", &m),
            );
            return None;
        }
        Guarded::Interrupted(i) => return Some(i),
    };
    let flow = FlowRef {
        flow_id: target.to_owned(),
        flow_name: resolved
            .as_ref()
            .map(|w| w.name.clone())
            .filter(|n| !n.is_empty()),
    };
    let emitter = EventEmitter::new(
        sh.hub.clone(),
        Arc::from(request.step_name.as_str()),
        Arc::from(request.local_task_id.as_str()),
        closed.clone(),
    );
    let admitted = scope.admit(
        &sh.execution_id,
        &sh.workflow.id,
        target,
        resolved.as_deref(),
    );
    let (child_id, inherited, child_workflow) = match (admitted, resolved) {
        (Ok((id, inherited)), Some(workflow)) => (id, inherited, workflow),
        (Err(refusal), _) => {
            refuse(view, &emitter, flow, lineage, refusal).await;
            return None;
        }
        // Admission refuses a target the catalog did not resolve, so this arm is not reached;
        // it fails the subtask rather than assuming so.
        (Ok(_), None) => {
            fail_view(
                view,
                TaskOutcomeStatus::Failed,
                Failure::new(
                    ErrorCode::WorkflowExecutionFailed,
                    "a child workflow was admitted without a resolved definition",
                ),
            );
            return None;
        }
    };

    let content = match ask_host(sh, request, token, sleep.as_mut(), view).await {
        Ok(c) => c,
        Err(interrupt) => return interrupt,
    };
    let built = request_parts(&content).and_then(|(instruction, inputs)| {
        let message = DelegationRequest {
            flow: flow.clone(),
            lineage: lineage.clone(),
            instruction: instruction.clone(),
            inputs,
            console_url: None,
        }
        .to_message()?;
        Ok((instruction, message))
    });
    let (instruction, message) = match built {
        Ok(b) => b,
        Err(e) => {
            fail_view(view, TaskOutcomeStatus::Failed, e.to_failure());
            return None;
        }
    };
    if emitter.is_enabled() {
        emitter
            .emit_any(
                EventKind::AgentRequest,
                json!({"workflow": target, "childExecutionId": child_id,
                       "delegationRequest": message}),
            )
            .await;
    }

    let options = RunOptions {
        timeout: sh.deadline.saturating_duration_since(Instant::now()),
        cancel: token.clone(),
        execution_id: Some(child_id.clone()),
        cleanup_grace: sh.grace,
        ..RunOptions::default()
    };
    let child = Box::pin(run_with_sink(
        Source::Raw(child_workflow),
        RunInput {
            runtime_intent: instruction,
        },
        sh.cp.clone(),
        sh.client.clone(),
        options,
        SinkKind::Parent(sh.hub.clone()),
        Some(inherited),
    ));
    // The child's token is a child of this one: an interruption stops the whole subtree, and
    // the child gets the grace period to wind down (and cancel its own remote work).
    let result = match with_grace(child, token, sleep.as_mut(), sh.deadline, sh.grace).await {
        Graced::Done(Ok(result)) => result,
        Graced::Done(Err(m)) => {
            fail_view(
                view,
                TaskOutcomeStatus::Failed,
                Failure::new(
                    ErrorCode::WorkflowExecutionFailed,
                    format!("the child run panicked: {m}"),
                ),
            );
            return None;
        }
        Graced::Interrupted(i, _) => return Some(i),
    };
    settle(sh, view, &emitter, flow, lineage, child_id, result).await;
    None
}

/// The request's instruction and structured inputs from the host's content.
fn request_parts(
    content: &MessageContent,
) -> Result<(Option<String>, Option<Value>), DelegationError> {
    let mut texts = Vec::new();
    let mut data = Vec::new();
    let mut violations = Vec::new();
    for (i, part) in content.parts.iter().enumerate() {
        match &part.content {
            PartContent::Text(t) => texts.push(t.as_str()),
            PartContent::Data(d) => data.push(d.clone()),
            PartContent::Raw(_) | PartContent::Url(_) => violations.push(Violation::new(
                format!("/parts/{i}"),
                "a delegation request carries text and JSON data parts only; the host's content has a file part here",
            )),
        }
    }
    if !violations.is_empty() {
        return Err(DelegationError::InvalidRecord {
            record: RecordKind::Request,
            violations,
        });
    }
    let instruction = Some(texts.join("\n")).filter(|t| !t.is_empty());
    let inputs = match data.len() {
        0 => None,
        1 => data.pop(),
        _ => Some(Value::Array(data)),
    };
    Ok((instruction, inputs))
}

/// A refused call: the REJECTED record is the evidence, the subtask fails `delegation.refused`.
async fn refuse(
    view: &mut TaskResultView,
    emitter: &EventEmitter,
    flow: FlowRef,
    lineage: Lineage,
    refusal: Refusal,
) {
    let flow_id = flow.flow_id.clone();
    let record = RefusedDelegation {
        flow,
        lineage,
        reason: refusal.reason(),
        timestamp: SystemTime::now(),
    }
    .to_task();
    match record {
        Ok(task) => {
            emit_record(emitter, &flow_id, None, &task).await;
            view.received_messages = vec![evidence(task)];
        }
        Err(e) => {
            fail_view(view, TaskOutcomeStatus::Failed, e.to_failure());
            return;
        }
    }
    let failure = DelegationError::Refused(refusal)
        .to_failure()
        .with_detail("flowId", flow_id);
    fail_view(view, TaskOutcomeStatus::Failed, failure);
}

/// The parent's view of a finished child: the task record as evidence, the result artifact's
/// data as outputs, or `delegation.child_failed`.
async fn settle(
    sh: &RunShared,
    view: &mut TaskResultView,
    emitter: &EventEmitter,
    flow: FlowRef,
    lineage: Lineage,
    child_id: String,
    result: ExecutionResult,
) {
    let status = child_status(&result);
    let cost = sh
        .delegation
        .policy()
        .budget
        .as_ref()
        .and_then(|b| b.meter.cost(&child_id))
        .filter(|c| c.is_finite() && *c >= 0.0);
    let document = if result.success {
        match serde_json::to_value(&result) {
            Ok(v) => Some(v),
            Err(e) => {
                fail_view(
                    view,
                    TaskOutcomeStatus::Failed,
                    Failure::new(
                        ErrorCode::WorkflowExecutionFailed,
                        format!("the child's result could not be serialised: {e}"),
                    ),
                );
                return;
            }
        }
    } else {
        None
    };
    let flow_id = flow.flow_id.clone();
    let record = ChildExecution {
        execution_id: child_id.clone(),
        flow,
        lineage,
        status,
        timestamp: SystemTime::now(),
        result: document,
        cost,
        tokens: None,
        console_url: None,
    }
    .to_task();
    let task = match record {
        Ok(task) => task,
        Err(e) => {
            fail_view(view, TaskOutcomeStatus::Failed, e.to_failure());
            return;
        }
    };
    emit_record(emitter, &flow_id, Some(&child_id), &task).await;
    view.remote_task_id = Some(task.id.clone());
    view.received_messages = vec![evidence(task)];
    match &result.failure {
        None => view.outputs = project_outputs(&view.received_messages, true),
        Some(f) => {
            let failure = Failure::new(
                ErrorCode::DelegationChildFailed,
                format!(
                    "child workflow '{flow_id}' (execution {child_id}) ended {status}: {}",
                    f.message
                ),
            )
            .with_detail("childExecutionId", child_id)
            .with_detail("flowId", flow_id)
            .with_detail("status", status.as_str())
            .with_detail("childCode", f.code.as_str())
            .with_detail("cause", origin(&result));
            fail_view(view, TaskOutcomeStatus::Failed, failure);
        }
    }
}

/// Emits a task record (accepted or refused) as an `agent_response` of the delegating subtask.
async fn emit_record(emitter: &EventEmitter, flow_id: &str, child_id: Option<&str>, task: &Task) {
    if emitter.is_enabled() {
        emitter
            .emit_any(
                EventKind::AgentResponse,
                json!({"workflow": flow_id, "childExecutionId": child_id,
                       "delegationTask": task}),
            )
            .await;
    }
}

/// A task record as the evidence of a task result.
fn evidence(task: Task) -> ReceivedMessage {
    ReceivedMessage {
        kind: ReceivedKind::Task,
        task_id: Some(task.id),
        context_id: Some(task.context_id),
        state: Some(task.status.state),
        message: task.status.message,
        task_metadata: task.metadata.map(|m| m.into_iter().collect()),
        artifacts: task.artifacts.unwrap_or_default(),
    }
}

/// The execution status a finished child is reported with.
fn child_status(result: &ExecutionResult) -> ExecutionStatus {
    match &result.failure {
        None => ExecutionStatus::Succeeded,
        Some(f) if f.is(ErrorCode::WorkflowCancelled) => ExecutionStatus::Cancelled,
        Some(f) if f.is(ErrorCode::WorkflowTimeout) => ExecutionStatus::TimedOut,
        Some(_) => ExecutionStatus::Failed,
    }
}

/// The code a failure started from: the failed task's own code, looked through nested
/// delegations (their `cause`), else the child's run-level code.
fn origin(result: &ExecutionResult) -> String {
    let failed_task = result
        .steps
        .iter()
        .filter(|s| s.status == StepStatus::Failed)
        .flat_map(|s| &s.task_results)
        .find(|v| v.status != TaskOutcomeStatus::Completed);
    if let Some(v) = failed_task {
        if v.error_code.as_deref() == Some(ErrorCode::DelegationChildFailed.as_str())
            && let Some(Value::String(cause)) = v.error_details.get("cause")
        {
            return cause.clone();
        }
        if let Some(code) = &v.error_code {
            return code.clone();
        }
    }
    result
        .failure
        .as_ref()
        .map(|f| f.code.as_str().to_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2aflow_model::a2a::Part;

    #[test]
    fn content_becomes_instruction_and_inputs() {
        let content = MessageContent {
            parts: vec![
                Part::text("first"),
                Part::data(json!({"a": 1})),
                Part::text("second"),
            ],
            ..Default::default()
        };
        let (instruction, inputs) = request_parts(&content).unwrap();
        assert_eq!(instruction.as_deref(), Some("first\nsecond"));
        assert_eq!(inputs, Some(json!({"a": 1})));

        let two = MessageContent {
            parts: vec![Part::data(json!(1)), Part::data(json!(2))],
            ..Default::default()
        };
        assert_eq!(request_parts(&two).unwrap(), (None, Some(json!([1, 2]))));
    }

    #[test]
    fn file_parts_are_an_invalid_request() {
        let content = MessageContent {
            parts: vec![Part::text("x"), Part::url("https://example.invalid/f")],
            ..Default::default()
        };
        let err = request_parts(&content).unwrap_err();
        assert_eq!(err.code(), ErrorCode::DelegationInvalidRecord);
        assert_eq!(err.violations()[0].instance_path, "/parts/1");
    }

    #[test]
    fn status_follows_the_child_failure_code() {
        let mut result = ExecutionResult {
            execution_id: "c".into(),
            workflow_id: "w".into(),
            success: true,
            failure: None,
            steps: Vec::new(),
            skipped_steps: Vec::new(),
        };
        assert_eq!(child_status(&result), ExecutionStatus::Succeeded);
        for (code, status) in [
            (ErrorCode::WorkflowCancelled, ExecutionStatus::Cancelled),
            (ErrorCode::WorkflowTimeout, ExecutionStatus::TimedOut),
            (ErrorCode::WorkflowStepFailed, ExecutionStatus::Failed),
        ] {
            result.success = false;
            result.failure = Some(Failure::new(code, "x"));
            assert_eq!(child_status(&result), status);
            assert_eq!(origin(&result), code.as_str());
        }
    }
}
