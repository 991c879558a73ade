//! `a2aflow serve --auth FILE`: only the listed callers are served (401 otherwise); without
//! `--auth`, a non-loopback `--listen` is refused unless `--allow-unauthenticated`.

use crate::support::{a2aflow_guarded, agents, stderr, temp_file, wait_guarded};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

const WORKFLOW: &str = r#"{"id": "relay-id", "name": "relay", "description": "Relays.",
  "steps": [{ "name": "ask", "subtasks": [{ "agent": "alpha", "description": "task relay" }] }]}"#;

/// A blocking JSON-RPC SendMessage to `url` with `extra` header lines; the status line and body.
fn send(url: &str, extra: &str) -> (String, String) {
    let rest = url.strip_prefix("http://").expect("http url");
    let (authority, path) = rest.split_once('/').expect("a path");
    let mut stream = TcpStream::connect(authority).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hello"}]}}}"#;
    write!(
        stream,
        "POST /{path} HTTP/1.1\r\nHost: {authority}\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\n{extra}Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    (
        head.lines().next().unwrap_or("").to_owned(),
        body.to_owned(),
    )
}

#[test]
fn serve_with_auth_serves_only_the_listed_callers() {
    let a = agents();
    let (dir, workflow) = temp_file("relay.json", WORKFLOW);
    let auth = dir.path().join("callers.toml");
    std::fs::write(
        &auth,
        "[[callers]]\nname = \"alice\"\nbearer = \"env:SERVE_AUTH_TEST_TOKEN\"\n",
    )
    .unwrap();
    let agent = format!("alpha={}", a.server.agent_url("alpha"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_a2aflow"))
        .args([
            "serve",
            "--workflow",
            &workflow,
            "--agent",
            &agent,
            "--auth",
        ])
        .arg(&auth)
        .env("SERVE_AUTH_TEST_TOKEN", "t0ken-of-alice")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines.next().expect("a card line").unwrap();
    let (_, card_url) = line.split_once(' ').expect("NAME CARD_URL");
    let rpc_url = card_url.replace("/.well-known/agent-card.json", "/jsonrpc");
    let (status, body) = send(&rpc_url, "");
    assert!(status.contains(" 401 "), "{status} {body}");
    let (status, body) = send(&rpc_url, "Authorization: Bearer t0ken-of-alice\r\n");
    assert!(status.contains(" 200 "), "{status} {body}");
    assert!(body.contains("TASK_STATE_COMPLETED"), "{body}");
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = wait_guarded(child);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("t0ken-of-alice"),
        "a secret in the log: {}",
        stderr(&out)
    );
}

#[test]
fn serve_without_auth_refuses_a_non_loopback_listen() {
    let a = agents();
    let (_dir, workflow) = temp_file("relay.json", WORKFLOW);
    let agent = format!("alpha={}", a.server.agent_url("alpha"));
    let args = ["serve", "--workflow", &workflow, "--agent", &agent];
    let out = a2aflow_guarded(&[&args[..], &["--listen", "0.0.0.0:0"]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("without authentication"),
        "{}",
        stderr(&out)
    );
}
