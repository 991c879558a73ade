//! Shared set-up: a host ControlPoint, the served workflow, a started server, clients.

#![allow(dead_code)]

use a2a::{CancelTaskRequest, GetTaskRequest};
use a2aflow::RunStore;
use a2aflow::kernel::{CallbackError, ControlPoint};
use a2aflow::model::Failure;
use a2aflow::model::{LoadOptions, Output, TaskRequest, TaskResult, Workflow, load_workflow_str};
use a2aflow::protocol::grpc::Schemeless;
use a2aflow::protocol::{
    Binding, CallOptions, HttpClient, RequestHeaders, Transport, connect_interface_with,
    select_interface,
};
use a2aflow::store_sqlite::SqliteStore;
use a2aflow_server::{Limits, Server, ServerBuilder, ServerHandle};
use http::{HeaderMap, HeaderName, HeaderValue, Uri};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A guard against a hang; never an assertion about timing.
pub const HANG: Duration = Duration::from_secs(30);

/// The host: answers the one SELF_LOOP step with `{"echo": <runtime intent>}`; an intent
/// starting with `slow` waits (until the run is cancelled), one starting with `fail` fails.
#[derive(Default)]
pub struct Host {
    pub intents: Mutex<Vec<Option<String>>>,
}

#[async_trait::async_trait]
impl ControlPoint for Host {
    async fn on_self_task(&self, request: TaskRequest) -> Result<TaskResult, CallbackError> {
        let intent = request.workflow_input.runtime_intent.clone();
        self.intents
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(intent.clone());
        let text = intent.unwrap_or_default();
        if text.starts_with("slow") {
            tokio::time::sleep(HANG).await;
        }
        if text.starts_with("fail") {
            return Err(CallbackError::Other("the host was asked to fail".into()));
        }
        Ok(TaskResult {
            outputs: vec![Output::data(json!({ "echo": text }))],
        })
    }
}

/// The served workflow `echo` (one SELF_LOOP step).
pub fn workflow(name: &str) -> Workflow {
    let text = json!({
        "id": format!("{name}-id"),
        "name": name,
        "description": "Echoes its input.",
        "steps": [{ "name": "answer", "type": "SELF_LOOP", "subtasks": [{ "description": "echo" }] }]
    })
    .to_string();
    match load_workflow_str(&text, LoadOptions::default()) {
        Ok(loaded) => loaded.workflow,
        Err(e) => panic!("test workflow does not load: {e:?}"),
    }
}

/// A builder serving `echo` with `host`.
pub fn builder(host: Arc<Host>) -> ServerBuilder {
    Server::builder()
        .workflow(workflow("echo"))
        .control_point(host)
}

/// A started server serving `echo`, and its host.
pub async fn serve() -> (ServerHandle, Arc<Host>) {
    serve_with(Limits::default()).await
}

/// [`serve`] with `limits`.
pub async fn serve_with(limits: Limits) -> (ServerHandle, Arc<Host>) {
    let host = Arc::new(Host::default());
    let server = builder(host.clone()).limits(limits).start().await;
    match server {
        Ok(server) => (server, host),
        Err(e) => panic!("server does not start: {e}"),
    }
}

/// a2aflow's own transport for agent `name` of `server`, on `binding`.
pub async fn client(server: &ServerHandle, name: &str, binding: Binding) -> Arc<dyn Transport> {
    let http = HttpClient::builder().build().expect("http client");
    client_with(server, name, binding, &http).await
}

/// [`client`] on `http` (its headers hook, its limits). The card's `host:port` gRPC interface
/// is reached in the clear, as for an agent configured at the server's plain `http` card URL.
pub async fn client_with(
    server: &ServerHandle,
    name: &str,
    binding: Binding,
    http: &HttpClient,
) -> Arc<dyn Transport> {
    let url = server.card_url(name).expect("served");
    let card = http
        .fetch_agent_card(&url, &CallOptions::default())
        .await
        .expect("card");
    let (binding, interface) = select_interface(&card, &[binding]).expect("the binding is served");
    connect_interface_with(binding, interface, http, Schemeless::Plaintext).expect("transport")
}

/// One caller's credentials, as a header (gRPC: metadata) on every request.
struct Credential(&'static str, &'static str);

#[async_trait::async_trait]
impl RequestHeaders for Credential {
    async fn headers_for(&self, _: &Uri) -> Result<HeaderMap, Failure> {
        let mut h = HeaderMap::new();
        h.insert(
            HeaderName::from_static(self.0),
            HeaderValue::from_static(self.1),
        );
        Ok(h)
    }
}

/// A client sending header `name` (lower case) with `value` on every request.
pub fn as_caller(name: &'static str, value: &'static str) -> HttpClient {
    HttpClient::builder()
        .request_headers(Arc::new(Credential(name, value)))
        .build()
        .unwrap()
}

/// A user message with `text`.
pub fn message(text: &str) -> a2a::Message {
    a2a::Message::new(a2a::Role::User, vec![a2a::Part::text(text)])
}

/// A send request for `message`.
pub fn send(message: a2a::Message, return_immediately: bool) -> a2a::SendMessageRequest {
    a2a::SendMessageRequest {
        message,
        configuration: Some(a2a::SendMessageConfiguration {
            accepted_output_modes: None,
            task_push_notification_config: None,
            history_length: None,
            return_immediately: Some(return_immediately),
        }),
        metadata: None,
        tenant: None,
    }
}

/// A raw HTTP/1.1 exchange: the status, the content type and the body.
pub struct Raw {
    pub status: u16,
    pub content_type: String,
    pub body: String,
}

impl Raw {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

/// Sends `method path` with `headers` and `body` over a fresh connection (`Connection: close`).
pub async fn raw(
    server: &ServerHandle,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Raw {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(server.local_addr())
            .await
            .expect("connect");
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n",
            server.local_addr(),
            body.len()
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).await.expect("write");
        stream.write_all(body).await.expect("write body");
        let mut bytes = Vec::new();
        stream.read_to_end(&mut bytes).await.expect("read");
        bytes
    };
    let bytes = tokio::time::timeout(HANG, exchange).await.expect("no hang");
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let content_type = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_owned())
        })
        .unwrap_or_default();
    let body = dechunk(head, body);
    check_task_records(&body);
    Raw {
        status,
        content_type,
        body,
    }
}

/// Checks every task record in a response body (JSON, or each `data:` line of an event stream)
/// against the seed-000 task schema (`schemas/delegation_task.schema.json`); returns how many
/// there were. A task record is any object with `id`, `contextId` and `status` (a status update
/// names its task `taskId`, a message has no `status`).
pub fn check_task_records(body: &str) -> usize {
    let documents: Vec<Value> = match serde_json::from_str::<Value>(body) {
        Ok(json) => vec![json],
        Err(_) => body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect(),
    };
    let mut records = Vec::new();
    for document in &documents {
        task_records(document, &mut records);
    }
    for record in &records {
        if let Err(e) = a2aflow::model::delegation::validate_delegation_task(record) {
            panic!("a served task record does not validate: {e}\n{record:#}");
        }
    }
    records.len()
}

fn task_records<'a>(value: &'a Value, out: &mut Vec<&'a Value>) {
    match value {
        Value::Object(map) => {
            if ["id", "contextId", "status"]
                .iter()
                .all(|k| map.contains_key(*k))
            {
                out.push(value);
            } else {
                map.values().for_each(|v| task_records(v, out));
            }
        }
        Value::Array(items) => items.iter().for_each(|v| task_records(v, out)),
        _ => {}
    }
}

/// The body of a chunked response, joined.
fn dechunk(head: &str, body: &str) -> String {
    if !head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return body.to_owned();
    }
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

/// A JSON-RPC POST to agent `echo` with A2A-Version 1.0.
pub async fn rpc(server: &ServerHandle, body: &Value) -> Raw {
    raw(
        server,
        "POST",
        "/agents/echo/jsonrpc",
        &[("A2A-Version", "1.0"), ("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    )
    .await
}

/// GetTask of `id` (no history, no tenant).
pub fn get(id: &str) -> GetTaskRequest {
    GetTaskRequest {
        id: id.to_owned(),
        history_length: None,
        tenant: None,
    }
}

/// CancelTask of `id`.
pub fn cancel(id: &str) -> CancelTaskRequest {
    CancelTaskRequest {
        id: id.to_owned(),
        metadata: None,
        tenant: None,
    }
}

/// The SQLite store at `path`, opened (created on first use).
pub async fn store(path: &std::path::Path) -> Arc<dyn RunStore> {
    Arc::new(SqliteStore::open(path).await.expect("store"))
}
