//! Integration tests of `a2aflow`: one test binary, a module per area.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap

mod context_ids;
mod credentials;
mod durable_runs;
mod events_schema;
mod execute;
mod executions;
mod extension_config;
mod features_doc;
mod gates;
mod journal_cancel;
mod oauth2;
mod postgres_store;
mod readme;
mod remaining_time;
mod retries;
mod send_task;
mod support;
mod timeouts;
mod worker;
