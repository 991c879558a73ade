//! The behaviour every [`RunStore`] must show, as checks a store crate runs against its own
//! store: the MemoryStore, the SQLite store and any later store pass the same ones. Compiled
//! like [`super::samples`] (the kernel's tests, or the `testing` feature).
//!
//! Each check takes a fresh, empty store and panics with what it found wrong. [`check_all`] runs
//! every check that needs nothing but the trait, each on a store of its own; a store whose
//! leases can be made to lapse at once also runs [`a_lapsed_lease_is_taken_over`].

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support: a failed check panics

use super::samples::{
    event, every_record, intent, named_ending, result, started, states, step_result, view,
};
use super::{EncodedEvent, JournalRecord, RunFilter, RunState, RunStore};
use a2aflow_model::{ErrorCode, ExecutionResult, Failure};
use std::future::Future;
use std::sync::Arc;

/// Runs every trait-only check, each on a fresh store from `fresh`.
pub async fn check_all<F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn RunStore>>,
{
    records_round_trip_in_order(&*fresh().await).await;
    refused_writes_change_nothing(&*fresh().await).await;
    runs_list_newest_first_by_state_in_pages(&*fresh().await).await;
    events_are_kept_in_order_apart_from_records(&*fresh().await).await;
    a_lease_locks_the_run_for_other_owners(&*fresh().await).await;
    a_driver_that_lost_its_lease_writes_nothing(&*fresh().await).await;
    encoded_events_read_back_as_the_events_they_were(&*fresh().await).await;
    a_heartbeat_brings_back_a_cancel_from_outside(&*fresh().await).await;
    named_results_read_back_whole(&*fresh().await).await;
}

/// A driver's `stepEnded` / `runEnded` (task results named, not repeated) read back as the
/// `stepFinished` / `runFinished` records they stand for, at their own sequence numbers; the
/// run is finished by `runEnded` (listed with its state, nothing appended after it).
pub async fn named_results_read_back_whole(store: &dyn RunStore) {
    store.create_run(started("n1", 10)).await.unwrap();
    let range = store.append_batch("n1", named_ending("n1")).await.unwrap();
    assert_eq!(range, 1..4);
    let journal = store.load("n1").await.unwrap();
    let got: Vec<_> = journal.entries.iter().map(|e| e.record.clone()).collect();
    assert_eq!(
        got[1..],
        [
            JournalRecord::TaskFinished {
                local_task_id: "r:a:0".into(),
                result: view("r:a:0"),
            },
            JournalRecord::StepFinished {
                result: step_result(),
            },
            JournalRecord::RunFinished {
                result: result("n1"),
            },
        ]
    );
    assert_eq!(journal.finished(), Some(&result("n1")));
    let listed = store.list(RunFilter::default()).await.unwrap();
    assert_eq!(states(&listed), [("n1", RunState::Succeeded)]);
    let e = store.append("n1", intent("x", 0)).await.unwrap_err();
    assert!(e.is(ErrorCode::StoreInvalidAppend), "{e}");
}

/// A finished result of run `id`, failed with `failure` when one is given.
fn finished(id: &str, failure: Option<Failure>) -> JournalRecord {
    let mut result: ExecutionResult = result(id);
    if let Some(f) = failure {
        result.success = false;
        result.failure = Some(f);
    }
    JournalRecord::RunFinished { result }
}

/// Records appended one at a time and as a batch are numbered from 1 and read back in order,
/// `runStarted` first; the finished run reads as finished.
pub async fn records_round_trip_in_order(store: &dyn RunStore) {
    let records = every_record("r1");
    store.create_run(started("r1", 10)).await.unwrap();
    assert_eq!(store.append("r1", records[0].clone()).await.unwrap(), 1);
    let rest = store
        .append_batch("r1", records[1..].to_vec())
        .await
        .unwrap();
    assert_eq!(rest, 2..records.len() as u64 + 1);
    let journal = store.load("r1").await.unwrap();
    let mut expected = vec![JournalRecord::RunStarted(started("r1", 10))];
    expected.extend(records);
    let got: Vec<_> = journal.entries.iter().map(|e| e.record.clone()).collect();
    assert_eq!(got, expected);
    let seqs: Vec<u64> = journal.entries.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (0..expected.len() as u64).collect::<Vec<_>>());
    assert_eq!(journal.started().unwrap(), &started("r1", 10));
    assert!(journal.finished().is_some());
}

/// Unknown ids, a second `create_run`, a second `runStarted` and anything after `runFinished`
/// are refused with their codes, and a refused batch is refused whole.
pub async fn refused_writes_change_nothing(store: &dyn RunStore) {
    let unknown = |e: super::StoreError| {
        assert!(e.is(ErrorCode::StoreUnknownExecution), "{e}");
        assert_eq!(e.details["executionId"], "ghost");
    };
    unknown(store.load("ghost").await.unwrap_err());
    unknown(store.append("ghost", intent("x", 0)).await.unwrap_err());
    unknown(store.events("ghost", None, 1).await.unwrap_err());
    unknown(store.lease("ghost").await.unwrap_err());
    unknown(store.acquire("ghost", "host-a").await.unwrap_err());

    store.create_run(started("r1", 10)).await.unwrap();
    let e = store.create_run(started("r1", 11)).await.unwrap_err();
    assert!(e.is(ErrorCode::StoreDuplicateExecution), "{e}");
    let e = store
        .append("r1", JournalRecord::RunStarted(started("r1", 10)))
        .await
        .unwrap_err();
    assert!(e.is(ErrorCode::StoreInvalidAppend), "{e}");
    let e = store
        .append_batch(
            "r1",
            vec![intent("x", 0), finished("r1", None), intent("x", 1)],
        )
        .await
        .unwrap_err();
    assert!(e.is(ErrorCode::StoreInvalidAppend), "{e}");
    assert_eq!(
        store.load("r1").await.unwrap().entries.len(),
        1,
        "refused whole"
    );
    store.append("r1", finished("r1", None)).await.unwrap();
    let e = store.append("r1", intent("x", 2)).await.unwrap_err();
    assert!(e.is(ErrorCode::StoreInvalidAppend), "{e}");
    assert!(e.message.contains("already finished"), "{e}");
    assert_eq!(store.load("r1").await.unwrap().entries.len(), 2);
}

/// The listing: newest first, each run's state (finished ones by their result, unfinished ones
/// by their lease), its workflow name, start and finish times; a state filter; pages.
pub async fn runs_list_newest_first_by_state_in_pages(store: &dyn RunStore) {
    for (i, id) in ["old", "mid", "idle", "new"].iter().enumerate() {
        store.create_run(started(id, 100 + i as u64)).await.unwrap();
    }
    let cancelled = Failure::new(ErrorCode::WorkflowCancelled, "stop");
    store
        .append("mid", finished("mid", Some(cancelled)))
        .await
        .unwrap();
    store.append("old", finished("old", None)).await.unwrap();
    store.acquire("new", "host-a").await.unwrap();
    let gone = store.acquire("idle", "host-b").await.unwrap();
    store.release(gone).await.unwrap();
    let all = store.list(RunFilter::default()).await.unwrap();
    assert_eq!(
        states(&all),
        [
            ("new", RunState::Running),
            ("idle", RunState::Waiting),
            ("mid", RunState::Cancelled),
            ("old", RunState::Succeeded)
        ]
    );
    assert_eq!(all[0].workflow_name, "orders");
    assert_eq!(all[3].started_at_ms, 100);
    assert!(all[2].finished_at_ms.is_some() && all[3].finished_at_ms.is_some());
    assert!(all[0].finished_at_ms.is_none() && all[1].finished_at_ms.is_none());
    assert_eq!(serde_json::to_value(&all[2]).unwrap()["state"], "cancelled");
    let page = store
        .list(RunFilter {
            state: None,
            offset: 1,
            limit: 2,
        })
        .await
        .unwrap();
    assert_eq!(
        states(&page),
        [("idle", RunState::Waiting), ("mid", RunState::Cancelled)]
    );
    for (state, id) in [(RunState::Waiting, "idle"), (RunState::Succeeded, "old")] {
        let only = store
            .list(RunFilter {
                state: Some(state),
                ..RunFilter::default()
            })
            .await
            .unwrap();
        assert_eq!(states(&only), [(id, state)]);
    }
}

/// Events are kept apart from the journal, each `seq` after the last, and read after a
/// sequence number with a limit.
pub async fn events_are_kept_in_order_apart_from_records(store: &dyn RunStore) {
    store.create_run(started("r1", 1)).await.unwrap();
    store
        .record_events("r1", (0..3).map(|s| event("r1", s)).collect())
        .await
        .unwrap();
    store
        .record_events("r1", vec![event("r1", 3), event("r1", 4)])
        .await
        .unwrap();
    let e = store
        .record_events("r1", vec![event("r1", 3)])
        .await
        .unwrap_err();
    assert!(e.is(ErrorCode::StoreInvalidAppend), "{e}");
    let after: Vec<u64> = store
        .events("r1", Some(2), 100)
        .await
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(after, [3, 4]);
    assert_eq!(
        store.events("r1", None, 2).await.unwrap(),
        [event("r1", 0), event("r1", 1)]
    );
    assert_eq!(
        store.load("r1").await.unwrap().entries.len(),
        1,
        "events are not records"
    );
}

/// One owner at a time: a live lease locks the run for others (`store.locked`, naming the
/// owner), its holder may take it again and renew it, a release lets another owner in with a
/// higher token, and the old holder's renewal is `store.lease_lost`.
pub async fn a_lease_locks_the_run_for_other_owners(store: &dyn RunStore) {
    store.create_run(started("r1", 1)).await.unwrap();
    assert_eq!(store.lease("r1").await.unwrap(), None);
    let a = store.acquire("r1", "host-a").await.unwrap();
    assert_eq!(a.token, 1);
    assert_eq!(store.lease("r1").await.unwrap().as_ref(), Some(&a));
    let e = store.acquire("r1", "host-b").await.unwrap_err();
    assert!(e.is(ErrorCode::StoreLocked), "{e}");
    assert_eq!(e.details["owner"], "host-a");
    assert_eq!(store.acquire("r1", "host-a").await.unwrap().token, 1);
    let renewed = store.renew(&a).await.unwrap();
    assert_eq!(renewed.token, a.token);
    assert!(renewed.expires_at_ms >= a.expires_at_ms);
    store.release(a.clone()).await.unwrap();
    let b = store.acquire("r1", "host-b").await.unwrap();
    assert_eq!(b.token, 2, "a takeover raises the fencing token");
    let e = store.renew(&a).await.unwrap_err();
    assert!(e.is(ErrorCode::StoreLeaseLost), "{e}");
    assert!(store.renew(&b).await.is_ok());
    store.release(a).await.unwrap();
    assert_eq!(
        store.lease("r1").await.unwrap().map(|l| l.owner),
        Some("host-b".into())
    );
}

/// Fencing: a driver's writes (`append_driven`, `record_driven_events`) land while it holds the
/// lease; once another owner took the run over, they are `store.lease_lost` and write nothing.
pub async fn a_driver_that_lost_its_lease_writes_nothing(store: &dyn RunStore) {
    store.create_run(started("r1", 1)).await.unwrap();
    let a = store.acquire("r1", "host-a").await.unwrap();
    assert_eq!(
        store.append_driven(&a, vec![intent("t", 0)]).await.unwrap(),
        1..2
    );
    store
        .record_driven_events(&a, vec![event("r1", 0)])
        .await
        .unwrap();
    store.release(a.clone()).await.unwrap();
    let b = store.acquire("r1", "host-b").await.unwrap();
    let e = store
        .append_driven(&a, vec![intent("t", 1)])
        .await
        .unwrap_err();
    assert!(e.is(ErrorCode::StoreLeaseLost), "{e}");
    assert_eq!(e.details["owner"], "host-a");
    let e = store
        .record_driven_events(&a, vec![event("r1", 1)])
        .await
        .unwrap_err();
    assert!(e.is(ErrorCode::StoreLeaseLost), "{e}");
    assert_eq!(store.load("r1").await.unwrap().entries.len(), 2);
    assert_eq!(store.events("r1", None, 10).await.unwrap().len(), 1);
    store.append_driven(&b, vec![intent("t", 1)]).await.unwrap();
    store
        .record_driven_events(&b, vec![event("r1", 1)])
        .await
        .unwrap();
    let ghost = super::Lease {
        execution_id: "ghost".into(),
        ..b
    };
    let e = store.append_driven(&ghost, Vec::new()).await.unwrap_err();
    assert!(e.is(ErrorCode::StoreUnknownExecution), "{e}");
}

/// A driver's events written as JSON text (`record_driven_encoded_events`) read back as the
/// events they were, in order after the events kept before; one out of order is
/// `store.invalid_append` and a driver that lost its lease is `store.lease_lost`, both writing
/// nothing.
pub async fn encoded_events_read_back_as_the_events_they_were(store: &dyn RunStore) {
    store.create_run(started("r1", 1)).await.unwrap();
    let a = store.acquire("r1", "host-a").await.unwrap();
    let encoded = |seq: u64| EncodedEvent::encode(&event("r1", seq)).unwrap();
    store
        .record_driven_events(&a, vec![event("r1", 0)])
        .await
        .unwrap();
    store
        .record_driven_encoded_events(&a, vec![encoded(1), encoded(2)])
        .await
        .unwrap();
    let e = store
        .record_driven_encoded_events(&a, vec![encoded(4), encoded(3)])
        .await
        .unwrap_err();
    assert!(e.is(ErrorCode::StoreInvalidAppend), "{e}");
    let expected: Vec<_> = (0..3).map(|s| event("r1", s)).collect();
    assert_eq!(store.events("r1", None, 10).await.unwrap(), expected);
    store.release(a.clone()).await.unwrap();
    store.acquire("r1", "host-b").await.unwrap();
    let e = store
        .record_driven_encoded_events(&a, vec![encoded(3)])
        .await
        .unwrap_err();
    assert!(e.is(ErrorCode::StoreLeaseLost), "{e}");
    assert_eq!(store.events("r1", None, 10).await.unwrap(), expected);
}

/// For a store whose leases lapse at once (a time to live of zero): a driver that stopped
/// renewing leaves its run `waiting`, and the next owner takes it over with a higher token.
pub async fn a_lapsed_lease_is_taken_over(quick: &dyn RunStore) {
    quick.create_run(started("r2", 5)).await.unwrap();
    quick.acquire("r2", "dead").await.unwrap();
    let listed = quick.list(RunFilter::default()).await.unwrap();
    assert_eq!(states(&listed), [("r2", RunState::Waiting)]);
    assert_eq!(quick.acquire("r2", "alive").await.unwrap().token, 2);
}

/// A driver's heartbeat renews its lease and says whether a run-level cancel was journaled by
/// another writer (an unfenced append, as `runs cancel` does); a task's cancel is not one. A
/// driver that lost its lease gets `store.lease_lost` from it.
pub async fn a_heartbeat_brings_back_a_cancel_from_outside(store: &dyn RunStore) {
    store.create_run(started("r1", 1)).await.unwrap();
    let a = store.acquire("r1", "host-a").await.unwrap();
    let beat = store.heartbeat(&a).await.unwrap();
    assert!(!beat.cancel_requested);
    assert_eq!(
        (beat.lease.owner.as_str(), beat.lease.token),
        ("host-a", a.token)
    );
    assert!(beat.lease.expires_at_ms >= a.expires_at_ms);
    let task_cancel = JournalRecord::CancelRequested {
        local_task_id: Some("t".into()),
        remote_task_id: Some("remote-t".into()),
    };
    store.append("r1", task_cancel).await.unwrap();
    assert!(!store.heartbeat(&a).await.unwrap().cancel_requested);
    let run_cancel = JournalRecord::CancelRequested {
        local_task_id: None,
        remote_task_id: None,
    };
    store.append("r1", run_cancel).await.unwrap();
    assert!(store.heartbeat(&a).await.unwrap().cancel_requested);
    store.release(a.clone()).await.unwrap();
    store.acquire("r1", "host-b").await.unwrap();
    let e = store.heartbeat(&a).await.unwrap_err();
    assert!(e.is(ErrorCode::StoreLeaseLost), "{e}");
}
