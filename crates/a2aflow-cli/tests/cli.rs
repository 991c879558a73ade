//! Drives the `a2aflow` binary for each subcommand and exit code.

use std::path::PathBuf;
use std::process::{Command, Output};

fn a2aflow(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_a2aflow"))
        .args(args)
        .output()
        .expect("run a2aflow")
}

fn demo_file() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("demo/incident.workflow.json")
        .display()
        .to_string()
}

fn temp_file(name: &str, text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write");
    (dir, path.display().to_string())
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
