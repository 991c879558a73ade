//! The facade's run queries against the embedded SQLite store, with runs written through the
//! public `RunStore` API to stand for runs in each state.

use a2aflow::kernel::RunOptions;
use a2aflow::kernel::journal::{JournalRecord, RunStarted, TaskIntent};
use a2aflow::model::{
    ErrorCode, Event, EventKind, ExecutionResult, Failure, MessageContent, Workflow,
};
use a2aflow::store_sqlite::SqliteStore;
use a2aflow::{
    CancelRequest, EngineConfig, RunFilter, RunState, RunStore, StoreLocation, execution_events,
    get_execution, list_executions, request_cancel,
};
use serde_json::json;
use std::path::Path;

fn workflow(name: &str) -> Workflow {
    serde_json::from_value(json!({
        "id": format!("wf-{name}"), "name": name,
        "steps": [{"name": "charge", "stepType": "ALL_SUCCESS",
                   "subtasks": [{"agent": "billing", "skill": "charge", "description": "charge"}]}]
    }))
    .unwrap()
}

fn finished(id: &str, failure: Option<Failure>) -> JournalRecord {
    JournalRecord::RunFinished {
        result: ExecutionResult {
            execution_id: id.into(),
            workflow_id: "wf".into(),
            success: failure.is_none(),
            failure,
            steps: Vec::new(),
            skipped_steps: Vec::new(),
        },
    }
}

fn event(id: &str, seq: u64, kind: EventKind) -> Event {
    Event {
        seq,
        kind,
        time: None,
        execution_id: id.into(),
        depth: 0,
        step: None,
        task_id: None,
        data: json!({"n": seq}).into(),
    }
}

/// Starts run `id` of workflow `name` at `at_ms` with one task sent.
async fn start(store: &dyn RunStore, id: &str, name: &str, at_ms: u64) {
    let started =
        RunStarted::new(id, &workflow(name), None, &RunOptions::default(), at_ms).unwrap();
    store.create_run(started).await.unwrap();
    store
        .append(
            id,
            JournalRecord::TaskIntent(TaskIntent {
                step: "charge".into(),
                subtask_index: 0,
                local_task_id: format!("{id}:charge:0"),
                agent: "billing".into(),
                skill: "charge".into(),
                attempt: 1,
                message_id: format!("m-{id}"),
                context_id: format!("ctx-{id}"),
                content: MessageContent::text("charge"),
            }),
        )
        .await
        .unwrap();
}

/// A store holding one run in each state: `ok` (succeeded, oldest), `bad` (failed), `stop`
/// (cancelled), `idle` (waiting: nobody drives it) and `live` (running: a lease is held, newest).
async fn store_of_every_state(path: &Path) -> SqliteStore {
    let store = SqliteStore::open(path).await.unwrap();
    for (i, id) in ["ok", "bad", "stop", "idle", "live"].iter().enumerate() {
        start(&store, id, &format!("flow-{id}"), 1_000 + i as u64).await;
    }
    let failed = Failure::new(ErrorCode::WorkflowStepFailed, "charge failed");
    let cancelled = Failure::new(ErrorCode::WorkflowCancelled, "cancelled");
    for (id, failure) in [
        ("ok", None),
        ("bad", Some(failed)),
        ("stop", Some(cancelled)),
    ] {
        store.append(id, finished(id, failure)).await.unwrap();
    }
    store.acquire("live", "host-1").await.unwrap();
    store
        .record_events(
            "ok",
            vec![
                event("ok", 0, EventKind::Start),
                event("ok", 1, EventKind::WorkflowComplete),
                event("ok", 2, EventKind::Close),
            ],
        )
        .await
        .unwrap();
    store
}

/// [`store_of_every_state`] in a new temporary directory (kept while the store is used).
async fn every_state_in_a_temporary_store() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = store_of_every_state(&dir.path().join("runs.db")).await;
    (dir, store)
}

/// How opening `location` as an existing store fails.
async fn open_existing_error(location: &str) -> Failure {
    StoreLocation::parse(location)
        .unwrap()
        .open_existing()
        .await
        .err()
        .unwrap()
}

#[tokio::test]
async fn listings_are_newest_first_and_filter_by_state() {
    let (_dir, store) = every_state_in_a_temporary_store().await;
    let all = list_executions(&store, RunFilter::default()).await.unwrap();
    let ids: Vec<_> = all.iter().map(|r| r.execution_id.as_str()).collect();
    assert_eq!(ids, ["live", "idle", "stop", "bad", "ok"]);
    let states: Vec<_> = all.iter().map(|r| r.state).collect();
    assert_eq!(
        states,
        [
            RunState::Running,
            RunState::Waiting,
            RunState::Cancelled,
            RunState::Failed,
            RunState::Succeeded
        ]
    );
    assert_eq!(all[4].workflow_name, "flow-ok");
    let failed = list_executions(
        &store,
        RunFilter {
            state: Some(RunState::Failed),
            ..RunFilter::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].execution_id, "bad");
}

#[tokio::test]
async fn get_execution_tells_each_state_and_the_task_ids() {
    let (_dir, store) = every_state_in_a_temporary_store().await;
    for (id, state) in [
        ("ok", RunState::Succeeded),
        ("bad", RunState::Failed),
        ("stop", RunState::Cancelled),
        ("idle", RunState::Waiting),
        ("live", RunState::Running),
    ] {
        let view = get_execution(&store, id).await.unwrap();
        assert_eq!(view.state, state, "{id}");
        assert_eq!(view.workflow_name, format!("flow-{id}"));
        assert_eq!(view.tasks[0].local_task_id, format!("{id}:charge:0"));
        assert_eq!(
            view.tasks[0].context_id.as_deref(),
            Some(format!("ctx-{id}").as_str())
        );
    }
    let bad = get_execution(&store, "bad").await.unwrap();
    assert_eq!(
        bad.failure.map(|f| f.code.to_string()).as_deref(),
        Some("workflow.step_failed")
    );
    let unknown = get_execution(&store, "nope").await.unwrap_err();
    assert!(unknown.is(ErrorCode::StoreUnknownExecution), "{unknown}");
}

#[tokio::test]
async fn events_are_replayed_after_a_sequence_number() {
    let (_dir, store) = every_state_in_a_temporary_store().await;
    let all = execution_events(&store, "ok", None, 100).await.unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!(all[2].kind, EventKind::Close);
    let later = execution_events(&store, "ok", Some(0), 1).await.unwrap();
    assert_eq!(later.len(), 1);
    assert_eq!(later[0].seq, 1);
    assert!(
        execution_events(&store, "idle", None, 100)
            .await
            .unwrap()
            .is_empty()
    );
    let unknown = execution_events(&store, "nope", None, 10)
        .await
        .unwrap_err();
    assert!(unknown.is(ErrorCode::StoreUnknownExecution), "{unknown}");
}

#[tokio::test]
async fn a_cancel_request_is_journaled_once_and_refused_for_a_finished_run() {
    let (_dir, store) = every_state_in_a_temporary_store().await;
    assert_eq!(
        request_cancel(&store, "idle").await.unwrap(),
        CancelRequest::Requested
    );
    let journal = store.load("idle").await.unwrap();
    assert_eq!(
        journal.entries.last().map(|e| e.record.clone()),
        Some(JournalRecord::CancelRequested {
            local_task_id: None,
            remote_task_id: None
        })
    );
    assert!(
        get_execution(&store, "idle")
            .await
            .unwrap()
            .cancel_requested
    );
    assert_eq!(
        request_cancel(&store, "idle").await.unwrap(),
        CancelRequest::AlreadyRequested
    );
    assert_eq!(store.load("idle").await.unwrap(), journal);
    // A run a driver holds takes the request too: the driver acts on it.
    assert_eq!(
        request_cancel(&store, "live").await.unwrap(),
        CancelRequest::Requested
    );
    let before = store.load("ok").await.unwrap();
    let refused = request_cancel(&store, "ok").await.unwrap_err();
    assert!(refused.is(ErrorCode::StoreInvalidAppend), "{refused}");
    assert!(refused.message.contains("already finished (succeeded)"));
    assert_eq!(store.load("ok").await.unwrap(), before);
    let unknown = request_cancel(&store, "nope").await.unwrap_err();
    assert!(unknown.is(ErrorCode::StoreUnknownExecution), "{unknown}");
}

#[tokio::test]
async fn an_existing_store_is_required_for_inspection_and_bad_files_stay_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.db");
    let f = open_existing_error(missing.to_str().unwrap()).await;
    assert!(f.is(ErrorCode::StoreUnavailable), "{f}");
    assert!(f.message.contains("nothing was created"), "{}", f.message);
    assert!(!missing.exists());
    let other = dir.path().join("notes.txt");
    std::fs::write(&other, b"not a store at all").unwrap();
    let f = open_existing_error(&format!("sqlite:{}", other.display())).await;
    assert!(f.is(ErrorCode::StoreNotAStore), "{f}");
    assert_eq!(std::fs::read(&other).unwrap(), b"not a store at all");
    let f = open_existing_error("/nonexistent-a2aflow-dir/runs.db").await;
    assert!(f.is(ErrorCode::StoreUnavailable), "{f}");
}

#[tokio::test]
async fn a_configured_store_is_the_one_the_queries_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    store_of_every_state(&path).await.close().await;
    let config =
        EngineConfig::from_toml_str(&format!("store = \"sqlite:{}\"", path.display())).unwrap();
    let store = config.open_store().await.unwrap().unwrap();
    let runs = list_executions(&*store, RunFilter::default())
        .await
        .unwrap();
    assert_eq!(runs.len(), 5);
}
