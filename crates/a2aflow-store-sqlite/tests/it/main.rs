//! The SQLite run store's integration tests: one binary, one module per area.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap

mod bad_files;
mod migration;
mod processes;
mod records;
mod support;
mod torn;
