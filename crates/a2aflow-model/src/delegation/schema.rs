//! Validation of delegation records against the closed JSON Schemas in `schemas/` (draft
//! 2020-12), compiled lazily once, plus the identity rules a schema cannot state (the task id is
//! the execution id, the artifact id is `<execution id>/result`, the context is the root).

use super::error::{DelegationError, RecordKind, Violation};
use super::metadata::keys;
use super::records::result_artifact_id;
use jsonschema::Validator;
use serde_json::Value;
use std::sync::OnceLock;

/// The request schema, `schemas/delegation_request.schema.json`, as embedded in the crate.
pub const REQUEST_SCHEMA: &str = include_str!("../../schemas/delegation_request.schema.json");

/// The task schema, `schemas/delegation_task.schema.json`, as embedded in the crate.
pub const TASK_SCHEMA: &str = include_str!("../../schemas/delegation_task.schema.json");

/// A compiled schema, or why the embedded text did not compile (a build defect the crate's own
/// tests catch; reported as a violation rather than a panic).
type Compiled = Result<Validator, String>;

fn compile(text: &str) -> Compiled {
    let schema: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&schema)
        .map_err(|e| e.to_string())
}

fn validator(record: RecordKind) -> &'static Compiled {
    static REQUEST: OnceLock<Compiled> = OnceLock::new();
    static TASK: OnceLock<Compiled> = OnceLock::new();
    match record {
        RecordKind::Request => REQUEST.get_or_init(|| compile(REQUEST_SCHEMA)),
        RecordKind::Task => TASK.get_or_init(|| compile(TASK_SCHEMA)),
    }
}

/// Checks a request message (ProtoJSON) against the request schema and the identity rules.
///
/// # Errors
/// [`DelegationError::InvalidRecord`] (`delegation.invalid_record`) listing every violation
/// with its instance path.
pub fn validate_delegation_request(record: &Value) -> Result<(), DelegationError> {
    validate(RecordKind::Request, record)
}

/// Checks a task record (ProtoJSON), refused or not, against the task schema and the identity
/// rules.
///
/// # Errors
/// [`DelegationError::InvalidRecord`] (`delegation.invalid_record`) listing every violation
/// with its instance path.
pub fn validate_delegation_task(record: &Value) -> Result<(), DelegationError> {
    validate(RecordKind::Task, record)
}

fn validate(record_kind: RecordKind, record: &Value) -> Result<(), DelegationError> {
    let mut violations = match validator(record_kind) {
        Ok(validator) => validator
            .iter_errors(record)
            .map(|e| Violation::new(e.instance_path().to_string(), e.to_string()))
            .collect(),
        Err(defect) => vec![Violation::new(
            "",
            format!("the embedded {record_kind} schema does not compile: {defect}"),
        )],
    };
    identity_rules(record_kind, record, &mut violations);
    if violations.is_empty() {
        Ok(())
    } else {
        Err(DelegationError::InvalidRecord {
            record: record_kind,
            violations,
        })
    }
}

/// The rules that tie values together, checked only where the values are present and strings
/// (the schema already reports missing or mistyped ones).
fn identity_rules(record_kind: RecordKind, record: &Value, violations: &mut Vec<Violation>) {
    let text = |pointer: &str| record.pointer(pointer).and_then(Value::as_str);
    let meta = |key: &str| record.get("metadata").and_then(|m| m.get(key));

    // contextId is the root execution id; the parent's own id when the caller is the root.
    let expected_context = match meta(keys::ROOT_EXECUTION_ID) {
        Some(Value::String(root)) => Some(root.as_str()),
        Some(Value::Null) => meta(keys::PARENT_EXECUTION_ID).and_then(Value::as_str),
        _ => None,
    };
    if let (Some(expected), Some(actual)) = (expected_context, text("/contextId"))
        && expected != actual
    {
        violations.push(Violation::new(
            "/contextId",
            format!("contextId must be the root execution id `{expected}`, got `{actual}`"),
        ));
    }

    if record_kind != RecordKind::Task {
        return;
    }
    let Some(execution_id) = meta(keys::EXECUTION_ID).and_then(Value::as_str) else {
        return;
    };
    if let Some(id) = text("/id")
        && id != execution_id
    {
        violations.push(Violation::new(
            "/id",
            format!("the task id must be the child execution id `{execution_id}`, got `{id}`"),
        ));
    }
    let expected_artifact = result_artifact_id(execution_id);
    let artifacts = record.get("artifacts").and_then(Value::as_array);
    for (index, artifact) in artifacts.into_iter().flatten().enumerate() {
        if let Some(id) = artifact.get("artifactId").and_then(Value::as_str)
            && id != expected_artifact
        {
            violations.push(Violation::new(
                format!("/artifacts/{index}/artifactId"),
                format!("the result artifact id must be `{expected_artifact}`, got `{id}`"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_schemas_compile() {
        for kind in [RecordKind::Request, RecordKind::Task] {
            assert!(
                validator(kind).is_ok(),
                "{kind}: {:?}",
                validator(kind).as_ref().err()
            );
        }
    }

    #[test]
    fn task_id_must_be_the_execution_id() {
        let record = serde_json::json!({
            "id": "other",
            "contextId": "root",
            "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-09-15T10:04:11Z"},
            "artifacts": [{"artifactId": "other/result", "name": "result",
                           "parts": [{"data": 1, "mediaType": "application/json"}]}],
            "metadata": {
                "a2aflow/kind": "delegation_task", "a2aflow/executionId": "e1",
                "a2aflow/rootExecutionId": "root", "a2aflow/flowId": "f",
                "a2aflow/depth": 2, "a2aflow/status": "RUNNING"
            }
        });
        let err = validate_delegation_task(&record).err();
        let paths: Vec<&str> = err
            .as_ref()
            .map(|e| {
                e.violations()
                    .iter()
                    .map(|v| v.instance_path.as_str())
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(paths, ["/id", "/artifacts/0/artifactId"]);
    }
}
