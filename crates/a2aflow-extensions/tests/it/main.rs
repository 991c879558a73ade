//! Integration tests of `a2aflow-extensions`: one test binary, a module per area.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap

mod support;

mod activation;
mod authorization;
mod configured_caps;
mod isolation;
mod load;
mod notification;
