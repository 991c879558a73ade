//! The HTTP+JSON error envelope (`google.rpc.Status` in ProtoJSON), which `a2a-lf` does not model.
//!
//! An A2A 1.0 HTTP+JSON agent answers a failed request with
//! `{"error": {"code": 400, "status": "FAILED_PRECONDITION", "message": "...", "details": [...]}}`,
//! where each detail is a `google.protobuf.Any` (`@type` plus fields, usually
//! `google.rpc.ErrorInfo` with `reason`/`domain`/`metadata`). `a2a-lf` has the detail type
//! ([`a2a::TypedDetail`]) but no envelope; see `docs/decisions/0010-rpc-status-envelope.md`.

use a2a::TypedDetail;
use serde::{Deserialize, Serialize};

/// The body of an HTTP+JSON error response: `{"error": Status}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorEnvelope {
    /// The status.
    pub error: RpcStatus,
}

/// A `google.rpc.Status` as ProtoJSON writes it in A2A 1.0 HTTP+JSON error bodies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcStatus {
    /// The HTTP status code (400, 404, 500, …).
    pub code: i32,
    /// The canonical status name (`INVALID_ARGUMENT`, `NOT_FOUND`, `FAILED_PRECONDITION`, …).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// The agent's message.
    #[serde(default)]
    pub message: String,
    /// Typed details (`google.rpc.ErrorInfo` and others).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<TypedDetail>,
}

impl RpcStatus {
    /// The `reason` of the first `google.rpc.ErrorInfo` detail (such as `TASK_NOT_FOUND`).
    pub fn reason(&self) -> Option<&str> {
        self.details
            .iter()
            .find(|d| d.type_url == a2a::ERROR_INFO_TYPE)
            .and_then(|d| d.value.get("reason"))
            .and_then(|r| r.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_real_envelope_and_finds_the_reason() {
        let body = r#"{"error":{"code":404,"status":"NOT_FOUND","message":"Task not found","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{}}]}}"#;
        let e: ErrorEnvelope = serde_json::from_str(body).unwrap();
        assert_eq!(e.error.code, 404);
        assert_eq!(e.error.status, "NOT_FOUND");
        assert_eq!(e.error.reason(), Some("TASK_NOT_FOUND"));
        let back: serde_json::Value = serde_json::to_value(&e).unwrap();
        assert_eq!(
            back,
            serde_json::from_str::<serde_json::Value>(body).unwrap()
        );
    }

    #[test]
    fn details_are_optional() {
        let e: ErrorEnvelope = serde_json::from_str(
            r#"{"error":{"code":500,"status":"INTERNAL","message":"unknown exception"}}"#,
        )
        .unwrap();
        assert_eq!(e.error.reason(), None);
        assert!(e.error.details.is_empty());
    }
}
