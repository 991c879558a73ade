//! The client's own cost, against a peer that costs next to nothing per request
//! ([`FastPeer`]: canned COMPLETED tasks, only the ids put in), beside a bare hyper loop and wrk
//! against the same peer — the limits.
//!
//! Where the peer runs (the `peer` module): by default in a process of its own (this binary
//! re-run), pinned to CPU 0 with `taskset`, while this process — the engine, the bare loops and
//! wrk — is pinned to the other CPUs, so that every client meets the same peer on a core of its
//! own and what is measured is the client. `A2AFLOW_BENCH_PEER=in-process` serves the peer on
//! the bench's own runtime instead (the figures before 2026-12-06). On a shared machine, run it
//! under `chrt -f 10` (SCHED_FIFO): at `nice -n -10` the two processes' request ping-pong still
//! waits behind other builds, and the wall time of a run was 2–3× its CPU time.
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
//!   JSON-RPC with the kernel's default of no bound on remote tasks in flight;
//!   `wide_1000_cold/bare`: 1,000 calls with 64 in flight from a fresh bare client;
//!   `wide_1000_cold/engine_in_flight_64`: the engine run with at most 64 remote tasks in flight
//!   (`RunOptions::max_concurrent_remote_tasks`, the facade's `EngineConfig` default);
//!   `wide_1000_cold/engine_grpc` and `wide_1000_cold/bare_tonic`: the same over gRPC (one
//!   HTTP/2 connection).
//!
//! Before anything else, the first (cold, fresh process) engine run is measured for memory:
//! `BENCH fast_peer/wide_1000_cold_peak_bytes_per_task` is the client process's peak resident set
//! during that run above its resident set before it, ÷ 1,000 (`/proc/<pid>/clear_refs` resets
//! the peak; the peer included only in process), and `…_peer_peak_bytes_per_task` the peer
//! process's. `A2AFLOW_BENCH_COLD_IN_FLIGHT=N` gives that run a limit of `N` remote tasks in
//! flight (unset: unbounded).
//!
//! Then the rates: with `A2AFLOW_BENCH_WRK_SECS=S` and `wrk` on the `PATH`, wrk posts one fixed
//! JSON-RPC SendMessage for `S` seconds (`-t1 -c64`, keep-alive) at the peer; then the warm bare
//! loop, the cold bare loop, and the engine cold and warm (the engine client and its pool kept
//! from run to run), unbounded and at 64 in flight, each in rounds (median of
//! `A2AFLOW_BENCH_PAIRS` runs), printed beside wrk's rate as `BENCH fast_peer/<case>_vs_wrk` with
//! the client's and the peer's CPU time per run; and the medians of the cold runs' two phases
//! (card fetch and clients, kernel run).
//!
//! Then the criterion cases, then alternating pairs per comparison (the client first in even
//! pairs, the bare loop first in odd ones), each printed as `BENCH fast_peer/<name>=<client ÷ bare
//! throughput>` (median of `A2AFLOW_BENCH_PAIRS`, default 9), then the connections one run of
//! each cold case opens.
//!
//! Run with `cargo bench -p a2aflow-engine --bench fast_peer`; for instruction counts of one case
//! alone (the client's only, with the peer in its own process), see `support::repeat_from_env`
//! (`A2AFLOW_BENCH_REPEAT`).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

#[path = "fast_peer/peer.rs"]
mod peer;
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
use peer::Peer;
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
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

async fn transport_of(card_url: &str, binding: Binding) -> Arc<dyn Transport> {
    let http = HttpClient::new().unwrap();
    let card = http
        .fetch_agent_card(card_url, &CallOptions::default())
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

/// The engine client of one agent over `binding`: the card fetched, a fresh HTTP client and
/// engine client (no pooled connection).
async fn engine_client(card_url: &str, binding: Binding) -> Arc<A2aEngineClient> {
    let http = HttpClient::new().unwrap();
    let card = http
        .fetch_agent_card(card_url, &CallOptions::default())
        .await
        .unwrap();
    let transport = plain_connect(&card, &http, binding).unwrap();
    let client = A2aEngineClient::new(ClientConfig::default())
        .unwrap()
        .with_agent(&card, transport)
        .unwrap();
    Arc::new(client)
}

/// The kernel run of the wide workflow through `client`.
async fn engine_run(client: Arc<A2aEngineClient>, in_flight: Option<usize>) {
    let options = RunOptions {
        timeout: Duration::from_secs(120),
        max_concurrent_remote_tasks: in_flight,
        ..RunOptions::default()
    };
    let result = run(wide(), RunInput::default(), Arc::new(Host), client, options).await;
    assert!(result.success, "{:?}", result.failure);
}

/// One cold engine run over `binding`: the card fetched, a fresh HTTP and engine client, the
/// kernel run. Returns how long the card fetch and the clients took, and how long the run.
async fn engine_cold(
    card_url: String,
    binding: Binding,
    in_flight: Option<usize>,
) -> (Duration, Duration) {
    let t0 = Instant::now();
    let client = engine_client(&card_url, binding).await;
    let t1 = Instant::now();
    engine_run(client, in_flight).await;
    (t1 - t0, t1.elapsed())
}

/// `VmRSS` or `VmHWM` of process `pid` (`self` for this one), in bytes.
fn proc_status_bytes(pid: &str, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
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

/// The peak resident set `f` adds above the resident set before it, in bytes, of each of
/// `pids` (`None` for one whose peak cannot be reset on this system).
fn peak_growth(pids: &[String], f: &dyn Fn()) -> Vec<Option<u64>> {
    let before: Vec<Option<u64>> = pids
        .iter()
        .map(|pid| {
            std::fs::write(format!("/proc/{pid}/clear_refs"), "5").ok()?;
            proc_status_bytes(pid, "VmRSS:")
        })
        .collect();
    f();
    pids.iter()
        .zip(before)
        .map(|(pid, before)| Some(proc_status_bytes(pid, "VmHWM:")?.saturating_sub(before?)))
        .collect()
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

/// One case of the rate table: its name, the calls (or subtasks) of one run, and the run.
struct Rate<'a> {
    name: &'a str,
    calls: usize,
    run: &'a dyn Fn(),
}

/// Each case's rate (calls per second, median of `rounds` runs; the cases run in rounds, each
/// round from the next case on, so the machine's drift falls on all of them), ÷ wrk's when
/// there is a wrk rate; then the client's and the peer's CPU time per run of each case (clock
/// ticks of `/proc/<pid>/stat`, summed over the rounds).
fn rates(cases: &[Rate<'_>], rounds: usize, wrk: Option<f64>, peer: &Peer) {
    for case in cases {
        (case.run)();
    }
    let rounds = rounds.max(1);
    let mut walls = vec![Vec::new(); cases.len()];
    let mut cpu = vec![(0u64, 0u64); cases.len()];
    for round in 0..rounds {
        for k in 0..cases.len() {
            let i = (round + k) % cases.len();
            let (own, theirs) = (peer::cpu_ticks("self"), peer.cpu_ticks());
            let t0 = Instant::now();
            (cases[i].run)();
            walls[i].push(t0.elapsed().as_secs_f64());
            let (own2, theirs2) = (peer::cpu_ticks("self"), peer.cpu_ticks());
            cpu[i].0 += own2.zip(own).map_or(0, |(b, a)| b - a);
            cpu[i].1 += theirs2.zip(theirs).map_or(0, |(b, a)| b - a);
        }
    }
    let tick_ms = 1_000.0 / 100.0; // USER_HZ
    for ((case, wall), (own, theirs)) in cases.iter().zip(&walls).zip(&cpu) {
        let mid = median(wall);
        let rate = case.calls as f64 / mid;
        let line = match wrk {
            Some(wrk) => format!(
                "BENCH fast_peer/{}_vs_wrk={:.2} ({rate:.0}/s ÷ wrk's {wrk:.0} req/s",
                case.name,
                rate / wrk
            ),
            None => format!("BENCH fast_peer/{}_rate={rate:.0}/s (", case.name),
        };
        println!(
            "{line}, median of {rounds} runs of {} calls, {}; per run: wall {:.1} ms, client CPU \
             {:.1} ms, peer CPU {:.1} ms)",
            case.calls,
            peer.arrangement(),
            mid * 1e3,
            *own as f64 * tick_ms / rounds as f64,
            *theirs as f64 * tick_ms / rounds as f64,
        );
    }
}

/// The median of the card-fetch-and-clients and the run durations of cold engine runs.
fn print_phases(name: &str, phases: &Mutex<Vec<(Duration, Duration)>>) {
    let phases = phases.lock().unwrap();
    let setup: Vec<f64> = phases.iter().map(|p| p.0.as_secs_f64() * 1e3).collect();
    let run: Vec<f64> = phases.iter().map(|p| p.1.as_secs_f64() * 1e3).collect();
    println!(
        "BENCH fast_peer/{name}_phases=card fetch and clients {:.2} ms, kernel run {:.1} ms \
         (medians of {} cold runs)",
        median(&setup),
        median(&run),
        phases.len()
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
    // The peer first: in its own process, pinned, before the runtime's threads exist.
    let child = Peer::child();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let peer = child.unwrap_or_else(|| Peer::InProcess(rt.block_on(FastPeer::spawn()).unwrap()));
    let card_url = peer.card_url();
    let jsonrpc = rt.block_on(transport_of(&card_url, Binding::JsonRpc));
    let http_json = rt.block_on(transport_of(&card_url, Binding::HttpJson));
    let grpc = rt.block_on(transport_of(&card_url, Binding::Grpc));
    let bare = rt.block_on(async { bare_client() });
    let grpc_url = peer.grpc_url();
    let tonic = rt.block_on(async { bare_tonic(&grpc_url) });
    let rpc_url = peer.jsonrpc_url();
    let rest_url = format!("{}/message:send", peer.rest_url());
    let warm = rt.block_on(engine_client(&card_url, Binding::JsonRpc));

    let bare_rpc = || rt.block_on(bare_calls(bare.clone(), rpc_url.clone(), true, CALLS));
    let bare_rest = || rt.block_on(bare_calls(bare.clone(), rest_url.clone(), false, CALLS));
    let via_rpc = || rt.block_on(transport_calls(jsonrpc.clone(), CALLS));
    let via_rest = || rt.block_on(transport_calls(http_json.clone(), CALLS));
    let bare_grpc = || rt.block_on(bare_grpc_calls(tonic.clone(), CALLS));
    let via_grpc = || rt.block_on(transport_calls(grpc.clone(), CALLS));
    let phases = Mutex::new(Vec::new());
    let phases_64 = Mutex::new(Vec::new());
    let engine = || {
        let p = rt.block_on(engine_cold(card_url.clone(), Binding::JsonRpc, None));
        phases.lock().unwrap().push(p);
    };
    let engine_64 = || {
        let p = rt.block_on(engine_cold(
            card_url.clone(),
            Binding::JsonRpc,
            Some(IN_FLIGHT),
        ));
        phases_64.lock().unwrap().push(p);
    };
    let engine_warm = || rt.block_on(engine_run(warm.clone(), None));
    let engine_warm_64 = || rt.block_on(engine_run(warm.clone(), Some(IN_FLIGHT)));
    let bare_cold = || rt.block_on(bare_calls(bare_client(), rpc_url.clone(), true, WIDE));
    let engine_grpc = || {
        rt.block_on(engine_cold(card_url.clone(), Binding::Grpc, None));
    };
    let bare_tonic_cold = || {
        rt.block_on(async { bare_grpc_calls(bare_tonic(&grpc_url), WIDE).await });
    };

    let cases: [(&str, &dyn Fn()); 9] = [
        ("send_64/grpc", &via_grpc),
        ("send_64/bare_tonic", &bare_grpc),
        ("send_64/bare_jsonrpc", &bare_rpc),
        ("wide_1000_cold/engine_grpc", &engine_grpc),
        ("wide_1000_cold/bare_tonic", &bare_tonic_cold),
        ("wide_1000_cold/engine", &engine),
        ("wide_1000_cold/engine_in_flight_64", &engine_64),
        ("wide_1000_cold/bare", &bare_cold),
        ("wide_1000_warm/engine_in_flight_64", &engine_warm_64),
    ];
    if support::repeat_from_env(&cases) {
        peer.shutdown(&rt);
        return;
    }

    // First of all, in a fresh process: the memory of one cold engine run.
    let first_limit = std::env::var("A2AFLOW_BENCH_COLD_IN_FLIGHT")
        .ok()
        .and_then(|v| v.parse::<usize>().ok());
    let first = || {
        rt.block_on(engine_cold(card_url.clone(), Binding::JsonRpc, first_limit));
    };
    let mut pids = vec!["self".to_owned()];
    pids.extend(peer.pid().map(|pid| pid.to_string()));
    let grown = peak_growth(&pids, &first);
    let limit = first_limit.map_or("unbounded".to_owned(), |n| format!("{n} in flight"));
    if let Some(bytes) = grown[0] {
        println!(
            "BENCH fast_peer/wide_1000_cold_peak_bytes_per_task={} bytes, peak RSS growth of the \
             first cold run ({limit}) ÷ {WIDE}, {}",
            bytes / WIDE as u64,
            match peer {
                Peer::InProcess(_) => "client and peer (in process)",
                Peer::Child(_) => "the client's process alone",
            }
        );
    }
    if let Some(Some(bytes)) = grown.get(1) {
        println!(
            "BENCH fast_peer/wide_1000_cold_peer_peak_bytes_per_task={} bytes, the peer's \
             process over the same run",
            bytes / WIDE as u64
        );
    }
    let wrk_secs = std::env::var("A2AFLOW_BENCH_WRK_SECS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok());
    let wrk = wrk_secs.and_then(|secs| wrk_rate(&rpc_url, secs));
    if let Some(wrk) = wrk {
        println!(
            "BENCH fast_peer/wrk_jsonrpc_rps={wrk:.0} requests/s (-t1 -c64, {})",
            peer.arrangement()
        );
    }
    rates(
        &[
            Rate {
                name: "bare_warm",
                calls: CALLS,
                run: &bare_rpc,
            },
            Rate {
                name: "bare_cold",
                calls: WIDE,
                run: &bare_cold,
            },
            Rate {
                name: "wide_1000_cold",
                calls: WIDE,
                run: &engine,
            },
            Rate {
                name: "wide_1000_cold_in_flight_64",
                calls: WIDE,
                run: &engine_64,
            },
            Rate {
                name: "wide_1000_warm",
                calls: WIDE,
                run: &engine_warm,
            },
            Rate {
                name: "wide_1000_warm_in_flight_64",
                calls: WIDE,
                run: &engine_warm_64,
            },
        ],
        pair_count(),
        wrk,
        &peer,
    );
    print_phases("wide_1000_cold", &phases);
    print_phases("wide_1000_cold_in_flight_64", &phases_64);

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
    peer.shutdown(&rt);
}

criterion_group!(benches, bench);

// `criterion_main!`, except that the same binary, re-run with `peer::CHILD_ENV`, is the peer.
fn main() {
    if std::env::var_os(peer::CHILD_ENV).is_some() {
        peer::serve_child();
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
