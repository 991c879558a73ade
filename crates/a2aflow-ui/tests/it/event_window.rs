//! The event table of a run with more than 10,000 events holds only the rows near its view:
//! the scroll height is every matching row's, scrolling to the middle shows the events there,
//! and a filter windows the matching rows alone.

use crate::browser::chains;
use crate::cdp::Browser;
use crate::support::Fixture;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_of_ten_thousand_events_keeps_a_small_table() {
    crate::cdp::chromium();
    let f = Fixture::start().await;
    let run = f.start_run("wide-run", &chains(20, 60));
    let r = tokio::time::timeout(Duration::from_secs(600), run)
        .await
        .unwrap()
        .unwrap();
    assert!(r.success, "{:#?}", r.failure);
    let b = Browser::launch().await;
    b.goto(f.ui.url()).await;
    b.eval("location.hash = '#/run/wide-run'").await;
    let events = b
        .wait_for("ui.ended && ui.pending.length === 0 && !ui.frame && ui.events.length")
        .await
        .as_u64()
        .unwrap();
    assert!(events > 10_000, "{events} events");
    let rows = b
        .eval("document.querySelectorAll('#events tbody tr').length")
        .await
        .as_u64()
        .unwrap();
    assert!(rows > 0 && rows < 400, "{rows} rows in the table");
    let row_h = b.eval("ui.rowH").await.as_f64().unwrap();
    let height = b
        .eval("document.getElementById('events-wrap').scrollHeight")
        .await
        .as_f64()
        .unwrap();
    assert!(
        height >= 0.95 * events as f64 * row_h,
        "{height} for {events} rows of {row_h}"
    );

    // The middle: the rows there are the events there.
    b.eval(&format!(
        "document.getElementById('events-wrap').scrollTop = 5000 * {row_h}"
    ))
    .await;
    let seqs = b
        .wait_for(
            "(() => { const s = [...document.querySelectorAll('#events tbody tr')].map(r => Number(r.dataset.seq)); \
             return s.length && s[0] <= 5000 && s[s.length - 1] >= 5000 && s; })()",
        )
        .await;
    let seqs: Vec<u64> = serde_json::from_value(seqs).unwrap();
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "the rows are consecutive"
    );

    // One step: only its events, windowed the same way.
    b.eval("(() => { const s = document.getElementById('step-filter'); s.value = 'c3s30'; s.dispatchEvent(new Event('change')); })()").await;
    let steps = b
        .wait_for("(() => { const r = [...document.querySelectorAll('#events tbody tr')].map(r => r.children[3].textContent); return r.length && [...new Set(r)]; })()")
        .await;
    assert_eq!(steps, serde_json::json!(["c3s30"]));
    // One task: only its events (the step filter cleared).
    b.eval("(() => { const s = document.getElementById('step-filter'); s.value = ''; s.dispatchEvent(new Event('change')); \
            const t = document.getElementById('task-filter'); t.value = 'wide-run:c7s12:0'; t.dispatchEvent(new Event('change')); })()").await;
    let tasks = b
        .wait_for("(() => { const r = [...document.querySelectorAll('#events tbody tr')].map(r => r.children[4].textContent); return r.length && [...new Set(r)]; })()")
        .await;
    assert_eq!(tasks, serde_json::json!(["wide-run:c7s12:0"]));
    b.close().await;
}
