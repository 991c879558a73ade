//! The one error type of the delegation shapes, with its stable codes.

use super::refusal::Refusal;
use crate::error_code::{ErrorCode, Failure};
use serde_json::Value;

/// Which delegation record a violation was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RecordKind {
    /// The request message (`a2aflow/kind` = `delegation_request`).
    Request,
    /// The task record, refused or not (`a2aflow/kind` = `delegation_task`).
    Task,
}

impl RecordKind {
    /// The `a2aflow/kind` value of this record.
    pub const fn as_str(self) -> &'static str {
        match self {
            RecordKind::Request => "delegation_request",
            RecordKind::Task => "delegation_task",
        }
    }
}

impl std::fmt::Display for RecordKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One problem in a record: where (a JSON Pointer into the record, `""` for the whole record)
/// and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON Pointer of the offending value, e.g. `/metadata/a2aflow~1depth`.
    pub instance_path: String,
    /// What is wrong there, for a person.
    pub message: String,
}

impl Violation {
    /// A violation at `instance_path`.
    pub fn new(instance_path: impl Into<String>, message: impl Into<String>) -> Self {
        Violation {
            instance_path: instance_path.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = if self.instance_path.is_empty() {
            "(record)"
        } else {
            &self.instance_path
        };
        write!(f, "{path}: {}", self.message)
    }
}

/// Everything that can go wrong while shaping, mapping or checking a delegation record.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DelegationError {
    /// An execution status outside the seed's table (`delegation.unmapped_status`).
    #[error("execution status `{status}` has no row in the delegation status table")]
    UnmappedStatus {
        /// The status as given.
        status: String,
    },
    /// The policy declined the call (`delegation.refused`).
    #[error("delegation refused: {0}")]
    Refused(Refusal),
    /// A record breaks the delegation shapes; every violation is listed
    /// (`delegation.invalid_record`).
    #[error("invalid {record} record: {}", join(.violations))]
    InvalidRecord {
        /// Which record.
        record: RecordKind,
        /// Every violation found, in document order where the validator gives one.
        violations: Vec<Violation>,
    },
}

fn join(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(Violation::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

impl DelegationError {
    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            DelegationError::UnmappedStatus { .. } => ErrorCode::DelegationUnmappedStatus,
            DelegationError::Refused(_) => ErrorCode::DelegationRefused,
            DelegationError::InvalidRecord { .. } => ErrorCode::DelegationInvalidRecord,
        }
    }

    /// The violations of an [`DelegationError::InvalidRecord`]; empty for the other variants.
    pub fn violations(&self) -> &[Violation] {
        match self {
            DelegationError::InvalidRecord { violations, .. } => violations,
            _ => &[],
        }
    }

    /// The engine's [`Failure`] for this error, with safe details (`status`, `refusalReason`,
    /// `record`, `violations`).
    pub fn to_failure(&self) -> Failure {
        let failure = Failure::new(self.code(), self.to_string());
        match self {
            DelegationError::UnmappedStatus { status } => {
                failure.with_detail("status", status.as_str())
            }
            DelegationError::Refused(refusal) => failure
                .with_detail("refusalReason", refusal.reason().as_str())
                .with_detail("message", refusal.message()),
            DelegationError::InvalidRecord { record, violations } => {
                failure.with_detail("record", record.as_str()).with_detail(
                    "violations",
                    Value::Array(
                        violations
                            .iter()
                            .map(|v| {
                                serde_json::json!({
                                    "instancePath": v.instance_path,
                                    "message": v.message,
                                })
                            })
                            .collect(),
                    ),
                )
            }
        }
    }
}

impl From<DelegationError> for Failure {
    fn from(error: DelegationError) -> Self {
        error.to_failure()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delegation::{RefusalReason, execution_not_found};

    #[test]
    fn codes_and_failures() {
        let unmapped = DelegationError::UnmappedStatus {
            status: "DONE".into(),
        };
        let failure = unmapped.to_failure();
        assert!(failure.is(ErrorCode::DelegationUnmappedStatus));
        assert_eq!(failure.details["status"], "DONE");

        let refused: DelegationError = execution_not_found().into();
        let failure = refused.to_failure();
        assert!(failure.is(ErrorCode::DelegationRefused));
        assert_eq!(
            failure.details["refusalReason"],
            RefusalReason::ExecutionNotFound.as_str()
        );

        let invalid = DelegationError::InvalidRecord {
            record: RecordKind::Task,
            violations: vec![
                Violation::new("/id", "must not be empty"),
                Violation::new("", "no metadata"),
            ],
        };
        assert_eq!(
            invalid.to_string(),
            "invalid delegation_task record: /id: must not be empty; (record): no metadata"
        );
        let failure = invalid.to_failure();
        assert!(failure.is(ErrorCode::DelegationInvalidRecord));
        assert_eq!(failure.details["violations"][0]["instancePath"], "/id");
    }
}
