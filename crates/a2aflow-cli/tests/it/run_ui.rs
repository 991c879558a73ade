//! `a2aflow run … --ui`: the run page's URL (with its token) is printed on stderr before the
//! run starts and the API answers for that run while it runs; stdout stays the result (with
//! `--store --format json` its first line is still the execution id); the exit code is the
//! run's; without `--store` the temporary store is gone once the command ended.

use crate::support::{agents, wait_guarded};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn workflow(dir: &std::path::Path) -> String {
    let wf = dir.join("wf.json");
    std::fs::write(
        &wf,
        r#"{"id": "w", "name": "Slow", "steps": [
          {"name": "only", "subtasks": [{"agent": "alpha", "description": "slow 1 then done"}]}]}"#,
    )
    .unwrap();
    wf.display().to_string()
}

/// GET `path` with the token: the status code and the body as JSON.
fn get(addr: &str, path: &str, token: &str) -> (u16, Value) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

/// GET `path` until it answers 200 (the URL is printed before the run is journaled).
fn get_ok(addr: &str, path: &str, token: &str) -> Value {
    let guard = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = get(addr, path, token);
        if status == 200 {
            return body;
        }
        assert_eq!(body["error"]["code"], "store.unknown_execution", "{body}");
        assert!(std::time::Instant::now() < guard, "the run never showed");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reads stderr up to the page's line: the address, the token and the run id of its URL; the
/// rest of stderr is drained on a thread (so the child never blocks on it).
fn page_of(child: &mut Child) -> (String, String, String) {
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "no page URL on stderr"
        );
        if let Some(url) = line
            .trim()
            .strip_prefix("a2aflow run: the run page: http://")
        {
            let (addr, rest) = url.split_once("/?token=").unwrap();
            let (token, id) = rest.split_once("#/run/").unwrap();
            std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
            return (addr.to_owned(), token.to_owned(), id.to_owned());
        }
    }
}

#[test]
fn run_ui_serves_the_run_it_drives_and_deletes_its_temporary_store() {
    let a = agents();
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let agent = format!("alpha={}", a.server.card_url("alpha"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_a2aflow"))
        .args([
            "run",
            &workflow(dir.path()),
            "--agent",
            &agent,
            "--ui",
            "--format",
            "json",
        ])
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (addr, token, id) = page_of(&mut child);
    assert_eq!(token.len(), 64);
    let run = get_ok(&addr, &format!("/api/runs/{id}?facts=false"), &token);
    assert_eq!(run["executionId"], id.as_str());
    assert_eq!(run["workflowName"], "Slow");
    let (status, list) = get(&addr, "/api/runs", &token);
    assert_eq!((status, list["runs"].as_array().unwrap().len()), (200, 1));
    let out = wait_guarded(child);
    assert_eq!(out.status.code(), Some(0));
    // stdout is the result alone: one JSON document, the run the page showed.
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["success"], true, "{result}");
    assert_eq!(result["executionId"], id.as_str());
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(
        left.is_empty(),
        "the temporary store is still there: {left:?}"
    );
    assert!(
        std::net::TcpStream::connect(&addr).is_err(),
        "the page stopped with the run"
    );
}

#[test]
fn run_ui_with_a_store_keeps_the_first_line_contract() {
    let a = agents();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db").display().to_string();
    let agent = format!("alpha={}", a.server.card_url("alpha"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_a2aflow"))
        .args([
            "run",
            &workflow(dir.path()),
            "--agent",
            &agent,
            "--store",
            &store,
        ])
        .args(["--ui", "--format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (addr, token, id) = page_of(&mut child);
    get_ok(&addr, &format!("/api/runs/{id}"), &token);
    let out = wait_guarded(child);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let (first, rest) = stdout.split_once('\n').unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(first).unwrap()["executionId"],
        id.as_str()
    );
    let result: Value = serde_json::from_str(rest).unwrap();
    assert_eq!(result["executionId"], id.as_str());
    assert!(std::path::Path::new(&store).exists(), "a --store is kept");
}
