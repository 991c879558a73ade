//! A store written by a previous schema version (1, 2 or 3) opens, is migrated to the current one,
//! and keeps its runs.

use crate::support::{block_on, event, intent, started};
use a2aflow_kernel::journal::{JournalRecord, RunFilter, RunStore};
use a2aflow_store_sqlite::{APPLICATION_ID, CURRENT_VERSION, SqliteStore};
use rusqlite::Connection;

/// Schema version 1 exactly as that version wrote it (kept here as a fixture: the crate's own
/// migration text may be edited only by adding steps).
const V1: &str = "
    CREATE TABLE runs (
        execution_id    TEXT PRIMARY KEY NOT NULL,
        workflow_id     TEXT NOT NULL,
        workflow_name   TEXT NOT NULL,
        workflow_sha256 TEXT NOT NULL,
        started_at_ms   INTEGER NOT NULL,
        final_state     TEXT,
        next_seq        INTEGER NOT NULL
    );
    CREATE TABLE records (
        execution_id TEXT NOT NULL,
        seq          INTEGER NOT NULL,
        kind         TEXT NOT NULL,
        body         TEXT NOT NULL,
        PRIMARY KEY (execution_id, seq)
    ) WITHOUT ROWID;
    CREATE TABLE leases (
        execution_id  TEXT PRIMARY KEY NOT NULL,
        owner         TEXT NOT NULL,
        token         INTEGER NOT NULL,
        expires_at_ms INTEGER NOT NULL
    ) WITHOUT ROWID;";

fn write_v1_store(path: &std::path::Path) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(V1).unwrap();
    conn.pragma_update(None, "application_id", APPLICATION_ID)
        .unwrap();
    conn.pragma_update(None, "user_version", 1).unwrap();
    let run = started("old-run", 42);
    let first = serde_json::to_string(&JournalRecord::RunStarted(run.clone())).unwrap();
    let second = serde_json::to_string(&intent("old-run:a:0", 0)).unwrap();
    conn.execute(
        "INSERT INTO runs VALUES (?1, ?2, ?3, ?4, 42, NULL, 2)",
        (
            &run.execution_id,
            &run.workflow_id,
            &run.workflow_name,
            &run.workflow_sha256,
        ),
    )
    .unwrap();
    conn.execute(
        "INSERT INTO records VALUES ('old-run', 0, 'runStarted', ?1), ('old-run', 1, 'taskIntent', ?2)",
        (&first, &second),
    )
    .unwrap();
}

/// What version 2 added to version 1, exactly as that version wrote it.
const V2: &str = "
    CREATE TABLE events (
        execution_id TEXT NOT NULL,
        seq          INTEGER NOT NULL,
        body         TEXT NOT NULL,
        PRIMARY KEY (execution_id, seq)
    ) WITHOUT ROWID;
    CREATE INDEX runs_newest ON runs (started_at_ms DESC, execution_id DESC);";

/// A version-2 store with `old-run` (unfinished) and `done-run` (finished before version 3
/// kept finish times).
fn write_v2_store(path: &std::path::Path) {
    write_v1_store(path);
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(V2).unwrap();
    conn.pragma_update(None, "user_version", 2).unwrap();
    let run = started("done-run", 7);
    let first = serde_json::to_string(&JournalRecord::RunStarted(run.clone())).unwrap();
    conn.execute(
        "INSERT INTO runs VALUES (?1, ?2, ?3, ?4, 7, 'succeeded', 1)",
        (
            &run.execution_id,
            &run.workflow_id,
            &run.workflow_name,
            &run.workflow_sha256,
        ),
    )
    .unwrap();
    conn.execute(
        "INSERT INTO records VALUES ('done-run', 0, 'runStarted', ?1)",
        [&first],
    )
    .unwrap();
}

/// What version 3 added to version 2, exactly as that version wrote it.
const V3: &str = "ALTER TABLE runs ADD COLUMN finished_at_ms INTEGER;";

/// A version-3 store: `old-run` with two events kept one per row, as versions 2 and 3 kept
/// them.
fn write_v3_store(path: &std::path::Path) {
    write_v2_store(path);
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(V3).unwrap();
    conn.pragma_update(None, "user_version", 3).unwrap();
    for seq in 0..2 {
        let body = serde_json::to_string(&event("old-run", seq)).unwrap();
        conn.execute(
            "INSERT INTO events VALUES ('old-run', ?1, ?2)",
            (seq as i64, &body),
        )
        .unwrap();
    }
}

#[test]
fn a_version_3_store_opens_migrated_and_its_events_read_with_the_new_batches() {
    assert_eq!(
        CURRENT_VERSION, 4,
        "add a fixture for the version this replaces"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v3.db");
    write_v3_store(&path);
    assert_eq!(version(&path), 3);
    block_on(async {
        let store = SqliteStore::open(&path).await.unwrap();
        let seqs = |events: Vec<a2aflow_model::Event>| -> Vec<u64> {
            events.iter().map(|e| e.seq).collect()
        };
        assert_eq!(
            seqs(store.events("old-run", None, 10).await.unwrap()),
            [0, 1]
        );
        // A batch after the old rows: one row of three events.
        let batch = (2..5).map(|seq| event("old-run", seq)).collect();
        store.record_events("old-run", batch).await.unwrap();
        assert_eq!(
            seqs(store.events("old-run", None, 10).await.unwrap()),
            [0, 1, 2, 3, 4]
        );
        // Reading from inside a batch, and a limit that ends inside one.
        assert_eq!(
            seqs(store.events("old-run", Some(0), 2).await.unwrap()),
            [1, 2]
        );
        assert_eq!(
            seqs(store.events("old-run", Some(2), 10).await.unwrap()),
            [3, 4]
        );
        assert_eq!(
            seqs(store.events("old-run", Some(3), 1).await.unwrap()),
            [4]
        );
        assert!(
            store
                .events("old-run", Some(4), 10)
                .await
                .unwrap()
                .is_empty()
        );
        // No limit at all reads every event.
        let all = store.events("old-run", None, usize::MAX).await.unwrap();
        assert_eq!(all.len(), 5);
        // An event not after the batch's last one is refused, old rows or new.
        let e = store
            .record_events("old-run", vec![event("old-run", 4)])
            .await
            .unwrap_err();
        assert_eq!(e.code, a2aflow_model::ErrorCode::StoreInvalidAppend);
        store.close().await;
    });
    assert_eq!(version(&path), CURRENT_VERSION);
}

#[test]
fn a_version_2_store_opens_migrated_and_new_ends_are_timed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.db");
    write_v2_store(&path);
    assert_eq!(version(&path), 2);
    block_on(async {
        let store = SqliteStore::open(&path).await.unwrap();
        let listed = store.list(RunFilter::default()).await.unwrap();
        let done = listed
            .iter()
            .find(|r| r.execution_id == "done-run")
            .unwrap();
        assert_eq!(done.finished_at_ms, None, "version 2 kept no finish time");
        let finished = JournalRecord::RunFinished {
            result: a2aflow_kernel::journal::samples::result("old-run"),
        };
        store.append("old-run", finished).await.unwrap();
        let listed = store.list(RunFilter::default()).await.unwrap();
        let old = listed.iter().find(|r| r.execution_id == "old-run").unwrap();
        assert!(old.finished_at_ms.is_some_and(|t| t > old.started_at_ms));
        store.close().await;
    });
    assert_eq!(version(&path), CURRENT_VERSION);
}

fn version(path: &std::path::Path) -> i32 {
    Connection::open(path)
        .unwrap()
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap()
}

#[test]
fn a_version_1_store_opens_migrated_with_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.db");
    write_v1_store(&path);
    assert_eq!(version(&path), 1);
    block_on(async {
        let store = SqliteStore::open(&path).await.unwrap();
        let journal = store.load("old-run").await.unwrap();
        assert_eq!(journal.entries.len(), 2);
        assert_eq!(journal.started().unwrap(), &started("old-run", 42));
        assert_eq!(journal.entries[1].record, intent("old-run:a:0", 0));
        // What version 2 added works on the migrated store.
        store
            .record_events("old-run", vec![event("old-run", 0)])
            .await
            .unwrap();
        assert_eq!(store.events("old-run", None, 10).await.unwrap().len(), 1);
        let listed = store.list(RunFilter::default()).await.unwrap();
        assert_eq!(listed[0].execution_id, "old-run");
        assert_eq!(
            store
                .append("old-run", intent("old-run:a:0", 1))
                .await
                .unwrap(),
            2
        );
        store.close().await;
    });
    assert_eq!(version(&path), CURRENT_VERSION);
}

#[test]
fn a_new_store_is_created_at_the_current_version() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    block_on(async {
        SqliteStore::open(&path).await.unwrap().close().await;
    });
    let conn = Connection::open(&path).unwrap();
    let app: i32 = conn
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .unwrap();
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(app, APPLICATION_ID);
    assert_eq!(mode, "wal");
    drop(conn);
    assert_eq!(version(&path), CURRENT_VERSION);
}
