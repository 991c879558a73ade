//! The subtask timeline: one bar per task on the run's clock (its events' times), coloured by
//! outcome; in an ANY_SUCCESS step the loser (a task that hangs) is shown cancelled beside the
//! winner it ran with; the bars are buttons reached from the keyboard, and the rows stream in
//! without moving the event table. Times show in the viewer's zone with UTC in their title (the
//! browser is put in Asia/Kolkata, UTC+05:30, so the two differ). A screenshot goes to
//! target/ui-screenshots/timeline.png.

use crate::cdp::{Browser, HANG};
use crate::support::Fixture;
use a2aflow::model::EventTime;
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

/// The bars as the page holds them: step, state, first and last event, their times, and where
/// the bar is drawn (percent of the track).
const BARS: &str = "[...ui.bars.values()].map(b => ({step: b.step, task: b.task, \
     state: b.bar.dataset.state, start: b.start, end: b.end, tStart: b.tStart, tEnd: b.tEnd, \
     left: parseFloat(b.bar.style.left), width: parseFloat(b.bar.style.width)}))";

/// Kolkata's offset from UTC (no daylight saving): local minutes differ from UTC ones.
const KOLKATA_MS: u64 = (5 * 3600 + 30 * 60) * 1000;

/// `HH:MM:SS.mmm` of `ms` (UTC), as an en-GB page writes a time of day.
fn time_of_day(ms: u64) -> String {
    EventTime::from_unix_ms(ms).to_string()[11..23].to_owned()
}

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

/// `axis`: the first and last event's times (the timeline's span).
fn check_race(bars: &Value, axis: (u64, u64)) {
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
    // On the clock: the same order, and the winner's agent slept 0.3 s.
    assert!(n(loser, "tStart") <= n(winner, "tEnd"), "{bars}");
    assert!(n(loser, "tEnd") >= n(winner, "tEnd"), "{bars}");
    assert!(n(after, "tStart") >= n(winner, "tEnd"), "{bars}");
    assert!(n(winner, "tEnd") - n(winner, "tStart") >= 300, "{bars}");
    // Each bar is drawn where its times put it on the run's span.
    let (first, last) = axis;
    let span = (last - first).max(1) as f64;
    for b in bars.as_array().unwrap() {
        let (start, end) = (n(b, "tStart"), n(b, "tEnd"));
        assert!(start >= first && end >= start && end <= last, "{b}");
        let left = b["left"].as_f64().unwrap();
        let width = b["width"].as_f64().unwrap();
        assert!(
            (left - 100.0 * (start - first) as f64 / span).abs() < 0.01,
            "{b}"
        );
        assert!(
            (width - 100.0 * (end - start) as f64 / span).abs() < 0.01,
            "{b}"
        );
    }
}

/// A time cell (`selector`) shows `ms` in Kolkata's zone and its UTC time in its title.
async fn check_time_cell(b: &Browser, selector: &str, ms: u64) {
    let cell = b
        .eval(&format!(
            "(() => {{ const t = document.querySelector('{selector}'); \
             return t && {{text: t.textContent, title: t.title, dateTime: t.dateTime}}; }})()"
        ))
        .await;
    let utc = EventTime::from_unix_ms(ms).to_string();
    assert_eq!(
        cell["text"],
        time_of_day(ms + KOLKATA_MS),
        "{selector}: {cell}"
    );
    assert_eq!(
        cell["title"],
        format!("{} {} UTC", &utc[..10], time_of_day(ms)),
        "{selector}: {cell}"
    );
    assert_eq!(cell["dateTime"], utc, "{selector}: {cell}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeline_shows_the_any_success_loser_cancelled_beside_the_winner() {
    let f = Fixture::start().await;
    let b = Browser::launch().await;
    b.call(
        "Emulation.setTimezoneOverride",
        json!({"timezoneId": "Asia/Kolkata"}),
    )
    .await;
    b.call("Emulation.setLocaleOverride", json!({"locale": "en-GB"}))
        .await;
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
    // Every event has its time; the axis spans them.
    let times = b.eval("ui.events.map(e => e.time)").await;
    let times: Vec<u64> = times
        .as_array()
        .unwrap()
        .iter()
        .map(|t| EventTime::parse(t.as_str().unwrap()).unwrap().unix_ms())
        .collect();
    let (lo, hi) = (*times.iter().min().unwrap(), *times.iter().max().unwrap());
    let bars = b.eval(BARS).await;
    check_race(&bars, (lo, hi));

    // The table shows an event's time in the viewer's zone, UTC on hover.
    b.eval("document.getElementById('events-wrap').scrollTop = 0")
        .await;
    b.wait_for("document.querySelector('#events tbody tr[data-seq=\"0\"]')")
        .await;
    check_time_cell(
        &b,
        "#events tbody tr[data-seq=\"0\"] td:nth-child(2) time",
        times[0],
    )
    .await;
    // The axis's ends are the first and the last event's times.
    check_time_cell(&b, "#timeline-axis time:first-of-type", lo).await;
    check_time_cell(&b, "#timeline-axis time:last-of-type", hi).await;
    let axis = b
        .eval("document.getElementById('timeline-axis').textContent")
        .await;
    assert!(
        axis.as_str()
            .unwrap()
            .ends_with(&format!("({} ms)", hi - lo))
            || axis.as_str().unwrap().contains(" s)"),
        "{axis}"
    );
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
    // The runs list's start: date and time in the viewer's zone, UTC (to the second) on hover.
    let started = b
        .eval("api('/api/runs').then(p => p.runs.find(r => r.executionId === 'race-run').startedAtMs)")
        .await
        .as_u64()
        .unwrap();
    b.eval("location.hash = '#/'").await;
    let cell = b
        .wait_for(
            "(() => { const t = document.querySelector('#runs tr[data-run=\"race-run\"] td:nth-child(4) time'); \
             return t && {text: t.textContent, title: t.title}; })()",
        )
        .await;
    let utc = EventTime::from_unix_ms(started).to_string();
    let local = EventTime::from_unix_ms(started + KOLKATA_MS).to_string();
    assert_eq!(
        cell["title"],
        format!("{} {} UTC", &utc[..10], &utc[11..19]),
        "{cell}"
    );
    assert!(
        cell["text"].as_str().unwrap().ends_with(&local[11..19]),
        "{cell}"
    );
    b.eval("location.hash = '#/run/race-run'").await;
    b.wait_for("ui.ended && ui.pending.length === 0 && !ui.frame")
        .await;
    b.eval("document.getElementById('timeline-title').scrollIntoView()")
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    b.screenshot(&screenshot_path()).await;
    b.close().await;
}
