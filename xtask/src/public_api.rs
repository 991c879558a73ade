//! `cargo xtask public-api` (a step of `ci`): the facade's public API, read from rustdoc's JSON
//! output (a nightly rustdoc feature; the toolchain is installed with rustup when missing).
//!
//! - **Reachable from the root.** Every public item the facade itself defines is reached by
//!   walking its modules and re-exports from the crate root, and carries a doc comment; every
//!   item at the root is named in the root page's docs.
//! - **No dependency's types by accident.** Every type, trait and re-export that the facade's own
//!   items name comes from a crate in [`ALLOWED`] (our layers, the standard library, and the
//!   dependencies whose types are the API on purpose).
//!
//! What it does not catch: the public APIs of the layer crates the facade re-exports whole
//! (`a2aflow::kernel`, `a2aflow::model`, …) are theirs, not walked here; types that appear only
//! inside macro expansions or `impl Trait` bounds of the layers; and a dependency on the list
//! used in a new place (the list is per crate, not per item).

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The crates whose items the facade's public API may name. Our own crates (`a2aflow*`,
/// `a2at`) and the standard library are always allowed.
pub const ALLOWED: &[(&str, &str)] = &[
    (
        "a2a",
        "a2a-lf, the A2A 1.0 wire types (TaskState in ExecutionView), re-exported as model::a2a",
    ),
    (
        "serde_core",
        "serde's Serialize/Deserialize on the run views and StoreLocation",
    ),
    (
        "tokio_util",
        "CancellationToken: the shutdown signal Worker::run takes (the kernel's RunOptions::cancel is one too)",
    ),
    (
        "opentelemetry_sdk",
        "feature otel: the SdkTracerProvider the host keeps and shuts down",
    ),
    (
        "tracing_opentelemetry",
        "feature otel: OtelLayer is its OpenTelemetryLayer",
    ),
    (
        "tracing_subscriber",
        "feature otel: OtelLayer is a tracing-subscriber layer (Registry)",
    ),
    (
        "tracing_core",
        "feature otel: the subscriber trait of that layer",
    ),
];

/// The crate checked.
const FACADE: &str = "a2aflow";

/// The nightly toolchain rustdoc's JSON output is read with.
const NIGHTLY: &str = "nightly";

fn always_allowed(krate: &str) -> bool {
    krate == FACADE.replace('-', "_")
        || krate.starts_with("a2aflow_")
        || krate == "a2at"
        || matches!(krate, "std" | "core" | "alloc")
}

/// Builds the facade's rustdoc JSON (all features) and checks it.
pub fn run(root: &Path) -> Result<(), String> {
    if let Err(e) = crate::package::ensure_toolchain(root, NIGHTLY) {
        println!(
            "public-api: SKIPPED: rustdoc JSON needs a nightly toolchain, which is not installed \
             and could not be installed ({e})"
        );
        return Ok(());
    }
    let plus = format!("+{NIGHTLY}");
    crate::ci::sh(
        root,
        "cargo",
        &[
            &plus,
            "rustdoc",
            "-p",
            FACADE,
            "--lib",
            "--all-features",
            "--",
            "-Z",
            "unstable-options",
            "--output-format",
            "json",
        ],
        &[crate::ci::BUILD_ENV],
    )?;
    check_file(
        &root
            .join("target")
            .join("doc")
            .join(format!("{FACADE}.json")),
    )
}

/// Checks the rustdoc JSON file `file`.
pub fn check_file(file: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("public-api: cannot read {}: {e}", file.display()))?;
    let doc: Value = serde_json::from_str(&text)
        .map_err(|e| format!("public-api: {} is not JSON: {e}", file.display()))?;
    let problems = check(&doc, ALLOWED);
    if problems.is_empty() {
        println!("public-api: ok ({} allowed external crates)", ALLOWED.len());
        Ok(())
    } else {
        for p in &problems {
            eprintln!("public-api: {p}");
        }
        Err(format!("public-api: {} problem(s)", problems.len()))
    }
}

/// Every problem of the rustdoc JSON document `doc` against the allow-list `allowed` (empty when
/// the API passes).
pub fn check(doc: &Value, allowed: &[(&str, &str)]) -> Vec<String> {
    let index = doc["index"].as_object().cloned().unwrap_or_default();
    let paths = doc["paths"].as_object().cloned().unwrap_or_default();
    let crates = doc["external_crates"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let crate_of = |id: &str| -> Option<String> {
        let crate_id = paths.get(id)?["crate_id"].as_u64()?;
        if crate_id == 0 {
            return Some(FACADE.replace('-', "_"));
        }
        crates.get(&crate_id.to_string())?["name"]
            .as_str()
            .map(str::to_owned)
    };
    let local: BTreeMap<&String, &Value> = index
        .iter()
        .filter(|(_, item)| item["crate_id"].as_u64() == Some(0))
        .collect();
    let mut problems = Vec::new();
    let mut used = BTreeSet::new();
    let root_id = id_string(&doc["root"]);
    let reached = reachable(&index, &root_id);
    for (id, item) in &local {
        if skipped_impl(item) {
            continue;
        }
        let name = describe(item, id);
        if is_public_item(item) && !reached.contains(id.as_str()) {
            problems.push(format!(
                "{name} is public but not reachable from the crate root: re-export it or make it pub(crate)"
            ));
        }
        if needs_docs(item) && item["docs"].as_str().is_none_or(|d| d.trim().is_empty()) {
            problems.push(format!("{name} has no doc comment"));
        }
        let mut named = BTreeSet::new();
        referenced_ids(&item["inner"], &mut named);
        for target in named {
            let krate = crate_of(&target);
            used.extend(krate.clone());
            match krate {
                Some(krate)
                    if !always_allowed(&krate) && !allowed.iter().any(|(c, _)| *c == krate) =>
                {
                    problems.push(format!(
                        "{name} names `{}` from crate `{krate}`, which is not in the public-API \
                         allow-list (xtask/src/public_api.rs ALLOWED): keep the type private or \
                         add the crate with the reason it is part of the API",
                        paths[&target]["path"]
                            .as_array()
                            .map(|p| p
                                .iter()
                                .filter_map(Value::as_str)
                                .collect::<Vec<_>>()
                                .join("::"))
                            .unwrap_or_default()
                    ));
                }
                _ => {}
            }
        }
    }
    problems.extend(
        allowed
            .iter()
            .filter(|(krate, _)| !used.contains(*krate))
            .map(|(krate, _)| {
                format!(
                    "crate `{krate}` is on the public-API allow-list but no public item names it \
                     any more: remove it from ALLOWED"
                )
            }),
    );
    problems.extend(root_items_undocumented(&index, &root_id));
    problems.sort();
    problems.dedup();
    problems
}

fn id_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Trait implementations rustdoc adds on its own (auto traits, blanket impls of dependencies):
/// not the facade's choice, not its API.
fn skipped_impl(item: &Value) -> bool {
    let Some(imp) = item["inner"].get("impl") else {
        return false;
    };
    imp["is_synthetic"].as_bool() == Some(true) || !imp["blanket_impl"].is_null()
}

fn is_public_item(item: &Value) -> bool {
    item["visibility"] == "public" && item["inner"].get("impl").is_none()
}

/// Items a reader looks up (not impls, not the fields and variants rustdoc lists separately).
fn needs_docs(item: &Value) -> bool {
    is_public_item(item)
        && item["inner"].get("use").is_none()
        && item["inner"].get("struct_field").is_none()
        && item["inner"].get("variant").is_none()
}

fn describe(item: &Value, id: &str) -> String {
    let kind = item["inner"]
        .as_object()
        .and_then(|o| o.keys().next().cloned())
        .unwrap_or_default();
    let name = item["name"].as_str().unwrap_or("<unnamed>");
    let span = item["span"]["filename"]
        .as_str()
        .map_or(String::new(), |f| {
            format!(" ({f}:{})", item["span"]["begin"][0])
        });
    format!("{kind} `{name}`{span} [id {id}]")
}

/// The ids every object of `v` names as `{"id": …, "path": …}` (a type or trait path) or as a
/// re-export's target (`{"source": …, "id": …}`).
fn referenced_ids(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(o) => {
            if let Some(id) = o.get("id").filter(|id| !id.is_null())
                && (o.contains_key("path") || o.contains_key("source"))
            {
                out.insert(id_string(id));
            }
            o.values().for_each(|child| referenced_ids(child, out));
        }
        Value::Array(a) => a.iter().for_each(|child| referenced_ids(child, out)),
        _ => {}
    }
}

/// The local items reached from the root through module items, re-exports and the associated
/// items, fields and variants of what is reached.
fn reachable(index: &serde_json::Map<String, Value>, root: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![root.to_owned()];
    while let Some(id) = todo.pop() {
        if !seen.insert(id.clone()) {
            continue;
        }
        let Some(item) = index.get(&id) else { continue };
        let mut next = BTreeSet::new();
        children(&item["inner"], &mut next);
        todo.extend(next.into_iter().filter(|n| !seen.contains(n)));
    }
    seen
}

/// The ids an item lists as its members: `items`, `fields`, `variants`, `impls`, a re-export's
/// target.
fn children(v: &Value, out: &mut BTreeSet<String>) {
    let Value::Object(o) = v else { return };
    for (key, child) in o {
        match (key.as_str(), child) {
            ("items" | "fields" | "variants" | "impls", Value::Array(ids)) => {
                out.extend(ids.iter().filter(|i| !i.is_null()).map(id_string));
            }
            ("id", id) if o.contains_key("source") && !id.is_null() => {
                out.insert(id_string(id));
            }
            (_, Value::Object(_)) => children(child, out),
            _ => {}
        }
    }
}

/// Every item directly at the crate root is named in the root module's docs.
fn root_items_undocumented(index: &serde_json::Map<String, Value>, root: &str) -> Vec<String> {
    let Some(module) = index.get(root) else {
        return vec!["the rustdoc JSON has no root module".into()];
    };
    let docs = module["docs"].as_str().unwrap_or_default();
    module["inner"]["module"]["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|id| index.get(&id_string(id)))
        .filter(|item| item["visibility"] == "public")
        .filter_map(|item| {
            let name = item["name"]
                .as_str()
                .or_else(|| item["inner"]["use"]["name"].as_str())?;
            (!docs.contains(&format!("`{name}`"))).then(|| {
                format!(
                    "`{name}` is exported at the crate root but the root docs (the `//!` of \
                     crates/{FACADE}/src/lib.rs) never name it: add it to the crate's map"
                )
            })
        })
        .collect()
}

#[cfg(test)]
#[path = "public_api_tests.rs"]
mod tests;
