//! The subtask timeline: one bar per task on the run's event order, coloured by outcome; in an
//! ANY_SUCCESS step the loser (a task that hangs) is shown cancelled beside the winner it ran
//! with; the bars are buttons reached from the keyboard, and the rows stream in without moving
//! the event table. A screenshot goes to target/ui-screenshots/timeline.png.

use crate::cdp::{Browser, HANG};
use crate::support::Fixture;
use serde_json::{Value, json};
use std::path::PathBuf;

/// `race`: a slow task wins, a hanging one loses; `after` runs once `race` is won.
const RACE: &str = r#"{"id": "race", "name": "A race", "steps": [
  {"name": "race", "type": "ANY_SUCCESS", "subtasks": [
     {"agent": "alpha", "description": "slow 0.3 quick"},
     {"agent": "alpha", "description": "hang until cancelled"}],
   "next": [{"step": "after"}]},
  {"name": "after", "subtasks": [{"agent": "alpha", "description": "task done"}]}
]}"#;

/// The bars as the page holds them: step, state, first and last event.
const BARS: &str = "[...ui.bars.values()].map(b => ({step: b.step, task: b.task, \
     state: b.bar.dataset.state, start: b.start, end: b.end}))";

fn screenshot_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/ui-screenshots/timeline.png")
}

fn events_top() -> &'static str {
    "Math.round(document.getElementById('events-wrap').getBoundingClientRect().top + scrollY)"
}

/// The bars of `step`.
fn of<'a>(bars: &'a Value, step: &str) -> Vec<&'a Value> {
    bars.as_array()
        .unwrap()
        .iter()
        .filter(|b| b["step"] == step)
        .collect()
}

fn check_race(bars: &Value) {
    assert_eq!(bars.as_array().unwrap().len(), 3, "{bars}");
    let race = of(bars, "race");
    let winner = race.iter().find(|b| b["state"] == "succeeded").unwrap();
    let loser = race.iter().find(|b| b["state"] == "cancelled").unwrap();
    let n = |b: &Value, k: &str| b[k].as_u64().unwrap();
    // Both were in flight together; the loser ended once the winner had.
    assert!(n(loser, "start") < n(winner, "end"), "{bars}");
    assert!(n(loser, "end") > n(winner, "end"), "{bars}");
    let after = of(bars, "after")[0];
    assert_eq!(after["state"], "succeeded", "{bars}");
    assert!(n(after, "start") > n(winner, "end"), "{bars}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeline_shows_the_any_success_loser_cancelled_beside_the_winner() {
    let f = Fixture::start().await;
    let b = Browser::launch().await;
    b.goto(f.ui.url()).await;
    let run = f.start_run("race-run", RACE);
    b.eval("location.hash = '#/run/race-run'").await;
    b.wait_for("document.getElementById('run-meta').dataset.state")
        .await;
    let top_before = b.eval(events_top()).await;
    // Every event shown: the stream ended and the last batch was painted (once per frame).
    b.wait_for("ui.ended && ui.pending.length === 0 && !ui.frame")
        .await;
    assert!(
        tokio::time::timeout(HANG, run)
            .await
            .unwrap()
            .unwrap()
            .success
    );
    let bars = b.eval(BARS).await;
    check_race(&bars);
    assert!(
        b.eval("document.getElementById('timeline-empty').hidden")
            .await
            == json!(true)
    );
    assert_eq!(
        b.eval(events_top()).await,
        top_before,
        "the event table moved while the timeline filled"
    );

    // From the keyboard: the loser's bar takes focus, Enter opens its step with the binding.
    let loser = of(&bars, "race")
        .into_iter()
        .find(|b| b["state"] == "cancelled")
        .unwrap()["task"]
        .as_str()
        .unwrap()
        .to_owned();
    let focused = b
        .eval(&format!(
            "(() => {{ const bar = document.querySelector('#timeline li[data-task=\"{loser}\"] .tl-bar'); \
             bar.focus(); return document.activeElement === bar; }})()"
        ))
        .await;
    assert_eq!(focused, true);
    for kind in ["keyDown", "keyUp"] {
        b.call(
            "Input.dispatchKeyEvent",
            json!({"type": kind, "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "text": "\r"}),
        )
        .await;
    }
    let panel = b
        .wait_for(
            "document.getElementById('panel').innerText.includes('Step race') \
             && document.getElementById('panel').innerText",
        )
        .await;
    assert!(
        panel.as_str().unwrap().contains("Binding\nJSONRPC"),
        "{panel}"
    );
    let label = b
        .eval(&format!(
            "document.querySelector('#timeline li[data-task=\"{loser}\"] .tl-bar').getAttribute('aria-label')"
        ))
        .await;
    assert!(label.as_str().unwrap().contains("cancelled"), "{label}");

    // A replay of the finished run draws the same bars.
    b.eval("location.hash = '#/'").await;
    b.eval("location.hash = '#/run/race-run'").await;
    b.wait_for("ui.ended && ui.pending.length === 0 && !ui.frame")
        .await;
    assert_eq!(b.eval(BARS).await, bars);
    b.eval("document.getElementById('timeline-title').scrollIntoView()")
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    b.screenshot(&screenshot_path()).await;
    b.close().await;
}
