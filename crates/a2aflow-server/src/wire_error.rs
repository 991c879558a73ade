//! A2A errors and their two wire envelopes, in the shapes the official Python SDK (a2a-sdk
//! 1.3.0) answers with: the JSON-RPC error object (HTTP 200) and the `google.rpc.Status` body of
//! HTTP+JSON.

use serde_json::{Map, Value, json};

/// The ErrorInfo domain every A2A error carries.
pub(crate) const ERROR_DOMAIN: &str = "a2a-protocol.org";

/// An A2A (or JSON-RPC) error kind with its codes on both bindings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    /// -32700, JSON that does not parse.
    Parse,
    /// -32600, a request that is not a valid JSON-RPC request (or an unreadable body).
    InvalidRequest,
    /// -32601, an unknown method.
    MethodNotFound,
    /// -32602, parameters that fail validation.
    InvalidParams,
    /// -32603, the server failed.
    Internal,
    /// -32001.
    TaskNotFound,
    /// -32002.
    TaskNotCancelable,
    /// -32003.
    PushNotificationNotSupported,
    /// -32004.
    UnsupportedOperation,
    /// -32009.
    VersionNotSupported,
    /// No valid credentials: HTTP 401 on both bindings (A2A puts authentication on the
    /// transport; JSON-RPC has no code of its own for it, so its body is `-32600` with the
    /// ErrorInfo reason `UNAUTHENTICATED`).
    Unauthenticated,
}

impl ErrorKind {
    /// The JSON-RPC `error.code`.
    pub(crate) fn jsonrpc_code(self) -> i64 {
        match self {
            Self::Parse => -32700,
            Self::InvalidRequest | Self::Unauthenticated => -32600,
            Self::MethodNotFound => -32601,
            Self::InvalidParams => -32602,
            Self::Internal => -32603,
            Self::TaskNotFound => -32001,
            Self::TaskNotCancelable => -32002,
            Self::PushNotificationNotSupported => -32003,
            Self::UnsupportedOperation => -32004,
            Self::VersionNotSupported => -32009,
        }
    }

    /// The ErrorInfo `reason` (UPPER_SNAKE, no `Error` suffix).
    pub(crate) fn reason(self) -> &'static str {
        match self {
            Self::Parse | Self::InvalidRequest => "INVALID_REQUEST",
            Self::MethodNotFound => "METHOD_NOT_FOUND",
            Self::InvalidParams => "INVALID_PARAMS",
            Self::Internal => "INTERNAL_ERROR",
            Self::TaskNotFound => "TASK_NOT_FOUND",
            Self::TaskNotCancelable => "TASK_NOT_CANCELABLE",
            Self::PushNotificationNotSupported => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            Self::UnsupportedOperation => "UNSUPPORTED_OPERATION",
            Self::VersionNotSupported => "VERSION_NOT_SUPPORTED",
            Self::Unauthenticated => "UNAUTHENTICATED",
        }
    }

    /// The HTTP+JSON status and `google.rpc.Code` name (the A2A 1.0.1 table; gRPC answers with
    /// the code of that name, as the official SDK's gRPC handler does).
    pub(crate) fn rest_status(self) -> (u16, &'static str) {
        match self {
            Self::Parse | Self::InvalidRequest | Self::InvalidParams => (400, "INVALID_ARGUMENT"),
            Self::MethodNotFound | Self::TaskNotFound => (404, "NOT_FOUND"),
            Self::Internal => (500, "INTERNAL"),
            Self::Unauthenticated => (401, "UNAUTHENTICATED"),
            Self::TaskNotCancelable
            | Self::PushNotificationNotSupported
            | Self::UnsupportedOperation
            | Self::VersionNotSupported => (400, "FAILED_PRECONDITION"),
        }
    }

    /// The HTTP status of a JSON-RPC answer of this kind: 401 for `Unauthenticated`, else 200.
    pub(crate) fn jsonrpc_http_status(self) -> u16 {
        if self == Self::Unauthenticated {
            401
        } else {
            200
        }
    }

    /// Whether the Python SDK attaches ErrorInfo `data` to the JSON-RPC error.
    fn jsonrpc_has_data(self) -> bool {
        !matches!(self, Self::Parse | Self::MethodNotFound | Self::Internal)
    }
}

/// An error answer: its kind, a message a person can act on, the ErrorInfo metadata and the
/// field violations of a validation failure.
#[derive(Debug, Clone)]
pub(crate) struct A2aError {
    pub(crate) kind: ErrorKind,
    pub(crate) message: String,
    pub(crate) metadata: Map<String, Value>,
    pub(crate) violations: Vec<(String, String)>,
}

impl A2aError {
    /// An error with empty ErrorInfo metadata.
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            metadata: Map::new(),
            violations: Vec::new(),
        }
    }

    /// A validation failure naming each field and its problem (the SDK's "Validation failed",
    /// with the ErrorInfo `errors` list and a `BadRequest` detail).
    pub(crate) fn fields(violations: Vec<(String, String)>) -> Self {
        let errors: Vec<Value> = violations
            .iter()
            .map(|(field, problem)| json!({ "field": field, "message": problem }))
            .collect();
        let mut metadata = Map::new();
        metadata.insert("errors".into(), Value::Array(errors));
        Self {
            kind: ErrorKind::InvalidParams,
            message: "Validation failed".into(),
            metadata,
            violations,
        }
    }

    /// An invalid request with the SDK's `parseError` metadata.
    pub(crate) fn invalid_request(parse_error: impl Into<String>) -> Self {
        let mut e = Self::new(ErrorKind::InvalidRequest, "Invalid Request");
        e.metadata
            .insert("parseError".into(), Value::String(parse_error.into()));
        e
    }

    /// The version-not-supported error for a received header value (missing means `0.3`).
    pub(crate) fn version(received: &str) -> Self {
        Self::new(
            ErrorKind::VersionNotSupported,
            format!(
                "A2A version '{received}' is not supported by this handler. Expected version '1.0'."
            ),
        )
    }

    /// `Task not found`, the SDK's words for an id it does not hold.
    pub(crate) fn task_not_found() -> Self {
        Self::new(ErrorKind::TaskNotFound, "Task not found")
    }

    /// `Method not found`.
    pub(crate) fn method_not_found() -> Self {
        Self::new(ErrorKind::MethodNotFound, "Method not found")
    }

    /// An internal error (no ErrorInfo on JSON-RPC, as the SDK answers an agent's exception).
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }

    fn details(&self) -> Vec<Value> {
        let mut details = vec![json!({
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": self.kind.reason(),
            "domain": ERROR_DOMAIN,
            "metadata": Value::Object(self.metadata.clone()),
        })];
        if !self.violations.is_empty() {
            let violations: Vec<Value> = self
                .violations
                .iter()
                .map(|(field, problem)| json!({ "field": field, "description": problem }))
                .collect();
            details.push(json!({
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": violations,
            }));
        }
        details
    }

    /// The JSON-RPC `error` object.
    pub(crate) fn jsonrpc_error(&self) -> Value {
        let mut error = Map::new();
        error.insert("code".into(), self.kind.jsonrpc_code().into());
        error.insert("message".into(), self.message.clone().into());
        if self.kind.jsonrpc_has_data() {
            error.insert("data".into(), Value::Array(self.details()));
        }
        Value::Object(error)
    }

    /// A complete JSON-RPC error response.
    pub(crate) fn jsonrpc_response(&self, id: &Value) -> Value {
        json!({ "error": self.jsonrpc_error(), "id": id, "jsonrpc": "2.0" })
    }

    /// The HTTP status and `google.rpc.Status` body of HTTP+JSON.
    pub(crate) fn rest_response(&self) -> (u16, Value) {
        let (status, name) = self.kind.rest_status();
        let body = json!({ "error": {
            "code": status,
            "status": name,
            "message": self.message,
            "details": self.details(),
        }});
        (status, body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_not_found_is_the_sdk_jsonrpc_body() {
        let body = A2aError::task_not_found().jsonrpc_response(&json!(7));
        assert_eq!(
            body.to_string(),
            r#"{"error":{"code":-32001,"message":"Task not found","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{}}]},"id":7,"jsonrpc":"2.0"}"#
        );
    }

    #[test]
    fn missing_version_is_the_sdk_rest_body() {
        let (status, body) = A2aError::version("0.3").rest_response();
        assert_eq!(status, 400);
        assert_eq!(
            body.to_string(),
            r#"{"error":{"code":400,"status":"FAILED_PRECONDITION","message":"A2A version '0.3' is not supported by this handler. Expected version '1.0'.","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"VERSION_NOT_SUPPORTED","domain":"a2a-protocol.org","metadata":{}}]}}"#
        );
    }

    #[test]
    fn method_not_found_has_no_data() {
        let body = A2aError::method_not_found().jsonrpc_response(&json!(101));
        assert_eq!(
            body.to_string(),
            r#"{"error":{"code":-32601,"message":"Method not found"},"id":101,"jsonrpc":"2.0"}"#
        );
    }
}
