//! `a2aflow serve`: a workflow calling a testkit agent, published as an A2A agent; the card
//! line on stdout, a JSON-RPC SendMessage answered with the completed task, SIGTERM → exit 0.

use crate::support::{agents, stderr, temp_file, wait_guarded};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

const WORKFLOW: &str = r#"{
  "id": "relay-id",
  "name": "relay",
  "description": "Relays its input to alpha.",
  "steps": [{ "name": "ask", "subtasks": [{ "agent": "alpha", "description": "task relay" }] }]
}"#;

/// A blocking HTTP/1.1 POST of `body` to `url` (`http://host:port/path`); the response body.
fn post(url: &str, body: &Value) -> String {
    let rest = url.strip_prefix("http://").expect("http url");
    let (authority, path) = rest.split_once('/').expect("a path");
    let mut stream = TcpStream::connect(authority).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let body = body.to_string();
    write!(
        stream,
        "POST /{path} HTTP/1.1\r\nHost: {authority}\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default()
}

#[test]
fn serve_prints_the_card_answers_a_send_and_stops_on_sigterm() {
    let a = agents();
    let (_dir, workflow) = temp_file("relay.json", WORKFLOW);
    let agent = format!("alpha={}", a.server.agent_url("alpha"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_a2aflow"))
        .args(["serve", "--workflow", &workflow, "--agent", &agent])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines.next().expect("a card line").unwrap();
    let (name, card_url) = line.split_once(' ').expect("NAME CARD_URL");
    assert_eq!(name, "relay");
    assert!(
        card_url.ends_with("/agents/relay/.well-known/agent-card.json"),
        "{card_url}"
    );
    let rpc_url = card_url.replace("/.well-known/agent-card.json", "/jsonrpc");
    let answer = post(
        &rpc_url,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
            "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hello"}]}}}),
    );
    let answer: Value = serde_json::from_str(&answer).unwrap_or(Value::Null);
    assert_eq!(
        answer["result"]["task"]["status"]["state"],
        json!("TASK_STATE_COMPLETED"),
        "{answer}"
    );
    assert_eq!(a.server.task_count("alpha"), 1);
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = wait_guarded(child);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn serve_refuses_a_workflow_naming_an_agent_it_was_not_given() {
    let (_dir, workflow) = temp_file("relay.json", WORKFLOW);
    let out = crate::support::a2aflow_guarded(&["serve", "--workflow", &workflow]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("workflow.unknown_agent"),
        "{}",
        stderr(&out)
    );
}
