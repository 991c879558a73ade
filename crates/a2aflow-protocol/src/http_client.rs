//! [`HttpClient`]: the pooled hyper 1 client every transport sends through, with rustls (`ring`),
//! the enforced [`Limits`], the protocol headers and the [`RequestHeaders`] hook.
//!
//! The connection pool belongs to the client: clones share it, and when the last clone (and the
//! last transport holding one) is dropped, its idle connections close.
//!
//! Unary requests to one origin queue for a connection: at most
//! [`HttpClientBuilder::unary_per_origin`] of them (default
//! [`DEFAULT_UNARY_PER_ORIGIN`]) are on their way at once, so a burst takes the next connection
//! to come idle instead of opening one per request (hyper-util's pool starts a connect for every
//! request that finds none idle, and finishes it even when an idle one wins). A request that has
//! waited [`UNARY_QUEUE_PATIENCE`] goes on without its turn, as before: the queue never holds a
//! request behind long ones (a blocking SendMessage holds its connection for the whole task).
//! Streams do not queue: each holds its connection for as long as it is open.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2aflow_model::Failure;
use a2aflow_model::a2a::AgentCard;
use bytes::{Bytes, BytesMut};
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, Uri, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use crate::envelope::classify_error_body;
use crate::error::{TimeoutPhase, TransportError};
use crate::error::{with_redirect, with_retry_after};
use crate::gate::GatedBody;
use crate::headers::{CallOptions, RequestHeaders, merge_hook_headers, protocol_headers};
use crate::limits::Limits;
use crate::wirelog::WireLog;

/// The well-known path of the public agent card.
pub const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";

/// Unary requests on their way to one origin at once, by default (see the module header).
pub const DEFAULT_UNARY_PER_ORIGIN: usize = 64;

/// How long a unary request waits for its turn at a busy origin before it goes on without it.
pub const UNARY_QUEUE_PATIENCE: Duration = Duration::from_millis(100);

/// Origins whose queues are kept while nobody waits in them; past this many, idle ones are
/// dropped (a client that talks to many origins does not keep a queue for each).
const MAX_IDLE_ORIGIN_QUEUES: usize = 256;

/// An origin: a URI's scheme and authority.
type Origin = (Option<http::uri::Scheme>, Option<http::uri::Authority>);

/// The per-origin queues of unary requests (see the module header).
struct OriginQueues {
    per_origin: usize,
    patience: Duration,
    queues: Mutex<HashMap<Origin, Arc<Semaphore>>>,
}

impl OriginQueues {
    fn new(per_origin: Option<usize>, patience: Duration) -> Option<Self> {
        per_origin
            .filter(|&n| n > 0)
            .map(|per_origin| OriginQueues {
                // A semaphore holds at most `MAX_PERMITS`; more is no bound at all anyway.
                per_origin: per_origin.min(Semaphore::MAX_PERMITS),
                patience,
                queues: Mutex::new(HashMap::new()),
            })
    }

    /// The queue of `uri`'s origin (scheme and authority).
    fn queue(&self, uri: &Uri) -> Arc<Semaphore> {
        // Both parts are cheap to clone (the authority shares the URI's bytes).
        let key = (uri.scheme().cloned(), uri.authority().cloned());
        // A poisoned lock only means another request panicked while holding it: the map itself
        // is always whole (each operation below is one call on it).
        let mut queues = self
            .queues
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(queue) = queues.get(&key) {
            return queue.clone();
        }
        if queues.len() >= MAX_IDLE_ORIGIN_QUEUES {
            queues.retain(|_, q| Arc::strong_count(q) > 1);
        }
        let queue = Arc::new(Semaphore::new(self.per_origin));
        queues.insert(key, queue.clone());
        queue
    }

    /// Waits for a turn at `uri`'s origin, at most the patience; `None` when it ran out (the
    /// request goes on without one).
    async fn turn(&self, uri: &Uri) -> Option<OwnedSemaphorePermit> {
        let queue = self.queue(uri);
        if let Ok(permit) = queue.clone().try_acquire_owned() {
            return Some(permit);
        }
        tokio::time::timeout(self.patience, queue.acquire_owned())
            .await
            .ok()
            .and_then(Result::ok)
    }
}

pub(crate) type Connector = ConnectTimeout<HttpsConnector<HttpConnector>>;

/// A pooled HTTP/1.1 + HTTP/2 client over rustls. Cheap to clone; clones share the pool.
#[derive(Clone)]
pub struct HttpClient {
    inner: Arc<Inner>,
}

/// What every request carries: its bytes, behind the call's send gate when it has one.
type SendBody = GatedBody<Full<Bytes>>;

struct Inner {
    client: Client<Connector, SendBody>,
    /// The rustls configuration the pool connects with; the gRPC binding's HTTP/2 connector is
    /// built from the same one.
    tls: Arc<rustls::ClientConfig>,
    limits: Limits,
    headers: Option<Arc<dyn RequestHeaders>>,
    wire: WireTap,
    send_version: bool,
    /// The per-origin queues of unary requests; `None` when turned off.
    unary_queues: Option<OriginQueues>,
}

/// The wire log and the agent label its lines carry.
#[derive(Debug, Clone, Default)]
pub(crate) struct WireTap {
    pub(crate) log: WireLog,
    pub(crate) agent: String,
}

impl WireTap {
    /// Logs a request; the URL is only rendered when the log is active.
    pub(crate) fn request(&self, method: &Method, uri: &Uri, headers: &HeaderMap, body: &[u8]) {
        if self.log.is_active() {
            self.log
                .log_request(&self.agent, method, &uri.to_string(), headers, body);
        }
    }

    /// Logs a response; the URL is only rendered when the log is active.
    pub(crate) fn response(&self, uri: &Uri, status: StatusCode, headers: &HeaderMap, body: &[u8]) {
        if self.log.is_active() {
            self.log
                .log_response(&self.agent, &uri.to_string(), status, headers, body);
        }
    }
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("limits", &self.inner.limits)
            .field("headers_hook", &self.inner.headers.is_some())
            .finish()
    }
}

/// Builds an [`HttpClient`].
pub struct HttpClientBuilder {
    limits: Limits,
    tls: Option<Arc<rustls::ClientConfig>>,
    headers: Option<Arc<dyn RequestHeaders>>,
    wire: WireTap,
    send_version: bool,
    unary_per_origin: Option<usize>,
    unary_patience: Duration,
}

impl Default for HttpClientBuilder {
    fn default() -> Self {
        HttpClientBuilder {
            limits: Limits::default(),
            tls: None,
            headers: None,
            wire: WireTap::default(),
            send_version: true,
            unary_per_origin: Some(DEFAULT_UNARY_PER_ORIGIN),
            unary_patience: UNARY_QUEUE_PATIENCE,
        }
    }
}

impl HttpClientBuilder {
    /// At most this many unary requests on their way to one origin at once (default
    /// [`DEFAULT_UNARY_PER_ORIGIN`]); the others wait for a turn, at most
    /// [`UNARY_QUEUE_PATIENCE`] each, then go on without it. `None` or `Some(0)`: no queue, every
    /// request that finds no idle connection opens one. Streams never queue.
    pub fn unary_per_origin(mut self, limit: Option<usize>) -> Self {
        self.unary_per_origin = limit;
        self
    }

    /// Logs every request, response and SSE event through this (redacting) wire log, labelled
    /// with `agent`. Off by default.
    pub fn wire_log(mut self, log: WireLog, agent: impl Into<String>) -> Self {
        self.wire = WireTap {
            log,
            agent: agent.into(),
        };
        self
    }

    /// Conformance testing only: `false` leaves out the `A2A-Version` header, to check how a
    /// peer answers a client that does not declare 1.0. Never turn it off for real traffic.
    pub fn send_version_header(mut self, on: bool) -> Self {
        self.send_version = on;
        self
    }

    /// Uses these limits (default: [`Limits::default`]).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Uses this rustls configuration (from the `tls` module's `TlsConfig::client_config`, or the
    /// host's own). Default: verification against the webpki roots, `ring` provider.
    pub fn tls(mut self, config: Arc<rustls::ClientConfig>) -> Self {
        self.tls = Some(config);
        self
    }

    /// Uses the rustls configuration built from the `tls` module's settings (CA bundle, client
    /// certificate, explicit `insecure_skip_verify`). A bundle or certificate that cannot be read
    /// fails here with `config.tls`.
    pub fn tls_config(self, tls: &crate::tls::TlsConfig) -> Result<Self, Failure> {
        Ok(self.tls(tls.client_config()?))
    }

    /// Adds headers to every request through this hook (credentials).
    pub fn request_headers(mut self, hook: Arc<dyn RequestHeaders>) -> Self {
        self.headers = Some(hook);
        self
    }

    /// Builds the client. Must be called inside a tokio runtime only when requests are made;
    /// building itself spawns nothing.
    pub fn build(self) -> Result<HttpClient, TransportError> {
        let tls = match self.tls {
            Some(c) => c,
            None => Arc::new(default_tls()?),
        };
        let connector = connector(&tls, self.limits.connect_timeout, true);
        let client = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .build(connector);
        Ok(HttpClient {
            inner: Arc::new(Inner {
                client,
                tls,
                limits: self.limits,
                headers: self.headers,
                wire: self.wire,
                send_version: self.send_version,
                unary_queues: OriginQueues::new(self.unary_per_origin, self.unary_patience),
            }),
        })
    }
}

/// The TCP + rustls connector of every binding: `https` URIs over TLS with `tls`, `http` ones in
/// the clear, the whole connect bounded by `timeout`. ALPN offers HTTP/2 and HTTP/1.1, or HTTP/2
/// alone when `http1` is false (gRPC).
pub(crate) fn connector(tls: &rustls::ClientConfig, timeout: Duration, http1: bool) -> Connector {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    let builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls.clone())
        .https_or_http();
    let https = if http1 {
        builder.enable_all_versions().wrap_connector(http)
    } else {
        builder.enable_http2().wrap_connector(http)
    };
    ConnectTimeout {
        inner: https,
        timeout,
    }
}

/// The error of a connect (TCP + TLS) that did not finish within the connect timeout: an
/// `io::Error` of kind `TimedOut`, which [`classify_client_error`] reads as the connect phase.
fn connect_timed_out(after: Duration) -> BoxError {
    Box::new(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!(
            "the connection (TCP and TLS handshake) was not established within {} ms",
            after.as_millis()
        ),
    ))
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Bounds a whole connect — DNS, TCP and the TLS handshake — by the connect timeout
/// ([`Limits::connect_timeout`]). The inner connector's own timeout would cover TCP only.
#[derive(Clone)]
pub(crate) struct ConnectTimeout<C> {
    inner: C,
    timeout: Duration,
}

impl<C> tower_service::Service<Uri> for ConnectTimeout<C>
where
    C: tower_service::Service<Uri>,
    C::Future: Send + 'static,
    C::Error: Into<BoxError>,
{
    type Response = C::Response;
    type Error = BoxError;
    type Future =
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<C::Response, BoxError>> + Send>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let connecting = self.inner.call(uri);
        let after = self.timeout;
        Box::pin(async move {
            match tokio::time::timeout(after, connecting).await {
                Ok(connected) => connected.map_err(Into::into),
                Err(_) => Err(connect_timed_out(after)),
            }
        })
    }
}

/// Verification on, webpki roots, `ring`.
fn default_tls() -> Result<rustls::ClientConfig, TransportError> {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    Ok(rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| TransportError::Tls(e.to_string()))?
    .with_root_certificates(roots)
    .with_no_client_auth())
}

/// A whole unary answer.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: StatusCode,
    pub(crate) body: Bytes,
    /// The `Retry-After` header, when the answer had a readable one.
    pub(crate) retry_after: Option<String>,
    /// The `Location` header, when the answer had a readable one (a redirect names it).
    pub(crate) location: Option<String>,
}

/// The `Location` header of an answer (bytes that are not UTF-8 replaced; the error that shows
/// it escapes and bounds it).
fn location(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::LOCATION)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

/// The `Retry-After` header of an answer, when it is readable text.
fn retry_after(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// What a request sends.
pub(crate) struct Outgoing<'a> {
    pub(crate) method: Method,
    pub(crate) uri: &'a Uri,
    pub(crate) body: Option<Bytes>,
    pub(crate) event_stream: bool,
}

/// A request outside the A2A protocol ([`HttpClient::exchange`]).
pub(crate) struct Exchange<'a> {
    pub(crate) method: Method,
    pub(crate) uri: &'a Uri,
    pub(crate) content_type: HeaderValue,
    pub(crate) accept: HeaderValue,
    pub(crate) body: Bytes,
}

/// The earliest of the caller's deadline and `now + timeout`, and which of them it is.
pub(crate) fn effective_deadline(
    opts: &CallOptions,
    default: Duration,
) -> (Instant, TimeoutPhase, Duration) {
    let timeout = opts.timeout.unwrap_or(default);
    let by_timeout = Instant::now() + timeout;
    match opts.deadline {
        Some(d) if d < by_timeout => (
            d,
            TimeoutPhase::Deadline,
            d.saturating_duration_since(Instant::now()),
        ),
        _ => (by_timeout, TimeoutPhase::Request, timeout),
    }
}

/// A stream's whole deadline, when the caller set one: when it passes, which phase it is, and
/// how long it was when the call began.
pub(crate) type WholeDeadline = Option<(Instant, TimeoutPhase, Duration)>;

/// The whole-stream limit: whichever of the caller's timeout and deadline is set (the earlier
/// when both are); with neither, `None` (only the idle timeout bounds the stream).
pub(crate) fn whole_stream_deadline(opts: &CallOptions) -> WholeDeadline {
    match (opts.timeout, opts.deadline) {
        (None, None) => None,
        (Some(timeout), _) => Some(effective_deadline(opts, timeout)),
        (None, Some(deadline)) => Some((
            deadline,
            TimeoutPhase::Deadline,
            deadline.saturating_duration_since(Instant::now()),
        )),
    }
}

impl HttpClient {
    /// A builder with default limits, webpki TLS and no headers hook.
    pub fn builder() -> HttpClientBuilder {
        HttpClientBuilder::default()
    }

    /// A client with every default.
    pub fn new() -> Result<Self, TransportError> {
        Self::builder().build()
    }

    /// The limits this client enforces.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    pub(crate) fn wire_tap(&self) -> &WireTap {
        &self.inner.wire
    }

    /// The rustls configuration this client connects with.
    pub(crate) fn tls(&self) -> &Arc<rustls::ClientConfig> {
        &self.inner.tls
    }

    /// The request-headers hook (credentials), when one is set.
    pub(crate) fn headers_hook(&self) -> Option<&Arc<dyn RequestHeaders>> {
        self.inner.headers.as_ref()
    }

    /// Tells the request-headers hook that requests to `uri` need fresh credentials (as a 401
    /// would); `false` without a hook. See [`crate::Transport::refresh_credentials`].
    pub(crate) async fn refresh_credentials(&self, uri: &Uri) -> Result<bool, Failure> {
        match self.headers_hook() {
            Some(hook) => hook.on_unauthorized(uri).await,
            None => Ok(false),
        }
    }

    /// Whether `A2A-Version` is sent (always, except in conformance tests).
    pub(crate) fn sends_version(&self) -> bool {
        self.inner.send_version
    }

    /// Fetches the public agent card. `url` is either the card URL itself (its path ends in
    /// `.json`) or the agent's base URL, under whose path `/.well-known/agent-card.json` is
    /// resolved (`http://h/agents/x` → `http://h/agents/x/.well-known/agent-card.json`).
    /// `A2A-Version: 1.0` is sent, as on every request.
    pub async fn fetch_agent_card(
        &self,
        url: &str,
        opts: &CallOptions,
    ) -> Result<AgentCard, TransportError> {
        let uri = card_uri(url)?;
        let reply = self
            .unary(
                Outgoing {
                    method: Method::GET,
                    uri: &uri,
                    body: None,
                    event_stream: false,
                },
                opts,
            )
            .await?;
        crate::card_compat::decode_agent_card(decode_json_reply(reply, "AgentCard")?)
    }

    /// Sends a request and reads the whole body within the request timeout (or the caller's
    /// deadline) and the body limit.
    pub(crate) async fn unary(
        &self,
        out: Outgoing<'_>,
        opts: &CallOptions,
    ) -> Result<Reply, TransportError> {
        let (deadline, phase, after) = effective_deadline(opts, self.inner.limits.request_timeout);
        let work = async {
            // The turn is held until the body is read: the connection is busy until then.
            let _turn = match &self.inner.unary_queues {
                Some(queues) => queues.turn(out.uri).await,
                None => None,
            };
            let resp = self.send(&out, opts).await?;
            let status = resp.status();
            let (parts, incoming) = resp.into_parts();
            let body = read_limited(incoming, self.inner.limits.max_response_body).await?;
            let tap = &self.inner.wire;
            tap.response(out.uri, status, &parts.headers, &body);
            Ok(Reply {
                status,
                body,
                retry_after: retry_after(&parts.headers),
                location: location(&parts.headers),
            })
        };
        tokio::time::timeout_at(deadline, work)
            .await
            .map_err(|_| TransportError::Timeout { phase, after })?
    }

    /// Sends one request outside the A2A protocol (a token or login request): no protocol
    /// headers and no request-headers hook, only `Content-Type` and `Accept`; the whole answer is
    /// read within the request timeout and at most `limit` bytes of body. The wire log shows the
    /// request without its body (it holds secrets) and the response redacted as always.
    pub(crate) async fn exchange(
        &self,
        request: Exchange<'_>,
        limit: usize,
    ) -> Result<Reply, TransportError> {
        let timeout = self.inner.limits.request_timeout;
        let work = async {
            let mut headers = HeaderMap::new();
            headers.insert(header::CONTENT_TYPE, request.content_type);
            headers.insert(header::ACCEPT, request.accept);
            self.inner
                .wire
                .request(&request.method, request.uri, &headers, b"");
            let mut req = Request::builder()
                .method(request.method)
                .uri(request.uri.clone())
                .body(GatedBody::new(Full::new(request.body), None))
                .map_err(|e| TransportError::InvalidRequest(e.to_string()))?;
            *req.headers_mut() = headers;
            let over_tls = request.uri.scheme() == Some(&http::uri::Scheme::HTTPS);
            let resp = self
                .inner
                .client
                .request(req)
                .await
                .map_err(|e| classify_client_error(&e, &self.inner.limits, over_tls))?;
            let status = resp.status();
            let (parts, incoming) = resp.into_parts();
            let body = read_limited(incoming, limit).await?;
            self.inner
                .wire
                .response(request.uri, status, &parts.headers, &body);
            Ok(Reply {
                status,
                body,
                retry_after: retry_after(&parts.headers),
                location: location(&parts.headers),
            })
        };
        tokio::time::timeout(timeout, work)
            .await
            .map_err(|_| TransportError::Timeout {
                phase: TimeoutPhase::Request,
                after: timeout,
            })?
    }

    /// Sends a streaming request and waits for the head (within the request timeout). An answer
    /// that is not a 2xx `text/event-stream` is read as an error body. Returns the open body and
    /// the deadline the whole stream must end by, when the caller set one.
    pub(crate) async fn open_stream(
        &self,
        out: Outgoing<'_>,
        opts: &CallOptions,
    ) -> Result<(Incoming, WholeDeadline), TransportError> {
        let (head_deadline, phase, after) =
            effective_deadline(opts, self.inner.limits.request_timeout);
        let limit = self.inner.limits.max_response_body;
        let work = async {
            let resp = self.send(&out, opts).await?;
            let status = resp.status();
            let is_sse = resp
                .headers()
                .get(header::CONTENT_TYPE)
                .is_some_and(is_event_stream);
            let tap = &self.inner.wire;
            if status.is_success() && is_sse {
                tap.response(out.uri, status, resp.headers(), b"");
                return Ok(resp.into_body());
            }
            let ct = resp
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("none")
                .to_owned();
            let (parts, incoming) = resp.into_parts();
            let body = read_limited(incoming, limit).await?;
            tap.response(out.uri, status, &parts.headers, &body);
            let e = classify_error_body(status.as_u16(), &body).unwrap_or_else(|| {
                TransportError::InvalidResponse(format!(
                    "expected an event stream, got HTTP {} with content-type {ct}",
                    status.as_u16()
                ))
            });
            let e = with_redirect(e, location(&parts.headers).as_deref());
            Err(with_retry_after(e, retry_after(&parts.headers).as_deref()))
        };
        let body = tokio::time::timeout_at(head_deadline, work)
            .await
            .map_err(|_| TransportError::Timeout { phase, after })??;
        Ok((body, whole_stream_deadline(opts)))
    }

    /// Builds and sends one request; on a 401 the hook may refresh credentials once.
    async fn send(
        &self,
        out: &Outgoing<'_>,
        opts: &CallOptions,
    ) -> Result<Response<Incoming>, TransportError> {
        let resp = self.send_once(out, opts).await?;
        if resp.status() == StatusCode::UNAUTHORIZED
            && let Some(hook) = &self.inner.headers
            && hook
                .on_unauthorized(out.uri)
                .await
                .map_err(TransportError::Headers)?
        {
            drop(resp);
            return self.send_once(out, opts).await;
        }
        Ok(resp)
    }

    async fn send_once(
        &self,
        out: &Outgoing<'_>,
        opts: &CallOptions,
    ) -> Result<Response<Incoming>, TransportError> {
        let mut headers = HeaderMap::new();
        protocol_headers(&mut headers, &opts.extensions, self.inner.send_version)
            .map_err(TransportError::Headers)?;
        if out.body.is_some() {
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
        }
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static(if out.event_stream {
                "text/event-stream"
            } else {
                "application/json"
            }),
        );
        if out.event_stream {
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        }
        if let Some(hook) = &self.inner.headers {
            let extra = hook
                .headers_for(out.uri)
                .await
                .map_err(TransportError::Headers)?;
            merge_hook_headers(&mut headers, extra).map_err(TransportError::Headers)?;
        }
        let mut req = Request::builder()
            .method(out.method.clone())
            .uri(out.uri.clone())
            .body(GatedBody::new(
                Full::new(out.body.clone().unwrap_or_default()),
                opts.send_gate.clone(),
            ))
            .map_err(|e| TransportError::InvalidRequest(e.to_string()))?;
        let tap = &self.inner.wire;
        tap.request(
            &out.method,
            out.uri,
            &headers,
            out.body.as_deref().unwrap_or_default(),
        );
        *req.headers_mut() = headers;
        self.inner.client.request(req).await.map_err(|e| {
            let over_tls = out.uri.scheme() == Some(&http::uri::Scheme::HTTPS);
            opts.withheld_or(classify_client_error(&e, &self.inner.limits, over_tls))
        })
    }
}

/// True when a `Content-Type` value names the media type `text/event-stream`: compared without
/// regard to case (RFC 9110 §8.3.1), parameters such as `charset` after a `;` ignored, and no
/// other media type taken for it (`text/event-streams` is not one).
fn is_event_stream(content_type: &HeaderValue) -> bool {
    content_type.to_str().is_ok_and(|v| {
        v.split(';')
            .next()
            .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("text/event-stream"))
    })
}

/// Reads a whole body, failing as soon as it passes `limit` bytes.
pub(crate) async fn read_limited(
    mut body: Incoming,
    limit: usize,
) -> Result<Bytes, TransportError> {
    let mut buf = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| classify_body_error(&e))?;
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.len() > limit {
                return Err(TransportError::ResponseTooLarge {
                    what: "response body",
                    limit,
                });
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok(buf.freeze())
}

/// Decodes a unary REST-style reply: an error envelope (any status) or a non-2xx is an error;
/// otherwise the body must be `T`.
///
/// A 2xx body that cannot hold an error envelope (see [`may_name_error`]) is decoded as `T` in
/// one pass; anything else, and such a body that is not a `T`, takes the checked path (the body
/// read as JSON for an envelope first), whose answer the one pass never changes.
pub(crate) fn decode_json_reply<T: serde::de::DeserializeOwned>(
    reply: Reply,
    what: &str,
) -> Result<T, TransportError> {
    if reply.status.is_success()
        && !may_name_error(&reply.body)
        && let Ok(decoded) = serde_json::from_slice(&reply.body)
    {
        return Ok(decoded);
    }
    checked_json_reply(reply, what)
}

/// The checked path of [`decode_json_reply`]: the body read as JSON for an error envelope, the
/// status, then the body as `T`.
pub(crate) fn checked_json_reply<T: serde::de::DeserializeOwned>(
    reply: Reply,
    what: &str,
) -> Result<T, TransportError> {
    if let Some(e) = classify_error_body(reply.status.as_u16(), &reply.body) {
        let e = with_redirect(e, reply.location.as_deref());
        return Err(with_retry_after(e, reply.retry_after.as_deref()));
    }
    serde_json::from_slice(&reply.body).map_err(|e| {
        TransportError::InvalidResponse(format!("the body is not a valid {what}: {e}"))
    })
}

/// True when `body` may have an `error` member: the key written out (`"error"`), or a `\u` escape
/// anywhere (an escaped key such as `"\u0065rror"` is the same key). A body for which this is
/// false holds no error envelope, so [`classify_error_body`] finds none in it.
pub(crate) fn may_name_error(body: &[u8]) -> bool {
    body.iter().enumerate().any(|(i, &b)| match b {
        b'"' => body[i..].starts_with(b"\"error\""),
        b'\\' => body.get(i + 1) == Some(&b'u'),
        _ => false,
    })
}

/// The card URL for a base URL or a card URL.
fn card_uri(url: &str) -> Result<Uri, TransportError> {
    let uri: Uri = url
        .parse()
        .map_err(|e| TransportError::InvalidRequest(format!("bad agent URL `{url}`: {e}")))?;
    if uri.scheme().is_none() || uri.host().is_none() {
        return Err(TransportError::InvalidRequest(format!(
            "the agent URL `{url}` is not absolute"
        )));
    }
    // An explicit card URL is used as given; any other URL is the agent's base URL, and the
    // well-known card path is resolved under its path (`http://h/agents/x` →
    // `http://h/agents/x/.well-known/agent-card.json`), keeping the query.
    if uri.path().ends_with(".json") {
        return Ok(uri);
    }
    let mut card = format!(
        "{}://{}{}{AGENT_CARD_PATH}",
        uri.scheme_str().unwrap_or("http"),
        uri.authority().map(|a| a.as_str()).unwrap_or_default(),
        uri.path().trim_end_matches('/'),
    );
    if let Some(q) = uri.query() {
        card.push('?');
        card.push_str(q);
    }
    card.parse()
        .map_err(|e| TransportError::InvalidRequest(format!("bad agent URL `{url}`: {e}")))
}

/// Parses an absolute http(s) URL; anything else is [`TransportError::InvalidRequest`].
pub fn parse_uri(url: &str) -> Result<Uri, TransportError> {
    let uri: Uri = url
        .parse()
        .map_err(|e| TransportError::InvalidRequest(format!("bad URL `{url}`: {e}")))?;
    match uri.scheme_str() {
        Some("http") | Some("https") if uri.host().is_some() => Ok(uri),
        _ => Err(TransportError::InvalidRequest(format!(
            "`{url}` is not an absolute http(s) URL"
        ))),
    }
}

pub(crate) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut src = e.source();
    while let Some(s) = src {
        let t = s.to_string();
        if !parts.contains(&t) {
            parts.push(t);
        }
        src = s.source();
    }
    parts.join(": ")
}

/// Finds a TLS error or a timeout anywhere in an error's source chain, looking inside the
/// (possibly nested) custom payloads of `io::Error`s too.
///
/// With `over_tls`, an `io::Error` of kind `InvalidData` also counts as a TLS error: tokio-rustls
/// reports every TLS failure (a fatal alert such as `CertificateRequired`) as one, and h2 keeps
/// only the kind and text of the I/O errors of its connection, so on HTTP/2 the `rustls::Error`
/// itself is gone.
pub(crate) fn find_cause(e: &(dyn std::error::Error + 'static), over_tls: bool) -> Option<Cause> {
    let mut timed_out = false;
    let mut invalid_data: Option<String> = None;
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(e);
    let mut depth = 0;
    while let Some(s) = src {
        depth += 1;
        if depth > 32 {
            break;
        }
        if let Some(t) = s.downcast_ref::<rustls::Error>() {
            return Some(Cause::Tls(crate::tls_words::describe(t)));
        }
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            timed_out |= io.kind() == std::io::ErrorKind::TimedOut;
            if over_tls && io.kind() == std::io::ErrorKind::InvalidData && invalid_data.is_none() {
                invalid_data = Some(io.to_string());
            }
            if let Some(inner) = io.get_ref() {
                src = Some(inner as &(dyn std::error::Error + 'static));
                continue;
            }
        }
        src = s.source();
    }
    match invalid_data {
        Some(m) => Some(Cause::Tls(crate::tls_words::describe_text(&m))),
        None => timed_out.then_some(Cause::TimedOut),
    }
}

pub(crate) enum Cause {
    /// A TLS failure, in words.
    Tls(String),
    /// An I/O timeout.
    TimedOut,
}

fn classify_client_error(
    e: &hyper_util::client::legacy::Error,
    limits: &Limits,
    over_tls: bool,
) -> TransportError {
    match find_cause(e, over_tls) {
        Some(Cause::Tls(m)) => TransportError::Tls(m),
        Some(Cause::TimedOut) => TransportError::Timeout {
            phase: TimeoutPhase::Connect,
            after: limits.connect_timeout,
        },
        None => TransportError::Connection(chain(e)),
    }
}

pub(crate) fn classify_body_error(e: &hyper::Error) -> TransportError {
    match find_cause(e, false) {
        Some(Cause::Tls(m)) => TransportError::Tls(m),
        _ => TransportError::Connection(chain(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_event_stream_media_type_is_matched_without_case_and_parameters() {
        for yes in [
            "text/event-stream",
            "text/event-stream; charset=utf-8",
            "Text/Event-Stream;charset=UTF-8",
            "  TEXT/EVENT-STREAM  ",
            "text/event-stream ; charset=utf-8",
        ] {
            assert!(is_event_stream(&HeaderValue::from_static(yes)), "{yes}");
        }
        for no in [
            "",
            "application/json",
            "text/event-streams",
            "text/event-stream-x; charset=utf-8",
            "text/plain; note=text/event-stream",
            "event-stream",
        ] {
            assert!(!is_event_stream(&HeaderValue::from_static(no)), "{no}");
        }
        // Not visible ASCII: never an event stream (and no panic).
        let opaque = HeaderValue::from_bytes(b"text/event-stream\xff").unwrap();
        assert!(!is_event_stream(&opaque));
    }

    #[test]
    fn card_uri_resolves_the_well_known_path_under_the_base_path() {
        assert_eq!(
            card_uri("http://127.0.0.1:8080").unwrap().to_string(),
            "http://127.0.0.1:8080/.well-known/agent-card.json"
        );
        assert_eq!(
            card_uri("http://h/").unwrap().to_string(),
            "http://h/.well-known/agent-card.json"
        );
        assert_eq!(
            card_uri("https://h/agents/x/card.json")
                .unwrap()
                .to_string(),
            "https://h/agents/x/card.json"
        );
        // A base URL with a path prefix: the card is resolved under the prefix.
        for base in ["http://h/agents/x", "http://h/agents/x/"] {
            assert_eq!(
                card_uri(base).unwrap().to_string(),
                "http://h/agents/x/.well-known/agent-card.json"
            );
        }
        assert_eq!(
            card_uri("http://h:8080/a?tenant=t").unwrap().to_string(),
            "http://h:8080/a/.well-known/agent-card.json?tenant=t"
        );
        assert_eq!(
            card_uri("http://h/agents/x/.well-known/agent-card.json")
                .unwrap()
                .to_string(),
            "http://h/agents/x/.well-known/agent-card.json"
        );
        assert_eq!(
            card_uri("not a url").unwrap_err().code_str(),
            "config.invalid"
        );
        assert!(card_uri("/relative").is_err());
    }

    #[test]
    fn parse_uri_accepts_only_absolute_http() {
        assert!(parse_uri("https://a.example/x").is_ok());
        assert!(parse_uri("ftp://a/x").is_err());
        assert!(parse_uri("a/x").is_err());
    }

    /// A plain HTTP/1 server on loopback whose every request waits for `gate` (when given)
    /// and is then answered `{}`; returns its URL and its count of accepted connections.
    async fn counting_server(
        gate: Option<Arc<tokio::sync::Barrier>>,
    ) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/x", listener.local_addr().unwrap());
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let gate = gate.clone();
                tokio::spawn(async move {
                    let answer = hyper::service::service_fn(move |_req| {
                        let gate = gate.clone();
                        async move {
                            if let Some(gate) = gate {
                                gate.wait().await;
                            }
                            Ok::<_, std::convert::Infallible>(Response::new(Full::new(
                                Bytes::from_static(b"{}"),
                            )))
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), answer)
                        .await;
                });
            }
        });
        (url, accepted)
    }

    /// `calls` GET requests to `url` at once through `client`, each read whole.
    async fn burst(client: &HttpClient, url: &str, calls: usize) {
        let uri: Uri = url.parse().unwrap();
        let requests = (0..calls).map(|_| {
            let (client, uri) = (client.clone(), uri.clone());
            tokio::spawn(async move {
                let out = Outgoing {
                    method: Method::GET,
                    uri: &uri,
                    body: None,
                    event_stream: false,
                };
                client.unary(out, &CallOptions::default()).await
            })
        });
        for request in futures_util::future::join_all(requests).await {
            assert_eq!(request.unwrap().unwrap().status, StatusCode::OK);
        }
    }

    #[tokio::test]
    async fn a_burst_of_unary_requests_to_one_origin_takes_the_queue_s_connections() {
        use std::sync::atomic::Ordering;
        let (url, accepted) = counting_server(None).await;
        let mut builder = HttpClient::builder().unary_per_origin(Some(4));
        // Patient enough that every request of the burst waits for its turn.
        builder.unary_patience = Duration::from_secs(60);
        let queued = builder.build().unwrap();
        burst(&queued, &url, 200).await;
        let with_queue = accepted.load(Ordering::SeqCst);
        // Each of the 4 turns holds a connection; one handed on before its connection is back
        // in the pool may start one more connect, so a few over 4, never one per request.
        assert!(
            (1..=8).contains(&with_queue),
            "{with_queue} connections for 200 requests, 4 at a time"
        );

        // The same burst without the queue: hyper-util connects for each request that finds no
        // idle connection.
        let (url, accepted) = counting_server(None).await;
        let unqueued = HttpClient::builder()
            .unary_per_origin(None)
            .build()
            .unwrap();
        burst(&unqueued, &url, 200).await;
        let without = accepted.load(Ordering::SeqCst);
        assert!(without > 8, "{without} connections without the queue");
    }

    #[tokio::test]
    async fn a_request_that_waits_past_the_patience_goes_on_without_its_turn() {
        // The server answers only when two requests are in at once: with one turn per origin,
        // the second request must go on without a turn, or neither is ever answered.
        let gate = Arc::new(tokio::sync::Barrier::new(2));
        let (url, accepted) = counting_server(Some(gate)).await;
        let mut builder = HttpClient::builder().unary_per_origin(Some(1));
        builder.unary_patience = Duration::from_millis(20);
        let client = builder.build().unwrap();
        burst(&client, &url, 2).await;
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    #[test]
    fn default_tls_builds() {
        assert!(default_tls().is_ok());
        assert!(HttpClient::new().is_ok());
    }

    #[tokio::test]
    async fn refused_connection_is_a2a_connection() {
        // Bind then drop a listener so the port is (very likely) closed.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        let c = HttpClient::new().unwrap();
        let err = c
            .fetch_agent_card(&format!("http://127.0.0.1:{port}"), &CallOptions::default())
            .await
            .unwrap_err();
        assert_eq!(err.code_str(), "a2a.connection", "{err}");
    }

    #[tokio::test]
    async fn tls_to_a_plain_server_is_a2a_tls_or_connection() {
        // A TCP server that answers garbage to the TLS ClientHello.
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        let srv = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            let (mut s, _) = l.accept().await.unwrap();
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
        });
        let c = HttpClient::new().unwrap();
        let err = c
            .fetch_agent_card(
                &format!("https://127.0.0.1:{port}"),
                &CallOptions::default(),
            )
            .await
            .unwrap_err();
        assert_eq!(err.code_str(), "a2a.tls", "{err}");
        srv.await.unwrap();
    }
}
