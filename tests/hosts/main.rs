//! Workflows served by one `a2aflow serve` process and used from outside it, with real
//! processes: a served run survives a SIGKILL and restart of its server (the client re-attaches
//! through GetTask, SubscribeToTask and ListTasks by context), and a parent `a2aflow run` in
//! another process delegates a step to a served workflow, through such a restart too. The
//! downstream agents are in-process testkit agents, which count the business commands.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test: a failed check panics

#[allow(dead_code)] // these tests use only `cli_binary`
#[path = "../crash/host.rs"]
mod host;

mod delegation;
mod restart;
mod served;
