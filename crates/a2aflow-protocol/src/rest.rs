//! The HTTP+JSON (REST) binding: `POST /message:send`, `POST /message:stream`, `GET /tasks/{id}`,
//! `GET /tasks`, `POST /tasks/{id}:cancel`, `POST /tasks/{id}:subscribe`,
//! `GET /extendedAgentCard`, relative to the interface URL (and `/{tenant}` when set).

use a2aflow_model::a2a::{
    AgentCard, CancelTaskRequest, GetTaskRequest, ListTasksRequest, ListTasksResponse,
    SendMessageRequest, SendMessageResponse, SubscribeToTaskRequest, Task,
};
use async_trait::async_trait;
use bytes::Bytes;
use http::{Method, Uri};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::binding::Binding;
use crate::error::TransportError;
use crate::headers::CallOptions;
use crate::http_client::{
    HttpClient, Outgoing, Reply, checked_json_reply, decode_json_reply, parse_uri,
};
use crate::stream::{Framing, StreamResponseStream, event_stream};
use crate::transport::Transport;

/// A2A over HTTP+JSON.
#[derive(Debug)]
pub struct RestTransport {
    client: HttpClient,
    url: String,
    /// Interface URL without a trailing slash, plus `/{tenant}` when set.
    base: String,
    /// `base` + `/message:send`, parsed once (every SendMessage posts to it).
    send_uri: Uri,
}

use crate::percent::encode_component as encode;

/// The SendMessage path, under the interface URL.
const SEND_PATH: &str = "/message:send";

/// The query string of a `ListTasks` request (camelCase keys, enum names, RFC 3339 times).
fn list_query(req: &ListTasksRequest) -> Result<String, TransportError> {
    let v = serde_json::to_value(req)
        .map_err(|e| TransportError::InvalidRequest(format!("cannot encode ListTasks: {e}")))?;
    let mut pairs = Vec::new();
    if let serde_json::Value::Object(map) = v {
        for (k, v) in map {
            if k == "tenant" {
                continue;
            }
            let text = match v {
                serde_json::Value::String(s) => s,
                serde_json::Value::Null => continue,
                other => other.to_string(),
            };
            pairs.push(format!("{}={}", encode(&k), encode(&text)));
        }
    }
    Ok(pairs.join("&"))
}

impl RestTransport {
    /// A transport for the interface at `url`; `tenant` prefixes every path when set.
    pub fn new(
        client: HttpClient,
        url: &str,
        tenant: Option<String>,
    ) -> Result<Self, TransportError> {
        parse_uri(url)?;
        let mut base = url.trim_end_matches('/').to_owned();
        if let Some(t) = tenant {
            base.push('/');
            base.push_str(&encode(&t));
        }
        let send_uri = parse_uri(&format!("{base}{SEND_PATH}"))?;
        Ok(RestTransport {
            client,
            url: url.to_owned(),
            base,
            send_uri,
        })
    }

    fn uri(&self, path: &str) -> Result<Uri, TransportError> {
        parse_uri(&format!("{}{path}", self.base))
    }

    fn body<B: Serialize>(body: &B) -> Result<Bytes, TransportError> {
        serde_json::to_vec(body)
            .map(Bytes::from)
            .map_err(|e| TransportError::InvalidRequest(format!("cannot encode the body: {e}")))
    }

    async fn call<R: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
        what: &str,
        options: &CallOptions,
    ) -> Result<R, TransportError> {
        let uri = self.uri(path)?;
        let reply = self.unary(method, &uri, body, options).await?;
        decode_json_reply(reply, what)
    }

    async fn unary(
        &self,
        method: Method,
        uri: &Uri,
        body: Option<Bytes>,
        options: &CallOptions,
    ) -> Result<Reply, TransportError> {
        self.client
            .unary(
                Outgoing {
                    method,
                    uri,
                    body,
                    event_stream: false,
                },
                options,
            )
            .await
    }

    async fn stream(
        &self,
        path: &str,
        body: Bytes,
        options: &CallOptions,
    ) -> Result<StreamResponseStream, TransportError> {
        let uri = self.uri(path)?;
        let (incoming, deadline) = self
            .client
            .open_stream(
                Outgoing {
                    method: Method::POST,
                    uri: &uri,
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
            uri.to_string(),
            Framing::Bare,
            limits.max_sse_event,
            limits.idle_stream_timeout,
            deadline,
        ))
    }
}

/// A SendMessage reply: a plain success in one pass ([`crate::payload`]); anything else, the
/// checked path, whose answer the one pass never changes.
fn decode_send_reply(reply: Reply) -> Result<SendMessageResponse, TransportError> {
    if reply.status.is_success()
        && let Some(response) = crate::payload::bare_send_response(&reply.body)
    {
        return Ok(response);
    }
    checked_json_reply(reply, "SendMessageResponse")
}

#[async_trait]
impl Transport for RestTransport {
    fn binding(&self) -> Binding {
        Binding::HttpJson
    }

    fn url(&self) -> &str {
        &self.url
    }

    async fn refresh_credentials(&self) -> Result<bool, a2aflow_model::Failure> {
        self.client.refresh_credentials(&self.send_uri).await
    }

    async fn send_message(
        &self,
        request: &SendMessageRequest,
        options: &CallOptions,
    ) -> Result<SendMessageResponse, TransportError> {
        let body = Self::body(request)?;
        let reply = self
            .unary(Method::POST, &self.send_uri, Some(body), options)
            .await?;
        decode_send_reply(reply)
    }

    async fn send_streaming_message(
        &self,
        request: &SendMessageRequest,
        options: &CallOptions,
    ) -> Result<StreamResponseStream, TransportError> {
        self.stream("/message:stream", Self::body(request)?, options)
            .await
    }

    async fn get_task(
        &self,
        request: &GetTaskRequest,
        options: &CallOptions,
    ) -> Result<Task, TransportError> {
        let mut path = format!("/tasks/{}", encode(&request.id));
        if let Some(h) = request.history_length {
            path.push_str(&format!("?historyLength={h}"));
        }
        self.call(Method::GET, &path, None, "Task", options).await
    }

    async fn list_tasks(
        &self,
        request: &ListTasksRequest,
        options: &CallOptions,
    ) -> Result<ListTasksResponse, TransportError> {
        let q = list_query(request)?;
        let path = if q.is_empty() {
            "/tasks".to_owned()
        } else {
            format!("/tasks?{q}")
        };
        self.call(Method::GET, &path, None, "ListTasksResponse", options)
            .await
    }

    async fn cancel_task(
        &self,
        request: &CancelTaskRequest,
        options: &CallOptions,
    ) -> Result<Task, TransportError> {
        let path = format!("/tasks/{}:cancel", encode(&request.id));
        let body = Self::body(request)?;
        self.call(Method::POST, &path, Some(body), "Task", options)
            .await
    }

    async fn subscribe_to_task(
        &self,
        request: &SubscribeToTaskRequest,
        options: &CallOptions,
    ) -> Result<StreamResponseStream, TransportError> {
        let path = format!("/tasks/{}:subscribe", encode(&request.id));
        self.stream(&path, Self::body(request)?, options).await
    }

    async fn get_extended_agent_card(
        &self,
        options: &CallOptions,
    ) -> Result<AgentCard, TransportError> {
        self.call(
            Method::GET,
            "/extendedAgentCard",
            None,
            "AgentCard",
            options,
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http_client::may_name_error;
    use a2aflow_model::a2a::TaskState;

    #[test]
    fn ids_and_query_values_are_percent_encoded() {
        assert_eq!(encode("a b/c:d"), "a%20b%2Fc%3Ad");
        assert_eq!(encode("plain-id_1.~"), "plain-id_1.~");
        let q = list_query(&ListTasksRequest {
            context_id: Some("ctx 1".into()),
            status: Some(TaskState::Working),
            page_size: Some(10),
            page_token: None,
            history_length: None,
            status_timestamp_after: None,
            include_artifacts: Some(true),
            tenant: Some("t".into()),
        })
        .unwrap();
        assert_eq!(
            q,
            "contextId=ctx%201&status=TASK_STATE_WORKING&pageSize=10&includeArtifacts=true"
        );
    }

    fn reply(status: u16, body: &str) -> Reply {
        Reply {
            status: http::StatusCode::from_u16(status).unwrap(),
            body: Bytes::from(body.to_owned()),
            retry_after: None,
            location: None,
        }
    }

    /// Bodies where the one pass and the checked path could part: plain answers, error envelopes
    /// (spelled out, escaped, `null`, beside a task), neither member, broken JSON, other statuses.
    const BODIES: [(u16, &str); 11] = [
        (
            200,
            r#"{"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}}"#,
        ),
        (
            200,
            r#"{"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "error"}]}}"#,
        ),
        (
            200,
            r#"{"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}, "error": {"code": 5, "status": "NOT_FOUND", "message": "gone"}}"#,
        ),
        (
            200,
            r#"{"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}, "\u0065rror": {"code": 13, "message": "escaped"}}"#,
        ),
        (
            200,
            r#"{"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}, "error": null}"#,
        ),
        (
            200,
            r#"{"error": {"code": 3, "status": "INVALID_ARGUMENT", "message": "bad"}}"#,
        ),
        (200, r#"{"neither": 1}"#),
        (200, r#"{"task": "#),
        (
            201,
            r#"{"task": {"id": "t2", "contextId": "c", "status": {"state": "TASK_STATE_SUBMITTED"}}}"#,
        ),
        (
            500,
            r#"{"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}}"#,
        ),
        (
            404,
            r#"{"error": {"code": 404, "status": "NOT_FOUND", "message": "no route"}}"#,
        ),
    ];

    #[test]
    fn a_send_reply_decodes_in_one_pass_as_the_checked_path_would() {
        for (status, body) in BODIES {
            let fast = format!("{:?}", decode_send_reply(reply(status, body)));
            let checked = format!(
                "{:?}",
                checked_json_reply::<SendMessageResponse>(
                    reply(status, body),
                    "SendMessageResponse"
                )
            );
            assert_eq!(fast, checked, "{status} {body}");
        }
        // The first body is a plain success, the third an error (the envelope wins).
        assert!(decode_send_reply(reply(BODIES[0].0, BODIES[0].1)).is_ok());
        assert!(decode_send_reply(reply(BODIES[2].0, BODIES[2].1)).is_err());
        assert!(decode_send_reply(reply(BODIES[3].0, BODIES[3].1)).is_err());
    }

    #[test]
    fn a_unary_reply_skips_the_envelope_read_only_when_no_error_member_can_be_there() {
        let task = r#"{"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}"#;
        let tasks = [
            (200, task.to_owned()),
            (
                200,
                task.replace(r#""id""#, r#""error": {"code": 9}, "id""#),
            ),
            (
                200,
                task.replace(r#""id""#, r#""\u0065rror": {"code": 9}, "id""#),
            ),
            (500, task.to_owned()),
        ];
        let bodies = BODIES.iter().map(|(s, b)| (*s, (*b).to_owned()));
        for (status, body) in bodies.chain(tasks) {
            let fast = format!(
                "{:?}",
                decode_json_reply::<Task>(reply(status, &body), "Task")
            );
            let checked = format!(
                "{:?}",
                checked_json_reply::<Task>(reply(status, &body), "Task")
            );
            assert_eq!(fast, checked, "{status} {body}");
        }
        assert!(decode_json_reply::<Task>(reply(200, task), "Task").is_ok());
        assert!(!may_name_error(task.as_bytes()));
        assert!(may_name_error(br#"{"error": 1}"#));
        assert!(may_name_error(br#"{"\u0065rror": 1}"#));
    }

    #[test]
    fn tenant_prefixes_paths() {
        let t = RestTransport::new(
            HttpClient::new().unwrap(),
            "http://h/rest/",
            Some("acme".into()),
        )
        .unwrap();
        assert_eq!(
            t.uri("/tasks/x").unwrap().to_string(),
            "http://h/rest/acme/tasks/x"
        );
        let t = RestTransport::new(HttpClient::new().unwrap(), "http://h/rest", None).unwrap();
        assert_eq!(
            t.uri("/message:send").unwrap().to_string(),
            "http://h/rest/message:send"
        );
        assert!(RestTransport::new(HttpClient::new().unwrap(), "nope", None).is_err());
    }
}
