//! The facade's feature list in its crate docs is the `##` comments of its Cargo.toml, word for
//! word, with the defaults marked: a feature added, removed or redescribed in one place only fails.

/// `(name, is_default, doc)` for every feature that has a `##` comment in the manifest.
fn manifest_features(manifest: &str) -> Vec<(String, bool, String)> {
    let table = manifest
        .split("\n[features]\n")
        .nth(1)
        .and_then(|rest| rest.split("\n[").next())
        .expect("Cargo.toml has a [features] table");
    let defaults: Vec<String> = table
        .lines()
        .find_map(|l| l.strip_prefix("default = "))
        .map(|list| {
            list.trim_matches(['[', ']'])
                .split(',')
                .map(|f| f.trim().trim_matches('"').to_owned())
                .collect()
        })
        .unwrap_or_default();
    let mut out = Vec::new();
    let mut doc: Vec<&str> = Vec::new();
    for line in table.lines() {
        if let Some(text) = line.strip_prefix("##") {
            doc.push(text.trim());
        } else if let Some((name, _)) = line.split_once(" = ")
            && !doc.is_empty()
        {
            let name = name.trim().to_owned();
            out.push((name.clone(), defaults.contains(&name), doc.join(" ")));
            doc.clear();
        }
    }
    out
}

/// `(name, is_default, doc)` for every entry of the `## Features` list of the crate docs.
fn documented_features(lib_rs: &str) -> Vec<(String, bool, String)> {
    let section: Vec<&str> = lib_rs
        .lines()
        .map_while(|l| l.strip_prefix("//!"))
        .map(str::trim)
        .skip_while(|l| *l != "## Features")
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .collect();
    let mut entries: Vec<String> = Vec::new();
    for line in section {
        if let Some(entry) = line.strip_prefix("- ") {
            entries.push(entry.to_owned());
        } else if let Some(last) = entries.last_mut()
            && !line.is_empty()
        {
            last.push(' ');
            last.push_str(line);
        }
    }
    entries
        .iter()
        .map(|e| {
            let (head, doc) = e.split_once(" — ").expect("`- `name` — doc`");
            let name = head.split('`').nth(1).expect("a `name`").to_owned();
            (name, head.ends_with("(default)"), doc.to_owned())
        })
        .collect()
}

#[test]
fn the_crate_docs_list_every_feature_of_the_manifest() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let manifest = std::fs::read_to_string(format!("{dir}/Cargo.toml")).unwrap();
    let lib_rs = std::fs::read_to_string(format!("{dir}/src/lib.rs")).unwrap();
    let in_manifest = manifest_features(&manifest);
    assert!(
        in_manifest.len() >= 4,
        "the manifest's features lost their `##` comments: {in_manifest:?}"
    );
    assert_eq!(
        documented_features(&lib_rs),
        in_manifest,
        "the `## Features` list of crates/a2aflow/src/lib.rs and the `##` comments of its \
         Cargo.toml differ: copy the manifest's text (defaults marked `(default)`)"
    );
}
