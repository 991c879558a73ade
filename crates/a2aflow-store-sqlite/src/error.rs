//! SQLite and file errors as [`StoreError`]s with `store.*` codes.

use a2aflow_kernel::StoreError;
use a2aflow_model::ErrorCode;
use rusqlite::ErrorCode as Sqlite;
use std::path::Path;

/// The store code of a SQLite error: a damaged file is `store.corrupt`; everything else that
/// keeps the store from working (cannot open, read-only, disk full, busy past the timeout, I/O)
/// is `store.unavailable`.
pub(crate) fn code_of(e: &rusqlite::Error) -> ErrorCode {
    match e.sqlite_error_code() {
        Some(Sqlite::DatabaseCorrupt | Sqlite::NotADatabase) => ErrorCode::StoreCorrupt,
        _ => ErrorCode::StoreUnavailable,
    }
}

/// A SQLite error of the store at `path` while doing `what`.
pub(crate) fn sqlite(path: &Path, what: &str, e: &rusqlite::Error) -> StoreError {
    let code = code_of(e);
    let hint = match code {
        ErrorCode::StoreCorrupt => {
            "the file is damaged; restore it from a backup or move it away and start a new store"
        }
        _ => match e.sqlite_error_code() {
            Some(Sqlite::DatabaseBusy | Sqlite::DatabaseLocked) => {
                "another process kept the store's write lock past the busy timeout"
            }
            Some(Sqlite::ReadOnly | Sqlite::CannotOpen | Sqlite::PermissionDenied) => {
                "check that the file and its directory exist and are writable"
            }
            Some(Sqlite::DiskFull) => "the disk is full",
            _ => "the store could not be used",
        },
    };
    StoreError::new(
        code,
        format!("run store {}: {what} failed: {e} ({hint})", path.display()),
    )
    .with_detail("path", path.display().to_string())
}

/// A record or event the store holds that does not decode: `store.corrupt`.
pub(crate) fn undecodable(path: &Path, what: &str, e: &serde_json::Error) -> StoreError {
    StoreError::new(
        ErrorCode::StoreCorrupt,
        format!(
            "run store {}: {what} does not decode ({e}); the file is damaged or was changed by \
             another program",
            path.display()
        ),
    )
    .with_detail("path", path.display().to_string())
}

/// The store's worker thread is gone (the store was closed).
pub(crate) fn closed(path: &Path) -> StoreError {
    StoreError::new(
        ErrorCode::StoreUnavailable,
        format!("run store {} is closed", path.display()),
    )
    .with_detail("path", path.display().to_string())
}
