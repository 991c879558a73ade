//! Appends per second to the SQLite run store for a realistic record mix: per logical task one
//! `taskIntent`, one `remoteTaskKnown` and one `taskFinished` (three records).
//!
//! * `sequential/single`: one task at a time, one append (one commit) per record — the floor.
//! * `sequential/batch`: one task at a time, its three records in one `append_batch`.
//! * `concurrent/single`: 64 tasks at once, one append per record, as a wide step drives the
//!   store: the appends that arrive together share a commit (group commit).
//!
//! Throughput is in records. Run: `cargo bench -p a2aflow-store-sqlite --bench append`.

#![allow(clippy::expect_used)] // a bench stops at its first failure

use a2aflow_kernel::RunOptions;
use a2aflow_kernel::journal::{JournalRecord, RunStarted, RunStore, TaskIntent};
use a2aflow_model::{MessageContent, Output, TaskOutcomeStatus, TaskResultView, Workflow};
use a2aflow_store_sqlite::SqliteStore;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CONCURRENCY: u64 = 64;

fn task_records(n: u64) -> [JournalRecord; 3] {
    let local = format!("run:fan:{n}");
    let context = format!("ctx-{n:08}");
    [
        JournalRecord::TaskIntent(TaskIntent {
            step: "fan".into(),
            subtask_index: usize::try_from(n).unwrap_or_default(),
            local_task_id: local.clone(),
            agent: "billing".into(),
            skill: "charge".into(),
            attempt: 1,
            message_id: format!("msg-{n:08}"),
            context_id: context.clone(),
            content: MessageContent::text(format!("charge order {n} for customer 4711, 3 items")),
        }),
        JournalRecord::RemoteTaskKnown {
            local_task_id: local.clone(),
            remote_task_id: format!("task-{n:08}"),
        },
        JournalRecord::TaskFinished {
            local_task_id: local.clone(),
            result: TaskResultView {
                agent_name: "billing".into(),
                skill: "charge".into(),
                task_id: local.into(),
                task_description: "charge the order".into(),
                status: TaskOutcomeStatus::Completed,
                context_id: Some(context),
                remote_task_id: Some(format!("task-{n:08}")),
                outputs: vec![Output::text(format!("charged order {n}: 42.00 EUR"))],
                received_messages: Vec::new(),
                error: None,
                error_code: None,
                error_details: serde_json::Map::new(),
                attempts: 1,
            },
        },
    ]
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime for the bench")
}

async fn store(dir: &std::path::Path, name: &str) -> Arc<SqliteStore> {
    let store = SqliteStore::open(dir.join(format!("{name}.db")))
        .await
        .expect("open the bench store");
    let workflow = Workflow {
        id: "bench".into(),
        name: "bench".into(),
        ..Workflow::default()
    };
    let run =
        RunStarted::new("run", &workflow, None, &RunOptions::default(), 0).expect("a run record");
    store.create_run(run).await.expect("create the bench run");
    Arc::new(store)
}

fn bench(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("a bench directory");
    let mut group = c.benchmark_group("store_append");
    group.throughput(Throughput::Elements(3));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));

    let single = rt.block_on(store(dir.path(), "single"));
    let mut next = 0u64;
    group.bench_function("sequential/single", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    for r in task_records(next) {
                        single.append("run", r).await.expect("append");
                    }
                    next += 1;
                }
                start.elapsed()
            })
        })
    });

    let batch = rt.block_on(store(dir.path(), "batch"));
    group.bench_function("sequential/batch", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    batch
                        .append_batch("run", task_records(next).to_vec())
                        .await
                        .expect("append");
                    next += 1;
                }
                start.elapsed()
            })
        })
    });

    let shared = rt.block_on(store(dir.path(), "concurrent"));
    group.bench_function("concurrent/single", |b| {
        b.iter_custom(|iters| {
            let base = next;
            next += iters;
            rt.block_on(async {
                let start = Instant::now();
                let mut tasks = Vec::new();
                for w in 0..CONCURRENCY {
                    let store = shared.clone();
                    tasks.push(tokio::spawn(async move {
                        let mut n = w;
                        while n < iters {
                            for r in task_records(base + n) {
                                store.append("run", r).await.expect("append");
                            }
                            n += CONCURRENCY;
                        }
                    }));
                }
                for t in tasks {
                    t.await.expect("a bench task");
                }
                start.elapsed()
            })
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
