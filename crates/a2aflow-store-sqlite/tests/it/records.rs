//! Every record type, the listing, events and leases through the SQLite store, across a reopen.

use crate::support::{block_on, event, every_record, intent, started, states};
use a2aflow_kernel::journal::{JournalRecord, RunFilter, RunState, RunStore};
use a2aflow_model::ErrorCode;
use a2aflow_store_sqlite::SqliteStore;

#[test]
fn every_record_type_round_trips_and_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let records = every_record("r1");
    block_on(async {
        let store = SqliteStore::open(&path).await.unwrap();
        store.create_run(started("r1", 10)).await.unwrap();
        // One at a time and as a batch: both keep the order and number from 1.
        let first = store.append("r1", records[0].clone()).await.unwrap();
        assert_eq!(first, 1);
        let rest = store
            .append_batch("r1", records[1..].to_vec())
            .await
            .unwrap();
        assert_eq!(rest, 2..records.len() as u64 + 1);
        store.close().await;

        let store = SqliteStore::open(&path).await.unwrap();
        let journal = store.load("r1").await.unwrap();
        let mut expected = vec![JournalRecord::RunStarted(started("r1", 10))];
        expected.extend(records.iter().cloned());
        let got: Vec<_> = journal.entries.iter().map(|e| e.record.clone()).collect();
        assert_eq!(got, expected);
        let kinds: std::collections::BTreeSet<_> = got.iter().map(JournalRecord::kind).collect();
        assert_eq!(kinds.len(), 13, "one of each record type: {kinds:?}");
        assert_eq!(
            journal.started().unwrap().workflow().unwrap(),
            crate::support::workflow()
        );
        assert!(journal.finished().is_some());
    });
}

#[test]
fn refused_appends_have_stable_codes_and_leave_the_journal_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    block_on(async {
        let store = SqliteStore::open(dir.path().join("runs.db")).await.unwrap();
        let e = store.load("ghost").await.unwrap_err();
        assert!(e.is(ErrorCode::StoreUnknownExecution), "{e}");
        assert_eq!(e.details["executionId"], "ghost");
        let e = store.append("ghost", intent("x", 0)).await.unwrap_err();
        assert!(e.is(ErrorCode::StoreUnknownExecution), "{e}");

        store.create_run(started("r1", 10)).await.unwrap();
        let e = store.create_run(started("r1", 11)).await.unwrap_err();
        assert!(e.is(ErrorCode::StoreDuplicateExecution), "{e}");
        let finished = every_record("r1").pop().unwrap();
        let e = store
            .append_batch("r1", vec![intent("x", 0), finished.clone(), intent("x", 1)])
            .await
            .unwrap_err();
        assert!(e.is(ErrorCode::StoreInvalidAppend), "{e}");
        assert_eq!(
            store.load("r1").await.unwrap().entries.len(),
            1,
            "refused whole"
        );
        store.append("r1", finished.clone()).await.unwrap();
        let e = store.append("r1", intent("x", 2)).await.unwrap_err();
        assert!(e.is(ErrorCode::StoreInvalidAppend), "{e}");
    });
}

#[test]
fn concurrent_appends_to_many_runs_are_all_kept_in_order() {
    // Many callers at once: their appends share group transactions, and a refused one (an
    // unknown run) does not undo the others in its group.
    let dir = tempfile::tempdir().unwrap();
    block_on(async {
        let store = SqliteStore::open(dir.path().join("runs.db")).await.unwrap();
        for r in 0..8 {
            store
                .create_run(started(&format!("r{r}"), r))
                .await
                .unwrap();
        }
        let mut tasks = Vec::new();
        for r in 0..8 {
            let writer = store.clone();
            tasks.push(tokio::spawn(async move {
                for n in 0..25 {
                    writer
                        .append(&format!("r{r}"), intent("t", n))
                        .await
                        .unwrap();
                }
            }));
            let stray = store.clone();
            tasks.push(tokio::spawn(async move {
                let e = stray.append("ghost", intent("t", 0)).await.unwrap_err();
                assert!(e.is(ErrorCode::StoreUnknownExecution));
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        for r in 0..8 {
            let journal = store.load(&format!("r{r}")).await.unwrap();
            let ids: Vec<String> = journal.entries[1..]
                .iter()
                .map(|e| match &e.record {
                    JournalRecord::TaskIntent(i) => i.message_id.clone(),
                    other => panic!("unexpected {other:?}"),
                })
                .collect();
            let expected: Vec<String> = (0..25).map(|n| format!("msg-{n}")).collect();
            assert_eq!(ids, expected);
        }
    });
}

#[test]
fn runs_list_newest_first_with_their_state_and_pages() {
    let dir = tempfile::tempdir().unwrap();
    block_on(async {
        let store = SqliteStore::open(dir.path().join("runs.db")).await.unwrap();
        for (i, id) in ["old", "mid", "new"].iter().enumerate() {
            store.create_run(started(id, 100 + i as u64)).await.unwrap();
        }
        let finished = every_record("old").pop().unwrap();
        store.append("old", finished).await.unwrap();
        store.acquire("new", "host-a").await.unwrap();
        let all = store.list(RunFilter::default()).await.unwrap();
        assert_eq!(
            states(&all),
            [
                ("new", RunState::Running),
                ("mid", RunState::Waiting),
                ("old", RunState::Succeeded)
            ]
        );
        assert_eq!(all[0].workflow_name, "orders");
        assert_eq!(all[2].started_at_ms, 100);
        let page = store
            .list(RunFilter {
                state: None,
                offset: 1,
                limit: 1,
            })
            .await
            .unwrap();
        assert_eq!(page.len(), 1);
        assert_eq!(page[0].execution_id, "mid");
        let waiting = store
            .list(RunFilter {
                state: Some(RunState::Waiting),
                ..RunFilter::default()
            })
            .await
            .unwrap();
        assert_eq!(
            waiting
                .iter()
                .map(|s| s.execution_id.as_str())
                .collect::<Vec<_>>(),
            ["mid"]
        );
    });
}

#[test]
fn events_are_kept_apart_and_read_after_a_sequence_number() {
    let dir = tempfile::tempdir().unwrap();
    block_on(async {
        let store = SqliteStore::open(dir.path().join("runs.db")).await.unwrap();
        store.create_run(started("r1", 1)).await.unwrap();
        store
            .record_events("r1", (0..5).map(|s| event("r1", s)).collect())
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
        let e = store.events("ghost", None, 1).await.unwrap_err();
        assert!(e.is(ErrorCode::StoreUnknownExecution));
        // Events are not journal records.
        assert_eq!(store.load("r1").await.unwrap().entries.len(), 1);
    });
}

#[test]
fn a_lease_locks_a_run_for_other_owners_until_released() {
    let dir = tempfile::tempdir().unwrap();
    block_on(async {
        let store = SqliteStore::open(dir.path().join("runs.db")).await.unwrap();
        store.create_run(started("r1", 1)).await.unwrap();
        let a = store.acquire("r1", "host-a").await.unwrap();
        assert_eq!(a.token, 1);
        let e = store.acquire("r1", "host-b").await.unwrap_err();
        assert!(e.is(ErrorCode::StoreLocked), "{e}");
        assert_eq!(e.details["owner"], "host-a");
        let renewed = store.renew(&a).await.unwrap();
        assert!(renewed.expires_at_ms >= a.expires_at_ms);
        store.release(a.clone()).await.unwrap();
        let b = store.acquire("r1", "host-b").await.unwrap();
        assert_eq!(b.token, 2);
        let e = store.renew(&a).await.unwrap_err();
        assert!(e.is(ErrorCode::StoreInvalidAppend), "{e}");
        let e = store.acquire("ghost", "host-a").await.unwrap_err();
        assert!(e.is(ErrorCode::StoreUnknownExecution), "{e}");
    });
}

#[test]
fn a_tampered_journaled_workflow_is_a_mismatch_on_load() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    block_on(async {
        let store = SqliteStore::open(&path).await.unwrap();
        store.create_run(started("r1", 1)).await.unwrap();
        store.close().await;
    });
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE records SET body = replace(body, '\"charge\"', '\"refund\"') WHERE seq = 0",
        [],
    )
    .unwrap();
    drop(conn);
    block_on(async {
        let store = SqliteStore::open(&path).await.unwrap();
        let journal = store.load("r1").await.unwrap();
        let e = journal.started().unwrap().workflow().unwrap_err();
        assert!(e.is(ErrorCode::StoreWorkflowMismatch), "{e}");
    });
}

#[test]
fn appends_leave_a_single_threaded_runtime_free_to_run_other_tasks() {
    // The store's work happens on its own thread: while an append waits for its commit, other
    // tasks of a current-thread runtime keep running (a store that did its I/O inline would
    // give them no turn at all).
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = SqliteStore::open(dir.path().join("runs.db")).await.unwrap();
        store.create_run(started("r1", 1)).await.unwrap();
        let turns = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counter = turns.clone();
        let ticker = tokio::spawn(async move {
            loop {
                counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tokio::task::yield_now().await;
            }
        });
        for n in 0..20 {
            store.append("r1", intent("t", n)).await.unwrap();
        }
        ticker.abort();
        let turns = turns.load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            turns >= 20,
            "other tasks ran {turns} times during 20 appends"
        );
    });
}
