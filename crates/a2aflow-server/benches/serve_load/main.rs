//! Served-workflow load (issue 24): many concurrent SendStreamingMessage clients on one workflow
//! served by a2aflow, and the same requests, in the same run, against a plain echo agent on the
//! official Python SDK server (a2a-sdk 1.3.0): requests/s, latency, server CPU per request and
//! memory per open stream, and the ratios (what the engine and server cost next to the SDK).
//!
//! Both servers run as child processes, so their memory and CPU are read from `/proc` alone:
//! the a2aflow server is this binary re-run (role `server`, see `served.rs`) serving `echo`,
//! one SELF_LOOP step the host answers itself; the Python agent is `echo_agent.py` on the
//! interop venv's python. Both stream the same four events per request (the task, WORKING, the
//! `result` artifact, COMPLETED).
//!
//! Each client is its own HTTP/1.1 connection (a bare hyper client), sending the requests the
//! Python SDK client sends (JSON-RPC) and reading every stream to its end (which must be
//! COMPLETED; anything else counts as an error and fails the bench). Per server:
//! - memory: one warm-up request per client, then every connection closed and the idle RSS
//!   read; then every client opens a new connection with a stream held open (`hold K`: the step
//!   waits for a release the bench sends on the server's stdin), and once every stream has its
//!   first event and a second has passed, the RSS is read (the lowest of three readings); then
//!   as many streams again are opened on top of those, and the RSS read again, for
//!   `A2AFLOW_SLOAD_HOLD_STEPS` steps (default 2) of one stream per client; then every stream is
//!   released. Memory per open stream = (RSS at the last step − RSS at the step before) ÷
//!   clients: a stream, its connection and its running task, measured marginally. The first
//!   step is not used for it: a server's allocator keeps what the warm-up freed and the first
//!   streams reuse it (CPython's did: its RSS with 1,000 streams held came out below its idle
//!   RSS), so the first step says too little. The older figure, (RSS at the first step − idle
//!   RSS) ÷ clients, is printed beside it as `memory_per_open_stream_over_idle` when positive.
//! - throughput: every client sends back-to-back requests for a fixed time (alternating the
//!   servers, round after round): requests/s, p50/p99 latency of a whole stream, and the
//!   server's CPU time (user + system) per request, which a shared machine's load moves less.
//!
//! Sizes: `A2AFLOW_SLOAD_CLIENTS` (default 50; 1000 for the recorded figure),
//! `A2AFLOW_SLOAD_SECS` per throughput round (default 2), `A2AFLOW_SLOAD_ROUNDS` (default 1),
//! `A2AFLOW_SLOAD_HOLD_STEPS` (default 2, at least 2).
//! The Python: `A2AFLOW_SLOAD_PYTHON`, else `A2AFLOW_PY_PEER`, else `target/interop-venv`
//! (`cargo xtask ci` builds it); without one the Python side is skipped, and says so. The
//! a2aflow server's runs-in-flight limits are raised to twice the clients, or to the streams
//! held at the last step if more (printed), its finished tasks kept in memory are
//! `A2AFLOW_SLOAD_KEPT` when set (the RSS growth per finished request stops once that many have
//! finished); every other limit is the default.
//!
//! Figures are printed as `BENCH serve_load.… = value unit` lines for `cargo xtask bench`.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod children;
mod client;
mod served;

use children::Server;
use client::{Client, Endpoint};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::{Barrier, Notify};

/// Which part this process plays (unset: the driver).
const ROLE_ENV: &str = "A2AFLOW_SLOAD_ROLE";
/// How long the readings wait for the servers to settle.
const SETTLE: Duration = Duration::from_secs(1);

struct Config {
    clients: usize,
    secs: f64,
    rounds: usize,
    hold_steps: usize,
}

/// Steps of one held stream per client the memory figure is read over (see the module docs).
const HOLD_STEPS_ENV: &str = "A2AFLOW_SLOAD_HOLD_STEPS";

/// [`HOLD_STEPS_ENV`], at least 2 (the figure is the last step's growth over the one before).
fn hold_steps() -> usize {
    env_number(HOLD_STEPS_ENV, 2usize).max(2)
}

fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .replace('_', "")
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a number, got {v:?}")),
        Err(_) => default,
    }
}

fn main() {
    let clients = env_number("A2AFLOW_SLOAD_CLIENTS", 50usize).max(1);
    if std::env::var(ROLE_ENV).as_deref() == Ok("server") {
        served::serve(clients);
        return;
    }
    client::self_check();
    children::self_check();
    served::self_check();
    self_check();
    let config = Config {
        clients,
        secs: env_number("A2AFLOW_SLOAD_SECS", 2.0f64).max(0.1),
        rounds: env_number("A2AFLOW_SLOAD_ROUNDS", 1usize).max(1),
        hold_steps: hold_steps(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    if let Err(e) = rt.block_on(drive(&config)) {
        eprintln!("serve_load failed: {e}");
        std::process::exit(1);
    }
}

/// One server under test.
struct Target {
    name: &'static str,
    server: Server,
    endpoint: Endpoint,
    releases: usize,
    totals: Totals,
}

/// A target's throughput over every round.
#[derive(Default)]
struct Totals {
    completed: usize,
    seconds: f64,
    cpu_ticks: u64,
    latencies: Vec<Duration>,
    events: usize,
}

async fn drive(config: &Config) -> Result<(), String> {
    let n = config.clients;
    let limits = served::limits(n);
    println!(
        "serve_load: {n} clients, {} s per round, {} round(s), {} hold steps; a2aflow limits: \
         runs_in_flight {} and runs_per_caller {} (default 64; raised to twice the clients or \
         the streams held at the last step), \
         finished_tasks_kept {} (default 10,000; {}), others default",
        config.secs,
        config.rounds,
        config.hold_steps,
        limits.runs_in_flight,
        limits.runs_per_caller,
        limits.finished_tasks_kept,
        served::KEPT_ENV
    );
    let mut targets = vec![start_a2aflow(n).await?];
    match python() {
        Some(python) => targets.push(start_python(&python).await?),
        None => println!(
            "serve_load: the Python side is SKIPPED: no interop venv (set A2AFLOW_SLOAD_PYTHON, \
             or run `cargo xtask ci` once to build target/interop-venv); no ratios"
        ),
    }
    let mut memories = Vec::new();
    for target in &mut targets {
        memories.push(memory(target, n, config.hold_steps).await?);
    }
    let mut retained_from = Vec::new();
    for target in &targets {
        retained_from.push(target.server.rss_kib());
    }
    for round in 0..config.rounds {
        for target in &mut targets {
            throughput(target, n, config.secs, round).await?;
        }
    }
    let ticks = children::ticks_per_second();
    let mut rates = Vec::new();
    for ((target, memory), rss_before) in targets.iter_mut().zip(&memories).zip(&retained_from) {
        let t = &mut target.totals;
        t.latencies.sort();
        let rate = t.completed as f64 / t.seconds;
        let cpu_us = t.cpu_ticks as f64 / ticks * 1e6 / t.completed.max(1) as f64;
        let retained =
            target.server.rss_kib().saturating_sub(*rss_before) * 1024 / t.completed.max(1) as u64;
        println!(
            "serve_load: {}: {} streams ({} events) in {:.1} s: {rate:.0} requests/s, p50 \
             {:.1} ms, p99 {:.1} ms, server CPU {cpu_us:.0} µs per request; {} per open \
             stream (marginal), {} over idle; RSS grew {retained} bytes per finished request \
             (tasks kept in memory)",
            target.name,
            t.completed,
            t.events,
            t.seconds,
            ms(percentile(&t.latencies, 0.50)),
            ms(percentile(&t.latencies, 0.99)),
            shown(memory.marginal),
            shown(memory.over_idle),
        );
        let name = target.name;
        bench(
            &format!("serve_load.{name}.requests_per_s"),
            rate,
            "requests/s",
        );
        bench(
            &format!("serve_load.{name}.p50"),
            ms(percentile(&t.latencies, 0.50)),
            "ms",
        );
        bench(
            &format!("serve_load.{name}.p99"),
            ms(percentile(&t.latencies, 0.99)),
            "ms",
        );
        bench(&format!("serve_load.{name}.cpu_per_request"), cpu_us, "µs");
        // None: the RSS did not grow over that step, which is no figure (see `Memory`).
        if let Some(bytes) = memory.marginal {
            bench(
                &format!("serve_load.{name}.memory_per_open_stream"),
                bytes as f64,
                "bytes",
            );
        }
        if let Some(bytes) = memory.over_idle {
            bench(
                &format!("serve_load.{name}.memory_per_open_stream_over_idle"),
                bytes as f64,
                "bytes",
            );
        }
        rates.push((rate, cpu_us));
    }
    bench(
        "serve_load.clients",
        n as f64,
        "concurrent streaming clients",
    );
    if let ([(a_rate, a_cpu), (p_rate, p_cpu)], [a_mem, p_mem]) = (&rates[..], &memories[..]) {
        bench(
            "serve_load.ratio.requests_per_s",
            a_rate / p_rate,
            "a2aflow ÷ Python SDK",
        );
        bench(
            "serve_load.ratio.cpu_per_request",
            a_cpu / p_cpu,
            "a2aflow ÷ Python SDK",
        );
        match (a_mem.marginal, p_mem.marginal) {
            (Some(a), Some(p)) => bench(
                "serve_load.ratio.memory_per_open_stream",
                a as f64 / p as f64,
                "a2aflow ÷ Python SDK",
            ),
            _ => println!(
                "serve_load: no memory ratio: a server's RSS did not grow over the last step of \
                 held streams (the memory freed before is reused, not returned); try more \
                 {HOLD_STEPS_ENV}"
            ),
        }
    }
    for target in targets {
        target.server.stop().await;
    }
    Ok(())
}

/// Prints one machine-readable figure for `cargo xtask bench` (two decimals: ratios are small).
fn bench(name: &str, value: f64, unit: &str) {
    println!("BENCH {name}={value:.2} {unit}");
}

/// A per-stream figure, or why there is none.
fn shown(bytes: Option<u64>) -> String {
    bytes.map_or_else(
        || "no figure (the RSS did not grow)".to_owned(),
        |b| format!("{b} bytes"),
    )
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The `q` quantile of sorted `values` (nearest rank).
fn percentile(values: &[Duration], q: f64) -> Duration {
    if values.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
    values[rank - 1]
}

async fn start_a2aflow(clients: usize) -> Result<Target, String> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let mut command = tokio::process::Command::new(exe);
    command
        .env(ROLE_ENV, "server")
        .env("A2AFLOW_SLOAD_CLIENTS", clients.to_string());
    let server = Server::start(command)
        .await
        .map_err(|e| format!("a2aflow server: {e}"))?;
    let endpoint = endpoint(&server, &format!("/agents/{}/jsonrpc", served::WORKFLOW));
    Ok(Target {
        name: "a2aflow",
        server,
        endpoint,
        releases: 0,
        totals: Totals::default(),
    })
}

async fn start_python(python: &Path) -> Result<Target, String> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/serve_load/echo_agent.py");
    let mut command = tokio::process::Command::new(python);
    command.arg(script);
    let server = Server::start(command)
        .await
        .map_err(|e| format!("Python echo agent ({}): {e}", python.display()))?;
    let endpoint = endpoint(&server, "/jsonrpc");
    Ok(Target {
        name: "python_sdk",
        server,
        endpoint,
        releases: 0,
        totals: Totals::default(),
    })
}

fn endpoint(server: &Server, path: &str) -> Endpoint {
    Endpoint {
        addr: SocketAddr::from(([127, 0, 0, 1], server.port())),
        path: path.to_owned(),
    }
}

/// The interop venv's python, if there is one.
fn python() -> Option<PathBuf> {
    for var in ["A2AFLOW_SLOAD_PYTHON", "A2AFLOW_PY_PEER"] {
        if let Ok(p) = std::env::var(var)
            && !p.trim().is_empty()
        {
            return Some(PathBuf::from(p));
        }
    }
    let venv =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/interop-venv/bin/python");
    venv.exists().then_some(venv)
}

/// `n` clients, each connected.
async fn connected(endpoint: &Endpoint, n: usize) -> Result<Vec<Client>, String> {
    let handles: Vec<_> = (0..n)
        .map(|_| {
            let endpoint = endpoint.clone();
            tokio::spawn(async move {
                let mut client = Client::new(endpoint);
                client.connect().await.map(|()| client)
            })
        })
        .collect();
    let mut clients = Vec::with_capacity(n);
    for handle in handles {
        clients.push(handle.await.map_err(|e| format!("client task: {e}"))??);
    }
    Ok(clients)
}

/// Memory per open stream, bytes (see the module docs); `None` where the RSS did not grow.
struct Memory {
    /// (RSS at the last step − RSS at the step before) ÷ clients: the figure, and the ratio's.
    marginal: Option<u64>,
    /// (RSS at the first step − idle RSS after the warm-up) ÷ clients: the older figure.
    over_idle: Option<u64>,
}

/// Bytes per stream of growing from `from` to `to` KiB with `n` more streams, if it grew.
fn per_stream(from: u64, to: u64, n: usize) -> Option<u64> {
    (to > from).then(|| (to - from) * 1024 / n as u64)
}

/// The per-stream arithmetic gives a figure only for growth (run before the bench).
fn self_check() {
    assert_eq!(per_stream(1000, 1010, 10), Some(1024));
    assert_eq!(per_stream(1010, 1000, 10), None);
    assert_eq!(per_stream(1000, 1000, 10), None);
}

/// Memory per open stream (see the module docs): `steps` steps of `n` streams held on top of
/// each other.
async fn memory(target: &mut Target, n: usize, steps: usize) -> Result<Memory, String> {
    // Warm-up: one request per client, then every connection closed.
    let clients = connected(&target.endpoint, n).await?;
    let warm: Vec<_> = clients
        .into_iter()
        .map(|mut c| tokio::spawn(async move { c.stream("warm up", || {}).await }))
        .collect();
    for handle in warm {
        handle
            .await
            .map_err(|e| format!("client task: {e}"))?
            .map_err(|e| format!("{} warm-up: {e}", target.name))?;
    }
    tokio::time::sleep(SETTLE).await;
    let idle = target.server.rss_kib();

    // Every step: every client holds one more stream open, on a new connection.
    target.releases += 1;
    let text = format!("hold {}", target.releases);
    let opened = Arc::new((AtomicUsize::new(0), Notify::new()));
    let mut held = Vec::with_capacity(n * steps);
    let mut held_rss = Vec::with_capacity(steps);
    let mut late = None;
    for step in 1..=steps {
        held.extend((0..n).map(|_| {
            let endpoint = target.endpoint.clone();
            let text = text.clone();
            let opened = opened.clone();
            tokio::spawn(async move {
                let mut client = Client::with_limit(endpoint, client::HOLD_LIMIT);
                client
                    .stream(&text, || {
                        opened.0.fetch_add(1, Ordering::SeqCst);
                        opened.1.notify_one();
                    })
                    .await
            })
        }));
        let want = step * n;
        let all_open = async {
            while opened.0.load(Ordering::SeqCst) < want {
                opened.1.notified().await;
            }
        };
        if tokio::time::timeout(client::HOLD_LIMIT, all_open)
            .await
            .is_err()
        {
            late = Some(format!(
                "{}: only {} of {want} held streams opened in time",
                target.name,
                opened.0.load(Ordering::SeqCst)
            ));
            break;
        }
        tokio::time::sleep(SETTLE).await;
        let mut rss = u64::MAX;
        for _ in 0..3 {
            rss = rss.min(target.server.rss_kib());
            tokio::time::sleep(SETTLE / 4).await;
        }
        held_rss.push(rss);
    }
    target.server.release().await?;
    for handle in held {
        handle
            .await
            .map_err(|e| format!("client task: {e}"))?
            .map_err(|e| format!("{} held stream: {e}", target.name))?;
    }
    if let Some(late) = late {
        return Err(late);
    }
    let (first, before_last, last) = match held_rss[..] {
        [first, .., before_last, last] => (first, before_last, last),
        [first, last] => (first, first, last),
        _ => return Err(format!("{}: fewer than two hold steps", target.name)),
    };
    let memory = Memory {
        marginal: per_stream(before_last, last, n),
        over_idle: per_stream(idle, first, n),
    };
    let steps_shown: Vec<String> = held_rss
        .iter()
        .enumerate()
        .map(|(i, kib)| format!("{} held {:.1} MiB", (i + 1) * n, *kib as f64 / 1024.0))
        .collect();
    println!(
        "serve_load: {}: RSS idle {:.1} MiB, {}: {} per open stream (the last {n}), {} over \
         idle (the first {n})",
        target.name,
        idle as f64 / 1024.0,
        steps_shown.join(", "),
        shown(memory.marginal),
        shown(memory.over_idle),
    );
    Ok(memory)
}

/// One throughput round: every client sends back-to-back for `secs`.
async fn throughput(target: &mut Target, n: usize, secs: f64, round: usize) -> Result<(), String> {
    let clients = connected(&target.endpoint, n).await?;
    let start = Arc::new(Barrier::new(n + 1));
    let window = Duration::from_secs_f64(secs);
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|mut client| {
            let start = start.clone();
            tokio::spawn(async move {
                start.wait().await;
                let deadline = Instant::now() + window;
                let mut latencies = Vec::new();
                let mut events = 0;
                while Instant::now() < deadline {
                    let sent = Instant::now();
                    let streamed = client.stream("echo this text", || {}).await?;
                    latencies.push(sent.elapsed());
                    events += streamed.events;
                }
                Ok::<_, String>((latencies, events))
            })
        })
        .collect();
    let cpu_before = target.server.cpu_ticks();
    start.wait().await;
    let began = Instant::now();
    let mut completed = 0;
    for task in tasks {
        let (latencies, events) = task
            .await
            .map_err(|e| format!("client task: {e}"))?
            .map_err(|e| format!("{} round {round}: {e}", target.name))?;
        completed += latencies.len();
        target.totals.events += events;
        target.totals.latencies.extend(latencies);
    }
    let seconds = began.elapsed().as_secs_f64();
    let cpu = target.server.cpu_ticks().saturating_sub(cpu_before);
    println!(
        "serve_load: round {round} {}: {completed} streams in {seconds:.2} s ({:.0}/s)",
        target.name,
        completed as f64 / seconds
    );
    target.totals.completed += completed;
    target.totals.seconds += seconds;
    target.totals.cpu_ticks += cpu;
    Ok(())
}
