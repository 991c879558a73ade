//! `a2aflow run … --store PATH --gates park` stops at an open gate with exit 3 (the process
//! exits, the run stays in the store), `runs show` lists the gate with its `localTaskId`, and
//! `runs answer ID --task … --text …` sends the follow-up on the same task and context and
//! drives the run to its end; an answer to a task without an open gate is exit 2.

use crate::support::{agents, assert_exit, assert_fails_with, stdout, wait_guarded};
use a2aflow_testkit::Route;
use serde_json::Value;
use std::path::Path;
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

fn workflow_file(dir: &Path) -> String {
    let wf = serde_json::json!({"id": "wf", "name": "gated", "steps": [
        {"name": "ask", "subtasks": [{"agent": "alpha", "description": "input which city"}]}
    ]});
    let path = dir.join("wf.json");
    std::fs::write(&path, wf.to_string()).unwrap();
    path.display().to_string()
}

fn sent_messages(server: &a2aflow_testkit::TestServer) -> Vec<Value> {
    server
        .requests()
        .iter()
        .filter(|r| matches!(r.route, Some(Route::Send | Route::Stream)))
        .filter_map(|r| {
            let body = r.body.as_ref()?;
            body.get("params")
                .and_then(|p| p.get("message"))
                .or_else(|| body.get("message"))
                .cloned()
        })
        .collect()
}

#[test]
fn a_parked_run_exits_3_and_runs_answer_completes_it_with_both_ids() {
    let a = agents();
    let dir = tempfile::tempdir().unwrap();
    let wf = workflow_file(dir.path());
    let store = dir.path().join("runs.db").display().to_string();
    let agent = format!("alpha={}", a.server.card_url("alpha"));
    let o = a2aflow(&[
        "run", &wf, "--agent", &agent, "--store", &store, "--gates", "park", "--format", "json",
    ]);
    assert_exit(&o, 3);
    let out = stdout(&o);
    let (first, rest) = out.split_once('\n').expect("two parts");
    let id = serde_json::from_str::<Value>(first).unwrap()["executionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let result: Value = serde_json::from_str(rest).unwrap();
    assert_eq!(result["failure"]["code"], "workflow.parked", "{result:#}");
    let local = result["failure"]["details"]["openGates"][0]["localTaskId"]
        .as_str()
        .unwrap()
        .to_owned();

    let shown = a2aflow(&["runs", "show", &id, "--store", &store, "--format", "json"]);
    assert_exit(&shown, 0);
    let view: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(view["state"], "waiting");
    assert_eq!(view["openGates"][0]["localTaskId"], local.as_str());
    let text = a2aflow(&["runs", "show", &id, "--store", &store]);
    assert!(stdout(&text).contains(&local), "{}", stdout(&text));
    let first_send = sent_messages(&a.server).pop().unwrap();

    let wrong = a2aflow(&[
        "runs",
        "answer",
        &id,
        "--task",
        "no-such-task",
        "--text",
        "Paris",
        "--store",
        &store,
        "--agent",
        &agent,
    ]);
    assert_fails_with(&wrong, 2, "workflow.gate_not_open");
    assert_eq!(sent_messages(&a.server).len(), 1, "nothing sent");

    let answered = a2aflow(&[
        "runs", "answer", &id, "--task", &local, "--text", "Paris", "--store", &store, "--agent",
        &agent, "--format", "json",
    ]);
    assert_exit(&answered, 0);
    let sent = sent_messages(&a.server);
    assert_eq!(sent.len(), 2, "{sent:#?}");
    let follow_up = &sent[1];
    assert_eq!(follow_up["contextId"], first_send["contextId"]);
    assert!(follow_up["taskId"].is_string(), "{follow_up}");
    assert_eq!(follow_up["parts"][0]["text"], "Paris");
    let shown = a2aflow(&["runs", "show", &id, "--store", &store, "--format", "json"]);
    let view: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(view["state"], "succeeded");
    assert_eq!(view["tasks"][0]["remoteTaskId"], follow_up["taskId"]);
    // Answered already: a second answer is refused.
    let again = a2aflow(&[
        "runs", "answer", &id, "--task", &local, "--text", "x", "--store", &store, "--agent",
        &agent,
    ]);
    assert_fails_with(&again, 2, "workflow.gate_not_open");
}

#[test]
fn gates_park_without_a_store_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let wf = workflow_file(dir.path());
    let o = a2aflow(&[
        "run",
        &wf,
        "--agent",
        "alpha=http://127.0.0.1:9",
        "--gates",
        "park",
    ]);
    assert_exit(&o, 2);
}

/// The open gate of run `id` in `store`, from `runs show`.
fn open_gate(id: &str, store: &str) -> String {
    let shown = a2aflow(&["runs", "show", id, "--store", store, "--format", "json"]);
    assert_exit(&shown, 0);
    let view: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(view["state"], "waiting", "{view:#}");
    let gates = view["openGates"].as_array().unwrap();
    assert_eq!(gates.len(), 1, "{view:#}");
    gates[0]["localTaskId"].as_str().unwrap().to_owned()
}

#[test]
fn a_data_answer_that_meets_another_gate_exits_3_as_does_a_resume_that_parks_again() {
    let a = agents();
    let dir = tempfile::tempdir().unwrap();
    let wf = serde_json::json!({"id": "wf2", "name": "gated twice", "steps": [
        {"name": "city", "subtasks": [{"agent": "alpha", "description": "input which city"}],
         "next": [{"step": "date"}]},
        {"name": "date", "subtasks": [{"agent": "alpha", "description": "input which date"}]}
    ]});
    let wf_path = dir.path().join("wf.json");
    std::fs::write(&wf_path, wf.to_string()).unwrap();
    let wf = wf_path.display().to_string();
    let store = dir.path().join("runs.db").display().to_string();
    let agent = format!("alpha={}", a.server.card_url("alpha"));
    let o = a2aflow(&[
        "run", &wf, "--agent", &agent, "--store", &store, "--gates", "park", "--format", "json",
    ]);
    assert_exit(&o, 3);
    let id =
        serde_json::from_str::<Value>(stdout(&o).lines().next().unwrap()).unwrap()["executionId"]
            .as_str()
            .unwrap()
            .to_owned();
    let first = open_gate(&id, &store);

    // The answer as one data part; the run goes on and parks at the second step's gate.
    let answered = a2aflow(&[
        "runs",
        "answer",
        &id,
        "--task",
        &first,
        "--data",
        r#"{"city": "Paris"}"#,
        "--store",
        &store,
        "--agent",
        &agent,
    ]);
    assert_exit(&answered, 3);
    let sent = sent_messages(&a.server);
    assert_eq!(sent.len(), 3, "{sent:#?}");
    assert_eq!(sent[1]["contextId"], sent[0]["contextId"]);
    assert!(sent[1]["taskId"].is_string(), "{}", sent[1]);
    let part = &sent[1]["parts"][0];
    assert_eq!(part["data"], serde_json::json!({"city": "Paris"}), "{part}");
    let second = open_gate(&id, &store);
    assert_ne!(first, second);

    // A resume without an answer parks again at the same gate and sends nothing.
    let resumed = a2aflow(&[
        "runs", "resume", &id, "--store", &store, "--agent", &agent, "--gates", "park",
    ]);
    assert_exit(&resumed, 3);
    assert_eq!(sent_messages(&a.server).len(), 3);
    assert_eq!(open_gate(&id, &store), second);

    let bad = a2aflow(&[
        "runs",
        "answer",
        &id,
        "--task",
        &second,
        "--data",
        "{not json",
        "--store",
        &store,
        "--agent",
        &agent,
    ]);
    assert_exit(&bad, 2);
    let done = a2aflow(&[
        "runs", "answer", &id, "--task", &second, "--text", "today", "--store", &store, "--agent",
        &agent,
    ]);
    assert_exit(&done, 0);
    assert_eq!(sent_messages(&a.server).len(), 4);
}
