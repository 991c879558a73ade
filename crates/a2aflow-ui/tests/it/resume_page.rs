//! Resuming from the page: a run whose driver was dropped mid-run (its lease left to lapse) is
//! offered "Resume run", resumed in the page's process and finishes; a run with a live driver
//! answers `store.locked`, a finished one `store.invalid_append`; a page without a resumer
//! offers no button and its endpoint says why.

use crate::cdp::{Browser, HANG};
use crate::support::{Fixture, http_get, http_request};
use a2aflow::get_execution;
use a2aflow_testkit::Route;
use serde_json::Value;
use std::time::Duration;

/// `second` takes a few seconds at the agent: long enough to drop the driver while it waits.
const TWO: &str = r#"{"id": "two", "name": "Two steps", "steps": [
  {"name": "first", "subtasks": [{"agent": "alpha", "description": "task hello"}],
   "next": [{"step": "second"}]},
  {"name": "second", "subtasks": [{"agent": "alpha", "description": "slow 2 later"}]}
]}"#;

const HANGING: &str = r#"{"id": "hang", "name": "Hangs", "steps": [
  {"name": "only", "subtasks": [{"agent": "alpha", "description": "hang until cancelled"}]}
]}"#;

/// Waits until run `id`'s task of `step` has a remote task.
async fn wait_remote_task(f: &Fixture, id: &str, step: &str) {
    let wait = async {
        loop {
            if let Ok(view) = get_execution(f.store.as_ref(), id).await
                && view
                    .tasks
                    .iter()
                    .any(|t| t.step.as_deref() == Some(step) && t.remote_task_id.is_some())
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(HANG, wait).await.unwrap();
}

async fn post_resume(f: &Fixture, id: &str) -> (u16, Value) {
    let auth = format!("Bearer {}", f.token());
    let path = format!("/api/runs/{id}/resume");
    let (status, body) = http_request(
        &f.addr(),
        "POST",
        &path,
        &[("Authorization", &auth)],
        "",
        None,
    )
    .await;
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

async fn run_json(f: &Fixture, id: &str) -> Value {
    let auth = format!("Bearer {}", f.token());
    let path = format!("/api/runs/{id}?facts=false");
    let body = http_get(&f.addr(), &path, &[("Authorization", &auth)])
        .await
        .1;
    serde_json::from_str(&body).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_with_a_live_driver_or_finished_is_not_resumed() {
    let f = Fixture::resuming(Duration::from_secs(1)).await;
    let held = f.start_driver("held", HANGING);
    wait_remote_task(&f, "held", "only").await;
    let (status, body) = post_resume(&f, "held").await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (409, &"store.locked".into()),
        "{body}"
    );
    assert!(run_json(&f, "held").await.get("resumable").is_none());
    held.abort();

    let done = f.start_run("done", TWO);
    assert!(
        tokio::time::timeout(HANG, done)
            .await
            .unwrap()
            .unwrap()
            .success
    );
    let (status, body) = post_resume(&f, "done").await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "store.invalid_append", "{body}");
    let (status, body) = post_resume(&f, "no-such-run").await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (404, &"store.unknown_execution".into())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_without_a_resumer_says_why_it_cannot_resume() {
    let f = Fixture::start().await;
    let driver = f.start_driver("orphan", HANGING);
    wait_remote_task(&f, "orphan", "only").await;
    driver.abort();
    let (status, body) = post_resume(&f, "orphan").await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "config.invalid");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("--agent NAME=URL"), "{message}");
    assert!(run_json(&f, "orphan").await.get("resumable").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_driver_was_dropped_is_resumed_from_the_page_and_finishes() {
    let f = Fixture::resuming(Duration::from_secs(1)).await;
    let driver = f.start_driver("orphan", TWO);
    wait_remote_task(&f, "orphan", "second").await;
    // The driver goes away mid-run without releasing its lease (as a host that died).
    driver.abort();
    assert!(driver.await.unwrap_err().is_cancelled());

    let b = Browser::launch().await;
    b.goto(f.ui.url()).await;
    b.eval("location.hash = '#/run/orphan'").await;
    b.wait_for(
        "document.querySelector('.node[data-step=\"first\"]').dataset.state === 'succeeded'",
    )
    .await;
    // Offered once the lease lapsed (at most a second).
    b.wait_for("!document.getElementById('resume').hidden")
        .await;
    b.eval("document.getElementById('resume').click()").await;
    b.wait_for("document.getElementById('run-meta').dataset.state === 'succeeded'")
        .await;
    b.wait_for(
        "document.querySelector('.node[data-step=\"second\"]').dataset.state === 'succeeded'",
    )
    .await;
    assert_eq!(
        b.eval("document.getElementById('resume').hidden").await,
        true
    );
    assert_eq!(
        b.eval("document.getElementById('status').textContent")
            .await,
        ""
    );
    // The resumed run found its remote task again instead of sending the message twice.
    let sends = f
        .server
        .requests()
        .iter()
        .filter(|r| matches!(r.route, Some(Route::Send | Route::Stream)))
        .count();
    assert_eq!(sends, 2, "one send per task");
    b.close().await;
}
