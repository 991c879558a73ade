//! Cost of delegation: 16 subtasks sent straight to an in-memory agent versus the same 16 agent
//! calls each made by a child workflow (one delegation each: catalog, admission, records, child
//! run). `single` is one run of the child workflow alone (one agent call), for the fixed cost of
//! a run. Events are off. Run with `cargo bench -p a2aflow-kernel --bench delegation`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use a2aflow_kernel::{
    CallbackError, ControlPoint, InMemoryClient, RunInput, RunOptions, StaticCatalog, run,
};
use a2aflow_model::{MessageContent, Step, Subtask, TaskRequest, Workflow};
use async_trait::async_trait;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::sync::Arc;

const N: usize = 16;

struct Host;

#[async_trait]
impl ControlPoint for Host {
    async fn on_task(&self, r: TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(MessageContent::text(r.description))
    }
}

fn one_step(id: &str, subtasks: Vec<Subtask>) -> Arc<Workflow> {
    Arc::new(Workflow {
        id: id.into(),
        name: id.into(),
        steps: vec![Step {
            name: "s".into(),
            subtasks,
            ..Default::default()
        }],
        ..Default::default()
    })
}

fn agent(i: usize) -> Subtask {
    Subtask {
        agent: "agent".into(),
        description: format!("task {i}"),
        ..Default::default()
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let client = Arc::new(InMemoryClient::new().recording(false));
    let direct = one_step("direct", (0..N).map(agent).collect());
    let child = one_step("child", vec![agent(0)]);
    let delegating = one_step(
        "root",
        (0..N)
            .map(|i| Subtask {
                workflow: Some("child".into()),
                description: format!("task {i}"),
                ..Default::default()
            })
            .collect(),
    );
    let catalog = Arc::new(StaticCatalog::new().with(child.clone()));
    let mut group = c.benchmark_group("delegation");
    for (name, wf, elements) in [
        ("single", child.clone(), 1),
        ("direct", direct, N),
        ("delegated", delegating, N),
    ] {
        group.throughput(Throughput::Elements(elements as u64));
        group.bench_function(name, |b| {
            b.iter(|| {
                let options = RunOptions {
                    workflow_catalog: Some(catalog.clone()),
                    ..RunOptions::default()
                };
                let r = rt.block_on(run(
                    wf.clone(),
                    RunInput::default(),
                    Arc::new(Host),
                    client.clone(),
                    options,
                ));
                assert!(r.success, "{:?}", r.failure);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
