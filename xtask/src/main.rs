//! Repository automation for a2aflow, run as `cargo xtask <command>`:
//!
//! - `check-layers` — the layer boundary over the full `cargo metadata` graph (see [`layers`]);
//! - `ci` — everything CI runs, in order; the README's test command;
//! - `bench` — every benchmark and the soak/load tests at full size, figures into
//!   `docs/benchmarks.md` (see [`mod@bench`]).

mod bench;
mod ci;
mod layers;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn workspace_root() -> PathBuf {
    // xtask lives one level below the workspace root.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
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
    let root = workspace_root();
    let result = match args.first().map(String::as_str) {
        Some("check-layers") => check_layers(&root),
        Some("ci") => ci::run(&root, &args[1..]),
        Some("bench") => bench::run(&root, &args[1..]),
        _ => Err(
            "usage: cargo xtask <check-layers | ci [--skip-interop] | bench [--no-criterion]>"
                .to_owned(),
        ),
    };
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
