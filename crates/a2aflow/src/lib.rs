//! # a2aflow — the facade
//!
//! **What it is.** The one dependency a host adds: re-exports of the layers behind features
//! (`protocol`, `extensions`, `testkit`, and `otel` for OpenTelemetry export of the engine's spans) and the one-call [`execute_workflow`] entry point.
//!
//! **What it owns.** Assembly only: building transports and the engine client from agent cards and
//! an [`EngineConfig`], running, and closing only what it created.
//!
//! **What it must never depend on.** The CLI. It adds no behaviour of its own that a layer should own.
//!
//! ## Map
//!
//! Every item at this root, by what a host does with it (`cargo xtask public-api` checks the list
//! is complete):
//!
//! - **The layers**: [`model`], [`kernel`], [`store_sqlite`], and with `protocol` [`protocol`],
//!   [`engine`], [`services`], [`a2at`]; [`extensions`] and [`testkit`] with their features.
//! - **Run a workflow**: [`execute_workflow`], [`execute_workflow_stream`], [`resume`],
//!   [`resume_stream`] ([`ResumePolicy`]), [`send_task`] (one task outside a workflow, as step
//!   [`SEND_TASK_STEP`]); configured by [`EngineConfig`] ([`config`]) and [`HostHooks`].
//! - **Agents**: [`discover_agents`], [`fetch_agent_cards`], [`AgentEndpoint`], [`AgentSource`],
//!   [`check_agents`], [`unknown_agents`]; the connections: [`TransportFactory`],
//!   [`build_engine_client`], [`ChannelConfig`], [`ChannelFactory`], and with `extensions`
//!   [`build_extension_sender`].
//! - **Runs in a store** ([`store`], [`executions`]): [`StoreLocation`], [`RunStore`],
//!   [`RunFilter`], [`RunState`], [`RunSummary`], [`list_executions`], [`get_execution`]
//!   ([`ExecutionView`]), [`execution_events`], [`request_cancel`] ([`CancelRequest`]),
//!   [`answer_gate`], [`decline_gate`] ([`GateDelivery`]).
//! - **Workers** ([`worker`]): [`submit_workflow`] journals a run without driving it; a
//!   [`Worker`] ([`WorkerOptions`], [`RunEndHook`]) claims and drives a shared store's runs until
//!   its shutdown token is cancelled, and says what it did in a [`WorkerReport`].
//! - **Tracing**: [`otel`] (feature `otel`).
//!
//! ## Features
//!
//! The `##` comments of the `[features]` table in Cargo.toml, word for word (a test compares them):
//!
//! - `protocol` (default) — The A2A transports, the engine client and the registry /
//!   orchestration-centre clients (hyper + rustls).
//! - `extensions` (default) — Authorization-T and Notification-T senders.
//! - `testkit` — The scriptable A2A agent server, for tests and demos.
//! - `otel` — Exports the engine's `tracing` spans through OpenTelemetry OTLP (HTTP/protobuf over
//!   hyper + rustls).

#![cfg_attr(docsrs, feature(doc_cfg))]

pub use a2aflow_kernel as kernel;
pub use a2aflow_model as model;
/// The embedded run store (`SqliteStore`), for hosts that open it themselves.
pub use a2aflow_store_sqlite as store_sqlite;

#[cfg(feature = "protocol")]
pub use a2aflow_engine as engine;
#[cfg(feature = "protocol")]
pub use a2aflow_services as services;

/// The A2A wire (`a2aflow-protocol`: transports, SSE, auth, TLS, wire log, the task view), with
/// the engine client and the registry clients at the paths they had when they lived in it.
#[cfg(feature = "protocol")]
pub mod protocol {
    /// The engine client ([`crate::engine`], `a2aflow-engine`) at its former path.
    pub use a2aflow_engine as client;
    pub use a2aflow_protocol::*;
    pub use a2aflow_services::registry;
}
#[cfg(feature = "protocol")]
pub use a2at;

#[cfg(feature = "extensions")]
pub use a2aflow_extensions as extensions;
#[cfg(feature = "testkit")]
pub use a2aflow_testkit as testkit;

#[cfg(feature = "protocol")]
pub mod config;
#[cfg(feature = "protocol")]
mod execute;
pub mod executions;
#[cfg(feature = "otel")]
pub mod otel;
#[cfg(feature = "protocol")]
mod send_task;
pub mod store;
#[cfg(feature = "protocol")]
pub mod worker;

/// Which lost messages a resumed run may resend.
pub use a2aflow_kernel::ResumePolicy;
/// The run store contract, as the facade's queries take it.
pub use a2aflow_kernel::journal::{RunFilter, RunState, RunStore, RunSummary};
/// Refuse a run whose workflow names an agent the host has no card for, before anything is sent.
pub use a2aflow_kernel::{check_agents, unknown_agents};
/// What [`execute_workflow`] and the channel door take per agent: an [`AgentEndpoint`], or a bare
/// card (no configured origin).
#[cfg(feature = "protocol")]
pub use a2aflow_protocol::{AgentSource, ChannelConfig, ChannelFactory};
#[cfg(feature = "protocol")]
pub use config::EngineConfig;
#[cfg(feature = "extensions")]
pub use execute::build_extension_sender;
#[cfg(feature = "protocol")]
pub use execute::{
    AgentEndpoint, HostHooks, TransportFactory, build_engine_client, discover_agents,
    execute_workflow, execute_workflow_stream, fetch_agent_cards, resume, resume_stream,
};
/// The runs a store holds: listing, one run's view, its events, a cancel request, the answers
/// to its open gates.
pub use executions::{
    CancelRequest, ExecutionView, GateDelivery, answer_gate, decline_gate, execution_events,
    get_execution, list_executions, request_cancel,
};
/// One task outside a workflow, with a task's events, negotiation, gates and retries.
#[cfg(feature = "protocol")]
pub use send_task::{SEND_TASK_STEP, send_task};
pub use store::StoreLocation;
/// Runs journaled without a driver, and the workers that claim and drive them.
#[cfg(feature = "protocol")]
pub use worker::{RunEndHook, Worker, WorkerOptions, WorkerReport, submit_workflow};

/// The host-integration guide's code blocks are compiled as doctests, so the guide cannot drift
/// from the API.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/guide/host-integration.md")]
pub struct HostIntegrationGuide;

/// The README (the crate's page on crates.io), whose example is compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
