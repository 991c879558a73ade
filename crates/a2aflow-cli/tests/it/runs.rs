//! `a2aflow runs list|show|events|cancel`: the real binary against SQLite stores written
//! through the public `RunStore` API, one run in each state, and against files that are not
//! usable stores (each refused with its code, exit 2, the file's bytes unchanged).

use crate::support::{assert_exit, assert_fails_with, stderr, stdout, stdout_json, wait_guarded};
use a2aflow::RunStore;
use a2aflow::kernel::RunOptions;
use a2aflow::kernel::journal::{JournalRecord, RunStarted, TaskIntent};
use a2aflow::model::{
    ErrorCode, Event, EventKind, ExecutionResult, Failure, MessageContent, Workflow,
};
use a2aflow::store_sqlite::SqliteStore;
use serde_json::{Value, json};
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

fn a2aflow(args: &[&str]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_a2aflow"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_guarded(child)
}

fn workflow(name: &str) -> Workflow {
    serde_json::from_value(json!({
        "id": "wf-1", "name": name,
        "steps": [{"name": "charge", "stepType": "ALL_SUCCESS",
                   "subtasks": [{"agent": "billing", "skill": "charge", "description": "charge"}]}]
    }))
    .unwrap()
}

fn finished(id: &str, failure: Option<Failure>) -> JournalRecord {
    JournalRecord::RunFinished {
        result: ExecutionResult {
            execution_id: id.into(),
            workflow_id: "wf-1".into(),
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
        data: json!({"seq": seq}).into(),
    }
}

/// Starts run `id` (workflow `name`, started at `at_ms`) with one task sent to `billing`, its
/// remote task known.
async fn start(store: &SqliteStore, id: &str, name: &str, at_ms: u64) {
    let started =
        RunStarted::new(id, &workflow(name), None, &RunOptions::default(), at_ms).unwrap();
    store.create_run(started).await.unwrap();
    let records = vec![
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
        JournalRecord::RemoteTaskKnown {
            local_task_id: format!("{id}:charge:0"),
            remote_task_id: format!("t-{id}"),
        },
    ];
    store.append_batch(id, records).await.unwrap();
}

/// A closed store in a fresh directory: `ok` (succeeded, with events), `bad` (failed), `stop`
/// (cancelled), `idle` (waiting), and `live` (running: leased for an hour), oldest to newest.
/// `idle`'s workflow name carries a terminal escape sequence.
fn store_of_every_state() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    block_on(async {
        let store = SqliteStore::open_with(
            &path,
            a2aflow::store_sqlite::StoreOptions::default()
                .with_lease_ttl(Duration::from_secs(3600)),
        )
        .await
        .unwrap();
        for (i, id) in ["ok", "bad", "stop", "idle", "live"].iter().enumerate() {
            let name = if *id == "idle" {
                "idle\u{1b}[2J".to_owned()
            } else {
                format!("flow-{id}")
            };
            start(&store, id, &name, 1_700_000_000_000 + i as u64 * 1000).await;
        }
        store.append("ok", finished("ok", None)).await.unwrap();
        let failed = Failure::new(ErrorCode::WorkflowStepFailed, "charge failed");
        store
            .append("bad", finished("bad", Some(failed)))
            .await
            .unwrap();
        let cancelled = Failure::new(ErrorCode::WorkflowCancelled, "cancelled");
        store
            .append("stop", finished("stop", Some(cancelled)))
            .await
            .unwrap();
        store.acquire("live", "host-1").await.unwrap();
        let events = [
            EventKind::Start,
            EventKind::WorkflowComplete,
            EventKind::Close,
        ];
        let events = (0..).zip(events).map(|(s, k)| event("ok", s, k)).collect();
        store.record_events("ok", events).await.unwrap();
        store.close().await;
    });
    (dir, path)
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn list_shows_every_run_newest_first_with_its_state() {
    let (_dir, path) = store_of_every_state();
    let out = a2aflow(&["runs", "list", "--store", &s(&path), "--format", "json"]);
    assert_exit(&out, 0);
    let doc = stdout_json(&out);
    let runs = doc["runs"].as_array().unwrap();
    let pairs: Vec<(&str, &str)> = runs
        .iter()
        .map(|r| {
            (
                r["executionId"].as_str().unwrap(),
                r["state"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        pairs,
        [
            ("live", "running"),
            ("idle", "waiting"),
            ("stop", "cancelled"),
            ("bad", "failed"),
            ("ok", "succeeded")
        ]
    );
    assert_eq!(runs[4]["workflowName"], "flow-ok");
    assert_eq!(runs[4]["startedAtMs"], 1_700_000_000_000u64);

    let sqlite = format!("sqlite:{}", s(&path));
    let out = a2aflow(&["runs", "list", "--store", &sqlite, "--state", "failed"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(text.starts_with("EXECUTION ID"), "{text}");
    let row: Vec<&str> = text.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(
        [row[0], row[1], row[2], row[4]],
        ["bad", "failed", "2023-11-14T22:13:21.000Z", "flow-bad"]
    );
    // It finished when its runFinished was appended (now), long after it started in 2023.
    assert!(row[3].ends_with('m') && row[3].contains('h'), "{text}");
    assert!(runs[3]["finishedAtMs"].as_u64().unwrap() > 1_700_000_001_000);
    assert!(
        runs[1].get("finishedAtMs").is_none(),
        "an unfinished run has no end"
    );
    assert_eq!(text.lines().count(), 2, "{text}");

    let out = a2aflow(&["runs", "list", "--store", &s(&path), "--limit", "2"]);
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 3, "{text}");
    // Text from the store is escaped for the terminal.
    assert!(text.contains("idle\\x1b[2J"), "{text}");
    assert!(!text.contains('\u{1b}'), "{text}");
}

#[test]
fn show_gives_the_state_steps_and_task_ids() {
    let (_dir, path) = store_of_every_state();
    let out = a2aflow(&[
        "runs",
        "show",
        "live",
        "--store",
        &s(&path),
        "--format",
        "json",
    ]);
    assert_exit(&out, 0);
    let doc = stdout_json(&out);
    assert_eq!(doc["state"], "running");
    assert_eq!(doc["steps"][0]["name"], "charge");
    assert_eq!(doc["steps"][0]["status"], "RUNNING");
    let task = &doc["tasks"][0];
    assert_eq!(task["localTaskId"], "live:charge:0");
    assert_eq!(task["contextId"], "ctx-live");
    assert_eq!(task["remoteTaskId"], "t-live");
    assert_eq!(task["agent"], "billing");

    let out = a2aflow(&["runs", "show", "bad", "--store", &s(&path)]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(text.starts_with("run bad failed\n"), "{text}");
    assert!(
        text.contains("[workflow.step_failed] charge failed"),
        "{text}"
    );
    assert!(text.contains("contextId     ctx-bad"), "{text}");
    assert!(text.contains("remoteTaskId  t-bad"), "{text}");

    let out = a2aflow(&["runs", "show", "idle", "--store", &s(&path)]);
    let text = stdout(&out);
    assert!(text.starts_with("run idle waiting\n"), "{text}");
    assert!(text.contains("idle\\x1b[2J"), "{text}");
    assert!(!text.contains('\u{1b}'), "{text}");
}

#[test]
fn events_are_the_stored_json_lines() {
    let (_dir, path) = store_of_every_state();
    let out = a2aflow(&["runs", "events", "ok", "--store", &s(&path)]);
    assert_exit(&out, 0);
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let expected: Vec<Value> = [
        EventKind::Start,
        EventKind::WorkflowComplete,
        EventKind::Close,
    ]
    .into_iter()
    .enumerate()
    .map(|(i, k)| serde_json::to_value(event("ok", i as u64, k)).unwrap())
    .collect();
    assert_eq!(lines, expected);
    // A finished run with its close event: --follow ends at once.
    let out = a2aflow(&["runs", "events", "ok", "--store", &s(&path), "--follow"]);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out).lines().count(), 3);
}

/// Spawns `runs events ID --follow` and returns it with a reader of its stdout lines.
fn follow(path: &Path, id: &str) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_a2aflow"))
        .args(["runs", "events", id, "--store", &s(path), "--follow"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    (child, rx)
}

fn next_line(rx: &std::sync::mpsc::Receiver<String>) -> Value {
    let line = rx.recv_timeout(Duration::from_secs(30)).unwrap();
    serde_json::from_str(&line).unwrap()
}

#[test]
fn follow_prints_events_as_they_are_recorded_until_the_run_finished() {
    let (_dir, path) = store_of_every_state();
    block_on(async {
        let store = SqliteStore::open(&path).await.unwrap();
        let first = vec![event("live", 0, EventKind::Start)];
        store.record_events("live", first).await.unwrap();
        store.close().await;
    });
    let (child, rx) = follow(&path, "live");
    assert_eq!(next_line(&rx)["seq"], 0);
    block_on(async {
        let store = SqliteStore::open(&path).await.unwrap();
        let rest = vec![
            event("live", 1, EventKind::WorkflowComplete),
            event("live", 2, EventKind::Close),
        ];
        store.record_events("live", rest).await.unwrap();
        store.append("live", finished("live", None)).await.unwrap();
        store.close().await;
    });
    assert_eq!(next_line(&rx)["seq"], 1);
    assert_eq!(next_line(&rx)["kind"], "close");
    let out = wait_guarded(child);
    assert_exit(&out, 0);
}

#[test]
fn follow_stops_on_ctrl_c_like_run() {
    let (_dir, path) = store_of_every_state();
    block_on(async {
        let store = SqliteStore::open(&path).await.unwrap();
        let first = vec![event("idle", 0, EventKind::Start)];
        store.record_events("idle", first).await.unwrap();
        store.close().await;
    });
    let (child, rx) = follow(&path, "idle");
    assert_eq!(next_line(&rx)["seq"], 0);
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = wait_guarded(child);
    assert_exit(&out, 130);
}

#[test]
fn cancel_journals_a_run_level_request_and_refuses_a_finished_run() {
    let (_dir, path) = store_of_every_state();
    let out = a2aflow(&["runs", "cancel", "idle", "--store", &s(&path)]);
    assert_exit(&out, 0);
    assert!(
        stdout(&out).contains("cancel requested for run idle"),
        "{}",
        stdout(&out)
    );
    let journal = block_on(async {
        let store = SqliteStore::open(&path).await.unwrap();
        let j = store.load("idle").await.unwrap();
        store.close().await;
        j
    });
    assert_eq!(
        journal.entries.last().map(|e| e.record.clone()),
        Some(JournalRecord::CancelRequested {
            local_task_id: None,
            remote_task_id: None
        })
    );
    let out = a2aflow(&[
        "runs",
        "show",
        "idle",
        "--store",
        &s(&path),
        "--format",
        "json",
    ]);
    assert_eq!(stdout_json(&out)["cancelRequested"], true);

    let before = std::fs::read(&path).unwrap();
    let out = a2aflow(&["runs", "cancel", "ok", "--store", &s(&path)]);
    assert_fails_with(&out, 2, "store.invalid_append");
    assert!(
        stderr(&out).contains("already finished (succeeded)"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn an_unknown_id_is_store_unknown_execution_for_every_command() {
    let (_dir, path) = store_of_every_state();
    let before = std::fs::read(&path).unwrap();
    for cmd in ["show", "events", "cancel"] {
        let out = a2aflow(&["runs", cmd, "nope", "--store", &s(&path)]);
        assert_fails_with(&out, 2, "store.unknown_execution");
        assert!(stdout(&out).is_empty(), "{cmd}: {}", stdout(&out));
    }
    let out = a2aflow(&["runs", "events", "nope", "--store", &s(&path), "--follow"]);
    assert_fails_with(&out, 2, "store.unknown_execution");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

/// Runs every `runs` command against `path` and checks each exits 2 naming `code`, leaving the
/// file's bytes (or its absence) as they were.
fn refused_everywhere(path: &Path, code: &str) {
    let before = std::fs::read(path).ok();
    for args in [
        vec!["list"],
        vec!["show", "ok"],
        vec!["events", "ok"],
        vec!["cancel", "ok"],
    ] {
        let mut full = vec!["runs"];
        full.extend(&args);
        let store = s(path);
        full.extend(["--store", store.as_str()]);
        let out = a2aflow(&full);
        assert_fails_with(&out, 2, code);
        assert_eq!(
            std::fs::read(path).ok(),
            before,
            "{args:?} changed the file"
        );
    }
}

#[test]
fn files_that_are_not_usable_stores_are_refused_and_left_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.db");
    refused_everywhere(&missing, "store.unavailable");
    assert!(!missing.exists());
    refused_everywhere(&dir.path().join("no-such-dir/runs.db"), "store.unavailable");

    let text = dir.path().join("notes.txt");
    std::fs::write(&text, b"these are notes, not a store").unwrap();
    refused_everywhere(&text, "store.not_a_store");

    let (_d, store) = store_of_every_state();
    let mut bytes = std::fs::read(&store).unwrap();
    let newer = dir.path().join("newer.db");
    bytes[60..64].copy_from_slice(&99u32.to_be_bytes());
    std::fs::write(&newer, &bytes).unwrap();
    refused_everywhere(&newer, "store.newer_schema");

    let bytes = std::fs::read(&store).unwrap();
    let truncated = dir.path().join("truncated.db");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    refused_everywhere(&truncated, "store.corrupt");
}

#[test]
fn a_store_kind_that_is_not_supported_is_a_usage_error() {
    let out = a2aflow(&["runs", "list", "--store", "mysql://db/runs"]);
    assert_fails_with(&out, 2, "config.invalid");
    let out = a2aflow(&["runs", "list"]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("--store"), "{}", stderr(&out));
}
