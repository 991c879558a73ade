//! The integration tests of a2aflow-server: served workflows driven by a2aflow's own
//! transports (`a2aflow::protocol`) and, for the error cases, by raw HTTP.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap

mod support;

mod auth;
mod delegation;
mod discovery;
mod durable;
mod errors;
mod gates;
mod grpc;
mod jsonrpc;
mod kept;
mod limits;
mod rest;
mod schema;
