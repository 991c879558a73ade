//! The a2aflow side: this bench binary re-run as a child process (role `server`) serving one
//! workflow, `echo`, whose one SELF_LOOP step the host answers itself (no remote agent): the
//! cost measured is the server's and the engine's.
//!
//! The step answers `{"echo": <text>}`. A text `hold K` waits until the parent has written K
//! lines to stdin (each line one release), as the Python echo agent does, so that streams can be
//! held open to measure memory per open stream. The process ends when stdin closes.

use a2aflow::kernel::{CallbackError, ControlPoint};
use a2aflow::model::{LoadOptions, Output, TaskRequest, TaskResult, Workflow, load_workflow_str};
use a2aflow_server::{Limits, Server};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::watch;

/// The served workflow's name (its agent is under `/agents/echo/`).
pub const WORKFLOW: &str = "echo";
/// How long a held step may wait for its release before it fails (a guard against a hang).
const HOLD_LIMIT: Duration = Duration::from_secs(600);
/// How long a shutdown may take.
const STOP_LIMIT: Duration = Duration::from_secs(30);

/// The host: echoes the run's input; `hold K` first waits for the K-th release.
struct EchoHost {
    releases: watch::Receiver<u64>,
}

#[async_trait::async_trait]
impl ControlPoint for EchoHost {
    async fn on_self_task(&self, request: TaskRequest) -> Result<TaskResult, CallbackError> {
        let text = request
            .workflow_input
            .runtime_intent
            .clone()
            .unwrap_or_default();
        if let Some(k) = hold_count(&text) {
            let mut releases = self.releases.clone();
            tokio::time::timeout(HOLD_LIMIT, releases.wait_for(|&n| n >= k))
                .await
                .map_err(|_| CallbackError::Other("the hold was never released".into()))?
                .map_err(|_| CallbackError::Other("the bench went away".into()))?;
        }
        Ok(TaskResult {
            outputs: vec![Output::data(json!({ "echo": text }))],
        })
    }
}

/// `hold K` → K.
fn hold_count(text: &str) -> Option<u64> {
    let mut words = text.split_whitespace();
    match (words.next(), words.next(), words.next()) {
        (Some("hold"), Some(k), None) => k.parse().ok(),
        _ => None,
    }
}

fn workflow() -> Workflow {
    let text = json!({
        "id": "echo",
        "name": WORKFLOW,
        "description": "Echoes its input.",
        "steps": [{ "name": "answer", "type": "SELF_LOOP", "subtasks": [{ "description": "echo" }] }]
    })
    .to_string();
    load_workflow_str(&text, LoadOptions::default())
        .expect("the bench workflow loads")
        .workflow
}

/// The limits for `clients` concurrent streaming clients: runs in flight (in all and per
/// caller: every client is the one anonymous caller of an open server) raised from the default
/// 64 to twice the clients, so that a run still finishing after its stream ended never refuses
/// the client's next request, or to the streams held at the memory figure's last step if more
/// (`A2AFLOW_SLOAD_HOLD_STEPS` × the clients); the finished tasks kept in memory from `A2AFLOW_SLOAD_KEPT` when
/// set. Everything else is the default.
pub fn limits(clients: usize) -> Limits {
    let mut limits = Limits::default();
    limits.runs_in_flight = (crate::hold_steps().max(2) * clients).max(limits.runs_in_flight);
    limits.runs_per_caller = limits.runs_in_flight;
    limits.finished_tasks_kept = crate::env_number(KEPT_ENV, limits.finished_tasks_kept);
    limits
}

/// The finished tasks the a2aflow server keeps in memory (default: the server's default).
pub const KEPT_ENV: &str = "A2AFLOW_SLOAD_KEPT";

/// Child side: serves `echo` until stdin closes; prints `ready PORT` once listening.
pub fn serve(clients: usize) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let (release_tx, release_rx) = watch::channel(0u64);
        let server = Server::builder()
            .workflow(workflow())
            .control_point(Arc::new(EchoHost {
                releases: release_rx,
            }))
            .limits(limits(clients))
            .start()
            .await
            .expect("the a2aflow server starts");
        println!("ready {}", server.local_addr().port());
        let mut lines = BufReader::new(tokio::io::stdin()).lines();
        while let Ok(Some(_)) = lines.next_line().await {
            release_tx.send_modify(|n| *n += 1);
        }
        let _ = tokio::time::timeout(STOP_LIMIT, server.shutdown()).await;
    });
    rt.shutdown_background();
}

/// The hold parser reads `hold K` and nothing else (run before the bench).
pub fn self_check() {
    assert_eq!(hold_count("hold 3"), Some(3));
    assert_eq!(hold_count("hold"), None);
    assert_eq!(hold_count("hold 3 more"), None);
    assert_eq!(hold_count("echo 3"), None);
}
