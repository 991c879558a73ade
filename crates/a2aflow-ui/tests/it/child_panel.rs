//! The node panel of a delegating step shows the child workflow's tasks, which only the events
//! tell (child runs are not journaled): each with its agent, binding, status, Negotiation-T
//! rounds and artifacts. A screenshot goes to target/ui-screenshots/child-panel.png.

use crate::cdp::{Browser, HANG};
use crate::support::Fixture;
use a2aflow::kernel::StaticCatalog;
use a2aflow::model::{LoadOptions, load_workflow_str};
use std::sync::Arc;

const CHILD: &str = r#"{"id": "review", "name": "Review", "callableBy": ["parent"], "steps": [
  {"name": "read", "subtasks": [{"agent": "alpha", "description": "task read it"}]}
]}"#;

const PARENT: &str = r#"{"id": "parent", "name": "Delegates", "steps": [
  {"name": "check", "subtasks": [{"workflow": "review", "description": "review the release"}]}
]}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_panel_of_a_delegating_step_shows_the_child_runs_tasks() {
    let f = Fixture::start().await;
    let child = load_workflow_str(CHILD, LoadOptions::STRICT)
        .unwrap()
        .workflow;
    let catalog = Arc::new(StaticCatalog::new().with(child));
    let run = f.start_run_edited("parent-run", PARENT, |o| {
        o.workflow_catalog = Some(catalog);
    });
    let result = tokio::time::timeout(HANG, run).await.unwrap().unwrap();
    assert!(result.success, "{:#?}", result.failure);
    let b = Browser::launch().await;
    b.goto(f.ui.url()).await;
    b.eval("location.hash = '#/run/parent-run'").await;
    b.wait_for("ui.ended && ui.pending.length === 0 && !ui.frame")
        .await;
    b.eval("document.querySelector('.node[data-step=\"check\"]').dispatchEvent(new MouseEvent('click', {bubbles: true}))")
        .await;
    let child = b
        .wait_for("document.querySelector('#panel .child-run dl') && document.querySelector('#panel .child-run').innerText")
        .await;
    let child = child.as_str().unwrap();
    for needle in [
        "Child run ",
        "Step\nread",
        "Agent\nalpha",
        "Binding\nJSONRPC",
        "Status\nCOMPLETED",
        "Negotiation rounds\n0",
        "Artifacts\nresult",
    ] {
        assert!(
            child.contains(needle),
            "{needle} not in the child's part:\n{child}"
        );
    }
    // The child's task is a bar of the timeline too, marked as a child's.
    let label = b
        .eval("[...document.querySelectorAll('#timeline .tl-label')].map(l => l.textContent).join('|')")
        .await;
    assert!(
        label.as_str().unwrap().contains("child 1 · read"),
        "{label}"
    );
    let shot = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/ui-screenshots/child-panel.png");
    b.screenshot(&shot).await;
    b.close().await;
}
