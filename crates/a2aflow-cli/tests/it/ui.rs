//! `a2aflow ui`: a missing store and a listen address beyond loopback are refused (exit 2); on
//! a store it prints the URL with the token, answers only with it, and exits 0 on SIGTERM.

use crate::support::a2aflow;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn store_file(dir: &tempfile::TempDir) -> String {
    let path = dir.path().join("runs.db");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        drop(
            a2aflow::store_sqlite::SqliteStore::open(&path)
                .await
                .unwrap(),
        )
    });
    path.to_string_lossy().into_owned()
}

#[test]
fn a_missing_store_is_store_unavailable_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nothing.db");
    let out = a2aflow(&["ui", "--store", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("store.unavailable"), "{stderr}");
    assert!(out.stdout.is_empty());
    assert!(!missing.exists(), "nothing was created");
}

#[test]
fn a_listen_address_beyond_loopback_needs_allow_remote() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_file(&dir);
    let out = a2aflow(&["ui", "--store", &store, "--listen", "0.0.0.0:0"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("config.invalid") && stderr.contains("--allow-remote"),
        "{stderr}"
    );
}

/// One HTTP/1.1 GET over a fresh connection: the status line and the body.
fn get(addr: &str, path: &str, auth: Option<&str>) -> (String, String) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let auth = auth
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}

#[test]
fn it_prints_the_url_with_the_token_serves_with_it_only_and_exits_0_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_file(&dir);
    let mut child = Command::new(env!("CARGO_BIN_EXE_a2aflow"))
        .args(["ui", "--store", &store])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("a2aflow ui: open ")
        .unwrap_or_else(|| panic!("{line}"));
    let rest = url.strip_prefix("http://127.0.0.1:").unwrap();
    let (port, token) = rest.split_once("/?token=").unwrap();
    let addr = format!("127.0.0.1:{port}");
    assert_eq!(token.len(), 64);
    let (status, body) = get(&addr, "/api/runs", Some(token));
    assert!(status.contains(" 200 "), "{status}");
    assert!(body.contains("\"runs\":[]"), "{body}");
    let (status, body) = get(&addr, "/api/runs", None);
    assert!(status.contains(" 401 "), "{status}");
    assert!(!body.contains("runs\""), "{body}");
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "a2aflow ui did not stop"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
}
