//! `a2aflow run FILE --store PATH` journals a run (with `--format json` its first stdout line is
//! `{"executionId": …}`), and `a2aflow runs resume ID --store PATH` continues it after the host
//! process was killed, with `run`'s output and exit codes; store problems are exit 2 and leave
//! the file unchanged.

use crate::support::{
    Agents, agents, assert_exit, assert_fails_with, stderr, stdout, wait_guarded,
};
use a2aflow_testkit::Route;
use serde_json::Value;
use std::io::BufRead as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn a2aflow(args: &[&str]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_a2aflow"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_guarded(child)
}

/// A one-step workflow whose task says `text` to `alpha`, written into `dir`.
fn workflow_file(dir: &Path, text: &str) -> String {
    let wf = serde_json::json!({"id": "wf", "name": "durable", "steps": [
        {"name": "ask", "subtasks": [{"agent": "alpha", "description": text}]}
    ]});
    let path = dir.join("wf.json");
    std::fs::write(&path, wf.to_string()).unwrap();
    path.display().to_string()
}

/// A config with a short lease, so a killed driver's run is taken over quickly.
fn short_lease_config(dir: &Path) -> String {
    let path = dir.join("engine.toml");
    std::fs::write(&path, "store_lease_secs = 0.5\n").unwrap();
    path.display().to_string()
}

fn sends(a: &Agents) -> usize {
    a.server
        .requests()
        .iter()
        .filter(|r| matches!(r.route, Some(Route::Send | Route::Stream)))
        .count()
}

/// Splits `run --format json --store` output into its first line's id and the result document.
fn id_and_result(o: &Output) -> (String, Value) {
    let out = stdout(o);
    let (first, rest) = out.split_once('\n').expect("two parts");
    let first: Value = serde_json::from_str(first).unwrap_or_else(|e| panic!("{e}: {out}"));
    let result: Value = serde_json::from_str(rest).unwrap_or_else(|e| panic!("{e}: {out}"));
    (first["executionId"].as_str().unwrap().to_owned(), result)
}

#[test]
fn run_with_a_store_prints_the_execution_id_first_and_journals_the_run() {
    let a = agents();
    let dir = tempfile::tempdir().unwrap();
    let wf = workflow_file(dir.path(), "task x");
    let store = dir.path().join("runs.db").display().to_string();
    let agent = format!("alpha={}", a.server.card_url("alpha"));
    let o = a2aflow(&[
        "run", &wf, "--agent", &agent, "--store", &store, "--format", "json",
    ]);
    assert_exit(&o, 0);
    let (id, result) = id_and_result(&o);
    assert_eq!(result["executionId"], id.as_str());
    assert_eq!(result["success"], true);
    let shown = a2aflow(&["runs", "show", &id, "--store", &store, "--format", "json"]);
    assert_exit(&shown, 0);
    let view: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(view["state"], "succeeded");
    // Resuming a finished run prints its journaled result and sends nothing.
    let sent = sends(&a);
    let resumed = a2aflow(&[
        "runs", "resume", &id, "--store", &store, "--agent", &agent, "--format", "json",
    ]);
    assert_exit(&resumed, 0);
    let again: Value = serde_json::from_slice(&resumed.stdout).unwrap();
    assert_eq!(again, result);
    assert_eq!(sends(&a), sent);
}

#[test]
fn run_with_a_store_that_cannot_be_opened_is_exit_2_before_anything_is_sent() {
    let a = agents();
    let dir = tempfile::tempdir().unwrap();
    let wf = workflow_file(dir.path(), "task x");
    let agent = format!("alpha={}", a.server.card_url("alpha"));
    let not_a_store = dir.path().join("junk.db");
    std::fs::write(&not_a_store, b"not sqlite at all, just bytes").unwrap();
    for (store, code) in [
        (
            "/nonexistent-a2aflow/x/runs.db".to_owned(),
            "store.unavailable",
        ),
        (not_a_store.display().to_string(), "store.not_a_store"),
    ] {
        let o = a2aflow(&["run", &wf, "--agent", &agent, "--store", &store]);
        assert_fails_with(&o, 2, code);
    }
    assert_eq!(sends(&a), 0);
    assert_eq!(
        std::fs::read(&not_a_store).unwrap(),
        b"not sqlite at all, just bytes"
    );
}

#[test]
fn resume_refuses_unknown_ids_and_bad_files_with_exit_2_and_the_file_unchanged() {
    let a = agents();
    let dir = tempfile::tempdir().unwrap();
    let wf = workflow_file(dir.path(), "task x");
    let store = dir.path().join("runs.db").display().to_string();
    let agent = format!("alpha={}", a.server.card_url("alpha"));
    assert_exit(
        &a2aflow(&["run", &wf, "--agent", &agent, "--store", &store]),
        0,
    );
    let before = std::fs::read(&store).unwrap();
    let o = a2aflow(&["runs", "resume", "no-such-run", "--store", &store]);
    assert_fails_with(&o, 2, "store.unknown_execution");
    assert_eq!(std::fs::read(&store).unwrap(), before);
    let missing = dir.path().join("missing.db").display().to_string();
    let o = a2aflow(&["runs", "resume", "x", "--store", &missing]);
    assert_fails_with(&o, 2, "store.unavailable");
    assert!(!Path::new(&missing).exists());
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, b"junk").unwrap();
    let o = a2aflow(&["runs", "resume", "x", "--store", junk.to_str().unwrap()]);
    assert_fails_with(&o, 2, "store.not_a_store");
    assert_eq!(std::fs::read(&junk).unwrap(), b"junk");
}

/// `run --store` with a slow task, killed (SIGKILL) once its remote task is journaled; the
/// resume finds the task again, waits for it and succeeds without sending it again.
#[test]
fn a_killed_run_is_resumed_and_its_task_is_not_sent_twice() {
    let a = agents();
    let dir = tempfile::tempdir().unwrap();
    let wf = workflow_file(dir.path(), "slow 1 then done");
    let store = dir.path().join("runs.db").display().to_string();
    let config = short_lease_config(dir.path());
    let agent = format!("alpha={}", a.server.card_url("alpha"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_a2aflow"))
        .args([
            "run", &wf, "--agent", &agent, "--store", &store, "--config", &config, "--format",
            "json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let id = serde_json::from_str::<Value>(&first).unwrap()["executionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let guard = Instant::now() + Duration::from_secs(30);
    while a.server.task_count("alpha") == 0 {
        assert!(Instant::now() < guard, "the task never reached the agent");
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // The workflow's agents must be given again: refused before the lease or any send.
    let o = a2aflow(&[
        "runs", "resume", &id, "--store", &store, "--config", &config,
    ]);
    assert_fails_with(&o, 2, "workflow.unknown_agent");
    let resumed = loop {
        let o = a2aflow(&[
            "runs", "resume", &id, "--store", &store, "--agent", &agent, "--config", &config,
            "--format", "json",
        ]);
        if !stderr(&o).contains("store.locked") {
            break o;
        }
        assert!(Instant::now() < guard, "the lease never lapsed");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_exit(&resumed, 0);
    let result: Value = serde_json::from_slice(&resumed.stdout).unwrap();
    assert_eq!(result["success"], true, "{result}");
    assert_eq!(result["executionId"], id.as_str());
    assert_eq!(sends(&a), 1, "the task was sent once");
    assert_eq!(a.server.task_count("alpha"), 1);
}
