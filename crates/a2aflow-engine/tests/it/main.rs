//! The integration tests of `a2aflow-engine`: one binary, a module per area
//! (`cargo test -p a2aflow-engine --test it <module>::` runs one).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap

mod cancel_remote;
mod client_assembly;
mod client_engine;
mod client_testkit;
mod dispatch_identity;
mod journal_hooks;
mod journal_support;
mod reattach;
mod reattach_negotiation;
mod send_gate;
