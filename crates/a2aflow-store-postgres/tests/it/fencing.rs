//! Fencing between two hosts (two stores, two pools, one schema): the old owner's writes that
//! race a takeover either land before it or are refused; none lands after.

use crate::support::{Scratch, open_in};
use a2aflow_kernel::RunStore;
use a2aflow_kernel::journal::JournalRecord;
use a2aflow_kernel::journal::samples::{intent, started};
use a2aflow_model::ErrorCode;
use a2aflow_store_postgres::StoreOptions;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_racing_a_takeover_land_before_it_or_not_at_all() {
    let scratch = Scratch::new().await;
    let schema = scratch.schema().await;
    // Host A's leases lapse at once, so host B may take the run over while A still writes.
    let a_store = open_in(
        &schema,
        StoreOptions::default().with_lease_ttl(Duration::ZERO),
    )
    .await
    .unwrap();
    let b_store = open_in(&schema, StoreOptions::default()).await.unwrap();
    a_store.create_run(started("r1", 1)).await.unwrap();
    let a = a_store.acquire("r1", "host-a").await.unwrap();
    let writers: Vec<_> = (0..40usize)
        .map(|i| {
            let store = a_store.clone();
            let lease = a.clone();
            tokio::spawn(async move { store.append_driven(&lease, vec![intent("a", i)]).await })
        })
        .collect();
    let b = b_store.acquire("r1", "host-b").await.unwrap();
    assert_eq!(b.token, a.token + 1, "the takeover raises the token");
    let marker = b_store
        .append_driven(&b, vec![intent("b", 0)])
        .await
        .unwrap();
    let (mut landed, mut refused) = (0, 0);
    for w in writers {
        match w.await.unwrap() {
            Ok(seqs) => {
                assert!(
                    seqs.end <= marker.start,
                    "a fenced write landed after the takeover"
                );
                landed += 1;
            }
            Err(e) => {
                assert!(e.is(ErrorCode::StoreLeaseLost), "{e}");
                refused += 1;
            }
        }
    }
    assert_eq!(landed + refused, 40);
    let journal = b_store.load("r1").await.unwrap();
    assert_eq!(journal.entries.len(), 1 + landed + 1);
    let after_marker = journal
        .entries
        .iter()
        .skip_while(|e| e.seq < marker.start)
        .count();
    assert_eq!(
        after_marker, 1,
        "only the new owner's record follows its first write"
    );
    assert!(matches!(
        &journal.entries.last().unwrap().record,
        JournalRecord::TaskIntent(t) if t.local_task_id == "b"
    ));
    let e = a_store
        .append_driven(&a, vec![intent("a", 99)])
        .await
        .unwrap_err();
    assert!(e.is(ErrorCode::StoreLeaseLost), "{e}");
    scratch.drop_all().await;
}
