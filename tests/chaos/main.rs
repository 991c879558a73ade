//! The chaos test: three real `a2aflow worker` processes share the Postgres store that
//! `A2AFLOW_PG_URL` names (a schema of their own, dropped at the end) and drive five-step runs
//! against in-process testkit agents. Runs are submitted through the library (a few through
//! `a2aflow submit`). Every few hundred milliseconds one worker is SIGKILLed and started again;
//! once a worker is SIGSTOPped past its lease and SIGCONTed, so it wakes as a zombie whose
//! writes the store's fence refuses.
//!
//! Every run must finish exactly once (one `runFinished` record) with the result an
//! uninterrupted run gives; each logical task's business command must take effect exactly once
//! at its agent (one task for its context id: 0 duplicates, 0 lost; `resent` counts the sends
//! the request log shows twice because the first one died with its worker before the agent
//! handled it, and a resume found no task and resent it); the zombie must have been refused (its
//! `lease lost (refused)` lines, > 0) and nothing it did may show (the two checks before).
//! Prints `chaos runs N kills K stops 1 resumes R duplicates 0 lost 0 fenced F` and the wall
//! time. `A2AFLOW_CHAOS_RUNS` sets the runs (default 300; the bench size is 3000),
//! `A2AFLOW_CHAOS_SEED` the kill order.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test: a failed check panics

#[allow(dead_code)] // the chaos test uses only `cli_binary`
#[path = "../crash/host.rs"]
mod host;
#[allow(dead_code)] // the chaos test draws only `below`
#[path = "../soak/rng.rs"]
mod rng;
#[allow(dead_code)] // the chaos test uses `shape`, `tasks` and `sends_per_context`
#[path = "../crash/tally.rs"]
mod tally;

use a2aflow::kernel::RunInput;
use a2aflow::model::{LoadOptions, load_workflow_str};
use a2aflow::testkit::{AgentSpec, Binding, TestServer};
use a2aflow::{EngineConfig, HostHooks, RunFilter, StoreLocation, submit_workflow};
use rng::XorShift;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The workers' lease: a killed worker's runs are claimable this long after its last renewal.
const LEASE_SECS: f64 = 0.6;
/// How long the zombie stays stopped: well past its lease.
const STOP: Duration = Duration::from_millis(2500);
/// Between two kills.
const KILL_EVERY: Duration = Duration::from_millis(400);
/// The workers.
const WORKERS: usize = 3;
/// Runs each worker drives at once.
const CONCURRENCY: &str = "4";
/// A hang guard for the whole test, never a timing assertion.
const GUARD: Duration = Duration::from_secs(900);

/// Five steps in a chain on two agents (blocking JSON-RPC, streaming HTTP+JSON), two of them
/// slow enough for a kill to land while a task waits.
fn workflow() -> Value {
    json!({"id": "chaos", "name": "chaos", "steps": [
        {"name": "s1", "subtasks": [{"agent": "a", "description": "task one"}], "next": [{"step": "s2"}]},
        {"name": "s2", "subtasks": [{"agent": "b", "description": "slow 0.05 two"}], "next": [{"step": "s3"}]},
        {"name": "s3", "subtasks": [{"agent": "a", "description": "task three"}], "next": [{"step": "s4"}]},
        {"name": "s4", "subtasks": [{"agent": "b", "description": "slow 0.05 four"}], "next": [{"step": "s5"}]},
        {"name": "s5", "subtasks": [{"agent": "a", "description": "task five"}]}
    ]})
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn server_url() -> String {
    std::env::var("A2AFLOW_PG_URL").unwrap_or_else(|_| {
        panic!(
            "A2AFLOW_PG_URL is not set: the chaos test needs a PostgreSQL server. Run `cargo \
             xtask postgres start` and the two `export` lines it prints (docs/guide/postgres.md)"
        )
    })
}

/// A schema of the test's own in the server's database, made now and dropped by `drop`.
struct Schema {
    url: String,
    name: String,
}

impl Schema {
    async fn client(url: &str) -> tokio_postgres::Client {
        let mut config: tokio_postgres::Config = url.parse().expect("A2AFLOW_PG_URL parses");
        if let Ok(p) = std::env::var("A2AFLOW_PG_PASSWORD").or_else(|_| std::env::var("PGPASSWORD"))
        {
            config.password(p);
        }
        let (client, connection) = config
            .connect(tokio_postgres::NoTls)
            .await
            .expect("connect to A2AFLOW_PG_URL (sslmode=disable)");
        tokio::spawn(connection);
        client
    }

    async fn create(server: &str) -> Schema {
        let name = format!("chaos_{}", std::process::id());
        let client = Schema::client(server).await;
        client
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"
            ))
            .await
            .expect("create the test's schema");
        let sep = if server.contains('?') { '&' } else { '?' };
        Schema {
            url: format!("{server}{sep}options=-csearch_path%3D{name}"),
            name,
        }
    }

    async fn drop(self, server: &str) {
        let client = Schema::client(server).await;
        let _ = client
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name))
            .await;
    }
}

/// One worker process and the file its stderr goes to.
struct WorkerProcess {
    child: Child,
    log: PathBuf,
}

struct Fleet {
    bin: PathBuf,
    args: Vec<String>,
    dir: PathBuf,
    started: usize,
    workers: Vec<WorkerProcess>,
}

impl Fleet {
    fn spawn(&mut self) -> WorkerProcess {
        self.started += 1;
        let log = self.dir.join(format!("worker-{}.log", self.started));
        let child = Command::new(&self.bin)
            .arg("worker")
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start a2aflow worker");
        WorkerProcess { child, log }
    }

    fn start(&mut self) {
        for _ in 0..WORKERS {
            let w = self.spawn();
            self.workers.push(w);
        }
    }

    /// SIGKILL worker `at` and start another in its place.
    fn kill_and_restart(&mut self, at: usize) {
        let _ = self.workers[at].child.kill();
        let _ = self.workers[at].child.wait();
        self.workers[at] = self.spawn();
    }

    /// Sends `signal` (`STOP`, `CONT`, `TERM`) to worker `at` with kill(1) (this workspace
    /// forbids unsafe code, so no kill(2) here).
    fn signal(&self, at: usize, signal: &str) {
        let pid = self.workers[at].child.id().to_string();
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(&pid)
            .status()
            .expect("the kill command (Debian: procps) sends the signal");
        assert!(status.success(), "kill -{signal} {pid}");
    }

    /// SIGTERM every worker; each must exit 0 (leases released). A worker started a moment
    /// ago may not listen for signals yet (SIGTERM would end it by default): each is sent the
    /// signal once its log says it is claiming (its handlers are installed before that line).
    fn stop(&mut self) {
        let guard = Instant::now() + Duration::from_secs(60);
        for at in 0..self.workers.len() {
            self.wait_until_claiming(at, guard);
            self.signal(at, "TERM");
        }
        for w in &mut self.workers {
            loop {
                if let Some(status) = w.child.try_wait().unwrap() {
                    assert_eq!(status.code(), Some(0), "worker log {}", w.log.display());
                    break;
                }
                assert!(Instant::now() < guard, "a worker did not stop on SIGTERM");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// Waits (until `guard`) for worker `at`'s log to say it claims runs, or for it to exit.
    fn wait_until_claiming(&mut self, at: usize, guard: Instant) {
        loop {
            let log = std::fs::read_to_string(&self.workers[at].log).unwrap_or_default();
            if log.contains("a2aflow worker: claiming runs of")
                || self.workers[at].child.try_wait().unwrap().is_some()
            {
                return;
            }
            assert!(
                Instant::now() < guard,
                "worker {} never started claiming: {log}",
                self.workers[at].log.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The `lease lost (refused)` lines of every worker's log.
    fn fenced(&self) -> usize {
        (1..=self.started)
            .map(|n| {
                std::fs::read_to_string(self.dir.join(format!("worker-{n}.log")))
                    .unwrap_or_default()
                    .lines()
                    .filter(|l| l.ends_with("lease lost (refused)"))
                    .count()
            })
            .sum()
    }
}

/// The result an uninterrupted run gives (a `run` on a SQLite store, no kills).
fn uninterrupted(bin: &Path, dir: &Path, workflow: &Path, agents: &[String]) -> Value {
    let out = Command::new(bin)
        .arg("run")
        .arg(workflow)
        .args(agents)
        .args(["--format", "json", "--store"])
        .arg(dir.join("reference.db"))
        .output()
        .expect("run a2aflow");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (_, rest) = text.split_once('\n').expect("the id line, then the result");
    serde_json::from_str(rest).expect("the result")
}

fn main() {
    rng::self_check();
    let runs = env_number("A2AFLOW_CHAOS_RUNS", 300) as usize;
    let mut rng = XorShift::new(env_number("A2AFLOW_CHAOS_SEED", 0xc4a0_5eed));
    let server_url = server_url();
    let wall = Instant::now();
    let bin = host::cli_binary();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime
        .block_on(
            TestServer::builder()
                .request_log_capacity(50 * runs + 10_000)
                .agent(AgentSpec::new("a"))
                .agent(
                    AgentSpec::new("b")
                        .streaming(true)
                        .bindings(&[Binding::HttpJson]),
                )
                .spawn(),
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let workflow_path = dir.path().join("chaos.json");
    std::fs::write(&workflow_path, workflow().to_string()).unwrap();
    let agents: Vec<String> = [("a", server.card_url("a")), ("b", server.card_url("b"))]
        .into_iter()
        .flat_map(|(n, u)| ["--agent".to_owned(), format!("{n}={u}")])
        .collect();
    let expected = tally::shape(&uninterrupted(&bin, dir.path(), &workflow_path, &agents));
    server.clear_requests();

    let schema = runtime.block_on(Schema::create(&server_url));
    let config_path = dir.path().join("engine.toml");
    // A short lease (the heartbeat renews it every fifth of a second), the shortest poll of a
    // remote task, and a resume that resends a journaled message whose task is not found. Every
    // run is submitted before the first is driven and its deadline counts from its submission:
    // a second per run (at least the default ten minutes) keeps the last of a bench-size batch
    // within its deadline on a slow machine, where the 600 s default ended runs mid-way.
    let run_secs = (runs as f64).max(600.0);
    std::fs::write(
        &config_path,
        format!(
            "store_lease_secs = {LEASE_SECS}\npoll_interval_ms = 100\n[resume]\nresend = true\n\
             [timeouts]\nrun_secs = {run_secs}\n"
        ),
    )
    .unwrap();
    let config = EngineConfig {
        store: Some(StoreLocation::parse(&schema.url).unwrap()),
        ..EngineConfig::from_file(&config_path).unwrap()
    };
    let wf = load_workflow_str(&workflow().to_string(), LoadOptions::STRICT)
        .unwrap()
        .workflow;
    // A few runs through the command line, the rest through the library.
    let mut ids = Vec::with_capacity(runs);
    for _ in 0..runs.min(3) {
        let out = Command::new(&bin)
            .arg("submit")
            .arg(&workflow_path)
            .args(&agents)
            .args(["--format", "json", "--store", &schema.url])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        ids.push(v["executionId"].as_str().unwrap().to_owned());
    }
    while ids.len() < runs {
        let id = runtime
            .block_on(submit_workflow(
                &wf,
                &config,
                RunInput::default(),
                HostHooks::default(),
            ))
            .unwrap();
        ids.push(id);
    }
    let store = runtime
        .block_on(config.store.as_ref().unwrap().open_existing())
        .unwrap();

    let mut args = vec![
        "--store".to_owned(),
        schema.url.clone(),
        "--config".to_owned(),
        config_path.display().to_string(),
        "--concurrency".to_owned(),
        CONCURRENCY.to_owned(),
        "--poll".to_owned(),
        "0.2".to_owned(),
    ];
    args.extend(agents.iter().cloned());
    let mut fleet = Fleet {
        bin: bin.clone(),
        args,
        dir: dir.path().to_owned(),
        started: 0,
        workers: Vec::new(),
    };
    fleet.start();

    // Whether worker `at` holds a live lease now (it is stopped only while it drives runs).
    let drives_a_run = |store: &dyn a2aflow::RunStore, fleet: &Fleet, at: usize| {
        let owner = format!("worker-{}-", fleet.workers[at].child.id());
        let filter = RunFilter {
            state: Some(a2aflow::RunState::Running),
            offset: 0,
            limit: runs + 1,
        };
        runtime
            .block_on(store.list(filter))
            .unwrap()
            .iter()
            .any(|r| {
                runtime
                    .block_on(store.lease(&r.execution_id))
                    .unwrap()
                    .is_some_and(|l| l.owner.starts_with(&owner))
            })
    };
    let unfinished = |store: &dyn a2aflow::RunStore| {
        let mut left = 0;
        for state in [a2aflow::RunState::Running, a2aflow::RunState::Waiting] {
            let filter = RunFilter {
                state: Some(state),
                offset: 0,
                limit: runs + 1,
            };
            left += runtime.block_on(store.list(filter)).unwrap().len();
        }
        left
    };
    let (mut kills, mut stops) = (0, 0);
    let zombie = 0;
    let stop_at = Instant::now() + Duration::from_secs(2);
    // Half a second per run beyond the guard's 900 s for a bench-size batch on a slow machine.
    let guard = Instant::now() + GUARD.max(Duration::from_secs_f64(runs as f64 * 0.5));
    loop {
        let left = unfinished(&*store);
        if left == 0 {
            break;
        }
        assert!(
            Instant::now() < guard,
            "{left} runs did not finish within the guard"
        );
        std::thread::sleep(KILL_EVERY);
        if stops == 0 && Instant::now() >= stop_at && drives_a_run(&*store, &fleet, zombie) {
            fleet.signal(zombie, "STOP");
            std::thread::sleep(STOP);
            fleet.signal(zombie, "CONT");
            stops += 1;
            continue;
        }
        // The zombie is left alone after it woke, so its refusals reach its log.
        let at = 1 + rng.below(WORKERS - 1);
        fleet.kill_and_restart(at);
        kills += 1;
    }
    fleet.stop();

    let (mut resumes, mut duplicates, mut lost, mut resent) = (0u64, 0usize, 0usize, 0usize);
    let sends = tally::sends_per_context(&server);
    let effects = runtime.block_on(tally::Agents::connect(&server, &["a", "b"]));
    for id in &ids {
        let journal = runtime.block_on(store.load(id)).unwrap();
        let finished = journal
            .entries
            .iter()
            .filter(|e| e.record.kind() == "runFinished")
            .count();
        assert_eq!(finished, 1, "run {id} finished {finished} times");
        let result = serde_json::to_value(journal.finished().unwrap()).unwrap();
        assert_eq!(tally::shape(&result), expected, "run {id}");
        for (agent, context, _, _) in tally::tasks(&result) {
            let context = context.expect("every task has a context id");
            // What took effect at the agent: its tasks for the context id. A send whose
            // process died before the agent handled it left no task, and the resume resent it.
            match runtime.block_on(effects.tasks_of(&agent, &context)) {
                0 => lost += 1,
                1 => {}
                n => {
                    duplicates += n - 1;
                    let kinds: Vec<&str> =
                        journal.entries.iter().map(|e| e.record.kind()).collect();
                    eprintln!(
                        "chaos: run {id}: {n} tasks at {agent} for context {context}; journal {kinds:?}"
                    );
                }
            }
            resent += sends
                .get(&(agent, context))
                .copied()
                .unwrap_or(0)
                .saturating_sub(1);
        }
        let lease = runtime.block_on(store.lease(id)).unwrap();
        resumes += lease.map_or(0, |l| l.token.saturating_sub(1));
    }
    let fenced = fleet.fenced();
    println!(
        "chaos runs {runs} kills {kills} stops {stops} resumes {resumes} duplicates {duplicates} \
         lost {lost} fenced {fenced} resent {resent} ({:.1} s)",
        wall.elapsed().as_secs_f64()
    );
    drop(store);
    runtime.block_on(schema.drop(&server_url));
    assert_eq!(
        (duplicates, lost),
        (0, 0),
        "business commands duplicated or lost"
    );
    assert!(fenced > 0, "the zombie's writes were never refused");
    assert_eq!(stops, 1);
    println!("1 passed, 0 failed");
}
