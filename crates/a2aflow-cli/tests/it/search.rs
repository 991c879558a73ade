//! `a2aflow search --orchestrator URL INTENT`: a fake orchestration centre (a minimal HTTP/1.1
//! responder) answers `POST /api/v1/orchestrate/search`; the test checks what was asked, with which
//! header, and what the binary printed and exited with.

use crate::support::{Seen, assert_exit, read_request, reply_json};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

struct Centre {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    _rt: tokio::runtime::Runtime,
}

fn results() -> Value {
    json!([
        {"workflow_id": "wf-incident", "name": "Incident diagnosis", "description": "cross-city",
         "score": 0.93, "user_intent": "slow mobile data", "tasks_summary": "diagnose, correlate"},
        {"id": "wf-backup", "name": "Backup check", "score": 0.41},
        {"workflow_id": "wf-extra", "name": "Beyond top", "score": 0.1}
    ])
}

/// Answers the search path with `status` and `body`; anything else is 404. One request per
/// connection; the body is read by its content-length.
async fn serve(
    listener: tokio::net::TcpListener,
    status: &'static str,
    body: Value,
    seen: Arc<Mutex<Vec<Seen>>>,
) {
    loop {
        let Ok((mut s, _)) = listener.accept().await else {
            return;
        };
        let seen = seen.clone();
        let body = body.clone();
        tokio::spawn(async move {
            let Some(request) = read_request(&mut s).await else {
                return;
            };
            let line = request.line.clone();
            seen.lock().unwrap().push(request);
            let (status, text) = if line == "POST /api/v1/orchestrate/search HTTP/1.1" {
                (status, body.to_string())
            } else {
                ("404 Not Found", "{}".to_owned())
            };
            reply_json(&mut s, status, &text).await;
        });
    }
}

fn centre(status: &'static str, body: Value) -> Centre {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let url = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(serve(listener, status, body, seen.clone()));
        url
    });
    Centre { url, seen, _rt: rt }
}

fn a2aflow(args: &[&str], token: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2aflow"));
    cmd.args(args).env_remove("A2AFLOW_ORCHESTRATOR_TOKEN");
    if let Some(t) = token {
        cmd.env("A2AFLOW_ORCHESTRATOR_TOKEN", t);
    }
    cmd.output().expect("run a2aflow")
}

#[test]
fn search_posts_the_intent_with_the_header_token_and_prints_json() {
    let c = centre("200 OK", json!({ "data": results() }));
    let out = a2aflow(
        &[
            "search",
            "--orchestrator",
            &format!("{}/", c.url),
            "slow mobile data in two cities",
            "--top",
            "2",
            "--format",
            "json",
        ],
        Some("orch/=1"),
    );
    assert_exit(&out, 0);
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = printed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["workflow_id"].as_str().unwrap())
        .collect();
    // The centre answered three for top 2: the third is cut.
    assert_eq!(ids, ["wf-incident", "wf-backup"]);
    assert_eq!(printed[0]["score"], 0.93);
    assert_eq!(printed[1]["score"], 0.41);
    let seen = c.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].line, "POST /api/v1/orchestrate/search HTTP/1.1");
    assert_eq!(seen[0].authorization.as_deref(), Some("Bearer orch/=1"));
    assert_eq!(
        seen[0].body,
        json!({"intent": "slow mobile data in two cities", "top_n": 2})
    );
}

#[test]
fn search_prints_text_lines_and_sends_no_authorization_without_a_token() {
    let c = centre("200 OK", json!({ "data": results() }));
    let out = a2aflow(&["search", "--orchestrator", &c.url, "incident"], None);
    assert_exit(&out, 0);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0],
        "0.93  wf-incident  Incident diagnosis — cross-city"
    );
    assert_eq!(lines[1], "      intent: slow mobile data");
    assert_eq!(lines[2], "      tasks: diagnose, correlate");
    assert_eq!(lines[3], "0.41  wf-backup    Backup check");
    assert_eq!(lines[4], "0.10  wf-extra     Beyond top");
    assert_eq!(lines.len(), 5);
    let seen = c.seen.lock().unwrap().clone();
    assert_eq!(seen[0].authorization, None);
    assert_eq!(seen[0].body["top_n"], 5, "the default --top");
}

#[test]
fn an_empty_answer_is_no_workflow_found_and_exit_0() {
    let c = centre("200 OK", json!({ "data": [] }));
    let out = a2aflow(&["search", "--orchestrator", &c.url, "nothing"], None);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "no workflow found\n");
}

#[test]
fn a_rejected_token_exits_1_with_its_code() {
    let c = centre("401 Unauthorized", json!({"error": "bad token"}));
    let out = a2aflow(&["search", "--orchestrator", &c.url, "x"], Some("wrong"));
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[auth.rejected]"), "{stderr}");
    assert!(
        !stderr.contains("wrong"),
        "the token must not be printed: {stderr}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn a_server_error_exits_1_with_the_http_status_code() {
    let c = centre("500 Internal Server Error", json!({}));
    let out = a2aflow(&["search", "--orchestrator", &c.url, "x"], None);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[a2a.http_status]"), "{stderr}");
}

#[test]
fn an_unreachable_centre_exits_1_with_a2a_connection() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port(); // free once the listener is dropped at the end of this statement
    let out = a2aflow(
        &[
            "search",
            "--orchestrator",
            &format!("http://127.0.0.1:{port}"),
            "x",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[a2a.connection]"), "{stderr}");
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &[
            "search",
            "--orchestrator",
            "http://127.0.0.1:9",
            "x",
            "--top",
            "0",
        ][..],
        &[
            "search",
            "--orchestrator",
            "http://127.0.0.1:9",
            "x",
            "--top",
            "101",
        ][..],
        &["search", "x"][..],
        &["search", "--orchestrator", "http://127.0.0.1:9", "  "][..],
        &["search", "--orchestrator", "not a url", "x"][..],
    ] {
        let out = a2aflow(args, None);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
