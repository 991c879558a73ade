//! # a2aflow-store-postgres — the shared run store
//!
//! **What it is.** [`PostgresStore`]: the kernel's [`a2aflow_kernel::RunStore`] journal in a
//! Postgres database, for several hosts sharing runs. Its schema lives in the connection's
//! current schema, is versioned (the `a2aflow_schema` table: application and version) and is
//! created and migrated forward by this crate ([`CURRENT_VERSION`]).
//!
//! **Writes.** An append batch is one statement (the `a2aflow_append` function the schema
//! installs): the run's row is locked, the fence checked, the records inserted and the run's
//! next sequence moved on, in one round trip and one transaction; an event batch likewise
//! (`a2aflow_record_events`). An append returns once the server committed it (durable as the
//! server's `synchronous_commit` makes it: `on` by default).
//!
//! **Leases.** One driver per run: a lease row with an owner, a fencing token and an expiry
//! measured by the database's clock ([`StoreOptions::lease_ttl`]). Taking, renewing and
//! releasing it lock the run's row, as the fenced writes do, so a takeover and a write of the
//! old owner never interleave: once another owner holds the lease, the old one's writes are
//! `store.lease_lost` and write nothing.
//!
//! **Connections.** A `deadpool-postgres` pool over `tokio-postgres`; TLS through rustls (a
//! small connector in this crate, no OpenSSL), as the URL's `sslmode` asks. Every operation has
//! a deadline ([`StoreOptions::connect_timeout`], [`StoreOptions::operation_timeout`]).
//! Messages name the database by host, port, database and role, never with a password.
//!
//! **Bad databases.** Unreachable, a refused login or a missing database are
//! `store.unavailable` (the SQLSTATE in the details); a schema holding another application's
//! tables is `store.not_a_store`; a newer schema is `store.newer_schema`. A failed open changes
//! nothing.
//!
//! **Layer.** Above the kernel and the model; never the wire, the engine, an HTTP stack or
//! OpenSSL (`cargo xtask check-layers`).

mod error;
mod schema;
mod store;
mod tls;
mod url;
mod wakeups;

pub use schema::{APPLICATION, CURRENT_VERSION};
pub use store::{PostgresStore, StoreOptions, target_of};
pub use url::{PASSWORD_VARIABLES, PgUrl, UrlError, password_from_env};
pub use wakeups::{CHANNEL, WorkSignal};

/// The README (the crate's page on crates.io), whose example is compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
