//! # a2aflow-store-sqlite — the embedded run store
//!
//! **What it is.** [`SqliteStore`]: the kernel's [`a2aflow_kernel::RunStore`] journal in one
//! SQLite file (compiled in: `rusqlite` with `bundled`), created on first use, its schema
//! versioned (`PRAGMA user_version`, marked as ours by `PRAGMA application_id` "A2AF") and
//! migrated forward by this crate ([`CURRENT_VERSION`]).
//!
//! **Durability.** WAL mode with `synchronous = FULL`: an append returns only after the
//! transaction holding it is on disk, so a power loss never loses an acknowledged record (a
//! driver sends a message only after its write-ahead `taskIntent` was acknowledged). Appends
//! that arrive together share one transaction and one fsync (group commit); each keeps its own
//! savepoint, so one refused append does not undo the others. See `docs/reliability.md`.
//!
//! **Threads.** SQLite is blocking: the store's one connection lives on its own thread and
//! async callers hand it jobs through a bounded channel; opening runs on
//! `tokio::task::spawn_blocking`. The store never builds a runtime. Every write of the store
//! waits for that one thread, so it does only SQL: records are written as JSON by the caller
//! before the job is queued, and a run's events are kept one row per batch (the texts one per
//! line), not one row per event.
//!
//! **Leases.** One driver per run: a lease row with an owner, a fencing token and an expiry
//! ([`StoreOptions::lease_ttl`]), taken in a `BEGIN IMMEDIATE` transaction so two processes
//! cannot both win. A driver killed with SIGKILL stops renewing; its lease lapses and the next
//! driver takes the run over with a higher token.
//!
//! **Bad files.** A file that is not an a2aflow store, has a newer schema, or is damaged is
//! refused with `store.not_a_store`, `store.newer_schema` or `store.corrupt` before any
//! read-write connection exists, so a failed open never changes it.
//!
//! **Layer.** Above the kernel and the model; never the wire, the engine or a network crate
//! (`cargo xtask check-layers`).

mod error;
mod open;
mod schema;
mod store;
mod worker;

pub use schema::{APPLICATION_ID, CURRENT_VERSION};
pub use store::{SqliteStore, StoreOptions};

/// The README (the crate's page on crates.io), whose example is compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
