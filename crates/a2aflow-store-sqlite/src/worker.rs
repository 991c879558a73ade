//! The store's one connection lives on a dedicated thread; async callers hand it jobs through a
//! bounded channel and await the reply, so SQLite never blocks the async runtime.
//!
//! Group commit: the thread takes every write job that is queued (up to [`MAX_GROUP`]) and runs
//! them in ONE `BEGIN IMMEDIATE` transaction, each inside its own savepoint (a job that fails is
//! rolled back alone), then commits once — one fsync for the group — and only then replies. A
//! write is acknowledged only after the commit that holds it is durable.
//!
//! Inside a group the runs' rows and leases cannot change but through the group's own jobs
//! (`BEGIN IMMEDIATE` holds the database's write lock), so the jobs that append to a run share
//! what they read of it ([`GroupCache`]) instead of reading it again per job.

use crate::error;
use a2aflow_kernel::StoreError;
use a2aflow_kernel::journal::Lease;
use rusqlite::Connection;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// At most this many write jobs share one transaction.
pub(crate) const MAX_GROUP: usize = 512;
/// Jobs waiting for the thread; senders wait (asynchronously) beyond it.
const QUEUE: usize = 4096;

/// What the jobs of one group transaction know of a run: its row's next sequence number and
/// finished flag, and its lease, as the last job that read or wrote them left them.
#[derive(Debug, Clone, Default)]
pub(crate) struct RunFacts {
    /// `(next_seq, finished)` of the run's row, once read.
    pub(crate) row: Option<(u64, bool)>,
    /// The run's lease, once read (`Some(None)`: the run has none).
    pub(crate) lease: Option<Option<Lease>>,
}

/// The runs' facts within one group transaction, by execution id. Valid only inside it: it
/// starts empty with every group, and a job that fails (rolled back to its savepoint) or that
/// does not keep it up to date empties it.
#[derive(Debug, Default)]
pub(crate) struct GroupCache {
    runs: HashMap<String, RunFacts>,
}

impl GroupCache {
    /// What the group knows of run `id` (read or written by an earlier job of the group).
    pub(crate) fn run(&mut self, id: &str) -> &mut RunFacts {
        // Looked up before it is inserted: a group's later jobs find their run without copying
        // its id.
        if !self.runs.contains_key(id) {
            self.runs.insert(id.to_owned(), RunFacts::default());
        }
        #[allow(clippy::expect_used)] // inserted just above when it was missing
        self.runs
            .get_mut(id)
            .expect("the run's facts are in the map")
    }

    fn clear(&mut self) {
        self.runs.clear();
    }
}

/// A write job: [`Write::run`] inside the group's transaction, then [`Write::reply`] once the
/// group's commit is known.
trait Write: Send {
    /// Runs the job; `true` when it succeeded (its savepoint is kept).
    fn run(&mut self, conn: &Connection, cache: &mut GroupCache) -> bool;
    /// Answers the caller: its own result, or `failed` (the transaction never started or did
    /// not commit) when it has no error of its own.
    fn reply(self: Box<Self>, failed: Option<&StoreError>);
}

/// A read job: runs outside any write transaction and replies itself.
type ReadJob = Box<dyn FnOnce(&Connection) + Send>;

/// One caller's write: its function, then its result, then the channel to answer on.
struct Pending<T, F> {
    f: Option<F>,
    result: Option<Result<T, StoreError>>,
    tx: oneshot::Sender<Result<T, StoreError>>,
}

impl<T, F> Write for Pending<T, F>
where
    T: Send,
    F: FnOnce(&Connection, &mut GroupCache) -> Result<T, StoreError> + Send,
{
    fn run(&mut self, conn: &Connection, cache: &mut GroupCache) -> bool {
        let result = self.f.take().map(|f| f(conn, cache));
        let ok = matches!(result, Some(Ok(_)));
        self.result = result;
        ok
    }

    fn reply(self: Box<Self>, failed: Option<&StoreError>) {
        let answer = match (self.result, failed) {
            (Some(Err(own)), _) => Err(own),
            (_, Some(e)) => Err(e.clone()),
            (Some(ok), None) => ok,
            // Every job is run before a successful commit replies.
            (None, None) => return,
        };
        // The caller may have gone away; its result is then not needed.
        let _ = self.tx.send(answer);
    }
}

enum Job {
    Write(Box<dyn Write>),
    Read(ReadJob),
    Close(oneshot::Sender<()>),
}

/// A handle on the store's thread. Cloning shares the thread; it ends when every handle is
/// dropped or [`Worker::close`] is called.
#[derive(Debug, Clone)]
pub(crate) struct Worker {
    // Declared before `_thread`: the last handle's sender is gone (the thread sees the channel
    // closed) before its `Thread` joins it.
    tx: mpsc::Sender<Job>,
    path: Arc<PathBuf>,
    // Held only for its drop (see `Thread`).
    _thread: Arc<Thread>,
}

/// The store's thread, joined when the last handle is dropped: the thread finishes its queue
/// and closes the connection (checkpointing the write-ahead log into the file) before the
/// drop returns, so a process that exits right after dropping its store leaves the file whole
/// and no later process changes it by checkpointing for it.
#[derive(Debug)]
struct Thread(std::sync::Mutex<Option<std::thread::JoinHandle<()>>>);

impl Drop for Thread {
    fn drop(&mut self) {
        let handle = self
            .0
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(h) = handle {
            // The channel is closed (every sender is gone), so the thread ends after its queue.
            let _ = h.join();
        }
    }
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Job::Write(_) => "Write",
            Job::Read(_) => "Read",
            Job::Close(_) => "Close",
        })
    }
}

impl Worker {
    /// Starts the thread that owns `conn`.
    pub(crate) fn start(conn: Connection, path: PathBuf) -> Result<Self, StoreError> {
        let (tx, rx) = mpsc::channel(QUEUE);
        let p = path.clone();
        let handle = std::thread::Builder::new()
            .name("a2aflow-store".to_owned())
            .spawn(move || run(conn, rx, &p))
            .map_err(|e| {
                StoreError::new(
                    a2aflow_model::ErrorCode::StoreUnavailable,
                    format!(
                        "run store {}: cannot start its thread ({e})",
                        path.display()
                    ),
                )
            })?;
        Ok(Worker {
            tx,
            path: Arc::new(path),
            _thread: Arc::new(Thread(std::sync::Mutex::new(Some(handle)))),
        })
    }

    /// The store's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The store's path, shared: a job that names it in its errors takes a reference count,
    /// not a copy.
    pub(crate) fn shared_path(&self) -> Arc<PathBuf> {
        self.path.clone()
    }

    /// Runs `f` in the next group transaction; returns its result once the group committed.
    /// What the group's jobs knew of the runs is forgotten first: `f` may change any of it.
    pub(crate) async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.write_cached(move |conn, cache| {
            cache.clear();
            f(conn)
        })
        .await
    }

    /// [`Worker::write`] for a job that reads the runs' facts through the group's cache and
    /// keeps the cache true for what it changes.
    pub(crate) async fn write_cached<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection, &mut GroupCache) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (tx, rx) = oneshot::channel();
        let job = Box::new(Pending {
            f: Some(f),
            result: None,
            tx,
        });
        self.submit(Job::Write(job), rx).await
    }

    /// Runs `f` on the connection outside a write transaction.
    pub(crate) async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (tx, rx) = oneshot::channel();
        let job: ReadJob = Box::new(move |conn| {
            let _ = tx.send(f(conn));
        });
        self.submit(Job::Read(job), rx).await
    }

    async fn submit<T>(
        &self,
        job: Job,
        rx: oneshot::Receiver<Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        self.tx
            .send(job)
            .await
            .map_err(|_| error::closed(&self.path))?;
        // The thread answers every job it takes (busy waits are bounded by the busy timeout);
        // a dropped reply means it stopped.
        rx.await.map_err(|_| error::closed(&self.path))?
    }

    /// Finishes the queued jobs, closes the connection (checkpointing the WAL) and ends the
    /// thread; later calls on any handle fail with `store.unavailable`.
    pub(crate) async fn close(&self) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Job::Close(tx)).await.is_ok() {
            let _ = rx.await;
        }
    }
}

/// The thread: takes what is queued, commits the writes as one group, answers the reads.
fn run(conn: Connection, mut rx: mpsc::Receiver<Job>, path: &Path) {
    let mut closing = None;
    while let Some(first) = rx.blocking_recv() {
        let mut writes = Vec::new();
        let mut reads = Vec::new();
        let mut next = Some(first);
        while let Some(job) = next.take() {
            match job {
                Job::Write(w) => writes.push(w),
                Job::Read(r) => reads.push(r),
                Job::Close(done) => {
                    closing = Some(done);
                    break;
                }
            }
            if writes.len() < MAX_GROUP {
                next = rx.try_recv().ok();
            }
        }
        if !writes.is_empty() {
            commit_group(&conn, writes, path);
        }
        for r in reads {
            r(&conn);
        }
        if closing.is_some() {
            break;
        }
    }
    rx.close();
    if let Err((_, e)) = conn.close() {
        tracing::warn!(path = %path.display(), error = %e, "closing the run store failed");
    }
    if let Some(done) = closing {
        let _ = done.send(());
    }
}

/// Runs one statement of the group's transaction through the connection's statement cache: a
/// group runs two per job (its savepoint and its release), which parsing each time made a tenth
/// of the store thread's work in a wide step.
fn exec(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

/// One transaction for the whole group, one savepoint per job.
fn commit_group(conn: &Connection, mut writes: Vec<Box<dyn Write>>, path: &Path) {
    if let Err(e) = exec(conn, "BEGIN IMMEDIATE") {
        let e = error::sqlite(path, "starting a transaction", &e);
        for w in writes {
            w.reply(Some(&e));
        }
        return;
    }
    let mut failed = Vec::with_capacity(writes.len());
    let mut cache = GroupCache::default();
    for w in &mut writes {
        failed.push(in_savepoint(conn, w.as_mut(), &mut cache, path));
    }
    let committed = exec(conn, "COMMIT").map_err(|e| {
        let _ = conn.execute_batch("ROLLBACK");
        error::sqlite(path, "committing", &e)
    });
    let commit_failure = committed.err();
    for (w, own) in writes.into_iter().zip(failed) {
        w.reply(own.as_ref().or(commit_failure.as_ref()));
    }
}

/// Runs one job in its own savepoint, rolled back alone when the job fails. `Some` when the
/// savepoint itself failed (the job's caller then gets that error). A job rolled back leaves
/// the group's cache empty: what it cached may be what the rollback undid.
fn in_savepoint(
    conn: &Connection,
    w: &mut dyn Write,
    cache: &mut GroupCache,
    path: &Path,
) -> Option<StoreError> {
    if let Err(e) = exec(conn, "SAVEPOINT job") {
        cache.clear();
        return Some(error::sqlite(path, "starting a savepoint", &e));
    }
    let ended = if w.run(conn, cache) {
        exec(conn, "RELEASE job")
    } else {
        cache.clear();
        exec(conn, "ROLLBACK TO job").and_then(|()| exec(conn, "RELEASE job"))
    };
    if ended.is_err() {
        cache.clear();
    }
    ended
        .err()
        .map(|e| error::sqlite(path, "ending a savepoint", &e))
}
