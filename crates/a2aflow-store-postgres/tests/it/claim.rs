//! Claiming runs for workers: the oldest unfinished run nobody drives, each run to one worker.

use crate::support::{Scratch, open_in};
use a2aflow_kernel::RunStore;
use a2aflow_kernel::journal::JournalRecord;
use a2aflow_kernel::journal::samples::{result, started};
use a2aflow_store_postgres::StoreOptions;
use std::collections::BTreeSet;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_takes_the_oldest_run_nobody_drives() {
    let scratch = Scratch::new().await;
    let schema = scratch.schema().await;
    let store = open_in(&schema, StoreOptions::default()).await.unwrap();
    let lapsing = open_in(
        &schema,
        StoreOptions::default().with_lease_ttl(Duration::ZERO),
    )
    .await
    .unwrap();
    for (i, id) in ["done", "driven", "lapsed", "free", "released"]
        .iter()
        .enumerate()
    {
        store.create_run(started(id, 10 + i as u64)).await.unwrap();
    }
    store
        .append(
            "done",
            JournalRecord::RunFinished {
                result: result("done"),
            },
        )
        .await
        .unwrap();
    store.acquire("driven", "host-a").await.unwrap();
    let dead = lapsing.acquire("lapsed", "host-dead").await.unwrap();
    let gone = store.acquire("released", "host-b").await.unwrap();
    store.release(gone).await.unwrap();

    let first = store.claim("worker-1").await.unwrap().unwrap();
    assert_eq!(first.execution_id, "lapsed");
    assert_eq!(first.owner, "worker-1");
    assert_eq!(first.token, dead.token + 1, "a takeover raises the token");
    assert_eq!(store.lease("lapsed").await.unwrap(), Some(first.clone()));
    let second = store.claim("worker-2").await.unwrap().unwrap();
    assert_eq!((second.execution_id.as_str(), second.token), ("free", 1));
    let third = store.claim("worker-1").await.unwrap().unwrap();
    assert_eq!((third.execution_id.as_str(), third.token), ("released", 2));
    assert_eq!(store.claim("worker-3").await.unwrap(), None);
    // The old owner of a claimed run is fenced off.
    let e = lapsing.append_driven(&dead, vec![]).await.unwrap_err();
    assert!(e.is(a2aflow_model::ErrorCode::StoreLeaseLost), "{e}");
    scratch.drop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_claims_hand_each_run_to_one_worker() {
    let scratch = Scratch::new().await;
    let schema = scratch.schema().await;
    let store = open_in(&schema, StoreOptions::default()).await.unwrap();
    let runs: Vec<String> = (0..30).map(|i| format!("r{i:02}")).collect();
    for (i, id) in runs.iter().enumerate() {
        store.create_run(started(id, i as u64)).await.unwrap();
    }
    let workers: Vec<_> = (0..5)
        .map(|w| {
            let schema = schema.clone();
            tokio::spawn(async move {
                let mine = open_in(&schema, StoreOptions::default()).await.unwrap();
                let mut got = Vec::new();
                while let Some(lease) = mine.claim(&format!("worker-{w}")).await.unwrap() {
                    got.push(lease.execution_id);
                }
                got
            })
        })
        .collect();
    let mut claimed = Vec::new();
    for w in workers {
        claimed.extend(w.await.unwrap());
    }
    assert_eq!(
        claimed.len(),
        runs.len(),
        "each run claimed once: {claimed:?}"
    );
    let distinct: BTreeSet<_> = claimed.iter().cloned().collect();
    assert_eq!(distinct, runs.iter().cloned().collect::<BTreeSet<_>>());
    scratch.drop_all().await;
}

/// A run its creator drives from the start: created and leased in one step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_created_with_its_lease_is_never_claimable_in_between() {
    let scratch = Scratch::new().await;
    let store = scratch.store(StoreOptions::default()).await;
    let lease = store
        .create_run_leased(started("mine", 10), "host-a")
        .await
        .unwrap();
    assert_eq!((lease.owner.as_str(), lease.token), ("host-a", 1));
    assert_eq!(store.lease("mine").await.unwrap(), Some(lease.clone()));
    assert_eq!(store.claim("worker-1").await.unwrap(), None);
    store.append_driven(&lease, vec![]).await.unwrap();
    let e = store
        .create_run_leased(started("mine", 11), "host-b")
        .await
        .unwrap_err();
    assert!(
        e.is(a2aflow_model::ErrorCode::StoreDuplicateExecution),
        "{e}"
    );
    assert_eq!(store.lease("mine").await.unwrap(), Some(lease));
    scratch.drop_all().await;
}

fn a_record() -> JournalRecord {
    JournalRecord::CancelRequested {
        local_task_id: Some("t1".to_owned()),
        remote_task_id: None,
    }
}

/// A run suspended at its gates waits (no claim hands it out) until a record is appended
/// after the ones its driver saw — a gate answer, a decline, a cancel — or its deadline passed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_run_is_claimed_again_only_after_a_new_record_or_its_deadline() {
    let scratch = Scratch::new().await;
    let store = scratch.store(StoreOptions::default()).await;
    let hour_ahead = a2aflow_kernel::journal::wall_clock_ms() + 3_600_000;
    let mut parked = started("parked", 10);
    parked.deadline_ms = hour_ahead;
    let lease = store.create_run_leased(parked, "worker-1").await.unwrap();
    store.append_driven(&lease, vec![a_record()]).await.unwrap();
    store.release_suspended(lease, 2).await.unwrap();
    assert_eq!(store.claim("worker-2").await.unwrap(), None, "parked");
    let summary = store.list(Default::default()).await.unwrap();
    assert_eq!(summary[0].state, a2aflow_kernel::journal::RunState::Waiting);

    // An answer journaled from outside (unfenced, as `runs answer` writes it).
    store.append("parked", a_record()).await.unwrap();
    let again = store.claim("worker-2").await.unwrap().unwrap();
    assert_eq!((again.execution_id.as_str(), again.token), ("parked", 2));
    // Suspended again having seen all three records: parked again.
    store.release_suspended(again, 3).await.unwrap();
    assert_eq!(store.claim("worker-3").await.unwrap(), None);
    // A record its driver had not seen when it suspended (an answer that raced the
    // suspension): claimable at once.
    store.append("parked", a_record()).await.unwrap();
    let raced = store.claim("worker-3").await.unwrap().unwrap();
    store.release_suspended(raced, 3).await.unwrap();
    assert_eq!(
        store.claim("worker-1").await.unwrap().map(|l| l.token),
        Some(4)
    );

    // A parked run whose deadline passed is handed out (its driver ends it).
    let overdue = store
        .create_run_leased(started("overdue", 20), "worker-1")
        .await
        .unwrap();
    store.release_suspended(overdue, 1).await.unwrap();
    let late = store.claim("worker-2").await.unwrap().unwrap();
    assert_eq!(late.execution_id, "overdue");
    // Releasing a lease it no longer holds changes nothing.
    let stale = a2aflow_kernel::journal::Lease {
        owner: "worker-9".to_owned(),
        ..late.clone()
    };
    store.release_suspended(stale, 1).await.unwrap();
    assert_eq!(store.lease("overdue").await.unwrap(), Some(late));
    scratch.drop_all().await;
}
