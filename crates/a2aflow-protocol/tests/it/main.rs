//! The integration tests of `a2aflow-protocol`: one binary, a module per area
//! (`cargo test -p a2aflow-protocol --test it <module>::` runs one).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap

mod auth_credentials;
mod auth_end_to_end;
mod auth_headers;
mod auth_oauth2;
mod channel_door;
mod fuzz_regressions;
mod grpc_peer;
mod grpc_testkit;
mod grpc_transport;
mod redirects;
mod support;
mod tls_config;
mod tls_end_to_end;
mod transport_bindings;
mod transport_faults;
mod wirelog_capture;
mod wirelog_redaction_props;
