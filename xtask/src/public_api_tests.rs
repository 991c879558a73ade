//! The public-API check on small rustdoc JSON documents shaped like rustdoc's: each kind of
//! problem is found, and a clean API passes.

use super::check;
use serde_json::{Value, json};

/// The allow-list of these tests.
const LIST: &[(&str, &str)] = &[("serde_json", "JSON values")];

fn check_one(doc: &Value) -> Vec<String> {
    check(doc, LIST)
}

/// A facade whose root exports `run(x: T)`, `T` from crate `crate_name`, plus `extra` items.
fn facade(crate_name: &str, root_docs: &str, extra: Value) -> Value {
    let mut index = json!({
        "0": {"crate_id": 0, "name": "a2aflow", "visibility": "public", "docs": root_docs,
              "inner": {"module": {"items": [1]}}},
        "1": {"crate_id": 0, "name": "run", "visibility": "public", "docs": "Runs.",
              "inner": {"function": {"sig": {"inputs": [["x", {"resolved_path":
                  {"path": "T", "id": 50, "args": null}}]]}}}}
    });
    if let (Some(index), Value::Object(more)) = (index.as_object_mut(), extra) {
        index.extend(more);
    }
    json!({
        "root": 0,
        "index": index,
        "paths": {"50": {"crate_id": 3, "path": [crate_name, "T"], "kind": "struct"}},
        "external_crates": {"3": {"name": crate_name}}
    })
}

#[test]
fn a_clean_api_passes() {
    let doc = facade("serde_json", "The facade: [`run`].", json!({}));
    assert_eq!(check(&doc, LIST), Vec::<String>::new());
}

#[test]
fn a_type_of_a_crate_off_the_list_is_a_leak() {
    let doc = facade("hyper", "The facade: [`run`].", json!({}));
    let problems = check(&doc, &[]);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("`run`") && problems[0].contains("`hyper::T` from crate `hyper`"),
        "{}",
        problems[0]
    );
}

#[test]
fn an_unreachable_or_undocumented_public_item_is_named() {
    let orphan = json!({"2": {"crate_id": 0, "name": "orphan", "visibility": "public",
                              "docs": null, "inner": {"function": {}}}});
    let problems = check_one(&facade("serde_json", "The facade: [`run`].", orphan));
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems
            .iter()
            .any(|p| p.contains("`orphan`") && p.contains("not reachable"))
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("`orphan`") && p.contains("no doc comment"))
    );
}

#[test]
fn a_root_item_the_root_docs_never_name_is_named() {
    let problems = check_one(&facade("serde_json", "The facade.", json!({})));
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("`run` is exported at the crate root"),
        "{}",
        problems[0]
    );
}

#[test]
fn an_allow_list_entry_no_item_uses_is_stale() {
    let doc = facade("serde_json", "The facade: [`run`].", json!({}));
    let problems = check(&doc, &[("serde_json", "used"), ("tokio", "not used")]);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("`tokio` is on the public-API allow-list"),
        "{}",
        problems[0]
    );
}

#[test]
fn blanket_and_auto_trait_impls_are_not_the_facades_api() {
    let impls = json!({"3": {"crate_id": 0, "name": null, "visibility": "default", "docs": null,
        "inner": {"impl": {"is_synthetic": false, "blanket_impl": {"generic": "T"},
                           "trait": {"path": "Instrument", "id": 60, "args": null}}}}});
    let mut doc = facade("serde_json", "The facade: [`run`].", impls);
    doc["paths"]["60"] = json!({"crate_id": 4, "path": ["tracing_futures", "Instrument"]});
    doc["external_crates"]["4"] = json!({"name": "tracing_futures"});
    assert_eq!(check(&doc, LIST), Vec::<String>::new());
}

/// The facade's real API, when its rustdoc JSON has been built (`cargo xtask public-api` builds
/// it with nightly; without the file there is nothing to read, and CI runs that step).
#[test]
fn the_facades_rustdoc_json_passes_when_built() {
    let root = crate::workspace_root().expect("workspace root");
    let file = root.join("target/doc/a2aflow.json");
    if file.exists() {
        super::check_file(&file).unwrap();
    }
}
