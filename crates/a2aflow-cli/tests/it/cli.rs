//! Drives the `a2aflow` binary for each subcommand and exit code.

use crate::support::{a2aflow, assert_exit, temp_file};
use std::path::PathBuf;

fn demo_file() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("demo/incident.workflow.json")
        .display()
        .to_string()
}

#[test]
fn validate_valid_file_exits_0() {
    let out = a2aflow(&["validate", &demo_file(), "--strict"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(": valid"));
}

#[test]
fn validate_invalid_file_exits_1_with_codes_paths_and_positions() {
    let (_d, f) = temp_file(
        "bad.json",
        "{\"steps\": [\n {\"name\": \"a\", \"subtasks\": [{\"agent\": \"x\"}], \"next\": [{\"step\": \"b\"}]},\n {\"name\": \"b\", \"subtasks\": [{\"agent\": \"y\"}], \"next\": [{\"step\": \"a\"}]}\n]}",
    );
    let out = a2aflow(&["validate", &f, "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json report");
    let errors = report[0]["errors"].as_array().expect("errors");
    assert!(
        errors.iter().any(|e| e["code"] == "workflow.cycle"),
        "{report:#}"
    );
    assert!(
        errors.iter().any(|e| e["code"] == "workflow.no_root"),
        "{report:#}"
    );
    assert!(
        errors
            .iter()
            .all(|e| e["position"]["line"].as_u64().is_some()),
        "{report:#}"
    );
}

#[test]
fn validate_missing_file_exits_2() {
    let out = a2aflow(&["validate", "/nonexistent/a2aflow/workflow.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read"));
}

#[test]
fn usage_error_exits_2() {
    assert_eq!(a2aflow(&["validate"]).status.code(), Some(2));
    assert_eq!(a2aflow(&["no-such-command"]).status.code(), Some(2));
}

#[test]
fn graph_prints_mermaid_and_dot() {
    let out = a2aflow(&["graph", &demo_file()]);
    assert_eq!(out.status.code(), Some(0));
    let m = String::from_utf8_lossy(&out.stdout);
    assert!(m.starts_with("flowchart TD"), "{m}");
    assert!(m.contains("a cross-city fault is confirmed"), "{m}");
    let out = a2aflow(&["graph", &demo_file(), "--format", "dot"]);
    let d = String::from_utf8_lossy(&out.stdout);
    assert!(d.contains("\"correlate\" -> \"escalate\" [label=\"a cross-city fault is confirmed\", style=dashed];"), "{d}");
}

#[test]
fn graph_of_a_broken_document_exits_1() {
    let (_d, f) = temp_file("broken.json", "{\"steps\": [");
    assert_eq!(a2aflow(&["graph", &f]).status.code(), Some(1));
}

// ---- subcommands that talk to agents: a testkit server in a background runtime ----

use crate::support::agents;

const RUN_WORKFLOW: &str = r#"{"id": "cli-run", "steps": [
  {"name": "ask", "subtasks": [{"agent": "a", "description": "task look"}, {"agent": "b", "description": "stream it"}],
   "next": [{"step": "sum"}]},
  {"name": "sum", "type": "SELF_LOOP", "subtasks": [{"agent": "", "description": "sum"}]}
]}"#;

#[test]
fn card_prints_bindings_and_fails_on_unreachable_agents() {
    let a = agents();
    let out = a2aflow(&["card", &a.server.card_url("beta")]);
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("beta "), "{text}");
    assert!(
        text.contains("JSONRPC") && text.contains("streaming: true"),
        "{text}"
    );
    let out = a2aflow(&["card", "http://127.0.0.1:9/", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("a2a.connection"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn run_succeeds_writes_events_and_prints_json() {
    let a = agents();
    let (dir, wf) = temp_file("wf.json", RUN_WORKFLOW);
    let events = dir.path().join("events.jsonl");
    let out = a2aflow(&[
        "run",
        &wf,
        "--agent",
        &format!("a={}", a.server.card_url("alpha")),
        "--agent",
        &format!("b={}", a.server.card_url("beta")),
        "--events",
        &events.display().to_string(),
        "--format",
        "json",
    ]);
    assert_exit(&out, 0);
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("result JSON");
    assert_eq!(result["success"], true);
    assert_eq!(result["steps"][1]["stepName"], "sum");
    let lines = std::fs::read_to_string(&events).unwrap();
    let kinds: Vec<String> = lines
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(kinds.first().map(String::as_str), Some("start"));
    assert_eq!(kinds.last().map(String::as_str), Some("close"));
    assert!(
        kinds.iter().any(|k| k == "agent_artifact_update"),
        "{kinds:?}"
    );
}

#[test]
fn run_failure_exits_1_with_the_stable_code() {
    let a = agents();
    let (_dir, wf) = temp_file(
        "wf.json",
        r#"{"steps": [{"name": "s", "subtasks": [{"agent": "a", "description": "fail on purpose"}]}]}"#,
    );
    let out = a2aflow(&[
        "run",
        &wf,
        "--agent",
        &format!("a={}", a.server.card_url("alpha")),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("failed") && text.contains("workflow.step_failed"),
        "{text}"
    );
}

#[test]
fn run_usage_errors_exit_2() {
    let (_dir, wf) = temp_file("wf.json", RUN_WORKFLOW);
    assert_eq!(
        a2aflow(&["run", &wf, "--agent", "no-equals-sign"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        a2aflow(&["run", &wf, "--routes", "/no/such/routes.json"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        a2aflow(&["run", "/no/such/workflow.json"]).status.code(),
        Some(2)
    );
    assert_eq!(
        a2aflow(&["run", &wf, "--timeout", "-3"]).status.code(),
        Some(2)
    );
}

/// The commands a `--help` text lists under `Commands:` (without `help`).
fn listed_commands(help: &str) -> Vec<&str> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect()
}

/// The first line of `--help` names every command the Commands section lists, so a new command
/// cannot be left out of it again.
#[test]
fn the_top_level_help_names_every_command() {
    let top = a2aflow(&["--help"]);
    let text = String::from_utf8_lossy(&top.stdout);
    let first = text.lines().next().unwrap_or_default();
    let commands = listed_commands(&text);
    assert!(
        commands.contains(&"search") && commands.contains(&"runs"),
        "{text}"
    );
    for c in &commands {
        assert!(
            first.split([' ', ',', ':']).any(|w| w == *c),
            "the first line `{first}` leaves out `{c}`"
        );
    }
}

/// The `runs` line of the top-level help names every `runs` subcommand (it once left out
/// `answer`).
#[test]
fn the_runs_summary_names_every_runs_subcommand() {
    let top = a2aflow(&["--help"]);
    let top = String::from_utf8_lossy(&top.stdout);
    let summary = top
        .lines()
        .find(|l| l.trim_start().starts_with("runs "))
        .unwrap_or_default();
    let runs = a2aflow(&["runs", "--help"]);
    let runs = String::from_utf8_lossy(&runs.stdout);
    let subcommands = listed_commands(&runs);
    assert!(subcommands.contains(&"answer"), "{runs}");
    for c in &subcommands {
        assert!(
            summary.contains(&format!("`{c}`")),
            "the runs summary `{summary}` leaves out `{c}`"
        );
    }
}

#[test]
fn help_points_at_the_configuration_guide_and_the_discovery_budget() {
    let top = a2aflow(&["--help"]);
    assert!(
        String::from_utf8_lossy(&top.stdout).contains("docs/guide/configuration.md"),
        "{}",
        String::from_utf8_lossy(&top.stdout)
    );
    for cmd in ["run", "send", "card"] {
        let out = a2aflow(&[cmd, "--help"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("configuration.md"), "{cmd}: {text}");
    }
    let run = a2aflow(&["run", "--help"]);
    assert!(String::from_utf8_lossy(&run.stdout).contains("discovery"));
    assert!(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../docs/guide/configuration.md")
            .exists()
    );
}
