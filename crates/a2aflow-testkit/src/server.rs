//! The server: listener, connections, shutdown, and the handle tests hold.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::error::TestkitError;
use crate::fault::{Fault, Route};
use crate::ops::AgentRuntime;
use crate::request_log::{RecordedRequest, RequestLog};
use crate::spec::{AgentSpec, build_card};
use crate::tls::{self, ClientIdentity, TlsOptions};

/// Default interval of `: ping` comments on idle streams (the Python SDK's is 15 s).
pub const DEFAULT_PING_INTERVAL: Duration = Duration::from_secs(15);
/// Default number of requests the log keeps.
pub const DEFAULT_REQUEST_LOG_CAPACITY: usize = 4096;
/// How long `shutdown` waits for connections and scripts to finish.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// State shared by every connection.
pub(crate) struct Shared {
    pub(crate) agents: HashMap<String, Arc<AgentRuntime>>,
    pub(crate) token: CancellationToken,
    pub(crate) scripts: TaskTracker,
    pub(crate) log: RequestLog,
    pub(crate) ping_interval: Duration,
    open: AtomicUsize,
    total: AtomicUsize,
}

/// Builds a [`TestServer`].
#[derive(Debug)]
pub struct TestServerBuilder {
    agents: Vec<AgentSpec>,
    tls: Option<TlsOptions>,
    log_capacity: usize,
    ping_interval: Duration,
}

/// A running A2A test server on an ephemeral `127.0.0.1` port. Dropping it stops it (without
/// waiting); [`TestServer::shutdown`] stops it and waits.
///
/// Each agent lives under `/agents/{name}`: card at `/agents/{name}/.well-known/agent-card.json`,
/// JSON-RPC at `/agents/{name}/jsonrpc`, HTTP+JSON under `/agents/{name}/rest`. An agent serving
/// gRPC ([`Binding::Grpc`](crate::Binding::Grpc)) is reached at the server's origin, named by its
/// interface's `tenant` (gRPC paths name no agent).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use a2aflow_testkit::{AgentSpec, Fault, Route, TestServer};
/// let server = TestServer::builder()
///     .agent(AgentSpec::new("alpha"))
///     .spawn()
///     .await?;
/// assert!(server.card_url("alpha").ends_with("/agents/alpha/.well-known/agent-card.json"));
/// server.set_fault("alpha", Route::Send, Fault::ServerError { status: 502 })?;
/// server.shutdown().await?;
/// # Ok(()) }
/// ```
pub struct TestServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    base_url: String,
    conns: TaskTracker,
    accept: std::sync::Mutex<Option<JoinHandle<()>>>,
    ca_pem: Option<String>,
    cert_pem: Option<String>,
    client_identity: Option<ClientIdentity>,
}

impl std::fmt::Debug for TestServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestServer")
            .field("base_url", &self.base_url)
            .field("agents", &self.shared.agents.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl TestServerBuilder {
    /// Adds an agent.
    pub fn agent(mut self, spec: AgentSpec) -> Self {
        self.agents.push(spec);
        self
    }

    /// Serves HTTPS with a generated certificate (`None`: plain HTTP).
    pub fn bind_tls(mut self, tls: Option<TlsOptions>) -> Self {
        self.tls = tls;
        self
    }

    /// How many requests the log keeps (0 turns logging off, e.g. for benchmarks).
    pub fn request_log_capacity(mut self, n: usize) -> Self {
        self.log_capacity = n;
        self
    }

    /// Interval of `: ping` comments on idle streams.
    pub fn ping_interval(mut self, every: Duration) -> Self {
        self.ping_interval = every.max(Duration::from_millis(1));
        self
    }

    /// Binds `127.0.0.1:0` and starts serving.
    pub async fn spawn(self) -> Result<TestServer, TestkitError> {
        if self.agents.is_empty() {
            return Err(TestkitError::NoAgents);
        }
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(TestkitError::Bind)?;
        let addr = listener.local_addr().map_err(TestkitError::Bind)?;
        let material = self.tls.as_ref().map(tls::generate).transpose()?;
        let scheme = if material.is_some() { "https" } else { "http" };
        let base_url = format!("{scheme}://{addr}");
        let mut agents = HashMap::new();
        for spec in self.agents {
            let valid = !spec.name.is_empty()
                && spec
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
            if !valid || agents.contains_key(&spec.name) {
                return Err(TestkitError::InvalidAgentName(spec.name));
            }
            let card = build_card(&spec, &format!("{base_url}/agents/{}", spec.name));
            let card = Bytes::from(serde_json::to_vec(&card).unwrap_or_default());
            agents.insert(spec.name.clone(), Arc::new(AgentRuntime::new(spec, card)));
        }
        let shared = Arc::new(Shared {
            agents,
            token: CancellationToken::new(),
            scripts: TaskTracker::new(),
            log: RequestLog::new(self.log_capacity),
            ping_interval: self.ping_interval,
            open: AtomicUsize::new(0),
            total: AtomicUsize::new(0),
        });
        let conns = TaskTracker::new();
        let acceptor = material.as_ref().map(|m| m.acceptor.clone());
        let accept = tokio::spawn(accept_loop(
            listener,
            shared.clone(),
            acceptor,
            conns.clone(),
        ));
        Ok(TestServer {
            shared,
            addr,
            base_url,
            conns,
            accept: std::sync::Mutex::new(Some(accept)),
            ca_pem: material.as_ref().map(|m| m.ca_pem.clone()),
            client_identity: material.as_ref().and_then(|m| m.client.clone()),
            cert_pem: material.map(|m| m.cert_pem),
        })
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    conns: TaskTracker,
) {
    loop {
        let stream = tokio::select! {
            r = listener.accept() => match r {
                Ok((s, _)) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "testkit accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
            () = shared.token.cancelled() => return,
        };
        let _ = stream.set_nodelay(true);
        let guard = ConnGuard::new(shared.clone());
        conns.spawn(serve_conn(stream, tls.clone(), guard));
    }
}

/// Counts an open connection for as long as it lives.
struct ConnGuard(Arc<Shared>);

impl ConnGuard {
    fn new(shared: Arc<Shared>) -> Self {
        shared.open.fetch_add(1, Ordering::SeqCst);
        shared.total.fetch_add(1, Ordering::SeqCst);
        Self(shared)
    }
}

impl Drop for ConnGuard {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn serve_conn(stream: TcpStream, tls: Option<tokio_rustls::TlsAcceptor>, guard: ConnGuard) {
    match tls {
        None => serve_io(TokioIo::new(stream), &guard.0).await,
        Some(acceptor) => {
            let handshake = tokio::select! {
                r = tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream)) => r,
                () = guard.0.token.cancelled() => return,
            };
            if let Ok(Ok(tls_stream)) = handshake {
                serve_io(TokioIo::new(tls_stream), &guard.0).await;
            }
        }
    }
}

async fn serve_io<I>(io: I, shared: &Arc<Shared>)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let svc_shared = shared.clone();
    let svc = service_fn(move |req| crate::dispatch::handle(svc_shared.clone(), req));
    let builder = auto::Builder::new(TokioExecutor::new());
    let conn = builder.serve_connection(io, svc);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        () = shared.token.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(SHUTDOWN_TIMEOUT, conn).await;
        }
    }
}

impl TestServer {
    /// A builder with no agents, plain HTTP, request log on, 15 s pings.
    pub fn builder() -> TestServerBuilder {
        TestServerBuilder {
            agents: Vec::new(),
            tls: None,
            log_capacity: DEFAULT_REQUEST_LOG_CAPACITY,
            ping_interval: DEFAULT_PING_INTERVAL,
        }
    }

    /// Shortcut: a plain-HTTP server with one agent.
    pub async fn single(spec: AgentSpec) -> Result<TestServer, TestkitError> {
        Self::builder().agent(spec).spawn().await
    }

    /// `http://127.0.0.1:PORT` (or `https://…`).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `{base}/agents/{name}`.
    pub fn agent_url(&self, name: &str) -> String {
        format!("{}/agents/{name}", self.base_url)
    }

    /// The public card URL of an agent.
    pub fn card_url(&self, name: &str) -> String {
        format!("{}/.well-known/agent-card.json", self.agent_url(name))
    }

    /// The JSON-RPC interface URL of an agent.
    pub fn jsonrpc_url(&self, name: &str) -> String {
        format!("{}/jsonrpc", self.agent_url(name))
    }

    /// The HTTP+JSON interface URL of an agent.
    pub fn rest_url(&self, name: &str) -> String {
        format!("{}/rest", self.agent_url(name))
    }

    /// PEM of the CA that signed the server certificate (TLS only): configure it as a trust root.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// PEM of the server certificate itself (TLS only).
    pub fn cert_pem(&self) -> Option<&str> {
        self.cert_pem.as_deref()
    }

    /// A client certificate and key the server accepts (TLS with
    /// [`TlsOptions::require_client_cert`] only).
    pub fn client_identity(&self) -> Option<&ClientIdentity> {
        self.client_identity.as_ref()
    }

    fn agent(&self, name: &str) -> Result<&Arc<AgentRuntime>, TestkitError> {
        self.shared
            .agents
            .get(name)
            .ok_or_else(|| TestkitError::UnknownAgent(name.to_owned()))
    }

    /// Injects `fault` on every request to `route` of `agent` until cleared.
    pub fn set_fault(&self, agent: &str, route: Route, fault: Fault) -> Result<(), TestkitError> {
        self.agent(agent)?.faults.set(route, Some(fault), None);
        Ok(())
    }

    /// Injects `fault` on the next `times` requests to `route` of `agent` only.
    pub fn set_fault_times(
        &self,
        agent: &str,
        route: Route,
        fault: Fault,
        times: u32,
    ) -> Result<(), TestkitError> {
        self.agent(agent)?
            .faults
            .set(route, Some(fault), Some(times.max(1)));
        Ok(())
    }

    /// Removes the fault on one route.
    pub fn clear_fault(&self, agent: &str, route: Route) -> Result<(), TestkitError> {
        self.agent(agent)?.faults.set(route, None, None);
        Ok(())
    }

    /// Removes every fault of an agent.
    pub fn clear_faults(&self, agent: &str) -> Result<(), TestkitError> {
        self.agent(agent)?.faults.clear_all();
        Ok(())
    }

    /// Turns the `A2A-Version` check of an agent on or off.
    pub fn set_version_check(&self, agent: &str, on: bool) -> Result<(), TestkitError> {
        self.agent(agent)?
            .version_check
            .store(on, Ordering::Relaxed);
        Ok(())
    }

    /// Connections open right now.
    pub fn open_connections(&self) -> usize {
        self.shared.open.load(Ordering::SeqCst)
    }

    /// Connections accepted since start.
    pub fn total_connections(&self) -> usize {
        self.shared.total.load(Ordering::SeqCst)
    }

    /// Script tasks still running (delays, hangs).
    pub fn running_scripts(&self) -> usize {
        self.shared.scripts.len()
    }

    /// The requests received so far (oldest first, bounded).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.log.snapshot()
    }

    /// Empties the request log.
    pub fn clear_requests(&self) {
        self.shared.log.clear();
    }

    /// A task of an agent as ProtoJSON (full history and artifacts).
    pub fn task(&self, agent: &str, id: &str) -> Option<Value> {
        let a = self.shared.agents.get(agent)?;
        a.store.get(id).map(|e| e.snapshot(None, true))
    }

    /// How many tasks an agent holds.
    pub fn task_count(&self, agent: &str) -> usize {
        self.shared.agents.get(agent).map_or(0, |a| a.store.len())
    }

    /// Stops accepting, ends streams and held requests, cancels scripts, and waits (at most
    /// [`SHUTDOWN_TIMEOUT`]) until every connection and script task has finished.
    /// Idempotent; the counters and the request log stay readable afterwards.
    pub async fn shutdown(&self) -> Result<(), TestkitError> {
        self.shared.token.cancel();
        let accept = self.accept.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(accept) = accept {
            let _ = accept.await;
        }
        self.conns.close();
        self.shared.scripts.close();
        let conns = self.conns.clone();
        let scripts = self.shared.scripts.clone();
        tokio::time::timeout(SHUTDOWN_TIMEOUT, async move {
            conns.wait().await;
            scripts.wait().await;
        })
        .await
        .map_err(|_| TestkitError::ShutdownTimeout(SHUTDOWN_TIMEOUT))
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shared.token.cancel();
    }
}
