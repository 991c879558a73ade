//! HTTP in, A2A out: path routing, request log, faults, auth/version/extension checks, and
//! the binding envelopes around the operations.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use serde_json::{Map, Value, json};

use crate::body::{self, Body, BodyError, Framing};
use crate::fault::{Fault, Route};
use crate::ops::{self, AgentRuntime, OpEnv, OpOutput};
use crate::request_log::RecordedRequest;
use crate::server::Shared;
use crate::spec::{Binding, ListTasks};
use crate::wire_error::{A2aError, ErrorKind};

/// Largest request body accepted.
const MAX_REQUEST_BODY: usize = 16 * 1024 * 1024;
/// Longest a `NeverAnswer` fault holds a request (the server stopping ends it sooner).
const MAX_HOLD: Duration = Duration::from_secs(600);

/// What the request asks for.
enum Op {
    Card,
    Send,
    Stream,
    Get,
    List,
    Cancel,
    Subscribe,
    ExtendedCard,
    Push,
    /// Rejected before dispatch (JSON-RPC envelope problems).
    Invalid(A2aError),
}

impl Op {
    fn route(&self) -> Option<Route> {
        Some(match self {
            Op::Card => Route::Card,
            Op::Send => Route::Send,
            Op::Stream => Route::Stream,
            Op::Get => Route::Get,
            Op::List => Route::List,
            Op::Cancel => Route::Cancel,
            Op::Subscribe => Route::Subscribe,
            Op::ExtendedCard => Route::ExtendedCard,
            Op::Push | Op::Invalid(_) => return None,
        })
    }
}

/// The binding envelope of one request.
enum Envelope {
    Card,
    JsonRpc(Value),
    Rest,
}

fn text(status: StatusCode, body: &'static str) -> Response<Body> {
    let mut r = Response::new(body::full(Bytes::from_static(body.as_bytes())));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

fn with_type(status: u16, content_type: &'static str, body: Body) -> Response<Body> {
    let mut r = Response::new(body);
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn json_bytes(v: &Value) -> Bytes {
    Bytes::from(serde_json::to_vec(v).unwrap_or_default())
}

pub(crate) fn refused() -> BodyError {
    "a2aflow-testkit injected fault: connection refused".into()
}

/// Percent-decodes the `:` of custom methods (`%3A`), the only escape A2A paths need.
fn decode_path(path: &str) -> std::borrow::Cow<'_, str> {
    if path.contains('%') {
        std::borrow::Cow::Owned(path.replace("%3A", ":").replace("%3a", ":"))
    } else {
        std::borrow::Cow::Borrowed(path)
    }
}

/// Query string to a JSON object (numbers and booleans typed, repeated keys: last wins).
fn query_params(query: Option<&str>) -> Value {
    let mut m = Map::new();
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let v = v.replace("%3A", ":").replace("%3a", ":").replace('+', " ");
        let value = if let Ok(n) = v.parse::<i64>() {
            Value::from(n)
        } else if v == "true" || v == "false" {
            Value::Bool(v == "true")
        } else {
            Value::String(v)
        };
        m.insert(k.to_owned(), value);
    }
    Value::Object(m)
}

pub(crate) fn requested_extensions(headers: &http::HeaderMap) -> Arc<[String]> {
    headers
        .get_all("a2a-extensions")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Rejects versions whose major is not 1 (a missing header means `0.3`).
fn check_version(headers: &http::HeaderMap) -> Result<(), A2aError> {
    let v = headers
        .get("a2a-version")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .unwrap_or("0.3");
    let major = v.split('.').next().unwrap_or("");
    if major.parse::<u32>() == Ok(1) {
        Ok(())
    } else {
        Err(A2aError::version(v))
    }
}

/// The operation as the agent serves it: ListTasks refused or missing when its spec says so
/// (`None`: a plain 404, the HTTP+JSON answer of a route that does not exist).
fn served(op: Op, list_tasks: ListTasks, envelope: &Envelope) -> Option<Op> {
    if !matches!(op, Op::List) {
        return Some(op);
    }
    match list_tasks {
        ListTasks::Served => Some(op),
        ListTasks::Unsupported => Some(Op::Invalid(A2aError::new(
            ErrorKind::UnsupportedOperation,
            "ListTasks is not supported by the agent",
        ))),
        ListTasks::Absent if matches!(envelope, Envelope::Rest) => None,
        ListTasks::Absent => Some(Op::Invalid(A2aError::new(
            ErrorKind::MethodNotFound,
            "Method not found",
        ))),
    }
}

/// Serves one request.
pub(crate) async fn handle(
    shared: Arc<Shared>,
    req: Request<Incoming>,
) -> Result<Response<Body>, BodyError> {
    if req.uri().path().starts_with(crate::grpc::PREFIX) {
        return crate::grpc::handle(shared, req).await;
    }
    let path = decode_path(req.uri().path()).into_owned();
    let Some(after) = path.strip_prefix("/agents/") else {
        return Ok(text(StatusCode::NOT_FOUND, "Not Found"));
    };
    let (name, rest) = after.split_at(after.find('/').unwrap_or(after.len()));
    let Some(agent) = shared.agents.get(name).cloned() else {
        return Ok(text(StatusCode::NOT_FOUND, "Not Found"));
    };
    let method = req.method().clone();
    let query = req.uri().query().map(str::to_owned);

    enum Endpoint {
        Card,
        JsonRpc,
        Rest(String),
    }
    let endpoint = if rest == "/.well-known/agent-card.json" {
        if method != Method::GET {
            return Ok(text(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed"));
        }
        Endpoint::Card
    } else if rest == "/jsonrpc" && agent.spec.bindings.contains(&Binding::JsonRpc) {
        if method != Method::POST {
            let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST"));
            return Ok(r);
        }
        Endpoint::JsonRpc
    } else if let Some(sub) = rest
        .strip_prefix("/rest")
        .filter(|_| agent.spec.bindings.contains(&Binding::HttpJson))
    {
        Endpoint::Rest(sub.trim_end_matches('/').to_owned())
    } else {
        return Ok(text(StatusCode::NOT_FOUND, "Not Found"));
    };

    let (parts, incoming) = req.into_parts();
    let bytes = match Limited::new(incoming, MAX_REQUEST_BODY).collect().await {
        Ok(c) => c.to_bytes(),
        Err(e) => {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                return Ok(text(StatusCode::PAYLOAD_TOO_LARGE, "Payload Too Large"));
            }
            return Err(e);
        }
    };
    let parsed: Option<Result<Value, serde_json::Error>> =
        (!bytes.is_empty()).then(|| serde_json::from_slice(&bytes));

    let (op, envelope, params) = match &endpoint {
        Endpoint::Card => (Op::Card, Envelope::Card, Value::Null),
        Endpoint::JsonRpc => classify_jsonrpc(parsed.as_ref()),
        Endpoint::Rest(sub) => match classify_rest(&method, sub, parsed.as_ref(), query.as_deref())
        {
            Some(x) => x,
            None => {
                record(&shared, name, None, &parts, &path, &query, parsed.as_ref());
                return Ok(text(StatusCode::NOT_FOUND, "Not Found"));
            }
        },
    };
    let route = op.route();
    record(&shared, name, route, &parts, &path, &query, parsed.as_ref());
    let Some(op) = served(op, agent.spec.list_tasks, &envelope) else {
        return Ok(text(StatusCode::NOT_FOUND, "Not Found"));
    };

    // Faults that replace the answer.
    let fault = route.and_then(|r| agent.faults.take(r));
    let stream_route = route.is_some_and(Route::is_stream);
    match &fault {
        Some(Fault::RefuseConnection) => return Err(refused()),
        Some(Fault::NeverAnswer) => {
            tokio::select! {
                () = shared.token.cancelled() => {}
                () = tokio::time::sleep(MAX_HOLD) => {}
            }
            return Err(refused());
        }
        Some(Fault::Delay(d)) => {
            tokio::select! {
                () = shared.token.cancelled() => return Err(refused()),
                () = tokio::time::sleep(*d) => {}
            }
        }
        Some(Fault::ServerError { status }) => {
            let html = format!(
                "<html><head><title>{status} Bad Gateway</title></head><body><center><h1>{status} Bad Gateway</h1></center><hr><center>nginx</center></body></html>\n"
            );
            return Ok(with_type(*status, "text/html", body::full(html)));
        }
        Some(Fault::MalformedJson) => return Ok(malformed(stream_route)),
        Some(Fault::WrongTypes) => return Ok(wrong_types(&envelope, route)),
        Some(Fault::OversizedBody { bytes }) => return Ok(oversized(&envelope, *bytes)),
        Some(Fault::RequireAuth(cred)) if !cred.accepts(&parts.headers) => {
            return Ok(unauthorized());
        }
        _ => {}
    }
    if !matches!(envelope, Envelope::Card)
        && let Some(cred) = &agent.spec.auth
        && !cred.accepts(&parts.headers)
    {
        return Ok(unauthorized());
    }

    let binding = match envelope {
        Envelope::Rest => Binding::HttpJson,
        _ => Binding::JsonRpc,
    };
    let requested = requested_extensions(&parts.headers);
    let echoed: Option<String> = agent.spec.echo_extensions.then(|| {
        let declared = &agent.spec.extensions;
        requested
            .iter()
            .filter(|r| declared.iter().any(|(uri, _)| uri == *r))
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    });
    let result = match op {
        Op::Card => {
            let mut r = with_type(200, "application/json", body::full(agent.card.clone()));
            r = apply_body_fault(r, fault.as_ref(), &shared);
            return Ok(r);
        }
        Op::Invalid(e) => Err(e),
        _ => {
            let gate = gate(&agent, &parts.headers, &requested);
            match gate {
                Err(e) => Err(e),
                Ok(()) => {
                    let env = OpEnv {
                        agent: &agent,
                        scripts: &shared.scripts,
                        token: &shared.token,
                        binding,
                        requested_extensions: requested.clone(),
                    };
                    match op {
                        Op::Send => ops::send(&env, &params, false).await,
                        Op::Stream => ops::send(&env, &params, true).await,
                        Op::Get => ops::get(&env, &params),
                        Op::List => ops::list(&env, &params),
                        Op::Cancel => ops::cancel(&env, &params),
                        Op::Subscribe => ops::subscribe(&env, &params),
                        Op::ExtendedCard => ops::extended_card(&env),
                        _ => Err(ops::push_not_supported()),
                    }
                }
            }
        }
    };
    let result = match (&fault, result) {
        (Some(f @ Fault::ForeignIds { .. }), Ok(OpOutput::Json(mut v))) => {
            f.rewrite_ids(&mut v);
            Ok(OpOutput::Json(v))
        }
        (_, r) => r,
    };
    let mut response = encode(&envelope, result, &shared, fault.clone());
    if let Some(value) = echoed.filter(|v| !v.is_empty())
        && let Ok(v) = HeaderValue::from_str(&value)
    {
        response.headers_mut().insert("a2a-extensions", v);
    }
    Ok(apply_body_fault(response, fault.as_ref(), &shared))
}

/// Version and required-extension checks.
pub(crate) fn gate(
    agent: &AgentRuntime,
    headers: &http::HeaderMap,
    requested: &[String],
) -> Result<(), A2aError> {
    if agent.checks_version() {
        check_version(headers)?;
    }
    if agent.spec.enforce_required_extensions
        && let Some((uri, _)) = agent
            .spec
            .extensions
            .iter()
            .find(|(uri, required)| *required && !requested.iter().any(|r| r == uri))
    {
        return Err(A2aError::new(
            ErrorKind::ExtensionSupportRequired,
            format!("Required extension not activated: {uri}"),
        ));
    }
    Ok(())
}

fn record(
    shared: &Shared,
    agent: &str,
    route: Option<Route>,
    parts: &http::request::Parts,
    path: &str,
    query: &Option<String>,
    parsed: Option<&Result<Value, serde_json::Error>>,
) {
    if !shared.log.enabled() {
        return;
    }
    shared.log.push(RecordedRequest {
        agent: Some(agent.to_owned()),
        route,
        method: parts.method.clone(),
        path: path.to_owned(),
        query: query.clone(),
        headers: parts.headers.clone(),
        body: parsed.and_then(|r| r.as_ref().ok().cloned()),
    });
}

fn classify_jsonrpc(parsed: Option<&Result<Value, serde_json::Error>>) -> (Op, Envelope, Value) {
    let invalid = |msg: &str, id: Value| {
        (
            Op::Invalid(A2aError::new(ErrorKind::InvalidRequest, msg)),
            Envelope::JsonRpc(id),
            Value::Null,
        )
    };
    let req = match parsed {
        None => {
            return (
                Op::Invalid(A2aError::new(
                    ErrorKind::Parse,
                    "Expecting value: empty body",
                )),
                Envelope::JsonRpc(Value::Null),
                Value::Null,
            );
        }
        Some(Err(e)) => {
            return (
                Op::Invalid(A2aError::new(ErrorKind::Parse, e.to_string())),
                Envelope::JsonRpc(Value::Null),
                Value::Null,
            );
        }
        Some(Ok(Value::Array(_))) => {
            return invalid("Batch requests are not supported", Value::Null);
        }
        Some(Ok(Value::Object(m))) => m,
        Some(Ok(_)) => return invalid("Invalid Request", Value::Null),
    };
    let id = match req.get("id") {
        None | Some(Value::Null) => Value::Null,
        Some(v @ Value::String(_)) => v.clone(),
        Some(v @ Value::Number(n)) if n.is_i64() || n.is_u64() => v.clone(),
        Some(_) => {
            return invalid(
                "Invalid request: id must be a string, integer, or null",
                Value::Null,
            );
        }
    };
    if req.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid("Invalid request: 'jsonrpc' must be exactly '2.0'", id);
    }
    let Some(method) = req.get("method").and_then(Value::as_str) else {
        return invalid("Invalid Request", id);
    };
    let params = req.get("params").cloned().unwrap_or_else(|| json!({}));
    let op = match method {
        "SendMessage" => Op::Send,
        "SendStreamingMessage" => Op::Stream,
        "GetTask" => Op::Get,
        "ListTasks" => Op::List,
        "CancelTask" => Op::Cancel,
        "SubscribeToTask" => Op::Subscribe,
        "GetExtendedAgentCard" => Op::ExtendedCard,
        "CreateTaskPushNotificationConfig"
        | "GetTaskPushNotificationConfig"
        | "ListTaskPushNotificationConfigs"
        | "DeleteTaskPushNotificationConfig" => Op::Push,
        _ => Op::Invalid(A2aError::new(ErrorKind::MethodNotFound, "Method not found")),
    };
    (op, Envelope::JsonRpc(id), params)
}

fn classify_rest(
    method: &Method,
    sub: &str,
    parsed: Option<&Result<Value, serde_json::Error>>,
    query: Option<&str>,
) -> Option<(Op, Envelope, Value)> {
    let body = || match parsed {
        None => Ok(json!({})),
        Some(Ok(v)) => Ok(v.clone()),
        Some(Err(e)) => Err(A2aError::new(
            ErrorKind::InvalidRequest,
            format!("Failed to load JSON: {e}"),
        )),
    };
    let with_body = |op: Op| match body() {
        Ok(v) => (op, Envelope::Rest, v),
        Err(e) => (Op::Invalid(e), Envelope::Rest, Value::Null),
    };
    let with_id = |op: Op, id: &str, mut params: Value| {
        if let Value::Object(m) = &mut params {
            m.insert("id".into(), id.into());
        }
        (op, Envelope::Rest, params)
    };
    if sub.contains("/pushNotificationConfigs") {
        return Some((Op::Push, Envelope::Rest, Value::Null));
    }
    Some(match (method, sub) {
        (&Method::POST, "/message:send") => with_body(Op::Send),
        (&Method::POST, "/message:stream") => with_body(Op::Stream),
        (&Method::GET, "/tasks") => (Op::List, Envelope::Rest, query_params(query)),
        (&Method::GET, "/extendedAgentCard") => (Op::ExtendedCard, Envelope::Rest, Value::Null),
        (m, s) => {
            let tail = s.strip_prefix("/tasks/")?;
            if let Some(id) = tail.strip_suffix(":cancel") {
                if m != Method::POST {
                    return None;
                }
                with_id(Op::Cancel, id, json!({}))
            } else if let Some(id) = tail.strip_suffix(":subscribe") {
                if m != Method::POST && m != Method::GET {
                    return None;
                }
                with_id(Op::Subscribe, id, json!({}))
            } else if m == Method::GET && !tail.contains([':', '/']) {
                with_id(Op::Get, tail, query_params(query))
            } else {
                return None;
            }
        }
    })
}

fn encode(
    envelope: &Envelope,
    result: Result<OpOutput, A2aError>,
    shared: &Shared,
    fault: Option<Fault>,
) -> Response<Body> {
    match (envelope, result) {
        (Envelope::JsonRpc(id), Ok(OpOutput::Json(v))) => {
            let v = json!({"result": v, "id": id, "jsonrpc": "2.0"});
            with_type(200, "application/json", body::full(json_bytes(&v)))
        }
        (Envelope::JsonRpc(id), Err(e)) => with_type(
            200,
            "application/json",
            body::full(json_bytes(&e.jsonrpc_response(id))),
        ),
        (Envelope::Rest | Envelope::Card, Ok(OpOutput::Json(v))) => {
            with_type(200, "application/a2a+json", body::full(json_bytes(&v)))
        }
        (Envelope::Rest | Envelope::Card, Err(e)) => {
            let (status, v) = e.rest_response();
            with_type(status, "application/json", body::full(json_bytes(&v)))
        }
        (env, Ok(OpOutput::Stream(source))) => {
            let framing = match env {
                Envelope::JsonRpc(id) => Framing::JsonRpc(id.clone()),
                _ => Framing::Rest,
            };
            let fault = match fault {
                Some(Fault::ResetMidBody) => Some(Fault::ResetMidStream { after_events: 1 }),
                f => f,
            };
            let body = body::sse(
                source,
                framing,
                shared.ping_interval,
                shared.token.clone(),
                fault,
            );
            let mut r = with_type(200, "text/event-stream; charset=utf-8", body);
            r.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            r.headers_mut()
                .insert("x-accel-buffering", HeaderValue::from_static("no"));
            r
        }
    }
}

/// Faults that reshape a finished response body.
fn apply_body_fault(
    response: Response<Body>,
    fault: Option<&Fault>,
    shared: &Shared,
) -> Response<Body> {
    let is_sse = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    match fault {
        Some(Fault::ByteDrip { interval }) => {
            let (parts, b) = response.into_parts();
            Response::from_parts(parts, body::drip(b, *interval, shared.token.clone()))
        }
        Some(Fault::ResetMidBody | Fault::ResetMidStream { .. } | Fault::TruncatedSse { .. })
            if !is_sse =>
        {
            let (mut parts, b) = response.into_parts();
            let Some(bytes) = b_full_bytes(b) else {
                return Response::from_parts(parts, body::full(Bytes::new()));
            };
            if matches!(fault, Some(Fault::TruncatedSse { .. })) {
                let half = bytes.slice(..bytes.len() / 2);
                return Response::from_parts(parts, body::full(half));
            }
            parts
                .headers
                .insert(header::CONTENT_LENGTH, HeaderValue::from(bytes.len()));
            Response::from_parts(parts, body::reset_mid_body(bytes))
        }
        _ => response,
    }
}

/// The bytes of a complete body (bodies built by [`body::full`] yield them at once).
fn b_full_bytes(b: Body) -> Option<Bytes> {
    use futures_util::FutureExt;
    b.collect().now_or_never()?.ok().map(|c| c.to_bytes())
}

fn unauthorized() -> Response<Body> {
    let v = json!({"error": {"code": 401, "status": "UNAUTHENTICATED", "message": "missing or invalid credentials"}});
    let mut r = with_type(401, "application/json", body::full(json_bytes(&v)));
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"a2aflow-testkit\""),
    );
    r
}

fn malformed(stream: bool) -> Response<Body> {
    if stream {
        let b = "data: {\"result\": {\"task\": {\"id\": <<<not json>>>\r\n\r\n";
        with_type(200, "text/event-stream; charset=utf-8", body::full(b))
    } else {
        with_type(
            200,
            "application/json",
            body::full("{\"result\": {\"task\": {\"id\": <<<not json>>>"),
        )
    }
}

/// Valid JSON of the wrong shape for the route's result.
fn wrong_types(envelope: &Envelope, route: Option<Route>) -> Response<Body> {
    let bad_task = json!({"id": 42, "contextId": ["not", "a", "string"], "status": "TASK_STATE_COMPLETED", "history": "none"});
    let payload = match route {
        Some(Route::Get | Route::Cancel) => bad_task,
        Some(Route::List) => json!({"tasks": "none", "totalSize": "many", "nextPageToken": 7}),
        Some(Route::Card | Route::ExtendedCard) => {
            json!({"name": 42, "description": null, "supportedInterfaces": "JSONRPC", "capabilities": [], "skills": {}})
        }
        _ => json!({ "task": bad_task }),
    };
    let v = match envelope {
        Envelope::JsonRpc(id) => json!({"result": payload, "id": id, "jsonrpc": "2.0"}),
        Envelope::Card | Envelope::Rest => payload,
    };
    if route.is_some_and(Route::is_stream) {
        let mut b = b"data: ".to_vec();
        b.extend_from_slice(&json_bytes(&v));
        b.extend_from_slice(b"\r\n\r\n");
        with_type(200, "text/event-stream; charset=utf-8", body::full(b))
    } else {
        with_type(200, "application/json", body::full(json_bytes(&v)))
    }
}

fn oversized(envelope: &Envelope, size: usize) -> Response<Body> {
    let (prefix, suffix) = match envelope {
        Envelope::JsonRpc(id) => (
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"message\":{{\"messageId\":\"big\",\"role\":\"ROLE_AGENT\",\"parts\":[{{\"text\":\""
            ),
            "\"}]}}}",
        ),
        _ => (
            "{\"message\":{\"messageId\":\"big\",\"role\":\"ROLE_AGENT\",\"parts\":[{\"text\":\""
                .to_owned(),
            "\"}]}}",
        ),
    };
    let (b, total) = body::oversized(prefix, suffix, size);
    let mut r = with_type(200, "application/json", b);
    r.headers_mut()
        .insert(header::CONTENT_LENGTH, HeaderValue::from(total));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_rule_compares_major_only() {
        let mut h = http::HeaderMap::new();
        assert_eq!(
            check_version(&h).unwrap_err().message,
            "A2A version '0.3' is not supported by this handler. Expected version '1.0'."
        );
        for ok in ["1.0", "1", "1.1", "1.0.0"] {
            h.insert("a2a-version", ok.parse().unwrap());
            assert!(check_version(&h).is_ok(), "{ok}");
        }
        for bad in ["2.0", "garbage", "0.3"] {
            h.insert("a2a-version", bad.parse().unwrap());
            assert_eq!(
                check_version(&h).unwrap_err().kind,
                ErrorKind::VersionNotSupported,
                "{bad}"
            );
        }
    }

    #[test]
    fn rest_paths_classify() {
        let q = Some("historyLength=0");
        let (op, _, p) = classify_rest(&Method::GET, "/tasks/abc", None, q).unwrap();
        assert!(matches!(op, Op::Get));
        assert_eq!(p, json!({"historyLength": 0, "id": "abc"}));
        assert!(matches!(
            classify_rest(&Method::POST, "/tasks/abc:cancel", None, None)
                .unwrap()
                .0,
            Op::Cancel
        ));
        assert!(matches!(
            classify_rest(&Method::GET, "/tasks/abc:subscribe", None, None)
                .unwrap()
                .0,
            Op::Subscribe
        ));
        assert!(matches!(
            classify_rest(&Method::POST, "/tasks/abc:subscribe", None, None)
                .unwrap()
                .0,
            Op::Subscribe
        ));
        assert!(classify_rest(&Method::GET, "/message:send", None, None).is_none());
        assert!(classify_rest(&Method::POST, "/nosuch", None, None).is_none());
    }

    #[test]
    fn jsonrpc_envelope_errors() {
        let bad_id: Result<Value, serde_json::Error> =
            Ok(json!({"jsonrpc":"2.0","id":true,"method":"GetTask"}));
        let (op, env, _) = classify_jsonrpc(Some(&bad_id));
        assert!(matches!(op, Op::Invalid(ref e) if e.kind == ErrorKind::InvalidRequest));
        assert!(matches!(env, Envelope::JsonRpc(Value::Null)));
        let unknown: Result<Value, serde_json::Error> =
            Ok(json!({"jsonrpc":"2.0","id":3,"method":"FooBar"}));
        let (op, _, _) = classify_jsonrpc(Some(&unknown));
        assert!(matches!(op, Op::Invalid(ref e) if e.kind == ErrorKind::MethodNotFound));
    }
}
