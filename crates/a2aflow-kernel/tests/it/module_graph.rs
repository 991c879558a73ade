//! The kernel's modules form a DAG: no module reaches, directly or through others, a module
//! that reaches it back. A node is a top-level module of `src/` (a directory module and every
//! file under it are one node); an edge is a `crate::<module>` path in its code (comments do not
//! count). `lib.rs`, which declares and re-exports every module, is not a node.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, recursively.
fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level modules and the files each is made of.
fn modules() -> BTreeMap<String, Vec<PathBuf>> {
    let mut modules = BTreeMap::new();
    for entry in std::fs::read_dir(src()).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let mut files = Vec::new();
        if path.is_dir() {
            files_under(&path, &mut files);
        } else if stem != "lib" && path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        } else {
            continue;
        }
        modules.entry(stem).or_insert_with(Vec::new).extend(files);
    }
    modules
}

/// The modules named by `crate::<name>` in `text`, outside comments.
fn mentions(text: &str, names: &BTreeSet<String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        for (at, _) in code.match_indices("crate::") {
            let rest = &code[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if names.contains(&name) {
                found.insert(name);
            }
        }
    }
    found
}

fn graph() -> Graph {
    let modules = modules();
    let names: BTreeSet<String> = modules.keys().cloned().collect();
    let mut graph = Graph::new();
    for (module, files) in &modules {
        let edges = graph.entry(module.clone()).or_default();
        for file in files {
            let text = std::fs::read_to_string(file).unwrap();
            edges.extend(mentions(&text, &names).into_iter().filter(|m| m != module));
        }
    }
    graph
}

/// A cycle of `graph` (its modules in order, the first repeated at the end), if it has one.
fn cycle(graph: &Graph) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        graph: &Graph,
        node: &str,
        marks: &mut BTreeMap<String, Mark>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match marks.get(node) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let from = path.iter().position(|n| n == node).unwrap_or(0);
                let mut found = path[from..].to_vec();
                found.push(node.to_owned());
                return Some(found);
            }
            None => {}
        }
        marks.insert(node.to_owned(), Mark::Open);
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(found) = visit(graph, next, marks, path) {
                return Some(found);
            }
        }
        path.pop();
        marks.insert(node.to_owned(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    graph
        .keys()
        .find_map(|node| visit(graph, node, &mut marks, &mut Vec::new()))
}

#[test]
fn the_kernel_modules_import_each_other_without_a_cycle() {
    let graph = graph();
    assert!(
        graph.contains_key("executor") && graph.contains_key("runner"),
        "the scan found the kernel's modules: {graph:?}"
    );
    if let Some(found) = cycle(&graph) {
        panic!(
            "the kernel's modules import each other in a cycle: {}\nthe graph: {graph:#?}",
            found.join(" -> ")
        );
    }
}

#[test]
fn the_cycle_check_finds_a_cycle_and_accepts_a_dag() {
    let edges = |pairs: &[(&str, &str)]| {
        let mut g = Graph::new();
        for (a, b) in pairs {
            g.entry((*a).to_owned())
                .or_default()
                .insert((*b).to_owned());
            g.entry((*b).to_owned()).or_default();
        }
        g
    };
    let found = cycle(&edges(&[("a", "b"), ("b", "c"), ("c", "a")])).unwrap();
    assert_eq!(found, ["a", "b", "c", "a"]);
    assert_eq!(cycle(&edges(&[("a", "b"), ("a", "c"), ("b", "c")])), None);
    let names = ["events", "task"].map(String::from).into();
    assert_eq!(
        mentions(
            "use crate::events::Hub; // crate::task\n/// [`crate::task`]\ncrate::ghost",
            &names
        ),
        ["events".to_owned()].into()
    );
}
