//! The workflow document's JSON Schema (`schemas/workflow.schema.json`, draft 2020-12), embedded,
//! and a check of a document against it (feature `schema`).
//!
//! The schema describes the *strict* document format: a document passes it exactly when
//! [`crate::load_workflow_value`] with [`crate::LoadOptions::STRICT`] loads it (a test holds the
//! two to agreement over a corpus). Graph rules — unique names, existing targets, no cycles, a
//! root, upstream `contextFrom` sources, subtasks present — are not expressible in a schema and
//! belong to [`crate::validate()`].

use crate::error_code::ErrorCode;
use crate::problem::Problem;
use jsonschema::Validator;
use serde_json::Value;
use std::sync::OnceLock;

/// `schemas/workflow.schema.json`, as embedded in the crate.
pub const WORKFLOW_SCHEMA: &str = include_str!("../schemas/workflow.schema.json");

fn validator() -> &'static Result<Validator, String> {
    static COMPILED: OnceLock<Result<Validator, String>> = OnceLock::new();
    COMPILED.get_or_init(|| {
        let schema: Value = serde_json::from_str(WORKFLOW_SCHEMA).map_err(|e| e.to_string())?;
        jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&schema)
            .map_err(|e| e.to_string())
    })
}

/// Checks a document against the workflow schema; every violation becomes a
/// `workflow.invalid_document` problem at its instance path.
pub fn check_workflow_schema(document: &Value) -> Result<(), Vec<Problem>> {
    let problems: Vec<Problem> = match validator() {
        Ok(v) => v
            .iter_errors(document)
            .map(|e| {
                Problem::new(
                    ErrorCode::WorkflowInvalidDocument,
                    e.instance_path().to_string(),
                    format!("schema: {e}"),
                )
            })
            .collect(),
        Err(defect) => vec![Problem::new(
            ErrorCode::WorkflowInvalidDocument,
            "",
            format!("the embedded workflow schema does not compile: {defect}"),
        )],
    };
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_embedded_schema_compiles() {
        assert!(validator().is_ok(), "{:?}", validator().as_ref().err());
    }

    #[test]
    fn violations_carry_the_instance_path() {
        let problems = check_workflow_schema(&json!({"steps": [{"name": 1}]})).unwrap_err();
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].path, "/steps/0/name");
        assert_eq!(problems[0].code, ErrorCode::WorkflowInvalidDocument);
        assert_eq!(check_workflow_schema(&json!({"steps": []})), Ok(()));
    }
}
