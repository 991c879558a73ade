//! Opening a store file: what is checked before SQLite may write anything, and how a new or an
//! older store is brought to the current schema.
//!
//! A file that is not ours, is newer, or is damaged is refused before any read-write connection
//! exists, so a failed open never changes it: first the 100-byte SQLite header is read as plain
//! bytes (magic, application id, schema version, page count against the file's length), then a
//! read-only connection confirms the application id and version and parses the schema.

use crate::error;
use crate::schema::{APPLICATION_ID, CURRENT_VERSION, migrate};
use a2aflow_kernel::StoreError;
use a2aflow_model::ErrorCode;
use rusqlite::{Connection, OpenFlags, TransactionBehavior};
use std::io::Read;
use std::path::Path;
use std::time::Duration;

/// How long a connection waits for another process's write lock before `store.unavailable`.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

const MAGIC: &[u8; 16] = b"SQLite format 3\0";
const HEADER_LEN: usize = 100;
/// Prepared statements kept per connection.
const STATEMENT_CACHE: usize = 32;

/// What the file at the store's path is, from its bytes.
#[derive(Debug, PartialEq, Eq)]
enum Found {
    /// No file yet: a new store is created.
    Nothing,
    /// An a2aflow store (its header may lag a write-ahead log that is not checkpointed yet).
    Store,
}

fn store_error(code: ErrorCode, path: &Path, message: String) -> StoreError {
    StoreError::new(code, message).with_detail("path", path.display().to_string())
}

fn be_u32(header: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&header[at..at + 4]);
    u32::from_be_bytes(b)
}

/// Checks the directory and reads the file's header, without opening it with SQLite.
fn inspect(path: &Path) -> Result<Found, StoreError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(store_error(
                ErrorCode::StoreUnavailable,
                path,
                format!(
                    "run store {}: {} is not a directory",
                    path.display(),
                    dir.display()
                ),
            ));
        }
        Err(e) => {
            return Err(store_error(
                ErrorCode::StoreUnavailable,
                path,
                format!(
                    "run store {}: its directory {} cannot be used ({e}); create it first",
                    path.display(),
                    dir.display()
                ),
            ));
        }
    }
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::Nothing),
        Err(e) => {
            return Err(store_error(
                ErrorCode::StoreUnavailable,
                path,
                format!("run store {}: cannot be read ({e})", path.display()),
            ));
        }
    };
    let unreadable = |e: std::io::Error| {
        store_error(
            ErrorCode::StoreUnavailable,
            path,
            format!("run store {}: cannot be read ({e})", path.display()),
        )
    };
    let meta = file.metadata().map_err(unreadable)?;
    if meta.is_dir() {
        return Err(store_error(
            ErrorCode::StoreUnavailable,
            path,
            format!(
                "run store {} is a directory; name a file in it",
                path.display()
            ),
        ));
    }
    let len = meta.len();
    let mut header = Vec::with_capacity(HEADER_LEN);
    file.by_ref()
        .take(HEADER_LEN as u64)
        .read_to_end(&mut header)
        .map_err(unreadable)?;
    check_header(path, &header, len)
}

/// Judges the first bytes of an existing file of `len` bytes.
fn check_header(path: &Path, header: &[u8], len: u64) -> Result<Found, StoreError> {
    let corrupt = |why: &str| {
        store_error(
            ErrorCode::StoreCorrupt,
            path,
            format!(
                "run store {} is damaged: {why}; it was left unchanged (restore it from a backup, \
                 or move it away to start a new store)",
                path.display()
            ),
        )
    };
    let not_ours = |why: &str| {
        store_error(
            ErrorCode::StoreNotAStore,
            path,
            format!(
                "{} is not an a2aflow run store ({why}); it was left unchanged — name another \
                 file",
                path.display()
            ),
        )
    };
    if header.is_empty() {
        return Err(corrupt("the file is empty"));
    }
    let magic = &MAGIC[..header.len().min(MAGIC.len())];
    if !header.starts_with(magic) {
        return Err(not_ours("it is not a SQLite database"));
    }
    if header.len() < HEADER_LEN {
        return Err(corrupt("the file ends inside its header"));
    }
    if be_u32(header, 68) != APPLICATION_ID as u32 {
        return Err(not_ours("a SQLite database of another application"));
    }
    let version = be_u32(header, 60);
    if version > CURRENT_VERSION as u32 {
        return Err(newer(path, i64::from(version)));
    }
    let page_size = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65_536,
        n => u64::from(n),
    };
    let pages_valid = be_u32(header, 24) == be_u32(header, 92);
    let pages = u64::from(be_u32(header, 28));
    if pages_valid && wal_is_empty(path) && pages * page_size > len {
        return Err(corrupt(&format!(
            "it is {len} bytes but its header counts {pages} pages of {page_size} bytes \
             (truncated)"
        )));
    }
    Ok(Found::Store)
}

/// True when no write-ahead log with frames lies beside the store (then the main file alone
/// must hold every page its header counts).
fn wal_is_empty(path: &Path) -> bool {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::metadata(Path::new(&wal)).map_or(true, |m| m.len() == 0)
}

fn newer(path: &Path, version: i64) -> StoreError {
    store_error(
        ErrorCode::StoreNewerSchema,
        path,
        format!(
            "run store {} has schema version {version}, newer than the {CURRENT_VERSION} this \
             a2aflow knows; it was left unchanged — use a newer a2aflow",
            path.display()
        ),
    )
    .with_detail("version", version)
    .with_detail("supported", CURRENT_VERSION)
}

/// Confirms an existing store through a read-only connection (it never writes the file).
fn verify_read_only(path: &Path) -> Result<(), StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)
        .map_err(|e| error::sqlite(path, "opening read-only", &e))?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| error::sqlite(path, "setting the busy timeout", &e))?;
    let (app, version) = ids(&conn).map_err(|e| error::sqlite(path, "reading its header", &e))?;
    if app != APPLICATION_ID {
        return Err(store_error(
            ErrorCode::StoreNotAStore,
            path,
            format!(
                "{} is not an a2aflow run store (application id {app:#x}); it was left unchanged",
                path.display()
            ),
        ));
    }
    if version > CURRENT_VERSION {
        return Err(newer(path, i64::from(version)));
    }
    if version < 1 {
        return Err(store_error(
            ErrorCode::StoreCorrupt,
            path,
            format!(
                "run store {} has no schema version; it was left unchanged",
                path.display()
            ),
        ));
    }
    conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| {
        r.get::<_, i64>(0)
    })
    .map_err(|e| error::sqlite(path, "reading its schema", &e))?;
    Ok(())
}

fn ids(conn: &Connection) -> rusqlite::Result<(i32, i32)> {
    let app = conn.pragma_query_value(None, "application_id", |r| r.get(0))?;
    let version = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    Ok((app, version))
}

/// Opens (creating it on first use) the store at `path`, migrated to [`CURRENT_VERSION`], in
/// WAL mode with `synchronous = FULL`. Blocking: call it off the async runtime.
pub(crate) fn open_blocking(path: &Path) -> Result<Connection, StoreError> {
    let found = inspect(path)?;
    if found == Found::Store {
        verify_read_only(path)?;
    }
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if found == Found::Nothing {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    let mut conn =
        Connection::open_with_flags(path, flags).map_err(|e| error::sqlite(path, "opening", &e))?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| error::sqlite(path, "setting the busy timeout", &e))?;
    // Every statement the store runs (its queries and the worker's transaction statements)
    // stays prepared: rusqlite's default of 16 is below their number.
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    if found == Found::Nothing {
        initialise(&mut conn).map_err(|e| error::sqlite(path, "creating the store", &e))?;
    }
    configure(&conn).map_err(|e| error::sqlite(path, "configuring", &e))?;
    upgrade(&mut conn, path)?;
    Ok(conn)
}

/// A new file: the whole schema and the application id, written in rollback-journal mode so the
/// main file's header names the store before WAL mode is turned on. Another process that
/// created the same file first wins; then this does nothing.
fn initialise(conn: &mut Connection) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let (app, version) = ids(&tx)?;
    if app == 0 && version == 0 {
        migrate(&tx, 0)?;
    }
    tx.commit()
}

/// WAL (readers never block the writer) and `synchronous = FULL` (an acknowledged append
/// survives a power loss: docs/reliability.md).
fn configure(conn: &Connection) -> rusqlite::Result<()> {
    let mode: String = conn.pragma_update_and_check(None, "journal_mode", "wal", |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(%mode, "the run store could not switch to WAL mode");
    }
    conn.pragma_update(None, "synchronous", "FULL")?;
    Ok(())
}

/// Runs the forward migrations an older store needs, then checkpoints so that the main file's
/// header carries the new version.
fn upgrade(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let fail = |e: rusqlite::Error| error::sqlite(path, "migrating the schema", &e);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(fail)?;
    let (app, version) = ids(&tx).map_err(fail)?;
    if app != APPLICATION_ID {
        return Err(store_error(
            ErrorCode::StoreNotAStore,
            path,
            format!("{} is not an a2aflow run store", path.display()),
        ));
    }
    if version > CURRENT_VERSION {
        return Err(newer(path, i64::from(version)));
    }
    if version == CURRENT_VERSION {
        return tx.commit().map_err(fail);
    }
    migrate(&tx, version).map_err(fail)?;
    tx.commit().map_err(fail)?;
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(app: u32, version: u32, pages: u32) -> Vec<u8> {
        let mut h = vec![0u8; HEADER_LEN];
        h[..16].copy_from_slice(MAGIC);
        h[16..18].copy_from_slice(&4096u16.to_be_bytes());
        h[28..32].copy_from_slice(&pages.to_be_bytes());
        h[60..64].copy_from_slice(&version.to_be_bytes());
        h[68..72].copy_from_slice(&app.to_be_bytes());
        h
    }

    fn code(r: Result<Found, StoreError>) -> ErrorCode {
        r.unwrap_err().code
    }

    #[test]
    fn headers_are_judged_before_sqlite_sees_the_file() {
        let p = Path::new("/nonexistent-dir/x.db");
        let ours = APPLICATION_ID as u32;
        assert_eq!(
            check_header(p, &header(ours, 2, 2), 8192).unwrap(),
            Found::Store
        );
        assert_eq!(code(check_header(p, &[], 0)), ErrorCode::StoreCorrupt);
        assert_eq!(
            code(check_header(p, b"SQLite f", 8)),
            ErrorCode::StoreCorrupt
        );
        assert_eq!(
            code(check_header(p, b"hello world", 11)),
            ErrorCode::StoreNotAStore
        );
        assert_eq!(
            code(check_header(p, &header(ours, 2, 2)[..50], 50)),
            ErrorCode::StoreCorrupt
        );
        assert_eq!(
            code(check_header(p, &header(0, 0, 2), 8192)),
            ErrorCode::StoreNotAStore
        );
        assert_eq!(
            code(check_header(p, &header(ours, 9, 2), 8192)),
            ErrorCode::StoreNewerSchema
        );
        assert_eq!(
            code(check_header(p, &header(ours, 2, 3), 8192)),
            ErrorCode::StoreCorrupt
        );
    }
}
