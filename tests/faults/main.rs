//! The fault matrix: every fault the testkit injects × each place it can hit × each binding
//! (JSON-RPC and HTTP+JSON; gRPC for the faults its gRPC door injects).
//!
//! Each cell runs on a current-thread runtime of its own against two loopback servers (a faulty
//! agent and a healthy one) and asserts: the stable error code (or the recovery, where the engine
//! is meant to absorb the fault), that the cell ends within its deadline plus a small bound, that
//! no TCP connection is left open on either server, that no tokio task is left alive on the
//! cell's runtime, and that the healthy branch of the same workflow still completes.
//!
//! `FAULTS_ONLY=<text>` restricts the run to cells whose label contains the text.
//!
//! Cells marked with a known engine finding still run and print `FINDING …` with what they
//! observed; they fail the test only with `FAULTS_STRICT=1` (and a finding that no longer
//! reproduces is printed so its mark can go).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap

mod cells;
mod hostile;
mod probe;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// Cells run at once (each is mostly waiting on timeouts, so more than the core count).
const WORKERS: usize = 8;

fn main() {
    probe::self_check().expect("the leak detectors must be able to fail");
    // `FAULTS_ONLY=<text>` runs only the cells whose label contains the text (when iterating on
    // one fault); CI runs them all.
    let only = std::env::var("FAULTS_ONLY").ok();
    let cells: Vec<_> = cells::matrix()
        .into_iter()
        .filter(|c| only.as_deref().is_none_or(|o| c.label().contains(o)))
        .collect();
    let total = cells.len();
    let queue = Arc::new(Mutex::new(
        cells.into_iter().enumerate().collect::<VecDeque<_>>(),
    ));
    let results = Arc::new(Mutex::new(Vec::new()));
    let started = std::time::Instant::now();
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let queue = Arc::clone(&queue);
            let results = Arc::clone(&results);
            std::thread::spawn(move || {
                loop {
                    let next = queue.lock().unwrap().pop_front();
                    let Some((index, cell)) = next else { break };
                    let outcome = probe::run_cell(index, &cell);
                    results
                        .lock()
                        .unwrap()
                        .push((cell.label(), cell.finding, outcome));
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("a worker thread panicked");
    }
    let mut results = std::mem::take(&mut *results.lock().unwrap());
    results.sort_by(|a, b| a.0.cmp(&b.0));
    let strict = std::env::var_os("FAULTS_STRICT").is_some_and(|v| v == "1");
    let (mut passed, mut findings) = (0, 0);
    for (label, finding, outcome) in &results {
        match (outcome, finding) {
            (Ok(()), None) => passed += 1,
            (Ok(()), Some(f)) => {
                passed += 1;
                println!("finding no longer reproduces, unmark it: {label}: {f}");
            }
            (Err(why), Some(f)) if !strict => {
                findings += 1;
                println!("FINDING {label}: {why} [{f}]");
            }
            (Err(why), _) => eprintln!("FAIL {label}: {why}"),
        }
    }
    println!(
        "fault matrix: {total} cells, {passed} passed, {findings} known findings ({:.1} s)",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(
        passed + findings,
        total,
        "fault matrix cells failed (see FAIL lines)"
    );
}
