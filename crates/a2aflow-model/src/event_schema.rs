//! The event JSON Schema (`schemas/events.schema.json`, draft 2020-12), embedded, and a check of
//! one event against it (feature `schema`).
//!
//! The schema describes [`crate::Event`] with the `data` of each kind as the payload types of
//! [`crate::event_data`] write it; a test holds the two to agreement (every payload's sample and
//! the events of real runs validate, and broken data is refused).

use jsonschema::Validator;
use serde_json::Value;
use std::sync::OnceLock;

/// `schemas/events.schema.json`, as embedded in the crate.
pub const EVENTS_SCHEMA: &str = include_str!("../schemas/events.schema.json");

/// One way an event breaks the event schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct EventSchemaViolation {
    /// Where in the event (a JSON pointer; empty for the whole event).
    pub path: String,
    /// What is wrong.
    pub message: String,
}

fn validator() -> &'static Result<Validator, String> {
    static COMPILED: OnceLock<Result<Validator, String>> = OnceLock::new();
    COMPILED.get_or_init(|| {
        let schema: Value = serde_json::from_str(EVENTS_SCHEMA).map_err(|e| e.to_string())?;
        jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&schema)
            .map_err(|e| e.to_string())
    })
}

/// Checks one event's JSON form against the event schema; every violation is reported.
pub fn check_event_schema(event: &Value) -> Result<(), Vec<EventSchemaViolation>> {
    let violations: Vec<EventSchemaViolation> = match validator() {
        Ok(v) => v
            .iter_errors(event)
            .map(|e| EventSchemaViolation {
                path: e.instance_path().to_string(),
                message: e.to_string(),
            })
            .collect(),
        Err(defect) => vec![EventSchemaViolation {
            path: String::new(),
            message: format!("the embedded event schema does not compile: {defect}"),
        }],
    };
    if violations.is_empty() {
        Ok(())
    } else {
        Err(violations)
    }
}
