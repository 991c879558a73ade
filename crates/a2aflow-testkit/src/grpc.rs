//! The gRPC door: `POST /lf.a2a.v1.A2AService/{Method}` (HTTP/2) on the server's one listener.
//! gRPC paths name no agent, so the agent is the request's `tenant` (the card's `GRPC` interface
//! carries it). The same operations, checks, request log and answer faults as the other
//! bindings; answers are gRPC messages (the official `a2a-pb` stubs and conversions), errors a
//! status with a `google.rpc.Status` (ErrorInfo) in `grpc-status-details-bin`.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use a2a_pb::pbconv;
use base64::Engine as _;
use bytes::{BufMut, Bytes, BytesMut};
use futures_util::stream;
use http::{HeaderMap, HeaderValue, Request, Response, header};
use http_body::Frame;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use prost::Message as _;
use serde_json::Value;
use tonic_types::{ErrorDetail, StatusExt as _};

use crate::body::{self, Body, BodyError, SseSource};
use crate::dispatch::{gate, refused, requested_extensions};
use crate::fault::{Fault, Route};
use crate::ops::{self, AgentRuntime, OpEnv, OpOutput};
use crate::request_log::RecordedRequest;
use crate::server::Shared;
use crate::spec::Binding;
use crate::store::LogEvent;
use crate::wire_error::{A2aError, ErrorKind};

/// The service's path prefix.
pub(crate) const PREFIX: &str = "/lf.a2a.v1.A2AService/";

/// Largest request message accepted.
const MAX_REQUEST: usize = 16 * 1024 * 1024;
/// Longest a `NeverAnswer` fault holds a call (the server stopping ends it sooner).
const MAX_HOLD: Duration = Duration::from_secs(600);

/// A served method.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Method {
    Send,
    Stream,
    Get,
    List,
    Cancel,
    Subscribe,
    ExtendedCard,
}

impl Method {
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "SendMessage" => Method::Send,
            "SendStreamingMessage" => Method::Stream,
            "GetTask" => Method::Get,
            "ListTasks" => Method::List,
            "CancelTask" => Method::Cancel,
            "SubscribeToTask" => Method::Subscribe,
            "GetExtendedAgentCard" => Method::ExtendedCard,
            _ => return None,
        })
    }

    fn route(self) -> Route {
        match self {
            Method::Send => Route::Send,
            Method::Stream => Route::Stream,
            Method::Get => Route::Get,
            Method::List => Route::List,
            Method::Cancel => Route::Cancel,
            Method::Subscribe => Route::Subscribe,
            Method::ExtendedCard => Route::ExtendedCard,
        }
    }
}

/// The gRPC code of a status name.
fn code_of(name: &str) -> i32 {
    match name {
        "INVALID_ARGUMENT" => 3,
        "NOT_FOUND" => 5,
        "FAILED_PRECONDITION" => 9,
        "UNIMPLEMENTED" => 12,
        "INTERNAL" => 13,
        "UNAUTHENTICATED" => 16,
        _ => 2,
    }
}

/// `grpc-message`: percent-encoded outside printable ASCII (and `%`).
fn grpc_message(text: &str) -> HeaderValue {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if (0x20..0x7f).contains(&b) && b != b'%' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    HeaderValue::from_str(&out).unwrap_or_else(|_| HeaderValue::from_static("error"))
}

/// The status headers (trailers) of an ending call.
fn status_headers(code: i32, message: &str, details: Option<&A2aError>) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("grpc-status", HeaderValue::from(code));
    if !message.is_empty() {
        h.insert("grpc-message", grpc_message(message));
    }
    if let Some(e) = details {
        let metadata: std::collections::HashMap<String, String> = e
            .metadata
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (k.clone(), v)
            })
            .collect();
        let info =
            tonic_types::ErrorInfo::new(e.kind.reason(), crate::wire_error::ERROR_DOMAIN, metadata);
        let status = tonic::Status::with_error_details_vec(
            tonic::Code::from_i32(code),
            message,
            [ErrorDetail::ErrorInfo(info)],
        );
        let bin = base64::engine::general_purpose::STANDARD_NO_PAD.encode(status.details());
        if let Ok(v) = HeaderValue::from_str(&bin) {
            h.insert("grpc-status-details-bin", v);
        }
    }
    h
}

fn grpc_response(body: Body) -> Response<Body> {
    let mut r = Response::new(body);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    r
}

/// A trailers-only answer: the status in the head, no message.
fn status_only(code: i32, message: &str, details: Option<&A2aError>) -> Response<Body> {
    let mut r = grpc_response(body::full(Bytes::new()));
    r.headers_mut()
        .extend(status_headers(code, message, details));
    r
}

/// The answer to an A2A error.
fn error_answer(e: &A2aError) -> Response<Body> {
    let (_, name) = e.kind.rest_status();
    status_only(code_of(name), &e.message, Some(e))
}

/// One length-prefixed gRPC message.
fn frame(message: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(message.len() + 5);
    b.put_u8(0);
    b.put_u32(u32::try_from(message.len()).unwrap_or(u32::MAX));
    b.put_slice(message);
    b.freeze()
}

/// The message of a request body (one uncompressed gRPC message).
fn message_of(body: &[u8]) -> Result<&[u8], A2aError> {
    let bad = |why: &str| A2aError::new(ErrorKind::InvalidRequest, why);
    if body.len() < 5 {
        return Err(bad("the request holds no gRPC message"));
    }
    if body[0] != 0 {
        return Err(bad("compressed gRPC messages are not served"));
    }
    let len = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
    body.get(5..5 + len)
        .ok_or_else(|| bad("the gRPC message is cut short"))
}

fn invalid(e: impl std::fmt::Display) -> A2aError {
    A2aError::new(ErrorKind::InvalidParams, e.to_string())
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<Value, A2aError> {
    serde_json::to_value(v).map_err(invalid)
}

/// The tenant and the operation's parameters (ProtoJSON, as the other bindings get them).
fn decode(method: Method, message: &[u8]) -> Result<(String, Value), A2aError> {
    Ok(match method {
        Method::Send | Method::Stream => {
            let r = a2a_pb::SendMessageRequest::decode(message).map_err(invalid)?;
            let params = to_json(&pbconv::from_proto_send_message_request(&r))?;
            (r.tenant, params)
        }
        Method::Get => {
            let r = a2a_pb::GetTaskRequest::decode(message).map_err(invalid)?;
            (
                r.tenant.clone(),
                to_json(&pbconv::from_proto_get_task_request(&r))?,
            )
        }
        Method::List => {
            let r = a2a_pb::ListTasksRequest::decode(message).map_err(invalid)?;
            (
                r.tenant.clone(),
                to_json(&pbconv::from_proto_list_tasks_request(&r))?,
            )
        }
        Method::Cancel => {
            let r = a2a_pb::CancelTaskRequest::decode(message).map_err(invalid)?;
            (
                r.tenant.clone(),
                to_json(&pbconv::from_proto_cancel_task_request(&r))?,
            )
        }
        Method::Subscribe => {
            let r = a2a_pb::SubscribeToTaskRequest::decode(message).map_err(invalid)?;
            (
                r.tenant.clone(),
                to_json(&pbconv::from_proto_subscribe_to_task_request(&r))?,
            )
        }
        Method::ExtendedCard => {
            let r = a2a_pb::GetExtendedAgentCardRequest::decode(message).map_err(invalid)?;
            (r.tenant, Value::Null)
        }
    })
}

fn internal(e: impl std::fmt::Display) -> A2aError {
    A2aError::new(
        ErrorKind::Internal,
        format!("cannot encode the answer: {e}"),
    )
}

/// A unary answer value as its gRPC message.
fn encode(method: Method, v: Value) -> Result<Vec<u8>, A2aError> {
    Ok(match method {
        Method::Send => {
            let r: a2a::SendMessageResponse = serde_json::from_value(v).map_err(internal)?;
            pbconv::to_proto_send_message_response(&r).encode_to_vec()
        }
        Method::Get | Method::Cancel => {
            let t: a2a::Task = serde_json::from_value(v).map_err(internal)?;
            pbconv::to_proto_task(&t).encode_to_vec()
        }
        Method::List => {
            let l: a2a::ListTasksResponse = serde_json::from_value(v).map_err(internal)?;
            pbconv::to_proto_list_tasks_response(&l).encode_to_vec()
        }
        Method::ExtendedCard => {
            let c: a2a::AgentCard = serde_json::from_value(v).map_err(internal)?;
            pbconv::to_proto_agent_card(&c).encode_to_vec()
        }
        Method::Stream | Method::Subscribe => {
            return Err(internal("a stream answered a single value"));
        }
    })
}

/// A unary success: the message, then the OK trailers.
fn unary(message: Bytes) -> Response<Body> {
    let frames = [
        Ok(Frame::data(message)),
        Ok(Frame::trailers(status_headers(0, "", None))),
    ];
    grpc_response(body::from_frames(stream::iter(frames)))
}

/// One stream event as its gRPC frame.
fn stream_frame(payload: &Value) -> Result<Bytes, A2aError> {
    let event: a2a::StreamResponse = serde_json::from_value(payload.clone()).map_err(internal)?;
    Ok(frame(
        &pbconv::to_proto_stream_response(&event).encode_to_vec(),
    ))
}

struct StreamState {
    queue: VecDeque<LogEvent>,
    follow: Option<(
        Arc<crate::store::TaskEntry>,
        usize,
        tokio::sync::watch::Receiver<usize>,
    )>,
    token: tokio_util::sync::CancellationToken,
    fault: Option<Fault>,
    emitted: usize,
    done: bool,
}

/// The frames of a stream: its events, then the trailers (an agent crash ends it INTERNAL).
async fn next_frame(st: &mut StreamState) -> Option<Result<Frame<Bytes>, BodyError>> {
    if st.done {
        return None;
    }
    if let Some(Fault::ResetMidStream { after_events }) = st.fault
        && st.emitted >= after_events
    {
        st.done = true;
        tokio::task::yield_now().await;
        return Some(Err(
            "a2aflow-testkit injected fault: reset mid-stream".into()
        ));
    }
    loop {
        if let Some(event) = st.queue.pop_front() {
            st.emitted += 1;
            return Some(match event {
                LogEvent::Update { payload, closes } => {
                    if closes || (st.follow.is_none() && st.queue.is_empty()) {
                        st.queue.clear();
                        st.follow = None;
                    }
                    match stream_frame(&payload) {
                        Ok(b) => Ok(Frame::data(b)),
                        Err(e) => {
                            st.done = true;
                            Ok(Frame::trailers(status_headers(13, &e.message, Some(&e))))
                        }
                    }
                }
                LogEvent::Crash { message } => {
                    st.done = true;
                    let e = A2aError::new(ErrorKind::Internal, message.as_ref());
                    Ok(Frame::trailers(status_headers(13, &e.message, Some(&e))))
                }
            });
        }
        let Some((entry, cursor, rx)) = st.follow.as_mut() else {
            st.done = true;
            return Some(Ok(Frame::trailers(status_headers(0, "", None))));
        };
        rx.borrow_and_update();
        let events = entry.events_from(*cursor);
        if !events.is_empty() {
            *cursor += events.len();
            st.queue.extend(events);
            continue;
        }
        let token = st.token.clone();
        tokio::select! {
            changed = rx.changed() => if changed.is_err() { st.follow = None },
            () = token.cancelled() => return None,
        }
    }
}

fn streaming(source: SseSource, shared: &Shared, fault: Option<Fault>) -> Response<Body> {
    let state = StreamState {
        queue: source
            .initial
            .into_iter()
            .map(|payload| LogEvent::Update {
                payload: Arc::new(payload),
                closes: false,
            })
            .collect(),
        follow: source.follow.map(|(e, c)| {
            let rx = e.watch();
            (e, c, rx)
        }),
        token: shared.token.clone(),
        fault,
        emitted: 0,
        done: false,
    };
    grpc_response(body::from_frames(stream::unfold(
        state,
        |mut st| async move {
            let f = next_frame(&mut st).await?;
            Some((f, st))
        },
    )))
}

/// The answer a fault puts in place of the agent's, if it does.
async fn faulted(
    fault: Option<&Fault>,
    shared: &Shared,
    parts: &http::request::Parts,
) -> Option<Result<Response<Body>, BodyError>> {
    Some(match fault? {
        Fault::RefuseConnection => Err(refused()),
        Fault::NeverAnswer => {
            tokio::select! {
                () = shared.token.cancelled() => {}
                () = tokio::time::sleep(MAX_HOLD) => {}
            }
            Err(refused())
        }
        Fault::Delay(d) => {
            tokio::select! {
                () = shared.token.cancelled() => return Some(Err(refused())),
                () = tokio::time::sleep(*d) => {}
            }
            return None;
        }
        Fault::ServerError { status } => {
            // A proxy's HTML error page: no gRPC answer at all.
            let mut r = Response::new(body::full(format!(
                "<html><body><h1>{status} Bad Gateway</h1></body></html>\n"
            )));
            *r.status_mut() =
                http::StatusCode::from_u16(*status).unwrap_or(http::StatusCode::BAD_GATEWAY);
            r.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html"));
            Ok(r)
        }
        // Bytes that are no protobuf message of the answer's type.
        Fault::MalformedJson | Fault::WrongTypes => Ok(unary(frame(b"\xff\xff\xff\xff"))),
        Fault::OversizedBody { bytes } => {
            let filler = a2a_pb::Message {
                message_id: "oversized".into(),
                parts: vec![a2a_pb::Part {
                    content: Some(a2a_pb::part::Content::Text("x".repeat(*bytes))),
                    ..a2a_pb::Part::default()
                }],
                ..a2a_pb::Message::default()
            };
            let answer = a2a_pb::SendMessageResponse {
                payload: Some(a2a_pb::send_message_response::Payload::Message(filler)),
            };
            Ok(unary(frame(&answer.encode_to_vec())))
        }
        Fault::RequireAuth(cred) if !cred.accepts(&parts.headers) => {
            Ok(status_only(16, "authentication required", None))
        }
        _ => return None,
    })
}

fn record(
    shared: &Shared,
    agent: &str,
    route: Route,
    parts: &http::request::Parts,
    path: &str,
    params: &Value,
) {
    if !shared.log.enabled() {
        return;
    }
    shared.log.push(RecordedRequest {
        agent: Some(agent.to_owned()),
        route: Some(route),
        method: parts.method.clone(),
        path: path.to_owned(),
        query: None,
        headers: parts.headers.clone(),
        body: Some(params.clone()),
    });
}

/// The agent a gRPC call names by its tenant, when it serves gRPC.
fn agent_of<'s>(shared: &'s Shared, tenant: &str) -> Result<&'s Arc<AgentRuntime>, A2aError> {
    shared
        .agents
        .get(tenant)
        .filter(|a| a.spec.bindings.contains(&Binding::Grpc))
        .ok_or_else(|| {
            A2aError::new(
                ErrorKind::MethodNotFound,
                format!("no agent serves gRPC under the tenant \"{tenant}\""),
            )
        })
}

/// Serves one gRPC call.
pub(crate) async fn handle(
    shared: Arc<Shared>,
    req: Request<Incoming>,
) -> Result<Response<Body>, BodyError> {
    let path = req.uri().path().to_owned();
    let Some(method) = path.strip_prefix(PREFIX).and_then(Method::parse) else {
        return Ok(status_only(12, "method not served", None));
    };
    let (parts, incoming) = req.into_parts();
    let bytes = match Limited::new(incoming, MAX_REQUEST).collect().await {
        Ok(c) => c.to_bytes(),
        Err(_) => return Ok(status_only(8, "request too large", None)),
    };
    let (tenant, params) = match message_of(&bytes).and_then(|m| decode(method, m)) {
        Ok(x) => x,
        Err(e) => return Ok(error_answer(&e)),
    };
    let agent = match agent_of(&shared, &tenant) {
        Ok(a) => Arc::clone(a),
        Err(e) => return Ok(error_answer(&e)),
    };
    let route = method.route();
    record(&shared, &agent.spec.name, route, &parts, &path, &params);
    let fault = agent.faults.take(route);
    if let Some(answer) = faulted(fault.as_ref(), &shared, &parts).await {
        return answer;
    }
    if let Some(cred) = &agent.spec.auth
        && !cred.accepts(&parts.headers)
    {
        return Ok(status_only(16, "authentication required", None));
    }
    let requested = requested_extensions(&parts.headers);
    if let Err(e) = gate(&agent, &parts.headers, &requested) {
        return Ok(error_answer(&e));
    }
    let env = OpEnv {
        agent: &agent,
        scripts: &shared.scripts,
        token: &shared.token,
        binding: Binding::Grpc,
        requested_extensions: requested,
    };
    let result = match method {
        Method::Send => ops::send(&env, &params, false).await,
        Method::Stream => ops::send(&env, &params, true).await,
        Method::Get => ops::get(&env, &params),
        Method::List => ops::list(&env, &params),
        Method::Cancel => ops::cancel(&env, &params),
        Method::Subscribe => ops::subscribe(&env, &params),
        Method::ExtendedCard => ops::extended_card(&env),
    };
    Ok(match result {
        Err(e) => error_answer(&e),
        Ok(OpOutput::Stream(source)) => streaming(source, &shared, fault),
        Ok(OpOutput::Json(mut v)) => {
            if let Some(f @ Fault::ForeignIds { .. }) = &fault {
                f.rewrite_ids(&mut v);
            }
            match encode(method, v) {
                Ok(message) => unary(frame(&message)),
                Err(e) => error_answer(&e),
            }
        }
    })
}
