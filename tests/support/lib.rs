//! Shared support for a2aflow's cross-crate tests: fixture paths and helpers used by the test
//! binaries declared in `tests/Cargo.toml` (`interop`, `faults`, `e2e`, …).

use std::path::PathBuf;

/// The directory holding the wire fixtures copied from the official SDK transcripts.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// Waits until `done` holds, checking every 10 ms, for at most `limit`; returns whether it held.
/// For conditions the tests cannot be told about (a server counting its connections, a runtime's
/// alive tasks); never as a stand-in for a signal the code under test could give.
pub async fn wait_until(limit: std::time::Duration, mut done: impl FnMut() -> bool) -> bool {
    let until = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < until {
        if done() {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    done()
}
