//! Text from agents never reaches the terminal raw: `card`, `send` and `run` escape control
//! characters and bidirectional overrides in text mode and keep JSON output JSON.

use crate::support::{a2aflow, serve, stdout_json};
use a2aflow_testkit::{AgentSpec, Script, TaskScript, TestServer};

/// Clears the screen, sets the window title, returns the carriage and reverses the text.
const EVIL: &str = "x\u{1b}[2J\u{1b}]0;pwned\u{7}\r\u{9b}31m\u{202e}y";

fn hostile_server() -> (TestServer, tokio::runtime::Runtime) {
    serve(
        TestServer::builder().agent(
            AgentSpec::new("evil")
                .card_patch(|card| {
                    card["name"] = EVIL.into();
                    card["description"] = format!("line one\n{EVIL}").into();
                    card["skills"][0]["id"] = EVIL.into();
                })
                .script(|m| {
                    if m.text().starts_with("task") {
                        TaskScript::new().working().fail(EVIL).into()
                    } else {
                        Script::reply_text(format!("hello\n{EVIL}"))
                    }
                }),
        ),
    )
}

fn assert_safe(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    for bad in ['\u{1b}', '\u{7}', '\r', '\u{9b}', '\u{202e}'] {
        assert!(
            !text.contains(bad),
            "{bad:?} reached the terminal: {text:?}"
        );
    }
}

#[test]
fn card_text_escapes_every_card_field() {
    let (server, _rt) = hostile_server();
    let out = a2aflow(&["card", &server.card_url("evil")]);
    assert_eq!(out.status.code(), Some(0));
    assert_safe(&out.stdout);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("x\\x1b[2J\\x1b]0;pwned\\x07\\x0d\\u{9b}31m\\u{202e}y "),
        "{text}"
    );
    // The description keeps its line break, indented under the card.
    assert!(text.contains("  line one\n  x\\x1b[2J"), "{text}");

    let out = a2aflow(&["card", &server.card_url("evil"), "--format", "json"]);
    assert_safe(&out.stdout);
    let card = stdout_json(&out);
    assert_eq!(card["name"], EVIL, "JSON keeps the value");
}

#[test]
fn send_text_escapes_messages_and_failure_text() {
    let (server, _rt) = hostile_server();
    let out = a2aflow(&["send", &server.card_url("evil"), "echo"]);
    assert_eq!(out.status.code(), Some(0));
    assert_safe(&out.stdout);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("  hello\n  x\\x1b[2J"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = a2aflow(&["send", &server.card_url("evil"), "task", "--stream"]);
    assert_eq!(out.status.code(), Some(1));
    assert_safe(&out.stdout);
    assert_safe(&out.stderr);
    let out = a2aflow(&["send", &server.card_url("evil"), "echo", "--format", "json"]);
    assert_safe(&out.stdout);
    let m = stdout_json(&out);
    assert_eq!(m["parts"][0]["text"], format!("hello\n{EVIL}"));
}

#[test]
fn run_text_escapes_progress_and_the_failure() {
    let (server, _rt) = hostile_server();
    let dir = tempfile::tempdir().unwrap();
    let wf = dir.path().join("wf.json");
    std::fs::write(
        &wf,
        r#"{"steps": [{"name": "s", "subtasks": [{"agent": "a", "description": "task go"}]}]}"#,
    )
    .unwrap();
    let out = a2aflow(&[
        "run",
        &wf.display().to_string(),
        "--agent",
        &format!("a={}", server.card_url("evil")),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_safe(&out.stdout);
    assert_safe(&out.stderr);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("pwned"),
        "the cause is shown, escaped: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}
