//! The layer table and the check that enforces it over the full resolved dependency graph.
//!
//! The table is the single place that says which crate sits in which layer. Two rules:
//! 1. a workspace crate depends (normal, build or dev edge) only on workspace crates of a strictly
//!    lower layer;
//! 2. each isolated crate never reaches the crates forbidden to it, even transitively, even through
//!    a dev-dependency ([`ISOLATED`]): the model and the kernel never reach A2A-T or any network /
//!    TLS crate ([`FORBIDDEN`]); the wire crate (`a2aflow-protocol`) never reaches the scheduling
//!    kernel or A2A-T ([`WIRE_FORBIDDEN`]), so the engine client (`a2aflow-engine`) is the only
//!    join between them; nor do the registry clients (`a2aflow-services`).
//!
//! A third rule mirrors `deny.toml`: only the listed wrapper crates may depend on `a2at` directly.

use cargo_metadata::{CargoOpt, Metadata, MetadataCommand, PackageId};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::path::Path;

/// Every workspace crate and its layer. Lower numbers are lower layers.
pub const LAYERS: &[(&str, u8)] = &[
    ("a2aflow-model", 0),
    ("a2at", 0),
    ("a2aflow-kernel", 1),
    ("a2aflow-testkit", 1),
    ("a2aflow-protocol", 2),
    // The embedded run store: the kernel's RunStore over SQLite, beside the wire, never on it.
    ("a2aflow-store-sqlite", 2),
    // The shared run store: the kernel's RunStore over Postgres (tokio-postgres, rustls), beside
    // the wire, never on it.
    ("a2aflow-store-postgres", 2),
    ("a2aflow-engine", 3),
    ("a2aflow-services", 3),
    // Layer 4: its isolation test drives the engine client as a dev-dependency.
    ("a2aflow-extensions", 4),
    ("a2aflow", 5),
    // Serving surfaces on the facade: workflows as A2A agents, and the run page.
    ("a2aflow-server", 6),
    ("a2aflow-ui", 6),
    ("a2aflow-cli", 7),
    ("a2aflow-tests", 8),
    ("xtask", 9),
];

/// Each isolated crate, the crates it must never reach, and what they are (for the message).
pub const ISOLATED: &[(&str, &[&str], &str)] = &[
    ("a2aflow-model", FORBIDDEN, "A2A-T or a network crate"),
    ("a2aflow-kernel", FORBIDDEN, "A2A-T or a network crate"),
    (
        "a2aflow-protocol",
        WIRE_FORBIDDEN,
        "the scheduling kernel or A2A-T",
    ),
    (
        "a2aflow-services",
        WIRE_FORBIDDEN,
        "the scheduling kernel or A2A-T",
    ),
    (
        "a2aflow-store-sqlite",
        STORE_FORBIDDEN,
        "A2A-T, the wire, the engine or a network crate",
    ),
    (
        "a2aflow-store-postgres",
        PG_STORE_FORBIDDEN,
        "A2A-T, the wire, the engine, an HTTP stack or OpenSSL",
    ),
];

/// What the Postgres store must never reach: [`STORE_FORBIDDEN`] less the rustls crates its
/// database connections use (TLS through rustls is allowed to it, nothing else of the network).
pub const PG_STORE_FORBIDDEN: &[&str] =
    &concat::<{ NETWORK_BUT_RUSTLS.len() + WIRE_CRATES.len() }>(NETWORK_BUT_RUSTLS, WIRE_CRATES);

/// [`FORBIDDEN`] without rustls, tokio-rustls, rustls-webpki and webpki-roots.
pub const NETWORK_BUT_RUSTLS: &[&str] = &[
    "a2at",
    "hyper",
    "hyper-util",
    "hyper-rustls",
    "h2",
    "h3",
    "http",
    "http-body",
    "native-tls",
    "openssl",
    "openssl-sys",
    "reqwest",
    "tonic",
    "axum",
    "ureq",
    "isahc",
    "curl",
];

/// What a run store must never reach: everything the kernel must not ([`FORBIDDEN`]), plus the
/// wire crate and every crate built on it ([`WIRE_CRATES`]).
pub const STORE_FORBIDDEN: &[&str] =
    &concat::<{ FORBIDDEN.len() + WIRE_CRATES.len() }>(FORBIDDEN, WIRE_CRATES);

/// The wire crate and the crates that stand on it.
pub const WIRE_CRATES: &[&str] = &[
    "a2aflow-protocol",
    "a2aflow-engine",
    "a2aflow-services",
    "a2aflow-extensions",
    "a2aflow",
    "a2aflow-server",
    "a2aflow-ui",
    "a2aflow-cli",
];

/// `a` then `b` as one array of `N` (= both lengths) names, at compile time.
const fn concat<const N: usize>(a: &[&'static str], b: &[&'static str]) -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < a.len() {
        out[i] = a[i];
        i += 1;
    }
    while i < N {
        out[i] = b[i - a.len()];
        i += 1;
    }
    out
}

/// What the wire crate (and the service clients on it) must never reach: the kernel, A2A-T, and
/// the engine client that joins them.
pub const WIRE_FORBIDDEN: &[&str] = &["a2aflow-kernel", "a2at", "a2aflow-engine"];

/// A2A-T and the network / TLS stacks. Runtime crates that tokio pulls in for other workspace
/// members (mio, socket2) are not listed: feature unification makes them appear under tokio for
/// every crate, and the kernel's own tokio features (`sync`, `time`, `rt`, `macros`) are checked
/// by review of its manifest.
pub const FORBIDDEN: &[&str] = &[
    "a2at",
    "hyper",
    "hyper-util",
    "hyper-rustls",
    "h2",
    "h3",
    "http",
    "http-body",
    "rustls",
    "tokio-rustls",
    "rustls-webpki",
    "webpki-roots",
    "native-tls",
    "openssl",
    "openssl-sys",
    "reqwest",
    "tonic",
    "axum",
    "ureq",
    "isahc",
    "curl",
];

/// The only crates allowed to depend on `a2at` directly (same list as `deny.toml`'s wrappers).
pub const A2AT_WRAPPERS: &[&str] = &["a2aflow-engine", "a2aflow-extensions", "a2aflow"];

/// Runs `cargo metadata --all-features` on the manifest and checks every rule.
/// Returns the violations, one human-readable line each (empty when the graph is clean).
pub fn check_manifest(manifest: &Path) -> Result<Vec<String>, String> {
    let metadata = MetadataCommand::new()
        .manifest_path(manifest)
        .features(CargoOpt::AllFeatures)
        .exec()
        .map_err(|e| format!("cargo metadata failed for {}: {e}", manifest.display()))?;
    Ok(check_metadata(&metadata))
}

/// Checks the layer rules on already-loaded metadata.
pub fn check_metadata(metadata: &Metadata) -> Vec<String> {
    let layer: HashMap<&str, u8> = LAYERS.iter().copied().collect();
    let names: HashMap<&PackageId, &str> = metadata
        .packages
        .iter()
        .map(|p| (&p.id, p.name.as_str()))
        .collect();
    let Some(resolve) = &metadata.resolve else {
        return vec!["cargo metadata returned no resolve graph".to_owned()];
    };
    // Every edge, whatever its kind: the resolve graph lists dev edges only for workspace members.
    let edges: HashMap<&PackageId, Vec<&PackageId>> = resolve
        .nodes
        .iter()
        .map(|n| (&n.id, n.deps.iter().map(|d| &d.pkg).collect()))
        .collect();
    let name_of = |id: &PackageId| names.get(id).copied().unwrap_or("?");
    let mut problems = Vec::new();

    for member in &metadata.workspace_members {
        let from = name_of(member);
        let Some(&from_layer) = layer.get(from) else {
            problems.push(format!(
                "workspace crate `{from}` is not in the layer table (xtask/src/layers.rs): add it"
            ));
            continue;
        };
        for dep in edges.get(member).into_iter().flatten() {
            let to = name_of(dep);
            if let Some(&to_layer) = layer.get(to)
                && to_layer >= from_layer
            {
                problems.push(format!(
                    "layer violation: {from} (layer {from_layer}) -> {to} (layer {to_layer}): \
                     a crate may depend only on lower layers"
                ));
            }
            if to == "a2at" && !A2AT_WRAPPERS.contains(&from) {
                problems.push(format!(
                    "a2at boundary: {from} -> a2at: only {A2AT_WRAPPERS:?} may depend on a2at directly"
                ));
            }
        }
        for &(_, forbidden, what) in ISOLATED.iter().filter(|(name, _, _)| *name == from) {
            for path in forbidden_paths(member, forbidden, &edges, &name_of) {
                problems.push(format!(
                    "forbidden dependency: {} ({from} must never reach {what})",
                    path.join(" -> ")
                ));
            }
        }
    }
    problems
}

/// Breadth-first walk from `start`; for each `forbidden` crate reached, the shortest path to it.
fn forbidden_paths<'a>(
    start: &'a PackageId,
    forbidden: &[&str],
    edges: &HashMap<&'a PackageId, Vec<&'a PackageId>>,
    name_of: &dyn Fn(&PackageId) -> &'a str,
) -> Vec<Vec<&'a str>> {
    let mut parent: HashMap<&PackageId, &PackageId> = HashMap::new();
    let mut seen: BTreeSet<&PackageId> = BTreeSet::from([start]);
    let mut queue = VecDeque::from([start]);
    let mut found = Vec::new();
    while let Some(node) = queue.pop_front() {
        if node != start && forbidden.contains(&name_of(node)) {
            let mut path = vec![name_of(node)];
            let mut cur = node;
            while let Some(&p) = parent.get(cur) {
                path.push(name_of(p));
                cur = p;
            }
            path.reverse();
            found.push(path);
            continue; // one path per forbidden crate is enough; do not walk below it
        }
        for &next in edges.get(node).into_iter().flatten() {
            if seen.insert(next) {
                parent.insert(next, node);
                queue.push_back(next);
            }
        }
    }
    found
}
