//! A running driver watches its journal through its lease renewal: a run-level cancel journaled
//! by another store handle stops it, and a lease taken away stops it too.

use a2aflow::kernel::journal::RunStore;
use a2aflow::kernel::{CallbackError, ControlPoint, RunInput};
use a2aflow::model::a2a::AgentCard;
use a2aflow::model::{
    ErrorCode, ExecutionResult, LoadOptions, MessageContent, TaskRequest, TaskResult, Workflow,
    load_workflow_str,
};
use a2aflow::{
    CancelRequest, EngineConfig, HostHooks, RunFilter, StoreLocation, execute_workflow,
    fetch_agent_cards, list_executions, request_cancel,
};
use a2aflow_testkit::{AgentSpec, Route, TestServer};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Hang guard: far longer than a lease renewal (a tenth of a second here).
const GUARD: Duration = Duration::from_secs(30);

const WORKFLOW: &str = r#"{"id": "wf", "name": "watched", "steps": [
  {"name": "wait", "subtasks": [{"agent": "alpha", "description": "one"}]}
]}"#;

/// Sends `hang`: the testkit's agent stays WORKING until it is cancelled.
struct Hanging;

#[async_trait::async_trait]
impl ControlPoint for Hanging {
    async fn on_task(&self, _request: TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(MessageContent::text("hang"))
    }
    async fn on_self_task(&self, _request: TaskRequest) -> Result<TaskResult, CallbackError> {
        Ok(TaskResult::default())
    }
}

fn workflow() -> Workflow {
    load_workflow_str(WORKFLOW, LoadOptions::STRICT)
        .unwrap()
        .workflow
}

fn config(path: &Path) -> EngineConfig {
    EngineConfig {
        store: Some(StoreLocation::parse(path.to_str().unwrap()).unwrap()),
        store_lease_secs: 0.3,
        ..EngineConfig::default()
    }
}

fn count(server: &TestServer, route: Route) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.route == Some(route))
        .count()
}

/// The run started in the background on the store at `path`, once its message reached the
/// agent; the store opened a second time (as another process would) and the run's id.
async fn hanging_run(
    server: &TestServer,
    cards: Vec<AgentCard>,
    path: &Path,
) -> (
    tokio::task::JoinHandle<ExecutionResult>,
    Arc<dyn RunStore>,
    String,
) {
    let config = config(path);
    let run = tokio::spawn(async move {
        execute_workflow(
            workflow(),
            &cards,
            Arc::new(Hanging),
            &config,
            RunInput::default(),
            HostHooks::default(),
        )
        .await
        .unwrap()
    });
    tokio::time::timeout(GUARD, async {
        while count(server, Route::Send) + count(server, Route::Stream) == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap();
    let other = StoreLocation::parse(path.to_str().unwrap())
        .unwrap()
        .open_existing()
        .await
        .unwrap();
    let runs = list_executions(&*other, RunFilter::default())
        .await
        .unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let id = runs[0].execution_id.clone();
    (run, other, id)
}

async fn started() -> (TestServer, Vec<AgentCard>) {
    let server = TestServer::single(AgentSpec::new("alpha")).await.unwrap();
    let cards = fetch_agent_cards(&[server.card_url("alpha")], &EngineConfig::default())
        .await
        .unwrap();
    (server, cards)
}

#[tokio::test]
async fn a_cancel_journaled_by_another_handle_stops_the_running_driver() {
    let (server, cards) = started().await;
    let dir = tempfile::tempdir().unwrap();
    let (run, other, id) = hanging_run(&server, cards, &dir.path().join("runs.db")).await;
    assert_eq!(
        request_cancel(&*other, &id).await.unwrap(),
        CancelRequest::Requested
    );
    let result = tokio::time::timeout(GUARD, run).await.unwrap().unwrap();
    let failure = result.failure.as_ref().expect("the run was cancelled");
    assert!(failure.is(ErrorCode::WorkflowCancelled), "{failure:?}");
    assert_eq!(count(&server, Route::Cancel), 1, "{:?}", server.requests());
    let journal = other.load(&id).await.unwrap();
    let finished = journal.finished().expect("the driver journaled its end");
    assert!(!finished.success);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_driver_whose_lease_was_taken_over_stops_driving() {
    let (server, cards) = started().await;
    let dir = tempfile::tempdir().unwrap();
    let (run, other, id) = hanging_run(&server, cards, &dir.path().join("runs.db")).await;
    let held = other
        .lease(&id)
        .await
        .unwrap()
        .expect("the driver holds a lease");
    other.release(held).await.unwrap();
    let thief = other.acquire(&id, "thief").await.unwrap();
    let result = tokio::time::timeout(GUARD, run).await.unwrap().unwrap();
    let failure = result.failure.as_ref().expect("the driver stopped");
    assert!(failure.is(ErrorCode::StoreLeaseLost), "{failure:?}");
    // The run is the thief's now: the stopped driver journaled no end for it.
    assert!(other.load(&id).await.unwrap().finished().is_none());
    assert_eq!(other.lease(&id).await.unwrap(), Some(thief));
    server.shutdown().await.unwrap();
}
