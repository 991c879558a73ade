//! One delegating subtask, start to end: resolve the target, admit the call, ask the host for
//! the request content, run the child, and give the parent its view of the child.
//!
//! The request Message is built from the host's `on_task` content (the host decides what to
//! ask, exactly as for an agent): its text parts, joined by newlines, become the instruction
//! (and the child's `RunInput::runtime_intent`); its data parts become the structured inputs
//! (one part as is, several as an array). Other part kinds are rejected as an invalid record.

use super::ask_host;
use crate::client::project_outputs;
use crate::context::{ChildRun, TaskCtx};
use crate::delegation::{Inherited, WorkflowCatalog};
use crate::events::EventEmitter;
use crate::interrupt::{Bounds, Graced, Guarded, Interrupt, guard, panicked, with_grace};
use crate::view::{fail_view, name_view};
use a2aflow_model::a2a::{Message, PartContent, Task};
use a2aflow_model::delegation::{
    ChildExecution, DelegationError, DelegationRequest, ExecutionStatus, FlowRef, Lineage,
    RecordKind, Refusal, RefusedDelegation, Violation,
};
use a2aflow_model::event_data::{DelegationRequestData, DelegationResponseData};
use a2aflow_model::{
    ErrorCode, ExecutionResult, Failure, FailureCode, MessageContent, ReceivedKind,
    ReceivedMessage, StepStatus, TaskOutcomeStatus, TaskRequest, TaskResultView, Workflow,
};
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::SystemTime;

/// The child workflow id the subtask of `t` names, if it names one.
pub(super) fn target_of(t: &TaskCtx) -> Option<String> {
    t.run
        .workflow
        .steps
        .get(t.step)?
        .subtasks
        .get(t.index)?
        .workflow
        .clone()
}

/// Runs one delegating subtask to its end; like the remote path, an interruption is returned
/// for the caller to record. Boxed as a trait object: the child run it awaits contains the
/// scheduler that calls it (the recursion needs a named, `Send` future type).
pub(super) fn run_subtask<'a>(
    t: &'a TaskCtx,
    target: String,
    request: TaskRequest,
    view: &'a mut TaskResultView,
) -> Pin<Box<dyn Future<Output = Option<Interrupt>> + Send + 'a>> {
    Box::pin(async move {
        let call = Call {
            t,
            target: &target,
            request: &request,
        };
        let interrupt = call.delegate(view).await;
        name_view(view, request);
        interrupt
    })
}

/// One delegating call: the task, the child workflow id it names and its request.
struct Call<'a> {
    t: &'a TaskCtx,
    target: &'a str,
    request: &'a TaskRequest,
}

/// What the records and events of an admitted or refused call name.
struct Records {
    emitter: EventEmitter,
    flow: FlowRef,
    lineage: Lineage,
}

/// A call admitted with its target resolved: the child's id, inheritance and definition.
struct Admitted {
    child_id: String,
    inherited: Inherited,
    workflow: Arc<Workflow>,
}

/// A finished child run as its parent records it.
struct Finished {
    child_id: String,
    result: ExecutionResult,
    cost: Option<f64>,
}

/// The request Message of an admitted call and the instruction in it.
struct Built {
    instruction: Option<String>,
    message: Message,
}

impl Call<'_> {
    /// The whole call: resolve, admit, ask the host, run the child, settle.
    async fn delegate(&self, view: &mut TaskResultView) -> Option<Interrupt> {
        let run = &self.t.run;
        let lineage = run.delegation.child_lineage(&run.execution_id);
        view.context_id = Some(lineage.context_id().to_owned());
        let Some(catalog) = run.delegation.catalog() else {
            fail_view(view, TaskOutcomeStatus::Failed, self.no_catalog());
            return None;
        };
        let sleep = std::pin::pin!(self.t.sleep());
        let mut bounds = self.t.bounds(sleep);
        let resolved = match self.resolve(catalog, &mut bounds, view).await {
            Ok(resolved) => resolved,
            Err(interrupt) => return interrupt,
        };
        let records = self.records(resolved.as_deref(), lineage);
        let admitted = match self.admit(resolved, view) {
            Ok(admitted) => admitted,
            Err(Some(refusal)) => {
                refuse(records, refusal, view).await;
                return None;
            }
            Err(None) => return None,
        };
        // As before the limiter could take its permit early: with one, the answer is written
        // at once.
        let acts_at_once = || run.semaphore.is_none();
        // The host is lent a copy (with its time left): the call's request is shared.
        let mut asked = self.request.clone();
        let content = match ask_host(run, &mut asked, &mut bounds, view, acts_at_once).await {
            Ok(c) => c,
            Err(interrupt) => return interrupt,
        };
        let built = match build_request(&records, &content) {
            Ok(b) => b,
            Err(e) => {
                fail_view(view, TaskOutcomeStatus::Failed, e.to_failure());
                return None;
            }
        };
        self.announce(&records.emitter, &admitted.child_id, &built.message)
            .await;
        let finished = match self.run_child(admitted, built, &mut bounds).await {
            Ok(finished) => finished,
            Err(Ok(interrupt)) => return Some(interrupt),
            Err(Err(panic)) => {
                fail_view(view, TaskOutcomeStatus::Failed, panic);
                return None;
            }
        };
        settle(records, finished, view).await;
        None
    }

    /// The failure of a call in a run without a workflow catalog.
    fn no_catalog(&self) -> Failure {
        Failure::new(
            ErrorCode::DelegationNoCatalog,
            format!(
                "step '{}' names child workflow '{}' but the run has no workflow catalog; \
                 set RunOptions::workflow_catalog",
                self.request.step_name, self.target
            ),
        )
        .with_detail("flowId", self.target)
    }

    /// The catalog's answer for the target, guarded. A panicking catalog is written into `view`
    /// (`Err(None)`); an interruption is returned (`Err(Some(_))`).
    async fn resolve(
        &self,
        catalog: &Arc<dyn WorkflowCatalog>,
        bounds: &mut Bounds<'_>,
        view: &mut TaskResultView,
    ) -> Result<Option<Arc<Workflow>>, Option<Interrupt>> {
        match guard(catalog.resolve(self.target), bounds).await {
            Guarded::Done(w) => Ok(w),
            Guarded::Panicked(m) => {
                fail_view(
                    view,
                    TaskOutcomeStatus::Failed,
                    panicked("the workflow catalog", &m),
                );
                Err(None)
            }
            Guarded::Interrupted(i) => Err(Some(i)),
        }
    }

    /// What this call's records and events name, for the target as resolved.
    fn records(&self, resolved: Option<&Workflow>, lineage: Lineage) -> Records {
        let t = self.t;
        Records {
            emitter: EventEmitter::new(
                t.run.hub.clone(),
                self.request.step_name.clone(),
                self.request.local_task_id.clone(),
                t.closed.clone(),
            ),
            flow: FlowRef {
                flow_id: self.target.to_owned(),
                flow_name: resolved.map(|w| w.name.clone()).filter(|n| !n.is_empty()),
            },
            lineage,
        }
    }

    /// Admits the call (the policy's checks in order): a refusal is returned (`Err(Some(_))`);
    /// a call that cannot proceed otherwise is written into `view` (`Err(None)`).
    fn admit(
        &self,
        resolved: Option<Arc<Workflow>>,
        view: &mut TaskResultView,
    ) -> Result<Admitted, Option<Refusal>> {
        let run = &self.t.run;
        let admitted = run.delegation.admit(
            &run.execution_id,
            &run.workflow.id,
            self.target,
            resolved.as_deref(),
        );
        match (admitted, resolved) {
            (Ok((child_id, inherited)), Some(workflow)) => Ok(Admitted {
                child_id,
                inherited,
                workflow,
            }),
            (Err(refusal), _) => Err(Some(refusal)),
            // Admission refuses a target the catalog did not resolve, so this arm is not reached;
            // it fails the subtask rather than assuming so.
            (Ok(_), None) => {
                let failure = Failure::new(
                    ErrorCode::WorkflowExecutionFailed,
                    "a child workflow was admitted without a resolved definition",
                );
                fail_view(view, TaskOutcomeStatus::Failed, failure);
                Err(None)
            }
        }
    }

    /// The `agent_request` event of the call: the request Message sent to the child.
    async fn announce(&self, emitter: &EventEmitter, child_id: &str, message: &Message) {
        emitter
            .emit_with(|| DelegationRequestData {
                workflow: self.target.to_owned(),
                child_execution_id: child_id.to_owned(),
                delegation_request: message.clone(),
            })
            .await;
    }

    /// Runs the child to its end. The child's token is a child of this task's: an interruption
    /// stops the whole subtree, and the child gets the grace period to wind down (and cancel
    /// its own remote work). `Err(Ok(_))` is an interruption, `Err(Err(_))` a panicked child.
    async fn run_child(
        &self,
        admitted: Admitted,
        built: Built,
        bounds: &mut Bounds<'_>,
    ) -> Result<Finished, Result<Interrupt, Failure>> {
        let run = &self.t.run;
        let child = (run.start_child)(
            run,
            ChildRun {
                workflow: admitted.workflow,
                runtime_intent: built.instruction,
                execution_id: admitted.child_id.clone(),
                cancel: self.t.token.clone(),
                inherited: admitted.inherited,
            },
        );
        match with_grace(child, bounds, run.grace).await {
            Graced::Done(Ok(result)) => Ok(Finished {
                cost: child_cost(self.t, &admitted.child_id),
                child_id: admitted.child_id,
                result,
            }),
            Graced::Done(Err(m)) => Err(Err(Failure::new(
                ErrorCode::WorkflowExecutionFailed,
                format!("the child run panicked: {m}"),
            ))),
            Graced::Interrupted(i, _) => Err(Ok(i)),
        }
    }
}

/// The cost the budget's meter reports for a finished child, when it is a usable number.
fn child_cost(t: &TaskCtx, child_id: &str) -> Option<f64> {
    t.run
        .delegation
        .policy()
        .budget
        .as_ref()
        .and_then(|b| b.meter.cost(child_id))
        .filter(|c| c.is_finite() && *c >= 0.0)
}

/// The request Message of an admitted call from the host's content.
fn build_request(records: &Records, content: &MessageContent) -> Result<Built, DelegationError> {
    let (instruction, inputs) = request_parts(content)?;
    let message = DelegationRequest {
        flow: records.flow.clone(),
        lineage: records.lineage.clone(),
        instruction: instruction.clone(),
        inputs,
        console_url: None,
    }
    .to_message()?;
    Ok(Built {
        instruction,
        message,
    })
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
                "a delegation request carries text and JSON data parts only; \
                 the host's content has a file part here",
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
async fn refuse(records: Records, refusal: Refusal, view: &mut TaskResultView) {
    let Records {
        emitter,
        flow,
        lineage,
    } = records;
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
            emit_record(&emitter, &flow_id, None, &task).await;
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
async fn settle(records: Records, finished: Finished, view: &mut TaskResultView) {
    let Records {
        emitter,
        flow,
        lineage,
    } = records;
    let Finished {
        child_id,
        result,
        cost,
    } = finished;
    let status = child_status(&result);
    let document = match result_document(&result) {
        Ok(document) => document,
        Err(failure) => {
            fail_view(view, TaskOutcomeStatus::Failed, failure);
            return;
        }
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
    emit_record(&emitter, &flow_id, Some(&child_id), &task).await;
    view.remote_task_id = Some(task.id.clone());
    view.received_messages = vec![evidence(task)];
    match &result.failure {
        None => view.outputs = project_outputs(&view.received_messages, true),
        Some(f) => {
            let failure = child_failed(&flow_id, child_id, f, &result);
            fail_view(view, TaskOutcomeStatus::Failed, failure);
        }
    }
}

/// The result document of a child that succeeded (`None` for one that did not).
fn result_document(result: &ExecutionResult) -> Result<Option<Value>, Failure> {
    if !result.success {
        return Ok(None);
    }
    serde_json::to_value(result).map(Some).map_err(|e| {
        Failure::new(
            ErrorCode::WorkflowExecutionFailed,
            format!("the child's result could not be serialised: {e}"),
        )
    })
}

/// The `delegation.child_failed` failure of child `child_id` of flow `flow_id` that ended with
/// `result`, whose failure is `f`.
fn child_failed(flow_id: &str, child_id: String, f: &Failure, result: &ExecutionResult) -> Failure {
    let status = child_status(result);
    Failure::new(
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
    .with_cause(FailureCode::from(origin(result)))
}

/// Emits a task record (accepted or refused) as an `agent_response` of the delegating subtask.
async fn emit_record(emitter: &EventEmitter, flow_id: &str, child_id: Option<&str>, task: &Task) {
    emitter
        .emit_with(|| DelegationResponseData {
            workflow: flow_id.to_owned(),
            child_execution_id: child_id.map(str::to_owned),
            delegation_task: Box::new(task.clone()),
        })
        .await;
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
    use serde_json::json;

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
