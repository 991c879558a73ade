//! Runs shared by workers through the Postgres store, beside the same runs on the embedded
//! SQLite store and on the in-memory engine, in one process and one session: runs per second
//! and store calls (journal writes, lease traffic, claims) per task with 1, 2 and 4 runs in
//! flight — 1, 2 and 4 workers on Postgres (each its own store and connection pool, one run at
//! a time), 1, 2 and 4 concurrent `execute_workflow` calls on SQLite and in memory — and the
//! latency of a worker's claim.
//!
//! The workflow is three chained steps of one blocking task each against the testkit on
//! loopback; every case runs `A2AFLOW_FLEET_RUNS` runs (default 120). The Postgres runs are
//! submitted first (`submit_workflow`, not timed), then the workers start and the clock runs
//! until the last run ended. Cases alternate (memory, SQLite, Postgres for each parallelism)
//! over `A2AFLOW_FLEET_ROUNDS` rounds (default 3); each figure is the median round.
//!
//! Needs the Postgres server `A2AFLOW_PG_URL` names (`cargo xtask postgres start`); each
//! Postgres case gets a fresh schema, dropped afterwards. Workers here poll every 5 ms instead
//! of listening (`Worker::with_store`: the counting wrapper hides the store's LISTEN), so idle
//! workers' empty claims are counted apart from the ones that got a run.
//!
//! Run with `cargo bench -p a2aflow --bench fleet`. Prints `BENCH fleet/…=value unit` lines
//! (read by `cargo xtask bench`) and, on stderr, each case's store calls per run by kind.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)] // a bench stops at its first failure

use a2aflow::kernel::journal::{
    EncodedEvent, Heartbeat, JournalRecord, Lease, RunFilter, RunJournal, RunStarted, RunStore,
    RunSummary, StoreError,
};
use a2aflow::kernel::{CallbackError, ControlPoint, RunInput};
use a2aflow::model::{
    Event, LoadOptions, MessageContent, TaskRequest, Workflow, load_workflow_str,
};
use a2aflow::{
    AgentEndpoint, EngineConfig, HostHooks, StoreLocation, Worker, WorkerOptions, discover_agents,
    submit_workflow,
};
use a2aflow_testkit::{AgentSpec, TestServer};
use async_trait::async_trait;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Tasks per run (one per step).
const TASKS_PER_RUN: usize = 3;
const PARALLELISM: [usize; 3] = [1, 2, 4];

struct Host;

#[async_trait]
impl ControlPoint for Host {
    async fn on_task_ref(&self, r: &TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(MessageContent::text(r.description.clone()))
    }
}

fn workflow() -> Workflow {
    let text = r#"{"id": "fleet", "name": "fleet", "steps": [
        {"name": "one", "subtasks": [{"agent": "a", "description": "task one"}], "next": [{"step": "two"}]},
        {"name": "two", "subtasks": [{"agent": "a", "description": "task two"}], "next": [{"step": "three"}]},
        {"name": "three", "subtasks": [{"agent": "a", "description": "task three"}]}
    ]}"#;
    load_workflow_str(text, LoadOptions::STRICT)
        .expect("the bench workflow loads")
        .workflow
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The store calls of one case, by kind (each is one call into the store: see
/// docs/benchmarks.md for how many database round trips each kind costs).
#[derive(Default)]
struct Counts {
    kinds: Mutex<Vec<(&'static str, u64)>>,
    /// Claims that got a run: their latencies in microseconds.
    claims: Mutex<Vec<u64>>,
    empty_claims: AtomicU64,
}

impl Counts {
    fn add(&self, kind: &'static str) {
        let mut kinds = self.kinds.lock().unwrap();
        match kinds.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += 1,
            None => kinds.push((kind, 1)),
        }
    }

    fn get(&self, kind: &str) -> u64 {
        let kinds = self.kinds.lock().unwrap();
        kinds
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or(0, |(_, n)| *n)
    }

    fn total(&self) -> u64 {
        self.kinds.lock().unwrap().iter().map(|(_, n)| n).sum()
    }

    fn reset(&self) {
        self.kinds.lock().unwrap().clear();
        self.claims.lock().unwrap().clear();
        self.empty_claims.store(0, Ordering::Relaxed);
    }
}

/// A store that counts its calls and forwards them.
struct Counted {
    inner: Arc<dyn RunStore>,
    counts: Arc<Counts>,
}

#[async_trait]
impl RunStore for Counted {
    async fn create_run(&self, run: RunStarted) -> Result<(), StoreError> {
        self.counts.add("create_run");
        self.inner.create_run(run).await
    }
    async fn create_run_leased(&self, run: RunStarted, owner: &str) -> Result<Lease, StoreError> {
        self.counts.add("create_run_leased");
        self.inner.create_run_leased(run, owner).await
    }
    async fn append_batch(
        &self,
        id: &str,
        records: Vec<JournalRecord>,
    ) -> Result<Range<u64>, StoreError> {
        self.counts.add("append");
        self.inner.append_batch(id, records).await
    }
    async fn append_driven(
        &self,
        lease: &Lease,
        records: Vec<JournalRecord>,
    ) -> Result<Range<u64>, StoreError> {
        self.counts.add("append_driven");
        self.inner.append_driven(lease, records).await
    }
    async fn record_driven_events(
        &self,
        lease: &Lease,
        events: Vec<Event>,
    ) -> Result<(), StoreError> {
        self.counts.add("events");
        self.inner.record_driven_events(lease, events).await
    }
    async fn record_driven_encoded_events(
        &self,
        lease: &Lease,
        events: Vec<EncodedEvent>,
    ) -> Result<(), StoreError> {
        self.counts.add("events");
        self.inner.record_driven_encoded_events(lease, events).await
    }
    async fn load(&self, id: &str) -> Result<RunJournal, StoreError> {
        self.counts.add("load");
        self.inner.load(id).await
    }
    async fn list(&self, filter: RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        self.counts.add("list");
        self.inner.list(filter).await
    }
    async fn record_events(&self, id: &str, events: Vec<Event>) -> Result<(), StoreError> {
        self.counts.add("events");
        self.inner.record_events(id, events).await
    }
    async fn events(
        &self,
        id: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        self.counts.add("read_events");
        self.inner.events(id, after, limit).await
    }
    async fn lease(&self, id: &str) -> Result<Option<Lease>, StoreError> {
        self.counts.add("lease");
        self.inner.lease(id).await
    }
    async fn acquire(&self, id: &str, owner: &str) -> Result<Lease, StoreError> {
        self.counts.add("acquire");
        self.inner.acquire(id, owner).await
    }
    async fn renew(&self, lease: &Lease) -> Result<Lease, StoreError> {
        self.counts.add("renew");
        self.inner.renew(lease).await
    }
    async fn release(&self, lease: Lease) -> Result<(), StoreError> {
        self.counts.add("release");
        self.inner.release(lease).await
    }
    async fn release_suspended(&self, lease: Lease, seen: u64) -> Result<(), StoreError> {
        self.counts.add("release");
        self.inner.release_suspended(lease, seen).await
    }
    async fn heartbeat(&self, lease: &Lease) -> Result<Heartbeat, StoreError> {
        self.counts.add("heartbeat");
        self.inner.heartbeat(lease).await
    }
    async fn notify_claimable(&self, id: &str) -> Result<(), StoreError> {
        self.counts.add("notify");
        self.inner.notify_claimable(id).await
    }
    async fn claim(&self, owner: &str) -> Result<Option<Lease>, StoreError> {
        let t0 = Instant::now();
        let got = self.inner.claim(owner).await;
        match &got {
            Ok(Some(_)) => {
                self.counts.add("claim");
                let us = u64::try_from(t0.elapsed().as_micros()).unwrap_or(u64::MAX);
                self.counts.claims.lock().unwrap().push(us);
            }
            _ => {
                self.counts.empty_claims.fetch_add(1, Ordering::Relaxed);
            }
        }
        got
    }
}

/// What one case measured.
struct Figures {
    seconds: f64,
    runs: usize,
    calls_per_task: f64,
    writes_per_task: f64,
    by_kind: String,
    claim_us: Option<(u64, u64)>,
    empty_claims: u64,
}

fn percentile(v: &mut [u64], p: f64) -> u64 {
    v.sort_unstable();
    let at = ((v.len() as f64 - 1.0) * p).round() as usize;
    v.get(at).copied().unwrap_or(0)
}

impl Figures {
    fn of(seconds: f64, runs: usize, counts: &Counts) -> Figures {
        let tasks = (runs * TASKS_PER_RUN) as f64;
        let mut claims = counts.claims.lock().unwrap().clone();
        let claim_us = (!claims.is_empty())
            .then(|| (percentile(&mut claims, 0.5), percentile(&mut claims, 0.99)));
        let by_kind = counts
            .kinds
            .lock()
            .unwrap()
            .iter()
            .map(|(k, n)| format!("{k} {:.2}", *n as f64 / runs as f64))
            .collect::<Vec<_>>()
            .join(", ");
        Figures {
            seconds,
            runs,
            calls_per_task: counts.total() as f64 / tasks,
            writes_per_task: (counts.get("append_driven") + counts.get("create_run_leased")) as f64
                / tasks,
            by_kind,
            claim_us,
            empty_claims: counts.empty_claims.load(Ordering::Relaxed),
        }
    }

    fn runs_per_s(&self) -> f64 {
        self.runs as f64 / self.seconds
    }
}

struct Bench {
    rt: tokio::runtime::Runtime,
    agents: Vec<AgentEndpoint>,
    workflow: Arc<Workflow>,
    runs: usize,
    dir: tempfile::TempDir,
    server_url: String,
    admin: tokio_postgres::Client,
    cases: usize,
}

impl Bench {
    fn config() -> EngineConfig {
        let mut config = EngineConfig::default();
        config.timeouts.run_secs = 120.0;
        config
    }

    /// `runs` runs, `p` at a time, through `execute_workflow` (journaled in `store` when given).
    fn in_one_host(&self, p: usize, store: Option<Arc<dyn RunStore>>) -> f64 {
        let next = Arc::new(AtomicUsize::new(0));
        let t0 = Instant::now();
        self.rt.block_on(async {
            let mut set = tokio::task::JoinSet::new();
            for _ in 0..p {
                let (next, store, agents, wf) = (
                    next.clone(),
                    store.clone(),
                    self.agents.clone(),
                    self.workflow.clone(),
                );
                let runs = self.runs;
                set.spawn(async move {
                    while next.fetch_add(1, Ordering::Relaxed) < runs {
                        let mut hooks = HostHooks::default();
                        hooks.run_options.store = store.clone();
                        let result = a2aflow::execute_workflow(
                            wf.clone(),
                            &agents,
                            Arc::new(Host),
                            &Bench::config(),
                            RunInput::default(),
                            hooks,
                        )
                        .await
                        .expect("the run starts");
                        assert!(result.success, "{:?}", result.failure);
                    }
                });
            }
            while let Some(done) = set.join_next().await {
                done.unwrap();
            }
        });
        t0.elapsed().as_secs_f64()
    }

    fn memory(&self, p: usize) -> Figures {
        let s = self.in_one_host(p, None);
        Figures::of(s, self.runs, &Counts::default())
    }

    fn sqlite(&mut self, p: usize) -> Figures {
        self.cases += 1;
        let path = self.dir.path().join(format!("runs-{}.db", self.cases));
        let location = StoreLocation::parse(&format!("sqlite:{}", path.display())).unwrap();
        let counts = Arc::new(Counts::default());
        let store: Arc<dyn RunStore> = Arc::new(Counted {
            inner: self.rt.block_on(location.open()).unwrap(),
            counts: counts.clone(),
        });
        let s = self.in_one_host(p, Some(store));
        Figures::of(s, self.runs, &counts)
    }

    /// `runs` submitted runs, claimed and driven by `workers` workers.
    fn postgres(&mut self, workers: usize) -> Figures {
        self.cases += 1;
        let schema = format!("fleet_{}_{}", std::process::id(), self.cases);
        self.rt
            .block_on(self.admin.batch_execute(&format!("CREATE SCHEMA {schema}")))
            .unwrap();
        let sep = if self.server_url.contains('?') {
            '&'
        } else {
            '?'
        };
        let url = format!("{}{sep}options=-csearch_path%3D{schema}", self.server_url);
        let location = StoreLocation::parse(&url).unwrap();
        let counts = Arc::new(Counts::default());
        let figures = self.rt.block_on(async {
            let submitter = location.open().await.unwrap();
            for _ in 0..self.runs {
                let mut hooks = HostHooks::default();
                hooks.run_options.store = Some(submitter.clone());
                submit_workflow(&self.workflow, &Bench::config(), RunInput::default(), hooks)
                    .await
                    .unwrap();
            }
            let ended = Arc::new(AtomicUsize::new(0));
            let all_ended = Arc::new(tokio::sync::Notify::new());
            let shutdown = tokio_util::sync::CancellationToken::new();
            let mut stores = Vec::new();
            for _ in 0..workers {
                stores.push(location.open().await.unwrap());
            }
            let t0 = Instant::now();
            let mut set = tokio::task::JoinSet::new();
            for (w, store) in stores.into_iter().enumerate() {
                let (ended, all_ended, runs) = (ended.clone(), all_ended.clone(), self.runs);
                let options = WorkerOptions::new(format!("bench-worker-{w}"))
                    .with_poll(Duration::from_millis(5))
                    .on_run_end(move |_, result| {
                        assert!(result.success, "{:?}", result.failure);
                        if ended.fetch_add(1, Ordering::AcqRel) + 1 == runs {
                            all_ended.notify_one();
                        }
                    });
                let store: Arc<dyn RunStore> = Arc::new(Counted {
                    inner: store,
                    counts: counts.clone(),
                });
                let worker = Worker::with_store(store, options);
                let (agents, stop) = (self.agents.clone(), shutdown.clone());
                set.spawn(async move {
                    worker
                        .run(agents, Arc::new(Host), &Bench::config(), stop)
                        .await
                        .unwrap()
                });
            }
            tokio::time::timeout(Duration::from_secs(600), all_ended.notified())
                .await
                .expect("every run ends within 10 minutes");
            let seconds = t0.elapsed().as_secs_f64();
            let figures = Figures::of(seconds, self.runs, &counts);
            shutdown.cancel();
            while let Some(done) = set.join_next().await {
                done.unwrap();
            }
            figures
        });
        self.rt
            .block_on(
                self.admin
                    .batch_execute(&format!("DROP SCHEMA {schema} CASCADE")),
            )
            .unwrap();
        counts.reset();
        figures
    }
}

fn median_by(mut v: Vec<Figures>) -> Figures {
    v.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
    let at = v.len() / 2;
    v.swap_remove(at)
}

fn main() {
    let server_url = std::env::var("A2AFLOW_PG_URL").unwrap_or_else(|_| {
        panic!(
            "A2AFLOW_PG_URL is not set: the fleet bench needs a PostgreSQL server. Run `cargo \
             xtask postgres start` and the two `export` lines it prints (docs/guide/postgres.md)"
        )
    });
    let runs = env_number("A2AFLOW_FLEET_RUNS", 120);
    let rounds = env_number("A2AFLOW_FLEET_ROUNDS", 3).max(1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = rt
        .block_on(TestServer::single(AgentSpec::new("a")))
        .unwrap();
    let agents = rt
        .block_on(discover_agents(
            &[("a", server.card_url("a"))],
            &Bench::config(),
        ))
        .unwrap();
    let admin = rt.block_on(async {
        let mut config: tokio_postgres::Config = server_url.parse().unwrap();
        if let Ok(p) = std::env::var("A2AFLOW_PG_PASSWORD").or_else(|_| std::env::var("PGPASSWORD"))
        {
            config.password(p);
        }
        let (client, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        client
    });
    let mut bench = Bench {
        rt,
        agents,
        workflow: Arc::new(workflow()),
        runs,
        dir: tempfile::tempdir().unwrap(),
        server_url,
        admin,
        cases: 0,
    };
    // Warm the agent, the connections and the page cache.
    bench.memory(2);
    let mut results: Vec<(String, Vec<Figures>)> = Vec::new();
    let mut push = |name: String, f: Figures| match results.iter_mut().find(|(n, _)| *n == name) {
        Some((_, v)) => v.push(f),
        None => results.push((name, vec![f])),
    };
    for round in 0..rounds {
        for p in PARALLELISM {
            eprintln!("fleet: round {} of {rounds}, {p} in flight", round + 1);
            push(format!("memory_{p}_in_flight"), bench.memory(p));
            push(format!("sqlite_{p}_in_flight"), bench.sqlite(p));
            push(format!("postgres_{p}_workers"), bench.postgres(p));
        }
    }
    for (name, figures) in results {
        let f = median_by(figures);
        println!("BENCH fleet/{name}/runs_per_s={:.1} runs/s", f.runs_per_s());
        if !name.starts_with("memory") {
            println!(
                "BENCH fleet/{name}/journal_writes_per_task={:.2} appends",
                f.writes_per_task
            );
            println!(
                "BENCH fleet/{name}/store_calls_per_task={:.2} calls",
                f.calls_per_task
            );
        }
        if let Some((p50, p99)) = f.claim_us {
            println!("BENCH fleet/{name}/claim_latency_p50={p50} µs");
            println!("BENCH fleet/{name}/claim_latency_p99={p99} µs");
        }
        eprintln!(
            "fleet: {name}: {:.1} runs/s, {:.2} s for {} runs; per run: {}; empty claims {}",
            f.runs_per_s(),
            f.seconds,
            f.runs,
            f.by_kind,
            f.empty_claims
        );
    }
}
