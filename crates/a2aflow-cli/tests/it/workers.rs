//! `submit` journals a run without driving it (a later `runs resume` drives it), and `worker`
//! refuses the SQLite store, which hands no runs out. The Postgres path (workers claiming
//! submitted runs, killed and stopped) is the chaos test's (tests/chaos).

use crate::support::{
    a2aflow_guarded, agents, assert_exit, assert_fails_with, stderr, stdout, stdout_json,
};

fn workflow_file(dir: &std::path::Path) -> String {
    let wf = serde_json::json!({"id": "wf", "name": "submitted", "steps": [
        {"name": "ask", "subtasks": [{"agent": "alpha", "description": "task submitted"}]}
    ]});
    let path = dir.join("wf.json");
    std::fs::write(&path, wf.to_string()).unwrap();
    path.display().to_string()
}

#[test]
fn submit_journals_a_run_that_nobody_drives_until_a_resume_does() {
    let a = agents();
    let dir = tempfile::tempdir().unwrap();
    let wf = workflow_file(dir.path());
    let store = dir.path().join("runs.db").display().to_string();
    let agent = format!("alpha={}", a.server.card_url("alpha"));
    let o = a2aflow_guarded(&[
        "submit", &wf, "--agent", &agent, "--store", &store, "--format", "json",
    ]);
    assert_exit(&o, 0);
    let id = stdout_json(&o)["executionId"].as_str().unwrap().to_owned();
    assert!(a.server.requests().is_empty(), "submit sent nothing");
    let shown = a2aflow_guarded(&["runs", "show", &id, "--store", &store, "--format", "json"]);
    assert_exit(&shown, 0);
    assert_eq!(stdout_json(&shown)["state"], "waiting");
    let resumed = a2aflow_guarded(&[
        "runs", "resume", &id, "--store", &store, "--agent", &agent, "--format", "json",
    ]);
    assert_exit(&resumed, 0);
    assert_eq!(
        stdout_json(&resumed)["success"],
        true,
        "{}",
        stdout(&resumed)
    );
    // Text output is the id alone.
    let o = a2aflow_guarded(&["submit", &wf, "--store", &store]);
    assert_exit(&o, 0);
    assert!(stdout(&o).trim().starts_with("run-"), "{}", stdout(&o));
}

#[test]
fn submit_refuses_what_only_a_driver_uses_and_agents_that_do_not_cover_the_workflow() {
    let dir = tempfile::tempdir().unwrap();
    let wf = workflow_file(dir.path());
    let store = dir.path().join("runs.db").display().to_string();
    let events = dir.path().join("e.jsonl").display().to_string();
    let o = a2aflow_guarded(&["submit", &wf, "--store", &store, "--events", &events]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("--events"), "{}", stderr(&o));
    let o = a2aflow_guarded(&["submit", &wf, "--store", &store, "--ui"]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("--ui"), "{}", stderr(&o));
    let o = a2aflow_guarded(&["submit", &wf]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("needs --store"), "{}", stderr(&o));
    let o = a2aflow_guarded(&[
        "submit",
        &wf,
        "--store",
        &store,
        "--agent",
        "beta=http://127.0.0.1:1",
    ]);
    assert_fails_with(&o, 2, "workflow.unknown_agent");
    assert!(
        !dir.path().join("runs.db").exists() || {
            let listed = a2aflow_guarded(&["runs", "list", "--store", &store, "--format", "json"]);
            stdout_json(&listed).as_array().is_some_and(Vec::is_empty)
        }
    );
}

#[test]
fn a_worker_on_the_sqlite_store_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db").display().to_string();
    let o = a2aflow_guarded(&["worker", "--store", &store]);
    assert_fails_with(&o, 2, "store.unavailable");
    assert!(
        stderr(&o).contains("workers need the Postgres store"),
        "{}",
        stderr(&o)
    );
}
