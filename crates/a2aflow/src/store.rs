//! Where a host keeps its runs: a [`StoreLocation`] (`sqlite:PATH` or a plain path for the
//! embedded store, a `postgres://` URL for the shared one, as the configuration's `store` key
//! and the CLI's `--store` take it) and opening the run store there.
//!
//! A Postgres URL never carries the database password (one that does is `config.invalid`): it
//! comes from the environment, `A2AFLOW_PG_PASSWORD` or else `PGPASSWORD`, or, for a host
//! configured with a credentials file, from its [`STORE_CREDENTIALS_ENTRY`] entry
//! ([`crate::EngineConfig::store_password`]).
//!
//! A store for new runs is created on first use ([`StoreLocation::open`]); a store that is only
//! read or inspected must already exist ([`StoreLocation::open_existing`]), so a mistyped path is
//! an error instead of a new, empty store.

use a2aflow_kernel::journal::{
    EncodedEvent, Heartbeat, JournalRecord, Lease, RunFilter, RunJournal, RunStarted, RunStore,
    RunSummary, StoreError,
};
use a2aflow_model::{ErrorCode, Event, Failure};
use a2aflow_store_postgres::{PgUrl, PostgresStore, UrlError, password_from_env};
use a2aflow_store_sqlite::{SqliteStore, StoreOptions};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The credentials file's entry that holds the run store's password, in its
/// [`STORE_CREDENTIALS_SCHEME`] scheme: `{"a2aflow-store": {"postgres": {"username": ROLE,
/// "password": "env:NAME"}}}` (the role the store URL names; `enc:` and plain values as for
/// agents) or `{"token": …}` for any role.
pub const STORE_CREDENTIALS_ENTRY: &str = "a2aflow-store";

/// The scheme of [`STORE_CREDENTIALS_ENTRY`] that holds the Postgres password.
pub const STORE_CREDENTIALS_SCHEME: &str = "postgres";

/// The prefix that names the embedded SQLite store explicitly.
const SQLITE_PREFIX: &str = "sqlite:";

/// Where the run store is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreLocation {
    /// The embedded SQLite store in one file.
    Sqlite(PathBuf),
    /// The shared Postgres store in the database (and schema) a URL names; the URL holds no
    /// password.
    Postgres(PgUrl),
}

/// The schemes that name the Postgres store.
const POSTGRES_SCHEMES: [&str; 2] = ["postgres", "postgresql"];

impl StoreLocation {
    /// Parses `sqlite:PATH`, a plain path, or a `postgres://` / `postgresql://` URL. A URL of
    /// another kind, a Postgres URL that carries a password or does not parse, or a blank path
    /// is `config.invalid` (whose message never repeats the URL).
    pub fn parse(text: &str) -> Result<Self, Failure> {
        if let Some(scheme) = url_scheme(text).filter(|s| POSTGRES_SCHEMES.contains(s)) {
            return PgUrl::parse(text)
                .map(StoreLocation::Postgres)
                .map_err(|e| {
                    let hint = match e {
                        UrlError::CarriesPassword => "",
                        _ => " (postgres://ROLE@HOST:PORT/DATABASE)",
                    };
                    Failure::new(ErrorCode::ConfigInvalid, format!("store: {e}{hint}"))
                        .with_detail("scheme", scheme.to_owned())
                });
        }
        let path = text.strip_prefix(SQLITE_PREFIX).unwrap_or(text);
        if path.trim().is_empty() {
            return Err(Failure::new(
                ErrorCode::ConfigInvalid,
                format!(
                    "store `{text}` names no file; give `sqlite:PATH` or the path of the store \
                     file"
                ),
            ));
        }
        if let Some(scheme) = url_scheme(text) {
            return Err(Failure::new(
                ErrorCode::ConfigInvalid,
                format!(
                    "store `{text}`: a `{scheme}` store is not supported; give `sqlite:PATH`, \
                     the path of the store file, or a `postgres://` URL"
                ),
            )
            .with_detail("scheme", scheme));
        }
        Ok(StoreLocation::Sqlite(PathBuf::from(path)))
    }

    /// The store file (`None` for a Postgres store).
    pub fn path(&self) -> Option<&Path> {
        match self {
            StoreLocation::Sqlite(p) => Some(p),
            StoreLocation::Postgres(_) => None,
        }
    }

    /// The same location with a relative path resolved against `dir`.
    pub(crate) fn resolved_against(self, dir: &Path) -> Self {
        match self {
            StoreLocation::Sqlite(p) if p.is_relative() => StoreLocation::Sqlite(dir.join(p)),
            other => other,
        }
    }

    /// Opens the store, creating it on first use (for a host that journals runs). Errors are the
    /// store's `store.*` codes; a failed open leaves the file unchanged.
    pub async fn open(&self) -> Result<Arc<dyn RunStore>, Failure> {
        self.open_with(StoreOptions::default()).await
    }

    /// [`open`](Self::open) with `options` (the lease length).
    pub async fn open_with(&self, options: StoreOptions) -> Result<Arc<dyn RunStore>, Failure> {
        Ok(self.open_store(options, &password_from_env()).await?)
    }

    /// [`open_with`](Self::open_with) with the store's own error and the Postgres password
    /// (`None`: none), for a caller that resolved it ([`crate::EngineConfig::store_password`]).
    pub(crate) async fn open_store(
        &self,
        options: StoreOptions,
        password: &Option<String>,
    ) -> Result<Arc<dyn RunStore>, StoreError> {
        match self {
            StoreLocation::Sqlite(p) => {
                Ok(Arc::new(SqliteStore::open_with(p.clone(), options).await?))
            }
            StoreLocation::Postgres(url) => Ok(Arc::new(
                PostgresStore::open_with(
                    url.as_str(),
                    password.as_deref(),
                    postgres_options(&options),
                )
                .await?,
            )),
        }
    }

    /// The store here, opened (and created on first use) by its first call: for a caller that
    /// cannot wait for the open, such as [`crate::execute_workflow_stream`]. A run journals its
    /// start before anything else, so a store that cannot be opened ends the run with its
    /// `store.*` failure before anything is sent.
    pub fn open_lazily(&self, options: StoreOptions) -> Arc<dyn RunStore> {
        self.open_lazily_as(options, password_from_env())
    }

    /// [`open_lazily`](Self::open_lazily) with a resolved Postgres password.
    pub(crate) fn open_lazily_as(
        &self,
        options: StoreOptions,
        password: Option<String>,
    ) -> Arc<dyn RunStore> {
        Arc::new(LazyStore {
            password,
            location: self.clone(),
            options,
            store: tokio::sync::OnceCell::new(),
        })
    }

    /// Opens a store that must already exist (for reading and inspecting runs): a missing file,
    /// or a Postgres schema without a store, is `store.unavailable` and nothing is created.
    pub async fn open_existing(&self) -> Result<Arc<dyn RunStore>, Failure> {
        self.open_existing_with(StoreOptions::default()).await
    }

    /// [`open_existing`](Self::open_existing) with `options` (the lease length).
    pub async fn open_existing_with(
        &self,
        options: StoreOptions,
    ) -> Result<Arc<dyn RunStore>, Failure> {
        self.open_existing_as(options, &password_from_env()).await
    }

    /// [`open_existing_with`](Self::open_existing_with) with a resolved Postgres password.
    pub(crate) async fn open_existing_as(
        &self,
        options: StoreOptions,
        password: &Option<String>,
    ) -> Result<Arc<dyn RunStore>, Failure> {
        let path = match self {
            StoreLocation::Sqlite(p) => p,
            StoreLocation::Postgres(url) => {
                let store = PostgresStore::open_existing_with(
                    url.as_str(),
                    password.as_deref(),
                    postgres_options(&options),
                )
                .await?;
                return Ok(Arc::new(store));
            }
        };
        match std::fs::symlink_metadata(path) {
            Ok(_) => self.open_with(options).await,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(StoreError::new(
                ErrorCode::StoreUnavailable,
                format!(
                    "there is no run store at {} (nothing was created); name the file the runs \
                     were journaled in",
                    path.display()
                ),
            )
            .with_detail("path", path.display().to_string())
            .into()),
            Err(e) => Err(StoreError::new(
                ErrorCode::StoreUnavailable,
                format!("run store {}: cannot be read ({e})", path.display()),
            )
            .with_detail("path", path.display().to_string())
            .into()),
        }
    }
}

/// The Postgres store's options for the facade's store options (the lease length).
fn postgres_options(options: &StoreOptions) -> a2aflow_store_postgres::StoreOptions {
    a2aflow_store_postgres::StoreOptions::default().with_lease_ttl(options.lease_ttl)
}

impl std::fmt::Display for StoreLocation {
    /// The file's path, or the Postgres URL (which holds no password).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreLocation::Sqlite(p) => write!(f, "{}", p.display()),
            StoreLocation::Postgres(url) => write!(f, "{url}"),
        }
    }
}

impl std::str::FromStr for StoreLocation {
    type Err = Failure;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        StoreLocation::parse(s)
    }
}

impl TryFrom<String> for StoreLocation {
    type Error = String;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        StoreLocation::parse(&text).map_err(|f| f.message)
    }
}

impl<'de> serde::Deserialize<'de> for StoreLocation {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        StoreLocation::try_from(text).map_err(serde::de::Error::custom)
    }
}

/// A store opened by its first call (see [`StoreLocation::open_lazily`]); a failed open is
/// tried again by the next call.
struct LazyStore {
    location: StoreLocation,
    /// The Postgres password (never shown: this type has no `Debug`).
    password: Option<String>,
    options: StoreOptions,
    store: tokio::sync::OnceCell<Arc<dyn RunStore>>,
}

impl LazyStore {
    async fn get(&self) -> Result<&dyn RunStore, StoreError> {
        let store = self
            .store
            .get_or_try_init(|| {
                self.location
                    .open_store(self.options.clone(), &self.password)
            })
            .await?;
        Ok(&**store)
    }
}

#[async_trait::async_trait]
impl RunStore for LazyStore {
    async fn create_run(&self, run: RunStarted) -> Result<(), StoreError> {
        self.get().await?.create_run(run).await
    }

    async fn append_batch(
        &self,
        execution_id: &str,
        records: Vec<JournalRecord>,
    ) -> Result<Range<u64>, StoreError> {
        self.get().await?.append_batch(execution_id, records).await
    }

    async fn append_driven(
        &self,
        lease: &Lease,
        records: Vec<JournalRecord>,
    ) -> Result<Range<u64>, StoreError> {
        self.get().await?.append_driven(lease, records).await
    }

    async fn record_driven_events(
        &self,
        lease: &Lease,
        events: Vec<Event>,
    ) -> Result<(), StoreError> {
        self.get().await?.record_driven_events(lease, events).await
    }

    async fn record_driven_encoded_events(
        &self,
        lease: &Lease,
        events: Vec<EncodedEvent>,
    ) -> Result<(), StoreError> {
        self.get()
            .await?
            .record_driven_encoded_events(lease, events)
            .await
    }

    async fn load(&self, execution_id: &str) -> Result<RunJournal, StoreError> {
        self.get().await?.load(execution_id).await
    }

    async fn lease(&self, execution_id: &str) -> Result<Option<Lease>, StoreError> {
        self.get().await?.lease(execution_id).await
    }

    async fn list(&self, filter: RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        self.get().await?.list(filter).await
    }

    async fn record_events(
        &self,
        execution_id: &str,
        events: Vec<Event>,
    ) -> Result<(), StoreError> {
        self.get().await?.record_events(execution_id, events).await
    }

    async fn events(
        &self,
        execution_id: &str,
        after_seq: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        self.get()
            .await?
            .events(execution_id, after_seq, limit)
            .await
    }

    async fn acquire(&self, execution_id: &str, owner: &str) -> Result<Lease, StoreError> {
        self.get().await?.acquire(execution_id, owner).await
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, StoreError> {
        self.get().await?.renew(lease).await
    }

    async fn heartbeat(&self, lease: &Lease) -> Result<Heartbeat, StoreError> {
        self.get().await?.heartbeat(lease).await
    }

    async fn release(&self, lease: Lease) -> Result<(), StoreError> {
        self.get().await?.release(lease).await
    }

    async fn claim(&self, owner: &str) -> Result<Option<Lease>, StoreError> {
        self.get().await?.claim(owner).await
    }

    async fn create_run_leased(&self, run: RunStarted, owner: &str) -> Result<Lease, StoreError> {
        self.get().await?.create_run_leased(run, owner).await
    }

    async fn release_suspended(&self, lease: Lease, seen: u64) -> Result<(), StoreError> {
        self.get().await?.release_suspended(lease, seen).await
    }

    async fn notify_claimable(&self, execution_id: &str) -> Result<(), StoreError> {
        self.get().await?.notify_claimable(execution_id).await
    }
}

/// The scheme of `text` when it is a URL (`scheme://…`), as opposed to a path.
fn url_scheme(text: &str) -> Option<&str> {
    let (scheme, rest) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    let is_scheme = first.is_ascii_alphabetic()
        && scheme.len() >= 2
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    (is_scheme && !rest.is_empty()).then_some(scheme)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_prefix_and_plain_paths_name_the_same_store() {
        let a = StoreLocation::parse("sqlite:runs/a.db").unwrap();
        let b = StoreLocation::parse("runs/a.db").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.path(), Some(Path::new("runs/a.db")));
        assert_eq!(
            StoreLocation::parse("sqlite:/abs/a.db").unwrap().path(),
            Some(Path::new("/abs/a.db"))
        );
        // A colon inside a file name is still a path.
        assert_eq!(
            StoreLocation::parse("runs:2024.db").unwrap().path(),
            Some(Path::new("runs:2024.db"))
        );
    }

    #[test]
    fn other_kinds_and_blank_paths_are_config_invalid() {
        for (text, needle) in [
            ("mysql://db/runs", "a `mysql` store is not supported"),
            ("", "names no file"),
            ("sqlite:", "names no file"),
            ("sqlite:  ", "names no file"),
        ] {
            let f = StoreLocation::parse(text).unwrap_err();
            assert!(f.is(ErrorCode::ConfigInvalid), "{text}: {f}");
            assert!(f.message.contains(needle), "{text}: {}", f.message);
        }
    }

    #[test]
    fn relative_paths_resolve_against_a_directory() {
        let rel = StoreLocation::parse("a.db").unwrap();
        assert_eq!(
            rel.resolved_against(Path::new("/etc/x")).path(),
            Some(Path::new("/etc/x/a.db"))
        );
        let abs = StoreLocation::parse("/a.db").unwrap();
        assert_eq!(
            abs.resolved_against(Path::new("/etc/x")).path(),
            Some(Path::new("/a.db"))
        );
    }

    #[test]
    fn postgres_urls_name_the_postgres_store_and_resolve_to_themselves() {
        for text in [
            "postgres://app@db:5433/runs",
            "postgresql://db/runs?sslmode=require",
        ] {
            let location = StoreLocation::parse(text).unwrap();
            assert!(matches!(location, StoreLocation::Postgres(_)), "{text}");
            assert_eq!(location.to_string(), text);
            assert_eq!(location.path(), None);
            assert_eq!(
                location.clone().resolved_against(Path::new("/etc")),
                location
            );
        }
    }

    #[test]
    fn a_postgres_url_with_a_password_is_refused_without_showing_it() {
        for text in [
            "postgres://app:hunter2-x@db/runs",
            "postgresql://app@db/runs?password=hunter2-x",
        ] {
            let f = StoreLocation::parse(text).unwrap_err();
            assert!(f.is(ErrorCode::ConfigInvalid), "{f}");
            assert!(f.message.contains("A2AFLOW_PG_PASSWORD"), "{f}");
            for shown in [f.to_string(), format!("{f:?}")] {
                assert!(!shown.contains("hunter2-x"), "{shown}");
            }
            let from_config = serde_json::from_value::<StoreLocation>(serde_json::json!(text));
            assert!(!from_config.unwrap_err().to_string().contains("hunter2-x"));
        }
        let f = StoreLocation::parse("postgres://db:port/runs").unwrap_err();
        assert!(f.is(ErrorCode::ConfigInvalid), "{f}");
    }
}
