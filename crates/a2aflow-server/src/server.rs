//! [`Server`]: the builder a host embeds, the listener and its connections, and the
//! [`ServerHandle`] with the bound address and a graceful shutdown.

use crate::agents::{Agents, MakeControlPoint, Resolved};
use crate::app::{App, RequestLimits, handle};
use crate::auth::Callers;
use crate::card::{card, servable_name};
use crate::grpc::{Door, is_grpc};
use crate::index::IndexFile;
use crate::layers::wrap;
use crate::runs::{Host, RunLimits, Runs};
use a2a::AgentCard;
use a2aflow::kernel::{ControlPoint, DelegationPolicy};
use a2aflow::model::{ErrorCode, Failure, Workflow};
use a2aflow::{AgentEndpoint, EngineConfig, RunStore, check_agents};
use bytes::Bytes;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// What the server accepts from clients. Every limit, when exceeded, is answered with a typed
/// A2A error (`-32600` / `INVALID_ARGUMENT` for a body, `-32004` / `FAILED_PRECONDITION` for
/// runs and subscribers), never a hang.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Limits {
    /// The largest request body read. Default 1 MiB.
    pub max_body_bytes: usize,
    /// At most this many runs in flight at once, for all served workflows. Default 64.
    pub runs_in_flight: usize,
    /// At most this many runs in flight at once for one caller (the anonymous caller of an
    /// open server counts as one). Default 64, as many as `runs_in_flight`.
    pub runs_per_caller: usize,
    /// At most this many open streams per task (SendStreamingMessage and SubscribeToTask).
    /// Default 16.
    pub subscribers_per_task: usize,
    /// At most this many finished tasks (completed, failed, cancelled, rejected) are kept in
    /// memory; past it the oldest finished are dropped and answered as tasks that never
    /// existed (GetTask, SubscribeToTask and CancelTask: `TaskNotFoundError`; ListTasks: not
    /// listed). A running task, or one waiting at a gate, is never dropped. With a store the
    /// run stays journaled there (`a2aflow runs` shows it), and a restarted server keeps the
    /// same newest finished tasks. Default 10,000 (each costs a few KiB: its record and its
    /// result document).
    pub finished_tasks_kept: usize,
    /// The deadline on producing a response's head; a blocking SendMessage whose run has not
    /// settled by then answers with the task as it stands. Default 660 s (a run's default
    /// budget of 600 s and a margin).
    pub request_timeout: Duration,
    /// The interval of SSE `: ping` comments while a stream has nothing to say. Default 15 s.
    pub ping_interval: Duration,
    /// The interval of HTTP/2 PING frames on every HTTP/2 connection (gRPC, and HTTP/2
    /// clients of the HTTP bindings); a client that does not acknowledge one within
    /// [`Limits::http2_keep_alive_timeout`] is gone: its connection is closed and the streams
    /// it held (SendStreamingMessage, SubscribeToTask) are dropped, each giving its subscriber
    /// place back. `None` sends no pings. Default 20 s.
    pub http2_keep_alive_interval: Option<Duration>,
    /// How long a PING may go unacknowledged. Default 20 s.
    pub http2_keep_alive_timeout: Duration,
    /// How long a shutdown waits for open streams, then for cancelled runs. Default 10 s.
    pub shutdown_grace: Duration,
    /// How long CancelTask waits for its run to end. Default 30 s.
    pub cancel_wait: Duration,
    /// With agents discovered after the server listens ([`ServerBuilder::discover_agents`]),
    /// how long a run waits for their cards before it fails with the last discovery failure.
    /// Default 30 s.
    pub discovery_wait: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 1024 * 1024,
            runs_in_flight: 64,
            runs_per_caller: 64,
            subscribers_per_task: 16,
            finished_tasks_kept: 10_000,
            request_timeout: Duration::from_secs(660),
            ping_interval: Duration::from_secs(15),
            http2_keep_alive_interval: Some(Duration::from_secs(20)),
            http2_keep_alive_timeout: Duration::from_secs(20),
            shutdown_grace: Duration::from_secs(10),
            cancel_wait: Duration::from_secs(30),
            discovery_wait: Duration::from_secs(30),
        }
    }
}

/// Serves published workflows as A2A 1.0 agents, each under `/agents/{workflow name}/`: its
/// card at `.well-known/agent-card.json`, JSON-RPC at `jsonrpc`, HTTP+JSON under `rest`.
#[derive(Debug)]
pub struct Server;

impl Server {
    /// A builder: no workflows, no ControlPoint, default configuration and limits, no store,
    /// listening on `127.0.0.1:0`.
    pub fn builder() -> ServerBuilder {
        ServerBuilder {
            workflows: Vec::new(),
            control_point: None,
            agents: Vec::new(),
            discovery: None,
            config: EngineConfig::default(),
            store: None,
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            limits: Limits::default(),
            callers: Callers::new(),
            allow_unauthenticated: false,
            delegation: DelegationPolicy::default(),
        }
    }
}

/// Builds a [`Server`]; [`ServerBuilder::start`] binds it.
pub struct ServerBuilder {
    workflows: Vec<Workflow>,
    control_point: Option<Arc<dyn ControlPoint>>,
    agents: Vec<AgentEndpoint>,
    /// The agents to discover after listening, and how the ControlPoint is made from them.
    discovery: Option<(Vec<(String, String)>, MakeControlPoint)>,
    config: EngineConfig,
    store: Option<(Arc<dyn RunStore>, PathBuf)>,
    listen: SocketAddr,
    limits: Limits,
    callers: Callers,
    allow_unauthenticated: bool,
    delegation: DelegationPolicy,
}

impl ServerBuilder {
    /// Publishes `workflow` as the agent named after it.
    pub fn workflow(mut self, workflow: Workflow) -> Self {
        self.workflows.push(workflow);
        self
    }

    /// The host's ControlPoint: it decides every served run's content, routes and replies (the
    /// inbound message reaches it as the run's runtime intent).
    pub fn control_point(mut self, control_point: Arc<dyn ControlPoint>) -> Self {
        self.control_point = Some(control_point);
        self
    }

    /// The agents the served workflows call, their cards already fetched.
    pub fn agents(mut self, agents: Vec<AgentEndpoint>) -> Self {
        self.agents = agents;
        self
    }

    /// The agents the served workflows call, as `(name, URL)` (card URL or agent base URL),
    /// discovered after the server listens — so that servers whose workflows call each other
    /// can all start — instead of [`ServerBuilder::agents`]. Their cards are fetched in the
    /// background until all answer (retried with a growing pause, until the server stops);
    /// `control_point` then makes the host's ControlPoint from them (each card's `name` is the
    /// agent's name), in place of [`ServerBuilder::control_point`]. A run that starts before
    /// that waits for it at most [`Limits::discovery_wait`], then fails with the last discovery
    /// failure's code (`a2a.connection` for an agent that does not answer); the next run tries
    /// again.
    pub fn discover_agents<F>(mut self, agents: Vec<(String, String)>, control_point: F) -> Self
    where
        F: FnOnce(&[AgentCard]) -> Arc<dyn ControlPoint> + Send + 'static,
    {
        self.discovery = Some((agents, Box::new(control_point)));
        self
    }

    /// The engine configuration of the served runs (bindings, timeouts, limits, TLS,
    /// credentials).
    pub fn config(mut self, config: EngineConfig) -> Self {
        self.config = config;
        self
    }

    /// Journals every served run in `store` and keeps the served-task index (which run is
    /// which agent's task, in which context) in the file `index`: after a restart with the same
    /// two, GetTask and ListTasks answer for the runs of earlier processes, and the runs they
    /// left unfinished are resumed as soon as their last driver's lease lapsed or was released
    /// (the lease length is the configuration's `store_lease_secs` when the host opened the
    /// store with it): the tasks follow the resumed runs. Either way the server answers for the
    /// newest [`Limits::finished_tasks_kept`] finished tasks (the store keeps every run; the
    /// index drops the lines of the others). Without a store, runs live in memory only.
    pub fn store(mut self, store: Arc<dyn RunStore>, index: impl Into<PathBuf>) -> Self {
        self.store = Some((store, index.into()));
        self
    }

    /// The address to listen on (`127.0.0.1:0`, a free port, by default).
    pub fn listen(mut self, addr: SocketAddr) -> Self {
        self.listen = addr;
        self
    }

    /// The request limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Admits only `callers` (bearer tokens, API keys): the cards name their security schemes,
    /// a request without a valid credential is refused with HTTP 401, every run records the
    /// caller who started it, and a caller sees (gets, lists, subscribes to, cancels, follows
    /// up) only its own runs: any other task id is answered as one that does not exist.
    /// Without callers (the default) the server is open: every request is one anonymous caller.
    pub fn callers(mut self, callers: Callers) -> Self {
        self.callers = callers;
        self
    }

    /// The limits an inbound delegation request (a SendMessage with the delegation request
    /// metadata) must pass before its run starts: depth, a cycle through this server's runs,
    /// fan-out, budget. A refusal is the `TASK_STATE_REJECTED` record with its
    /// `a2aflow/refusalReason`, and nothing runs. Default [`DelegationPolicy::default`].
    pub fn delegation(mut self, policy: DelegationPolicy) -> Self {
        self.delegation = policy;
        self
    }

    /// Lets an open server (no callers) listen on an address that is not loopback. Without
    /// it, [`ServerBuilder::start`] refuses such an address: anyone who can reach it could
    /// start and read every run.
    pub fn allow_unauthenticated(mut self) -> Self {
        self.allow_unauthenticated = true;
        self
    }

    /// Checks the setup, binds the listener and starts serving on the caller's runtime.
    ///
    /// # Errors
    /// `config.invalid` with what to fix: no workflow, no ControlPoint (nor agents to discover), a workflow name that
    /// cannot be a URL path segment or is published twice, an address that cannot be bound, a
    /// non-loopback address for an open server (see [`ServerBuilder::allow_unauthenticated`]);
    /// `workflow.unknown_agent` for a workflow naming an agent not given; `store.corrupt` for an
    /// unreadable index file; the configuration's own errors.
    pub async fn start(self) -> Result<ServerHandle, Failure> {
        if self.control_point.is_none() && self.discovery.is_none() {
            return Err(invalid(
                "a server needs the host's ControlPoint (ServerBuilder::control_point, or \
                 ServerBuilder::discover_agents)",
            ));
        }
        let workflows = self.published()?;
        self.config.validate()?;
        self.check_exposure()?;
        let listener = TcpListener::bind(self.listen).await.map_err(|e| {
            invalid(format!("cannot listen on {}: {e}", self.listen))
                .with_detail("listen", self.listen.to_string())
        })?;
        let addr = listener
            .local_addr()
            .map_err(|e| invalid(format!("the listener has no address: {e}")))?;
        let base_url = format!("http://{addr}");
        let cards = cards(&workflows, &base_url, &addr, &self.callers)?;
        let (store, index) = match self.store {
            Some((store, path)) => (Some(store), Some(IndexFile::open(&path)?)),
            None => (None, None),
        };
        let limits = self.limits;
        let (agents, discovery) = match (self.discovery, self.control_point) {
            (Some((named, make)), _) => {
                let (agents, pending) = Agents::later(named, make, limits.discovery_wait);
                (agents, Some(pending))
            }
            (None, Some(control_point)) => (
                Agents::ready(Resolved::new(self.agents, control_point)),
                None,
            ),
            (None, None) => return Err(invalid("a server needs the host's ControlPoint")),
        };
        let config = Arc::new(self.config);
        let host = Host {
            agents,
            config: config.clone(),
            store,
            delegation: self.delegation,
        };
        let runs = Runs::new(
            host,
            workflows,
            index,
            RunLimits {
                runs_in_flight: limits.runs_in_flight.max(1),
                runs_per_caller: limits.runs_per_caller.max(1),
                subscribers_per_task: limits.subscribers_per_task.max(1),
                finished_tasks_kept: limits.finished_tasks_kept.max(1),
                cancel_wait: limits.cancel_wait,
            },
        );
        runs.resume_unfinished().await;
        let mut names: Vec<String> = cards.keys().cloned().collect();
        names.sort();
        let app = Arc::new(App {
            runs,
            cards,
            limits: RequestLimits {
                max_body_bytes: limits.max_body_bytes,
                send_wait: limits
                    .request_timeout
                    .saturating_sub(Duration::from_secs(1)),
                ping: limits.ping_interval,
            },
            callers: self.callers,
        });
        let stop = CancellationToken::new();
        if let Some(pending) = discovery {
            app.runs.discover(pending, config, stop.clone());
        }
        let conns = TaskTracker::new();
        let accept = tokio::spawn(accept_loop(
            listener,
            app.clone(),
            crate::grpc::door(app.clone()),
            limits,
            stop.clone(),
            conns.clone(),
        ));
        Ok(ServerHandle {
            addr,
            base_url,
            names,
            app,
            stop,
            conns,
            accept,
            grace: limits.shutdown_grace,
        })
    }

    /// An open server listens on loopback only, unless the host allowed otherwise.
    fn check_exposure(&self) -> Result<(), Failure> {
        if self.callers.is_empty() && !self.allow_unauthenticated && !self.listen.ip().is_loopback()
        {
            return Err(invalid(format!(
                "refusing to listen on {} without authentication: anyone who reaches it could \
                 start and read every run; admit callers (ServerBuilder::callers, `serve \
                 --auth FILE`), listen on a loopback address, or allow it explicitly \
                 (ServerBuilder::allow_unauthenticated, `--allow-unauthenticated`)",
                self.listen
            ))
            .with_detail("listen", self.listen.to_string()));
        }
        Ok(())
    }

    /// The published workflows by name, each checked.
    fn published(&self) -> Result<HashMap<String, Arc<Workflow>>, Failure> {
        if self.workflows.is_empty() {
            return Err(invalid(
                "a server publishes at least one workflow (ServerBuilder::workflow)",
            ));
        }
        let mut published = HashMap::new();
        for workflow in &self.workflows {
            let name = workflow.name.as_str();
            if !servable_name(name) {
                return Err(invalid(format!(
                    "workflow name {name:?} cannot be served as /agents/{{name}}/: use ASCII \
                     letters, digits, '.', '_' and '-'"
                ))
                .with_detail("workflow", name));
            }
            match &self.discovery {
                Some((named, _)) => check_agents(workflow, named.iter().map(|(n, _)| n.as_str()))?,
                None => check_agents(workflow, self.agents.iter().map(|a| a.name()))?,
            }
            if published
                .insert(name.to_owned(), Arc::new(workflow.clone()))
                .is_some()
            {
                return Err(invalid(format!(
                    "workflow name '{name}' is published twice; each agent needs its own name"
                ))
                .with_detail("workflow", name));
            }
        }
        Ok(published)
    }
}

fn cards(
    workflows: &HashMap<String, Arc<Workflow>>,
    base_url: &str,
    addr: &SocketAddr,
    callers: &Callers,
) -> Result<HashMap<String, Bytes>, Failure> {
    let security = callers.card_security();
    workflows
        .iter()
        .map(|(name, workflow)| {
            let mut card = card(workflow, &format!("{base_url}/agents/{name}"), addr);
            if let Some((schemes, requirements)) = &security {
                card.security_schemes = Some(schemes.clone());
                card.security_requirements = Some(requirements.clone());
            }
            serde_json::to_vec(&card)
                .map(|json| (name.clone(), Bytes::from(json)))
                .map_err(|e| invalid(format!("the card of '{name}' cannot be written: {e}")))
        })
        .collect()
}

fn invalid(message: impl Into<String>) -> Failure {
    Failure::new(ErrorCode::ConfigInvalid, message)
}

async fn accept_loop(
    listener: TcpListener,
    app: Arc<App>,
    grpc: Door,
    limits: Limits,
    stop: CancellationToken,
    conns: TaskTracker,
) {
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!(target: "a2aflow::serve", error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = stop.cancelled() => return,
        };
        let _ = stream.set_nodelay(true);
        conns.spawn(serve_connection(
            stream,
            app.clone(),
            grpc.clone(),
            limits,
            stop.clone(),
        ));
    }
}

/// Serves one connection: gRPC calls (by their content type) to the gRPC door, every other
/// request to the HTTP doors, all behind the same layers.
async fn serve_connection(
    stream: TcpStream,
    app: Arc<App>,
    grpc: Door,
    limits: Limits,
    stop: CancellationToken,
) {
    let service = tower::service_fn(move |request: http::Request<_>| {
        let app = app.clone();
        let grpc = grpc.clone();
        async move {
            let response = if is_grpc(&request) {
                crate::grpc::call(grpc, request).await
            } else {
                handle(&app, request).await
            };
            Ok::<_, std::convert::Infallible>(response)
        }
    });
    let service = wrap(service, limits.request_timeout, limits.max_body_bytes);
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(limits.http2_keep_alive_interval)
        .keep_alive_timeout(limits.http2_keep_alive_timeout);
    let conn = builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        () = stop.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}

/// A running server: its address, its agents' URLs, and [`ServerHandle::shutdown`].
pub struct ServerHandle {
    addr: SocketAddr,
    base_url: String,
    names: Vec<String>,
    app: Arc<App>,
    stop: CancellationToken,
    conns: TaskTracker,
    accept: JoinHandle<()>,
    grace: Duration,
}

impl std::fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerHandle")
            .field("addr", &self.addr)
            .field("agents", &self.names)
            .finish_non_exhaustive()
    }
}

/// Dropping the handle without [`ServerHandle::shutdown`] stops accepting and closes the
/// connections as they finish; runs in flight go on until they end.
impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl ServerHandle {
    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://{address}`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The served agents' names (the workflows' names), sorted.
    pub fn agent_names(&self) -> &[String] {
        &self.names
    }

    /// The card URL of agent `name` (`None` for a name not served).
    pub fn card_url(&self, name: &str) -> Option<String> {
        self.names.iter().any(|n| n == name).then(|| {
            format!(
                "{}/agents/{name}/.well-known/agent-card.json",
                self.base_url
            )
        })
    }

    /// Stops gracefully: no new connection is accepted, open requests and streams get the
    /// grace period to end, then the runs still in flight are cancelled (a journaled run can be
    /// resumed) and their streams end with them, within a second grace period.
    pub async fn shutdown(mut self) {
        self.stop.cancel();
        let _ = (&mut self.accept).await;
        self.conns.close();
        if tokio::time::timeout(self.grace, self.conns.wait())
            .await
            .is_err()
        {
            self.app.runs.stop(self.grace).await;
            let _ = tokio::time::timeout(self.grace, self.conns.wait()).await;
        } else {
            self.app.runs.stop(self.grace).await;
        }
    }
}
