//! OpenTelemetry export of the engine's `tracing` spans (feature `otel`).
//!
//! The kernel opens a `workflow` span per run (`execution_id`, `workflow_id`), a `step` span per
//! step (`step`), a `task` span per remote subtask (`task_id`, `agent`), a `negotiation` span per
//! Negotiation-T exchange under its task (`task_id`, `context_id`, `remote_task_id`, `exchange`)
//! and a `routes` span per step's conditional edges (`step`). [`layer`] turns them into OpenTelemetry spans — their fields
//! become span attributes — and exports them in batches over OTLP HTTP/protobuf to a collector
//! (`POST {endpoint}/v1/traces`), using the same hyper 1 + rustls stack as the A2A transports: no
//! second HTTP client, no OpenSSL.
//!
//! ```no_run
//! # async fn demo() -> Result<(), a2aflow::otel::OtelError> {
//! use tracing_subscriber::layer::SubscriberExt;
//! let (otel, guard) = a2aflow::otel::layer(a2aflow::otel::OtelConfig::new(
//!     "http://127.0.0.1:4318",
//!     "incident-host",
//! ))?;
//! let subscriber = tracing_subscriber::registry().with(otel);
//! tracing::subscriber::set_global_default(subscriber).ok();
//! // ... run workflows ...
//! guard.shutdown()?; // flushes what is still buffered, bounded by the export timeout
//! # Ok(()) }
//! ```

use std::sync::Arc;
use std::time::Duration;

use a2aflow_model::{ErrorCode, Failure};
use a2aflow_protocol::tls::TlsConfig;
use async_trait::async_trait;
use bytes::Bytes;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SdkTracerProvider, Tracer};
use tracing::Subscriber;
use tracing_subscriber::registry::LookupSpan;

/// The `tracing` layer [`layer`] returns: it records spans into the OpenTelemetry pipeline.
pub type OtelLayer<S> = tracing_opentelemetry::OpenTelemetryLayer<S, Tracer>;

/// The name of the OpenTelemetry instrumentation scope the spans are reported under.
pub const INSTRUMENTATION_SCOPE: &str = "a2aflow";

/// Where and how to export spans.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OtelConfig {
    /// The collector's OTLP/HTTP base URL (`http://host:4318` or `https://…`); `/v1/traces` is
    /// appended when the URL has no path. A URL with a path is used as it is.
    pub endpoint: String,
    /// The `service.name` resource attribute; must not be blank.
    pub service_name: String,
    /// Deadline of one export request (connect, send and answer).
    pub timeout: Duration,
    /// Trust for `https` endpoints (CA bundle, client certificate); webpki roots by default.
    pub tls: TlsConfig,
}

impl OtelConfig {
    /// An endpoint and service name, a 10 s export timeout and the default TLS trust.
    pub fn new(endpoint: impl Into<String>, service_name: impl Into<String>) -> Self {
        OtelConfig {
            endpoint: endpoint.into(),
            service_name: service_name.into(),
            timeout: Duration::from_secs(10),
            tls: TlsConfig::default(),
        }
    }

    /// From the standard OpenTelemetry environment: the endpoint from
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else `OTEL_EXPORTER_OTLP_ENDPOINT`, else
    /// `http://localhost:4318`; the service name from `OTEL_SERVICE_NAME`, else `a2aflow`. Blank
    /// values count as unset; [`layer`] validates the result like any other configuration.
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Self {
        let set = |name: &str| get(name).filter(|v| !v.trim().is_empty());
        let endpoint = set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .or_else(|| set("OTEL_EXPORTER_OTLP_ENDPOINT"))
            .unwrap_or_else(|| "http://localhost:4318".to_owned());
        let service = set("OTEL_SERVICE_NAME").unwrap_or_else(|| INSTRUMENTATION_SCOPE.to_owned());
        OtelConfig::new(endpoint, service)
    }

    /// Sets the deadline of one export request.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the TLS trust for an `https` endpoint.
    pub fn with_tls(mut self, tls: TlsConfig) -> Self {
        self.tls = tls;
        self
    }
}

/// Why the OpenTelemetry pipeline could not be built or shut down.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtelError {
    /// The endpoint is not an absolute `http`/`https` URL.
    #[error("invalid OTLP endpoint {endpoint:?}: {reason}")]
    InvalidEndpoint {
        /// The endpoint as configured.
        endpoint: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The service name is blank.
    #[error("the OpenTelemetry service name must not be blank")]
    BlankServiceName,
    /// The export timeout is zero.
    #[error("the OTLP export timeout must be greater than zero")]
    ZeroTimeout,
    /// [`layer`] was called outside a tokio runtime; the exporter's HTTP client runs on it.
    #[error("a2aflow::otel::layer must be called inside a tokio runtime")]
    NoRuntime,
    /// The TLS configuration could not be loaded; its `config.tls` failure is passed through.
    #[error("{0}")]
    Tls(Failure),
    /// The OTLP exporter rejected its configuration.
    #[error("cannot build the OTLP exporter: {0}")]
    Exporter(String),
    /// Spans still buffered at shutdown could not be delivered to the collector.
    #[error("OpenTelemetry shutdown: {0}")]
    Shutdown(String),
}

impl OtelError {
    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            OtelError::Tls(f) => f.error_code().unwrap_or(ErrorCode::ConfigTls),
            OtelError::Shutdown(_) => ErrorCode::A2aConnection,
            OtelError::InvalidEndpoint { .. }
            | OtelError::BlankServiceName
            | OtelError::ZeroTimeout
            | OtelError::NoRuntime
            | OtelError::Exporter(_) => ErrorCode::ConfigInvalid,
        }
    }
}

impl From<OtelError> for Failure {
    fn from(e: OtelError) -> Self {
        Failure::new(e.code(), e.to_string())
    }
}

/// Owns the OpenTelemetry pipeline behind an [`OtelLayer`]. Dropping it shuts the pipeline down
/// (flushing buffered spans, bounded by the export timeout); [`OtelGuard::shutdown`] does the same
/// and reports a failed flush.
///
/// The flush waits for export requests that run on the runtime, so do not shut down on one of its
/// worker threads: from async code use `tokio::task::spawn_blocking(move || guard.shutdown())`, or
/// shut down after `block_on` returns. On a blocked worker the flush and the shutdown each give up
/// after the SDK's 5 s timeout and the buffered spans are lost.
#[derive(Debug)]
pub struct OtelGuard {
    provider: Option<SdkTracerProvider>,
}

impl OtelGuard {
    /// Exports what is buffered, then stops the pipeline; spans recorded later are dropped.
    pub fn shutdown(mut self) -> Result<(), OtelError> {
        let Some(p) = self.provider.take() else {
            return Ok(());
        };
        // The flush reports a failed export; shutdown alone would not.
        let flushed = p.force_flush();
        let stopped = p.shutdown();
        flushed
            .and(stopped)
            .map_err(|e| OtelError::Shutdown(e.to_string()))
    }
}

impl Drop for OtelGuard {
    fn drop(&mut self) {
        if let Some(p) = self.provider.take() {
            // Nowhere to report a failed flush from a destructor; `shutdown()` reports it.
            let _ = p.shutdown();
        }
    }
}

/// Builds the OTLP pipeline and the `tracing` layer that feeds it. Call inside a tokio runtime
/// (the exporter's requests run on it); add the layer to the host's subscriber and keep the guard
/// for as long as spans should be exported.
///
/// Nothing is sent until spans end; an unreachable collector does not fail this call, only the
/// exports (which the SDK drops after the timeout).
pub fn layer<S>(config: OtelConfig) -> Result<(OtelLayer<S>, OtelGuard), OtelError>
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    let endpoint = traces_endpoint(&config.endpoint)?;
    if config.service_name.trim().is_empty() {
        return Err(OtelError::BlankServiceName);
    }
    if config.timeout.is_zero() {
        return Err(OtelError::ZeroTimeout);
    }
    let runtime = tokio::runtime::Handle::try_current().map_err(|_| OtelError::NoRuntime)?;
    let tls = config.tls.build_client_config().map_err(OtelError::Tls)?;
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .enable_http2()
        .build();
    let client = OnRuntime {
        inner: Arc::new(opentelemetry_http::hyper::HyperClient::new(
            connector,
            config.timeout,
            None,
        )),
        runtime,
    };
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(endpoint)
        .with_timeout(config.timeout)
        .with_http_client(client)
        .build()
        .map_err(|e| OtelError::Exporter(e.to_string()))?;
    let provider = SdkTracerProvider::builder()
        .with_resource(service(&config.service_name))
        .with_batch_exporter(exporter)
        .build();
    Ok(layer_for(provider))
}

/// The layer and guard over a built provider (the one place both come from).
fn layer_for<S>(provider: SdkTracerProvider) -> (OtelLayer<S>, OtelGuard)
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    let tracer = provider.tracer(INSTRUMENTATION_SCOPE);
    (
        tracing_opentelemetry::layer().with_tracer(tracer),
        OtelGuard {
            provider: Some(provider),
        },
    )
}

fn service(name: &str) -> Resource {
    Resource::builder()
        .with_service_name(name.to_owned())
        .build()
}

/// The full `/v1/traces` URL for a configured endpoint.
fn traces_endpoint(endpoint: &str) -> Result<String, OtelError> {
    let bad = |reason: &str| OtelError::InvalidEndpoint {
        endpoint: endpoint.to_owned(),
        reason: reason.to_owned(),
    };
    let uri: http::Uri = endpoint
        .trim()
        .parse()
        .map_err(|e: http::uri::InvalidUri| bad(&e.to_string()))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        Some(_) => return Err(bad("the scheme must be http or https")),
        None => return Err(bad("an absolute http or https URL is required")),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(bad("the URL has no host"));
    }
    if uri.query().is_some() {
        return Err(bad("the URL must not carry a query string"));
    }
    let base = endpoint.trim().trim_end_matches('/');
    Ok(match uri.path() {
        "" | "/" => format!("{base}/v1/traces"),
        _ => base.to_owned(),
    })
}

/// Runs each export request on the tokio runtime [`layer`] was called in: the SDK's batch
/// processor exports from its own thread, where hyper finds no reactor.
#[derive(Debug)]
struct OnRuntime {
    inner: Arc<dyn HttpClient>,
    runtime: tokio::runtime::Handle,
}

#[async_trait]
impl HttpClient for OnRuntime {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let inner = self.inner.clone();
        // The request carries its own deadline (HyperClient's timeout); a runtime that shuts down
        // first aborts the task and the join reports it.
        self.runtime
            .spawn(async move { inner.send_bytes(request).await })
            .await
            .map_err(|e| Box::new(e) as HttpError)?
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap

    use super::*;
    use a2aflow_kernel::{CallbackError, ControlPoint, InMemoryClient, RunInput, RunOptions};
    use a2aflow_model::{MessageContent, TaskRequest, Workflow};
    use opentelemetry::Value;
    use opentelemetry_sdk::trace::{InMemorySpanExporter, SpanData};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tracing_subscriber::layer::SubscriberExt;

    struct Host;

    #[async_trait]
    impl ControlPoint for Host {
        async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
            Ok(MessageContent::text(request.description))
        }
    }

    fn attr(span: &SpanData, key: &str) -> Option<String> {
        span.attributes
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| match &kv.value {
                Value::String(s) => s.as_str().to_owned(),
                other => other.to_string(),
            })
    }

    /// An in-memory exporter behind the layer, installed as this thread's subscriber (until the
    /// returned default guard drops); spans are exported as each one ends.
    fn exporting() -> (
        InMemorySpanExporter,
        OtelGuard,
        tracing::subscriber::DefaultGuard,
    ) {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_resource(service("otel-test"))
            .with_simple_exporter(exporter.clone())
            .build();
        let (otel, guard) = layer_for(provider);
        let default = tracing::subscriber::set_default(tracing_subscriber::registry().with(otel));
        (exporter, guard, default)
    }

    fn named<'a>(spans: &'a [SpanData], name: &str) -> Vec<&'a SpanData> {
        spans.iter().filter(|s| s.name == name).collect()
    }

    #[tokio::test]
    async fn a_kernel_run_reaches_the_exporter_with_its_ids_as_attributes() {
        let (exporter, guard, _default) = exporting();
        let workflow: Workflow = serde_json::from_value(serde_json::json!({
            "id": "wf-otel", "name": "otel", "steps": [
                {"name": "look", "subtasks": [{"agent": "noc", "description": "look around"}],
                 "next": [{"step": "fix"}]},
                {"name": "fix", "subtasks": [{"agent": "ops", "description": "fix it"}]}
            ]
        }))
        .unwrap();
        let result = a2aflow_kernel::run(
            workflow,
            RunInput::default(),
            Arc::new(Host),
            Arc::new(InMemoryClient::new()),
            RunOptions::default(),
        )
        .await;
        assert!(result.success, "{:?}", result.failure);
        // The simple processor exported each span as it ended (the exporter forgets them on
        // shutdown, so read them first).
        let spans = exporter.get_finished_spans().unwrap();
        guard.shutdown().unwrap();
        let runs = named(&spans, "workflow");
        assert_eq!(runs.len(), 1);
        let run = runs[0];
        assert_eq!(
            attr(run, "execution_id").as_deref(),
            Some(result.execution_id.as_str())
        );
        assert_eq!(attr(run, "workflow_id").as_deref(), Some("wf-otel"));
        assert_eq!(run.instrumentation_scope.name(), INSTRUMENTATION_SCOPE);

        let steps = named(&spans, "step");
        let mut step_names: Vec<String> = steps.iter().filter_map(|s| attr(s, "step")).collect();
        step_names.sort();
        assert_eq!(step_names, ["fix", "look"]);
        for step in &steps {
            assert_eq!(step.parent_span_id, run.span_context.span_id());
            assert_eq!(step.span_context.trace_id(), run.span_context.trace_id());
        }

        let tasks = named(&spans, "task");
        assert_eq!(tasks.len(), 2);
        let look = steps
            .iter()
            .find(|s| attr(s, "step").as_deref() == Some("look"))
            .unwrap();
        let task = tasks
            .iter()
            .find(|t| attr(t, "agent").as_deref() == Some("noc"))
            .unwrap();
        assert_eq!(task.parent_span_id, look.span_context.span_id());
        let look_result = result.steps.iter().find(|s| s.step_name == "look").unwrap();
        assert_eq!(
            attr(task, "task_id").as_deref(),
            Some(look_result.task_results[0].task_id.as_str())
        );
    }

    /// Answers every proposal with a text reply.
    struct Negotiator;

    #[async_trait]
    impl ControlPoint for Negotiator {
        async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
            Ok(MessageContent::text(request.description))
        }

        async fn on_negotiation(
            &self,
            _request: a2aflow_model::NegotiationRequest,
        ) -> Result<a2aflow_model::NegotiationReply, CallbackError> {
            Ok(a2aflow_model::NegotiationReply::Send {
                content: MessageContent::text("accept"),
            })
        }
    }

    #[tokio::test]
    async fn each_negotiation_exchange_is_a_span_under_its_task() {
        let (exporter, guard, _default) = exporting();
        let workflow: Workflow = serde_json::from_value(serde_json::json!({
            "id": "wf-neg", "name": "neg", "steps": [
                {"name": "haggle", "subtasks": [{"agent": "seller", "description": "a price"}]}
            ]
        }))
        .unwrap();
        let client = InMemoryClient::new().agent(
            "seller",
            a2aflow_kernel::AgentScript::reply(a2aflow_kernel::ScriptedReply::Negotiate {
                rounds: 2,
                then: Box::new(a2aflow_kernel::ScriptedReply::Echo),
            }),
        );
        let result = a2aflow_kernel::run(
            workflow,
            RunInput::default(),
            Arc::new(Negotiator),
            Arc::new(client),
            RunOptions::default(),
        )
        .await;
        assert!(result.success, "{:?}", result.failure);
        let spans = exporter.get_finished_spans().unwrap();
        guard.shutdown().unwrap();
        let task = named(&spans, "task")[0];
        let mut exchanges: Vec<(String, String, String)> = named(&spans, "negotiation")
            .iter()
            .map(|n| {
                assert_eq!(n.parent_span_id, task.span_context.span_id());
                (
                    attr(n, "task_id").unwrap(),
                    attr(n, "exchange").unwrap(),
                    attr(n, "context_id").unwrap(),
                )
            })
            .collect();
        exchanges.sort();
        let view = &result.steps[0].task_results[0];
        assert_eq!(exchanges.len(), 2);
        for (i, (task_id, exchange, context_id)) in exchanges.iter().enumerate() {
            assert_eq!(task_id, &view.task_id);
            assert_eq!(exchange, &(i + 1).to_string());
            assert!(!context_id.is_empty());
        }
    }

    #[test]
    fn the_endpoint_gets_the_traces_path_when_it_has_none() {
        assert_eq!(
            traces_endpoint("http://127.0.0.1:4318").unwrap(),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            traces_endpoint("https://otel.example/").unwrap(),
            "https://otel.example/v1/traces"
        );
        assert_eq!(
            traces_endpoint("http://gw:8080/otlp/v1/traces").unwrap(),
            "http://gw:8080/otlp/v1/traces"
        );
    }

    #[test]
    fn from_env_prefers_the_traces_endpoint_and_ignores_blank_values() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(name, _)| *name == k)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        let c = OtelConfig::from_lookup(env(&[]));
        assert_eq!(c.endpoint, "http://localhost:4318");
        assert_eq!(c.service_name, "a2aflow");
        let c = OtelConfig::from_lookup(env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://base:4318"),
            ("OTEL_SERVICE_NAME", "host-a"),
        ]));
        assert_eq!(c.endpoint, "http://base:4318");
        assert_eq!(c.service_name, "host-a");
        let c = OtelConfig::from_lookup(env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://base:4318"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://traces:4318/v1/traces",
            ),
            ("OTEL_SERVICE_NAME", "  "),
        ]));
        assert_eq!(c.endpoint, "http://traces:4318/v1/traces");
        assert_eq!(c.service_name, "a2aflow");
    }

    #[test]
    fn a_bad_endpoint_is_config_invalid() {
        for bad in [
            "",
            "localhost:4318",
            "ftp://host/",
            "http://",
            "http://host/v1/traces?token=x",
            "not a url",
        ] {
            let e = traces_endpoint(bad).unwrap_err();
            assert!(
                matches!(e, OtelError::InvalidEndpoint { .. }),
                "{bad:?}: {e:?}"
            );
            assert_eq!(e.code(), ErrorCode::ConfigInvalid);
        }
    }

    fn try_layer(config: OtelConfig) -> Result<(), OtelError> {
        layer::<tracing_subscriber::Registry>(config).map(|_| ())
    }

    #[test]
    fn layer_outside_a_runtime_is_a_typed_error() {
        let e = try_layer(OtelConfig::new("http://127.0.0.1:4318", "svc")).unwrap_err();
        assert!(matches!(e, OtelError::NoRuntime), "{e:?}");
        assert_eq!(Failure::from(e).code, "config.invalid");
    }

    #[tokio::test]
    async fn blank_service_name_zero_timeout_and_bad_tls_are_rejected() {
        let e = try_layer(OtelConfig::new("http://127.0.0.1:4318", " ")).unwrap_err();
        assert!(matches!(e, OtelError::BlankServiceName), "{e:?}");
        let e =
            try_layer(OtelConfig::new("http://127.0.0.1:4318", "svc").with_timeout(Duration::ZERO))
                .unwrap_err();
        assert!(matches!(e, OtelError::ZeroTimeout), "{e:?}");
        let e = try_layer(
            OtelConfig::new("https://127.0.0.1:4318", "svc")
                .with_tls(TlsConfig::new().with_ca_bundle("/nonexistent/ca.pem")),
        )
        .unwrap_err();
        assert!(matches!(e, OtelError::Tls(_)), "{e:?}");
        assert_eq!(e.code(), ErrorCode::ConfigTls);
    }

    /// A one-shot OTLP/HTTP collector: answers 200 to the first request and hands over its
    /// request line, headers and body.
    async fn collector(listener: tokio::net::TcpListener) -> (String, Vec<u8>) {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 8192];
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let n = s.read(&mut chunk).await.unwrap();
            assert!(n > 0, "connection closed before the headers ended");
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let length: usize = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse().ok())?
            })
            .expect("content-length");
        while buf.len() < head_end + length {
            let n = s.read(&mut chunk).await.unwrap();
            assert!(n > 0, "connection closed before the body ended");
            buf.extend_from_slice(&chunk[..n]);
        }
        s.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
        )
        .await
        .unwrap();
        (head, buf[head_end..head_end + length].to_vec())
    }

    #[test]
    fn an_unreachable_collector_fails_the_flush_not_the_host() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (otel, guard) = rt.block_on(async {
            // A port that was just free: nothing listens there.
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let endpoint = format!("http://{}", listener.local_addr().unwrap());
            drop(listener);
            layer::<tracing_subscriber::Registry>(
                OtelConfig::new(endpoint, "svc").with_timeout(Duration::from_secs(2)),
            )
            .unwrap()
        });
        tracing::subscriber::with_default(tracing_subscriber::registry().with(otel), || {
            tracing::info_span!("workflow", execution_id = "exec-1").in_scope(|| {});
        });
        let e = guard.shutdown().unwrap_err();
        assert!(matches!(e, OtelError::Shutdown(_)), "{e:?}");
        assert_eq!(e.code(), ErrorCode::A2aConnection);
    }

    fn contains(haystack: &[u8], needle: &[u8]) -> bool {
        haystack.windows(needle.len()).any(|w| w == needle)
    }

    #[test]
    fn spans_are_posted_to_the_collector_as_otlp_protobuf() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (otel, guard, received) = rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let endpoint = format!("http://{}", listener.local_addr().unwrap());
            let received = tokio::spawn(collector(listener));
            let (otel, guard) = layer::<tracing_subscriber::Registry>(
                OtelConfig::new(endpoint, "otel-wire-test").with_timeout(Duration::from_secs(5)),
            )
            .unwrap();
            (otel, guard, received)
        });
        tracing::subscriber::with_default(tracing_subscriber::registry().with(otel), || {
            tracing::info_span!("workflow", execution_id = "exec-42", workflow_id = "wf-9")
                .in_scope(|| tracing::info_span!("step", step = "look").in_scope(|| {}));
        });
        // From this (non-runtime) thread: the flush's request runs on the runtime's workers.
        guard.shutdown().unwrap();
        let (head, body) = rt
            .block_on(async { tokio::time::timeout(Duration::from_secs(10), received).await })
            .expect("the collector got a request")
            .unwrap();
        assert!(head.starts_with("POST /v1/traces HTTP/1.1\r\n"), "{head}");
        assert!(
            head.to_ascii_lowercase()
                .contains("content-type: application/x-protobuf"),
            "{head}"
        );
        for needle in [
            "otel-wire-test",
            "workflow",
            "execution_id",
            "exec-42",
            "workflow_id",
            "wf-9",
            "step",
            "look",
        ] {
            assert!(
                contains(&body, needle.as_bytes()),
                "{needle} not in the body"
            );
        }
    }
}
