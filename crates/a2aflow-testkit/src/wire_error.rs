//! A2A error kinds and their two wire envelopes: JSON-RPC error objects and `google.rpc.Status`.

use serde_json::{Map, Value, json};

/// The ErrorInfo domain every A2A error carries.
pub(crate) const ERROR_DOMAIN: &str = "a2a-protocol.org";

/// An A2A (or JSON-RPC) error kind with its codes on both bindings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    /// -32700, JSON that does not parse.
    Parse,
    /// -32600, a request that is not a valid JSON-RPC request.
    InvalidRequest,
    /// -32601, an unknown method or path.
    MethodNotFound,
    /// -32602, parameters that fail validation.
    InvalidParams,
    /// -32603, the agent failed.
    Internal,
    /// -32001.
    TaskNotFound,
    /// -32002.
    TaskNotCancelable,
    /// -32003.
    PushNotificationNotSupported,
    /// -32004.
    UnsupportedOperation,
    /// -32008.
    ExtensionSupportRequired,
    /// -32009.
    VersionNotSupported,
}

impl ErrorKind {
    /// The JSON-RPC `error.code`.
    pub(crate) fn jsonrpc_code(self) -> i64 {
        match self {
            Self::Parse => -32700,
            Self::InvalidRequest => -32600,
            Self::MethodNotFound => -32601,
            Self::InvalidParams => -32602,
            Self::Internal => -32603,
            Self::TaskNotFound => -32001,
            Self::TaskNotCancelable => -32002,
            Self::PushNotificationNotSupported => -32003,
            Self::UnsupportedOperation => -32004,
            Self::ExtensionSupportRequired => -32008,
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
            Self::ExtensionSupportRequired => "EXTENSION_SUPPORT_REQUIRED",
            Self::VersionNotSupported => "VERSION_NOT_SUPPORTED",
        }
    }

    /// The REST HTTP status and `google.rpc.Code` name (A2A 1.0.1 table).
    pub(crate) fn rest_status(self) -> (u16, &'static str) {
        match self {
            Self::Parse | Self::InvalidRequest | Self::InvalidParams => (400, "INVALID_ARGUMENT"),
            Self::MethodNotFound | Self::TaskNotFound => (404, "NOT_FOUND"),
            Self::Internal => (500, "INTERNAL"),
            Self::TaskNotCancelable
            | Self::PushNotificationNotSupported
            | Self::UnsupportedOperation
            | Self::ExtensionSupportRequired
            | Self::VersionNotSupported => (400, "FAILED_PRECONDITION"),
        }
    }

    /// Whether the Python SDK attaches ErrorInfo `data` to the JSON-RPC error.
    fn jsonrpc_has_data(self) -> bool {
        !matches!(self, Self::Parse | Self::MethodNotFound | Self::Internal)
    }
}

/// An error answer: kind, human message and ErrorInfo metadata.
#[derive(Debug, Clone)]
pub(crate) struct A2aError {
    pub(crate) kind: ErrorKind,
    pub(crate) message: String,
    pub(crate) metadata: Map<String, Value>,
}

impl A2aError {
    /// An error with empty ErrorInfo metadata.
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            metadata: Map::new(),
        }
    }

    /// A validation failure naming one field (the Python SDK's shape).
    pub(crate) fn field(field: &str, problem: &str) -> Self {
        let mut metadata = Map::new();
        metadata.insert(
            "errors".into(),
            json!([{ "field": field, "message": problem }]),
        );
        Self {
            kind: ErrorKind::InvalidParams,
            message: "Validation failed".into(),
            metadata,
        }
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

    fn error_info(&self) -> Value {
        json!({
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": self.kind.reason(),
            "domain": ERROR_DOMAIN,
            "metadata": Value::Object(self.metadata.clone()),
        })
    }

    /// The JSON-RPC `error` object.
    pub(crate) fn jsonrpc_error(&self) -> Value {
        let mut error = Map::new();
        error.insert("code".into(), self.kind.jsonrpc_code().into());
        error.insert("message".into(), self.message.clone().into());
        if self.kind.jsonrpc_has_data() {
            error.insert("data".into(), Value::Array(vec![self.error_info()]));
        }
        Value::Object(error)
    }

    /// A complete JSON-RPC error response.
    pub(crate) fn jsonrpc_response(&self, id: &Value) -> Value {
        json!({ "error": self.jsonrpc_error(), "id": id, "jsonrpc": "2.0" })
    }

    /// The HTTP status and `google.rpc.Status` body for REST.
    pub(crate) fn rest_response(&self) -> (u16, Value) {
        let (status, name) = self.kind.rest_status();
        let body = json!({ "error": {
            "code": status,
            "status": name,
            "message": self.message,
            "details": [self.error_info()],
        }});
        (status, body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_not_found_matches_python_jsonrpc_shape() {
        let e = A2aError::new(ErrorKind::TaskNotFound, "Task not found");
        let got = e.jsonrpc_response(&json!(7));
        let want: Value = serde_json::from_str(r#"{"error":{"code":-32001,"message":"Task not found","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{}}]},"id":7,"jsonrpc":"2.0"}"#).unwrap();
        assert_eq!(got, want);
    }

    #[test]
    fn version_error_matches_python_rest_shape() {
        let (status, body) = A2aError::version("0.3").rest_response();
        assert_eq!(status, 400);
        let want: Value = serde_json::from_str(r#"{"error":{"code":400,"status":"FAILED_PRECONDITION","message":"A2A version '0.3' is not supported by this handler. Expected version '1.0'.","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"VERSION_NOT_SUPPORTED","domain":"a2a-protocol.org","metadata":{}}]}}"#).unwrap();
        assert_eq!(body, want);
    }

    #[test]
    fn method_not_found_has_no_data() {
        let e = A2aError::new(ErrorKind::MethodNotFound, "Method not found");
        assert_eq!(
            e.jsonrpc_response(&json!(101)),
            json!({"error":{"code":-32601,"message":"Method not found"},"id":101,"jsonrpc":"2.0"})
        );
    }
}
