//! Loopback throughput of the testkit server: blocking SendMessage that creates and completes a
//! task, over keep-alive HTTP/1.1 connections (one, and 16 concurrent).
//!
//! `cargo bench -p a2aflow-testkit --bench throughput`

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use a2aflow_testkit::{AgentSpec, TaskScript, TestServer};
use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;

const BODY: &str = r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"task bench"}]}}}"#;

async fn connect(server: &TestServer) -> SendRequest<Full<Bytes>> {
    let tcp = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    tokio::spawn(conn);
    sender
}

async fn one_task(sender: &mut SendRequest<Full<Bytes>>, path: &str) {
    sender.ready().await.unwrap();
    let req = http::Request::post(path)
        .header("host", "bench")
        .header("A2A-Version", "1.0")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(BODY.as_bytes())))
        .unwrap();
    let resp = sender.send_request(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    assert!(
        body.windows(20).any(|w| w == b"TASK_STATE_COMPLETED"),
        "{}",
        String::from_utf8_lossy(&body)
    );
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let server = rt.block_on(async {
        TestServer::builder()
            .request_log_capacity(0)
            .agent(AgentSpec::new("bench").task_bound(10_000).script(|m| {
                TaskScript::new()
                    .working()
                    .artifact_text("answer", m.text())
                    .complete()
                    .into()
            }))
            .spawn()
            .await
            .unwrap()
    });
    let path = "/agents/bench/jsonrpc".to_owned();
    let mut group = c.benchmark_group("testkit");
    group.throughput(Throughput::Elements(1));
    group.measurement_time(Duration::from_secs(5));

    let mut sender = rt.block_on(connect(&server));
    group.bench_function("send_task_one_connection", |b| {
        b.iter(|| rt.block_on(one_task(&mut sender, &path)));
    });

    const CONNS: usize = 16;
    let senders: Vec<_> = rt.block_on(async {
        let mut v = Vec::new();
        for _ in 0..CONNS {
            v.push(connect(&server).await);
        }
        v
    });
    let senders = std::sync::Arc::new(tokio::sync::Mutex::new(senders));
    group.throughput(Throughput::Elements(CONNS as u64));
    group.bench_function("send_task_16_connections", |b| {
        b.iter_custom(|iters| {
            let senders = senders.clone();
            let path = path.clone();
            rt.block_on(async move {
                let mut guard = senders.lock().await;
                let taken: Vec<_> = guard.drain(..).collect();
                let start = Instant::now();
                let handles: Vec<_> = taken
                    .into_iter()
                    .map(|mut s| {
                        let path = path.clone();
                        tokio::spawn(async move {
                            for _ in 0..iters {
                                one_task(&mut s, &path).await;
                            }
                            s
                        })
                    })
                    .collect();
                for h in handles {
                    guard.push(h.await.unwrap());
                }
                start.elapsed()
            })
        });
    });
    group.finish();
    rt.block_on(server.shutdown()).unwrap();
}

criterion_group!(benches, bench);
criterion_main!(benches);
