//! Integration tests of `a2aflow-cli`: one test binary, a module per area.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap

mod support;

mod cli;
mod diagnostics;
mod durable;
mod examples;
mod gates;
mod postgres;
mod run_registry;
mod run_safety;
mod run_ui;
mod runs;
mod search;
mod send;
mod send_deadline;
mod send_grpc;
mod serve;
mod serve_auth;
mod terminal;
mod ui;
mod ui_resume;
mod workers;
mod workflow_input;
