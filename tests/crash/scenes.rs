//! The crash test's scenes after the random kills, a handful of times each: two resumes racing
//! on one killed run, and a `runs cancel` of a killed run that its resume carries out.

use crate::host::{Host, Running};
use crate::{Crash, Figures, Flow, LEASE, tally};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// How often each scene runs.
const RACES: usize = 3;
const CANCELS: usize = 3;

/// A hang guard for the polls of a scene, never a timing assertion.
const GUARD: Duration = Duration::from_secs(30);

/// One task that works for longer than any scene waits: only a CancelTask ends it early.
pub fn cancel_workflow() -> Value {
    json!({"id": "cancel", "name": "cancel", "steps": [
        {"name": "long", "subtasks": [{"agent": "a", "description": "slow 5 cancel me"}]}
    ]})
}

/// A task that works long enough (two seconds) for both racing resumes to start while the first
/// one that took the lease still drives the run, then a last task.
pub fn race_workflow() -> Value {
    json!({"id": "race", "name": "race", "steps": [
        {"name": "long", "subtasks": [{"agent": "b", "description": "slow 2 race"}],
         "next": [{"step": "after"}]},
        {"name": "after", "subtasks": [{"agent": "a", "description": "task after"}]}
    ]})
}

/// Polls `runs show` until a task of `step` has its remote task id journaled (the run must
/// still be running), then kills the host. Returns the execution id and that remote task id.
fn kill_once_remote_known(host: &Host, mut running: Running, step: &str) -> (String, String) {
    let id = running
        .execution_id
        .clone()
        .expect("the run printed its id");
    let guard = Instant::now() + GUARD;
    let remote = loop {
        assert!(running.is_running(), "run {id} ended before the kill");
        assert!(
            Instant::now() < guard,
            "run {id}: no remote task id for {step}"
        );
        let view = host.try_show(&id).unwrap_or_default();
        let remote = view["tasks"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["step"] == step && t["remoteTaskId"].is_string())
            .and_then(|t| t["remoteTaskId"].as_str().map(str::to_owned));
        if let Some(remote) = remote {
            break remote;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    running.kill();
    (id, remote)
}

/// Two `runs resume` of one killed [`race_workflow`] run at once: exactly one drives it to the
/// result of an uninterrupted run, the other exits 2 with `store.locked`; every task took effect
/// once.
pub fn racing_resumes(crash: &Crash, flow: &Flow, figures: &mut Figures) {
    for _ in 0..RACES {
        crash.server.clear_requests();
        let (id, _) = kill_once_remote_known(&flow.host, flow.host.start(), "long");
        std::thread::sleep(LEASE);
        let guard = Instant::now() + GUARD;
        let [one, two] = loop {
            let both = flow.host.resume_twice_at_once(&id);
            figures.resumes += 2;
            if !both.iter().all(|r| r.stderr.contains("store.locked")) {
                break both;
            }
            // Both came before the killed driver's lease lapsed.
            assert!(
                Instant::now() < guard,
                "the killed driver's lease never lapsed"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        let (winner, loser) = if one.code == Some(2) {
            (two, one)
        } else {
            (one, two)
        };
        assert_eq!(
            loser.code,
            Some(2),
            "run {id}: both resumes ended without a refusal:\n{}\n{:?}\n{}\n{:?}",
            winner.stderr,
            winner.result,
            loser.stderr,
            loser.result
        );
        assert!(
            loser.stderr.contains("store.locked"),
            "run {id}: the second resume: {}",
            loser.stderr
        );
        assert_eq!(winner.code, Some(0), "run {id}: {}", winner.stderr);
        let result = winner.result.expect("the winner's result");
        assert_eq!(
            tally::shape(&result),
            tally::shape(&flow.baseline),
            "run {id} resumed by two racing processes"
        );
        let sends = tally::sends_per_context(&crash.server);
        crash.count_effects(&tally::tasks(&result), &sends, figures);
        figures.raced += 1;
    }
}

/// `runs cancel` of a run killed while its `slow` task works, then `runs resume`: the agent
/// receives the CancelTask for that remote task once, and the run ends cancelled.
pub fn pending_cancels(crash: &Crash, host: &Host, figures: &mut Figures) {
    for _ in 0..CANCELS {
        crash.server.clear_requests();
        let (id, remote) = kill_once_remote_known(host, host.start(), "long");
        host.cancel(&id);
        std::thread::sleep(LEASE);
        let resumed = host.resume(&id, false);
        figures.resumes += 1;
        assert_eq!(resumed.code, Some(1), "run {id}: {}", resumed.stderr);
        let view = host.show(&id);
        assert_eq!(view["state"], "cancelled", "run {id}: {view}");
        assert_eq!(
            tally::cancels_of(&crash.server, &remote),
            1,
            "run {id}: the CancelTask for {remote}"
        );
        figures.cancelled += 1;
    }
}
