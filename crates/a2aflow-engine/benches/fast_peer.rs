//! The client's own cost, against a peer that costs next to nothing per request
//! ([`FastPeer`]: canned COMPLETED tasks, only the ids put in), beside a bare hyper loop against
//! the same peer in the same process — the limit.
//!
//! Cases (criterion, elements = SendMessage calls):
//! - `send_64/bare_jsonrpc`, `send_64/bare_http_json`: [`CALLS`] SendMessage calls with 64 in
//!   flight from a bare hyper client (the request body from a template with fresh ids, the
//!   answer read whole and parsed as JSON).
//! - `send_64/bare_tonic`: the same calls from a bare tonic client on the `a2a-pb` stubs (one
//!   channel, the request message built with fresh ids, the answer decoded by prost).
//! - `send_64/jsonrpc`, `send_64/http_json`, `send_64/grpc`: the same calls through the
//!   protocol crate's transport of that binding (what the engine client sends each through).
//! - `wide_1000_cold/engine`: one cold run of a one-step workflow with 1,000 subtasks: the card
//!   fetched, a fresh HTTP client and engine client (no pooled connection), the kernel run over
//!   JSON-RPC; `wide_1000_cold/bare`: 1,000 calls with 64 in flight from a fresh bare client;
//!   `wide_1000_cold/engine_in_flight_64`: the engine run with at most 64 remote tasks in flight
//!   (`RunOptions::max_concurrent_remote_tasks`; unbounded by default, so the default run opens
//!   up to one HTTP/1 connection per subtask); `wide_1000_cold/engine_grpc` and
//!   `wide_1000_cold/bare_tonic`: the same over gRPC (one HTTP/2 connection).
//!
//! Then alternating pairs per comparison (the client first in even pairs, the bare loop first in
//! odd ones), each printed as `BENCH fast_peer/<name>=<client ÷ bare throughput>` (median of
//! `A2AFLOW_BENCH_PAIRS`, default 9). Before anything else, the first (cold, fresh process) engine
//! run is measured for memory: `BENCH fast_peer/wide_1000_cold_peak_bytes_per_task` is the
//! process's peak resident set during that run above its resident set before it, ÷ 1,000 (peer
//! included; `/proc/self/clear_refs` resets the peak).
//!
//! `A2AFLOW_BENCH_COLD_IN_FLIGHT=N` gives that first measured run a limit of `N` remote tasks in
//! flight (unset: unbounded). With `A2AFLOW_BENCH_WRK_SECS=S` and `wrk` on the `PATH`, wrk posts
//! one fixed JSON-RPC SendMessage for `S` seconds (`-t1 -c64`, keep-alive) at the same peer, and
//! the cold engine runs (unbounded and at 64 in flight, median of the pairs' runs) are put beside
//! its rate: `BENCH fast_peer/wide_1000_cold_vs_wrk…`.
//!
//! Run with `cargo bench -p a2aflow-engine --bench fast_peer`; for instruction counts of the gRPC
//! cases alone, see `support::repeat_from_env` (`A2AFLOW_BENCH_REPEAT`).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod support;

use a2a_pb::a2a_service_client::A2aServiceClient;
use a2aflow_engine::{A2aEngineClient, ClientConfig};
use a2aflow_kernel::{CallbackError, ControlPoint, RunInput, RunOptions, run};
use a2aflow_model::a2a::{self, SendMessageRequest};
use a2aflow_model::{MessageContent, Step, StepType, Subtask, TaskRequest, Workflow};
use a2aflow_protocol::outgoing::user_message;
use a2aflow_protocol::{Binding, CallOptions, HttpClient, Transport};
use a2aflow_testkit::FastPeer;
use async_trait::async_trait;
use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// SendMessage calls per `send_64` iteration.
const CALLS: usize = 2_000;
/// Calls in flight at once.
const IN_FLIGHT: usize = 64;
/// Subtasks of the wide workflow.
const WIDE: usize = 1_000;

type Bare = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

fn bare_client() -> Bare {
    Client::builder(TokioExecutor::new()).build_http()
}

/// Runs `calls` calls of `one` with [`IN_FLIGHT`] workers.
async fn in_flight<F, Fut>(calls: usize, one: F)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let next = Arc::new(AtomicUsize::new(0));
    let one = Arc::new(one);
    let workers: Vec<_> = (0..IN_FLIGHT)
        .map(|_| {
            let (next, one) = (next.clone(), one.clone());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= calls {
                        return;
                    }
                    one(i).await;
                }
            })
        })
        .collect();
    for w in workers {
        w.await.unwrap();
    }
}

/// The bare loop: SendMessage bodies as the client would write them (fresh ids), POSTed with
/// the A2A headers, each answer read whole and parsed as JSON.
async fn bare_calls(client: Bare, url: String, jsonrpc: bool, calls: usize) {
    let url: hyper::Uri = url.parse().unwrap();
    in_flight(calls, move |i| {
        let message = format!(
            r#"{{"messageId":"{}","contextId":"{}","role":"ROLE_USER","parts":[{{"text":"task {i}"}}]}}"#,
            a2a::new_message_id(),
            a2a::new_context_id()
        );
        let body = if jsonrpc {
            format!(
                r#"{{"jsonrpc":"2.0","id":{i},"method":"SendMessage","params":{{"message":{message}}}}}"#
            )
        } else {
            format!(r#"{{"message":{message}}}"#)
        };
        let request = hyper::Request::post(url.clone())
            .header("content-type", "application/json")
            .header("a2a-version", "1.0")
            .header("accept", "application/json")
            .body(Full::new(Bytes::from(body)))
            .unwrap();
        let client = client.clone();
        async move {
            let response = client.request(request).await.unwrap();
            assert!(response.status().is_success());
            let bytes = response.into_body().collect().await.unwrap().to_bytes();
            let v: Value = serde_json::from_slice(&bytes).unwrap();
            assert!(v.get("result").or_else(|| v.get("task")).is_some());
        }
    })
    .await;
}

/// A bare tonic client on one lazily connected channel to `url`.
fn bare_tonic(url: &str) -> A2aServiceClient<tonic::transport::Channel> {
    let channel = tonic::transport::Endpoint::from_shared(url.to_owned())
        .unwrap()
        .tcp_nodelay(true)
        .connect_lazy();
    A2aServiceClient::new(channel)
}

/// The bare gRPC loop: the SendMessage messages built directly (fresh ids), sent with the
/// `a2a-version` metadata, each answer checked to hold a task.
async fn bare_grpc_calls(client: A2aServiceClient<tonic::transport::Channel>, calls: usize) {
    in_flight(calls, move |i| {
        let mut client = client.clone();
        async move {
            let message = a2a_pb::Message {
                message_id: a2a::new_message_id(),
                context_id: a2a::new_context_id(),
                role: a2a_pb::Role::User as i32,
                parts: vec![a2a_pb::Part {
                    content: Some(a2a_pb::part::Content::Text(format!("task {i}"))),
                    ..Default::default()
                }],
                ..Default::default()
            };
            let mut request = tonic::Request::new(a2a_pb::SendMessageRequest {
                message: Some(message),
                ..Default::default()
            });
            request.metadata_mut().insert(
                "a2a-version",
                tonic::metadata::MetadataValue::from_static("1.0"),
            );
            let answer = client.send_message(request).await.unwrap().into_inner();
            assert!(matches!(
                answer.payload,
                Some(a2a_pb::send_message_response::Payload::Task(_))
            ));
        }
    })
    .await;
}

/// The same calls through the protocol crate's transport.
async fn transport_calls(transport: Arc<dyn Transport>, calls: usize) {
    in_flight(calls, move |i| {
        let transport = transport.clone();
        async move {
            let content = MessageContent::text(format!("task {i}"));
            let request = SendMessageRequest {
                message: user_message(content, &a2a::new_context_id(), None, Vec::new()),
                configuration: None,
                metadata: None,
                tenant: None,
            };
            let options = CallOptions::default();
            transport.send_message(&request, &options).await.unwrap();
        }
    })
    .await;
}

async fn transport_of(peer: &FastPeer, binding: Binding) -> Arc<dyn Transport> {
    let http = HttpClient::new().unwrap();
    let card = http
        .fetch_agent_card(&peer.card_url(), &CallOptions::default())
        .await
        .unwrap();
    let transport = plain_connect(&card, &http, binding).unwrap();
    assert_eq!(transport.binding(), binding);
    transport
}

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

fn wide() -> Arc<Workflow> {
    Arc::new(Workflow {
        id: "wide".into(),
        name: "wide".into(),
        steps: vec![Step {
            name: "fan".into(),
            step_type: StepType::AllSuccess,
            subtasks: (0..WIDE)
                .map(|i| Subtask {
                    agent: "fast".into(),
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

/// One cold engine run over `binding`: the card fetched, a fresh HTTP and engine client, the
/// kernel run.
async fn engine_cold(card_url: String, binding: Binding, in_flight: Option<usize>) {
    let http = HttpClient::new().unwrap();
    let card = http
        .fetch_agent_card(&card_url, &CallOptions::default())
        .await
        .unwrap();
    let transport = plain_connect(&card, &http, binding).unwrap();
    let client = A2aEngineClient::new(ClientConfig::default())
        .unwrap()
        .with_agent(&card, transport)
        .unwrap();
    let options = RunOptions {
        timeout: Duration::from_secs(120),
        max_concurrent_remote_tasks: in_flight,
        ..RunOptions::default()
    };
    let result = run(
        wide(),
        RunInput::default(),
        Arc::new(Host),
        Arc::new(client),
        options,
    )
    .await;
    assert!(result.success, "{:?}", result.failure);
}

/// `VmRSS` or `VmHWM` of this process, in bytes.
fn proc_status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix(field))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// The peak resident set `f` adds above the resident set before it, in bytes (`None` when the
/// peak cannot be reset on this system).
fn peak_growth(f: &dyn Fn()) -> Option<u64> {
    std::fs::write("/proc/self/clear_refs", "5").ok()?;
    let before = proc_status_bytes("VmRSS:")?;
    f();
    Some(proc_status_bytes("VmHWM:")?.saturating_sub(before))
}

/// wrk's requests per second against `url` for `secs` seconds (`-t1 -c64`, one fixed
/// JSON-RPC SendMessage body with the A2A headers); `None` without wrk.
fn wrk_rate(url: &str, secs: u64) -> Option<f64> {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-1","contextId":"c-1","role":"ROLE_USER","parts":[{"text":"bench"}]}}}"#;
    let script = format!(
        "wrk.method = \"POST\"\nwrk.body = [[{body}]]\nwrk.headers[\"Content-Type\"] = \"application/json\"\nwrk.headers[\"A2A-Version\"] = \"1.0\"\n"
    );
    let path = std::env::temp_dir().join(format!("fast_peer_wrk_{}.lua", std::process::id()));
    std::fs::write(&path, script).ok()?;
    let out = std::process::Command::new("wrk")
        .args(["-t1", "-c64", &format!("-d{secs}s"), "-s"])
        .arg(&path)
        .arg(url)
        .output();
    let _ = std::fs::remove_file(&path);
    let text = String::from_utf8_lossy(&out.ok()?.stdout).into_owned();
    eprintln!("{text}");
    assert!(
        !text.contains("Non-2xx"),
        "wrk got answers that are not 2xx: {text}"
    );
    text.lines()
        .find_map(|l| l.strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The cold engine's rate (subtasks per second, median of `runs` runs of `engine`) ÷ `wrk`.
fn against_wrk(name: &str, runs: usize, engine: &dyn Fn(), wrk: f64) {
    let walls: Vec<f64> = (0..runs.max(1))
        .map(|_| {
            let t0 = Instant::now();
            engine();
            t0.elapsed().as_secs_f64()
        })
        .collect();
    let rate = WIDE as f64 / median(&walls);
    println!(
        "BENCH fast_peer/{name}={:.2} engine ÷ wrk ({rate:.0} subtasks/s ÷ {wrk:.0} req/s, median of {} runs)",
        rate / wrk,
        walls.len()
    );
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

fn pair_count() -> usize {
    std::env::var("A2AFLOW_BENCH_PAIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(9)
}

/// Client and bare runs in alternating pairs: the client's throughput ÷ the bare loop's, median.
fn paired(name: &str, pairs: usize, client: &dyn Fn(), bare: &dyn Fn()) {
    if pairs == 0 {
        return;
    }
    let timed = |f: &dyn Fn()| {
        let t0 = Instant::now();
        f();
        t0.elapsed().as_secs_f64()
    };
    // One unmeasured run each: pools and allocator warm.
    client();
    bare();
    let ratios: Vec<f64> = (0..pairs)
        .map(|i| {
            let (c, b) = if i % 2 == 0 {
                let c = timed(client);
                (c, timed(bare))
            } else {
                let b = timed(bare);
                (timed(client), b)
            };
            b / c
        })
        .collect();
    let shown: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
    let mid = median(&ratios);
    eprintln!(
        "{name}: client ÷ bare per pair [{}], median {mid:.2}",
        shown.join(", ")
    );
    println!("BENCH fast_peer/{name}={mid:.2} client ÷ bare, median of {pairs} alternating pairs");
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let peer = rt.block_on(FastPeer::spawn()).unwrap();
    let jsonrpc = rt.block_on(transport_of(&peer, Binding::JsonRpc));
    let http_json = rt.block_on(transport_of(&peer, Binding::HttpJson));
    let grpc = rt.block_on(transport_of(&peer, Binding::Grpc));
    let bare = rt.block_on(async { bare_client() });
    let grpc_url = peer.grpc_url();
    let tonic = rt.block_on(async { bare_tonic(&grpc_url) });
    let rpc_url = peer.jsonrpc_url();
    let rest_url = format!("{}/message:send", peer.rest_url());
    let card_url = peer.card_url();

    let bare_rpc = || rt.block_on(bare_calls(bare.clone(), rpc_url.clone(), true, CALLS));
    let bare_rest = || rt.block_on(bare_calls(bare.clone(), rest_url.clone(), false, CALLS));
    let via_rpc = || rt.block_on(transport_calls(jsonrpc.clone(), CALLS));
    let via_rest = || rt.block_on(transport_calls(http_json.clone(), CALLS));
    let bare_grpc = || rt.block_on(bare_grpc_calls(tonic.clone(), CALLS));
    let via_grpc = || rt.block_on(transport_calls(grpc.clone(), CALLS));
    let engine = || rt.block_on(engine_cold(card_url.clone(), Binding::JsonRpc, None));
    let engine_64 = || {
        let limit = Some(IN_FLIGHT);
        rt.block_on(engine_cold(card_url.clone(), Binding::JsonRpc, limit));
    };
    let bare_cold = || rt.block_on(bare_calls(bare_client(), rpc_url.clone(), true, WIDE));
    let engine_grpc = || rt.block_on(engine_cold(card_url.clone(), Binding::Grpc, None));
    let bare_tonic_cold = || {
        rt.block_on(async { bare_grpc_calls(bare_tonic(&grpc_url), WIDE).await });
    };

    let cases: [(&str, &dyn Fn()); 4] = [
        ("send_64/grpc", &via_grpc),
        ("send_64/bare_tonic", &bare_grpc),
        ("wide_1000_cold/engine_grpc", &engine_grpc),
        ("wide_1000_cold/bare_tonic", &bare_tonic_cold),
    ];
    if support::repeat_from_env(&cases) {
        rt.block_on(async { peer.shutdown().await.unwrap() });
        return;
    }

    // First of all, in a fresh process: the memory of one cold engine run.
    let first_limit = std::env::var("A2AFLOW_BENCH_COLD_IN_FLIGHT")
        .ok()
        .and_then(|v| v.parse::<usize>().ok());
    let first = || {
        rt.block_on(engine_cold(card_url.clone(), Binding::JsonRpc, first_limit));
    };
    if let Some(bytes) = peak_growth(&first) {
        let limit = first_limit.map_or("unbounded".to_owned(), |n| format!("{n} in flight"));
        println!(
            "BENCH fast_peer/wide_1000_cold_peak_bytes_per_task={} bytes, peak RSS growth of the \
             first cold run ({limit}) ÷ {WIDE}, peer in process",
            bytes / WIDE as u64
        );
    }
    let wrk_secs = std::env::var("A2AFLOW_BENCH_WRK_SECS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(wrk) = wrk_secs.and_then(|secs| wrk_rate(&rpc_url, secs)) {
        println!("BENCH fast_peer/wrk_jsonrpc_rps={wrk:.0} requests/s (-t1 -c64)");
        let runs = pair_count();
        against_wrk("wide_1000_cold_vs_wrk", runs, &engine, wrk);
        against_wrk("wide_1000_cold_in_flight_64_vs_wrk", runs, &engine_64, wrk);
    }

    let mut group = c.benchmark_group("send_64");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Elements(CALLS as u64));
    group.bench_function("bare_jsonrpc", |b| b.iter(bare_rpc));
    group.bench_function("jsonrpc", |b| b.iter(via_rpc));
    group.bench_function("bare_http_json", |b| b.iter(bare_rest));
    group.bench_function("http_json", |b| b.iter(via_rest));
    group.bench_function("bare_tonic", |b| b.iter(bare_grpc));
    group.bench_function("grpc", |b| b.iter(via_grpc));
    group.finish();
    let mut group = c.benchmark_group("wide_1000_cold");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Elements(WIDE as u64));
    group.bench_function("engine", |b| b.iter(engine));
    group.bench_function("bare", |b| b.iter(bare_cold));
    group.bench_function("engine_in_flight_64", |b| b.iter(engine_64));
    group.bench_function("engine_grpc", |b| b.iter(engine_grpc));
    group.bench_function("bare_tonic", |b| b.iter(bare_tonic_cold));
    group.finish();

    let pairs = pair_count();
    paired("send_64_jsonrpc", pairs, &via_rpc, &bare_rpc);
    paired("send_64_http_json", pairs, &via_rest, &bare_rest);
    paired("send_64_grpc", pairs, &via_grpc, &bare_grpc);
    paired("wide_1000_cold", pairs, &engine, &bare_cold);
    paired("wide_1000_cold_in_flight_64", pairs, &engine_64, &bare_cold);
    paired("wide_1000_cold_grpc", pairs, &engine_grpc, &bare_tonic_cold);
    for (name, f) in [
        ("wide_1000_cold/engine", &engine as &dyn Fn()),
        ("wide_1000_cold/engine_in_flight_64", &engine_64),
        ("wide_1000_cold/bare", &bare_cold),
        ("wide_1000_cold/engine_grpc", &engine_grpc),
        ("wide_1000_cold/bare_tonic", &bare_tonic_cold),
    ] {
        let before = peer.total_connections();
        f();
        eprintln!(
            "{name}: {} connections in one run",
            peer.total_connections() - before
        );
    }
    eprintln!(
        "fast peer: {} sends answered, {} connections",
        peer.sends(),
        peer.total_connections()
    );
    rt.block_on(async { peer.shutdown().await.unwrap() });
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
