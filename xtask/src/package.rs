//! `cargo xtask ci`'s publish step: the crates as a host would add them from the registry.
//!
//! - every publishable crate (every workspace member without `publish = false`) declares what a
//!   registry page needs ([`REQUIRED`]), so the next crate someone adds cannot slip through;
//! - the one declared `rust-version` is at least every dependency's, and the publishable crates
//!   build with exactly that toolchain (installed with rustup when missing; on a machine where
//!   rustup can fetch nothing the step says SKIPPED on its own line, and the crates are tested
//!   on the current toolchain only);
//! - `cargo package` of every publishable crate passes, and the `.crate` sizes are listed. With
//!   `verify` (`cargo xtask package`) each is also built from its packaged sources, path
//!   dependencies resolved through cargo's local overlay (about 9 minutes on 2 cores); `cargo
//!   xtask ci` packages without that build (`--no-verify`) to stay inside CI's time budget;
//! - every feature combination of the facade builds (`cargo hack --feature-powerset check`).

use cargo_metadata::semver::Version;
use cargo_metadata::{CargoOpt, Metadata, MetadataCommand, Package};
use std::path::Path;

/// The manifest fields a publishable crate must set (crates.io needs the first two; the others
/// make its page usable).
pub const REQUIRED: [&str; 6] = [
    "description",
    "license",
    "repository",
    "readme",
    "keywords",
    "categories",
];

/// The crate whose every feature combination must build.
const FACADE: &str = "a2aflow";

/// The publish step, in order: manifests, rust-version, packaging (built from the packaged
/// sources when `verify`), the MSRV build, features.
pub fn run(root: &Path, verify: bool) -> Result<(), String> {
    let metadata = MetadataCommand::new()
        .manifest_path(root.join("Cargo.toml"))
        .features(CargoOpt::AllFeatures)
        .exec()
        .map_err(|e| format!("package: cargo metadata failed: {e}"))?;
    let mut problems = missing_metadata(&metadata);
    let msrv = declared_rust_version(&metadata);
    match &msrv {
        Ok(v) => problems.extend(newer_dependencies(&metadata, v)),
        Err(e) => problems.push(e.clone()),
    }
    if !problems.is_empty() {
        for p in &problems {
            eprintln!("package: {p}");
        }
        return Err(format!("package: {} problem(s)", problems.len()));
    }
    let names = publishable(&metadata);
    package(root, &names, verify)?;
    if let Ok(v) = msrv {
        msrv_build(root, &v, &names)?;
    }
    feature_powerset(root)
}

/// The names of the workspace members that may be published, in `cargo metadata` order.
pub fn publishable(metadata: &Metadata) -> Vec<String> {
    metadata
        .workspace_packages()
        .into_iter()
        .filter(|p| is_publishable(p))
        .map(|p| p.name.to_string())
        .collect()
}

fn is_publishable(p: &Package) -> bool {
    p.publish
        .as_ref()
        .is_none_or(|registries| !registries.is_empty())
}

/// One line per publishable crate that lacks a [`REQUIRED`] field.
pub fn missing_metadata(metadata: &Metadata) -> Vec<String> {
    metadata
        .workspace_packages()
        .into_iter()
        .filter(|p| is_publishable(p))
        .filter_map(|p| {
            let missing: Vec<&str> = REQUIRED
                .iter()
                .copied()
                .filter(|field| !has_field(p, field))
                .collect();
            (!missing.is_empty()).then(|| {
                format!(
                    "crate `{}` is publishable but its Cargo.toml sets no {}: add them to its \
                     [package] (license and repository with `.workspace = true`), or mark it \
                     `publish = false` if it is never published",
                    p.name,
                    missing.join(", ")
                )
            })
        })
        .collect()
}

fn has_field(p: &Package, field: &str) -> bool {
    let set = |s: &Option<String>| s.as_deref().is_some_and(|s| !s.trim().is_empty());
    match field {
        "description" => set(&p.description),
        "license" => set(&p.license),
        "repository" => set(&p.repository),
        "readme" => p.readme.is_some(),
        "keywords" => !p.keywords.is_empty(),
        "categories" => !p.categories.is_empty(),
        _ => false,
    }
}

/// The one `rust-version` every workspace member declares (the workspace's, inherited).
pub fn declared_rust_version(metadata: &Metadata) -> Result<Version, String> {
    let mut declared: Vec<(String, Option<Version>)> = metadata
        .workspace_packages()
        .into_iter()
        .map(|p| (p.name.to_string(), p.rust_version.clone()))
        .collect();
    declared.sort_by(|a, b| a.1.cmp(&b.1));
    declared.dedup_by(|a, b| a.1 == b.1);
    match declared.as_slice() {
        [(_, Some(v))] => Ok(v.clone()),
        [(name, None)] => Err(format!(
            "crate `{name}` declares no rust-version: inherit the workspace's (`rust-version.workspace = true`)"
        )),
        _ => Err(format!(
            "the workspace members declare different rust-versions ({}): every member inherits \
             the workspace's one (`rust-version.workspace = true`)",
            declared
                .iter()
                .map(|(n, v)| format!(
                    "{n}: {}",
                    v.as_ref().map_or("none".into(), Version::to_string)
                ))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// One line per resolved dependency whose own `rust-version` is newer than `declared`.
pub fn newer_dependencies(metadata: &Metadata, declared: &Version) -> Vec<String> {
    let resolved: Vec<_> = metadata
        .resolve
        .as_ref()
        .map(|r| r.nodes.iter().map(|n| &n.id).collect())
        .unwrap_or_default();
    metadata
        .packages
        .iter()
        .filter(|p| resolved.contains(&&p.id) && !metadata.workspace_members.contains(&p.id))
        .filter_map(|p| {
            let needs = p.rust_version.as_ref()?;
            (needs > declared).then(|| {
                format!(
                    "dependency {} {} needs Rust {needs}, newer than the workspace's rust-version \
                     {declared}: raise rust-version in the root Cargo.toml (and check it builds \
                     with that toolchain) or keep the older dependency",
                    p.name, p.version
                )
            })
        })
        .collect()
}

/// `cargo package` of every publishable crate, then their `.crate` sizes.
fn package(root: &Path, names: &[String], verify: bool) -> Result<(), String> {
    let mut args = vec!["package"];
    if !verify {
        args.push("--no-verify");
    }
    for name in names {
        args.extend(["-p", name.as_str()]);
    }
    crate::ci::sh(root, "cargo", &args, &[crate::ci::BUILD_ENV])?;
    let version = crate_version(root, names)?;
    println!("packaged sizes (target/package):");
    for name in names {
        let file = root
            .join("target")
            .join("package")
            .join(format!("{name}-{version}.crate"));
        let bytes = std::fs::metadata(&file)
            .map_err(|e| format!("package: no {}: {e}", file.display()))?
            .len();
        println!("  {name:<24} {:>7.1} KiB", bytes as f64 / 1024.0);
    }
    Ok(())
}

/// The version the publishable crates share (the workspace's).
fn crate_version(root: &Path, names: &[String]) -> Result<String, String> {
    let metadata = MetadataCommand::new()
        .manifest_path(root.join("Cargo.toml"))
        .no_deps()
        .exec()
        .map_err(|e| format!("package: cargo metadata failed: {e}"))?;
    let mut versions: Vec<String> = metadata
        .workspace_packages()
        .into_iter()
        .filter(|p| names.contains(&p.name.to_string()))
        .map(|p| p.version.to_string())
        .collect();
    versions.dedup();
    match versions.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(format!(
            "package: the publishable crates have different versions: {versions:?}"
        )),
    }
}

/// The publishable crates (libraries and binaries, not their tests) checked with the exact
/// toolchain of the declared rust-version, installed with rustup when missing.
fn msrv_build(root: &Path, msrv: &Version, names: &[String]) -> Result<(), String> {
    let toolchain = format!("{}.{}.{}", msrv.major, msrv.minor, msrv.patch);
    if let Err(e) = ensure_toolchain(root, &toolchain) {
        println!(
            "package: SKIPPED the rust-version build: the toolchain {toolchain} is not installed \
             and could not be installed ({e}); the crates are tested on the current toolchain only"
        );
        return Ok(());
    }
    let plus = format!("+{toolchain}");
    let mut args = vec![plus.as_str(), "check", "--all-features"];
    for name in names {
        args.extend(["-p", name.as_str()]);
    }
    crate::ci::sh(root, "cargo", &args, &[crate::ci::BUILD_ENV])
}

/// Installs the rustup toolchain `name` (minimal profile) when `rustc +name` does not answer; an
/// installed one is used as it is (a `nightly` is not updated on every run).
pub(crate) fn ensure_toolchain(root: &Path, name: &str) -> Result<(), String> {
    let present = std::process::Command::new("rustc")
        .args([&format!("+{name}"), "--version"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if present {
        return Ok(());
    }
    crate::ci::sh(
        root,
        "rustup",
        &["toolchain", "install", name, "--profile", "minimal"],
        &[],
    )
}

/// Every feature combination of the facade builds.
fn feature_powerset(root: &Path) -> Result<(), String> {
    crate::ci::ensure_cargo_tool(root, "hack", "cargo-hack", "^0.6")?;
    crate::ci::sh(
        root,
        "cargo",
        &["hack", "--feature-powerset", "check", "-p", FACADE],
        &[crate::ci::BUILD_ENV],
    )
}

#[cfg(test)]
#[path = "package_tests.rs"]
mod tests;
