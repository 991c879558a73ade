//! Soak, load and random cancellation, through the public facade against testkit
//! agents on 127.0.0.1.
//!
//! Four sections, each in a child process of its own so that its memory figures start clean:
//! - `soak`: `A2AFLOW_SOAK_RUNS` (default 500) concurrent five-step workflows with mixed,
//!   deterministic outcomes; every run accounted for exactly once, with the outcome its script
//!   implies; tasks/s, peak RSS, and RSS back near its baseline afterwards.
//! - `load`: `A2AFLOW_LOAD_TASKS` (default 500) remote tasks in flight at once against a slow
//!   agent on the polling path; RSS per in-flight task (≤ 10 KB asserted from 1,000 tasks on).
//! - `load-store`: the same, journaled in a SQLite run store, with the same target.
//! - `cancel`: `A2AFLOW_CANCEL_RUNS` (default 1,000) runs cancelled at seeded random points:
//!   no tokio task left alive, no result or event after the cancel, and a CancelTask on the
//!   agent whenever a remote task id was known.
//!
//! The soak and load agents live in another child process (the same binary with
//! `A2AFLOW_SOAK_ROLE=server`), so RSS is the engine's alone. Figures are printed as
//! `BENCH name=value unit` lines, which `cargo xtask bench` collects. `A2AFLOW_SOAK_SECTIONS`
//! (comma-separated) picks sections; `A2AFLOW_SOAK_SEED` changes the seed.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap

mod cancel;
mod host;
mod load;
mod memory;
mod rng;
mod server;
mod soak;

use std::time::Duration;

pub use a2aflow_tests::wait_until;

/// jemalloc returns freed pages to the OS (see [`ALLOCATOR_CONF`]), so RSS after a section shows
/// what is still held, not what the allocator kept for reuse.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc settings for every child: a background thread purges freed pages within a second.
const ALLOCATOR_CONF: &str = "background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0";

/// Which part of the test this process plays.
pub const ROLE_ENV: &str = "A2AFLOW_SOAK_ROLE";

/// How long one section may take before it is killed and counted as failed.
const SECTION_DEADLINE: Duration = Duration::from_secs(1800);

fn main() {
    match std::env::var(ROLE_ENV).ok().as_deref() {
        Some("server") => server::serve(),
        Some("soak") => soak::run(),
        Some("load") => load::run(load::Journal::None),
        Some("load-store") => load::run(load::Journal::Sqlite),
        Some("cancel") => cancel::run(),
        Some(other) => panic!("unknown {ROLE_ENV}={other}"),
        None => sections(),
    }
}

/// Runs every selected section in a child process and fails if any of them does.
fn sections() {
    memory::self_check();
    rng::self_check();
    let selected = std::env::var("A2AFLOW_SOAK_SECTIONS")
        .unwrap_or_else(|_| "soak,load,load-store,cancel".to_owned());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut failed = Vec::new();
    for section in selected.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        println!("== soak section {section}");
        let status = rt.block_on(async {
            let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
                .env(ROLE_ENV, section)
                .env("_RJEM_MALLOC_CONF", ALLOCATOR_CONF)
                .kill_on_drop(true)
                .spawn()
                .unwrap();
            tokio::time::timeout(SECTION_DEADLINE, child.wait()).await
        });
        match status {
            Ok(Ok(s)) if s.success() => {}
            other => failed.push(format!("{section}: {other:?}")),
        }
    }
    assert!(failed.is_empty(), "soak sections failed: {failed:?}");
}

/// A count from the environment, or `default`.
pub fn env_count(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .replace('_', "")
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a count, got {v:?}")),
        Err(_) => default,
    }
}

/// The seed of every random choice in this run (printed, so a failure can be replayed).
pub fn seed() -> u64 {
    env_count("A2AFLOW_SOAK_SEED", 0x50a_c0de) as u64
}

/// Prints one machine-readable figure for `cargo xtask bench`.
pub fn bench(name: &str, value: f64, unit: &str) {
    println!("BENCH {name}={value:.1} {unit}");
}
