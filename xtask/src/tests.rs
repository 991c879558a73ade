//! The layer check on the real workspace, and proof that it fails on broken fixture workspaces.

use crate::layers::{self, A2AT_WRAPPERS};
use std::path::Path;

#[test]
fn workspace_respects_the_layers() {
    let root = crate::workspace_root().expect("workspace root");
    let problems = layers::check_manifest(&root.join("Cargo.toml")).expect("cargo metadata");
    assert!(
        problems.is_empty(),
        "layer violations:\n{}",
        problems.join("\n")
    );
}

#[test]
fn deny_toml_wrappers_match_the_layer_table() {
    let deny = std::fs::read_to_string(
        crate::workspace_root()
            .expect("workspace root")
            .join("deny.toml"),
    )
    .expect("deny.toml");
    let line = deny
        .lines()
        .find(|l| l.contains("crate = \"a2at\""))
        .expect("deny.toml bans a2at with wrappers");
    let inside = line
        .split("wrappers = [")
        .nth(1)
        .and_then(|s| s.split(']').next())
        .expect("wrappers list");
    let mut listed: Vec<&str> = inside
        .split(',')
        .map(|s| s.trim().trim_matches('"'))
        .filter(|s| !s.is_empty())
        .collect();
    let mut expected = A2AT_WRAPPERS.to_vec();
    listed.sort_unstable();
    expected.sort_unstable();
    assert_eq!(
        listed, expected,
        "deny.toml wrappers and xtask A2AT_WRAPPERS drifted apart"
    );
}

/// Writes a throw-away workspace of path crates named like ours; `kernel_deps` and
/// `kernel_dev_deps` are the kernel's dependency lines. The wrapper that reaches `a2at` is
/// `a2aflow-extensions` (it also stands on the wire crate); the testkit depends on nothing.
fn fixture(dir: &Path, kernel_deps: &str, kernel_dev_deps: &str) {
    let krate = |name: &str, deps: &str, dev: &str| {
        let d = dir.join(name);
        std::fs::create_dir_all(d.join("src")).unwrap();
        std::fs::write(d.join("src/lib.rs"), "").unwrap();
        std::fs::write(
            d.join("Cargo.toml"),
            format!(
                "[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
                 [dependencies]\n{deps}\n[dev-dependencies]\n{dev}\n"
            ),
        )
        .unwrap();
    };
    krate("a2at", "", "");
    krate("a2aflow-model", "", "");
    krate("a2aflow-testkit", "", "");
    krate(
        "a2aflow-protocol",
        "a2aflow-model = { path = \"../a2aflow-model\" }",
        "",
    );
    krate(
        "a2aflow-extensions",
        "a2at = { path = \"../a2at\" }\na2aflow-protocol = { path = \"../a2aflow-protocol\" }",
        "",
    );
    krate(
        "a2aflow-kernel",
        &format!("a2aflow-model = {{ path = \"../a2aflow-model\" }}\n{kernel_deps}"),
        kernel_dev_deps,
    );
    std::fs::write(
        dir.join("Cargo.toml"),
        "[workspace]\nresolver = \"2\"\nmembers = [\"a2at\", \"a2aflow-model\", \"a2aflow-testkit\", \
         \"a2aflow-protocol\", \"a2aflow-extensions\", \"a2aflow-kernel\"]\n",
    )
    .unwrap();
}

/// Adds `line` to the `section` (`dependencies` or `dev-dependencies`) of a fixture crate.
fn add_dep(dir: &Path, krate: &str, section: &str, line: &str) {
    let manifest = dir.join(krate).join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let header = format!("\n[{section}]\n");
    assert!(text.contains(&header), "{krate} has no [{section}]");
    std::fs::write(
        &manifest,
        text.replace(&header, &format!("{header}{line}\n")),
    )
    .unwrap();
}

fn check_fixture(kernel_deps: &str, kernel_dev_deps: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path(), kernel_deps, kernel_dev_deps);
    layers::check_manifest(&dir.path().join("Cargo.toml")).expect("metadata of fixture")
}

#[test]
fn the_workspace_root_is_found_from_the_current_directory_at_run_time() {
    // A copy of the repository (here: a fixture workspace) is found from inside it, from any
    // depth, and is not the tree xtask was compiled in.
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path(), "", "");
    let expected = dir.path().canonicalize().unwrap();
    for inside in [
        dir.path().to_path_buf(),
        dir.path().join("a2aflow-kernel/src"),
    ] {
        let root = crate::workspace_root_from(&inside).expect("fixture root");
        assert_eq!(
            root.canonicalize().unwrap(),
            expected,
            "from {}",
            inside.display()
        );
    }
    let compiled_in = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    assert_ne!(expected, compiled_in.canonicalize().unwrap());
}

#[test]
fn outside_any_workspace_the_root_is_an_error_not_a_guess() {
    let dir = tempfile::tempdir().unwrap();
    let e = crate::workspace_root_from(dir.path()).unwrap_err();
    assert!(e.contains("cargo locate-project"), "{e}");
}

#[test]
fn clean_fixture_passes() {
    assert_eq!(check_fixture("", ""), Vec::<String>::new());
}

#[test]
fn kernel_reaching_a2at_directly_is_rejected_with_its_path() {
    let problems = check_fixture("a2at = { path = \"../a2at\" }", "");
    assert!(
        problems
            .iter()
            .any(|p| p.contains("forbidden dependency: a2aflow-kernel -> a2at ")),
        "{problems:#?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("a2at boundary: a2aflow-kernel -> a2at")),
        "{problems:#?}"
    );
}

#[test]
fn kernel_reaching_a2at_through_an_intermediate_crate_is_rejected_with_its_path() {
    let problems = check_fixture(
        "a2aflow-extensions = { path = \"../a2aflow-extensions\" }",
        "",
    );
    assert!(
        problems
            .iter()
            .any(|p| p
                .contains("forbidden dependency: a2aflow-kernel -> a2aflow-extensions -> a2at ")),
        "{problems:#?}"
    );
    assert!(
        problems.iter().any(|p| p
            .contains("layer violation: a2aflow-kernel (layer 1) -> a2aflow-extensions (layer 4)")),
        "{problems:#?}"
    );
}

#[test]
fn kernel_reaching_a2at_as_a_dev_dependency_is_rejected() {
    let problems = check_fixture("", "a2at = { path = \"../a2at\" }");
    assert!(
        problems
            .iter()
            .any(|p| p.contains("forbidden dependency: a2aflow-kernel -> a2at ")),
        "{problems:#?}"
    );
}

#[test]
fn model_reaching_a_network_crate_is_rejected() {
    // The model is isolated too: give it a2at.
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path(), "", "");
    let model = dir.path().join("a2aflow-model/Cargo.toml");
    let text = std::fs::read_to_string(&model).unwrap();
    std::fs::write(
        &model,
        text.replace(
            "[dependencies]\n",
            "[dependencies]\na2at = { path = \"../a2at\" }\n",
        ),
    )
    .unwrap();
    let problems = layers::check_manifest(&dir.path().join("Cargo.toml")).unwrap();
    assert!(
        problems
            .iter()
            .any(|p| p.contains("forbidden dependency: a2aflow-model -> a2at ")),
        "{problems:#?}"
    );
}

#[test]
fn unknown_workspace_crate_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path(), "", "");
    let d = dir.path().join("stray");
    std::fs::create_dir_all(d.join("src")).unwrap();
    std::fs::write(d.join("src/lib.rs"), "").unwrap();
    std::fs::write(
        d.join("Cargo.toml"),
        "[package]\nname = \"stray\"\nversion = \"0.0.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    let ws = dir.path().join("Cargo.toml");
    let text = std::fs::read_to_string(&ws).unwrap();
    std::fs::write(
        &ws,
        text.replace("\"a2aflow-kernel\"]", "\"a2aflow-kernel\", \"stray\"]"),
    )
    .unwrap();
    let problems = layers::check_manifest(&ws).unwrap();
    assert!(
        problems
            .iter()
            .any(|p| p.contains("`stray` is not in the layer table")),
        "{problems:#?}"
    );
}

#[test]
fn protocol_reaching_a2at_directly_is_rejected_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path(), "", "");
    add_dep(
        dir.path(),
        "a2aflow-protocol",
        "dependencies",
        "a2at = { path = \"../a2at\" }",
    );
    let problems = layers::check_manifest(&dir.path().join("Cargo.toml")).unwrap();
    assert!(
        problems.iter().any(|p| p.contains(
            "forbidden dependency: a2aflow-protocol -> a2at (a2aflow-protocol must never reach \
             the scheduling kernel or A2A-T)"
        )),
        "{problems:#?}"
    );
}

#[test]
fn protocol_reaching_the_kernel_as_a_dev_dependency_is_rejected() {
    // The kernel is a lower layer, so only the wire rule can catch this edge.
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path(), "", "");
    add_dep(
        dir.path(),
        "a2aflow-protocol",
        "dev-dependencies",
        "a2aflow-kernel = { path = \"../a2aflow-kernel\" }",
    );
    let problems = layers::check_manifest(&dir.path().join("Cargo.toml")).unwrap();
    assert_eq!(
        problems,
        vec![
            "forbidden dependency: a2aflow-protocol -> a2aflow-kernel (a2aflow-protocol must \
             never reach the scheduling kernel or A2A-T)"
                .to_owned()
        ]
    );
}

#[test]
fn protocol_reaching_the_kernel_through_an_intermediate_crate_is_rejected_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path(), "", "");
    add_dep(
        dir.path(),
        "a2aflow-testkit",
        "dependencies",
        "a2aflow-kernel = { path = \"../a2aflow-kernel\" }",
    );
    add_dep(
        dir.path(),
        "a2aflow-protocol",
        "dev-dependencies",
        "a2aflow-testkit = { path = \"../a2aflow-testkit\" }",
    );
    let problems = layers::check_manifest(&dir.path().join("Cargo.toml")).unwrap();
    assert!(
        problems.iter().any(|p| p.contains(
            "forbidden dependency: a2aflow-protocol -> a2aflow-testkit -> a2aflow-kernel "
        )),
        "{problems:#?}"
    );
}

#[test]
fn services_reaching_a2at_as_a_dev_dependency_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path(), "", "");
    let d = dir.path().join("a2aflow-services");
    std::fs::create_dir_all(d.join("src")).unwrap();
    std::fs::write(d.join("src/lib.rs"), "").unwrap();
    std::fs::write(
        d.join("Cargo.toml"),
        "[package]\nname = \"a2aflow-services\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n\
         [dependencies]\na2aflow-protocol = { path = \"../a2aflow-protocol\" }\n\n\
         [dev-dependencies]\na2aflow-extensions = { path = \"../a2aflow-extensions\" }\n",
    )
    .unwrap();
    let ws = dir.path().join("Cargo.toml");
    let text = std::fs::read_to_string(&ws).unwrap();
    std::fs::write(
        &ws,
        text.replace(
            "\"a2aflow-kernel\"]",
            "\"a2aflow-kernel\", \"a2aflow-services\"]",
        ),
    )
    .unwrap();
    let problems = layers::check_manifest(&ws).unwrap();
    assert!(
        problems.iter().any(|p| p.contains(
            "forbidden dependency: a2aflow-services -> a2aflow-extensions -> a2at (a2aflow-services \
             must never reach the scheduling kernel or A2A-T)"
        )),
        "{problems:#?}"
    );
}

/// Adds a run store crate (`a2aflow-store-sqlite` on the kernel and the model) to a fixture.
fn add_store_crate(dir: &Path) {
    let d = dir.join("a2aflow-store-sqlite");
    std::fs::create_dir_all(d.join("src")).unwrap();
    std::fs::write(d.join("src/lib.rs"), "").unwrap();
    std::fs::write(
        d.join("Cargo.toml"),
        "[package]\nname = \"a2aflow-store-sqlite\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n\
         [dependencies]\na2aflow-kernel = { path = \"../a2aflow-kernel\" }\n\
         a2aflow-model = { path = \"../a2aflow-model\" }\n\n[dev-dependencies]\n",
    )
    .unwrap();
    let ws = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&ws).unwrap();
    std::fs::write(
        &ws,
        text.replace(
            "\"a2aflow-kernel\"]",
            "\"a2aflow-kernel\", \"a2aflow-store-sqlite\"]",
        ),
    )
    .unwrap();
}

#[test]
fn a_store_on_the_kernel_and_the_model_passes() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path(), "", "");
    add_store_crate(dir.path());
    let problems = layers::check_manifest(&dir.path().join("Cargo.toml")).unwrap();
    assert_eq!(problems, Vec::<String>::new());
}

#[test]
fn a_store_reaching_the_wire_as_a_dev_dependency_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path(), "", "");
    add_store_crate(dir.path());
    add_dep(
        dir.path(),
        "a2aflow-store-sqlite",
        "dev-dependencies",
        "a2aflow-protocol = { path = \"../a2aflow-protocol\" }",
    );
    let problems = layers::check_manifest(&dir.path().join("Cargo.toml")).unwrap();
    assert!(
        problems.iter().any(|p| p.contains(
            "forbidden dependency: a2aflow-store-sqlite -> a2aflow-protocol (a2aflow-store-sqlite \
             must never reach A2A-T, the wire, the engine or a network crate)"
        )),
        "{problems:#?}"
    );
}

#[test]
fn a_store_reaching_a2at_through_the_kernel_is_rejected_with_its_path() {
    // The kernel is a lower layer, so only the store's own isolation rule names this path.
    let problems = {
        let dir = tempfile::tempdir().unwrap();
        fixture(dir.path(), "a2at = { path = \"../a2at\" }", "");
        add_store_crate(dir.path());
        layers::check_manifest(&dir.path().join("Cargo.toml")).unwrap()
    };
    assert!(
        problems.iter().any(|p| p.contains(
            "forbidden dependency: a2aflow-store-sqlite -> a2aflow-kernel -> a2at \
             (a2aflow-store-sqlite must never reach"
        )),
        "{problems:#?}"
    );
}

#[test]
fn the_store_list_is_the_kernel_list_plus_the_wire_crates() {
    assert_eq!(
        layers::STORE_FORBIDDEN.len(),
        layers::FORBIDDEN.len() + layers::WIRE_CRATES.len()
    );
    for name in layers::FORBIDDEN.iter().chain(layers::WIRE_CRATES) {
        assert!(layers::STORE_FORBIDDEN.contains(name), "{name}");
    }
}

#[test]
fn the_postgres_store_list_is_the_store_list_less_the_rustls_crates() {
    let rustls = ["rustls", "tokio-rustls", "rustls-webpki", "webpki-roots"];
    let expected: Vec<&str> = layers::STORE_FORBIDDEN
        .iter()
        .copied()
        .filter(|n| !rustls.contains(n))
        .collect();
    assert_eq!(layers::PG_STORE_FORBIDDEN, expected.as_slice());
}
