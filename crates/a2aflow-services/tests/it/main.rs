//! The integration tests of `a2aflow-services`: one binary, a module per area
//! (`cargo test -p a2aflow-services --test it <module>::` runs one).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap

mod registry_fake;
