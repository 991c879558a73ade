//! Shared support for a2aflow's cross-crate tests: fixture paths and helpers used by the test
//! binaries declared in `tests/Cargo.toml` (`interop`, `faults`, `e2e`, …).

use std::path::PathBuf;

/// The directory holding the wire fixtures copied from the official SDK transcripts.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}
