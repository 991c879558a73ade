//! Integration tests of `a2aflow-kernel`: one test binary, a module per area.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap

mod support;

mod cancel;
mod context;
mod delegation;
mod durable;
mod durable_appends;
mod durable_events;
mod durable_journal_bytes;
mod durable_paused_send;
mod durable_shared_appends;
mod event_bytes;
mod event_payloads;
mod gates;
mod gates_durable;
mod gates_retry;
mod host_hooks;
mod journaled_options;
mod module_graph;
mod negotiation;
mod properties;
mod resume_race;
mod retry_resume;
mod routing;
mod runner;
mod scheduling;
mod validation;
