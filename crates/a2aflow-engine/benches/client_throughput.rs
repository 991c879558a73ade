//! Engine client throughput: one workflow whose single step has 1,000 subtasks, run by the kernel
//! with [`A2aEngineClient`] against the testkit on loopback (JSON-RPC and gRPC, blocking and
//! streaming), and, in the same process and against the same server, a bare client sending the
//! same requests with the same concurrency — the limit the engine is compared with: a bare hyper
//! client for JSON-RPC, a bare tonic client on the `a2a-pb` stubs for gRPC.
//!
//! Run with `cargo bench -p a2aflow-protocol --bench client_throughput`. Criterion reports
//! elements (tasks) per second; then, per mode, the engine's throughput as a fraction of the
//! bare loop's over alternating pairs of runs (`paired_*`, median of 15 pairs), which cancels
//! the machine's drift between criterion's cases. `A2AFLOW_BENCH_PAIRS` sets the number of pairs
//! (and runs them even when a criterion filter names one case); each median also goes to stdout
//! as a `BENCH client_1000_tasks/paired_<mode>=…` line, which `cargo xtask bench` puts in the
//! consolidated table. At the end the bench prints, per case, the process CPU time per 1,000
//! tasks (user + system, server included unless it runs in a child process, see below: a
//! load-independent cost figure on a shared machine) and the connections the server accepted per
//! run, for the criterion cases and for each side of the pairs, then the peak RSS of the process.
//!
//! Fairness: the engine and the bare loop talk to different agents of the same server (same
//! behaviour), so neither runs against a task store grown by the other's iterations; each case
//! can also be run alone in its own process (`-- --bench <case name>`).
//!
//! Where the server runs: by default in this process, on the bench's own runtime. With
//! `A2AFLOW_BENCH_SERVER=process` it runs in a child process (this bench binary re-run as the
//! server), as a remote agent would: the two sides then share neither runtime nor allocator, and
//! the CPU figures printed at the end are the client's alone, without the server's share.
//!
//! Instruction counts of the gRPC cases alone: `support::repeat_from_env`
//! (`A2AFLOW_BENCH_REPEAT`, best with `A2AFLOW_BENCH_SERVER=process` so that callgrind sees the
//! client only).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod support;

use a2a_pb::a2a_service_client::A2aServiceClient;
use a2aflow_engine::{A2aEngineClient, ClientConfig};
use a2aflow_kernel::{CallbackError, ControlPoint, RunInput, RunOptions, run};
use a2aflow_model::{MessageContent, Step, StepType, Subtask, TaskRequest, Workflow};
use a2aflow_protocol::{Binding, CallOptions, HttpClient, Transport};
use a2aflow_testkit::{AgentSpec, Binding as TestkitBinding, DEFAULT_TASK_BOUND, TestServer};
use async_trait::async_trait;
use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

const TASKS: usize = 1_000;

/// The transport for the card's `binding` interface (the testkit's and the fast peer's gRPC
/// interfaces say `http://host:port`: reached in the clear).
fn plain_connect(
    card: &a2aflow_model::a2a::AgentCard,
    http: &HttpClient,
    binding: Binding,
) -> Result<Arc<dyn Transport>, a2aflow_protocol::TransportError> {
    let (binding, interface) = a2aflow_protocol::select_interface(card, &[binding])?;
    a2aflow_protocol::connect_interface(binding, interface, http)
}

struct Host;

#[async_trait]
impl ControlPoint for Host {
    async fn on_task_ref(&self, r: &TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(MessageContent::text(r.description.clone()))
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
                    workflow: None,
                    retry: None,
                    timeout: None,
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    })
}

/// The agents of the bench's server: the engine's and the bare loop's, per mode and binding
/// (gRPC names the agent by its tenant).
const AGENTS: [(&str, bool); 8] = [
    ("blocking", false),
    ("streaming", true),
    ("blocking-limit", false),
    ("streaming-limit", true),
    ("grpc-blocking", false),
    ("grpc-streaming", true),
    ("grpc-blocking-limit", false),
    ("grpc-streaming-limit", true),
];

/// Set in the child process that serves the agents (`A2AFLOW_BENCH_SERVER=process`).
const CHILD_ENV: &str = "A2AFLOW_BENCH_SERVER_CHILD";

async fn spawn_server() -> TestServer {
    let mut builder = TestServer::builder();
    for (name, streaming) in AGENTS {
        let spec = AgentSpec::new(name).streaming(streaming).bindings(&[
            TestkitBinding::JsonRpc,
            TestkitBinding::HttpJson,
            TestkitBinding::Grpc,
        ]);
        builder = builder.agent(spec);
    }
    builder.spawn().await.unwrap()
}

/// The child side: serves the agents, prints their URLs as one JSON line, answers each
/// `connections` line with the server's connection count, and stops at the end of its input
/// (the parent exiting or dropping the pipe).
fn serve_child() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let server = rt.block_on(spawn_server());
    let urls: serde_json::Map<String, Value> = AGENTS
        .iter()
        .map(|(name, _)| {
            let urls = json!({"card": server.card_url(name), "jsonrpc": server.jsonrpc_url(name),
                "grpc": server.base_url()});
            ((*name).to_owned(), urls)
        })
        .collect();
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", Value::Object(urls)).unwrap();
    out.flush().unwrap();
    for line in std::io::stdin().lock().lines() {
        if line.unwrap().trim() == "connections" {
            writeln!(out, "{}", server.total_connections()).unwrap();
            out.flush().unwrap();
        }
    }
    rt.block_on(async { server.shutdown().await.unwrap() });
}

/// The server in a child process, and the pipes to ask it for its connection count.
/// The testkit server in a child process (see `support::ChildProcess`).
struct ChildServer(support::ChildProcess);

impl ChildServer {
    /// One of the URLs the child printed for `agent` (`card`, `jsonrpc` or `grpc`, see
    /// `serve_child`).
    fn url(&self, agent: &str, kind: &str) -> String {
        self.0.urls[agent][kind].as_str().unwrap().to_owned()
    }
}

/// The bench's testkit server, in this process or in a child.
enum Server {
    InProcess(TestServer),
    Child(ChildServer),
}

impl Server {
    fn start(rt: &tokio::runtime::Runtime) -> Server {
        if std::env::var("A2AFLOW_BENCH_SERVER").as_deref() != Ok("process") {
            return Server::InProcess(rt.block_on(spawn_server()));
        }
        let child =
            support::ChildProcess::spawn(Command::new(std::env::current_exe().unwrap()), CHILD_ENV);
        eprintln!("server: in a child process (pid {})", child.id());
        Server::Child(ChildServer(child))
    }

    fn card_url(&self, agent: &str) -> String {
        match self {
            Server::InProcess(s) => s.card_url(agent),
            Server::Child(c) => c.url(agent, "card"),
        }
    }

    fn jsonrpc_url(&self, agent: &str) -> String {
        match self {
            Server::InProcess(s) => s.jsonrpc_url(agent),
            Server::Child(c) => c.url(agent, "jsonrpc"),
        }
    }

    /// The gRPC service's origin (every agent's: gRPC names the agent by its tenant).
    fn grpc_url(&self) -> String {
        match self {
            Server::InProcess(s) => s.base_url().to_owned(),
            Server::Child(c) => c.url(AGENTS[0].0, "grpc"),
        }
    }

    /// Where the server runs, as the figures' lines say it.
    fn arrangement(&self) -> &'static str {
        match self {
            Server::InProcess(_) => "in process",
            Server::Child(_) => "in a child process",
        }
    }

    /// Whose work this process's CPU time and peak RSS include.
    fn measured_side(&self) -> &'static str {
        match self {
            Server::InProcess(_) => "client and server",
            Server::Child(_) => "client only",
        }
    }

    fn total_connections(&self) -> usize {
        match self {
            Server::InProcess(s) => s.total_connections(),
            Server::Child(c) => c.0.ask("connections"),
        }
    }

    fn shutdown(self, rt: &tokio::runtime::Runtime) {
        match self {
            Server::InProcess(s) => rt.block_on(async { s.shutdown().await.unwrap() }),
            Server::Child(c) => drop(c),
        }
    }
}

async fn engine(server: &Server, agent: &str, binding: Binding) -> Arc<A2aEngineClient> {
    let http = HttpClient::new().unwrap();
    let card = http
        .fetch_agent_card(&server.card_url(agent), &CallOptions::default())
        .await
        .unwrap();
    let transport = plain_connect(&card, &http, binding).unwrap();
    assert_eq!(transport.binding(), binding);
    Arc::new(
        A2aEngineClient::new(ClientConfig::default())
            .unwrap()
            .with_agent(&card, transport)
            .unwrap(),
    )
}

async fn run_engine(client: Arc<A2aEngineClient>, wf: Arc<Workflow>) {
    let options = RunOptions {
        timeout: Duration::from_secs(120),
        ..RunOptions::default()
    };
    let result = run(wf, RunInput::default(), Arc::new(Host), client, options).await;
    assert!(result.success, "{:?}", result.failure);
}

type Bare = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

/// The same JSON-RPC requests the engine sends, with the same concurrency, read to the end.
async fn run_bare(client: &Bare, url: &str, streaming: bool) {
    let method = if streaming {
        "SendStreamingMessage"
    } else {
        "SendMessage"
    };
    let calls = (0..TASKS).map(|i| {
        let body = json!({
            "jsonrpc": "2.0", "id": i, "method": method,
            "params": {"message": {
                "messageId": uuid::Uuid::now_v7().to_string(),
                "contextId": uuid::Uuid::now_v7().to_string(),
                "role": "ROLE_USER",
                "parts": [{"text": format!("task {i}")}]
            }}
        });
        let request = hyper::Request::post(url)
            .header("content-type", "application/json")
            .header("a2a-version", "1.0")
            .header(
                "accept",
                if streaming {
                    "text/event-stream"
                } else {
                    "application/json"
                },
            )
            .body(Full::new(Bytes::from(serde_json::to_vec(&body).unwrap())))
            .unwrap();
        let client = client.clone();
        tokio::spawn(async move {
            let response = client.request(request).await.unwrap();
            assert!(response.status().is_success());
            let bytes = response.into_body().collect().await.unwrap().to_bytes();
            if streaming {
                let text = std::str::from_utf8(&bytes).unwrap();
                let last = text
                    .lines()
                    .rev()
                    .find_map(|l| l.strip_prefix("data:"))
                    .unwrap();
                let v: Value = serde_json::from_str(last.trim()).unwrap();
                assert!(v.get("result").is_some());
            } else {
                let v: Value = serde_json::from_slice(&bytes).unwrap();
                assert!(v.get("result").is_some());
            }
        })
    });
    for handle in calls.collect::<Vec<_>>() {
        handle.await.unwrap();
    }
}

type Tonic = A2aServiceClient<tonic::transport::Channel>;

/// A bare tonic client on one lazily connected channel to `url`.
fn bare_tonic(url: &str) -> Tonic {
    let channel = tonic::transport::Endpoint::from_shared(url.to_owned())
        .unwrap()
        .tcp_nodelay(true)
        .connect_lazy();
    A2aServiceClient::new(channel)
}

/// The same SendMessage (or SendStreamingMessage) calls over gRPC to the agent `tenant`, with
/// the same concurrency, each answer (each stream to its end) read and checked.
async fn run_bare_grpc(client: &Tonic, tenant: &str, streaming: bool) {
    let calls = (0..TASKS).map(|i| {
        let message = a2a_pb::Message {
            message_id: uuid::Uuid::now_v7().to_string(),
            context_id: uuid::Uuid::now_v7().to_string(),
            role: a2a_pb::Role::User as i32,
            parts: vec![a2a_pb::Part {
                content: Some(a2a_pb::part::Content::Text(format!("task {i}"))),
                ..Default::default()
            }],
            ..Default::default()
        };
        let mut request = tonic::Request::new(a2a_pb::SendMessageRequest {
            tenant: tenant.to_owned(),
            message: Some(message),
            ..Default::default()
        });
        request.metadata_mut().insert(
            "a2a-version",
            tonic::metadata::MetadataValue::from_static("1.0"),
        );
        let mut client = client.clone();
        tokio::spawn(async move {
            if streaming {
                let mut stream = client
                    .send_streaming_message(request)
                    .await
                    .unwrap()
                    .into_inner();
                let mut last = None;
                while let Some(message) = stream.message().await.unwrap() {
                    last = Some(message);
                }
                assert!(last.and_then(|m| m.payload).is_some());
            } else {
                let answer = client.send_message(request).await.unwrap().into_inner();
                assert!(answer.payload.is_some());
            }
        })
    });
    for handle in calls.collect::<Vec<_>>() {
        handle.await.unwrap();
    }
}

/// User + system CPU time of this process, in clock ticks (`/proc/self/stat`).
fn cpu_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the `(comm)`: state is field 3, utime 14, stime 15.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// CPU ticks, runs and server connections accumulated by one case.
#[derive(Default)]
struct Cost {
    ticks: u64,
    runs: u64,
    connections: usize,
}

/// Runs `f` once, adding its CPU time and the server connections it opened to `cost`.
fn measured(cost: &mut Cost, server: &Server, f: impl FnOnce()) {
    let (t0, c0) = (cpu_ticks().unwrap_or(0), server.total_connections());
    f();
    cost.ticks += cpu_ticks().unwrap_or(0).saturating_sub(t0);
    cost.connections += server.total_connections().saturating_sub(c0);
    cost.runs += 1;
}

/// Most unmeasured runs a side gets before the pairs.
const MAX_WARM_UP: usize = 40;

/// Runs `f` unmeasured until it is at its steady state: a run opened no new connection (the
/// client's pool has grown to what this concurrency needs) and the agent's task store has
/// reached its bound (so every later task evicts an old one, as in every measured run), within
/// [`MAX_WARM_UP`] runs. Returns the runs made.
fn warm_up(server: &Server, f: &dyn Fn()) -> usize {
    let store_full = DEFAULT_TASK_BOUND.div_ceil(TASKS);
    for run in 1..=MAX_WARM_UP {
        let before = server.total_connections();
        f();
        if run >= store_full && server.total_connections() == before {
            return run;
        }
    }
    MAX_WARM_UP
}

/// Engine and bare runs in alternating pairs (engine first in even pairs, bare first in odd
/// ones), each timed on the wall clock: the engine's throughput as a fraction of the bare
/// loop's, per pair. A pair compares two runs a second apart, so the machine's drift over the
/// minutes between criterion's cases (±15 % on the shared 2-core VM) cancels out of each ratio.
/// Both sides are first [`warm_up`]ed to their steady state, so the figure does not depend on
/// whether criterion's cases ran before (in a fresh process, the first runs of each side pay
/// for growing the connection pool and the agent's store is still filling).
/// The pairs' CPU time and connections go to `cost` (engine, bare).
fn paired(
    pairs: usize,
    server: &Server,
    engine: impl Fn(),
    bare: impl Fn(),
    cost: &mut (Cost, Cost),
) -> Vec<f64> {
    let timed = |cost: &mut Cost, f: &dyn Fn()| {
        let t0 = std::time::Instant::now();
        measured(cost, server, f);
        t0.elapsed().as_secs_f64()
    };
    let warm = (warm_up(server, &engine), warm_up(server, &bare));
    eprintln!(
        "paired: {} engine and {} bare warm-up runs before the pairs",
        warm.0, warm.1
    );
    (0..pairs)
        .map(|i| {
            let (e, b) = if i % 2 == 0 {
                let e = timed(&mut cost.0, &engine);
                (e, timed(&mut cost.1, &bare))
            } else {
                let b = timed(&mut cost.1, &bare);
                (timed(&mut cost.0, &engine), b)
            };
            b / e
        })
        .collect()
}

/// How many pairs [`paired`] runs: `A2AFLOW_BENCH_PAIRS` when set; otherwise 15, or none when
/// the bench was given a criterion filter that does not name them (one case run alone).
fn pair_count() -> usize {
    if let Some(n) = std::env::var("A2AFLOW_BENCH_PAIRS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return n;
    }
    match criterion_filter(std::env::args().skip(1)) {
        Some(f) if !f.contains("paired") => 0,
        _ => 15,
    }
}

/// The criterion filter among the bench's arguments: the first positional one, the values of
/// criterion's valued options (`--save-baseline main`, `--measurement-time 5`, ...) skipped.
fn criterion_filter(mut args: impl Iterator<Item = String>) -> Option<String> {
    const VALUED: [&str; 19] = [
        "-c",
        "--color",
        "-s",
        "--save-baseline",
        "-b",
        "--baseline",
        "--baseline-lenient",
        "--load-baseline",
        "--sample-size",
        "--warm-up-time",
        "--measurement-time",
        "--nresamples",
        "--noise-threshold",
        "--confidence-level",
        "--significance-level",
        "--profile-time",
        "--plotting-backend",
        "--output-format",
        "--format",
    ];
    while let Some(a) = args.next() {
        if VALUED.contains(&a.as_str()) {
            args.next();
        } else if !a.starts_with('-') {
            return Some(a);
        }
    }
    None
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

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let server = Server::start(&rt);
    let blocking = rt.block_on(engine(&server, "blocking", Binding::JsonRpc));
    let streaming = rt.block_on(engine(&server, "streaming", Binding::JsonRpc));
    let grpc_blocking = rt.block_on(engine(&server, "grpc-blocking", Binding::Grpc));
    let grpc_streaming = rt.block_on(engine(&server, "grpc-streaming", Binding::Grpc));
    let bare: Bare = rt.block_on(async { Client::builder(TokioExecutor::new()).build_http() });
    let tonic = rt.block_on(async { bare_tonic(&server.grpc_url()) });
    let blocking_url = server.jsonrpc_url("blocking-limit");
    let streaming_url = server.jsonrpc_url("streaming-limit");
    let mut costs: Vec<(String, Cost)> = Vec::new();

    let grpc_engine = |client: &Arc<A2aEngineClient>, agent: &str| {
        rt.block_on(run_engine(client.clone(), workflow(agent)));
    };
    let cases: [(&str, &dyn Fn()); 4] = [
        ("engine_grpc_blocking", &|| {
            grpc_engine(&grpc_blocking, "grpc-blocking")
        }),
        ("bare_tonic_grpc_blocking", &|| {
            rt.block_on(run_bare_grpc(&tonic, "grpc-blocking-limit", false))
        }),
        ("engine_grpc_streaming", &|| {
            grpc_engine(&grpc_streaming, "grpc-streaming")
        }),
        ("bare_tonic_grpc_streaming", &|| {
            rt.block_on(run_bare_grpc(&tonic, "grpc-streaming-limit", true))
        }),
    ];
    if support::repeat_from_env(&cases) {
        server.shutdown(&rt);
        return;
    }

    let mut group = c.benchmark_group("client_1000_tasks");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(15));
    group.throughput(Throughput::Elements(TASKS as u64));
    let mut cost = Cost::default();
    group.bench_function("engine_jsonrpc_blocking", |b| {
        b.iter(|| {
            measured(&mut cost, &server, || {
                rt.block_on(run_engine(blocking.clone(), workflow("blocking")))
            })
        });
    });
    costs.push(("engine_jsonrpc_blocking".into(), std::mem::take(&mut cost)));
    group.bench_function("bare_hyper_jsonrpc_blocking", |b| {
        b.iter(|| {
            measured(&mut cost, &server, || {
                rt.block_on(run_bare(&bare, &blocking_url, false))
            })
        });
    });
    costs.push((
        "bare_hyper_jsonrpc_blocking".into(),
        std::mem::take(&mut cost),
    ));
    group.bench_function("engine_jsonrpc_streaming", |b| {
        b.iter(|| {
            measured(&mut cost, &server, || {
                rt.block_on(run_engine(streaming.clone(), workflow("streaming")))
            })
        });
    });
    costs.push(("engine_jsonrpc_streaming".into(), std::mem::take(&mut cost)));
    group.bench_function("bare_hyper_jsonrpc_streaming", |b| {
        b.iter(|| {
            measured(&mut cost, &server, || {
                rt.block_on(run_bare(&bare, &streaming_url, true))
            })
        });
    });
    costs.push((
        "bare_hyper_jsonrpc_streaming".into(),
        std::mem::take(&mut cost),
    ));
    for (mode, client, streaming) in [
        ("blocking", &grpc_blocking, false),
        ("streaming", &grpc_streaming, true),
    ] {
        let (agent, bare_agent) = (format!("grpc-{mode}"), format!("grpc-{mode}-limit"));
        let name = format!("engine_grpc_{mode}");
        group.bench_function(&name, |b| {
            b.iter(|| {
                measured(&mut cost, &server, || {
                    rt.block_on(run_engine(client.clone(), workflow(&agent)))
                })
            });
        });
        costs.push((name, std::mem::take(&mut cost)));
        let name = format!("bare_tonic_grpc_{mode}");
        group.bench_function(&name, |b| {
            b.iter(|| {
                measured(&mut cost, &server, || {
                    rt.block_on(run_bare_grpc(&tonic, &bare_agent, streaming))
                })
            });
        });
        costs.push((name, std::mem::take(&mut cost)));
    }
    group.finish();
    let pairs = pair_count();
    if pairs > 0 {
        for (mode, client, agent, bare_target, streaming) in [
            ("blocking", &blocking, "blocking", &blocking_url, false),
            ("streaming", &streaming, "streaming", &streaming_url, true),
            (
                "grpc_blocking",
                &grpc_blocking,
                "grpc-blocking",
                &"grpc-blocking-limit".to_owned(),
                false,
            ),
            (
                "grpc_streaming",
                &grpc_streaming,
                "grpc-streaming",
                &"grpc-streaming-limit".to_owned(),
                true,
            ),
        ] {
            let grpc = mode.starts_with("grpc");
            let mut cost = (Cost::default(), Cost::default());
            let ratios = paired(
                pairs,
                &server,
                || rt.block_on(run_engine(client.clone(), workflow(agent))),
                || {
                    if grpc {
                        rt.block_on(run_bare_grpc(&tonic, bare_target, streaming));
                    } else {
                        rt.block_on(run_bare(&bare, bare_target, streaming));
                    }
                },
                &mut cost,
            );
            costs.push((format!("paired_engine_{mode}"), cost.0));
            costs.push((format!("paired_bare_{mode}"), cost.1));
            let shown: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
            let mid = median(&ratios);
            eprintln!(
                "paired_{mode}: engine / bare throughput per pair [{}], median {mid:.2}",
                shown.join(", "),
            );
            // On stdout, for `cargo xtask bench`'s table (it reads `BENCH name=figure` lines).
            println!(
                "BENCH client_1000_tasks/paired_{mode}={mid:.2} engine ÷ bare, median of {pairs} \
                 alternating pairs, server {}",
                server.arrangement()
            );
        }
    }
    // Clock ticks are 1/100 s on Linux (`getconf CLK_TCK`).
    let whose = server.measured_side();
    for (name, c) in costs.iter().filter(|(_, c)| c.runs > 0) {
        eprintln!(
            "{name}: CPU ({whose}) {:.0} ms per 1,000 tasks, {:.1} connections per run ({} runs)",
            c.ticks as f64 * 10.0 / c.runs as f64,
            c.connections as f64 / c.runs as f64,
            c.runs
        );
    }
    if let Some(kib) = peak_rss_kib() {
        eprintln!("peak RSS (VmHWM) of the bench process ({whose}): {kib} KiB");
    }
    server.shutdown(&rt);
}

criterion_group!(benches, bench);

// `criterion_main!`, except that the same binary, re-run with `CHILD_ENV`, is the server.
fn main() {
    if std::env::var_os(CHILD_ENV).is_some() {
        serve_child();
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
