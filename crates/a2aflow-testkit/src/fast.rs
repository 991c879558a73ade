//! A peer with canned answers, for measuring the client: every `SendMessage` (JSON-RPC,
//! HTTP+JSON or gRPC) is answered at once with a COMPLETED task whose body was serialised when the peer
//! started; per request only the ids are put in (the request's context id, a fresh task id and,
//! on JSON-RPC, the request id). No task store, no scripts, no request log, no faults, no
//! version or extension checks: what it costs per request is reading the request and writing the
//! answer, so the client under test is what a benchmark against it measures.
//!
//! Routes: `GET /.well-known/agent-card.json` (JSON-RPC first, then HTTP+JSON), `POST /jsonrpc`
//! (method `SendMessage`; any other method gets JSON-RPC `-32601`), `POST /rest/message:send`.
//! Anything else is 404. The gRPC door (`lf.a2a.v1.A2AService`, the `fast_grpc` module) listens
//! on a port of its own; the card lists it third.

use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use bytes::{BufMut, Bytes, BytesMut};
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::error::TestkitError;
use crate::spec::{AgentSpec, Binding, build_card};

/// Largest request body the peer reads.
const MAX_REQUEST_BODY: usize = 1024 * 1024;
/// Where the task id goes in the canned task (a JSON string, quotes included).
const TASK_ID_SLOT: &str = "\"@@task-id@@\"";
/// Where the context id goes in the canned task.
const CONTEXT_ID_SLOT: &str = "\"@@context-id@@\"";

/// The canned COMPLETED task, its ids `id` and `context`.
fn task_json(id: &str, context: &str) -> Value {
    json!({
        "id": id,
        "contextId": context,
        "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-01-01T00:00:00Z"},
        "artifacts": [{
            "artifactId": "answer",
            "name": "answer",
            "parts": [{"text": "done"}],
        }],
    })
}

/// The canned task as a2a-lf's type, its ids empty (for the gRPC door).
#[allow(clippy::expect_used)] // a fixed literal, checked by the fast peer's tests
pub(crate) fn canned_task() -> a2a::Task {
    serde_json::from_value(task_json("", "")).expect("the canned task is an A2A task")
}

/// The canned task, cut where the ids go: `head` task id `middle` context id `tail`.
struct Canned {
    head: Bytes,
    middle: Bytes,
    tail: Bytes,
}

impl Canned {
    /// `prefix` + the COMPLETED task + `suffix`, cut at the id slots.
    fn new(prefix: &str, suffix: &str) -> Canned {
        let task = task_json("@@task-id@@", "@@context-id@@");
        let text = format!("{prefix}{task}{suffix}");
        // Both slots are in the serialised task, the task id first (the `json!` order above,
        // kept by `preserve_order`); a missing slot would leave the whole text as `head`.
        let (head, rest) = text.split_once(TASK_ID_SLOT).unwrap_or((&text, ""));
        let (middle, tail) = rest.split_once(CONTEXT_ID_SLOT).unwrap_or((rest, ""));
        Canned {
            head: Bytes::copy_from_slice(head.as_bytes()),
            middle: Bytes::copy_from_slice(middle.as_bytes()),
            tail: Bytes::copy_from_slice(tail.as_bytes()),
        }
    }

    /// The answer for one request, `trailer` written after the canned text (the JSON-RPC id).
    fn answer(&self, task_id: u64, context_id: &str, trailer: &[u8]) -> Bytes {
        let mut out = BytesMut::with_capacity(
            self.head.len() + self.middle.len() + self.tail.len() + trailer.len() + 96,
        );
        out.put_slice(&self.head);
        out.put_slice(format!("\"fast-{task_id}\"").as_bytes());
        out.put_slice(&self.middle);
        // The request's context id is written escaped (serialising a `str` cannot fail).
        let _ = serde_json::to_writer((&mut out).writer(), context_id);
        out.put_slice(&self.tail);
        out.put_slice(trailer);
        out.freeze()
    }
}

/// What the peer reads of a request: the message's context id (the rest is skipped unparsed).
#[derive(Deserialize)]
struct SendParams<'a> {
    #[serde(borrow, default)]
    message: Option<MessageIds<'a>>,
}

#[derive(Deserialize)]
struct MessageIds<'a> {
    #[serde(rename = "contextId", borrow, default)]
    context_id: Option<Cow<'a, str>>,
}

/// A JSON-RPC request: its id, method and params.
#[derive(Deserialize)]
struct RpcRequest<'a> {
    #[serde(default)]
    id: Value,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow)]
    params: Option<SendParams<'a>>,
}

/// What every door of the peer shares: the canned answers and the counters.
pub(crate) struct Shared {
    card: Bytes,
    /// `{"jsonrpc":"2.0","result":{"task":` … `}`, then `,"id":<id>}`.
    jsonrpc: Canned,
    /// `{"task":` … `}`.
    rest: Canned,
    next_task: AtomicU64,
    sends: AtomicUsize,
    pub(crate) connections: AtomicUsize,
}

/// A running canned-answer peer on `127.0.0.1`; stops on [`FastPeer::shutdown`] or drop.
#[derive(Debug)]
pub struct FastPeer {
    addr: SocketAddr,
    base_url: String,
    grpc_url: String,
    token: CancellationToken,
    conns: TaskTracker,
    shared: Arc<SharedHandle>,
}

/// The counters a [`FastPeer`] exposes (kept apart so that `Debug` stays short).
struct SharedHandle(Arc<Shared>);

impl std::fmt::Debug for SharedHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FastPeer")
            .field("sends", &self.0.sends.load(Ordering::Relaxed))
            .finish()
    }
}

impl FastPeer {
    /// Binds `127.0.0.1:0` and starts serving.
    pub async fn spawn() -> Result<FastPeer, TestkitError> {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(TestkitError::Bind)?;
        let addr = listener.local_addr().map_err(TestkitError::Bind)?;
        let base_url = format!("http://{addr}");
        let token = CancellationToken::new();
        let conns = TaskTracker::new();
        let grpc = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(TestkitError::Bind)?;
        let grpc_url = format!("http://{}", grpc.local_addr().map_err(TestkitError::Bind)?);
        let shared = Arc::new(Shared {
            card: card(&base_url, &grpc_url),
            jsonrpc: Canned::new("{\"jsonrpc\":\"2.0\",\"result\":{\"task\":", "}"),
            rest: Canned::new("{\"task\":", "}"),
            next_task: AtomicU64::new(1),
            sends: AtomicUsize::new(0),
            connections: AtomicUsize::new(0),
        });
        crate::fast_grpc::serve(grpc, shared.clone(), token.clone(), &conns);
        tokio::spawn(accept_loop(
            listener,
            shared.clone(),
            token.clone(),
            conns.clone(),
        ));
        Ok(FastPeer {
            addr,
            base_url,
            grpc_url,
            token,
            conns,
            shared: Arc::new(SharedHandle(shared)),
        })
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The agent card's URL.
    pub fn card_url(&self) -> String {
        format!("{}/.well-known/agent-card.json", self.base_url)
    }

    /// The JSON-RPC endpoint.
    pub fn jsonrpc_url(&self) -> String {
        format!("{}/jsonrpc", self.base_url)
    }

    /// The HTTP+JSON base URL (`…/message:send` under it).
    pub fn rest_url(&self) -> String {
        format!("{}/rest", self.base_url)
    }

    /// The gRPC interface's URL (`http://127.0.0.1:PORT`, plaintext; its own listener).
    pub fn grpc_url(&self) -> String {
        self.grpc_url.clone()
    }

    /// SendMessage requests answered so far (every binding).
    pub fn sends(&self) -> usize {
        self.shared.0.sends.load(Ordering::Relaxed)
    }

    /// Connections accepted so far (every door).
    pub fn total_connections(&self) -> usize {
        self.shared.0.connections.load(Ordering::Relaxed)
    }

    /// Stops accepting, closes the connections and waits for them (at most
    /// [`SHUTDOWN_TIMEOUT`](crate::SHUTDOWN_TIMEOUT)).
    pub async fn shutdown(&self) -> Result<(), TestkitError> {
        self.token.cancel();
        self.conns.close();
        tokio::time::timeout(crate::SHUTDOWN_TIMEOUT, self.conns.wait())
            .await
            .map_err(|_| TestkitError::ShutdownTimeout(crate::SHUTDOWN_TIMEOUT))
    }
}

/// The card: JSON-RPC first, then HTTP+JSON at `base_url`, then gRPC at `grpc_url`.
fn card(base_url: &str, grpc_url: &str) -> Bytes {
    let spec = AgentSpec::new("fast")
        .description("canned COMPLETED answers")
        // It answers SendMessage only: a client must not pick SendStreamingMessage.
        .streaming(false)
        .bindings(&[Binding::JsonRpc, Binding::HttpJson, Binding::Grpc]);
    let mut card = build_card(&spec, base_url);
    if let Some(grpc) = card
        .get_mut("supportedInterfaces")
        .and_then(Value::as_array_mut)
        .and_then(|interfaces| interfaces.get_mut(2))
    {
        grpc["url"] = Value::from(grpc_url);
    }
    Bytes::from(serde_json::to_vec(&card).unwrap_or_default())
}

impl Drop for FastPeer {
    fn drop(&mut self) {
        self.token.cancel();
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    token: CancellationToken,
    conns: TaskTracker,
) {
    loop {
        let stream = tokio::select! {
            r = listener.accept() => match r {
                Ok((s, _)) => s,
                Err(_) => {
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                }
            },
            () = token.cancelled() => return,
        };
        let _ = stream.set_nodelay(true);
        shared.connections.fetch_add(1, Ordering::Relaxed);
        let shared = shared.clone();
        let token = token.clone();
        conns.spawn(async move {
            let svc = service_fn(move |req| answer(shared.clone(), req));
            let builder = auto::Builder::new(TokioExecutor::new());
            let conn = builder.serve_connection(TokioIo::new(stream), svc);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                () = token.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(crate::SHUTDOWN_TIMEOUT, conn).await;
                }
            }
        });
    }
}

type Answer = Result<Response<Full<Bytes>>, std::convert::Infallible>;

fn respond(status: StatusCode, content_type: &'static str, body: Bytes) -> Answer {
    let mut r = Response::new(Full::new(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    Ok(r)
}

fn json_answer(body: Bytes) -> Answer {
    respond(StatusCode::OK, "application/json", body)
}

fn not_found() -> Answer {
    respond(
        StatusCode::NOT_FOUND,
        "text/plain; charset=utf-8",
        Bytes::from_static(b"not found"),
    )
}

async fn answer(shared: Arc<Shared>, req: Request<Incoming>) -> Answer {
    let get = req.method() == Method::GET;
    let post = req.method() == Method::POST;
    match req.uri().path() {
        "/.well-known/agent-card.json" if get => json_answer(shared.card.clone()),
        "/jsonrpc" if post => match read_body(req).await {
            Some(body) => jsonrpc(&shared, &body),
            None => bad_request(),
        },
        "/rest/message:send" | "/rest/message%3Asend" if post => match read_body(req).await {
            Some(body) => rest(&shared, &body),
            None => bad_request(),
        },
        _ => not_found(),
    }
}

fn bad_request() -> Answer {
    respond(
        StatusCode::BAD_REQUEST,
        "text/plain; charset=utf-8",
        Bytes::from_static(b"unreadable request body"),
    )
}

/// The request body, at most [`MAX_REQUEST_BODY`] bytes (`None` when longer or broken).
async fn read_body(req: Request<Incoming>) -> Option<Bytes> {
    Limited::new(req.into_body(), MAX_REQUEST_BODY)
        .collect()
        .await
        .ok()
        .map(|b| b.to_bytes())
}

/// A fresh task id, and the context id of the request (a new one when it names none).
pub(crate) fn ids<'a>(shared: &Shared, context_id: Option<Cow<'a, str>>) -> (u64, Cow<'a, str>) {
    shared.sends.fetch_add(1, Ordering::Relaxed);
    let task = shared.next_task.fetch_add(1, Ordering::Relaxed);
    let context = context_id.unwrap_or_else(|| Cow::Owned(format!("fast-context-{task}")));
    (task, context)
}

fn jsonrpc(shared: &Shared, body: &[u8]) -> Answer {
    let Ok(request) = serde_json::from_slice::<RpcRequest<'_>>(body) else {
        return json_answer(Bytes::from_static(
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
        ));
    };
    let message = request.params.and_then(|p| p.message);
    let (Some(message), "SendMessage") = (message, request.method.as_ref()) else {
        let reply = json!({"jsonrpc": "2.0", "id": request.id,
            "error": {"code": -32601, "message": "the fast peer answers SendMessage only"}});
        return json_answer(Bytes::from(reply.to_string()));
    };
    let (task, context) = ids(shared, message.context_id);
    let trailer = format!(",\"id\":{}}}", request.id);
    json_answer(shared.jsonrpc.answer(task, &context, trailer.as_bytes()))
}

fn rest(shared: &Shared, body: &[u8]) -> Answer {
    let message = serde_json::from_slice::<SendParams<'_>>(body)
        .ok()
        .and_then(|p| p.message);
    let Some(message) = message else {
        return respond(
            StatusCode::BAD_REQUEST,
            "application/json",
            Bytes::from_static(
                br#"{"error":{"code":400,"status":"INVALID_ARGUMENT","message":"not a SendMessageRequest"}}"#,
            ),
        );
    };
    let (task, context) = ids(shared, message.context_id);
    json_answer(shared.rest.answer(task, &context, b""))
}
