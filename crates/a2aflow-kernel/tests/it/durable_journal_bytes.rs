//! What a wide step's journal weighs: each task result is written once (its `taskFinished`);
//! the step's and the run's end name the results instead of repeating them. The same run's
//! journal read back (`load`: the full `stepFinished` / `runFinished`, the shape earlier
//! versions wrote) against what the driver wrote.

use crate::support::*;
use a2aflow_kernel::journal::JournalRecord;
use a2aflow_kernel::{
    AgentScript, InMemoryClient, MemoryStore, RunInput, RunOptions, RunStore, ScriptedReply,
};
use a2aflow_model::Output;
use std::sync::Arc;

/// The subtasks of the step (as in `cargo bench -p a2aflow --bench durable`).
const TASKS: usize = 1_000;

/// Bytes of JSON of `records`, and of those among them of the `ends` kinds.
fn weight(records: &[JournalRecord], ends: [&str; 2]) -> (usize, usize) {
    records.iter().fold((0, 0), |(all, end), r| {
        let n = serde_json::to_string(r).unwrap().len();
        let is_end = ends.contains(&r.kind());
        (all + n, end + if is_end { n } else { 0 })
    })
}

#[tokio::test(start_paused = true)]
async fn a_wide_step_journals_each_task_result_once() {
    let agents = vec!["billing"; TASKS];
    let charged = ScriptedReply::Succeed(vec![Output::text("charged")]);
    let client = Arc::new(InMemoryClient::new().agent("billing", AgentScript::reply(charged)));
    let store = Arc::new(MemoryStore::new());
    let opts = RunOptions {
        store: Some(store.clone()),
        execution_id: Some("exec".into()),
        ..Default::default()
    };
    let w = Arc::new(wf(vec![step("fan", &agents, &[])]));
    let host = Arc::new(Host::default());
    let r = a2aflow_kernel::run(w, RunInput::default(), host, client, opts).await;
    assert!(r.success, "{:?}", r.failure);

    let full: Vec<JournalRecord> = store
        .load("exec")
        .await
        .unwrap()
        .entries
        .into_iter()
        .map(|e| e.record)
        .collect();
    let written = store.records_as_written("exec").unwrap();
    let (full_all, full_ends) = weight(&full, ["stepFinished", "runFinished"]);
    let (written_all, written_ends) = weight(&written, ["stepEnded", "runEnded"]);
    println!(
        "journal bytes, {TASKS} tasks: {written_all} written ({written_ends} in the step and run \
         ends) against {full_all} in the full shape ({full_ends})"
    );
    assert_eq!(written.len(), full.len());
    // The ends hold about 30 bytes per task result instead of the result itself.
    assert!(
        written_ends * 10 < full_ends,
        "{written_ends} vs {full_ends}"
    );
}
