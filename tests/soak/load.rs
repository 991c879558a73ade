//! Section `load`: `A2AFLOW_LOAD_TASKS` (default 500) remote tasks in flight at once against a slow agent, and
//! the resident memory each costs the engine.
//!
//! One workflow step with N subtasks, each `slow 600` on the non-streaming agent (in the server
//! child process). Sends return at once and tasks are polled (every 20 s), so a waiting task
//! holds no socket. The host ramps the sends: subtask `i` is released once all but
//! [`WINDOW`] of the earlier ones are acknowledged, so the connection pool stays small. When
//! every task is acknowledged (all N in flight), RSS is read; the figure is
//! `(RSS in flight − RSS before the run) / N`. Then the run is cancelled and must end
//! `workflow.cancelled`. The ≤ 10 KiB per task target is asserted from 1,000 tasks on (the
//! default only reports: the figure is close to the target, see docs/reliability.md).
//!
//! Section `load-store` is the same run journaled in a SQLite run store (a fresh file in a
//! temporary directory, opened before the baseline, so the figure includes what the store and
//! the journal hold per in-flight task), with the same target from the same size on. Its
//! figures are the `load_store.*` lines.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use a2aflow::EngineConfig;
use a2aflow::kernel::journal::RunStore;
use a2aflow::kernel::{self, CallbackError, ControlPoint, RunInput, RunOptions};
use a2aflow::model::{
    EventKind, LoadOptions, MessageContent, TaskRequest, TaskResult, Workflow, load_workflow_str,
};
use a2aflow::store_sqlite::SqliteStore;
use tokio::sync::watch;

use crate::host::shared_client;
use crate::memory::{mib, peak_kib, rss_kib};
use crate::server::{POLLER, ServerProcess};

/// Sends not yet acknowledged at most.
const WINDOW: usize = 64;
/// The per-task target, bytes.
const TARGET: u64 = 10 * 1024;
/// How long all tasks may take to be in flight.
const RAMP_LIMIT: Duration = Duration::from_secs(600);

/// Releases subtask `i` (its description ends in `#i`) once `i - WINDOW` tasks are acknowledged.
struct RampHost {
    acked: watch::Receiver<usize>,
}

#[async_trait::async_trait]
impl ControlPoint for RampHost {
    async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
        let i: usize = request
            .description
            .rsplit('#')
            .next()
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| CallbackError::Other("no #index in the description".into()))?;
        let mut acked = self.acked.clone();
        tokio::time::timeout(RAMP_LIMIT, acked.wait_for(|&n| n + WINDOW > i))
            .await
            .map_err(|_| CallbackError::Other("ramp stalled".into()))?
            .map_err(|_| CallbackError::Other("ramp ended".into()))?;
        Ok(MessageContent::text(request.description))
    }

    async fn on_self_task(&self, _request: TaskRequest) -> Result<TaskResult, CallbackError> {
        Err(CallbackError::Other("no SELF_LOOP steps here".into()))
    }
}

fn wide(tasks: usize, word: &str) -> Workflow {
    let subtasks: Vec<String> = (0..tasks)
        .map(|i| format!(r#"{{"agent": "{POLLER}", "description": "{word} #{i}"}}"#))
        .collect();
    let doc = format!(
        r#"{{"id": "load", "steps": [{{"name": "wide", "subtasks": [{}]}}]}}"#,
        subtasks.join(", ")
    );
    load_workflow_str(&doc, LoadOptions::STRICT)
        .expect("the load workflow is valid")
        .workflow
}

/// Where the section's runs are journaled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Journal {
    /// Nowhere (section `load`).
    None,
    /// In a SQLite run store (section `load-store`).
    Sqlite,
}

impl Journal {
    /// The prefix of the section's `BENCH` names.
    fn prefix(self) -> &'static str {
        match self {
            Journal::None => "load",
            Journal::Sqlite => "load_store",
        }
    }
}

/// A fresh SQLite store in a temporary directory (kept as long as the directory is).
async fn sqlite_store() -> (tempfile::TempDir, Arc<dyn RunStore>) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("runs.db")).await.unwrap();
    (dir, Arc::new(store))
}

/// The section's entry point (a child process).
pub fn run(journal: Journal) {
    let tasks = crate::env_count("A2AFLOW_LOAD_TASKS", 500);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let server = ServerProcess::start().await;
        let mut config = EngineConfig::default();
        config.timeouts.run_secs = 1200.0;
        config.poll_interval_ms = 20_000;
        let client = shared_client(&[server.card_url(POLLER)], &config).await;
        let (store_dir, store) = match journal {
            Journal::None => (None, None),
            Journal::Sqlite => {
                let (dir, store) = sqlite_store().await;
                (Some(dir), Some(store))
            }
        };

        // Warm-up: quick tasks through the same ramp (and the same store), so the pool, the
        // allocator and the store are warm.
        let (warm_tx, warm_rx) = watch::channel(usize::MAX / 2);
        let warm = kernel::run(
            wide(WINDOW * 2, "task"),
            RunInput::default(),
            Arc::new(RampHost { acked: warm_rx }),
            client.clone(),
            RunOptions {
                store: store.clone(),
                ..RunOptions::default()
            },
        )
        .await;
        assert!(warm.success, "warm-up failed: {:?}", warm.failure);
        drop((warm, warm_tx));

        let workflow = wide(tasks, "slow 600");
        let (acked_tx, acked_rx) = watch::channel(0usize);
        let acked_tx = Arc::new(acked_tx);
        // Which subtasks are acknowledged, by index (the local task id ends in `:i`); allocated
        // before the baseline so the test's own bookkeeping is not counted.
        let seen = Arc::new(Mutex::new((vec![false; tasks], 0usize)));
        let baseline = rss_kib();
        let options = RunOptions {
            timeout: config.run_timeout().unwrap(),
            store,
            on_event: {
                let acked_tx = Arc::clone(&acked_tx);
                let seen = Arc::clone(&seen);
                Some(Arc::new(move |event| {
                    if event.kind == EventKind::AgentStatusUpdate
                        && let Some(i) = event
                            .task_id
                            .as_deref()
                            .and_then(|t| t.rsplit(':').next())
                            .and_then(|i| i.parse::<usize>().ok())
                    {
                        let mut seen = seen.lock().unwrap();
                        let (flags, count) = &mut *seen;
                        if let Some(flag) = flags.get_mut(i)
                            && !*flag
                        {
                            *flag = true;
                            *count += 1;
                            acked_tx.send_replace(*count);
                        }
                    }
                }))
            },
            ..RunOptions::default()
        };
        let cancel = options.cancel.clone();
        let started = Instant::now();
        let handle = tokio::spawn(kernel::run(
            workflow,
            RunInput::default(),
            Arc::new(RampHost {
                acked: acked_rx.clone(),
            }),
            client.clone(),
            options,
        ));
        let mut watching = acked_rx;
        tokio::time::timeout(RAMP_LIMIT, watching.wait_for(|&n| n >= tasks))
            .await
            .expect("not every task was in flight in time")
            .unwrap();
        let ramp = started.elapsed().as_secs_f64();
        // jemalloc purges freed pages within about a second (the ramp's garbage): the lowest
        // reading over a short window, with every task still in flight, is what they hold.
        let mut in_flight = rss_kib();
        crate::wait_until(Duration::from_secs(3), || {
            in_flight = in_flight.min(rss_kib());
            false
        })
        .await;
        cancel.cancel();
        let result = tokio::time::timeout(Duration::from_secs(120), handle)
            .await
            .expect("the cancelled run did not end")
            .unwrap();
        let code = result.failure.as_ref().map(|f| f.code.clone());
        let per_task = (in_flight.saturating_sub(baseline) * 1024) / tasks as u64;
        let prefix = journal.prefix();
        println!(
            "{prefix}: {tasks} remote tasks in flight after {ramp:.1} s (window {WINDOW}); RSS before \
             {:.1} MiB, in flight {:.1} MiB, peak {:.1} MiB: {per_task} bytes per in-flight task; \
             cancelled run ended {code:?}",
            mib(baseline),
            mib(in_flight),
            mib(peak_kib())
        );
        crate::bench(&format!("{prefix}.tasks_in_flight"), tasks as f64, "tasks");
        crate::bench(&format!("{prefix}.rss_per_task"), per_task as f64, "bytes");
        crate::bench(
            &format!("{prefix}.ramp_tasks_per_s"),
            tasks as f64 / ramp,
            "tasks/s",
        );
        drop(result);
        drop(client);
        drop(store_dir);
        server.stop().await;
        assert_eq!(
            code.as_ref().map(|c| c.as_str()),
            Some("workflow.cancelled")
        );
        if tasks >= 1000 {
            assert!(
                per_task <= TARGET,
                "{per_task} bytes per in-flight task, above the {TARGET}-byte target"
            );
        }
    });
}
