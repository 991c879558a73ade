//! `--store postgres://…`: `run`, `runs show|list` and `runs resume` on the Postgres store the
//! test server `A2AFLOW_PG_URL` names (the password from `PGPASSWORD`, inherited), in its
//! default schema; a URL with a password in it is refused without showing it. Without the URL
//! the tests fail and say how to get a server.

use crate::support::{agents, assert_exit, assert_fails_with, stderr, stdout, wait_guarded};
use serde_json::Value;
use std::process::{Command, Output, Stdio};

fn a2aflow(args: &[&str]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_a2aflow"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_guarded(child)
}

fn server_url() -> String {
    std::env::var("A2AFLOW_PG_URL").unwrap_or_else(|_| {
        panic!(
            "A2AFLOW_PG_URL is not set: this test needs a PostgreSQL server. Run `cargo xtask \
             postgres start` and the two `export` lines it prints (docs/guide/postgres.md)"
        )
    })
}

#[test]
fn run_runs_and_resume_take_a_postgres_store() {
    let a = agents();
    let dir = tempfile::tempdir().unwrap();
    let wf = serde_json::json!({"id": "wf", "name": "shared", "steps": [
        {"name": "ask", "subtasks": [{"agent": "alpha", "description": "task pg"}]}
    ]});
    let wf_path = dir.path().join("wf.json");
    std::fs::write(&wf_path, wf.to_string()).unwrap();
    let wf_path = wf_path.display().to_string();
    let store = server_url();
    let agent = format!("alpha={}", a.server.card_url("alpha"));
    let o = a2aflow(&[
        "run", &wf_path, "--agent", &agent, "--store", &store, "--format", "json",
    ]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    let (first, rest) = out.split_once('\n').expect("the id line, then the result");
    let id = serde_json::from_str::<Value>(first).unwrap()["executionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let result: Value = serde_json::from_str(rest).unwrap();
    assert_eq!(result["success"], true, "{out}");

    let shown = a2aflow(&["runs", "show", &id, "--store", &store, "--format", "json"]);
    assert_exit(&shown, 0);
    let view: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(view["state"], "succeeded");
    let listed = a2aflow(&["runs", "list", "--store", &store, "--format", "json"]);
    assert_exit(&listed, 0);
    assert!(stdout(&listed).contains(&id), "{}", stdout(&listed));
    let resumed = a2aflow(&[
        "runs", "resume", &id, "--store", &store, "--agent", &agent, "--format", "json",
    ]);
    assert_exit(&resumed, 0);
    assert_eq!(
        serde_json::from_slice::<Value>(&resumed.stdout).unwrap(),
        result
    );
}

#[test]
fn a_postgres_url_with_a_password_is_a_usage_error_that_does_not_show_it() {
    let o = a2aflow(&[
        "runs",
        "list",
        "--store",
        "postgres://app:pw-4b1d9e@127.0.0.1:1/runs",
    ]);
    assert_fails_with(&o, 2, "config.invalid");
    assert!(stderr(&o).contains("A2AFLOW_PG_PASSWORD"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("pw-4b1d9e") && !stdout(&o).contains("pw-4b1d9e"));
}
