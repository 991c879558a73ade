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
