//! `validate`, `graph` and `run` on hostile workflow files: endless, huge, not UTF-8, with a BOM,
//! cyclic, empty, and with control characters in names.

use crate::support::{
    a2aflow, assert_exit, assert_fails_with, stderr, stdout, stdout_json, temp_file,
};

#[test]
fn validate_dev_zero_ends_at_once_with_too_large() {
    let out = a2aflow(&["validate", "/dev/zero", "--format", "json"]);
    assert_exit(&out, 1);
    let report = stdout_json(&out);
    assert_eq!(report[0]["file"], "/dev/zero");
    assert_eq!(report[0]["errors"][0]["code"], "workflow.too_large");
}

#[test]
fn run_dev_zero_ends_at_once_with_too_large_before_any_agent_is_asked() {
    // No agent is named: the document is refused before discovery could start.
    let out = a2aflow(&["run", "/dev/zero"]);
    assert_fails_with(&out, 1, "workflow.too_large");
}

#[test]
fn run_reports_non_utf8_with_its_code() {
    let (_d, f) = temp_file("w.json", b"{\"steps\": [\xff]}");
    let out = a2aflow(&["run", &f]);
    assert_fails_with(&out, 1, "workflow.invalid_encoding");
}

#[test]
fn validate_too_many_steps_is_too_large() {
    let step = r#"{"name":"s","stepType":"SelfLoop"}"#;
    let doc = format!("{{\"steps\":[{}]}}", vec![step; 10_001].join(","));
    let (_d, f) = temp_file("w.json", doc.as_bytes());
    let out = a2aflow(&["validate", &f]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("[workflow.too_large] /steps (line 1, column 10): the workflow has 10001 steps, more than the limit of 10000"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn validate_reports_non_utf8_in_json_with_code_and_position() {
    let (_d, f) = temp_file("w.json", b"{\"steps\": [\n  {\"name\": \"caf\xe9\"}]}");
    let out = a2aflow(&["validate", &f, "--format", "json"]);
    assert_exit(&out, 1);
    let report = stdout_json(&out);
    let e = &report[0]["errors"][0];
    assert_eq!(e["code"], "workflow.invalid_encoding", "{report:#}");
    assert_eq!(e["position"]["line"], 2);
    assert_eq!(e["position"]["column"], 16);
    assert_eq!(report[0]["valid"], false);
}

#[test]
fn validate_refuses_a_bom_saying_why() {
    let (_d, f) = temp_file(
        "w.json",
        b"\xef\xbb\xbf{\"steps\": [{\"name\": \"a\", \"subtasks\": [{\"agent\": \"x\"}]}]}",
    );
    let out = a2aflow(&["validate", &f]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(
        text.contains("[workflow.invalid_encoding] / (line 1, column 1)"),
        "{text}"
    );
    assert!(
        text.contains("only JSON in UTF-8 without a BOM is accepted"),
        "{text}"
    );
}

#[test]
fn validate_rejects_control_characters_and_prints_them_escaped() {
    let (_d, f) = temp_file(
        "w.json",
        br#"{"steps": [{"name": "a\u001b[2J\nb", "subtasks": [{"agent": "x\u200b"}]}]}"#,
    );
    let out = a2aflow(&["validate", &f]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(
        text.contains("error   [workflow.invalid_name] /steps/0/name"),
        "{text}"
    );
    assert!(text.contains("'a\\u{001B}[2J\\u{000A}b'"), "{text}");
    assert!(
        text.contains("warning [workflow.invisible_character] /steps/0/subtasks/0/agent"),
        "{text}"
    );
    assert!(
        !text.chars().any(|c| c != '\n' && c.is_control()),
        "raw control character in {text:?}"
    );
}

#[test]
fn graph_refuses_a_cyclic_workflow_with_its_problems() {
    let (_d, f) = temp_file(
        "w.json",
        br#"{"steps": [{"name": "a", "subtasks": [{"agent": "x"}], "next": [{"step": "b"}]},
                      {"name": "b", "subtasks": [{"agent": "y"}], "next": [{"step": "a"}]}]}"#,
    );
    for format in ["mermaid", "dot"] {
        let out = a2aflow(&["graph", &f, "--format", format]);
        assert_eq!(out.status.code(), Some(1), "{format}: {}", stdout(&out));
        assert!(stdout(&out).is_empty(), "{format} drew: {}", stdout(&out));
        let err = stderr(&out);
        assert!(err.contains(": invalid"), "{err}");
        assert!(err.contains("error   [workflow.cycle]"), "{err}");
        assert!(err.contains("not drawn"), "{err}");
    }
}

#[test]
fn graph_refuses_an_empty_workflow_and_an_unreadable_file() {
    let (_d, f) = temp_file("w.json", br#"{"name": "empty", "steps": []}"#);
    let out = a2aflow(&["graph", &f]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).is_empty());
    assert!(
        stderr(&out).contains("[workflow.no_steps]"),
        "{}",
        stderr(&out)
    );
    let out = a2aflow(&["graph", "/nonexistent/a2aflow/w.json"]);
    assert_fails_with(&out, 2, "cannot read");
    let out = a2aflow(&["graph", "/dev/zero"]);
    assert_fails_with(&out, 1, "[workflow.too_large]");
}

#[test]
fn graph_of_a_valid_workflow_with_a_multiline_condition_keeps_one_line_per_edge() {
    let (_d, f) = temp_file("w.json", 
        br#"{"steps": [{"name": "a", "subtasks": [{"agent": "x"}], "next": [{"step": "b\u200b", "condition": "line one\n\"]; evil"}]},
                      {"name": "b\u200b", "subtasks": [{"agent": "y"}]}]}"#,
    );
    let out = a2aflow(&["graph", &f]);
    assert_exit(&out, 0);
    let m = stdout(&out);
    assert_eq!(m.lines().count(), 4, "{m}");
    assert!(
        m.contains("    s0 -- \"line one\\u{000A}#quot;]; evil\" --> s1\n"),
        "{m}"
    );
    assert!(m.contains("s1[\"b\\u{200B}<br/>"), "{m}");
    // the invisible character is drawn escaped and warned about on stderr
    assert!(
        stderr(&out).contains("workflow.invisible_character"),
        "{}",
        stderr(&out)
    );
}
