//! # a2aflow-model — the shapes every layer shares
//!
//! **What it is.** The I/O-free vocabulary of a2aflow: workflow definitions and their validation,
//! the carriers of the host callback contract (TaskRequest, WorkflowInput, ReceivedMessage, …),
//! lifecycle events, the stable error-code registry, and the A2A-shaped delegation records.
//!
//! **What it owns.** Parsing and validating workflow documents; the serde shapes hosts log,
//! persist and replay; the one registry of stable error codes (`a2a.*`, `workflow.*`, …).
//! A2A 1.0 wire types come from the official `a2a-lf` crate (imported as [`a2a`]) and are
//! re-exported from here.
//!
//! **What it must never depend on.** Any runtime, network or TLS crate (tokio, hyper, rustls, …)
//! and the A2A-T crate `a2at`. `cargo xtask check-layers` walks the full dependency graph and fails
//! the build if any of them becomes reachable.

#![cfg_attr(docsrs, feature(doc_cfg))]

pub use a2a;

pub mod carriers;
pub mod definition;
pub mod delegation;
pub mod error_code;
pub mod event;
pub mod event_body;
pub mod event_data;
#[cfg(feature = "schema")]
pub mod event_schema;
pub mod event_time;
pub mod failure;
pub mod gate;
pub mod load;
pub mod names;
pub mod problem;
pub mod retry;
pub mod rpc_status;
#[cfg(feature = "schema")]
pub mod schema;
mod seconds;
pub mod shared_str;
pub mod source_map;
pub mod validate;

pub use carriers::*;
pub use definition::{
    CONTEXT_WILDCARD, ContextFrom, Edge, RESERVED_STEP_NAMES, Step, StepType, Subtask, Workflow,
};
pub use error_code::{BusinessCode, ErrorCode, FailureCode};
pub use event::{Event, EventKind};
pub use event_body::EventBody;
pub use event_data::{ClientEvent, EventData, EventPayload, PayloadError};
pub use event_time::{EventTime, EventTimeError};
pub use failure::{Failure, FailureCause, FailureFacts, Gate};
pub use gate::OpenGate;
pub use load::{
    LoadErrors, LoadOptions, Loaded, load_workflow_bytes, load_workflow_str, load_workflow_value,
    parse_step_type,
};
pub use problem::{Position, Problem};
pub use retry::{Backoff, RetryPolicy};
pub use rpc_status::{ErrorEnvelope, RpcStatus};
pub use shared_str::SharedStr;
pub use source_map::SourceMap;
pub use validate::{ValidationErrors, validate};

/// The README (the crate's page on crates.io), whose example is compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
