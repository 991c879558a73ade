//! The JSON API without a browser: the token on every request, the answers to bad input, the
//! runs list's paging and filter, and an event stream resumed after a cut.

use crate::support::{Fixture, http_get, http_request};
use a2aflow::model::ErrorCode;
use a2aflow_ui::{Ui, UiError};
use serde_json::Value;
use std::time::Duration;

const TWO_STEPS: &str = r#"{"id": "two", "name": "Two steps", "steps": [
  {"name": "first", "subtasks": [{"agent": "alpha", "description": "task hello"}],
   "next": [{"step": "second"}]},
  {"name": "second", "subtasks": [{"agent": "alpha", "description": "echo bye"}]}
]}"#;

async fn finished_run(f: &Fixture, id: &str) {
    let r = tokio::time::timeout(crate::cdp::HANG, f.start_run(id, TWO_STEPS))
        .await
        .unwrap()
        .unwrap();
    assert!(r.success, "{:#?}", r.failure);
}

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

#[tokio::test]
async fn a_missing_or_wrong_token_gets_401_and_no_data() {
    let f = Fixture::start().await;
    finished_run(&f, "secret-run").await;
    let addr = f.addr();
    let good = format!("Bearer {}", f.token());
    let wrong = format!("Bearer {}", "0".repeat(64));
    let wrong_cookie = format!("a2aflow_ui_{}={}", f.ui.local_addr().port(), "f".repeat(64));
    let short = format!("Bearer {}", &f.token()[..63]);
    let refused: [(&str, Vec<(&str, &str)>); 5] = [
        ("/api/runs", vec![]),
        ("/api/runs", vec![("Authorization", wrong.as_str())]),
        ("/api/runs", vec![("Authorization", short.as_str())]),
        (
            "/api/runs/secret-run",
            vec![("Cookie", wrong_cookie.as_str())],
        ),
        ("/api/runs?token=abc", vec![]),
    ];
    for (path, headers) in refused {
        let (status, body) = http_get(&addr, path, &headers).await;
        assert_eq!(status, 401, "{path} {headers:?}");
        assert!(
            !body.contains("secret-run") && !body.contains("Two steps"),
            "{body}"
        );
    }
    for path in ["/", "/app.js", "/app.css", "/api/runs/secret-run/events"] {
        assert_eq!(http_get(&addr, path, &[]).await.0, 401, "{path}");
    }
    let (status, body) = http_request(
        &addr,
        "POST",
        "/api/runs/secret-run/cancel",
        &[],
        "{}",
        None,
    )
    .await;
    assert_eq!(status, 401, "{body}");
    // The right token, as a header, a cookie or in the query, gets the data.
    let (status, body) = http_get(&addr, "/api/runs", &[("Authorization", good.as_str())]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(json(&body)["runs"][0]["executionId"], "secret-run");
    let cookie = format!("a2aflow_ui_{}={}", f.ui.local_addr().port(), f.token());
    let (status, _) = http_get(
        &addr,
        "/api/runs/secret-run",
        &[("Cookie", cookie.as_str())],
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = http_get(&addr, &format!("/api/runs?token={}", f.token()), &[]).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn the_printed_url_sets_the_cookie_and_sends_the_browser_to_the_page() {
    let f = Fixture::start().await;
    let path = f.ui.url().split_once(&f.addr()).unwrap().1.to_owned();
    let mut stream = tokio::net::TcpStream::connect(f.addr()).await.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut raw = String::new();
    tokio::time::timeout(crate::cdp::HANG, stream.read_to_string(&mut raw))
        .await
        .unwrap()
        .unwrap();
    assert!(raw.starts_with("HTTP/1.1 303"), "{raw}");
    let cookie = format!(
        "a2aflow_ui_{}={}; Path=/; HttpOnly; SameSite=Strict",
        f.ui.local_addr().port(),
        f.token()
    );
    assert!(
        raw.to_ascii_lowercase()
            .contains(&format!("set-cookie: {}", cookie.to_ascii_lowercase())),
        "{raw}"
    );
    assert!(
        raw.to_ascii_lowercase().contains("location: /\r\n"),
        "{raw}"
    );
    assert!(
        f.ui.url().starts_with("http://127.0.0.1:"),
        "{}",
        f.ui.url()
    );
    assert_eq!(f.token().len(), 64);
}

#[tokio::test]
async fn an_unknown_run_and_bad_parameters_get_their_codes() {
    let f = Fixture::start().await;
    let addr = f.addr();
    let auth = format!("Bearer {}", f.token());
    let h = [("Authorization", auth.as_str())];
    for path in ["/api/runs/nope", "/api/runs/nope/events"] {
        let (status, body) = http_get(&addr, path, &h).await;
        assert_eq!(status, 404, "{path}: {body}");
        assert_eq!(json(&body)["error"]["code"], "store.unknown_execution");
    }
    let (status, body) = http_request(&addr, "POST", "/api/runs/nope/cancel", &h, "{}", None).await;
    assert_eq!(
        (status, json(&body)["error"]["code"].clone()),
        (404, "store.unknown_execution".into())
    );
    for path in [
        "/api/runs?state=bogus",
        "/api/runs?limit=ten",
        "/api/runs?offset=-1",
    ] {
        let (status, body) = http_get(&addr, path, &h).await;
        assert_eq!(status, 400, "{path}: {body}");
        assert_eq!(json(&body)["error"]["code"], "config.invalid", "{body}");
    }
    finished_run(&f, "done").await;
    let (status, body) = http_request(&addr, "POST", "/api/runs/done/cancel", &h, "{}", None).await;
    assert_eq!(
        (status, json(&body)["error"]["code"].clone()),
        (409, "store.invalid_append".into())
    );
    let (status, body) = http_request(
        &addr,
        "POST",
        "/api/runs/done/gates/t/answer",
        &h,
        r#"{"text": "x"}"#,
        None,
    )
    .await;
    assert_eq!(
        (status, json(&body)["error"]["code"].clone()),
        (409, "workflow.gate_not_open".into())
    );
    let (status, body) = http_request(
        &addr,
        "POST",
        "/api/runs/done/gates/t/answer",
        &h,
        "not json",
        None,
    )
    .await;
    assert_eq!(
        (status, json(&body)["error"]["code"].clone()),
        (400, "config.invalid".into())
    );
    let (status, _) = http_get(&addr, "/api/elsewhere", &h).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn the_runs_list_is_newest_first_paged_and_filtered_by_state() {
    let f = Fixture::start().await;
    for id in ["r1", "r2", "r3"] {
        finished_run(&f, id).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let auth = format!("Bearer {}", f.token());
    let h = [("Authorization", auth.as_str())];
    let page = json(&http_get(&f.addr(), "/api/runs?limit=2", &h).await.1);
    let ids: Vec<&str> = page["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["executionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["r3", "r2"]);
    assert_eq!(page["more"], true);
    let page = json(
        &http_get(&f.addr(), "/api/runs?limit=2&offset=2", &h)
            .await
            .1,
    );
    assert_eq!(page["runs"][0]["executionId"], "r1");
    assert_eq!(page["more"], false);
    assert_eq!(page["runs"][0]["state"], "succeeded");
    assert_eq!(page["runs"][0]["workflowName"], "Two steps");
    let failed = json(&http_get(&f.addr(), "/api/runs?state=failed", &h).await.1);
    assert_eq!(failed["runs"].as_array().unwrap().len(), 0);
    // One run: its view, its drawing and what its events tell.
    let run = json(&http_get(&f.addr(), "/api/runs/r1", &h).await.1);
    assert_eq!(run["state"], "succeeded");
    assert_eq!(run["graph"]["nodes"][1]["name"], "second");
    assert_eq!(run["graph"]["nodes"][1]["layer"], 1);
    assert_eq!(run["graph"]["edges"][0]["from"], "first");
    let task = &run["tasks"][0];
    assert_eq!(task["agent"], "alpha");
    assert!(
        task["contextId"].is_string() && task["remoteTaskId"].is_string(),
        "{task}"
    );
    let facts = &run["taskFacts"][task["localTaskId"].as_str().unwrap()];
    assert_eq!(facts["artifacts"][0], "result", "{run}");
}

/// The `id:` values of an event stream's text.
fn ids(stream: &str) -> Vec<u64> {
    stream
        .lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .map(|n| n.parse().unwrap())
        .collect()
}

#[tokio::test]
async fn a_cut_event_stream_resumes_after_its_last_event_id() {
    let f = Fixture::start().await;
    finished_run(&f, "s").await;
    let auth = format!("Bearer {}", f.token());
    let (status, whole) = http_get(
        &f.addr(),
        "/api/runs/s/events",
        &[("Authorization", auth.as_str())],
    )
    .await;
    assert_eq!(status, 200);
    let all = ids(&whole);
    assert!(all.len() > 5, "{whole}");
    assert_eq!(all, (0..all.len() as u64).collect::<Vec<_>>());
    assert!(
        whole.contains("event: run\n") && whole.trim_end().ends_with("event: end\ndata: {}"),
        "{whole}"
    );
    // Each event is the stored one, its time included, unchanged.
    let stored = f.store.events("s", None, 1000).await.unwrap();
    let sent: Vec<Value> = whole
        .split("\n\n")
        .filter(|m| m.starts_with("id: "))
        .map(|m| json(m.split_once("\ndata: ").unwrap().1))
        .collect();
    assert_eq!(sent.len(), stored.len());
    for (sent, stored) in sent.iter().zip(&stored) {
        assert!(stored.time.is_some(), "{sent}");
        assert_eq!(*sent, serde_json::to_value(stored).unwrap());
    }
    // A client cut after event 3 comes back with Last-Event-ID: 3 and gets the rest, once.
    let (_, rest) = http_get(
        &f.addr(),
        "/api/runs/s/events",
        &[("Authorization", auth.as_str()), ("Last-Event-ID", "3")],
    )
    .await;
    assert_eq!(ids(&rest), all[4..].to_vec());
    let (status, body) = http_get(
        &f.addr(),
        "/api/runs/s/events?after=x",
        &[("Authorization", auth.as_str())],
    )
    .await;
    assert_eq!(
        (status, json(&body)["error"]["code"].clone()),
        (400, "config.invalid".into())
    );
}

/// `ask` parks at INPUT_REQUIRED until answered.
const ASK: &str = r#"{"id": "ask", "name": "Ask", "steps": [
  {"name": "ask", "subtasks": [{"agent": "alpha", "description": "input which city"}]}
]}"#;

#[tokio::test]
async fn a_gate_declined_through_the_api_fails_its_task_with_the_code_given() {
    let f = Fixture::start().await;
    let run = f.start_run("decline-run", ASK);
    let auth = format!("Bearer {}", f.token());
    let h = [("Authorization", auth.as_str())];
    let task = tokio::time::timeout(crate::cdp::HANG, async {
        loop {
            let (_, body) = http_get(&f.addr(), "/api/runs/decline-run", &h).await;
            if let Ok(v) = serde_json::from_str::<Value>(&body)
                && let Some(task) = v["openGates"][0]["localTaskId"].as_str()
            {
                return task.to_owned();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the gate opens");
    let path = format!("/api/runs/decline-run/gates/{task}/decline");
    let body = r#"{"reason": "not today", "code": "ui.not_today"}"#;
    let (status, answer) = http_request(&f.addr(), "POST", &path, &h, body, None).await;
    assert_eq!(
        (status, json(&answer)["delivered"].clone()),
        (200, "live".into()),
        "{answer}"
    );
    let r = tokio::time::timeout(crate::cdp::HANG, run)
        .await
        .unwrap()
        .unwrap();
    assert!(!r.success);
    let (_, view) = http_get(&f.addr(), "/api/runs/decline-run?facts=false", &h).await;
    let view = json(&view);
    assert_eq!(view["state"], "failed", "{view}");
    assert_eq!(view["tasks"][0]["errorCode"], "ui.not_today", "{view}");
    assert!(
        view["tasks"][0]["error"]
            .as_str()
            .unwrap()
            .contains("not today"),
        "{view}"
    );
    // The gate is closed now.
    let (status, again) = http_request(&f.addr(), "POST", &path, &h, body, None).await;
    assert_eq!(status, 409, "{again}");
    assert_eq!(json(&again)["error"]["code"], "workflow.gate_not_open");
}

#[tokio::test]
async fn a_listen_address_beyond_loopback_is_refused_unless_allowed() {
    let f = Fixture::start().await;
    let addr = "0.0.0.0:0".parse().unwrap();
    let err = Ui::builder(f.store.clone())
        .listen(addr)
        .bind()
        .await
        .unwrap_err();
    assert!(matches!(err, UiError::NotLoopback { .. }), "{err}");
    assert_eq!(err.code(), ErrorCode::ConfigInvalid);
    let allowed = Ui::builder(f.store.clone())
        .listen(addr)
        .allow_remote(true)
        .bind()
        .await
        .unwrap();
    assert!(allowed.local_addr().ip().is_unspecified());
    allowed.shutdown().await;
    // The page's own shutdown ends a stream that follows a live run, and the listener closes.
    let stop = f.ui.local_addr();
    f.ui.shutdown().await;
    assert!(tokio::net::TcpStream::connect(stop).await.is_err());
}

#[tokio::test]
async fn a_running_runs_answer_is_read_afresh_and_a_finished_ones_stays() {
    let f = Fixture::start().await;
    let run = f.start_run("fresh-run", ASK);
    let auth = format!("Bearer {}", f.token());
    let h = [("Authorization", auth.as_str())];
    let path = "/api/runs/fresh-run?facts=false";
    // Asked for while it runs, then while it waits at its gate: each answer is the run as it
    // stands, never an earlier one kept.
    let task = tokio::time::timeout(crate::cdp::HANG, async {
        loop {
            let (_, body) = http_get(&f.addr(), path, &h).await;
            let v = json(&body);
            assert_eq!(v["finished"], false, "{v}");
            if let Some(task) = v["openGates"][0]["localTaskId"].as_str() {
                assert_eq!(v["state"], "waiting", "{v}");
                return task.to_owned();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the gate opens");
    let answer = format!("/api/runs/fresh-run/gates/{task}/answer");
    let (status, body) =
        http_request(&f.addr(), "POST", &answer, &h, r#"{"text": "Paris"}"#, None).await;
    assert_eq!(status, 200, "{body}");
    let r = tokio::time::timeout(crate::cdp::HANG, run)
        .await
        .unwrap()
        .unwrap();
    assert!(r.success, "{:#?}", r.failure);
    let (_, done) = http_get(&f.addr(), path, &h).await;
    let v = json(&done);
    assert_eq!(
        (v["state"].clone(), v["finished"].clone()),
        ("succeeded".into(), true.into()),
        "{v}"
    );
    assert!(v.get("openGates").is_none(), "{v}");
    assert_eq!(v["tasks"][0]["status"], "COMPLETED", "{v}");
    // Asked again, the finished run's answer is the same; with its facts, the same view.
    let (_, again) = http_get(&f.addr(), path, &h).await;
    assert_eq!(again, done);
    let (_, with_facts) = http_get(&f.addr(), "/api/runs/fresh-run", &h).await;
    let mut with_facts = json(&with_facts);
    assert!(with_facts["taskFacts"].is_object(), "{with_facts}");
    with_facts.as_object_mut().unwrap().remove("taskFacts");
    assert_eq!(with_facts, v);
}
