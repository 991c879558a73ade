//! Protocol benchmarks: SSE parsing throughput against `serde_json` decoding the same payloads,
//! and one JSON-RPC `SendMessage` round trip against the testkit agent on loopback.
//!
//! Run: `cargo bench -p a2aflow-protocol --bench protocol`. Figures go to docs/benchmarks.md.

// Bench code: a failed setup is a failed bench.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;

use a2aflow_model::a2a::{Message, Part, Role, SendMessageRequest, StreamResponse};
use a2aflow_protocol::sse::SseParser;
use a2aflow_protocol::{Binding, CallOptions, HttpClient, connect};
use a2aflow_testkit::{AgentSpec, TestServer};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// A stream shaped like the Python SDK's: CRLF, a JSON-RPC envelope per event, status and artifact
/// updates, a keep-alive comment now and then. Returns the bytes and the `data:` payloads.
fn stream_payload(events: usize) -> (Vec<u8>, Vec<String>) {
    let mut bytes = Vec::new();
    let mut datas = Vec::new();
    for i in 0..events {
        let result = if i % 2 == 0 {
            format!(
                r#"{{"statusUpdate": {{"taskId": "57642a4f-5b1f-4d5e-9c2b-{i:012}", "contextId": "ccd54cb4-1d3c-4a3e-8f2e-5a7d9c0b1e2f", "status": {{"state": "TASK_STATE_WORKING", "timestamp": "2026-11-30T03:07:54.317093Z"}}}}}}"#
            )
        } else {
            format!(
                r#"{{"artifactUpdate": {{"taskId": "57642a4f-5b1f-4d5e-9c2b-{i:012}", "contextId": "ccd54cb4-1d3c-4a3e-8f2e-5a7d9c0b1e2f", "artifact": {{"artifactId": "art-1", "name": "answer", "parts": [{{"text": "chunk {i} of a streamed answer with some words in it to look like real model output"}}]}}, "append": true}}}}"#
            )
        };
        let data = format!(r#"{{"result": {result}, "id": "s1", "jsonrpc": "2.0"}}"#);
        bytes.extend_from_slice(b"data: ");
        bytes.extend_from_slice(data.as_bytes());
        bytes.extend_from_slice(b"\r\n\r\n");
        if i % 50 == 0 {
            bytes.extend_from_slice(b": ping - 2026-11-30 03:08:09.123456+00:00\r\n\r\n");
        }
        datas.push(data);
    }
    (bytes, datas)
}

fn sse(c: &mut Criterion) {
    let (bytes, datas) = stream_payload(4000);
    let mut g = c.benchmark_group("sse");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("parse_events_16k_chunks", |b| {
        b.iter(|| {
            let mut p = SseParser::new(4 << 20);
            let mut out = Vec::with_capacity(4096);
            for chunk in bytes.chunks(16 * 1024) {
                p.feed_into(black_box(chunk), &mut out).unwrap();
            }
            assert_eq!(out.len(), 4000);
            out
        })
    });
    g.bench_function("serde_json_value_same_payloads", |b| {
        b.iter(|| {
            datas
                .iter()
                .map(|d| serde_json::from_str::<serde_json::Value>(black_box(d)).unwrap())
                .filter(serde_json::Value::is_object)
                .count()
        })
    });
    g.bench_function("parse_and_decode_stream_response", |b| {
        b.iter(|| {
            let mut p = SseParser::new(4 << 20);
            let mut out = Vec::with_capacity(4096);
            for chunk in bytes.chunks(16 * 1024) {
                p.feed_into(black_box(chunk), &mut out).unwrap();
            }
            out.iter()
                .map(|e| {
                    let mut v: serde_json::Value = serde_json::from_str(&e.data).unwrap();
                    serde_json::from_value::<StreamResponse>(v["result"].take()).unwrap()
                })
                .filter(|s| !matches!(s, StreamResponse::Message(_)))
                .count()
        })
    });
    g.finish();
}

fn round_trip(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (server, transport) = rt.block_on(async {
        let server = TestServer::builder()
            .agent(AgentSpec::new("bench"))
            .request_log_capacity(0)
            .spawn()
            .await
            .unwrap();
        let client = HttpClient::new().unwrap();
        let card = client
            .fetch_agent_card(&server.card_url("bench"), &CallOptions::default())
            .await
            .unwrap();
        let t = connect(&card, &client, &[Binding::JsonRpc]).unwrap();
        (server, t)
    });
    let req = SendMessageRequest {
        message: Message::new(Role::User, vec![Part::text("echo bench")]),
        configuration: None,
        metadata: None,
        tenant: None,
    };
    let opts = CallOptions::default();
    c.bench_function("jsonrpc_send_message_round_trip_loopback", |b| {
        b.iter(|| {
            rt.block_on(transport.send_message(black_box(&req), &opts))
                .unwrap()
        })
    });
    drop(transport);
    drop(server);
}

criterion_group!(benches, sse, round_trip);
criterion_main!(benches);
