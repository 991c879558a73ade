//! The JSON-RPC 2.0 binding: every call is a POST of a JSON-RPC request to the interface URL;
//! streams answer `text/event-stream` whose events carry JSON-RPC responses.

use std::sync::atomic::{AtomicI64, Ordering};

use a2aflow_model::a2a::{
    AgentCard, CancelTaskRequest, GetTaskRequest, ListTasksRequest, ListTasksResponse,
    SendMessageRequest, SendMessageResponse, SubscribeToTaskRequest, Task, methods,
};
use async_trait::async_trait;
use bytes::Bytes;
use http::{Method, Uri};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::binding::Binding;
use crate::envelope::{classify_error_body, remote_error};
use crate::error::TransportError;
use crate::headers::CallOptions;
use crate::http_client::{HttpClient, Outgoing, Reply, parse_uri};
use crate::payload::{RpcFrame, SendResult};
use crate::stream::{Framing, StreamResponseStream, event_stream};
use crate::transport::Transport;

/// A2A over JSON-RPC 2.0.
#[derive(Debug)]
pub struct JsonRpcTransport {
    client: HttpClient,
    url: String,
    uri: Uri,
    tenant: Option<String>,
    next_id: AtomicI64,
}

impl JsonRpcTransport {
    /// A transport posting to `url` (the interface URL); `tenant` is put in every request's
    /// params when the request has none.
    pub fn new(
        client: HttpClient,
        url: &str,
        tenant: Option<String>,
    ) -> Result<Self, TransportError> {
        Ok(JsonRpcTransport {
            client,
            uri: parse_uri(url)?,
            url: url.to_owned(),
            tenant,
            next_id: AtomicI64::new(1),
        })
    }

    fn envelope<P: Serialize>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<(i64, Bytes), TransportError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let fail = |e: serde_json::Error| {
            TransportError::InvalidRequest(format!("cannot encode {method}: {e}"))
        };
        let bytes = match &self.tenant {
            // Without a tenant to add, the params are written straight into the frame.
            None => serde_json::to_vec(&RpcRequest {
                jsonrpc: "2.0",
                id,
                method,
                params,
            }),
            Some(t) => {
                let mut params = serde_json::to_value(params).map_err(fail)?;
                if let Value::Object(map) = &mut params {
                    map.entry("tenant")
                        .or_insert_with(|| Value::String(t.clone()));
                }
                serde_json::to_vec(&RpcRequest {
                    jsonrpc: "2.0",
                    id,
                    method,
                    params: &params,
                })
            }
        }
        .map_err(fail)?;
        Ok((id, Bytes::from(bytes)))
    }

    async fn call<P: Serialize + Sync, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        options: &CallOptions,
    ) -> Result<R, TransportError> {
        let (id, body) = self.envelope(method, params)?;
        let reply = self
            .client
            .unary(
                Outgoing {
                    method: Method::POST,
                    uri: &self.uri,
                    body: Some(body),
                    event_stream: false,
                },
                options,
            )
            .await?;
        decode_response(reply, id, method)
    }

    async fn stream<P: Serialize + Sync>(
        &self,
        method: &str,
        params: &P,
        options: &CallOptions,
    ) -> Result<StreamResponseStream, TransportError> {
        let (_, body) = self.envelope(method, params)?;
        let (incoming, deadline) = self
            .client
            .open_stream(
                Outgoing {
                    method: Method::POST,
                    uri: &self.uri,
                    body: Some(body),
                    event_stream: true,
                },
                options,
            )
            .await?;
        let limits = self.client.limits();
        Ok(event_stream(
            incoming,
            self.client.wire_tap().clone(),
            self.url.clone(),
            Framing::JsonRpc,
            limits.max_sse_event,
            limits.idle_stream_timeout,
            deadline,
        ))
    }
}

/// A JSON-RPC 2.0 request frame, serialised in one pass.
#[derive(Serialize)]
struct RpcRequest<'a, P> {
    jsonrpc: &'static str,
    id: i64,
    method: &'a str,
    params: &'a P,
}

/// Reads a JSON-RPC response: an error envelope (whatever the HTTP status) is the agent's error;
/// otherwise it must be a JSON-RPC 2.0 response to request `id` with a `result` of type `R`.
/// A plain 2xx success is decoded in one pass; anything else takes the checked path below.
fn decode_response<R: DeserializeOwned>(
    reply: Reply,
    id: i64,
    method: &str,
) -> Result<R, TransportError> {
    if reply.status.is_success()
        && let Some(r) = serde_json::from_slice::<RpcFrame<'_, R>>(&reply.body)
            .ok()
            .and_then(|f| f.into_result_for(id))
    {
        return Ok(r);
    }
    let retry_after = reply.retry_after.clone();
    let location = reply.location.clone();
    decode_checked(reply, id, method).map_err(|e| {
        let e = crate::error::with_redirect(e, location.as_deref());
        crate::error::with_retry_after(e, retry_after.as_deref())
    })
}

/// The checked path of [`decode_response`].
fn decode_checked<R: DeserializeOwned>(
    reply: Reply,
    id: i64,
    method: &str,
) -> Result<R, TransportError> {
    let status = reply.status.as_u16();
    let mut v: Value = match serde_json::from_slice(&reply.body) {
        Ok(v) => v,
        Err(e) => {
            return Err(classify_error_body(status, &reply.body).unwrap_or_else(|| {
                TransportError::InvalidResponse(format!("the {method} response is not JSON: {e}"))
            }));
        }
    };
    if let Some(r) = remote_error(&v, Some(status)) {
        return Err(TransportError::Remote(r));
    }
    if let Some(e) = classify_error_body(status, &reply.body) {
        return Err(e);
    }
    if v.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(TransportError::InvalidResponse(format!(
            "the {method} response is not a JSON-RPC 2.0 response"
        )));
    }
    if v.get("id").and_then(Value::as_i64) != Some(id) {
        return Err(TransportError::InvalidResponse(format!(
            "the {method} response answers another request id ({})",
            v.get("id")
                .map(Value::to_string)
                .unwrap_or_else(|| "none".into())
        )));
    }
    if v.get("error").is_some() {
        return Err(TransportError::InvalidResponse(format!(
            "the {method} response has an unreadable error member"
        )));
    }
    let result = match v.get_mut("result") {
        Some(r) => r.take(),
        None => {
            return Err(TransportError::InvalidResponse(format!(
                "the {method} response has neither result nor error"
            )));
        }
    };
    serde_json::from_value(result).map_err(|e| {
        TransportError::InvalidResponse(format!("the {method} result is not valid: {e}"))
    })
}

#[async_trait]
impl Transport for JsonRpcTransport {
    fn binding(&self) -> Binding {
        Binding::JsonRpc
    }

    fn url(&self) -> &str {
        &self.url
    }

    async fn refresh_credentials(&self) -> Result<bool, a2aflow_model::Failure> {
        self.client.refresh_credentials(&self.uri).await
    }

    async fn send_message(
        &self,
        request: &SendMessageRequest,
        options: &CallOptions,
    ) -> Result<SendMessageResponse, TransportError> {
        self.call::<_, SendResult>(methods::SEND_MESSAGE, request, options)
            .await
            .map(|r| r.0)
    }

    async fn send_streaming_message(
        &self,
        request: &SendMessageRequest,
        options: &CallOptions,
    ) -> Result<StreamResponseStream, TransportError> {
        self.stream(methods::SEND_STREAMING_MESSAGE, request, options)
            .await
    }

    async fn get_task(
        &self,
        request: &GetTaskRequest,
        options: &CallOptions,
    ) -> Result<Task, TransportError> {
        self.call(methods::GET_TASK, request, options).await
    }

    async fn list_tasks(
        &self,
        request: &ListTasksRequest,
        options: &CallOptions,
    ) -> Result<ListTasksResponse, TransportError> {
        self.call(methods::LIST_TASKS, request, options).await
    }

    async fn cancel_task(
        &self,
        request: &CancelTaskRequest,
        options: &CallOptions,
    ) -> Result<Task, TransportError> {
        self.call(methods::CANCEL_TASK, request, options).await
    }

    async fn subscribe_to_task(
        &self,
        request: &SubscribeToTaskRequest,
        options: &CallOptions,
    ) -> Result<StreamResponseStream, TransportError> {
        self.stream(methods::SUBSCRIBE_TO_TASK, request, options)
            .await
    }

    async fn get_extended_agent_card(
        &self,
        options: &CallOptions,
    ) -> Result<AgentCard, TransportError> {
        self.call(
            methods::GET_EXTENDED_AGENT_CARD,
            &serde_json::Map::new(),
            options,
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::StatusCode;

    fn reply(status: u16, body: &str) -> Reply {
        Reply {
            status: StatusCode::from_u16(status).unwrap(),
            body: Bytes::from(body.to_owned()),
            retry_after: None,
            location: None,
        }
    }

    #[test]
    fn results_decode_and_ids_must_match() {
        let body = r#"{"result":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}},"id":4,"jsonrpc":"2.0"}"#;
        let t: Task = decode_response(reply(200, body), 4, "GetTask").unwrap();
        assert_eq!(t.id, "t");
        let e = decode_response::<Task>(reply(200, body), 5, "GetTask").unwrap_err();
        assert_eq!(e.code_str(), "a2a.invalid_response");
    }

    #[test]
    fn malformed_envelopes_are_invalid_responses() {
        for body in [
            r#"{"result":{},"id":1,"jsonrpc":"1.0"}"#,
            r#"{"id":1,"jsonrpc":"2.0"}"#,
            r#"{"result":{},"id":1,"jsonrpc":"2.0"}"#,
            r#"{"result":{"task":{},"message":{}},"id":1,"jsonrpc":"2.0"}"#,
            r#"[1,2]"#,
            "not json",
        ] {
            let e = decode_response::<SendMessageResponse>(reply(200, body), 1, "SendMessage")
                .unwrap_err();
            assert_eq!(e.code_str(), "a2a.invalid_response", "{body}");
        }
    }

    #[test]
    fn a_redirect_is_refused_naming_its_target_escaped() {
        let mut r = reply(302, "<html>moved</html>");
        r.location = Some("https://elsewhere.example/rpc\u{202e}txt".into());
        let e = decode_response::<Task>(r, 1, "GetTask").unwrap_err();
        assert_eq!(e.code_str(), "a2a.http_status");
        let text = e.to_string();
        assert!(
            text.starts_with("HTTP 302: redirect to https://elsewhere.example/rpc"),
            "{text}"
        );
        assert!(text.contains("not followed"), "{text}");
        assert!(
            !text.contains('\u{202e}'),
            "the bidi control reached the message: {text}"
        );
        let f = e.to_failure();
        assert_eq!(f.details["httpStatus"], 302);
        assert!(
            f.details["location"]
                .as_str()
                .unwrap()
                .starts_with("https://elsewhere")
        );
        // Without a Location header, and for a long one, the message stays bounded.
        let e = decode_response::<Task>(reply(301, ""), 1, "GetTask").unwrap_err();
        assert!(e.to_string().contains("redirect to (none)"), "{e}");
        let mut r = reply(307, "");
        r.location = Some("x".repeat(10_000));
        assert!(
            decode_response::<Task>(r, 1, "GetTask")
                .unwrap_err()
                .to_string()
                .len()
                < 400
        );
    }

    #[test]
    fn retry_after_reaches_the_failure_on_http_status_errors() {
        let body = r#"{"error":{"code":-32603,"message":"busy"},"id":1,"jsonrpc":"2.0"}"#;
        let mut r = reply(503, body);
        r.retry_after = Some("120".into());
        let e = decode_response::<Task>(r, 1, "GetTask").unwrap_err();
        let f = e.to_failure();
        assert_eq!(f.code, "a2a.internal");
        assert_eq!(f.details["retryAfter"], "120");
        assert_eq!(f.details["retryAfterSecs"], 120);
    }

    #[test]
    fn errors_are_read_whatever_the_status() {
        let body = r#"{"error":{"code":-32009,"message":"v"},"id":1,"jsonrpc":"2.0"}"#;
        for status in [200, 400, 500] {
            let e = decode_response::<Task>(reply(status, body), 1, "GetTask").unwrap_err();
            assert_eq!(e.code_str(), "a2a.version_not_supported");
            assert_eq!(e.remote().unwrap().http_status, Some(status));
        }
        // Python answers parse errors with id null: still the agent's error.
        let body = r#"{"error":{"code":-32700,"message":"x"},"id":null,"jsonrpc":"2.0"}"#;
        assert_eq!(
            decode_response::<Task>(reply(200, body), 9, "GetTask")
                .unwrap_err()
                .code_str(),
            "a2a.parse_error"
        );
        let e = decode_response::<Task>(reply(502, "<html>Bad Gateway</html>"), 1, "GetTask")
            .unwrap_err();
        assert_eq!(e.code_str(), "a2a.http_status");
    }

    #[test]
    fn tenant_goes_into_params_unless_set() {
        let t = JsonRpcTransport::new(
            HttpClient::new().unwrap(),
            "http://h/rpc",
            Some("acme".into()),
        )
        .unwrap();
        let (id, body) = t
            .envelope(
                "GetTask",
                &GetTaskRequest {
                    id: "x".into(),
                    history_length: None,
                    tenant: None,
                },
            )
            .unwrap();
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["params"]["tenant"], "acme");
        assert_eq!(v["id"], id);
        assert_eq!(v["method"], "GetTask");
        let (_, body) = t
            .envelope(
                "GetTask",
                &GetTaskRequest {
                    id: "x".into(),
                    history_length: None,
                    tenant: Some("other".into()),
                },
            )
            .unwrap();
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["params"]["tenant"], "other");
        let (id2, _) = t.envelope("GetTask", &serde_json::Map::new()).unwrap();
        assert!(id2 > id);
    }
}
