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

mod status;
mod stream;
pub mod target;

use std::future::Future;

use a2a_pb::a2a_service_client::A2aServiceClient;
use a2a_pb::pbconv;
use a2aflow_model::a2a::{
    AgentCard, CancelTaskRequest, GetTaskRequest, ListTasksRequest, ListTasksResponse,
    SendMessageRequest, SendMessageResponse, SubscribeToTaskRequest, Task,
};
use async_trait::async_trait;
use http::{HeaderMap, Method, StatusCode, Uri};
use serde::Serialize;
use tokio::sync::OnceCell;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};

use crate::binding::Binding;
use crate::error::{TimeoutPhase, TransportError};
use crate::headers::{A2A_VERSION, CallOptions, merge_hook_headers, protocol_headers};
use crate::http_client::{HttpClient, effective_deadline, whole_stream_deadline};
use crate::stream::StreamResponseStream;
use crate::transport::Transport;

pub use target::{Schemeless, target_url};

/// The gRPC service's path prefix.
const SERVICE: &str = "/lf.a2a.v1.A2AService/";

/// A2A over gRPC.
pub struct GrpcTransport {
    http: HttpClient,
    /// The interface URL as the card gave it.
    url: String,
    /// The `http(s)://host:port` it resolved to.
    origin: String,
    /// The same, parsed.
    target: Uri,
    tenant: Option<String>,
    /// Made on the first call (a channel needs the runtime), then shared by every call.
    channel: OnceCell<Channel>,
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
        let target: Uri = origin
            .parse()
            .map_err(|e| TransportError::InvalidRequest(format!("bad gRPC target: {e}")))?;
        Ok(GrpcTransport {
            http: client,
            url: url.to_owned(),
            origin,
            target,
            tenant: tenant.filter(|t| !t.is_empty()),
            channel: OnceCell::new(),
        })
    }

    /// The `http(s)://host:port` the transport connects to.
    pub fn target(&self) -> &Uri {
        &self.target
    }

    async fn channel(&self) -> Channel {
        self.channel
            .get_or_init(|| async {
                let limits = self.http.limits();
                let connector =
                    crate::http_client::connector(self.http.tls(), limits.connect_timeout, false);
                Endpoint::from(self.target.clone()).connect_with_connector_lazy(connector)
            })
            .await
            .clone()
    }

    async fn client(&self, limit: usize) -> A2aServiceClient<Channel> {
        A2aServiceClient::new(self.channel().await).max_decoding_message_size(limit)
    }

    fn op_uri(&self, op: &str) -> Uri {
        // The target is an origin and `op` a fixed method name: the join always parses.
        format!("{}{SERVICE}{op}", self.origin)
            .parse()
            .unwrap_or_else(|_| self.target.clone())
    }

    fn tenant(&self, own: &mut String) {
        if own.is_empty()
            && let Some(t) = &self.tenant
        {
            own.clone_from(t);
        }
    }

    /// The metadata of one call: the protocol headers, then the hook's (credentials).
    async fn metadata(&self, uri: &Uri, opts: &CallOptions) -> Result<HeaderMap, TransportError> {
        let mut headers = HeaderMap::new();
        protocol_headers(&mut headers, &opts.extensions).map_err(TransportError::Headers)?;
        if !self.http.sends_version() {
            headers.remove(A2A_VERSION);
        }
        if let Some(hook) = self.http.headers_hook() {
            let extra = hook
                .headers_for(uri)
                .await
                .map_err(TransportError::Headers)?;
            merge_hook_headers(&mut headers, extra).map_err(TransportError::Headers)?;
        }
        Ok(headers)
    }

    /// One call of `op` with `message`, `call` making it on a fresh client; an
    /// `UNAUTHENTICATED` answer lets the hook refresh credentials once, as on the other bindings.
    async fn call<Q, R, F, Fut>(
        &self,
        op: &'static str,
        message: Q,
        shown: &impl Serialize,
        opts: &CallOptions,
        budget: &Budget,
        call: F,
    ) -> Result<tonic::Response<R>, TransportError>
    where
        Q: Clone,
        F: Fn(A2aServiceClient<Channel>, tonic::Request<Q>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<R>, Status>>,
    {
        let uri = self.op_uri(op);
        let limit = budget.limit;
        let judged = status::Judged {
            message_limit: limit,
            connect_timeout: self.http.limits().connect_timeout,
            budget: budget.after,
            budget_is_deadline: budget.phase == TimeoutPhase::Deadline,
        };
        let mut refreshed = false;
        loop {
            let headers = self.metadata(&uri, opts).await?;
            let tap = self.http.wire_tap();
            if tap.log.is_active() {
                let body = serde_json::to_vec(shown).unwrap_or_default();
                tap.request(&Method::POST, &uri, &headers, &body);
            }
            let mut request = tonic::Request::new(message.clone());
            *request.metadata_mut() = tonic::metadata::MetadataMap::from_headers(headers);
            if let Some(told) = budget.told {
                request.set_timeout(told);
            }
            let client = self.client(limit).await;
            let answer = tokio::time::timeout_at(budget.deadline, call(client, request))
                .await
                .map_err(|_| TransportError::Timeout {
                    phase: budget.phase,
                    after: budget.after,
                })?;
            match answer {
                Ok(r) => return Ok(r),
                Err(s) if s.code() == Code::Unauthenticated && !refreshed => {
                    self.log_status(&uri, &s);
                    refreshed = true;
                    let again = match self.http.headers_hook() {
                        Some(hook) => hook
                            .on_unauthorized(&uri)
                            .await
                            .map_err(TransportError::Headers)?,
                        None => false,
                    };
                    if !again {
                        return Err(status::classify(&s, judged));
                    }
                }
                Err(s) => {
                    self.log_status(&uri, &s);
                    return Err(status::classify(&s, judged));
                }
            }
        }
    }

    fn log_status(&self, uri: &Uri, s: &Status) {
        let tap = self.http.wire_tap();
        if tap.log.is_active() {
            let body = serde_json::json!({
                "grpcStatus": status::code_name(s.code()),
                "message": s.message(),
            });
            let body = serde_json::to_vec(&body).unwrap_or_default();
            tap.response(uri, StatusCode::OK, s.metadata().as_ref(), &body);
        }
    }

    fn log_answer(&self, op: &str, headers: &HeaderMap, shown: &impl Serialize) {
        let tap = self.http.wire_tap();
        if tap.log.is_active() {
            let body = serde_json::to_vec(shown).unwrap_or_default();
            tap.response(&self.op_uri(op), StatusCode::OK, headers, &body);
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

    /// A unary call whose answer `convert` turns into a2a-lf's type.
    async fn unary<Q, R, T, F, Fut>(
        &self,
        op: &'static str,
        message: Q,
        shown: &impl Serialize,
        opts: &CallOptions,
        call: F,
        convert: impl Fn(&R) -> Option<T>,
    ) -> Result<T, TransportError>
    where
        Q: Clone,
        T: Serialize,
        F: Fn(A2aServiceClient<Channel>, tonic::Request<Q>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<R>, Status>>,
    {
        let budget = self.unary_budget(opts);
        let answer = self.call(op, message, shown, opts, &budget, call).await?;
        let headers = answer.metadata().clone().into_headers();
        let value = convert(answer.get_ref()).ok_or_else(|| {
            TransportError::InvalidResponse(format!("the {op} answer holds no payload"))
        })?;
        self.log_answer(op, &headers, &value);
        Ok(value)
    }

    /// A server-streaming call: the head within the request timeout (or the caller's deadline),
    /// then each message within the idle timeout and the whole stream within the caller's
    /// timeout or deadline.
    async fn streaming<Q, F, Fut>(
        &self,
        op: &'static str,
        message: Q,
        shown: &impl Serialize,
        opts: &CallOptions,
        call: F,
    ) -> Result<StreamResponseStream, TransportError>
    where
        Q: Clone,
        F: Fn(A2aServiceClient<Channel>, tonic::Request<Q>) -> Fut,
        Fut: Future<
            Output = Result<
                tonic::Response<tonic::codec::Streaming<a2a_pb::StreamResponse>>,
                Status,
            >,
        >,
    {
        let whole = whole_stream_deadline(opts);
        let limits = self.http.limits();
        let limit = limits.max_sse_event;
        let head = Budget {
            told: whole.map(|w| w.2),
            limit,
            ..self.unary_budget(opts)
        };
        let answer = self.call(op, message, shown, opts, &head, call).await?;
        Ok(stream::messages(
            answer.into_inner(),
            stream::Bounds {
                idle: limits.idle_stream_timeout,
                whole,
                message_limit: limit,
                connect_timeout: limits.connect_timeout,
            },
            self.http.wire_tap().clone(),
            self.op_uri(op).to_string(),
        ))
    }
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
        let mut message = pbconv::to_proto_send_message_request(request);
        self.tenant(&mut message.tenant);
        self.unary(
            "SendMessage",
            message,
            request,
            options,
            |mut c, r| async move { c.send_message(r).await },
            pbconv::from_proto_send_message_response,
        )
        .await
    }

    async fn send_streaming_message(
        &self,
        request: &SendMessageRequest,
        options: &CallOptions,
    ) -> Result<StreamResponseStream, TransportError> {
        let mut message = pbconv::to_proto_send_message_request(request);
        self.tenant(&mut message.tenant);
        self.streaming(
            "SendStreamingMessage",
            message,
            request,
            options,
            |mut c, r| async move { c.send_streaming_message(r).await },
        )
        .await
    }

    async fn get_task(
        &self,
        request: &GetTaskRequest,
        options: &CallOptions,
    ) -> Result<Task, TransportError> {
        let mut message = pbconv::to_proto_get_task_request(request);
        self.tenant(&mut message.tenant);
        self.unary(
            "GetTask",
            message,
            request,
            options,
            |mut c, r| async move { c.get_task(r).await },
            |t| Some(pbconv::from_proto_task(t)),
        )
        .await
    }

    async fn list_tasks(
        &self,
        request: &ListTasksRequest,
        options: &CallOptions,
    ) -> Result<ListTasksResponse, TransportError> {
        let mut message = pbconv::to_proto_list_tasks_request(request);
        self.tenant(&mut message.tenant);
        self.unary(
            "ListTasks",
            message,
            request,
            options,
            |mut c, r| async move { c.list_tasks(r).await },
            |l| Some(pbconv::from_proto_list_tasks_response(l)),
        )
        .await
    }

    async fn cancel_task(
        &self,
        request: &CancelTaskRequest,
        options: &CallOptions,
    ) -> Result<Task, TransportError> {
        let mut message = pbconv::to_proto_cancel_task_request(request);
        self.tenant(&mut message.tenant);
        self.unary(
            "CancelTask",
            message,
            request,
            options,
            |mut c, r| async move { c.cancel_task(r).await },
            |t| Some(pbconv::from_proto_task(t)),
        )
        .await
    }

    async fn subscribe_to_task(
        &self,
        request: &SubscribeToTaskRequest,
        options: &CallOptions,
    ) -> Result<StreamResponseStream, TransportError> {
        let mut message = pbconv::to_proto_subscribe_to_task_request(request);
        self.tenant(&mut message.tenant);
        self.streaming(
            "SubscribeToTask",
            message,
            request,
            options,
            |mut c, r| async move { c.subscribe_to_task(r).await },
        )
        .await
    }

    async fn get_extended_agent_card(
        &self,
        options: &CallOptions,
    ) -> Result<AgentCard, TransportError> {
        let mut message = a2a_pb::GetExtendedAgentCardRequest::default();
        self.tenant(&mut message.tenant);
        let shown = serde_json::json!({ "tenant": message.tenant });
        self.unary(
            "GetExtendedAgentCard",
            message,
            &shown,
            options,
            |mut c, r| async move { c.get_extended_agent_card(r).await },
            |card| Some(pbconv::from_proto_agent_card(card)),
        )
        .await
    }
}
