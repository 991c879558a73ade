//! [`SqliteStore`]: the kernel's [`RunStore`] over one SQLite file.

use crate::error;
use crate::open::open_blocking;
use crate::worker::{GroupCache, Worker};
use a2aflow_kernel::journal::{
    EncodedEvent, Heartbeat, JournalEntry, JournalRecord, Lease, RunFilter, RunJournal, RunStarted,
    RunState, RunStore, RunSummary, StoreError, check_append, check_encoded_event_order,
    check_fence, grant_lease, is_run_cancel, released_lease, renew_lease, wall_clock_ms,
};
use a2aflow_model::{ErrorCode, Event};
use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How a [`SqliteStore`] behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreOptions {
    /// How long a lease lasts after it was granted or renewed (a driver renews it well before).
    /// A driver that died is taken over once its lease lapsed. Default 30 s.
    pub lease_ttl: Duration,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            lease_ttl: a2aflow_kernel::journal::DEFAULT_LEASE_TTL,
        }
    }
}

impl StoreOptions {
    /// These options with leases lasting `ttl`.
    pub fn with_lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl;
        self
    }
}

/// The embedded run store: one SQLite file in WAL mode, created on first use and migrated
/// forward by this crate. Cheap to clone (the clones share one connection on one thread).
#[derive(Debug, Clone)]
pub struct SqliteStore {
    worker: Worker,
    options: StoreOptions,
}

fn sql_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn sql_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or_default()
}

impl SqliteStore {
    /// Opens the store at `path` with default options (see [`SqliteStore::open_with`]).
    pub async fn open(path: impl Into<PathBuf>) -> Result<Self, StoreError> {
        SqliteStore::open_with(path, StoreOptions::default()).await
    }

    /// Opens the store at `path`, creating the file when there is none. Errors:
    /// `store.unavailable` (directory missing, not a directory or read-only; file unreadable),
    /// `store.not_a_store`, `store.newer_schema`, `store.corrupt`. A failed open leaves the file
    /// unchanged.
    pub async fn open_with(
        path: impl Into<PathBuf>,
        options: StoreOptions,
    ) -> Result<Self, StoreError> {
        let path = path.into();
        let p = path.clone();
        let conn = tokio::task::spawn_blocking(move || open_blocking(&p))
            .await
            .map_err(|e| {
                StoreError::new(
                    ErrorCode::StoreUnavailable,
                    format!("run store {}: opening stopped ({e})", path.display()),
                )
            })??;
        Ok(SqliteStore {
            worker: Worker::start(conn, path)?,
            options,
        })
    }

    /// The file this store lives in.
    pub fn path(&self) -> &Path {
        self.worker.path()
    }

    /// Finishes what is queued and closes the file for every clone of this store.
    pub async fn close(&self) {
        self.worker.close().await;
    }
}

/// The run's next sequence number and whether it finished, or `store.unknown_execution`.
fn run_row(conn: &Connection, path: &Path, id: &str) -> Result<(u64, bool), StoreError> {
    conn.prepare_cached(
        "SELECT next_seq, final_state IS NOT NULL FROM runs WHERE execution_id = ?1",
    )
    .and_then(|mut s| {
        s.query_row([id], |r| Ok((sql_u64(r.get(0)?), r.get(1)?)))
            .optional()
    })
    .map_err(|e| error::sqlite(path, "reading a run", &e))?
    .ok_or_else(|| StoreError::unknown_execution(id))
}

fn current_lease(conn: &Connection, path: &Path, id: &str) -> Result<Option<Lease>, StoreError> {
    conn.prepare_cached("SELECT owner, token, expires_at_ms FROM leases WHERE execution_id = ?1")
        .and_then(|mut s| {
            s.query_row([id], |r| {
                Ok(Lease {
                    execution_id: id.to_owned(),
                    owner: r.get(0)?,
                    token: sql_u64(r.get(1)?),
                    expires_at_ms: sql_u64(r.get(2)?),
                })
            })
            .optional()
        })
        .map_err(|e| error::sqlite(path, "reading a lease", &e))
}

/// Whether the run's journal holds a run-level `CancelRequested` (its few cancel records are
/// read back and decoded).
fn run_cancel_requested(conn: &Connection, path: &Path, id: &str) -> Result<bool, StoreError> {
    let bodies = conn
        .prepare_cached(
            "SELECT body FROM records WHERE execution_id = ?1 AND kind = 'cancelRequested'",
        )
        .and_then(|mut s| {
            s.query_map([id], |r| r.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(|e| error::sqlite(path, "reading a run's cancel requests", &e))?;
    for body in bodies {
        let record: JournalRecord = serde_json::from_str(&body).map_err(|e| {
            StoreError::new(
                ErrorCode::StoreCorrupt,
                format!(
                    "run store {}: a cancel record of run '{id}' does not decode: {e}",
                    path.display()
                ),
            )
        })?;
        if is_run_cancel(&record) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Extends `held` by `ttl` inside the caller's write transaction (`store.lease_lost` when it
/// is no longer the run's lease).
fn renew_in(
    conn: &Connection,
    path: &Path,
    held: &Lease,
    ttl: Duration,
) -> Result<Lease, StoreError> {
    run_row(conn, path, &held.execution_id)?;
    let current = current_lease(conn, path, &held.execution_id)?;
    let lease = renew_lease(current.as_ref(), held, wall_clock_ms(), ttl)?;
    put_lease(conn, path, &lease)?;
    Ok(lease)
}

/// [`run_row`] through the group's cache.
fn cached_run_row(
    conn: &Connection,
    cache: &mut GroupCache,
    path: &Path,
    id: &str,
) -> Result<(u64, bool), StoreError> {
    let facts = cache.run(id);
    if let Some(row) = facts.row {
        return Ok(row);
    }
    let row = run_row(conn, path, id)?;
    facts.row = Some(row);
    Ok(row)
}

/// `store.lease_lost` unless `held` is still the run's lease (`store.unknown_execution` for a
/// run the store does not hold), inside the caller's write transaction; the lease is read
/// once per group.
fn fence(
    conn: &Connection,
    cache: &mut GroupCache,
    path: &Path,
    held: &Lease,
) -> Result<(), StoreError> {
    let id = &held.execution_id;
    let facts = cache.run(id);
    if facts.lease.is_none() {
        facts.lease = Some(current_lease(conn, path, id)?);
    }
    // Read just above when the group had not read it yet: nothing is inserted here.
    let current = facts.lease.get_or_insert(None);
    if current.is_none() {
        cached_run_row(conn, cache, path, id)?;
        return check_fence(None, held);
    }
    check_fence(current.as_ref(), held)
}

fn put_lease(conn: &Connection, path: &Path, lease: &Lease) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO leases (execution_id, owner, token, expires_at_ms) \
         VALUES (?1, ?2, ?3, ?4)",
    )
    .and_then(|mut s| {
        s.execute(params![
            lease.execution_id,
            lease.owner,
            sql_i64(lease.token),
            sql_i64(lease.expires_at_ms)
        ])
    })
    .map(drop)
    .map_err(|e| error::sqlite(path, "writing a lease", &e))
}

fn encode(value: &JournalRecord) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| {
        StoreError::new(
            ErrorCode::StoreInvalidAppend,
            format!("a journal record cannot be written as JSON: {e}"),
        )
    })
}

fn insert_run(conn: &Connection, path: &Path, run: &RunStarted) -> Result<(), StoreError> {
    let exists = conn
        .prepare_cached("SELECT 1 FROM runs WHERE execution_id = ?1")
        .and_then(|mut s| s.exists([&run.execution_id]))
        .map_err(|e| error::sqlite(path, "reading a run", &e))?;
    if exists {
        return Err(StoreError::new(
            ErrorCode::StoreDuplicateExecution,
            format!(
                "a run with execution id '{}' is already in run store {}",
                run.execution_id,
                path.display()
            ),
        )
        .with_detail("executionId", run.execution_id.as_str()));
    }
    let body = encode(&JournalRecord::RunStarted(run.clone()))?;
    conn.prepare_cached(
        "INSERT INTO runs (execution_id, workflow_id, workflow_name, workflow_sha256, \
         started_at_ms, final_state, next_seq) VALUES (?1, ?2, ?3, ?4, ?5, NULL, 1)",
    )
    .and_then(|mut s| {
        s.execute(params![
            run.execution_id,
            run.workflow_id,
            run.workflow_name,
            run.workflow_sha256,
            sql_i64(run.started_at_ms)
        ])
    })
    .and_then(|_| {
        conn.prepare_cached(
            "INSERT INTO records (execution_id, seq, kind, body) VALUES (?1, 0, 'runStarted', ?2)",
        )?
        .execute(params![run.execution_id, body])
    })
    .map(drop)
    .map_err(|e| error::sqlite(path, "creating a run", &e))
}

/// A batch of journal records written as JSON text by the caller, before its job reaches the
/// store's thread (the one thread every write of the store waits for does only SQL), and
/// checked as far as it can be without the run's row ([`check_append`] for a run not finished).
struct EncodedRecords {
    /// Each record's kind and text, in order.
    rows: Vec<(&'static str, String)>,
    /// The run state the last record that ends the run sets, if one does.
    final_state: Option<&'static str>,
}

impl EncodedRecords {
    fn new(id: &str, records: &[JournalRecord]) -> Result<Self, StoreError> {
        check_append(id, false, records)?;
        let rows = records
            .iter()
            .map(|r| Ok((r.kind(), encode(r)?)))
            .collect::<Result<_, StoreError>>()?;
        let final_state = records
            .iter()
            .rev()
            .find_map(JournalRecord::final_state)
            .map(RunState::as_str);
        Ok(EncodedRecords { rows, final_state })
    }
}

/// What an append came to on the store's thread.
enum Appended {
    /// The records' `seq`s.
    At(Range<u64>),
    /// Nothing was written: the run had already finished (the caller, which kept the records,
    /// says which one was refused: [`refuse_finished`]).
    RunFinished,
}

/// The answer to an append of `records` to run `id`.
fn refuse_finished(
    id: &str,
    records: &[JournalRecord],
    appended: Result<Appended, StoreError>,
) -> Result<Range<u64>, StoreError> {
    match appended? {
        Appended::At(at) => Ok(at),
        // `insert_records` answers this only for a non-empty batch, which `check_append`
        // refuses for a finished run: the refusal names the first record.
        Appended::RunFinished => Err(check_append(id, true, records).err().unwrap_or_else(|| {
            StoreError::new(
                ErrorCode::StoreInvalidAppend,
                format!("cannot append to run '{id}': the run already finished"),
            )
            .with_detail("executionId", id)
        })),
    }
}

fn insert_records(
    conn: &Connection,
    cache: &mut GroupCache,
    path: &Path,
    id: &str,
    records: &EncodedRecords,
) -> Result<Appended, StoreError> {
    let (start, finished) = cached_run_row(conn, cache, path, id)?;
    if finished && !records.rows.is_empty() {
        return Ok(Appended::RunFinished);
    }
    let fail = |e: rusqlite::Error| error::sqlite(path, "appending", &e);
    let mut insert = conn
        .prepare_cached(
            "INSERT INTO records (execution_id, seq, kind, body) VALUES (?1, ?2, ?3, ?4)",
        )
        .map_err(fail)?;
    let mut seq = start;
    for (kind, body) in &records.rows {
        insert
            .execute(params![id, sql_i64(seq), kind, body])
            .map_err(fail)?;
        seq += 1;
    }
    let final_state = records.final_state;
    let finished_at_ms = final_state.map(|_| sql_i64(wall_clock_ms()));
    conn.prepare_cached(
        "UPDATE runs SET next_seq = ?2, final_state = COALESCE(?3, final_state), \
         finished_at_ms = COALESCE(?4, finished_at_ms) WHERE execution_id = ?1",
    )
    .and_then(|mut s| s.execute(params![id, sql_i64(seq), final_state, finished_at_ms]))
    .map_err(fail)?;
    cache.run(id).row = Some((seq, finished || final_state.is_some()));
    Ok(Appended::At(start..seq))
}

fn read_journal(conn: &Connection, path: &Path, id: &str) -> Result<RunJournal, StoreError> {
    run_row(conn, path, id)?;
    let fail = |e: rusqlite::Error| error::sqlite(path, "reading a journal", &e);
    let mut stmt = conn
        .prepare_cached("SELECT seq, kind, body FROM records WHERE execution_id = ?1 ORDER BY seq")
        .map_err(fail)?;
    let rows = stmt
        .query_map([id], |r| {
            Ok((
                sql_u64(r.get(0)?),
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
            ))
        })
        .map_err(fail)?;
    let mut entries = Vec::new();
    for row in rows {
        let (seq, kind, body) = row.map_err(fail)?;
        let record: JournalRecord = serde_json::from_str(&body)
            .map_err(|e| error::undecodable(path, &format!("record {seq} of run '{id}'"), &e))?;
        if seq != entries.len() as u64 || record.kind() != kind {
            return Err(StoreError::new(
                ErrorCode::StoreCorrupt,
                format!(
                    "run store {}: the journal of run '{id}' has a gap or a mislabelled record \
                     at {seq}",
                    path.display()
                ),
            ));
        }
        entries.push(JournalEntry { seq, record });
    }
    RunJournal {
        execution_id: id.to_owned(),
        entries,
    }
    .expand_named()
}

fn read_list(
    conn: &Connection,
    path: &Path,
    filter: &RunFilter,
    now_ms: u64,
) -> Result<Vec<RunSummary>, StoreError> {
    let fail = |e: rusqlite::Error| error::sqlite(path, "listing runs", &e);
    let mut stmt = conn
        .prepare_cached(
            "SELECT execution_id, workflow_name, started_at_ms, state, finished_at_ms FROM ( \
               SELECT r.execution_id, r.workflow_name, r.started_at_ms, r.finished_at_ms, \
                 COALESCE(r.final_state, \
                   CASE WHEN l.expires_at_ms > ?1 THEN 'running' ELSE 'waiting' END) AS state \
               FROM runs r LEFT JOIN leases l ON l.execution_id = r.execution_id) \
             WHERE ?2 IS NULL OR state = ?2 \
             ORDER BY started_at_ms DESC, execution_id DESC LIMIT ?3 OFFSET ?4",
        )
        .map_err(fail)?;
    let rows = stmt
        .query_map(
            params![
                sql_i64(now_ms),
                filter.state.map(RunState::as_str),
                sql_i64(filter.limit as u64),
                sql_i64(filter.offset as u64)
            ],
            |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    sql_u64(r.get(2)?),
                    r.get::<_, String>(3)?,
                    r.get::<_, Option<i64>>(4)?.map(sql_u64),
                ))
            },
        )
        .map_err(fail)?;
    let mut out = Vec::new();
    for row in rows {
        let (execution_id, workflow_name, started_at_ms, state, finished_at_ms) =
            row.map_err(fail)?;
        let state = serde_json::from_value(serde_json::Value::String(state)).map_err(|e| {
            error::undecodable(path, &format!("the state of run '{execution_id}'"), &e)
        })?;
        out.push(RunSummary {
            execution_id,
            state,
            workflow_name,
            started_at_ms,
            finished_at_ms,
        });
    }
    Ok(out)
}

fn insert_events(
    conn: &Connection,
    cache: &mut GroupCache,
    path: &Path,
    id: &str,
    events: &[Event],
) -> Result<(), StoreError> {
    let encoded = events
        .iter()
        .map(EncodedEvent::encode)
        .collect::<Result<Vec<_>, _>>()?;
    insert_encoded_events(conn, cache, path, id, &encoded)
}

/// Keeps a batch of events as the text they came in, in ONE row: `seq` the batch's first
/// event, `last_seq` its last, `body` their texts one per line (compact JSON holds no raw
/// line break). A wide step's thousands of events cost the store a few rows, not one each.
/// Rows of stores older than version 4 hold one event each (`last_seq` NULL).
fn insert_encoded_events(
    conn: &Connection,
    cache: &mut GroupCache,
    path: &Path,
    id: &str,
    events: &[EncodedEvent],
) -> Result<(), StoreError> {
    cached_run_row(conn, cache, path, id)?;
    let fail = |e: rusqlite::Error| error::sqlite(path, "recording events", &e);
    let (Some(first), Some(last)) = (events.first(), events.last()) else {
        return Ok(());
    };
    let stored_last: Option<i64> = conn
        .prepare_cached(
            "SELECT COALESCE(last_seq, seq) FROM events WHERE execution_id = ?1 \
             ORDER BY seq DESC LIMIT 1",
        )
        .and_then(|mut s| s.query_row([id], |r| r.get(0)).optional())
        .map_err(fail)?;
    check_encoded_event_order(id, stored_last.map(sql_u64), events)?;
    let mut body = String::with_capacity(events.iter().map(|e| e.json().len() + 1).sum());
    for (i, e) in events.iter().enumerate() {
        if i > 0 {
            body.push('\n');
        }
        body.push_str(e.json());
    }
    conn.prepare_cached(
        "INSERT INTO events (execution_id, seq, last_seq, body) VALUES (?1, ?2, ?3, ?4)",
    )
    .and_then(|mut s| s.execute(params![id, sql_i64(first.seq()), sql_i64(last.seq()), body]))
    .map_err(fail)?;
    Ok(())
}

/// Up to `limit` events of run `id` after `after_seq`, oldest first: the rows from the one
/// holding the first event after `after_seq` on, each row's events read line by line.
fn read_events(
    conn: &Connection,
    path: &Path,
    id: &str,
    after_seq: Option<u64>,
    limit: usize,
) -> Result<Vec<Event>, StoreError> {
    run_row(conn, path, id)?;
    let fail = |e: rusqlite::Error| error::sqlite(path, "reading events", &e);
    // The first row may end before `after_seq`'s successor: `limit` rows after it are enough.
    let mut stmt = conn
        .prepare_cached(
            "SELECT seq, body FROM events WHERE execution_id = ?1 AND seq >= COALESCE( \
               (SELECT max(seq) FROM events WHERE execution_id = ?1 AND seq <= ?2), ?2) \
             ORDER BY seq LIMIT ?3",
        )
        .map_err(fail)?;
    let after = after_seq.map_or(-1, sql_i64);
    let rows = stmt
        .query_map(
            params![id, after, sql_i64((limit as u64).saturating_add(1))],
            |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)),
        )
        .map_err(fail)?;
    let mut out = Vec::new();
    for row in rows {
        let (seq, body) = row.map_err(fail)?;
        for line in body.split('\n') {
            if out.len() == limit {
                return Ok(out);
            }
            let event: Event = serde_json::from_str(line).map_err(|e| {
                error::undecodable(path, &format!("event row {seq} of run '{id}'"), &e)
            })?;
            if after_seq.is_none_or(|a| event.seq > a) {
                out.push(event);
            }
        }
    }
    Ok(out)
}

#[async_trait]
impl RunStore for SqliteStore {
    async fn create_run(&self, run: RunStarted) -> Result<(), StoreError> {
        let path = self.worker.shared_path();
        self.worker
            .write(move |conn| insert_run(conn, &path, &run))
            .await
    }

    async fn append_batch(
        &self,
        execution_id: &str,
        records: Vec<JournalRecord>,
    ) -> Result<Range<u64>, StoreError> {
        let path = self.worker.shared_path();
        let id = execution_id.to_owned();
        let encoded = EncodedRecords::new(&id, &records)?;
        let appended = self
            .worker
            .write_cached(move |conn, cache| insert_records(conn, cache, &path, &id, &encoded))
            .await;
        refuse_finished(execution_id, &records, appended)
    }

    async fn append_driven(
        &self,
        lease: &Lease,
        records: Vec<JournalRecord>,
    ) -> Result<Range<u64>, StoreError> {
        let path = self.worker.shared_path();
        let held = lease.clone();
        let encoded = EncodedRecords::new(&lease.execution_id, &records)?;
        let appended = self
            .worker
            .write_cached(move |conn, cache| {
                fence(conn, cache, &path, &held)?;
                insert_records(conn, cache, &path, &held.execution_id, &encoded)
            })
            .await;
        refuse_finished(&lease.execution_id, &records, appended)
    }

    async fn record_driven_events(
        &self,
        lease: &Lease,
        events: Vec<Event>,
    ) -> Result<(), StoreError> {
        let path = self.worker.shared_path();
        let held = lease.clone();
        self.worker
            .write_cached(move |conn, cache| {
                fence(conn, cache, &path, &held)?;
                insert_events(conn, cache, &path, &held.execution_id, &events)
            })
            .await
    }

    async fn record_driven_encoded_events(
        &self,
        lease: &Lease,
        events: Vec<EncodedEvent>,
    ) -> Result<(), StoreError> {
        let path = self.worker.shared_path();
        let held = lease.clone();
        self.worker
            .write_cached(move |conn, cache| {
                fence(conn, cache, &path, &held)?;
                insert_encoded_events(conn, cache, &path, &held.execution_id, &events)
            })
            .await
    }

    async fn load(&self, execution_id: &str) -> Result<RunJournal, StoreError> {
        let path = self.worker.shared_path();
        let id = execution_id.to_owned();
        self.worker
            .read(move |conn| read_journal(conn, &path, &id))
            .await
    }

    async fn list(&self, filter: RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        let path = self.worker.shared_path();
        self.worker
            .read(move |conn| read_list(conn, &path, &filter, wall_clock_ms()))
            .await
    }

    async fn record_events(
        &self,
        execution_id: &str,
        events: Vec<Event>,
    ) -> Result<(), StoreError> {
        let path = self.worker.shared_path();
        let id = execution_id.to_owned();
        self.worker
            .write_cached(move |conn, cache| insert_events(conn, cache, &path, &id, &events))
            .await
    }

    async fn events(
        &self,
        execution_id: &str,
        after_seq: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        let path = self.worker.shared_path();
        let id = execution_id.to_owned();
        self.worker
            .read(move |conn| read_events(conn, &path, &id, after_seq, limit))
            .await
    }

    async fn lease(&self, execution_id: &str) -> Result<Option<Lease>, StoreError> {
        let path = self.worker.shared_path();
        let id = execution_id.to_owned();
        self.worker
            .read(move |conn| {
                run_row(conn, &path, &id)?;
                current_lease(conn, &path, &id)
            })
            .await
    }

    async fn acquire(&self, execution_id: &str, owner: &str) -> Result<Lease, StoreError> {
        let path = self.worker.shared_path();
        let (id, owner) = (execution_id.to_owned(), owner.to_owned());
        let ttl = self.options.lease_ttl;
        self.worker
            .write(move |conn| {
                run_row(conn, &path, &id)?;
                let current = current_lease(conn, &path, &id)?;
                let lease = grant_lease(current.as_ref(), &id, &owner, wall_clock_ms(), ttl)?;
                put_lease(conn, &path, &lease)?;
                Ok(lease)
            })
            .await
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, StoreError> {
        let path = self.worker.shared_path();
        let held = lease.clone();
        let ttl = self.options.lease_ttl;
        self.worker
            .write(move |conn| renew_in(conn, &path, &held, ttl))
            .await
    }

    async fn heartbeat(&self, lease: &Lease) -> Result<Heartbeat, StoreError> {
        let path = self.worker.shared_path();
        let held = lease.clone();
        let ttl = self.options.lease_ttl;
        self.worker
            .write(move |conn| {
                let lease = renew_in(conn, &path, &held, ttl)?;
                let cancel_requested = run_cancel_requested(conn, &path, &held.execution_id)?;
                Ok(Heartbeat {
                    lease,
                    cancel_requested,
                })
            })
            .await
    }

    async fn release(&self, lease: Lease) -> Result<(), StoreError> {
        let path = self.worker.shared_path();
        self.worker
            .write(move |conn| {
                run_row(conn, &path, &lease.execution_id)?;
                let current = current_lease(conn, &path, &lease.execution_id)?;
                if let Some(lapsed) = released_lease(current.as_ref(), &lease) {
                    put_lease(conn, &path, &lapsed)?;
                }
                Ok(())
            })
            .await
    }
}

#[cfg(test)]
mod tests {
    //! The group cache: jobs in ONE group transaction share what they read of a run, and a job
    //! that changes it without the cache leaves the next job reading it afresh.
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use a2aflow_kernel::journal::samples::{intent, started};
    use std::sync::mpsc as std_mpsc;

    /// Holds the store's thread until the returned sender is used: the jobs queued meanwhile
    /// make one group when it is let go.
    async fn hold_thread(store: &SqliteStore) -> std_mpsc::Sender<()> {
        let (go_tx, go_rx) = std_mpsc::channel::<()>();
        let (held_tx, held_rx) = tokio::sync::oneshot::channel::<()>();
        let worker = store.worker.clone();
        tokio::spawn(async move {
            worker
                .read(move |_| {
                    let _ = held_tx.send(());
                    // A hang guard only: the test lets it go at once.
                    let _ = go_rx.recv_timeout(Duration::from_secs(30));
                    Ok(())
                })
                .await
        });
        held_rx.await.unwrap();
        go_tx
    }

    #[tokio::test]
    async fn a_run_taken_over_inside_a_group_fences_the_later_appends_of_that_group() {
        let dir = tempfile::tempdir().unwrap();
        let options = StoreOptions::default().with_lease_ttl(Duration::from_millis(1));
        let store = SqliteStore::open_with(dir.path().join("runs.db"), options)
            .await
            .unwrap();
        store.create_run(started("e", 1)).await.unwrap();
        let lease = store.acquire("e", "a").await.unwrap();
        // Lapsed: another owner may take the run over.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let go = hold_thread(&store).await;
        let (s1, l1) = (store.clone(), lease.clone());
        let first = tokio::spawn(async move { s1.append_driven(&l1, vec![intent("t", 0)]).await });
        tokio::task::yield_now().await;
        let s2 = store.clone();
        let takeover = tokio::spawn(async move { s2.acquire("e", "b").await });
        tokio::task::yield_now().await;
        let (s3, l3) = (store.clone(), lease.clone());
        let late = tokio::spawn(async move { s3.append_driven(&l3, vec![intent("t", 1)]).await });
        tokio::task::yield_now().await;
        go.send(()).unwrap();
        assert_eq!(first.await.unwrap().unwrap(), 1..2);
        assert_eq!(takeover.await.unwrap().unwrap().token, lease.token + 1);
        let late = late.await.unwrap().unwrap_err();
        assert!(late.is(ErrorCode::StoreLeaseLost), "{late:?}");
        // The group wrote what it acknowledged and nothing else.
        let journal = store.load("e").await.unwrap();
        assert_eq!(journal.entries.len(), 2);
    }

    #[tokio::test]
    async fn appends_in_one_group_take_consecutive_sequence_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("runs.db")).await.unwrap();
        store.create_run(started("e", 1)).await.unwrap();
        let lease = store.acquire("e", "a").await.unwrap();
        let go = hold_thread(&store).await;
        let mut appends = Vec::new();
        for n in 0..4 {
            let (s, l) = (store.clone(), lease.clone());
            let records = vec![intent("t", 2 * n), intent("t", 2 * n + 1)];
            appends.push(tokio::spawn(
                async move { s.append_driven(&l, records).await },
            ));
            tokio::task::yield_now().await;
        }
        go.send(()).unwrap();
        let mut ranges = Vec::new();
        for a in appends {
            ranges.push(a.await.unwrap().unwrap());
        }
        assert_eq!(ranges, vec![1..3, 3..5, 5..7, 7..9]);
        let seqs: Vec<u64> = store
            .load("e")
            .await
            .unwrap()
            .entries
            .iter()
            .map(|e| e.seq)
            .collect();
        assert_eq!(seqs, (0..9).collect::<Vec<_>>());
    }
}
