//! The SQLite run store's integration tests: one binary, one module per area.

mod bad_files;
mod migration;
mod processes;
mod records;
mod support;
mod torn;
