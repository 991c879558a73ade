//! The JSON-RPC binding (`POST /agents/{name}/jsonrpc`): the envelope checked in the order the
//! official Python SDK checks it (JSON, batch, id, `jsonrpc`, method, the method's name, the
//! `A2A-Version` header, the params), errors as JSON-RPC error objects with HTTP 200.

use crate::app::{App, once_response, stream_response};
use crate::auth::Who;
use crate::body::{self, Body};
use crate::ops::{self, Answer, Unsupported};
use crate::params::list_query;
use crate::sse::Framing;
use crate::version::check_version;
use crate::wire_error::{A2aError, ErrorKind};
use http::Response;
use serde_json::{Map, Value, json};

/// A refused envelope: the id to answer with and the error.
pub(crate) type Refused = Box<(Value, A2aError)>;

/// A request's envelope after its checks: the id to answer with, the method and the params.
pub(crate) struct Call {
    pub(crate) id: Value,
    pub(crate) method: String,
    pub(crate) params: Value,
}

/// Serves one JSON-RPC request for `workflow`.
pub(crate) async fn serve(
    app: &App,
    workflow: &str,
    who: &Who,
    headers: &http::HeaderMap,
    bytes: &[u8],
) -> Response<Body> {
    let call = match envelope(bytes) {
        Ok(call) => call,
        Err(refused) => {
            let (id, e) = *refused;
            return error(&id, &e);
        }
    };
    if !known(&call.method) {
        return error(&call.id, &A2aError::method_not_found());
    }
    if let Err(e) = check_version(headers) {
        return error(&call.id, &e);
    }
    match answer(app, workflow, who, &call).await {
        Ok(Answer::Json(result)) => body::json(
            200,
            &json!({ "result": result, "id": call.id, "jsonrpc": "2.0" }),
        ),
        Ok(Answer::Stream(watch, first, opening)) => {
            stream_response(app, watch, first, opening, Framing::JsonRpc(call.id))
        }
        Ok(Answer::StreamOnce(task)) => once_response(task, Framing::JsonRpc(call.id)),
        Err(e) => error(&call.id, &e),
    }
}

async fn answer(app: &App, workflow: &str, who: &Who, call: &Call) -> Result<Answer, A2aError> {
    let runs = &app.runs;
    let p = &call.params;
    match call.method.as_str() {
        "SendMessage" => ops::send(runs, workflow, who, p, false, app.limits.send_wait).await,
        "SendStreamingMessage" => {
            ops::send(runs, workflow, who, p, true, app.limits.send_wait).await
        }
        "GetTask" => ops::get(runs, workflow, who, p).await,
        "ListTasks" => ops::list(runs, workflow, who, list_query(p)?).await,
        "CancelTask" => ops::cancel(runs, workflow, who, p).await,
        "SubscribeToTask" => ops::subscribe(runs, workflow, who, p).await,
        "GetExtendedAgentCard" => Err(ops::unsupported(Unsupported::ExtendedCard)),
        _ => Err(ops::unsupported(Unsupported::PushNotifications)),
    }
}

/// The A2A 1.0 methods (the four push-configuration methods are answered as unsupported).
pub(crate) fn known(method: &str) -> bool {
    matches!(
        method,
        "SendMessage"
            | "SendStreamingMessage"
            | "GetTask"
            | "ListTasks"
            | "CancelTask"
            | "SubscribeToTask"
            | "GetExtendedAgentCard"
            | "CreateTaskPushNotificationConfig"
            | "GetTaskPushNotificationConfig"
            | "ListTaskPushNotificationConfigs"
            | "DeleteTaskPushNotificationConfig"
    )
}

/// The envelope's checks; an error comes with the id to answer it with.
pub(crate) fn envelope(bytes: &[u8]) -> Result<Call, Refused> {
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| refuse(Value::Null, A2aError::new(ErrorKind::Parse, e.to_string())))?;
    let object = match value {
        Value::Object(o) => o,
        Value::Array(_) => {
            let e = A2aError::new(
                ErrorKind::InvalidRequest,
                "Batch requests are not supported",
            );
            return Err(refuse(Value::Null, e));
        }
        other => {
            let e = A2aError::invalid_request(format!("a request is a JSON object, got {other}"));
            return Err(refuse(Value::Null, e));
        }
    };
    let id = request_id(&object)?;
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        let e = A2aError::new(
            ErrorKind::InvalidRequest,
            "Invalid request: 'jsonrpc' must be exactly '2.0'",
        );
        return Err(refuse(id, e));
    }
    let method = match object.get("method") {
        Some(Value::String(m)) => m.clone(),
        Some(_) => {
            let e = A2aError::invalid_request("'method' must be a string");
            return Err(refuse(id, e));
        }
        None => {
            let e = A2aError::invalid_request("Missed fields: {'method'}");
            return Err(refuse(id, e));
        }
    };
    let params = match object.get("params") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(p @ Value::Object(_)) => p.clone(),
        Some(Value::String(s)) => {
            let e = A2aError::invalid_request(format!("Incorrect params {s}"));
            return Err(refuse(id, e));
        }
        Some(other) => {
            let e = A2aError::invalid_request(format!("Incorrect params {other}"));
            return Err(refuse(id, e));
        }
    };
    Ok(Call { id, method, params })
}

/// The request id: a string, an integer or null (absent means null).
fn request_id(object: &Map<String, Value>) -> Result<Value, Refused> {
    match object.get("id") {
        None => Ok(Value::Null),
        Some(id @ (Value::String(_) | Value::Null)) => Ok(id.clone()),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Ok(Value::Number(n.clone())),
        Some(_) => Err(refuse(
            Value::Null,
            A2aError::new(
                ErrorKind::InvalidRequest,
                "Invalid request: id must be a string, integer, or null",
            ),
        )),
    }
}

fn refuse(id: Value, e: A2aError) -> Refused {
    Box::new((id, e))
}

/// A JSON-RPC error response (HTTP 200, as the SDK answers; 401 for missing credentials).
pub(crate) fn error(id: &Value, e: &A2aError) -> Response<Body> {
    body::json(e.kind.jsonrpc_http_status(), &e.jsonrpc_response(id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(bytes: &str) -> Option<String> {
        envelope(bytes.as_bytes())
            .err()
            .map(|refused| refused.1.jsonrpc_response(&refused.0).to_string())
    }

    #[test]
    fn envelope_errors_are_the_sdk_bodies() {
        assert_eq!(
            refused(r#"[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]"#).as_deref(),
            Some(
                r#"{"error":{"code":-32600,"message":"Batch requests are not supported","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"INVALID_REQUEST","domain":"a2a-protocol.org","metadata":{}}]},"id":null,"jsonrpc":"2.0"}"#
            )
        );
        assert_eq!(
            refused(r#"{"jsonrpc":"2.0","id":106,"method":"GetTask","params":"oops"}"#).as_deref(),
            Some(
                r#"{"error":{"code":-32600,"message":"Invalid Request","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"INVALID_REQUEST","domain":"a2a-protocol.org","metadata":{"parseError":"Incorrect params oops"}}]},"id":106,"jsonrpc":"2.0"}"#
            )
        );
        assert_eq!(
            refused(r#"{"jsonrpc":"1.0","id":117,"method":"GetTask"}"#).as_deref(),
            Some(
                r#"{"error":{"code":-32600,"message":"Invalid request: 'jsonrpc' must be exactly '2.0'","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"INVALID_REQUEST","domain":"a2a-protocol.org","metadata":{}}]},"id":117,"jsonrpc":"2.0"}"#
            )
        );
    }
}
