//! Durable runs against in-memory runs: one workflow whose single step has 1,000 subtasks, run
//! through the facade (`execute_workflow`: the engine client over JSON-RPC, built per call)
//! against the testkit on loopback, once with no store and once with `store =
//! "sqlite:<tempdir>/runs-N.db"`, in the same process.
//!
//! Each durable run gets a fresh store file (per iteration, not per sample): the figure includes
//! creating the file and its schema, and never reads a store grown by earlier runs. The file is
//! deleted after its run.
//!
//! Run with `cargo bench -p a2aflow --bench durable`. Criterion reports tasks per second for
//! each case; then, per mode, alternating pairs of runs (memory first in even pairs, SQLite
//! first in odd ones) give the durable run's throughput as a fraction of the in-memory run's
//! (median of 15 pairs; `A2AFLOW_BENCH_PAIRS` sets the number, 0 skips them). The medians go to
//! stdout as `BENCH durable_1000_tasks/…` lines, which `cargo xtask bench` puts in its table:
//! the ratio and each side's tasks/s over the pairs. The process CPU time per 1,000 tasks of
//! each side (server included: it runs in this process) goes to stderr.
//!
//! Before its cases each side runs until the agent's task store is full (its steady state);
//! `A2AFLOW_BENCH_WARM_UP` sets that number of runs instead (0 under a profiler:
//! `A2AFLOW_BENCH_WARM_UP=0 A2AFLOW_BENCH_PAIRS=0 valgrind --tool=callgrind <bench binary>
//! --bench 'sqlite_blocking$' --profile-time 1` measures one run).
//!
//! Both sides run with the facade's default of 64 remote tasks in flight;
//! `A2AFLOW_BENCH_IN_FLIGHT=<n>` sets another bound (0: none).
//!
//! `A2AFLOW_BENCH_AGENT_MS=<n>` makes each task take time at the agent: WORKING, `n` ms, then
//! the testkit's usual artifact and COMPLETED (unset or 0: answered at once, as the testkit's
//! `task` behaviour does).
//!
//! The testkit has no canned fast mode: its agents cost about as much as the engine client per
//! task (see docs/benchmarks.md), so the ratio here is the one a peer of the testkit's speed
//! sees; against a faster peer the store's share of each run is larger. The CPU lines say how
//! much the store adds per task whatever the peer.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)] // a bench stops at its first failure

use a2aflow::kernel::{CallbackError, ControlPoint, RunInput};
use a2aflow::model::{MessageContent, Step, StepType, Subtask, TaskRequest, Workflow};
use a2aflow::{AgentEndpoint, EngineConfig, HostHooks, StoreLocation, discover_agents};
use a2aflow_testkit::{AgentSpec, DEFAULT_TASK_BOUND, TaskScript, TestServer};
use async_trait::async_trait;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

const TASKS: usize = 1_000;

/// The agents: one per side and mode, so neither side runs against a task store grown by the
/// other's runs.
const AGENTS: [(&str, bool); 4] = [
    ("memory-blocking", false),
    ("sqlite-blocking", false),
    ("memory-streaming", true),
    ("sqlite-streaming", true),
];

struct Host;

#[async_trait]
impl ControlPoint for Host {
    async fn on_task(&self, r: TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(MessageContent::text(r.description))
    }
}

fn workflow(agent: &str) -> Arc<Workflow> {
    Arc::new(Workflow {
        id: "bench".into(),
        name: "bench".into(),
        steps: vec![Step {
            name: "fan".into(),
            step_type: StepType::AllSuccess,
            subtasks: (0..TASKS)
                .map(|i| Subtask {
                    agent: agent.into(),
                    skill: String::new(),
                    description: format!("task {i}"),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    })
}

/// One side of the comparison: its agent, and where its runs are journaled (`None`: nowhere).
struct Side {
    agent: AgentEndpoint,
    workflow: Arc<Workflow>,
    stores: Option<StoreFiles>,
}

/// Fresh store files in one directory: `runs-0.db`, `runs-1.db`, …
struct StoreFiles {
    dir: PathBuf,
    next: Cell<u64>,
}

impl StoreFiles {
    fn next_path(&self) -> PathBuf {
        let n = self.next.get();
        self.next.set(n + 1);
        self.dir.join(format!("runs-{n}.db"))
    }
}

/// Deletes a store file and its WAL companions (the store may still be closing them: on Linux
/// the unlinked files stay usable until then).
fn remove_store(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(name));
    }
}

impl Side {
    /// One run of the side's workflow through `execute_workflow`; it must succeed.
    fn run(&self, rt: &tokio::runtime::Runtime) {
        let mut config = EngineConfig::default();
        config.timeouts.run_secs = 120.0;
        // Under callgrind on a loaded machine 1,000 connects take longer than the default 10 s.
        config.timeouts.connect_secs = 120.0;
        if let Ok(n) = std::env::var("A2AFLOW_BENCH_IN_FLIGHT") {
            config.max_concurrent_remote_tasks = Some(n.parse().expect("a number"));
        }
        let path = self.stores.as_ref().map(StoreFiles::next_path);
        config.store = path
            .as_ref()
            .map(|p| StoreLocation::parse(&format!("sqlite:{}", p.display())).unwrap());
        let result = rt
            .block_on(a2aflow::execute_workflow(
                self.workflow.clone(),
                std::slice::from_ref(&self.agent),
                Arc::new(Host),
                &config,
                RunInput::default(),
                HostHooks::default(),
            ))
            .expect("the run starts");
        assert!(result.success, "{:?}", result.failure);
        if let Some(p) = path {
            remove_store(&p);
        }
    }

    /// Runs unmeasured until the agent's task store has reached its bound (every later task
    /// evicts an old one, as in every measured run); `A2AFLOW_BENCH_WARM_UP` runs instead when
    /// set (0 for a profiler, which needs only the measured runs).
    fn warm_up(&self, rt: &tokio::runtime::Runtime) {
        let runs = std::env::var("A2AFLOW_BENCH_WARM_UP")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(DEFAULT_TASK_BOUND.div_ceil(TASKS));
        for _ in 0..runs {
            self.run(rt);
        }
    }
}

/// User + system CPU time of this process, in clock ticks (`/proc/self/stat`).
fn cpu_ticks() -> u64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0;
    };
    // Fields after the `(comm)`: state is field 3, utime 14, stime 15.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let field = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    field(11).unwrap_or(0) + field(12).unwrap_or(0)
}

/// What one side's runs in the pairs took.
#[derive(Default)]
struct Tally {
    seconds: Vec<f64>,
    ticks: u64,
}

impl Tally {
    fn timed(&mut self, f: impl FnOnce()) -> f64 {
        let (t0, c0) = (Instant::now(), cpu_ticks());
        f();
        let s = t0.elapsed().as_secs_f64();
        self.ticks += cpu_ticks().saturating_sub(c0);
        self.seconds.push(s);
        s
    }

    /// Tasks per second of the median run.
    fn tasks_per_s(&self) -> f64 {
        TASKS as f64 / median(&self.seconds)
    }

    /// CPU milliseconds per run (clock ticks are 1/100 s on Linux, `getconf CLK_TCK`).
    fn cpu_ms_per_run(&self) -> f64 {
        self.ticks as f64 * 10.0 / self.seconds.len().max(1) as f64
    }
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// `pairs` alternating pairs of runs; per pair, the durable run's throughput ÷ the in-memory
/// run's. A pair compares two runs a second apart, so the machine's drift cancels out of it.
fn paired(
    rt: &tokio::runtime::Runtime,
    pairs: usize,
    memory: &Side,
    sqlite: &Side,
) -> (Vec<f64>, Tally, Tally) {
    let (mut m, mut s) = (Tally::default(), Tally::default());
    let ratios = (0..pairs)
        .map(|i| {
            let (tm, ts) = if i % 2 == 0 {
                let tm = m.timed(|| memory.run(rt));
                (tm, s.timed(|| sqlite.run(rt)))
            } else {
                let ts = s.timed(|| sqlite.run(rt));
                (m.timed(|| memory.run(rt)), ts)
            };
            tm / ts
        })
        .collect();
    (ratios, m, s)
}

/// How long each task takes at the agent (`A2AFLOW_BENCH_AGENT_MS`), when it takes any.
fn agent_time() -> Option<Duration> {
    let ms: u64 = std::env::var("A2AFLOW_BENCH_AGENT_MS")
        .ok()?
        .parse()
        .expect("a number");
    (ms > 0).then(|| Duration::from_millis(ms))
}

fn pair_count() -> usize {
    std::env::var("A2AFLOW_BENCH_PAIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15)
}

fn report(mode: &str, pairs: usize, ratios: &[f64], memory: &Tally, sqlite: &Tally) {
    let shown: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
    let mid = median(ratios);
    eprintln!(
        "paired_{mode}: sqlite / memory throughput per pair [{}], median {mid:.2}; CPU (client \
         and server) per 1,000 tasks: memory {:.0} ms, sqlite {:.0} ms",
        shown.join(", "),
        memory.cpu_ms_per_run(),
        sqlite.cpu_ms_per_run(),
    );
    // On stdout, for `cargo xtask bench`'s table (it reads `BENCH name=figure` lines).
    println!(
        "BENCH durable_1000_tasks/paired_{mode}={mid:.2} sqlite ÷ memory, median of {pairs} \
         alternating pairs, fresh store file per run"
    );
    for (side, tally) in [("memory", memory), ("sqlite", sqlite)] {
        println!(
            "BENCH durable_1000_tasks/{side}_{mode}_tasks_per_s={:.0} tasks/s, median run of \
             the pairs",
            tally.tasks_per_s()
        );
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let server = rt.block_on(async {
        let mut builder = TestServer::builder();
        for (name, streaming) in AGENTS {
            let mut spec = AgentSpec::new(name).streaming(streaming);
            if let Some(took) = agent_time() {
                spec = spec.script(move |m| {
                    TaskScript::new()
                        .working()
                        .delay(took)
                        .artifact_data("result", serde_json::json!({ "echo": m.text() }))
                        .complete()
                        .into()
                });
            }
            builder = builder.agent(spec);
        }
        builder.spawn().await.unwrap()
    });
    let named: Vec<(&str, String)> = AGENTS
        .iter()
        .map(|(name, _)| (*name, server.card_url(name)))
        .collect();
    let agents = rt
        .block_on(discover_agents(&named, &EngineConfig::default()))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let side = |name: &str| {
        let agent = agents.iter().find(|a| a.name() == name).unwrap().clone();
        Side {
            workflow: workflow(name),
            agent,
            stores: name.starts_with("sqlite").then(|| StoreFiles {
                dir: dir.path().join(name),
                next: Cell::new(0),
            }),
        }
    };
    let pairs = pair_count();
    let mut group = c.benchmark_group("durable_1000_tasks");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Elements(TASKS as u64));
    for mode in ["blocking", "streaming"] {
        let (memory, sqlite) = (
            side(&format!("memory-{mode}")),
            side(&format!("sqlite-{mode}")),
        );
        for s in [&memory, &sqlite] {
            if let Some(files) = &s.stores {
                std::fs::create_dir_all(&files.dir).unwrap();
            }
            s.warm_up(&rt);
        }
        group.bench_function(format!("memory_{mode}"), |b| b.iter(|| memory.run(&rt)));
        group.bench_function(format!("sqlite_{mode}"), |b| b.iter(|| sqlite.run(&rt)));
        if pairs > 0 {
            let (ratios, m, s) = paired(&rt, pairs, &memory, &sqlite);
            report(mode, pairs, &ratios, &m, &s);
        }
    }
    group.finish();
    rt.block_on(async { server.shutdown().await.unwrap() });
}

criterion_group!(benches, bench);
criterion_main!(benches);
