//! Shared set-up: a SQLite run store in a temporary directory, testkit agents, the page over
//! the store, runs started against the agents and tracked by the page, and plain HTTP requests.

use a2aflow::kernel::{CallbackError, ControlPoint, RunInput, RunOptions};
use a2aflow::model::a2a::AgentCard;
use a2aflow::model::{
    ExecutionResult, LoadOptions, MessageContent, RouteDecision, RouteRequest, TaskRequest,
    load_workflow_str,
};
use a2aflow::store_sqlite::{SqliteStore, StoreOptions};
use a2aflow::{
    EngineConfig, HostHooks, RunStore, execute_workflow, fetch_agent_cards, resume_stream,
};
use a2aflow_testkit::{AgentSpec, TestServer};
use a2aflow_ui::{LiveRuns, ResumeFuture, Resumer, Ui, UiHandle};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Sends each subtask's description as it is; an edge is taken when its condition is `yes`.
pub struct Verbatim;

#[async_trait::async_trait]
impl ControlPoint for Verbatim {
    async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(MessageContent::text(request.description))
    }
    async fn on_route(&self, request: RouteRequest) -> Result<RouteDecision, CallbackError> {
        Ok(if request.condition.trim() == "yes" {
            RouteDecision::allow("the condition says yes")
        } else {
            RouteDecision::deny("the condition says no")
        })
    }
}

/// A store, agents and the page over them.
pub struct Fixture {
    pub _dir: tempfile::TempDir,
    pub store: Arc<dyn RunStore>,
    pub server: TestServer,
    pub cards: Vec<AgentCard>,
    pub live: LiveRuns,
    pub ui: UiHandle,
}

/// A resumer as a host builds one: the fixture's cards, store and ControlPoint.
fn resumer(cards: Vec<AgentCard>, store: Arc<dyn RunStore>) -> Arc<dyn Resumer> {
    Arc::new(move |id: String, mut options: RunOptions| -> ResumeFuture {
        let cards = cards.clone();
        options.store = Some(store.clone());
        Box::pin(async move {
            let hooks = HostHooks {
                run_options: options,
                ..HostHooks::default()
            };
            resume_stream(
                &id,
                &cards,
                Arc::new(Verbatim),
                &EngineConfig::default(),
                hooks,
            )
            .await
        })
    })
}

impl Fixture {
    /// The seq of every event the store holds for run `execution_id`, in order.
    pub async fn stored_seqs(&self, execution_id: &str) -> Vec<u64> {
        let events = self.store.events(execution_id, None, 10_000).await.unwrap();
        events.iter().map(|e| e.seq).collect()
    }

    pub async fn start() -> Fixture {
        Fixture::build(StoreOptions::default(), false).await
    }

    /// A fixture whose page resumes runs, over a store whose leases last `lease_ttl`.
    pub async fn resuming(lease_ttl: Duration) -> Fixture {
        Fixture::build(StoreOptions::default().with_lease_ttl(lease_ttl), true).await
    }

    async fn build(store_options: StoreOptions, resuming: bool) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn RunStore> = Arc::new(
            SqliteStore::open_with(dir.path().join("runs.db"), store_options)
                .await
                .unwrap(),
        );
        let server = TestServer::single(AgentSpec::new("alpha")).await.unwrap();
        let cards = fetch_agent_cards(&[server.card_url("alpha")], &EngineConfig::default())
            .await
            .unwrap();
        let live = LiveRuns::new();
        let mut builder = Ui::builder(store.clone())
            .live_runs(live.clone())
            .poll_interval(Duration::from_millis(50));
        if resuming {
            builder = builder.resumer(resumer(cards.clone(), store.clone()));
        }
        let ui = builder.bind().await.unwrap();
        Fixture {
            _dir: dir,
            store,
            server,
            cards,
            live,
            ui,
        }
    }

    /// `host:port` of the page.
    pub fn addr(&self) -> String {
        self.ui.local_addr().to_string()
    }

    /// The token from the printed URL.
    pub fn token(&self) -> String {
        self.ui.url().split("token=").nth(1).unwrap().to_owned()
    }

    /// Starts `workflow` (JSON text) as run `id`, journaled in the store and tracked by the page.
    pub fn start_run(&self, id: &str, workflow: &str) -> tokio::task::JoinHandle<ExecutionResult> {
        self.start_run_with(id, workflow, EngineConfig::default())
    }

    /// [`Fixture::start_run`] with the engine configuration `config`.
    pub fn start_run_with(
        &self,
        id: &str,
        workflow: &str,
        config: EngineConfig,
    ) -> tokio::task::JoinHandle<ExecutionResult> {
        self.spawn_run(id, workflow, config, true, |_| {})
    }

    /// [`Fixture::start_run`] with `edit` applied to the run's options (a workflow catalog, …).
    pub fn start_run_edited(
        &self,
        id: &str,
        workflow: &str,
        edit: impl FnOnce(&mut RunOptions),
    ) -> tokio::task::JoinHandle<ExecutionResult> {
        self.spawn_run(id, workflow, EngineConfig::default(), true, edit)
    }

    /// Starts `workflow` as run `id` journaled in the store, but not tracked by the page: a
    /// driver the page knows only through the store, as one in another process.
    pub fn start_driver(
        &self,
        id: &str,
        workflow: &str,
    ) -> tokio::task::JoinHandle<ExecutionResult> {
        self.spawn_run(id, workflow, EngineConfig::default(), false, |_| {})
    }

    fn spawn_run(
        &self,
        id: &str,
        workflow: &str,
        config: EngineConfig,
        track: bool,
        edit: impl FnOnce(&mut RunOptions),
    ) -> tokio::task::JoinHandle<ExecutionResult> {
        let workflow = load_workflow_str(workflow, LoadOptions::STRICT)
            .unwrap()
            .workflow;
        let mut options = RunOptions {
            store: Some(self.store.clone()),
            timeout: Duration::from_secs(120),
            ..RunOptions::default()
        };
        edit(&mut options);
        if track {
            self.live.track(id, &mut options);
        } else {
            options.execution_id = Some(id.to_owned());
        }
        let cards = self.cards.clone();
        tokio::spawn(async move {
            execute_workflow(
                workflow,
                &cards,
                Arc::new(Verbatim),
                &config,
                RunInput::default(),
                HostHooks {
                    run_options: options,
                    ..HostHooks::default()
                },
            )
            .await
            .unwrap()
        })
    }
}

/// One HTTP/1.1 request over a fresh connection; returns the status and the body (the whole
/// body for a plain answer, what arrived within `read_for` for a stream).
pub async fn http_request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
    read_for: Option<Duration>,
) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    req.push_str("\r\n");
    req.push_str(body);
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    let read = read_answer(&mut stream, &mut raw);
    match read_for {
        None => tokio::time::timeout(crate::cdp::HANG, read)
            .await
            .expect("the answer ends"),
        Some(d) => {
            let _ = tokio::time::timeout(d, read).await;
        }
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, dechunk(&body))
}

/// Reads until the peer closes, or until a `Content-Length` body is whole (some servers keep
/// the connection open despite `Connection: close`).
async fn read_answer(stream: &mut tokio::net::TcpStream, raw: &mut Vec<u8>) {
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
        }
        let text = String::from_utf8_lossy(raw);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse::<usize>().ok())?
            });
            if length.is_some_and(|n| body.len() >= n) {
                return;
            }
        }
    }
}

/// GET `path` with `headers`.
pub async fn http_get(addr: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    http_request(addr, "GET", path, headers, "", None).await
}

/// A chunked body's data (an unchunked one is returned as it is).
fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    loop {
        let Some((size, after)) = rest.split_once("\r\n") else {
            return if out.is_empty() { body.to_owned() } else { out };
        };
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            return if out.is_empty() { body.to_owned() } else { out };
        };
        if n == 0 || after.len() < n {
            out.push_str(&after[..n.min(after.len())]);
            return out;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
}
