//! The facade journals a run when a store is configured (or given by the host), and `resume`
//! continues a journaled run with the configured store and `[resume]` policy.

use crate::support::{Host, execute};
use a2aflow::kernel::{RunInput, RunOptions};
use a2aflow::model::{ErrorCode, EventKind, LoadOptions, Workflow, load_workflow_str};
use a2aflow::{
    EngineConfig, HostHooks, RunFilter, RunState, StoreLocation, execute_workflow,
    execute_workflow_stream, fetch_agent_cards, get_execution, list_executions, resume,
};
use a2aflow_testkit::{AgentSpec, Route, TestServer};
use std::path::Path;
use std::sync::Arc;

const WORKFLOW: &str = r#"{"id": "wf", "name": "durable", "steps": [
  {"name": "ask", "subtasks": [{"agent": "alpha", "description": "one"}]}
]}"#;

fn workflow() -> Workflow {
    load_workflow_str(WORKFLOW, LoadOptions::STRICT)
        .unwrap()
        .workflow
}

fn config_with_store(path: &Path) -> EngineConfig {
    EngineConfig {
        store: Some(StoreLocation::parse(path.to_str().unwrap()).unwrap()),
        ..EngineConfig::default()
    }
}

fn sends(server: &TestServer) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| matches!(r.route, Some(Route::Send | Route::Stream)))
        .count()
}

async fn started() -> (TestServer, Vec<a2aflow::model::a2a::AgentCard>) {
    let server = TestServer::single(AgentSpec::new("alpha")).await.unwrap();
    let cards = fetch_agent_cards(&[server.card_url("alpha")], &EngineConfig::default())
        .await
        .unwrap();
    (server, cards)
}

#[tokio::test]
async fn execute_workflow_journals_the_run_in_the_configured_store() {
    let (server, cards) = started().await;
    let dir = tempfile::tempdir().unwrap();
    let config = config_with_store(&dir.path().join("runs.db"));
    let result = execute(workflow(), &cards, &config).await.unwrap();
    assert!(result.success, "{:#?}", result.failure);
    let store = config.open_store().await.unwrap().unwrap();
    let runs = list_executions(&*store, RunFilter::default())
        .await
        .unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].execution_id, result.execution_id);
    let view = get_execution(&*store, &result.execution_id).await.unwrap();
    assert_eq!(view.state, RunState::Succeeded);
    assert_eq!(view.tasks.len(), 1);
    assert!(view.tasks[0].remote_task_id.is_some(), "{view:?}");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_store_that_cannot_be_opened_is_an_error_before_anything_is_sent() {
    let (server, cards) = started().await;
    let config = config_with_store(Path::new("/nonexistent-a2aflow-dir/x/runs.db"));
    let err = execute(workflow(), &cards, &config).await.unwrap_err();
    assert!(err.is(ErrorCode::StoreUnavailable), "{err}");
    assert_eq!(sends(&server), 0);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_stream_journals_too_and_its_start_event_names_the_execution() {
    let (server, cards) = started().await;
    let dir = tempfile::tempdir().unwrap();
    let config = config_with_store(&dir.path().join("runs.db"));
    let mut stream = execute_workflow_stream(
        workflow(),
        &cards,
        Arc::new(Host),
        &config,
        RunInput::default(),
        HostHooks::default(),
    )
    .unwrap();
    let first = stream.next().await.unwrap();
    assert_eq!(first.kind, EventKind::Start);
    let id = first.execution_id.clone();
    let result = stream.result().await;
    assert!(result.success, "{:#?}", result.failure);
    assert_eq!(result.execution_id, id);
    let store = config.open_store().await.unwrap().unwrap();
    let view = get_execution(&*store, &id).await.unwrap();
    assert_eq!(view.state, RunState::Succeeded);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_stream_with_a_store_that_cannot_be_opened_fails_the_run_before_any_send() {
    let (server, cards) = started().await;
    let config = config_with_store(Path::new("/nonexistent-a2aflow-dir/x/runs.db"));
    let stream = execute_workflow_stream(
        workflow(),
        &cards,
        Arc::new(Host),
        &config,
        RunInput::default(),
        HostHooks::default(),
    )
    .unwrap();
    let result = stream.result().await;
    let failure = result.failure.expect("the run fails");
    assert!(failure.is(ErrorCode::StoreUnavailable), "{failure}");
    assert_eq!(sends(&server), 0);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_host_chooses_the_execution_id_and_a_host_store_wins() {
    let (server, cards) = started().await;
    let dir = tempfile::tempdir().unwrap();
    let host_path = dir.path().join("host.db");
    let host_store = StoreLocation::parse(host_path.to_str().unwrap())
        .unwrap()
        .open()
        .await
        .unwrap();
    let config = config_with_store(&dir.path().join("configured.db"));
    let hooks = HostHooks {
        run_options: RunOptions {
            execution_id: Some("chosen-1".into()),
            store: Some(Arc::clone(&host_store)),
            ..RunOptions::default()
        },
        ..HostHooks::default()
    };
    let result = execute_workflow(
        workflow(),
        &cards,
        Arc::new(Host),
        &config,
        RunInput::default(),
        hooks,
    )
    .await
    .unwrap();
    assert_eq!(result.execution_id, "chosen-1");
    let view = get_execution(&*host_store, "chosen-1").await.unwrap();
    assert_eq!(view.state, RunState::Succeeded);
    assert!(!dir.path().join("configured.db").exists());
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn resume_of_a_finished_run_returns_its_journaled_result_and_sends_nothing() {
    let (server, cards) = started().await;
    let dir = tempfile::tempdir().unwrap();
    let config = config_with_store(&dir.path().join("runs.db"));
    let first = execute(workflow(), &cards, &config).await.unwrap();
    let sent = sends(&server);
    let again = resume(
        &first.execution_id,
        &cards,
        Arc::new(Host),
        &config,
        HostHooks::default(),
    )
    .await
    .unwrap();
    assert_eq!(again, first);
    assert_eq!(sends(&server), sent);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn resume_errors_are_typed_and_create_nothing() {
    let (server, cards) = started().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let config = config_with_store(&path);
    let resumed = |config: EngineConfig| {
        let cards = cards.clone();
        async move {
            resume(
                "no-such-run",
                &cards,
                Arc::new(Host),
                &config,
                HostHooks::default(),
            )
            .await
            .unwrap_err()
        }
    };
    let missing = resumed(config.clone()).await;
    assert!(missing.is(ErrorCode::StoreUnavailable), "{missing}");
    assert!(!path.exists(), "a resume creates no store");
    let none = resumed(EngineConfig::default()).await;
    assert!(none.is(ErrorCode::ConfigInvalid), "{none}");
    config.open_store().await.unwrap();
    let unknown = resumed(config).await;
    assert!(unknown.is(ErrorCode::StoreUnknownExecution), "{unknown}");
    assert_eq!(sends(&server), 0);
    server.shutdown().await.unwrap();
}

#[test]
fn the_resume_section_and_the_lease_length_load_from_toml() {
    let config = EngineConfig::from_toml_str(
        "store_lease_secs = 2.5\n[resume]\nresend = true\nper_agent = { billing = false }\n",
    )
    .unwrap();
    let policy = config.resume.policy();
    assert!(policy.resend_for("alpha"));
    assert!(!policy.resend_for("billing"));
    assert_eq!(
        config.store_options().unwrap().lease_ttl,
        std::time::Duration::from_millis(2500)
    );
    assert!(!EngineConfig::default().resume.policy().resend_for("alpha"));
    for bad in ["store_lease_secs = 0", "[resume]\nresnd = true"] {
        let err = EngineConfig::from_toml_str(bad).unwrap_err();
        assert!(err.is(ErrorCode::ConfigInvalid), "{bad}: {err}");
    }
}

#[tokio::test]
async fn resume_refuses_a_run_whose_agents_were_not_given_before_anything_is_sent() {
    let (server, cards) = started().await;
    let dir = tempfile::tempdir().unwrap();
    let config = config_with_store(&dir.path().join("runs.db"));
    let store = config.open_store().await.unwrap().unwrap();
    let run = a2aflow::kernel::journal::RunStarted::new(
        "unfinished",
        &workflow(),
        None,
        &RunOptions::default(),
        1_700_000_000_000,
    )
    .unwrap();
    store.create_run(run).await.unwrap();
    let none: &[a2aflow::model::a2a::AgentCard] = &[];
    let err = resume(
        "unfinished",
        none,
        Arc::new(Host),
        &config,
        HostHooks::default(),
    )
    .await
    .unwrap_err();
    assert!(err.is(ErrorCode::WorkflowUnknownAgent), "{err}");
    assert!(err.message.contains("alpha"), "{}", err.message);
    assert_eq!(sends(&server), 0);
    let _ = cards;
    server.shutdown().await.unwrap();
}
