//! [`PostgresStore`]: the kernel's [`RunStore`] over a Postgres database, through a pool of
//! connections.

use crate::error::{self, EVENT_ORDER, LEASE_LOST, RUN_FINISHED, UNKNOWN_EXECUTION, sqlstate};
use crate::schema;
use crate::tls::RustlsConnector;
use crate::wakeups::{CHANNEL, WorkSignal};
use a2aflow_kernel::journal::{
    EncodedEvent, Heartbeat, JournalEntry, JournalRecord, Lease, RunFilter, RunJournal, RunStarted,
    RunState, RunStore, RunSummary, StoreError, check_append, check_encoded_event_order,
    check_fence, grant_lease, released_lease, renew_lease,
};
use a2aflow_model::{ErrorCode, Event};
use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use rustls_pki_types::CertificateDer;
use std::future::Future;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::config::Host;

/// How a [`PostgresStore`] behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreOptions {
    /// How long a lease lasts after it was granted or renewed, measured by the database's clock
    /// (so hosts with skewed clocks agree). Default 30 s.
    pub lease_ttl: Duration,
    /// How long opening a connection may take, handshake and login included. Default 10 s.
    pub connect_timeout: Duration,
    /// How long one store operation may take, waiting for a connection included. Default 30 s.
    pub operation_timeout: Duration,
    /// The most connections the store holds open. Default 8.
    pub max_connections: usize,
    /// CA certificates (DER) trusted for the server's TLS certificate besides the Mozilla roots.
    pub extra_roots: Vec<CertificateDer<'static>>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            lease_ttl: a2aflow_kernel::journal::DEFAULT_LEASE_TTL,
            connect_timeout: Duration::from_secs(10),
            operation_timeout: Duration::from_secs(30),
            max_connections: 8,
            extra_roots: Vec::new(),
        }
    }
}

impl StoreOptions {
    /// These options with leases lasting `ttl`.
    pub fn with_lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl;
        self
    }

    /// These options with connections given up after `timeout`.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// These options trusting the CA certificates `roots` (DER) for the server's TLS
    /// certificate, besides the Mozilla roots.
    pub fn with_extra_roots(mut self, roots: Vec<CertificateDer<'static>>) -> Self {
        self.extra_roots = roots;
        self
    }
}

/// The shared run store: a Postgres database (its current schema), created and migrated
/// forward by this crate. Cheap to clone (the clones share one pool).
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    target: Arc<str>,
    options: Arc<StoreOptions>,
    /// What a connection of its own (a worker's wake-ups) is opened with.
    config: Arc<tokio_postgres::Config>,
    tls: RustlsConnector,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

fn sql_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn sql_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or_default()
}

/// The database a config names, for messages: `host:port/database as role`, never a password.
pub fn target_of(config: &tokio_postgres::Config) -> String {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().unwrap_or("(default role)");
    let db = config.get_dbname().unwrap_or(user);
    format!("postgres://{host}:{port}/{db} as {user}")
}

impl PostgresStore {
    /// Opens the store at `url` with default options (see [`PostgresStore::open_with`]).
    pub async fn open(url: &str, password: Option<&str>) -> Result<Self, StoreError> {
        PostgresStore::open_with(url, password, StoreOptions::default()).await
    }

    /// Opens the store in the database `url` names (a `postgres://` URL or a key=value
    /// string), logging in with `password` when one is given, and creates or migrates its
    /// schema. Errors: `store.unavailable` (unreachable within the connect timeout, login
    /// refused, no such database), `store.not_a_store` (the schema holds another application's
    /// tables), `store.newer_schema`. A failed open changes nothing.
    pub async fn open_with(
        url: &str,
        password: Option<&str>,
        options: StoreOptions,
    ) -> Result<Self, StoreError> {
        PostgresStore::open_as(url, password, options, true).await
    }

    /// [`PostgresStore::open_with`] for a store that must already exist (for reading and
    /// inspecting runs): a schema without an a2aflow store is `store.unavailable` and nothing
    /// is created in it (an older store is still migrated forward).
    pub async fn open_existing_with(
        url: &str,
        password: Option<&str>,
        options: StoreOptions,
    ) -> Result<Self, StoreError> {
        PostgresStore::open_as(url, password, options, false).await
    }

    async fn open_as(
        url: &str,
        password: Option<&str>,
        mut options: StoreOptions,
        create: bool,
    ) -> Result<Self, StoreError> {
        let (url, root_cert) = crate::url::split_root_cert(url);
        if let Some(path) = root_cert {
            options
                .extra_roots
                .extend(crate::tls::root_certificates(&path)?);
        }
        let mut config: tokio_postgres::Config = url.parse().map_err(|e| {
            StoreError::new(
                ErrorCode::StoreUnavailable,
                format!("the run store's Postgres URL does not parse: {e}"),
            )
        })?;
        if let Some(p) = password {
            config.password(p);
        }
        if config.get_application_name().is_none() {
            config.application_name("a2aflow");
        }
        config.connect_timeout(options.connect_timeout);
        let target: Arc<str> = target_of(&config).into();
        let tls = RustlsConnector::new(&options.extra_roots).map_err(|e| {
            StoreError::new(
                ErrorCode::StoreUnavailable,
                format!("run store {target}: the TLS configuration is invalid: {e}"),
            )
        })?;
        let own = (Arc::new(config.clone()), tls.clone());
        let manager = Manager::from_config(
            config,
            tls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.max_connections.max(1))
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(options.operation_timeout))
            .create_timeout(Some(options.connect_timeout))
            .recycle_timeout(Some(options.connect_timeout))
            .build()
            .map_err(|e| {
                StoreError::new(
                    ErrorCode::StoreUnavailable,
                    format!("run store {target}: the connection pool cannot be built: {e}"),
                )
            })?;
        let store = PostgresStore {
            pool,
            target,
            options: Arc::new(options),
            config: own.0,
            tls: own.1,
        };
        store
            .timed("opening", async {
                let mut client = store.client().await?;
                schema::prepare(&mut client, &store.target, create).await
            })
            .await?;
        Ok(store)
    }

    /// The database this store lives in, as messages name it (no password).
    pub fn target(&self) -> &str {
        &self.target
    }

    /// Wake-ups for an idle worker ([`WorkSignal`]), on a connection of their own.
    pub async fn listen(&self) -> Result<WorkSignal, StoreError> {
        WorkSignal::listen(
            &self.config,
            self.tls.clone(),
            &self.target,
            self.options.connect_timeout,
        )
        .await
    }

    /// Closes the pool: every connection is closed once it is returned.
    pub fn close(&self) {
        self.pool.close();
    }

    async fn client(&self) -> Result<deadpool_postgres::Client, StoreError> {
        self.pool
            .get()
            .await
            .map_err(|e| error::pool(&self.target, &e))
    }

    /// `work`, or `store.unavailable` when it runs past the operation timeout.
    async fn timed<T>(
        &self,
        what: &str,
        work: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        tokio::time::timeout(self.options.operation_timeout, work)
            .await
            .unwrap_or_else(|_| Err(error::timed_out(&self.target, what)))
    }

    fn pg(&self, what: &str) -> impl Fn(tokio_postgres::Error) -> StoreError + '_ {
        let what = what.to_owned();
        move |e| error::postgres(&self.target, &what, &e)
    }

    /// The store code of an error one of the write functions raised.
    fn refusal(
        &self,
        id: &str,
        held: Option<&Lease>,
        e: &tokio_postgres::Error,
        kernel_check: impl FnOnce(&tokio_postgres::Error) -> Option<StoreError>,
    ) -> StoreError {
        let generic = || error::postgres(&self.target, "writing", e);
        match sqlstate(e) {
            Some(UNKNOWN_EXECUTION) => StoreError::unknown_execution(id),
            Some(LEASE_LOST) => match held.map(|l| check_fence(None, l)) {
                Some(Err(lost)) => lost,
                _ => generic(),
            },
            Some(RUN_FINISHED | EVENT_ORDER) => kernel_check(e).unwrap_or_else(generic),
            _ => generic(),
        }
    }

    async fn append_records(
        &self,
        id: &str,
        held: Option<&Lease>,
        records: Vec<JournalRecord>,
    ) -> Result<Range<u64>, StoreError> {
        check_append(id, false, &records)?;
        let kinds: Vec<&str> = records.iter().map(JournalRecord::kind).collect();
        let bodies = records.iter().map(encode).collect::<Result<Vec<_>, _>>()?;
        let final_state = records
            .iter()
            .rev()
            .find_map(|r| r.final_state().map(RunState::as_str));
        let (fenced, owner, token) = fence_args(held);
        let fail = self.pg("appending");
        self.timed("appending", async {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached("SELECT a2aflow_append($1, $2, $3, $4, $5, $6, $7)")
                .await
                .map_err(&fail)?;
            let row = client
                .query_one(
                    &stmt,
                    &[&id, &fenced, &owner, &token, &kinds, &bodies, &final_state],
                )
                .await
                .map_err(|e| {
                    self.refusal(id, held, &e, |_| check_append(id, true, &records).err())
                })?;
            let start = sql_u64(row.get(0));
            Ok(start..start + records.len() as u64)
        })
        .await
    }

    async fn insert_events(
        &self,
        id: &str,
        held: Option<&Lease>,
        events: Vec<EncodedEvent>,
    ) -> Result<(), StoreError> {
        let seqs: Vec<i64> = events.iter().map(|e| sql_i64(e.seq())).collect();
        let bodies: Vec<&str> = events.iter().map(EncodedEvent::json).collect();
        let (fenced, owner, token) = fence_args(held);
        let fail = self.pg("recording events");
        self.timed("recording events", async {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached("SELECT a2aflow_record_events($1, $2, $3, $4, $5, $6)")
                .await
                .map_err(&fail)?;
            client
                .execute(&stmt, &[&id, &fenced, &owner, &token, &seqs, &bodies])
                .await
                .map_err(|e| {
                    self.refusal(id, held, &e, |e| {
                        let last = e
                            .as_db_error()
                            .and_then(|d| d.detail())
                            .and_then(|d| d.parse::<u64>().ok());
                        check_encoded_event_order(id, last, &events).err()
                    })
                })?;
            Ok(())
        })
        .await
    }

    /// Reads and changes the run's lease in one transaction that locks the run's row (so it
    /// serialises with the fenced writes): `decide` gets the current lease and the database's
    /// clock and says what the lease becomes (`None`: unchanged).
    async fn change_lease(
        &self,
        id: &str,
        what: &str,
        decide: impl FnOnce(Option<&Lease>, u64) -> Result<Option<Lease>, StoreError>,
    ) -> Result<Option<Lease>, StoreError> {
        let fail = self.pg(what);
        self.timed(what, async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(&fail)?;
            let read = tx
                .prepare_cached(
                    "SELECT l.owner, l.token, l.expires_at_ms, a2aflow_now_ms() FROM runs r \
                     LEFT JOIN leases l ON l.execution_id = r.execution_id \
                     WHERE r.execution_id = $1 FOR UPDATE OF r",
                )
                .await
                .map_err(&fail)?;
            let row = tx
                .query_opt(&read, &[&id])
                .await
                .map_err(&fail)?
                .ok_or_else(|| StoreError::unknown_execution(id))?;
            let current = lease_of(id, &row, 0);
            let now = sql_u64(row.get(3));
            let next = decide(current.as_ref(), now)?;
            if let Some(lease) = &next {
                let put = tx
                    .prepare_cached(
                        "INSERT INTO leases (execution_id, owner, token, expires_at_ms) \
                         VALUES ($1, $2, $3, $4) ON CONFLICT (execution_id) DO UPDATE SET \
                         owner = EXCLUDED.owner, token = EXCLUDED.token, \
                         expires_at_ms = EXCLUDED.expires_at_ms",
                    )
                    .await
                    .map_err(&fail)?;
                tx.execute(
                    &put,
                    &[
                        &id,
                        &lease.owner,
                        &sql_i64(lease.token),
                        &sql_i64(lease.expires_at_ms),
                    ],
                )
                .await
                .map_err(&fail)?;
            }
            tx.commit().await.map_err(&fail)?;
            Ok(next)
        })
        .await
    }
}

/// The fence arguments of the write functions: whether to check, and the lease's owner and
/// token.
fn fence_args(held: Option<&Lease>) -> (bool, &str, i64) {
    match held {
        Some(l) => (true, l.owner.as_str(), sql_i64(l.token)),
        None => (false, "", 0),
    }
}

/// The lease in columns `at..at + 3` (owner, token, expiry) of `row`, when there is one.
fn lease_of(id: &str, row: &tokio_postgres::Row, at: usize) -> Option<Lease> {
    let owner: Option<String> = row.get(at);
    owner.map(|owner| Lease {
        execution_id: id.to_owned(),
        owner,
        token: sql_u64(row.get(at + 1)),
        expires_at_ms: sql_u64(row.get(at + 2)),
    })
}

fn encode(value: &JournalRecord) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| {
        StoreError::new(
            ErrorCode::StoreInvalidAppend,
            format!("a journal record cannot be written as JSON: {e}"),
        )
    })
}

fn encode_events(events: &[Event]) -> Result<Vec<EncodedEvent>, StoreError> {
    events.iter().map(EncodedEvent::encode).collect()
}

#[async_trait]
impl RunStore for PostgresStore {
    async fn create_run(&self, run: RunStarted) -> Result<(), StoreError> {
        self.insert_run(run, None).await.map(drop)
    }

    async fn create_run_leased(&self, run: RunStarted, owner: &str) -> Result<Lease, StoreError> {
        let id = run.execution_id.clone();
        self.insert_run(run, Some(owner))
            .await?
            .ok_or_else(|| self.no_lease(&id))
    }

    async fn append_batch(
        &self,
        execution_id: &str,
        records: Vec<JournalRecord>,
    ) -> Result<Range<u64>, StoreError> {
        self.append_records(execution_id, None, records).await
    }

    async fn append_driven(
        &self,
        lease: &Lease,
        records: Vec<JournalRecord>,
    ) -> Result<Range<u64>, StoreError> {
        self.append_records(&lease.execution_id, Some(lease), records)
            .await
    }

    async fn record_driven_events(
        &self,
        lease: &Lease,
        events: Vec<Event>,
    ) -> Result<(), StoreError> {
        let encoded = encode_events(&events)?;
        self.insert_events(&lease.execution_id, Some(lease), encoded)
            .await
    }

    async fn record_driven_encoded_events(
        &self,
        lease: &Lease,
        events: Vec<EncodedEvent>,
    ) -> Result<(), StoreError> {
        self.insert_events(&lease.execution_id, Some(lease), events)
            .await
    }

    async fn load(&self, execution_id: &str) -> Result<RunJournal, StoreError> {
        let id = execution_id;
        let fail = self.pg("reading a journal");
        self.timed("reading a journal", async {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached(
                    "SELECT seq, kind, body::text FROM records WHERE execution_id = $1 \
                     ORDER BY seq",
                )
                .await
                .map_err(&fail)?;
            let rows = client.query(&stmt, &[&id]).await.map_err(&fail)?;
            if rows.is_empty() {
                return Err(StoreError::unknown_execution(id));
            }
            let mut entries = Vec::with_capacity(rows.len());
            for row in &rows {
                let seq = sql_u64(row.get(0));
                let kind: &str = row.get(1);
                let body: &str = row.get(2);
                let record: JournalRecord = serde_json::from_str(body).map_err(|e| {
                    error::undecodable(&self.target, &format!("record {seq} of run '{id}'"), &e)
                })?;
                if seq != entries.len() as u64 || record.kind() != kind {
                    return Err(StoreError::new(
                        ErrorCode::StoreCorrupt,
                        format!(
                            "run store {}: the journal of run '{id}' has a gap or a mislabelled \
                             record at {seq}",
                            self.target
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
        })
        .await
    }

    async fn list(&self, filter: RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        let fail = self.pg("listing runs");
        self.timed("listing runs", async {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached(
                    "SELECT execution_id, workflow_name, started_at_ms, state, finished_at_ms \
                     FROM (SELECT r.execution_id, r.workflow_name, r.started_at_ms, \
                       r.finished_at_ms, COALESCE(r.final_state, CASE WHEN l.expires_at_ms > \
                       a2aflow_now_ms() THEN 'running' ELSE 'waiting' END) AS state \
                       FROM runs r LEFT JOIN leases l ON l.execution_id = r.execution_id) s \
                     WHERE $1::text IS NULL OR state = $1::text \
                     ORDER BY started_at_ms DESC, execution_id DESC LIMIT $2 OFFSET $3",
                )
                .await
                .map_err(&fail)?;
            let rows = client
                .query(
                    &stmt,
                    &[
                        &filter.state.map(RunState::as_str),
                        &sql_i64(filter.limit as u64),
                        &sql_i64(filter.offset as u64),
                    ],
                )
                .await
                .map_err(&fail)?;
            rows.iter()
                .map(|row| {
                    let execution_id: String = row.get(0);
                    let state: String = row.get(3);
                    let state =
                        serde_json::from_value(serde_json::Value::String(state)).map_err(|e| {
                            error::undecodable(
                                &self.target,
                                &format!("the state of run '{execution_id}'"),
                                &e,
                            )
                        })?;
                    Ok(RunSummary {
                        state,
                        workflow_name: row.get(1),
                        started_at_ms: sql_u64(row.get(2)),
                        finished_at_ms: row.get::<_, Option<i64>>(4).map(sql_u64),
                        execution_id,
                    })
                })
                .collect()
        })
        .await
    }

    async fn record_events(
        &self,
        execution_id: &str,
        events: Vec<Event>,
    ) -> Result<(), StoreError> {
        let encoded = encode_events(&events)?;
        self.insert_events(execution_id, None, encoded).await
    }

    async fn events(
        &self,
        execution_id: &str,
        after_seq: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        let id = execution_id;
        let fail = self.pg("reading events");
        self.timed("reading events", async {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached(
                    "SELECT e.seq, e.body::text FROM runs r LEFT JOIN LATERAL ( \
                       SELECT seq, body FROM events WHERE execution_id = r.execution_id \
                       AND seq > $2 ORDER BY seq LIMIT $3) e ON true \
                     WHERE r.execution_id = $1 ORDER BY e.seq",
                )
                .await
                .map_err(&fail)?;
            let after = after_seq.map_or(-1, sql_i64);
            let rows = client
                .query(&stmt, &[&id, &after, &sql_i64(limit as u64)])
                .await
                .map_err(&fail)?;
            if rows.is_empty() {
                return Err(StoreError::unknown_execution(id));
            }
            let mut out = Vec::with_capacity(rows.len());
            for row in &rows {
                let (Some(seq), Some(body)) =
                    (row.get::<_, Option<i64>>(0), row.get::<_, Option<&str>>(1))
                else {
                    continue; // the run holds no such events
                };
                out.push(serde_json::from_str(body).map_err(|e| {
                    error::undecodable(&self.target, &format!("event {seq} of run '{id}'"), &e)
                })?);
            }
            Ok(out)
        })
        .await
    }

    async fn lease(&self, execution_id: &str) -> Result<Option<Lease>, StoreError> {
        let id = execution_id;
        let fail = self.pg("reading a lease");
        self.timed("reading a lease", async {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached(
                    "SELECT l.owner, l.token, l.expires_at_ms FROM runs r \
                     LEFT JOIN leases l ON l.execution_id = r.execution_id \
                     WHERE r.execution_id = $1",
                )
                .await
                .map_err(&fail)?;
            let row = client
                .query_opt(&stmt, &[&id])
                .await
                .map_err(&fail)?
                .ok_or_else(|| StoreError::unknown_execution(id))?;
            Ok(lease_of(id, &row, 0))
        })
        .await
    }

    async fn acquire(&self, execution_id: &str, owner: &str) -> Result<Lease, StoreError> {
        let ttl = self.options.lease_ttl;
        let granted = self
            .change_lease(execution_id, "taking a lease", |current, now| {
                grant_lease(current, execution_id, owner, now, ttl).map(Some)
            })
            .await?;
        granted.ok_or_else(|| self.no_lease(execution_id))
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, StoreError> {
        let ttl = self.options.lease_ttl;
        let renewed = self
            .change_lease(&lease.execution_id, "renewing a lease", |current, now| {
                renew_lease(current, lease, now, ttl).map(Some)
            })
            .await?;
        renewed.ok_or_else(|| self.no_lease(&lease.execution_id))
    }

    async fn heartbeat(&self, lease: &Lease) -> Result<Heartbeat, StoreError> {
        match self.renew_watching(lease).await? {
            Some(beat) => Ok(beat),
            None => {
                let current = self.lease(&lease.execution_id).await?;
                Err(match check_fence(current.as_ref(), lease) {
                    Err(e) => e,
                    // Taken and given back between the two reads: still not this driver's.
                    Ok(()) => check_fence(None, lease)
                        .err()
                        .unwrap_or_else(|| self.no_lease(&lease.execution_id)),
                })
            }
        }
    }

    async fn claim(&self, owner: &str) -> Result<Option<Lease>, StoreError> {
        self.claim_one(owner).await
    }

    async fn release(&self, lease: Lease) -> Result<(), StoreError> {
        let released = self
            .change_lease(&lease.execution_id, "releasing a lease", |current, _| {
                Ok(released_lease(current, &lease))
            })
            .await?;
        if released.is_some()
            && let Err(e) = self.notify_claimable(&lease.execution_id).await
        {
            // A hint only: idle workers also look again after their poll interval.
            tracing::debug!(code = %e.code, error = %e.message, "no wake-up sent for a released run");
        }
        Ok(())
    }

    async fn release_suspended(&self, lease: Lease, seen: u64) -> Result<(), StoreError> {
        let id = lease.execution_id.as_str();
        let fail = self.pg("releasing a suspended run");
        let next_seq: Option<i64> = self
            .timed("releasing a suspended run", async {
                let client = self.client().await?;
                let stmt = client
                    .prepare_cached(RELEASE_SUSPENDED)
                    .await
                    .map_err(&fail)?;
                let row = client
                    .query_opt(
                        &stmt,
                        &[&id, &lease.owner, &sql_i64(lease.token), &sql_i64(seen)],
                    )
                    .await
                    .map_err(&fail)?;
                Ok(row.map(|r| r.get(0)))
            })
            .await?;
        // Written to after its driver looked (an answer raced the suspension): claimable now.
        if next_seq.is_some_and(|n| sql_u64(n) > seen)
            && let Err(e) = self.notify_claimable(id).await
        {
            tracing::debug!(code = %e.code, error = %e.message, "no wake-up sent for a released run");
        }
        Ok(())
    }

    async fn notify_claimable(&self, execution_id: &str) -> Result<(), StoreError> {
        let fail = self.pg("waking workers");
        self.timed("waking workers", async {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached("SELECT pg_notify($1, $2)")
                .await
                .map_err(&fail)?;
            client
                .execute(&stmt, &[&CHANNEL, &execution_id])
                .await
                .map_err(&fail)?;
            Ok(())
        })
        .await
    }
}

/// One statement: lock the oldest unfinished run without a live lease (`SKIP LOCKED`: rows
/// another claim or a lease change holds are passed over) and take its lease. A run suspended
/// at its gates (`parked_seq`) is passed over until a record was appended after the ones its
/// driver saw, or its deadline (`parked_until_ms`) passed. The upsert's
/// condition is checked against the lease row as it stands when it is locked, so a lease taken
/// meanwhile is never overwritten (the claim then finds nothing this time).
const CLAIM: &str = "WITH candidate AS ( \
       SELECT r.execution_id FROM runs r \
       LEFT JOIN leases l ON l.execution_id = r.execution_id \
       WHERE r.final_state IS NULL \
         AND (l.execution_id IS NULL OR l.expires_at_ms <= a2aflow_now_ms()) \
         AND (r.parked_seq IS NULL OR r.next_seq > r.parked_seq \
              OR r.parked_until_ms IS NULL OR r.parked_until_ms <= a2aflow_now_ms()) \
       ORDER BY r.started_at_ms, r.execution_id \
       LIMIT 1 FOR UPDATE OF r SKIP LOCKED) \
     INSERT INTO leases AS l (execution_id, owner, token, expires_at_ms) \
     SELECT execution_id, $1, 1, a2aflow_now_ms() + $2 FROM candidate \
     ON CONFLICT (execution_id) DO UPDATE SET owner = EXCLUDED.owner, \
       token = CASE WHEN l.owner = EXCLUDED.owner THEN l.token ELSE l.token + 1 END, \
       expires_at_ms = EXCLUDED.expires_at_ms \
     WHERE l.owner = EXCLUDED.owner OR l.expires_at_ms <= a2aflow_now_ms() \
     RETURNING execution_id, owner, token, expires_at_ms";

/// One statement: a run and its first record, when its id is free; with an owner (`$7`,
/// `$8` the lease's life in milliseconds) its lease too, in the same transaction, so no claim
/// can take the run before its creator holds it.
const INSERT_RUN: &str = "WITH run AS (INSERT INTO runs (execution_id, workflow_id, \
       workflow_name, workflow_sha256, started_at_ms, next_seq) VALUES ($1, $2, $3, $4, $5, 1) \
       ON CONFLICT (execution_id) DO NOTHING RETURNING execution_id), \
     first AS (INSERT INTO records (execution_id, seq, kind, body) \
       SELECT execution_id, 0, 'runStarted', $6::text::json FROM run RETURNING execution_id), \
     leased AS (INSERT INTO leases (execution_id, owner, token, expires_at_ms) \
       SELECT execution_id, $7::text, 1, a2aflow_now_ms() + $8::bigint FROM run \
       WHERE $7::text IS NOT NULL RETURNING owner, token, expires_at_ms) \
     SELECT f.execution_id, l.owner, l.token, l.expires_at_ms FROM first f \
     LEFT JOIN leased l ON true";

/// One statement: the lease of a suspended run given up when `$2`/`$3` still hold it, as
/// `release` does (the run's row locked first, as every lease change does), and the run
/// marked parked: `parked_seq` the records its driver saw (`$4`), `parked_until_ms` its
/// deadline from its first record. Returns the run's `next_seq`; no row when the lease was
/// not held.
const RELEASE_SUSPENDED: &str = "WITH run AS (SELECT execution_id FROM runs \
       WHERE execution_id = $1 FOR UPDATE), \
     released AS (UPDATE leases l SET expires_at_ms = 0 FROM run \
       WHERE l.execution_id = run.execution_id AND l.owner = $2 AND l.token = $3 \
       RETURNING l.execution_id) \
     UPDATE runs r SET parked_seq = $4, parked_until_ms = (SELECT \
       LEAST((body->>'deadlineMs')::numeric, 9223372036854775807)::bigint \
       FROM records WHERE execution_id = $1 AND seq = 0) \
     FROM released WHERE r.execution_id = released.execution_id RETURNING r.next_seq";

/// One statement: the held lease (same owner and token) renewed on the database's clock, and
/// whether the run's journal holds a run-level cancel; no row when the lease is not held.
const HEARTBEAT: &str = "WITH renewed AS ( \
       UPDATE leases SET expires_at_ms = a2aflow_now_ms() + $4 \
       WHERE execution_id = $1 AND owner = $2 AND token = $3 \
       RETURNING owner, token, expires_at_ms) \
     SELECT owner, token, expires_at_ms, EXISTS (SELECT 1 FROM records \
       WHERE execution_id = $1 AND kind = 'cancelRequested' \
       AND body->>'localTaskId' IS NULL AND body->>'remoteTaskId' IS NULL) FROM renewed";

impl PostgresStore {
    /// [`HEARTBEAT`]: `None` when `held` is not the run's lease.
    async fn renew_watching(&self, held: &Lease) -> Result<Option<Heartbeat>, StoreError> {
        let ttl = i64::try_from(self.options.lease_ttl.as_millis()).unwrap_or(i64::MAX);
        let fail = self.pg("renewing a lease");
        self.timed("renewing a lease", async {
            let client = self.client().await?;
            let stmt = client.prepare_cached(HEARTBEAT).await.map_err(&fail)?;
            let row = client
                .query_opt(
                    &stmt,
                    &[&held.execution_id, &held.owner, &sql_i64(held.token), &ttl],
                )
                .await
                .map_err(&fail)?;
            Ok(row.map(|row| Heartbeat {
                lease: Lease {
                    execution_id: held.execution_id.clone(),
                    owner: row.get(0),
                    token: sql_u64(row.get(1)),
                    expires_at_ms: sql_u64(row.get(2)),
                },
                cancel_requested: row.get(3),
            }))
        })
        .await
    }

    async fn claim_one(&self, owner: &str) -> Result<Option<Lease>, StoreError> {
        let ttl = i64::try_from(self.options.lease_ttl.as_millis()).unwrap_or(i64::MAX);
        let fail = self.pg("claiming a run");
        self.timed("claiming a run", async {
            let client = self.client().await?;
            let stmt = client.prepare_cached(CLAIM).await.map_err(&fail)?;
            let row = client
                .query_opt(&stmt, &[&owner, &ttl])
                .await
                .map_err(&fail)?;
            Ok(row.map(|row| Lease {
                execution_id: row.get(0),
                owner: row.get(1),
                token: sql_u64(row.get(2)),
                expires_at_ms: sql_u64(row.get(3)),
            }))
        })
        .await
    }

    /// [`INSERT_RUN`]: `store.duplicate_execution` when the id is taken; the lease when
    /// `owner` was given.
    async fn insert_run(
        &self,
        run: RunStarted,
        owner: Option<&str>,
    ) -> Result<Option<Lease>, StoreError> {
        let body = encode(&JournalRecord::RunStarted(run.clone()))?;
        let ttl = i64::try_from(self.options.lease_ttl.as_millis()).unwrap_or(i64::MAX);
        let fail = self.pg("creating a run");
        self.timed("creating a run", async {
            let client = self.client().await?;
            let stmt = client.prepare_cached(INSERT_RUN).await.map_err(&fail)?;
            let row = client
                .query_opt(
                    &stmt,
                    &[
                        &run.execution_id,
                        &run.workflow_id,
                        &run.workflow_name,
                        &run.workflow_sha256,
                        &sql_i64(run.started_at_ms),
                        &body,
                        &owner,
                        &ttl,
                    ],
                )
                .await
                .map_err(&fail)?;
            let Some(row) = row else {
                return Err(StoreError::new(
                    ErrorCode::StoreDuplicateExecution,
                    format!(
                        "a run with execution id '{}' is already in run store {}",
                        run.execution_id, self.target
                    ),
                )
                .with_detail("executionId", run.execution_id.as_str()));
            };
            Ok(lease_of(&run.execution_id, &row, 1))
        })
        .await
    }

    /// Never expected: a grant or renewal that wrote no lease.
    fn no_lease(&self, id: &str) -> StoreError {
        StoreError::new(
            ErrorCode::StoreUnavailable,
            format!(
                "run store {}: no lease was written for run '{id}'",
                self.target
            ),
        )
    }
}
