//! The publish checks on the real workspace, and proof that they fail on fixture workspaces.

use super::{declared_rust_version, missing_metadata, newer_dependencies, publishable};
use cargo_metadata::{Metadata, MetadataCommand};
use std::path::Path;

/// The `[package]` fields every fixture crate that should pass sets.
const COMPLETE: &str = "description = \"d\"\nlicense = \"Apache-2.0\"\n\
    repository = \"https://example.org/r\"\nreadme = \"README.md\"\nkeywords = [\"k\"]\n\
    categories = [\"development-tools\"]\n";

fn krate(dir: &Path, name: &str, package_extra: &str, deps: &str) {
    let d = dir.join(name);
    std::fs::create_dir_all(d.join("src")).unwrap();
    std::fs::write(d.join("src/lib.rs"), "").unwrap();
    std::fs::write(
        d.join("Cargo.toml"),
        format!(
            "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\
             {package_extra}\n[dependencies]\n{deps}\n"
        ),
    )
    .unwrap();
}

fn workspace(dir: &Path, members: &[&str], rust_version: &str) -> Metadata {
    let list: Vec<String> = members.iter().map(|m| format!("\"{m}\"")).collect();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[workspace]\nresolver = \"2\"\nmembers = [{}]\nexclude = [\"outside\"]\n\n\
             [workspace.package]\nrust-version = \"{rust_version}\"\n",
            list.join(", ")
        ),
    )
    .unwrap();
    MetadataCommand::new()
        .manifest_path(dir.join("Cargo.toml"))
        .exec()
        .unwrap()
}

#[test]
fn the_workspace_passes_the_publish_checks() {
    let root = crate::workspace_root().expect("workspace root");
    let metadata = MetadataCommand::new()
        .manifest_path(root.join("Cargo.toml"))
        .exec()
        .expect("cargo metadata");
    assert_eq!(missing_metadata(&metadata), Vec::<String>::new());
    let declared = declared_rust_version(&metadata).expect("one rust-version");
    assert_eq!(
        newer_dependencies(&metadata, &declared),
        Vec::<String>::new()
    );
    let names = publishable(&metadata);
    assert!(names.iter().any(|n| n == "a2aflow"), "{names:?}");
    assert!(
        !names.iter().any(|n| n == "xtask" || n == "a2aflow-tests"),
        "{names:?}"
    );
}

#[test]
fn a_publishable_crate_without_keywords_and_readme_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let rv = "rust-version.workspace = true\n";
    krate(dir.path(), "complete", &format!("{COMPLETE}{rv}"), "");
    krate(
        dir.path(),
        "sloppy",
        &format!("description = \"d\"\nlicense = \"MIT\"\nrepository = \"https://x.org\"\n{rv}"),
        "",
    );
    krate(
        dir.path(),
        "internal",
        &format!("publish = false\n{rv}"),
        "",
    );
    let metadata = workspace(dir.path(), &["complete", "sloppy", "internal"], "1.70");
    let problems = missing_metadata(&metadata);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("`sloppy`")
            && problems[0].contains("readme, keywords, categories")
            && problems[0].contains("publish = false"),
        "{}",
        problems[0]
    );
    assert_eq!(publishable(&metadata), ["complete", "sloppy"]);
}

#[test]
fn a_dependency_newer_than_the_declared_rust_version_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let rv = "rust-version.workspace = true\n";
    krate(dir.path(), "outside", "rust-version = \"1.80\"\n", "");
    krate(
        dir.path(),
        "app",
        &format!("{COMPLETE}{rv}"),
        "outside = { path = \"../outside\" }",
    );
    let metadata = workspace(dir.path(), &["app"], "1.75");
    let declared = declared_rust_version(&metadata).unwrap();
    let problems = newer_dependencies(&metadata, &declared);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("outside 0.1.0 needs Rust 1.80.0"),
        "{}",
        problems[0]
    );
    let raised = workspace(dir.path(), &["app"], "1.80");
    let declared = declared_rust_version(&raised).unwrap();
    assert_eq!(newer_dependencies(&raised, &declared), Vec::<String>::new());
}

#[test]
fn members_with_different_rust_versions_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    krate(dir.path(), "one", "rust-version.workspace = true\n", "");
    krate(dir.path(), "two", "rust-version = \"1.60\"\n", "");
    let metadata = workspace(dir.path(), &["one", "two"], "1.70");
    let e = declared_rust_version(&metadata).unwrap_err();
    assert!(e.contains("different rust-versions"), "{e}");
}
