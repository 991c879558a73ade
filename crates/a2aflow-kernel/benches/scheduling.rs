//! Scheduling overhead of the kernel with an in-memory client that answers at once.
//!
//! Shapes: chain (s0 → s1 → …), wide (root → N parallel → join), layered (L layers × W steps,
//! each step feeding two steps of the next layer). The figure of merit is the time per (step +
//! edge). Group `kernel_scheduling` measures `run` (validation and planning included);
//! `kernel_scheduling_prepared` measures `run_prepared` on a workflow prepared once; both with
//! events off. Groups `kernel_scheduling_sink` and `kernel_scheduling_prepared_sink` are the same
//! runs with a counting event sink (a callback that counts every event, as a host showing progress
//! has one), so that the events' cost shows.
//! Run with `cargo bench -p a2aflow-kernel --bench scheduling`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use a2aflow_kernel::{
    CallbackError, ControlPoint, EventCallback, InMemoryClient, PreparedWorkflow, RunInput,
    RunOptions, run, run_prepared,
};
use a2aflow_model::{Edge, Event, MessageContent, Step, Subtask, TaskRequest, Workflow};
use async_trait::async_trait;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

struct Host;

#[async_trait]
impl ControlPoint for Host {
    async fn on_task(&self, r: TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(MessageContent::text(r.description))
    }
}

fn step(name: String, next: Vec<String>) -> Step {
    Step {
        subtasks: vec![Subtask {
            agent: "agent".into(),
            skill: "skill".into(),
            description: name.clone(),
            workflow: None,
            retry: None,
            timeout: None,
        }],
        next: next
            .into_iter()
            .map(|step| Edge {
                step: step.into(),
                condition: "".into(),
            })
            .collect(),
        name,
        ..Default::default()
    }
}

fn workflow(steps: Vec<Step>) -> Arc<Workflow> {
    Arc::new(Workflow {
        id: "bench".into(),
        name: "bench".into(),
        steps,
        ..Default::default()
    })
}

fn chain(n: usize) -> Arc<Workflow> {
    workflow(
        (0..n)
            .map(|i| {
                let next = if i + 1 < n {
                    vec![format!("s{}", i + 1)]
                } else {
                    vec![]
                };
                step(format!("s{i}"), next)
            })
            .collect(),
    )
}

fn wide(n: usize) -> Arc<Workflow> {
    let mut steps = vec![step(
        "root".into(),
        (0..n).map(|i| format!("p{i}")).collect(),
    )];
    steps.extend((0..n).map(|i| step(format!("p{i}"), vec!["join".into()])));
    steps.push(step("join".into(), vec![]));
    workflow(steps)
}

fn layered(layers: usize, width: usize) -> Arc<Workflow> {
    let mut steps = Vec::with_capacity(layers * width);
    for l in 0..layers {
        for w in 0..width {
            let next = if l + 1 < layers {
                let mut n = vec![format!("l{}w{w}", l + 1)];
                if width > 1 {
                    n.push(format!("l{}w{}", l + 1, (w + 1) % width));
                }
                n
            } else {
                vec![]
            };
            steps.push(step(format!("l{l}w{w}"), next));
        }
    }
    workflow(steps)
}

fn size(w: &Workflow) -> u64 {
    (w.steps.len() + w.steps.iter().map(|s| s.next.len()).sum::<usize>()) as u64
}

fn shapes() -> Vec<(&'static str, usize, Arc<Workflow>)> {
    vec![
        ("chain", 100, chain(100)),
        ("chain", 1_000, chain(1_000)),
        ("chain", 10_000, chain(10_000)),
        ("wide", 100, wide(100)),
        ("wide", 1_000, wide(1_000)),
        ("wide", 10_000, wide(10_000)),
        ("layered", 100, layered(10, 10)),
        ("layered", 1_024, layered(32, 32)),
        ("layered", 10_000, layered(100, 100)),
    ]
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let host: Arc<dyn ControlPoint> = Arc::new(Host);
    let client = Arc::new(InMemoryClient::new().recording(false));
    let shapes = shapes();
    let mut group = c.benchmark_group("kernel_scheduling");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(3));
    group.warm_up_time(Duration::from_millis(500));
    for (shape, n, wf) in &shapes {
        let (shape, n) = (*shape, *n);
        group.throughput(Throughput::Elements(size(wf)));
        group.bench_with_input(BenchmarkId::new(shape, n), wf, |b, wf| {
            b.iter(|| {
                let r = rt.block_on(run(
                    wf.clone(),
                    RunInput::default(),
                    host.clone(),
                    client.clone(),
                    RunOptions::default(),
                ));
                assert!(r.success);
                r
            })
        });
    }
    group.finish();
    let mut group = c.benchmark_group("kernel_scheduling_prepared");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(3));
    group.warm_up_time(Duration::from_millis(500));
    for (shape, n, wf) in &shapes {
        let prepared = PreparedWorkflow::new(wf.clone()).unwrap();
        group.throughput(Throughput::Elements(size(wf)));
        group.bench_with_input(BenchmarkId::new(*shape, *n), &prepared, |b, p| {
            b.iter(|| {
                let r = rt.block_on(run_prepared(
                    p,
                    RunInput::default(),
                    host.clone(),
                    client.clone(),
                    RunOptions::default(),
                ));
                assert!(r.success);
                r
            })
        });
    }
    group.finish();
}

/// Run options with a sink that counts every event into `count`.
fn counting(count: &Arc<AtomicU64>) -> RunOptions {
    let count = count.clone();
    let on_event: EventCallback = Arc::new(move |_: &Event| {
        count.fetch_add(1, Ordering::Relaxed);
    });
    RunOptions {
        on_event: Some(on_event),
        ..RunOptions::default()
    }
}

fn bench_with_sink(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let host: Arc<dyn ControlPoint> = Arc::new(Host);
    let client = Arc::new(InMemoryClient::new().recording(false));
    let events = Arc::new(AtomicU64::new(0));
    let shapes = shapes();
    let mut group = c.benchmark_group("kernel_scheduling_sink");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(3));
    group.warm_up_time(Duration::from_millis(500));
    for (shape, n, wf) in &shapes {
        group.throughput(Throughput::Elements(size(wf)));
        group.bench_with_input(BenchmarkId::new(*shape, *n), wf, |b, wf| {
            b.iter(|| {
                let before = events.load(Ordering::Relaxed);
                let r = rt.block_on(run(
                    wf.clone(),
                    RunInput::default(),
                    host.clone(),
                    client.clone(),
                    counting(&events),
                ));
                assert!(r.success);
                assert!(events.load(Ordering::Relaxed) > before);
                r
            })
        });
    }
    group.finish();
    let mut group = c.benchmark_group("kernel_scheduling_prepared_sink");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(3));
    group.warm_up_time(Duration::from_millis(500));
    for (shape, n, wf) in &shapes {
        let prepared = PreparedWorkflow::new(wf.clone()).unwrap();
        group.throughput(Throughput::Elements(size(wf)));
        group.bench_with_input(BenchmarkId::new(*shape, *n), &prepared, |b, p| {
            b.iter(|| {
                let before = events.load(Ordering::Relaxed);
                let r = rt.block_on(run_prepared(
                    p,
                    RunInput::default(),
                    host.clone(),
                    client.clone(),
                    counting(&events),
                ));
                assert!(r.success);
                assert!(events.load(Ordering::Relaxed) > before);
                r
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench, bench_with_sink);
criterion_main!(benches);
