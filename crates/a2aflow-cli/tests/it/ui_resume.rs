//! `a2aflow ui --agent NAME=URL`: a run whose `run --store` process was killed is resumed from
//! the page's API in the ui process and finishes without its task being sent again; without
//! `--agent` the endpoint says why it cannot resume.

use crate::support::{Agents, agents};
use a2aflow_testkit::Route;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn sends(a: &Agents) -> usize {
    a.server
        .requests()
        .iter()
        .filter(|r| matches!(r.route, Some(Route::Send | Route::Stream)))
        .count()
}

/// One HTTP/1.1 request with the token: the status code and the body as JSON.
fn request(addr: &str, method: &str, path: &str, token: &str) -> (u16, Value) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Content-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

/// Starts `a2aflow ui` with `args`; returns the child, its address and token.
fn start_ui(args: &[&str]) -> (Child, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_a2aflow"))
        .arg("ui")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let rest = line
        .trim()
        .strip_prefix("a2aflow ui: open http://")
        .unwrap_or_else(|| panic!("{line}"));
    let (addr, token) = rest.split_once("/?token=").unwrap();
    (child, addr.to_owned(), token.to_owned())
}

fn stop(mut child: Child) {
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let guard = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < guard, "a2aflow ui did not stop");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
}

/// `run --store` killed (SIGKILL) while its slow task waits at the agent; returns the run's id.
fn killed_run(a: &Agents, dir: &std::path::Path, store: &str, agent: &str) -> String {
    let wf = dir.join("wf.json");
    std::fs::write(
        &wf,
        r#"{"id": "w", "name": "Slow", "steps": [
          {"name": "only", "subtasks": [{"agent": "alpha", "description": "slow 1 then done"}]}]}"#,
    )
    .unwrap();
    let config = dir.join("engine.toml");
    std::fs::write(&config, "store_lease_secs = 0.5\n").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_a2aflow"))
        .args([
            "run",
            wf.to_str().unwrap(),
            "--agent",
            agent,
            "--store",
            store,
        ])
        .args(["--config", config.to_str().unwrap(), "--format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let id = serde_json::from_str::<Value>(&first).unwrap()["executionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let guard = Instant::now() + Duration::from_secs(30);
    while a.server.task_count("alpha") == 0 {
        assert!(Instant::now() < guard, "the task never reached the agent");
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    id
}

#[test]
fn a_killed_run_is_resumed_by_the_ui_process_and_finishes() {
    let a = agents();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db").display().to_string();
    let agent = format!("alpha={}", a.server.card_url("alpha"));
    let id = killed_run(&a, dir.path(), &store, &agent);
    let resume = format!("/api/runs/{id}/resume");

    // Without agents the page cannot resume, and says how to make it.
    let (plain, addr, token) = start_ui(&["--store", &store]);
    let (status, body) = request(&addr, "POST", &resume, &token);
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "config.invalid");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--agent"),
        "{body}"
    );
    stop(plain);

    let (ui, addr, token) = start_ui(&["--store", &store, "--agent", &agent]);
    let guard = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = request(&addr, "POST", &resume, &token);
        if status == 200 {
            assert_eq!(body["resumed"], "live");
            break;
        }
        // Until the killed driver's lease lapses.
        assert_eq!(body["error"]["code"], "store.locked", "{body}");
        assert!(Instant::now() < guard, "the lease never lapsed");
        std::thread::sleep(Duration::from_millis(100));
    }
    let run = loop {
        let (_, run) = request(&addr, "GET", &format!("/api/runs/{id}?facts=false"), &token);
        if run["finished"] == true {
            break run;
        }
        assert!(Instant::now() < guard, "the resumed run never finished");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(run["state"], "succeeded", "{run}");
    assert_eq!(sends(&a), 1, "the task was sent once");
    stop(ui);
}
