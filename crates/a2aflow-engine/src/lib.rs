//! # a2aflow-engine — the A2A engine client
//!
//! **What it is.** The kernel's remote-client trait implemented over the A2A transports of
//! `a2aflow-protocol`: task identity (a fresh context id per logical task, the first remote task
//! id kept, `ROLE_USER`, fresh message ids), extension activation computed with `a2at`, waiting
//! (stream, resubscribe, poll with backoff), the Negotiation-T loop, best-effort cancellation, and
//! [`A2aEngineClient::attach`] for hosts that restart.
//!
//! **What it owns.** The join between the scheduler and the wire: the only code that imports both
//! `a2aflow-kernel` and `a2aflow-protocol`, and the only place the workflow traffic meets `a2at`.
//!
//! **What it must never depend on.** Higher layers: `a2aflow-extensions`, the `a2aflow` facade,
//! the CLI. No network stack of its own: every byte goes through `a2aflow-protocol`.
//!
//! - [`A2aEngineClient`] — [`a2aflow_kernel::RemoteClient`] over [`a2aflow_protocol::Transport`]s.
//! - [`ClientConfig`] — its bounds (negotiation budget, poll backoff, cancel bound, …).
//! - [`ResponseReducer`] / [`TaskView`] — re-exported from the wire crate ([`view`]): the pure
//!   fold of A2A responses into a task view and `ReceivedMessage` evidence.

mod config;
mod engine;
mod neg_context;
mod negotiation;

pub use a2aflow_protocol::view;
pub use a2aflow_protocol::{Applied, ResponseReducer, ResubscribePolicy, TaskView, end_state_code};
pub use config::{ClientConfig, MIN_POLL_INTERVAL};
pub use engine::A2aEngineClient;

/// The README (the crate's page on crates.io), whose example is compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
