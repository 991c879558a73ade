//! Decoding request parameters (JSON-RPC `params`, HTTP+JSON bodies and queries) into a2a-lf's
//! request types, with the field violations the official Python SDK reports.

use crate::wire_error::{A2aError, ErrorKind};
use a2a::{SendMessageRequest, TaskState};
use serde::de::DeserializeOwned;
use serde_json::Value;

const REQUIRED: &str = "Field is required.";
const NON_EMPTY: &str = "Field must contain at least one element.";

/// The longest page ListTasks returns, and the page when none is asked for.
pub(crate) const MAX_PAGE_SIZE: i64 = 100;
const DEFAULT_PAGE_SIZE: i64 = 50;

/// A `SendMessageRequest`: the message's required fields checked first, as the SDK checks them.
pub(crate) fn send_request(params: &Value) -> Result<SendMessageRequest, A2aError> {
    let mut violations = Vec::new();
    match params.get("message") {
        None | Some(Value::Null) => violations.push(("message".to_owned(), REQUIRED.to_owned())),
        Some(message) => message_violations(message, &mut violations),
    }
    if !violations.is_empty() {
        return Err(A2aError::fields(violations));
    }
    let request: SendMessageRequest = decode(params)?;
    if let Some(n) = request
        .configuration
        .as_ref()
        .and_then(|c| c.history_length)
    {
        history_length(i64::from(n))?;
    }
    Ok(request)
}

fn message_violations(message: &Value, violations: &mut Vec<(String, String)>) {
    let id_ok = message
        .get("messageId")
        .or_else(|| message.get("message_id"))
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty());
    if !id_ok {
        violations.push(("message.message_id".to_owned(), REQUIRED.to_owned()));
    }
    let role_ok = match message.get("role") {
        Some(Value::String(r)) => r == "ROLE_USER" || r == "ROLE_AGENT",
        Some(Value::Number(n)) => n.as_u64().is_some_and(|n| n == 1 || n == 2),
        _ => false,
    };
    if !role_ok {
        violations.push(("message.role".to_owned(), REQUIRED.to_owned()));
    }
    let parts_ok = message
        .get("parts")
        .and_then(Value::as_array)
        .is_some_and(|p| !p.is_empty());
    if !parts_ok {
        violations.push(("message.parts".to_owned(), NON_EMPTY.to_owned()));
    }
}

/// A request whose one required field is the task `id` (GetTask, CancelTask, SubscribeToTask).
pub(crate) fn task_id(params: &Value) -> Result<String, A2aError> {
    match params.get("id") {
        None | Some(Value::Null) => Err(A2aError::fields(vec![("id".into(), REQUIRED.into())])),
        Some(Value::String(id)) => Ok(id.clone()),
        Some(other) => Err(A2aError::fields(vec![(
            "id".into(),
            format!("Field must be a string, got {other}."),
        )])),
    }
}

/// `historyLength`, when given, must not be negative (served tasks carry no history).
pub(crate) fn history_length(n: i64) -> Result<(), A2aError> {
    if n < 0 {
        Err(A2aError::new(
            ErrorKind::InvalidParams,
            "history length must be non-negative",
        ))
    } else {
        Ok(())
    }
}

/// Checks `historyLength` of `params` (an integer, or its text in a query).
pub(crate) fn checked_history_length(params: &Value) -> Result<(), A2aError> {
    match integer(params, "historyLength")? {
        Some(n) => history_length(n),
        None => Ok(()),
    }
}

/// An optional integer field (JSON number, or its text in a query).
fn integer(params: &Value, key: &str) -> Result<Option<i64>, A2aError> {
    match params.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n.as_i64().map(Some).ok_or_else(|| not_integer(key)),
        Some(Value::String(s)) => s.parse().map(Some).map_err(|_| not_integer(key)),
        Some(_) => Err(not_integer(key)),
    }
}

/// What a ListTasks asks for.
#[derive(Debug, Default)]
pub(crate) struct ListQuery {
    pub(crate) context_id: Option<String>,
    pub(crate) status: Option<TaskState>,
    pub(crate) page_size: usize,
    pub(crate) page_token: Option<String>,
    pub(crate) include_artifacts: bool,
}

/// A `ListTasksRequest` from JSON (JSON-RPC params, or the HTTP+JSON query as JSON).
pub(crate) fn list_query(params: &Value) -> Result<ListQuery, A2aError> {
    let text = |key: &str| -> Result<Option<String>, A2aError> {
        match params.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(A2aError::fields(vec![(
                key.to_owned(),
                format!("Field must be a string, got {other}."),
            )])),
        }
    };
    let number = |key: &str| integer(params, key);
    let page_size = number("pageSize")?.unwrap_or(DEFAULT_PAGE_SIZE);
    if page_size < 1 {
        return Err(A2aError::new(
            ErrorKind::InvalidParams,
            "minimum page size is 1",
        ));
    }
    if page_size > MAX_PAGE_SIZE {
        return Err(A2aError::new(
            ErrorKind::InvalidParams,
            "maximum page size is 100",
        ));
    }
    checked_history_length(params)?;
    let status = match text("status")? {
        None => None,
        Some(s) => Some(
            serde_json::from_value::<TaskState>(Value::String(s.clone()))
                .ok()
                .filter(|s| *s != TaskState::Unspecified)
                .ok_or_else(|| {
                    A2aError::fields(vec![(
                        "status".into(),
                        format!("'{s}' is not a task state (TASK_STATE_WORKING, …)."),
                    )])
                })?,
        ),
    };
    let include_artifacts = match params.get("includeArtifacts") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) if s == "true" || s == "false" => s == "true",
        Some(other) => {
            return Err(A2aError::fields(vec![(
                "includeArtifacts".into(),
                format!("Field must be a boolean, got {other}."),
            )]));
        }
    };
    Ok(ListQuery {
        context_id: text("contextId")?,
        status,
        page_size: usize::try_from(page_size).unwrap_or(1),
        page_token: text("pageToken")?,
        include_artifacts,
    })
}

fn not_integer(key: &str) -> A2aError {
    A2aError::fields(vec![(
        key.to_owned(),
        "Field must be an integer.".to_owned(),
    )])
}

/// Decodes `params` into `T`, a failure as a violation of the whole request.
fn decode<T: DeserializeOwned>(params: &Value) -> Result<T, A2aError> {
    serde_json::from_value(params.clone())
        .map_err(|e| A2aError::fields(vec![("params".to_owned(), e.to_string())]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_message_that_is_not_an_object_lists_the_three_fields() {
        let err = send_request(&json!({"message": "x"})).err();
        let body = err.map(|e| e.jsonrpc_response(&json!(104)).to_string());
        assert_eq!(
            body.as_deref(),
            Some(
                r#"{"error":{"code":-32602,"message":"Validation failed","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"INVALID_PARAMS","domain":"a2a-protocol.org","metadata":{"errors":[{"field":"message.message_id","message":"Field is required."},{"field":"message.role","message":"Field is required."},{"field":"message.parts","message":"Field must contain at least one element."}]}},{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"message.message_id","description":"Field is required."},{"field":"message.role","description":"Field is required."},{"field":"message.parts","description":"Field must contain at least one element."}]}]},"id":104,"jsonrpc":"2.0"}"#
            )
        );
    }

    #[test]
    fn page_sizes_outside_1_to_100_are_refused() {
        for (size, words) in [
            (0, "minimum page size is 1"),
            (101, "maximum page size is 100"),
        ] {
            let err = list_query(&json!({ "pageSize": size })).err();
            assert_eq!(err.map(|e| e.message).as_deref(), Some(words));
        }
        assert_eq!(list_query(&json!({})).map(|q| q.page_size).ok(), Some(50));
    }
}
