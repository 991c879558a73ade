//! What the page must show of a parked run and of a failed task: the runs list's open-gates
//! column counts the gate of a run parked at one (its driver live in this process and holding
//! the lease, so the store lists it `running`), and a failed task's node panel shows its error code and message.

use crate::cdp::{Browser, HANG};
use crate::support::{Fixture, http_get, http_request};
use serde_json::Value;

/// `ask` parks at INPUT_REQUIRED until answered.
const ASK: &str = r#"{"id": "ask", "name": "Ask", "steps": [
  {"name": "ask", "subtasks": [{"agent": "alpha", "description": "input which city"}]}
]}"#;

/// `boom`'s agent fails the task.
const BOOM: &str = r#"{"id": "boom", "name": "Boom", "steps": [
  {"name": "boom", "subtasks": [{"agent": "alpha", "description": "fail on purpose"}]}
]}"#;

const DONE: &str = r#"{"id": "done", "name": "Done", "steps": [
  {"name": "hello", "subtasks": [{"agent": "alpha", "description": "echo hello"}]}
]}"#;

fn cell(run: &str, column: usize) -> String {
    format!("document.querySelector('#runs tr[data-run=\"{run}\"]').children[{column}].textContent")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runs_list_counts_a_parked_runs_open_gate() {
    let f = Fixture::start().await;
    let done = f.start_run("done-run", DONE);
    assert!(
        tokio::time::timeout(HANG, done)
            .await
            .unwrap()
            .unwrap()
            .success
    );
    let parked = f.start_run("parked-run", ASK);
    let opened = async {
        while f.live.board().open_gates("parked-run").is_empty() {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(HANG, opened).await.unwrap();
    let auth = format!("Bearer {}", f.token());
    let h = [("Authorization", auth.as_str())];
    let (status, body) = http_get(&f.addr(), "/api/runs", &h).await;
    assert_eq!(status, 200, "{body}");
    let list: Value = serde_json::from_str(&body).unwrap();
    let gates = |id: &str| {
        list["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["executionId"] == id)
            .map(|r| r["openGates"].clone())
    };
    assert_eq!(gates("parked-run"), Some(1.into()), "{body}");
    assert_eq!(gates("done-run"), Some(0.into()), "{body}");
    let b = Browser::launch().await;
    b.goto(f.ui.url()).await;
    // The list refreshes itself: the gate shows once the run parked.
    b.wait_for(&format!("{} === '1'", cell("parked-run", 5)))
        .await;
    assert_eq!(b.eval(&cell("done-run", 5)).await, "0");
    assert_eq!(b.eval(&cell("done-run", 1)).await, "succeeded");
    let (status, body) = http_request(
        &f.addr(),
        "POST",
        "/api/runs/parked-run/cancel",
        &h,
        "{}",
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let _ = tokio::time::timeout(HANG, parked).await.unwrap();
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_tasks_panel_shows_its_error_code_and_message() {
    let f = Fixture::start().await;
    let run = f.start_run("boom-run", BOOM);
    let result = tokio::time::timeout(HANG, run).await.unwrap().unwrap();
    assert!(!result.success);
    // What the journal says of the task: the panel must show both.
    let auth = format!("Bearer {}", f.token());
    let (status, body) = http_get(
        &f.addr(),
        "/api/runs/boom-run",
        &[("Authorization", auth.as_str())],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let detail: Value = serde_json::from_str(&body).unwrap();
    let task = &detail["tasks"][0];
    let code = task["errorCode"]
        .as_str()
        .expect("a failed task has a code");
    let message = task["error"].as_str().expect("a failed task has a message");
    assert!(message.contains("failed as asked"), "{message}");

    let b = Browser::launch().await;
    b.goto(f.ui.url()).await;
    b.eval("location.hash = '#/run/boom-run'").await;
    b.wait_for("document.querySelector('.node[data-step=\"boom\"]').dataset.state === 'failed'")
        .await;
    b.eval("document.querySelector('.node[data-step=\"boom\"]').dispatchEvent(new MouseEvent('click', {bubbles: true}))")
        .await;
    let panel = b
        .wait_for("document.getElementById('panel').innerText.includes('Error') && document.getElementById('panel').innerText")
        .await;
    let panel = panel.as_str().unwrap();
    assert!(panel.contains("FAILED"), "{panel}");
    assert!(
        panel.contains(&format!("Error\n{code}: {message}")),
        "the error code {code} and message {message} are not in the panel:\n{panel}"
    );
    // The run's failure shows in its header too.
    let meta = b
        .eval("document.getElementById('run-meta').innerText")
        .await;
    assert!(meta.as_str().unwrap().contains("Failure"), "{meta}");
    b.close().await;
}
