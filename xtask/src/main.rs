//! Repository automation for a2aflow, run as `cargo xtask <command>`:
//!
//! - `check-layers` — the layer boundary over the full `cargo metadata` graph (see [`layers`]);
//! - `ci` — everything CI runs, in order; the README's test command;
//! - `package` — the publish checks of `ci` alone, each crate also built from its packaged
//!   sources (see [`package`]);
//! - `public-api` — the facade's public API from rustdoc JSON (see [`public_api`]);
//! - `bench` — every benchmark, the soak/load tests at full size and the crash test at 2,000
//!   kills, figures into `docs/benchmarks.md` (see [`mod@bench`]);
//! - `postgres start | stop` — a local PostgreSQL for the Postgres store's tests (see [`postgres`]);
//! - `bench-anchors` — a2aflow beside the Python anchors of `bench/run_baselines.sh` (see
//!   [`anchors`]).

mod anchors;
mod bench;
mod chromium;
mod ci;
mod layers;
mod package;
mod postgres;
mod public_api;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The root of the workspace the current directory belongs to, found at run time with
/// `cargo locate-project --workspace` (never the directory xtask was compiled in: a copy of the
/// repository that shares a target directory must check itself, not the original tree).
fn workspace_root() -> Result<PathBuf, String> {
    let here = std::env::current_dir()
        .map_err(|e| format!("xtask: cannot read the current directory: {e}"))?;
    workspace_root_from(&here)
}

/// The root of the workspace that `dir` belongs to (`cargo locate-project --workspace` run in
/// `dir`, with the cargo that runs xtask when there is one).
fn workspace_root_from(dir: &Path) -> Result<PathBuf, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(&cargo)
        .args(["locate-project", "--workspace", "--message-format", "plain"])
        .current_dir(dir)
        .output()
        .map_err(|e| format!("xtask: could not start `cargo locate-project`: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "xtask: `cargo locate-project --workspace` failed in {}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let manifest = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    manifest
        .parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| format!("xtask: `cargo locate-project` gave {}", manifest.display()))
}

fn check_layers(root: &Path) -> Result<(), String> {
    let problems = layers::check_manifest(&root.join("Cargo.toml"))?;
    if problems.is_empty() {
        println!(
            "check-layers: ok ({} crates in the layer table)",
            layers::LAYERS.len()
        );
        Ok(())
    } else {
        for p in &problems {
            eprintln!("check-layers: {p}");
        }
        Err(format!("check-layers: {} violation(s)", problems.len()))
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = workspace_root().and_then(|root| match args.first().map(String::as_str) {
        Some("check-layers") => check_layers(&root),
        Some("ci") => ci::run(&root, &args[1..]),
        Some("bench") => bench::run(&root, &args[1..]),
        Some("postgres") => postgres::run_command(&root, &args[1..]),
        Some("bench-anchors") => anchors::run(&root, &args[1..]),
        Some("package") => package::run(&root, true),
        Some("public-api") => public_api::run(&root),
        _ => Err(
            "usage: cargo xtask <check-layers | ci [--skip-interop] | package | public-api | bench [--no-criterion | --crash-only] | bench-anchors | postgres <start | stop>>"
                .to_owned(),
        ),
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests;
