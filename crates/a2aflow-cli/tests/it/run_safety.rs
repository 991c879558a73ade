//! `a2aflow run` refuses, bounds and cancels: output paths and agents are checked before anything
//! is sent, discovery counts against `--timeout`, failures show their root cause, and SIGINT or
//! SIGTERM cancel the remote tasks before the process exits.

use crate::support::{
    self, a2aflow_guarded, agents, assert_exit, assert_fails_with, stderr, stdout, temp_file,
    wait_guarded,
};
use a2aflow_testkit::{Fault, Route};
use std::io::Read as _;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A workflow of one step `s` with one subtask for agent `a`.
fn one_task(description: &str) -> String {
    serde_json::json!({"steps": [{"name": "s", "subtasks": [{"agent": "a", "description": description}]}]})
        .to_string()
}

/// `a2aflow run` (guarded) of `workflow` with agent `a` served as `alpha`, plus `extra`.
fn run_on_alpha(a: &support::Agents, workflow: &str, extra: &[&str]) -> Output {
    let (_d, wf) = temp_file("wf.json", workflow);
    let agent = format!("a={}", a.server.card_url("alpha"));
    let mut args = vec!["run", wf.as_str(), "--agent", agent.as_str()];
    args.extend_from_slice(extra);
    a2aflow_guarded(&args)
}

fn sends(a: &support::Agents) -> usize {
    a.server
        .requests()
        .iter()
        .filter(|r| matches!(r.route, Some(Route::Send) | Some(Route::Stream)))
        .count()
}

#[test]
fn an_unwritable_events_path_exits_2_before_any_request() {
    let a = agents();
    let out = run_on_alpha(
        &a,
        &one_task("task x"),
        &["--events", "/nonexistent/a2aflow-dir/events.jsonl"],
    );
    assert_fails_with(&out, 2, "cannot create");
    assert_eq!(a.server.requests().len(), 0, "nothing reached the agent");
}

#[test]
fn an_unknown_agent_in_a_later_step_is_refused_before_the_first_step_runs() {
    let a = agents();
    let out = run_on_alpha(
        &a,
        r#"{"steps": [
          {"name": "first", "subtasks": [{"agent": "a", "description": "task side effect"}], "next": [{"step": "later"}]},
          {"name": "later", "subtasks": [{"agent": "ghost", "description": "task x"}]}
        ]}"#,
        &[],
    );
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains("workflow.unknown_agent") && err.contains("'ghost'"),
        "{err}"
    );
    assert_eq!(sends(&a), 0, "the first step must not have run");
}

#[test]
fn a_failed_run_shows_the_root_cause_in_text_mode() {
    let a = agents();
    let out = run_on_alpha(&a, &one_task("fail on purpose"), &[]);
    assert_exit(&out, 1);
    let text = stdout(&out);
    assert!(
        text.contains("cause: agent a: [a2a.task_failed]")
            && text.contains("failed as asked: fail on purpose"),
        "{text}"
    );
    // The progress line of the step's error names the cause too.
    assert!(
        stderr(&out).contains("— agent a: [a2a.task_failed]"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_hanging_card_host_costs_the_run_budget_not_the_request_timeout() {
    let a = agents();
    a.server
        .set_fault("alpha", Route::Card, Fault::NeverAnswer)
        .unwrap();
    // The request timeout (60 s by default) is longer than the hang guard: only the run's budget
    // can end this run in time.
    let out = run_on_alpha(&a, &one_task("task x"), &["--timeout", "1"]);
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains("workflow.timeout") && err.contains("discovery"),
        "{err}"
    );
}

/// Starts `a2aflow run` on a task that stays WORKING, waits until the agent has it, sends
/// `signal`, and returns the output and the events file's lines.
fn interrupt_a_hanging_run(signal: &str) -> (Output, Vec<serde_json::Value>, support::Agents) {
    let a = agents();
    let (dir, wf) = temp_file("wf.json", one_task("hang until cancelled"));
    let events = dir.path().join("events.jsonl");
    let child = Command::new(env!("CARGO_BIN_EXE_a2aflow"))
        .args([
            "run",
            &wf,
            "--agent",
            &format!("a={}", a.server.card_url("alpha")),
            "--events",
            &events.display().to_string(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let guard = Instant::now() + Duration::from_secs(30);
    while a.server.task_count("alpha") == 0 {
        assert!(Instant::now() < guard, "the agent never got the task");
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = wait_guarded(child);
    let mut text = String::new();
    std::fs::File::open(&events)
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    let lines = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (out, lines, a)
}

fn assert_cancelled_cleanly(out: &Output, events: &[serde_json::Value], a: &support::Agents) {
    let cancels = a
        .server
        .requests()
        .iter()
        .filter(|r| r.route == Some(Route::Cancel))
        .count();
    assert!(cancels >= 1, "no CancelTask reached the agent");
    let text = stdout(out);
    assert!(
        text.contains("failed") && text.contains("workflow.cancelled"),
        "{text}\n{}",
        stderr(out)
    );
    assert_eq!(
        events.last().map(|e| e["kind"].clone()),
        Some(serde_json::json!("close")),
        "the events file ends with the run's last event: {events:?}\n{}",
        stderr(out)
    );
}

#[cfg(unix)]
#[test]
fn sigint_cancels_the_remote_task_prints_the_result_and_exits_130() {
    let (out, events, a) = interrupt_a_hanging_run("-INT");
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert_cancelled_cleanly(&out, &events, &a);
}

#[cfg(unix)]
#[test]
fn sigterm_cancels_the_remote_task_prints_the_result_and_exits_143() {
    let (out, events, a) = interrupt_a_hanging_run("-TERM");
    assert_eq!(out.status.code(), Some(143), "{}", stderr(&out));
    assert_cancelled_cleanly(&out, &events, &a);
}
