//! The gRPC binding (`GRPC`): the A2A 1.0 service `lf.a2a.v1.A2AService` on tonic, with the
//! official stubs and conversions of `a2a-pb`.
//!
//! The channel runs on the same stack as the other bindings: hyper 1 over the protocol crate's
//! own rustls connector (one TLS configuration: trust store, `insecure_skip_verify`, client
//! certificate), HTTP/2 only. Every call carries `a2a-version` and `a2a-extensions` as metadata
//! and the headers of the [`RequestHeaders`](crate::RequestHeaders) hook (credentials, bound to
//! the interface's origin like on the other bindings), the call's budget as its gRPC deadline,
//! and reads at most the limits' message sizes. Statuses map to the same `a2a.*` codes
//! (the `status` module); URL forms are [`target`]'s.
//!
//! Per call, nothing is made that a call does not need: each method's URI is made once with the
//! transport, the request is converted once (again only for the retry after a credentials
//! refresh), and the answer's metadata and the wire-log renderings are made only when the wire
//! log is on.

mod answer;
mod owned;
mod status;
mod stream;
pub mod target;
mod timeout;

use std::future::Future;

use a2a_pb::pbconv;
use a2aflow_model::a2a::{
    AgentCard, CancelTaskRequest, GetTaskRequest, ListTasksRequest, ListTasksResponse,
    SendMessageRequest, SendMessageResponse, SubscribeToTaskRequest, Task,
};
use async_trait::async_trait;
use http::{HeaderMap, Method, StatusCode, Uri};
use serde::Serialize;
use std::sync::{Arc, OnceLock};
use tonic::metadata::MetadataMap;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};

use crate::binding::Binding;
use crate::card_compat::keep_published_urls;
use crate::error::{TimeoutPhase, TransportError};
use crate::headers::{CallOptions, merge_hook_headers, protocol_headers};
use crate::http_client::{HttpClient, WholeDeadline, effective_deadline, whole_stream_deadline};
use crate::stream::StreamResponseStream;
use crate::transport::{OwnedSend, OwnedStreamSend, Transport};

pub use target::{Schemeless, target_url};

/// The gRPC service's path prefix.
const SERVICE: &str = "/lf.a2a.v1.A2AService/";

/// The methods of the service this transport calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    SendMessage,
    SendStreamingMessage,
    GetTask,
    ListTasks,
    CancelTask,
    SubscribeToTask,
    GetExtendedAgentCard,
}

impl Op {
    /// Every method, in the order of their discriminants (the index into `GrpcTransport::uris`).
    const ALL: [Op; 7] = [
        Op::SendMessage,
        Op::SendStreamingMessage,
        Op::GetTask,
        Op::ListTasks,
        Op::CancelTask,
        Op::SubscribeToTask,
        Op::GetExtendedAgentCard,
    ];

    /// The method's name in the service.
    fn name(self) -> &'static str {
        match self {
            Op::SendMessage => "SendMessage",
            Op::SendStreamingMessage => "SendStreamingMessage",
            Op::GetTask => "GetTask",
            Op::ListTasks => "ListTasks",
            Op::CancelTask => "CancelTask",
            Op::SubscribeToTask => "SubscribeToTask",
            Op::GetExtendedAgentCard => "GetExtendedAgentCard",
        }
    }
}

/// A2A over gRPC.
pub struct GrpcTransport {
    http: HttpClient,
    /// The interface URL as the card gave it.
    url: String,
    /// The `http(s)://host:port` it resolved to.
    origin: String,
    /// The same, parsed.
    target: Uri,
    /// Each method's full URI (what the headers hook and the wire log see), one per [`Op::ALL`],
    /// in that order.
    uris: Vec<Uri>,
    tenant: Option<String>,
    /// Made on the first call (a channel needs the runtime), then shared by every call.
    channel: OnceLock<Channel>,
    /// The `grpc-timeout` value of a call bounded by the request timeout alone (the budget of
    /// most calls), made once: a call then copies a handle to it instead of writing its own.
    request_timeout: http::HeaderValue,
}

impl std::fmt::Debug for GrpcTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcTransport")
            .field("url", &self.url)
            .field("origin", &self.origin)
            .field("tenant", &self.tenant)
            .finish_non_exhaustive()
    }
}

/// How long a call may wait for its answer (a stream: for its head), and what the agent is told.
struct Budget {
    deadline: tokio::time::Instant,
    phase: TimeoutPhase,
    after: std::time::Duration,
    /// The gRPC deadline sent with the call (`grpc-timeout`); none for a stream bounded only by
    /// the idle timeout.
    told: Option<std::time::Duration>,
    /// The largest message read (a unary answer, or one stream message).
    limit: usize,
}

impl Budget {
    /// The error of a call whose budget ran out.
    fn timed_out(&self) -> TransportError {
        TransportError::Timeout {
            phase: self.phase,
            after: self.after,
        }
    }
}

impl GrpcTransport {
    /// A transport for the interface at `url` (`host:port`, `http://host:port` or
    /// `https://host:port`; a URL without a scheme is reached as `schemeless` says) on the TLS
    /// configuration, limits, headers hook and wire log of `client`; `tenant` is put in every
    /// request whose own tenant is empty.
    pub fn new(
        client: HttpClient,
        url: &str,
        tenant: Option<String>,
        schemeless: Schemeless,
    ) -> Result<Self, TransportError> {
        let origin = target_url(url, schemeless)?;
        let parse = |text: &str| {
            text.parse::<Uri>()
                .map_err(|e| TransportError::InvalidRequest(format!("bad gRPC target: {e}")))
        };
        let target = parse(&origin)?;
        let uris = Op::ALL
            .iter()
            .map(|op| parse(&format!("{origin}{SERVICE}{}", op.name())))
            .collect::<Result<_, _>>()?;
        Ok(GrpcTransport {
            url: url.to_owned(),
            origin,
            target,
            uris,
            tenant: tenant.filter(|t| !t.is_empty()),
            channel: OnceLock::new(),
            request_timeout: timeout::grpc_timeout(client.limits().request_timeout),
            http: client,
        })
    }

    /// The `http(s)://host:port` the transport connects to.
    pub fn target(&self) -> &Uri {
        &self.target
    }

    /// The shared channel, made by the first call. Made in a poll of that call, so on the
    /// runtime (the lazy channel spawns its worker there); nothing in it waits.
    fn channel(&self) -> Channel {
        self.channel
            .get_or_init(|| {
                let limits = self.http.limits();
                let connector =
                    crate::http_client::connector(self.http.tls(), limits.connect_timeout, false);
                Endpoint::from(self.target.clone()).connect_with_connector_lazy(connector)
            })
            .clone()
    }

    /// One call's way to the agent, reading answers of at most `limit` bytes.
    fn conn(&self, limit: usize) -> answer::Conn {
        answer::Conn {
            channel: status::Marked(self.channel()),
            limit,
        }
    }

    fn uri(&self, op: Op) -> &Uri {
        // `uris` holds one URI per `Op::ALL`, in discriminant order (made in `new`).
        &self.uris[op as usize]
    }

    /// `message` with the transport's tenant in the field `tenant` points at, when it is empty.
    fn with_tenant<M>(&self, mut message: M, tenant: impl FnOnce(&mut M) -> &mut String) -> M {
        let own = tenant(&mut message);
        if own.is_empty()
            && let Some(t) = &self.tenant
        {
            own.clone_from(t);
        }
        message
    }

    /// The protocol headers of a call (`A2A-Version`, `A2A-Extensions`).
    fn protocol_metadata(&self, opts: &CallOptions) -> Result<HeaderMap, TransportError> {
        let mut headers = HeaderMap::new();
        protocol_headers(&mut headers, &opts.extensions, self.http.sends_version())
            .map_err(TransportError::Headers)?;
        Ok(headers)
    }

    /// The metadata of one call: the protocol headers, then the hook's (credentials).
    async fn metadata(&self, uri: &Uri, opts: &CallOptions) -> Result<HeaderMap, TransportError> {
        let mut headers = self.protocol_metadata(opts)?;
        if let Some(hook) = self.http.headers_hook() {
            let extra = hook
                .headers_for(uri)
                .await
                .map_err(TransportError::Headers)?;
            merge_hook_headers(&mut headers, extra).map_err(TransportError::Headers)?;
        }
        Ok(headers)
    }

    /// One call of `op` with the message `message` makes (converted from `shown`), `call` making
    /// it on a fresh client; an `UNAUTHENTICATED` answer lets the hook refresh credentials once,
    /// as on the other bindings (the message is then made again: it is not kept for a retry
    /// that almost never comes).
    async fn call<Q, R, F, Fut>(
        &self,
        op: Op,
        mut message: impl FnMut() -> Q,
        shown: &impl Serialize,
        opts: &CallOptions,
        budget: &Budget,
        call: F,
    ) -> Result<tonic::Response<R>, TransportError>
    where
        F: Fn(answer::Conn, tonic::Request<Q>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<R>, Status>>,
    {
        let uri = self.uri(op);
        let judged = self.judged(budget);
        let mut refreshed = false;
        loop {
            let headers = self.metadata(uri, opts).await?;
            let tap = self.http.wire_tap();
            if tap.log.is_active() {
                let body = serde_json::to_vec(shown).unwrap_or_default();
                tap.request(&Method::POST, uri, &headers, &body);
            }
            let request = self.request(headers, message(), opts, budget);
            let conn = self.conn(budget.limit);
            // Boxed: tonic's call future is several KB. Held inline it would make this future,
            // and each one awaiting it (up to the transport's boxed `send_message`), as large,
            // and every move of them a copy of it.
            let answer = tokio::time::timeout_at(budget.deadline, Box::pin(call(conn, request)))
                .await
                .map_err(|_| budget.timed_out())?;
            match answer {
                Ok(r) => return Ok(r),
                Err(s) if s.code() == Code::Unauthenticated && !refreshed => {
                    self.log_answer(uri, s.metadata(), || status_shown(&s));
                    refreshed = true;
                    let again = match self.http.headers_hook() {
                        Some(hook) => hook
                            .on_unauthorized(uri)
                            .await
                            .map_err(TransportError::Headers)?,
                        None => false,
                    };
                    if !again {
                        return Err(opts.withheld_or(status::classify(&s, judged)));
                    }
                }
                Err(s) => return Err(self.failed(uri, &s, opts, judged)),
            }
        }
    }

    /// What a failed status of a call within `budget` is judged against.
    fn judged(&self, budget: &Budget) -> status::Judged {
        status::Judged {
            message_limit: budget.limit,
            connect_timeout: self.http.limits().connect_timeout,
            budget: budget.after,
            budget_is_deadline: budget.phase == TimeoutPhase::Deadline,
        }
    }

    /// One attempt's request: `message` with `headers`, the budget as `grpc-timeout`, and the
    /// send gate of a business command.
    fn request<Q>(
        &self,
        mut headers: HeaderMap,
        message: Q,
        opts: &CallOptions,
        budget: &Budget,
    ) -> tonic::Request<Q> {
        if let Some(told) = budget.told {
            // What tonic's `Request::set_timeout` would write, in the same map.
            let value = if told == self.http.limits().request_timeout {
                self.request_timeout.clone()
            } else {
                // What is left of a deadline differs on every request (it is written to the
                // microsecond): kept out of HPACK's table, where each value would take a slot,
                // evict one, and lengthen the walk every later request makes through the
                // table's `grpc-timeout` entries.
                let mut value = timeout::grpc_timeout(told);
                value.set_sensitive(true);
                value
            };
            headers.insert(timeout::GRPC_TIMEOUT, value);
        }
        let mut extensions = tonic::Extensions::new();
        if let Some(gate) = &opts.send_gate {
            // `Marked` puts the gate in front of the request's body.
            extensions.insert(gate.clone());
        }
        tonic::Request::from_parts(MetadataMap::from_headers(headers), extensions, message)
    }

    /// The error of a call the agent (or tonic) failed with `s`, the answer logged first when
    /// the wire log is on.
    fn failed(
        &self,
        uri: &Uri,
        s: &Status,
        opts: &CallOptions,
        judged: status::Judged,
    ) -> TransportError {
        self.log_answer(uri, s.metadata(), || status_shown(s));
        opts.withheld_or(status::classify(s, judged))
    }

    /// Logs an answer (its metadata, and what `shown` makes as its body) when the wire log is
    /// on; nothing is rendered or copied when it is off.
    fn log_answer<S: Serialize>(
        &self,
        uri: &Uri,
        metadata: &MetadataMap,
        shown: impl FnOnce() -> S,
    ) {
        let tap = self.http.wire_tap();
        if tap.log.is_active() {
            let body = serde_json::to_vec(&shown()).unwrap_or_default();
            tap.response(uri, StatusCode::OK, &metadata.clone().into_headers(), &body);
        }
    }

    fn unary_budget(&self, opts: &CallOptions) -> Budget {
        let (deadline, phase, after) = effective_deadline(opts, self.http.limits().request_timeout);
        Budget {
            deadline,
            phase,
            after,
            told: Some(after),
            limit: self.http.limits().max_response_body,
        }
    }

    /// A unary call whose answer `convert` turns into a2a-lf's type (taking it by value, so
    /// that its strings can move).
    async fn unary<Q, R, T, F, Fut>(
        &self,
        op: Op,
        message: impl FnMut() -> Q,
        shown: &impl Serialize,
        opts: &CallOptions,
        call: F,
        convert: impl FnOnce(R) -> Option<T>,
    ) -> Result<T, TransportError>
    where
        T: Serialize,
        F: Fn(answer::Conn, tonic::Request<Q>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<R>, Status>>,
    {
        let budget = self.unary_budget(opts);
        let answer = self.call(op, message, shown, opts, &budget, call).await?;
        self.read(op, answer, convert)
    }

    /// A unary answer as `convert` makes it, logged when the wire log is on.
    fn read<R, T: Serialize>(
        &self,
        op: Op,
        answer: tonic::Response<R>,
        convert: impl FnOnce(R) -> Option<T>,
    ) -> Result<T, TransportError> {
        let (metadata, answer, _) = answer.into_parts();
        let value = convert(answer).ok_or_else(|| {
            TransportError::InvalidResponse(format!("the {} answer holds no payload", op.name()))
        })?;
        self.log_answer(self.uri(op), &metadata, || &value);
        Ok(value)
    }

    /// A unary call whose request was made before its future (nothing to await for it: no
    /// headers hook, so no credentials to fetch and no retry after a refresh), tonic's call
    /// held in the same future: one allocation for the whole call (the transport's owned
    /// send), not one for it and one for tonic's call inside.
    async fn unary_made<Q, R, T>(
        self: Arc<Self>,
        op: Op,
        path: &'static str,
        request: Result<tonic::Request<Q>, TransportError>,
        budget: Budget,
        opts: CallOptions,
        convert: impl FnOnce(R) -> Option<T>,
    ) -> Result<T, TransportError>
    where
        Q: prost::Message + Send + Sync + 'static,
        R: prost::Message + Default + Send + Sync + 'static,
        T: Serialize,
    {
        let call = self.conn(budget.limit).unary::<Q, R>(request?, path);
        let answer = tokio::time::timeout_at(budget.deadline, call)
            .await
            .map_err(|_| budget.timed_out())?;
        match answer {
            Ok(r) => self.read(op, r, convert),
            Err(s) => Err(self.failed(self.uri(op), &s, &opts, self.judged(&budget))),
        }
    }

    /// A server-streaming call: the head within the request timeout (or the caller's deadline),
    /// then each message within the idle timeout and the whole stream within the caller's
    /// timeout or deadline.
    async fn streaming<Q, M, F, Fut>(
        &self,
        op: Op,
        message: impl FnMut() -> Q,
        shown: &impl Serialize,
        opts: &CallOptions,
        call: F,
    ) -> Result<StreamResponseStream, TransportError>
    where
        M: answer::StreamMessage,
        F: Fn(answer::Conn, tonic::Request<Q>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<tonic::codec::Streaming<M>>, Status>>,
    {
        let (head, whole) = self.stream_budget(opts);
        let answer = self.call(op, message, shown, opts, &head, call).await?;
        Ok(self.messages(op, answer, whole, opts))
    }

    /// A server-streaming call whose request was made before its future, as
    /// [`unary_made`](Self::unary_made) is to [`unary`](Self::unary).
    async fn streaming_made<Q, M, Fut>(
        self: Arc<Self>,
        op: Op,
        request: Result<tonic::Request<Q>, TransportError>,
        (head, whole): (Budget, WholeDeadline),
        opts: CallOptions,
        call: impl FnOnce(answer::Conn, tonic::Request<Q>) -> Fut,
    ) -> Result<StreamResponseStream, TransportError>
    where
        M: answer::StreamMessage,
        Fut: Future<Output = Result<tonic::Response<tonic::codec::Streaming<M>>, Status>>,
    {
        let opened = call(self.conn(head.limit), request?);
        let answer = tokio::time::timeout_at(head.deadline, opened)
            .await
            .map_err(|_| head.timed_out())?;
        match answer {
            Ok(r) => Ok(self.messages(op, r, whole, &opts)),
            Err(s) => Err(self.failed(self.uri(op), &s, &opts, self.judged(&head))),
        }
    }

    /// Whether an owned send may make its request before its future: nothing needs the request
    /// again (no headers hook: no credentials to fetch, no retry after their refresh, which
    /// makes the message anew) and nothing renders it (no wire log).
    fn makes_owned_requests(&self) -> bool {
        self.http.headers_hook().is_none() && !self.http.wire_tap().log.is_active()
    }

    /// A send's request converted by value into the wire message, with the tenant, the
    /// protocol metadata and `budget`'s `grpc-timeout`.
    fn owned_send_request(
        &self,
        request: SendMessageRequest,
        options: &CallOptions,
        budget: &Budget,
    ) -> Result<tonic::Request<a2a_pb::SendMessageRequest>, TransportError> {
        let message = self.with_tenant(owned::send_message_request(request), |m| &mut m.tenant);
        self.protocol_metadata(options)
            .map(|headers| self.request(headers, message, options, budget))
    }

    /// A server-streaming call's budgets: the head's (within the request timeout, or the
    /// caller's deadline; its messages as large as a stream's) and the whole stream's.
    fn stream_budget(&self, opts: &CallOptions) -> (Budget, WholeDeadline) {
        let whole = whole_stream_deadline(opts);
        let head = Budget {
            told: whole.map(|w| w.2),
            limit: self.http.limits().max_sse_event,
            ..self.unary_budget(opts)
        };
        (head, whole)
    }

    /// The messages of an opened stream, each wait bounded by the idle timeout and all of
    /// them by `whole`.
    fn messages<M: answer::StreamMessage>(
        &self,
        op: Op,
        answer: tonic::Response<tonic::codec::Streaming<M>>,
        whole: WholeDeadline,
        opts: &CallOptions,
    ) -> StreamResponseStream {
        let limits = self.http.limits();
        stream::messages(
            answer.into_inner(),
            stream::Bounds {
                idle: limits.idle_stream_timeout,
                whole,
                message_limit: limits.max_sse_event,
                connect_timeout: limits.connect_timeout,
                history: owned::History::of(opts),
            },
            self.http.wire_tap().clone(),
            self.uri(op).clone(),
        )
    }

    /// A SendMessage call of the message `message` makes; the answer's task is read without its
    /// history when the caller reads none (`CallOptions::without_history`): its bytes are
    /// skipped, not decoded.
    async fn send(
        &self,
        message: impl FnMut() -> a2a_pb::SendMessageRequest,
        shown: &impl Serialize,
        options: &CallOptions,
    ) -> Result<SendMessageResponse, TransportError> {
        let op = Op::SendMessage;
        match owned::History::of(options) {
            owned::History::Skip => {
                let read = |a: answer::SendMessageAnswer| {
                    owned::send_message_response(a.into_response(), owned::History::Skip)
                };
                let call = |c: answer::Conn, r| c.unary(r, answer::SEND_MESSAGE);
                self.unary(op, message, shown, options, call, read).await
            }
            owned::History::Keep => {
                let read = |a| owned::send_message_response(a, owned::History::Keep);
                let call = |c: answer::Conn, r| c.unary(r, answer::SEND_MESSAGE);
                self.unary(op, message, shown, options, call, read).await
            }
        }
    }

    /// A server-streaming call of the method at `path`; a task in it is read without its
    /// history when the caller reads none, as in [`send`](Self::send).
    async fn stream_of<Q>(
        &self,
        op: Op,
        path: &'static str,
        message: impl FnMut() -> Q,
        shown: &impl Serialize,
        options: &CallOptions,
    ) -> Result<StreamResponseStream, TransportError>
    where
        Q: prost::Message + Send + Sync + 'static,
    {
        match owned::History::of(options) {
            owned::History::Skip => {
                let call =
                    |c: answer::Conn, r| c.server_streaming::<Q, answer::StreamAnswer>(r, path);
                self.streaming(op, message, shown, options, call).await
            }
            owned::History::Keep => {
                let call =
                    |c: answer::Conn, r| c.server_streaming::<Q, a2a_pb::StreamResponse>(r, path);
                self.streaming(op, message, shown, options, call).await
            }
        }
    }
}

/// A status as the wire log shows it in place of an answer's body.
fn status_shown(s: &Status) -> serde_json::Value {
    serde_json::json!({
        "grpcStatus": status::code_name(s.code()),
        "message": s.message(),
    })
}

#[async_trait]
impl Transport for GrpcTransport {
    fn binding(&self) -> Binding {
        Binding::Grpc
    }

    fn url(&self) -> &str {
        &self.url
    }

    async fn refresh_credentials(&self) -> Result<bool, a2aflow_model::Failure> {
        self.http.refresh_credentials(&self.target).await
    }

    async fn send_message(
        &self,
        request: &SendMessageRequest,
        options: &CallOptions,
    ) -> Result<SendMessageResponse, TransportError> {
        let message = || {
            self.with_tenant(pbconv::to_proto_send_message_request(request), |m| {
                &mut m.tenant
            })
        };
        self.send(message, request, options).await
    }

    /// The request converted by value into the wire message, with its metadata, before the
    /// call's one future, when nothing can need it again and nothing has to be awaited for it:
    /// a headers hook (credentials, and the retry after their refresh, which makes the message
    /// anew) or the wire log (which renders the request) run `send_message` instead.
    fn send_message_owned(
        self: Arc<Self>,
        request: SendMessageRequest,
        options: CallOptions,
    ) -> OwnedSend {
        if !self.makes_owned_requests() {
            return Box::pin(async move { self.send_message(&request, &options).await });
        }
        // Made now, before the call's future: nothing in it awaits.
        let budget = self.unary_budget(&options);
        let request = self.owned_send_request(request, &options, &budget);
        let (op, path) = (Op::SendMessage, answer::SEND_MESSAGE);
        // Read without the task's history when the caller reads none, as in `send`.
        match owned::History::of(&options) {
            owned::History::Skip => {
                let read = |a: answer::SendMessageAnswer| {
                    owned::send_message_response(a.into_response(), owned::History::Skip)
                };
                Box::pin(self.unary_made(op, path, request, budget, options, read))
            }
            owned::History::Keep => {
                let read = |a| owned::send_message_response(a, owned::History::Keep);
                Box::pin(self.unary_made(op, path, request, budget, options, read))
            }
        }
    }

    async fn send_streaming_message(
        &self,
        request: &SendMessageRequest,
        options: &CallOptions,
    ) -> Result<StreamResponseStream, TransportError> {
        let message = || {
            self.with_tenant(pbconv::to_proto_send_message_request(request), |m| {
                &mut m.tenant
            })
        };
        let (op, path) = (Op::SendStreamingMessage, answer::SEND_STREAMING_MESSAGE);
        self.stream_of(op, path, message, request, options).await
    }

    /// The request converted by value and made before the call's one future, as in
    /// `send_message_owned`, under the same conditions (no headers hook, no wire log).
    fn send_streaming_message_owned(
        self: Arc<Self>,
        request: SendMessageRequest,
        options: CallOptions,
    ) -> OwnedStreamSend {
        if !self.makes_owned_requests() {
            return Box::pin(async move { self.send_streaming_message(&request, &options).await });
        }
        let budgets = self.stream_budget(&options);
        let request = self.owned_send_request(request, &options, &budgets.0);
        let (op, path) = (Op::SendStreamingMessage, answer::SEND_STREAMING_MESSAGE);
        match owned::History::of(&options) {
            owned::History::Skip => {
                let call = move |c: answer::Conn, r| {
                    c.server_streaming::<_, answer::StreamAnswer>(r, path)
                };
                Box::pin(self.streaming_made(op, request, budgets, options, call))
            }
            owned::History::Keep => {
                let call = move |c: answer::Conn, r| {
                    c.server_streaming::<_, a2a_pb::StreamResponse>(r, path)
                };
                Box::pin(self.streaming_made(op, request, budgets, options, call))
            }
        }
    }

    async fn get_task(
        &self,
        request: &GetTaskRequest,
        options: &CallOptions,
    ) -> Result<Task, TransportError> {
        let message = || {
            self.with_tenant(pbconv::to_proto_get_task_request(request), |m| {
                &mut m.tenant
            })
        };
        let op = Op::GetTask;
        // Without its history when the caller reads none, as a SendMessage answer's task.
        match owned::History::of(options) {
            owned::History::Skip => {
                let read = |t: answer::TaskWithoutHistory| {
                    Some(owned::task(t.into_task(), owned::History::Skip))
                };
                let call = |c: answer::Conn, r| c.unary(r, answer::GET_TASK);
                self.unary(op, message, request, options, call, read).await
            }
            owned::History::Keep => {
                let read = |t| Some(owned::task(t, owned::History::Keep));
                let call = |c: answer::Conn, r| c.unary(r, answer::GET_TASK);
                self.unary(op, message, request, options, call, read).await
            }
        }
    }

    async fn list_tasks(
        &self,
        request: &ListTasksRequest,
        options: &CallOptions,
    ) -> Result<ListTasksResponse, TransportError> {
        self.unary(
            Op::ListTasks,
            || {
                self.with_tenant(pbconv::to_proto_list_tasks_request(request), |m| {
                    &mut m.tenant
                })
            },
            request,
            options,
            |c, r| async move { c.client().list_tasks(r).await },
            |l| Some(pbconv::from_proto_list_tasks_response(&l)),
        )
        .await
    }

    async fn cancel_task(
        &self,
        request: &CancelTaskRequest,
        options: &CallOptions,
    ) -> Result<Task, TransportError> {
        self.unary(
            Op::CancelTask,
            || {
                self.with_tenant(pbconv::to_proto_cancel_task_request(request), |m| {
                    &mut m.tenant
                })
            },
            request,
            options,
            |c, r| async move { c.client().cancel_task(r).await },
            |t| Some(owned::task(t, owned::History::of(options))),
        )
        .await
    }

    async fn subscribe_to_task(
        &self,
        request: &SubscribeToTaskRequest,
        options: &CallOptions,
    ) -> Result<StreamResponseStream, TransportError> {
        let message = || {
            let message = pbconv::to_proto_subscribe_to_task_request(request);
            self.with_tenant(message, |m| &mut m.tenant)
        };
        let (op, path) = (Op::SubscribeToTask, answer::SUBSCRIBE_TO_TASK);
        self.stream_of(op, path, message, request, options).await
    }

    async fn get_extended_agent_card(
        &self,
        options: &CallOptions,
    ) -> Result<AgentCard, TransportError> {
        let message = || {
            let request = a2a_pb::GetExtendedAgentCardRequest::default();
            self.with_tenant(request, |m| &mut m.tenant)
        };
        let shown = serde_json::json!({ "tenant": message().tenant });
        self.unary(
            Op::GetExtendedAgentCard,
            message,
            &shown,
            options,
            |c, r| async move { c.client().get_extended_agent_card(r).await },
            |published| {
                let mut card = pbconv::from_proto_agent_card(&published);
                let urls = published
                    .supported_interfaces
                    .iter()
                    .map(|i| Some(i.url.as_str()));
                keep_published_urls(&mut card, urls);
                Some(card)
            },
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn transport() -> GrpcTransport {
        let client = HttpClient::new().expect("a default client");
        GrpcTransport::new(client, "127.0.0.1:9", None, target::Schemeless::Plaintext)
            .expect("a transport")
    }

    fn told(t: &GrpcTransport, budget: Option<Duration>) -> Option<http::HeaderValue> {
        let opts = CallOptions::default();
        let budget = Budget {
            told: budget,
            ..t.unary_budget(&opts)
        };
        let request = t.request(HeaderMap::new(), (), &opts, &budget);
        request
            .metadata()
            .clone()
            .into_headers()
            .remove(timeout::GRPC_TIMEOUT)
    }

    #[test]
    fn a_budget_left_of_a_deadline_is_kept_out_of_the_hpack_table() {
        let t = transport();
        // The request timeout is the same value on every call: indexed once, then sent as an
        // index.
        let usual = told(&t, Some(t.http.limits().request_timeout)).expect("the header");
        assert!(!usual.is_sensitive());
        assert_eq!(
            usual,
            timeout::grpc_timeout(t.http.limits().request_timeout)
        );
        // What is left of a deadline differs on every call: sent as a literal never indexed.
        let left = told(&t, Some(Duration::from_micros(9_876_543))).expect("the header");
        assert!(left.is_sensitive());
        assert_eq!(left, "9876543u");
        // A stream bounded by its idle timeout alone tells no deadline.
        assert!(told(&t, None).is_none());
    }
}
