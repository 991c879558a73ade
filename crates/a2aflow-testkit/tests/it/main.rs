//! Integration tests of `a2aflow-testkit`: one test binary, a module per area.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap

mod support;

mod fast_peer;
mod faults;
mod list_tasks;
mod server;
