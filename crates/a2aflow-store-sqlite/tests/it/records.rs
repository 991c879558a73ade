//! The SQLite store passes the checks every store passes (`journal::conformance`), and what is
//! its own: records across a reopen, group commit under many writers, a tampered file, its
//! thread, two stores on one file.

use crate::support::{block_on, event, every_record, intent, started};
use a2aflow_kernel::journal::{JournalRecord, RunStore, conformance};
use a2aflow_model::ErrorCode;
use a2aflow_store_sqlite::{SqliteStore, StoreOptions};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

#[test]
fn the_sqlite_store_conforms_to_the_store_contract() {
    let dir = tempfile::tempdir().unwrap();
    let n = std::sync::atomic::AtomicUsize::new(0);
    block_on(async {
        conformance::check_all(|| async {
            let file = format!("runs-{}.db", n.fetch_add(1, Ordering::Relaxed));
            Arc::new(SqliteStore::open(dir.path().join(file)).await.unwrap()) as Arc<dyn RunStore>
        })
        .await;
        let quick = StoreOptions::default().with_lease_ttl(Duration::ZERO);
        let store = SqliteStore::open_with(dir.path().join("quick.db"), quick)
            .await
            .unwrap();
        conformance::a_lapsed_lease_is_taken_over(&store).await;
    });
}

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

/// Two processes on one file: a driver whose lease lapsed while it was paused, and the driver
/// that took the run over. The paused one's writes are refused in their own transaction.
#[test]
fn a_driver_whose_lease_was_taken_over_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    block_on(async {
        let quick = StoreOptions::default().with_lease_ttl(Duration::ZERO);
        let paused = SqliteStore::open_with(&path, quick).await.unwrap();
        let other = SqliteStore::open(&path).await.unwrap();
        paused.create_run(started("r1", 1)).await.unwrap();
        let a = paused.acquire("r1", "host-a").await.unwrap();
        paused
            .append_driven(&a, vec![intent("r1:s:0", 0)])
            .await
            .unwrap();
        paused
            .record_driven_events(&a, vec![event("r1", 0)])
            .await
            .unwrap();
        // `a` lapsed at once (ttl 0): the other process takes the run over.
        let b = other.acquire("r1", "host-b").await.unwrap();
        assert_eq!(b.token, a.token + 1);
        let e = paused
            .append_driven(&a, vec![intent("r1:s:1", 1)])
            .await
            .unwrap_err();
        assert!(e.is(ErrorCode::StoreLeaseLost), "{e}");
        let e = paused
            .record_driven_events(&a, vec![event("r1", 1)])
            .await
            .unwrap_err();
        assert!(e.is(ErrorCode::StoreLeaseLost), "{e}");
        let journal = other.load("r1").await.unwrap();
        assert_eq!(
            journal.entries.len(),
            2,
            "runStarted and the first intent only"
        );
        assert_eq!(other.events("r1", None, 10).await.unwrap().len(), 1);
        other
            .append_driven(&b, vec![intent("r1:s:1", 1)])
            .await
            .unwrap();
    });
}
