//! `cargo xtask ci`: the exact sequence CI runs (`cargo xtask bench` is in [`mod@crate::bench`]).
//!
//! Every prerequisite is installed here when missing (cargo-deny and cargo-fuzz from crates.io,
//! the Python interop peer from PyPI into `target/interop-venv`); a prerequisite that cannot be
//! had fails the run loudly, it is never skipped.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// Runs one command in the workspace root, echoing it; fails with its exit status.
pub fn sh(root: &Path, program: &str, args: &[&str], envs: &[(&str, &str)]) -> Result<(), String> {
    println!("\n==> {program} {}", args.join(" "));
    let started = Instant::now();
    let status = Command::new(program)
        .args(args)
        .envs(envs.iter().copied())
        .current_dir(root)
        .status()
        .map_err(|e| format!("could not start `{program}`: {e}"))?;
    println!(
        "<== {program} {} ({:.1?})",
        args.first().unwrap_or(&""),
        started.elapsed()
    );
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{program} {}` failed: {status}", args.join(" ")))
    }
}

/// Installs the cargo subcommand `sub` (crate `krate`, `version`) when `cargo <sub> --version`
/// does not answer; a failed install fails the run (a prerequisite is never skipped).
pub(crate) fn ensure_cargo_tool(
    root: &Path,
    sub: &str,
    krate: &str,
    version: &str,
) -> Result<(), String> {
    let present = Command::new("cargo")
        .args([sub, "--version"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if present {
        return Ok(());
    }
    sh(
        root,
        "cargo",
        &["install", "--locked", krate, "--version", version],
        &[],
    )
    .map_err(|e| format!("{krate} is required and could not be installed: {e}"))
}

/// The CI fuzz smoke: every target of `fuzz/` for a short bounded time (`fuzz/run-short.sh`),
/// unoptimised and without a sanitizer so the build stays a few minutes; the long campaigns are
/// recorded in docs/reliability.md.
fn fuzz_smoke(root: &Path) -> Result<(), String> {
    ensure_cargo_tool(root, "fuzz", "cargo-fuzz", "^0.13")?;
    sh(
        root,
        "bash",
        &["fuzz/run-short.sh", FUZZ_SMOKE_SECS],
        &[
            ("FUZZ_SANITIZER", "none"),
            ("FUZZ_PROFILE", "dev"),
            BUILD_ENV,
        ],
    )
}

/// Seconds each fuzz target runs in CI.
const FUZZ_SMOKE_SECS: &str = "10";

/// Environment for the cargo builds of `ci`: no incremental state. CI builds once from a clean
/// clone, so incremental caches only cost disk (they were a third of `target/` when a clean CI
/// run ran out of space).
pub(crate) const BUILD_ENV: (&str, &str) = ("CARGO_INCREMENTAL", "0");

/// `cargo xtask ci [--skip-interop]`.
pub fn run(root: &Path, args: &[String]) -> Result<(), String> {
    let skip_interop = args.iter().any(|a| a == "--skip-interop");
    if skip_interop && std::env::var_os("CI").is_some() {
        return Err(
            "--skip-interop is for local iteration only; CI always runs the interop tests".into(),
        );
    }
    let started = Instant::now();
    sh(root, "cargo", &["fmt", "--all", "--check"], &[])?;
    crate::check_layers(root)?;
    ensure_cargo_tool(root, "deny", "cargo-deny", "^0.20")?;
    sh(
        root,
        "cargo",
        &[
            "deny",
            "--all-features",
            "check",
            "bans",
            "licenses",
            "sources",
        ],
        &[],
    )?;
    sh(
        root,
        "cargo",
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--all-features",
            "--",
            "-D",
            "warnings",
        ],
        &[BUILD_ENV],
    )?;
    let mut envs: Vec<(&str, String)> = vec![(BUILD_ENV.0, BUILD_ENV.1.to_owned())];
    if !skip_interop {
        let python = crate::ci::interop::ensure_python_peer(root)?;
        envs.push(("A2AFLOW_PY_PEER", python));
    }
    envs.push(("A2AFLOW_CHROMIUM", crate::chromium::ensure_chromium(root)?));
    // Stopped when `postgres` drops, the test step failed or not.
    let postgres = crate::postgres::Server::start_for_ci(root)?;
    envs.push(("A2AFLOW_PG_URL", postgres.url()));
    envs.push(("PGPASSWORD", postgres.password().to_owned()));
    let envs_ref: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    sh(
        root,
        "cargo",
        &["test", "--workspace", "--all-features", "--no-fail-fast"],
        &envs_ref,
    )?;
    drop(postgres);
    sh(
        root,
        "cargo",
        &["doc", "--workspace", "--no-deps", "--all-features"],
        &[("RUSTDOCFLAGS", "-D warnings"), BUILD_ENV],
    )?;
    // Packaged without the verification build (`cargo xtask package` does that build).
    crate::package::run(root, false)?;
    crate::public_api::run(root)?;
    fuzz_smoke(root)?;
    println!("\nci: all steps passed in {:.1?}", started.elapsed());
    Ok(())
}

pub mod interop {
    //! The official A2A Python SDK peer used by `tests/interop`.
    use std::path::Path;

    /// Creates `target/interop-venv` with `a2a-sdk` when missing and returns its python.
    pub fn ensure_python_peer(root: &Path) -> Result<String, String> {
        let venv = root.join("target").join("interop-venv");
        let python = venv.join("bin").join("python");
        let lock = root
            .join("tests")
            .join("interop")
            .join("requirements.lock.txt");
        if !lock.exists() {
            return Err(format!(
                "interop peer requirements missing: {}",
                lock.display()
            ));
        }
        let stamp = venv.join(".installed");
        let wanted = std::fs::read_to_string(&lock).map_err(|e| e.to_string())?;
        if std::fs::read_to_string(&stamp).ok().as_deref() != Some(wanted.as_str()) {
            let base = find_python().ok_or(
                "no python3 (3.10+) found on PATH: the interop peer needs it (install python3 and python3-venv)",
            )?;
            super::sh(
                root,
                &base,
                &["-m", "venv", "--clear", &venv.to_string_lossy()],
                &[],
            )?;
            super::sh(
                root,
                &python.to_string_lossy(),
                &[
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                    "-r",
                    &lock.to_string_lossy(),
                ],
                &[],
            )?;
            std::fs::write(&stamp, wanted).map_err(|e| e.to_string())?;
        }
        Ok(python.to_string_lossy().into_owned())
    }

    fn find_python() -> Option<String> {
        ["python3.12", "python3.11", "python3"]
            .iter()
            .find_map(|p| {
                let ok = std::process::Command::new(p)
                    .args([
                        "-c",
                        "import sys, venv; sys.exit(0 if sys.version_info >= (3, 10) else 1)",
                    ])
                    .status()
                    .map(|s| s.success())
                    .unwrap_or(false);
                ok.then(|| (*p).to_owned())
            })
    }
}
