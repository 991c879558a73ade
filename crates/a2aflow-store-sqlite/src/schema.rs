//! The schema: the application id that marks an a2aflow store, its version (`PRAGMA
//! user_version`) and the forward migrations, one step per version.

use rusqlite::Connection;

/// `PRAGMA application_id` of every a2aflow run store: "A2AF" in ASCII.
pub const APPLICATION_ID: i32 = 0x4132_4146;

/// The schema version this build writes and reads.
pub const CURRENT_VERSION: i32 = 4;

/// The step that brings a store from version `n - 1` to `n` is `MIGRATIONS[n - 1]`.
const MIGRATIONS: &[&str] = &[
    // 0 -> 1: runs, their journal records, and the per-run leases.
    "CREATE TABLE runs (
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
     ) WITHOUT ROWID;",
    // 1 -> 2: the run's events apart from its journal, and the newest-first listing index.
    "CREATE TABLE events (
         execution_id TEXT NOT NULL,
         seq          INTEGER NOT NULL,
         body         TEXT NOT NULL,
         PRIMARY KEY (execution_id, seq)
     ) WITHOUT ROWID;
     CREATE INDEX runs_newest ON runs (started_at_ms DESC, execution_id DESC);",
    // 2 -> 3: when a run finished (NULL for runs that finished before this version).
    "ALTER TABLE runs ADD COLUMN finished_at_ms INTEGER;",
    // 3 -> 4: events kept per batch: a row holds the events `seq..=last_seq`, their JSON texts
    // one per line (`last_seq` NULL: the row's one event, as every row before this version).
    "ALTER TABLE events ADD COLUMN last_seq INTEGER;",
];

/// Runs every step after `from` up to [`CURRENT_VERSION`] and records the new version, inside
/// the caller's transaction. A new store (`from == 0`) also gets the [`APPLICATION_ID`].
pub(crate) fn migrate(conn: &Connection, from: i32) -> rusqlite::Result<()> {
    let start = usize::try_from(from).unwrap_or(usize::MAX);
    for (at, step) in MIGRATIONS.iter().enumerate().skip(start) {
        tracing::info!(to = at + 1, "migrating the run store schema");
        conn.execute_batch(step)?;
    }
    if from == 0 {
        conn.pragma_update(None, "application_id", APPLICATION_ID)?;
    }
    conn.pragma_update(None, "user_version", CURRENT_VERSION)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn there_is_one_step_per_version() {
        assert_eq!(MIGRATIONS.len(), usize::try_from(CURRENT_VERSION).unwrap());
    }
}
