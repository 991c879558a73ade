//! Opening what is not a usable store: a typed error with a stable code, and the file unchanged.

use crate::support::{block_on, started};
use a2aflow_kernel::journal::RunStore;
use a2aflow_model::ErrorCode;
use a2aflow_store_sqlite::SqliteStore;
use std::path::Path;

fn open_error(path: &Path) -> a2aflow_kernel::StoreError {
    block_on(async { SqliteStore::open(path).await.map(drop).unwrap_err() })
}

/// Opening `path` fails with `code` and leaves its bytes as they were.
fn refused_unchanged(path: &Path, code: ErrorCode) -> a2aflow_kernel::StoreError {
    let before = std::fs::read(path).unwrap();
    let e = open_error(path);
    assert_eq!(e.code, code, "{e}");
    // Compared without printing the bytes.
    assert!(
        std::fs::read(path).unwrap() == before,
        "the failed open changed the file"
    );
    assert!(
        !Path::new(&format!("{}-wal", path.display())).exists(),
        "the failed open left a write-ahead log"
    );
    e
}

#[test]
fn a_missing_directory_or_a_file_for_a_directory_is_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let e = open_error(&dir.path().join("no/such/dir/runs.db"));
    assert!(e.is(ErrorCode::StoreUnavailable), "{e}");
    assert!(e.message.contains("create it first"), "{e}");
    let file = dir.path().join("plain");
    std::fs::write(&file, b"x").unwrap();
    let e = open_error(&file.join("runs.db"));
    assert!(e.is(ErrorCode::StoreUnavailable), "{e}");
    let e = open_error(dir.path());
    assert!(e.is(ErrorCode::StoreUnavailable), "{e}");
}

#[cfg(target_os = "linux")]
#[test]
fn a_read_only_directory_is_unavailable() {
    // /proc refuses new files even to root (a chmod'ed directory would not stop root).
    let e = open_error(Path::new("/proc/a2aflow-runs.db"));
    assert!(e.is(ErrorCode::StoreUnavailable), "{e}");
}

#[test]
fn a_file_that_is_not_sqlite_is_not_a_store_and_stays_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "dear diary, today I ran a workflow\n".repeat(50)).unwrap();
    let e = refused_unchanged(&path, ErrorCode::StoreNotAStore);
    assert!(e.message.contains("left unchanged"), "{e}");
}

#[test]
fn another_applications_sqlite_database_is_not_a_store_and_stays_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
        .unwrap();
    drop(conn);
    refused_unchanged(&path, ErrorCode::StoreNotAStore);
}

fn store_with_a_run(path: &Path) {
    block_on(async {
        let store = SqliteStore::open(path).await.unwrap();
        store.create_run(started("r1", 1)).await.unwrap();
        store.close().await;
    });
}

#[test]
fn a_store_of_a_newer_schema_is_refused_and_stays_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    store_with_a_run(&path);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    drop(conn);
    let e = refused_unchanged(&path, ErrorCode::StoreNewerSchema);
    assert_eq!(e.details["version"], 99);
}

#[test]
fn an_empty_or_truncated_store_is_corrupt_and_stays_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    store_with_a_run(&path);
    let len = std::fs::metadata(&path).unwrap().len();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(len - 1).unwrap();
    drop(file);
    refused_unchanged(&path, ErrorCode::StoreCorrupt);
    std::fs::write(&path, b"").unwrap();
    refused_unchanged(&path, ErrorCode::StoreCorrupt);
}

#[test]
fn an_id_from_another_store_is_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.db"), dir.path().join("b.db"));
    store_with_a_run(&a);
    block_on(async {
        let other = SqliteStore::open(&b).await.unwrap();
        let e = other.load("r1").await.unwrap_err();
        assert!(e.is(ErrorCode::StoreUnknownExecution), "{e}");
    });
}
