//! Builders for the three delegation records: the request [`Message`], the child's [`Task`]
//! record (or a refused one) and the `result` [`Artifact`].
//!
//! Each builder checks what the schemas check about its inputs (non-empty ids, depth ≥ 1, a
//! finite non-negative cost, at least one part) and reports every problem at once as
//! [`DelegationError::InvalidRecord`], so a record a builder returns always validates.

use super::error::{DelegationError, RecordKind, Violation};
use super::metadata::MetadataKey;
use super::refusal::RefusalReason;
use super::status::ExecutionStatus;
use a2a::{Artifact, Message, Part, PartContent, Role, Task, TaskState, TaskStatus};
use serde_json::Value;
use std::collections::HashMap;
use std::time::SystemTime;

/// The media type of every data part in a delegation record.
pub const DATA_MEDIA_TYPE: &str = "application/json";

/// The name of the one artifact a child's result becomes.
pub const RESULT_ARTIFACT_NAME: &str = "result";

/// The workflow asked to run (or that ran).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowRef {
    /// The workflow's id (`a2aflow/flowId`).
    pub flow_id: String,
    /// The workflow's name at call time, for reading (`a2aflow/flowName`).
    pub flow_name: Option<String>,
}

/// Where a child sits in the delegation tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lineage {
    /// The execution that made the call (`a2aflow/parentExecutionId`).
    pub parent_execution_id: String,
    /// The first execution of the tree (`a2aflow/rootExecutionId`); `None` when the caller is
    /// the root, written as JSON `null`.
    pub root_execution_id: Option<String>,
    /// The child's distance from the root (`a2aflow/depth`): 1 for a direct child of the root.
    pub depth: u32,
}

impl Lineage {
    /// The lineage of a child started by `caller`, given the caller's own root (`None` when
    /// the caller is the root) and depth.
    pub fn child_of(
        caller_execution_id: impl Into<String>,
        caller_root_execution_id: Option<String>,
        caller_depth: u32,
    ) -> Self {
        Lineage {
            parent_execution_id: caller_execution_id.into(),
            root_execution_id: caller_root_execution_id,
            depth: caller_depth.saturating_add(1),
        }
    }

    /// The `contextId` of every record of the tree: the root execution id, which is the parent
    /// itself when the caller is the root.
    pub fn context_id(&self) -> &str {
        self.root_execution_id
            .as_deref()
            .unwrap_or(&self.parent_execution_id)
    }
}

/// What a parent asks a child workflow to do.
#[derive(Debug, Clone, PartialEq)]
pub struct DelegationRequest {
    /// The workflow asked to run.
    pub flow: FlowRef,
    /// Where the child will sit.
    pub lineage: Lineage,
    /// The instruction, sent as a text part.
    pub instruction: Option<String>,
    /// Structured inputs, sent as a data part (`application/json`). JSON `null` counts as none.
    pub inputs: Option<Value>,
    /// A console link for the call (`a2aflow/consoleUrl`).
    pub console_url: Option<String>,
}

impl DelegationRequest {
    /// The request message: `ROLE_USER`, a fresh message id, `contextId` = the root execution
    /// id, the instruction as a text part and/or the inputs as a data part, and the request
    /// metadata. It never carries `a2aflow/executionId` or a `taskId`: the child does not exist
    /// yet.
    ///
    /// # Errors
    /// [`DelegationError::InvalidRecord`] listing every problem: no part at all, an empty
    /// instruction, an empty id, depth 0.
    pub fn to_message(&self) -> Result<Message, DelegationError> {
        let mut checks = Checks::default();
        checks.lineage(&self.flow, &self.lineage, self.console_url.as_deref());
        let mut parts = Vec::new();
        if let Some(text) = &self.instruction {
            checks.non_empty(
                &format!("/parts/{}/text", parts.len()),
                text,
                "the instruction",
            );
            parts.push(Part::text(text.as_str()));
        }
        if let Some(inputs) = self.inputs.as_ref().filter(|v| !v.is_null()) {
            parts.push(data_part(inputs.clone()));
        }
        if parts.is_empty() {
            checks.push(
                "/parts",
                "a request needs an instruction or structured inputs (at least one part)",
            );
        }
        checks.finish(RecordKind::Request)?;
        let mut message = Message::new(Role::User, parts);
        message.context_id = Some(self.lineage.context_id().to_owned());
        message.metadata = Some(lineage_metadata(
            RecordKind::Request,
            &self.flow,
            &self.lineage,
            self.console_url.as_deref(),
        ));
        Ok(message)
    }
}

/// A child execution as the parent sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildExecution {
    /// The child's execution id: the task id and `a2aflow/executionId`.
    pub execution_id: String,
    /// The workflow that ran.
    pub flow: FlowRef,
    /// Where the child sits.
    pub lineage: Lineage,
    /// The child's status; mapped through the status table. Never [`ExecutionStatus::Refused`]:
    /// a refused call has no execution (use [`RefusedDelegation`]).
    pub status: ExecutionStatus,
    /// When the status was last set.
    pub timestamp: SystemTime,
    /// The child's structured result document; `None` (or JSON `null`) means no result and no
    /// artifact.
    pub result: Option<Value>,
    /// Estimated cost so far, in USD.
    pub cost: Option<f64>,
    /// Tokens spent so far.
    pub tokens: Option<u64>,
    /// Console link to the execution.
    pub console_url: Option<String>,
}

impl ChildExecution {
    /// The task record: id = the child execution id, `contextId` = the root execution id,
    /// `status {state, timestamp}`, the `result` artifact when there is a result, and the task
    /// metadata. Never `history`.
    ///
    /// # Errors
    /// [`DelegationError::InvalidRecord`] listing every problem: an empty id, depth 0, a
    /// negative or non-finite cost, a timestamp outside years 0000–9999, or the `REFUSED`
    /// status.
    pub fn to_task(&self) -> Result<Task, DelegationError> {
        let mut checks = Checks::default();
        checks.lineage(&self.flow, &self.lineage, self.console_url.as_deref());
        checks.non_empty(
            &metadata_pointer(MetadataKey::ExecutionId),
            &self.execution_id,
            "the execution id",
        );
        if self.status == ExecutionStatus::Refused {
            checks.push(
                metadata_pointer(MetadataKey::Status),
                "REFUSED is never the status of an execution; build a refused record instead",
            );
        }
        if let Some(cost) = self.cost
            && !(cost.is_finite() && cost >= 0.0)
        {
            checks.push(
                metadata_pointer(MetadataKey::Cost),
                format!("the cost must be a finite number ≥ 0, got {cost}"),
            );
        }
        let status = checks.status(self.status.task_state(), self.timestamp);
        checks.finish(RecordKind::Task)?;

        let mut metadata = lineage_metadata(
            RecordKind::Task,
            &self.flow,
            &self.lineage,
            self.console_url.as_deref(),
        );
        put(
            &mut metadata,
            MetadataKey::ExecutionId,
            self.execution_id.as_str(),
        );
        put(&mut metadata, MetadataKey::Status, self.status.as_str());
        if let Some(cost) = self.cost {
            put(&mut metadata, MetadataKey::Cost, cost);
        }
        if let Some(tokens) = self.tokens {
            put(&mut metadata, MetadataKey::Tokens, tokens);
        }
        let artifacts = self
            .result
            .as_ref()
            .and_then(|r| result_artifact(&self.execution_id, r))
            .map(|a| vec![a]);
        Ok(Task {
            id: self.execution_id.clone(),
            context_id: self.lineage.context_id().to_owned(),
            status,
            artifacts,
            history: None,
            metadata: Some(metadata),
        })
    }
}

/// A call the delegation policy declined: no child was created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedDelegation {
    /// The workflow that was asked to run.
    pub flow: FlowRef,
    /// Where the child would have sat (its depth is the depth it would have had).
    pub lineage: Lineage,
    /// Which rule declined the call.
    pub reason: RefusalReason,
    /// When the call was declined.
    pub timestamp: SystemTime,
}

impl RefusedDelegation {
    /// The refused task record: a fresh task id (UUIDv7) naming the refusal itself — never an
    /// execution id, since no execution exists — `contextId` = the root execution id,
    /// `TASK_STATE_REJECTED`, status `REFUSED`, the refusal reason, no artifacts and no
    /// `a2aflow/executionId`.
    ///
    /// # Errors
    /// [`DelegationError::InvalidRecord`] listing every problem: an empty id, depth 0, a
    /// timestamp outside years 0000–9999.
    pub fn to_task(&self) -> Result<Task, DelegationError> {
        let mut checks = Checks::default();
        checks.lineage(&self.flow, &self.lineage, None);
        let status = checks.status(ExecutionStatus::Refused.task_state(), self.timestamp);
        checks.finish(RecordKind::Task)?;
        let mut metadata = lineage_metadata(RecordKind::Task, &self.flow, &self.lineage, None);
        put(
            &mut metadata,
            MetadataKey::Status,
            ExecutionStatus::Refused.as_str(),
        );
        put(
            &mut metadata,
            MetadataKey::RefusalReason,
            self.reason.as_str(),
        );
        Ok(Task {
            id: a2a::new_task_id(),
            context_id: self.lineage.context_id().to_owned(),
            status,
            artifacts: None,
            history: None,
            metadata: Some(metadata),
        })
    }
}

/// The artifact id of a child's result: `<execution id>/result`.
pub fn result_artifact_id(execution_id: &str) -> String {
    format!("{execution_id}/{RESULT_ARTIFACT_NAME}")
}

/// The `result` artifact of a child: id `<execution id>/result`, name `result`, one data part
/// (`application/json`) holding `result` unchanged. `None` when `result` is JSON `null`: a child
/// without a structured result has no artifact, never an empty one.
pub fn result_artifact(execution_id: &str, result: &Value) -> Option<Artifact> {
    if result.is_null() {
        return None;
    }
    Some(Artifact {
        artifact_id: result_artifact_id(execution_id),
        name: Some(RESULT_ARTIFACT_NAME.to_owned()),
        description: None,
        parts: vec![data_part(result.clone())],
        metadata: None,
        extensions: None,
    })
}

/// The child's result document carried by a task record: the data of its `result` artifact
/// (`<task id>/result`), or `None` when the record has no result.
pub fn result_data(task: &Task) -> Option<&Value> {
    let wanted = result_artifact_id(&task.id);
    let artifact = task
        .artifacts
        .as_deref()?
        .iter()
        .find(|a| a.artifact_id == wanted)?;
    match artifact.parts.as_slice() {
        [
            Part {
                content: PartContent::Data(data),
                ..
            },
        ] => Some(data),
        _ => None,
    }
}

fn data_part(data: Value) -> Part {
    Part::data(data).with_media_type(DATA_MEDIA_TYPE)
}

/// JSON Pointer of a metadata key (`/` in the key escaped as `~1`).
fn metadata_pointer(key: MetadataKey) -> String {
    format!(
        "/metadata/{}",
        key.as_str().replace('~', "~0").replace('/', "~1")
    )
}

fn put(metadata: &mut HashMap<String, Value>, key: MetadataKey, value: impl Into<Value>) {
    metadata.insert(key.as_str().to_owned(), value.into());
}

/// The keys both records share.
fn lineage_metadata(
    kind: RecordKind,
    flow: &FlowRef,
    lineage: &Lineage,
    console_url: Option<&str>,
) -> HashMap<String, Value> {
    let mut metadata = HashMap::new();
    put(&mut metadata, MetadataKey::Kind, kind.as_str());
    put(
        &mut metadata,
        MetadataKey::ParentExecutionId,
        lineage.parent_execution_id.as_str(),
    );
    put(
        &mut metadata,
        MetadataKey::RootExecutionId,
        lineage
            .root_execution_id
            .as_deref()
            .map_or(Value::Null, Value::from),
    );
    put(&mut metadata, MetadataKey::FlowId, flow.flow_id.as_str());
    if let Some(name) = &flow.flow_name {
        put(&mut metadata, MetadataKey::FlowName, name.as_str());
    }
    put(&mut metadata, MetadataKey::Depth, lineage.depth);
    if let Some(url) = console_url {
        put(&mut metadata, MetadataKey::ConsoleUrl, url);
    }
    metadata
}

/// Collects every problem a builder finds before it builds anything.
#[derive(Default)]
struct Checks(Vec<Violation>);

impl Checks {
    fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(Violation::new(path, message));
    }

    fn non_empty(&mut self, path: &str, value: &str, what: &str) {
        if value.is_empty() {
            self.push(path, format!("{what} must not be empty"));
        }
    }

    fn lineage(&mut self, flow: &FlowRef, lineage: &Lineage, console_url: Option<&str>) {
        self.non_empty(
            &metadata_pointer(MetadataKey::FlowId),
            &flow.flow_id,
            "the flow id",
        );
        self.non_empty(
            &metadata_pointer(MetadataKey::ParentExecutionId),
            &lineage.parent_execution_id,
            "the parent execution id",
        );
        if let Some(root) = &lineage.root_execution_id {
            self.non_empty(
                &metadata_pointer(MetadataKey::RootExecutionId),
                root,
                "the root execution id (None when the caller is the root)",
            );
        }
        if lineage.depth == 0 {
            self.push(
                metadata_pointer(MetadataKey::Depth),
                "a delegated child sits at depth 1 or deeper, got 0",
            );
        }
        if let Some(url) = console_url {
            self.non_empty(
                &metadata_pointer(MetadataKey::ConsoleUrl),
                url,
                "the console url",
            );
        }
    }

    /// The task status, checking that its timestamp serialises as an RFC 3339 date-time
    /// (chrono writes years outside 0000–9999 with a sign, which RFC 3339 does not allow).
    fn status(&mut self, state: TaskState, timestamp: SystemTime) -> TaskStatus {
        let status = TaskStatus {
            state,
            message: None,
            timestamp: Some(timestamp.into()),
        };
        let text = serde_json::to_value(status.timestamp).ok();
        let four_digit_year = text
            .as_ref()
            .and_then(Value::as_str)
            .is_some_and(|s| s.len() > 4 && s.bytes().take(4).all(|b| b.is_ascii_digit()));
        if !four_digit_year {
            self.push(
                "/status/timestamp",
                format!("the timestamp must fall in years 0000–9999, got {text:?}"),
            );
        }
        status
    }

    fn finish(self, record: RecordKind) -> Result<(), DelegationError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(DelegationError::InvalidRecord {
                record,
                violations: self.0,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lineage() -> Lineage {
        Lineage::child_of("parent", None, 0)
    }

    #[test]
    fn child_of_the_root_uses_the_parent_as_context() {
        let l = lineage();
        assert_eq!(l.depth, 1);
        assert_eq!(l.context_id(), "parent");
        let deeper = Lineage::child_of("child", Some("root".into()), 1);
        assert_eq!(deeper.depth, 2);
        assert_eq!(deeper.context_id(), "root");
    }

    #[test]
    fn request_without_parts_lists_every_problem() {
        let request = DelegationRequest {
            flow: FlowRef {
                flow_id: String::new(),
                flow_name: None,
            },
            lineage: Lineage {
                depth: 0,
                ..lineage()
            },
            instruction: None,
            inputs: Some(Value::Null),
            console_url: None,
        };
        let err = request.to_message().err();
        let paths: Vec<&str> = err
            .as_ref()
            .map(|e| {
                e.violations()
                    .iter()
                    .map(|v| v.instance_path.as_str())
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(
            paths,
            [
                "/metadata/a2aflow~1flowId",
                "/metadata/a2aflow~1depth",
                "/parts"
            ]
        );
    }

    #[test]
    fn null_result_gives_no_artifact_and_result_data_reads_back() {
        assert_eq!(result_artifact("e1", &Value::Null), None);
        let child = ChildExecution {
            execution_id: "e1".into(),
            flow: FlowRef {
                flow_id: "f".into(),
                flow_name: None,
            },
            lineage: lineage(),
            status: ExecutionStatus::Succeeded,
            timestamp: SystemTime::UNIX_EPOCH,
            result: Some(json!({"verdict": "pass"})),
            cost: None,
            tokens: None,
            console_url: None,
        };
        let task = child.to_task().ok();
        assert_eq!(
            task.as_ref().and_then(result_data),
            Some(&json!({"verdict": "pass"}))
        );
    }
}
