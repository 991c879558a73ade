//! # a2at — the A2A-T core
//!
//! **What it is.** The telecom extensions to A2A 1.0 as data: extension URIs (Task-T,
//! Negotiation-T, Authorization-T, Notification-T), `MetadataContent`, the `NegotiationContext`
//! and its validation rules, and the computation of which extension URIs a message activates.
//!
//! **What it owns.** Everything an engine needs to read and write A2A-T metadata, and nothing about
//! engines: no scheduling, no transport, no callbacks.
//!
//! **What it must never depend on.** Any a2aflow crate, any runtime or network crate. Only the
//! protocol and extension layers (and crates above them) may depend on it; the scheduling kernel
//! never does, directly or transitively (`deny.toml` wrappers and `cargo xtask check-layers`).
