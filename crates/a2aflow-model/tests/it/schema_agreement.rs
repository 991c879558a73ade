//! The Rust loader (strict) and `schemas/workflow.schema.json` agree on every document of the
//! corpus in `tests/corpus/`:
//!
//! * `loads/` — both accept, and [`validate`] passes: valid workflows;
//! * `load_errors/` — both reject; the file name starts with the loader's expected code
//!   (`unknown_key.step.json` → `workflow.unknown_key`);
//! * `validation_errors/` — structurally valid, so both accept, but [`validate`] rejects with
//!   the code the file name starts with (`no_steps.json`, `empty_object_no_steps.json` →
//!   `workflow.no_steps`). These are the rules a schema cannot express (the split is documented
//!   in docs/guide/workflows.md).

use a2aflow_model::schema::check_workflow_schema;
use a2aflow_model::{ErrorCode, LoadOptions, load_workflow_str, validate};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn corpus(dir: &str) -> Vec<(String, String)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no documents in {}", root.display());
    files
        .iter()
        .map(|p| (stem(p), std::fs::read_to_string(p).unwrap()))
        .collect()
}

fn stem(p: &Path) -> String {
    p.file_stem().unwrap().to_string_lossy().into_owned()
}

/// (loader accepts, schema accepts) for one document text.
fn verdicts(text: &str) -> (bool, bool) {
    let value: Value = serde_json::from_str(text).expect("corpus documents are JSON");
    (
        load_workflow_str(text, LoadOptions::STRICT).is_ok(),
        check_workflow_schema(&value).is_ok(),
    )
}

#[test]
fn loader_and_schema_agree_on_every_corpus_document() {
    let mut checked = 0;
    let mut disagreements = Vec::new();
    for dir in ["loads", "load_errors", "validation_errors"] {
        for (name, text) in corpus(dir) {
            let (loader, schema) = verdicts(&text);
            let want = dir != "load_errors";
            if loader != schema || loader != want {
                disagreements.push(format!(
                    "{dir}/{name}: loader {}, schema {}, expected {}",
                    verdict(loader),
                    verdict(schema),
                    verdict(want)
                ));
            }
            checked += 1;
        }
    }
    println!("loader and schema compared on {checked} documents");
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}

fn verdict(accepted: bool) -> &'static str {
    if accepted { "accepts" } else { "rejects" }
}

#[test]
fn invalid_documents_fail_with_the_code_they_are_named_after() {
    for (name, text) in corpus("load_errors") {
        let code = format!("workflow.{}", name.split('.').next().unwrap());
        let errors = load_workflow_str(&text, LoadOptions::STRICT).unwrap_err();
        assert!(
            errors.problems.iter().any(|p| p.code.as_str() == code),
            "load_errors/{name}: expected {code}, got {errors}"
        );
        for p in &errors.problems {
            assert!(
                p.position.is_some(),
                "load_errors/{name}: {p} has no position"
            );
        }
    }
}

#[test]
fn validation_error_documents_load_but_fail_validation_with_their_code() {
    for (name, text) in corpus("validation_errors") {
        let code = code_named_by(&name)
            .unwrap_or_else(|| panic!("validation_errors/{name}: names no workflow code"));
        let loaded = load_workflow_str(&text, LoadOptions::STRICT).unwrap();
        let mut errors = validate(&loaded.workflow).unwrap_err();
        loaded.locate(Some(&text), &mut errors);
        assert!(
            errors.codes().contains(&code),
            "validation_errors/{name}: expected {code}, got {errors}"
        );
        for p in &errors.problems {
            assert!(
                p.position.is_some(),
                "validation_errors/{name}: {p} has no position"
            );
        }
    }
}

#[test]
fn documents_that_load_pass_validation() {
    for (name, text) in corpus("loads") {
        let loaded = load_workflow_str(&text, LoadOptions::STRICT).unwrap();
        assert_eq!(validate(&loaded.workflow), Ok(()), "loads/{name}");
    }
}

/// The workflow code a `validation_errors/` file name starts with: the longest prefix of its
/// words that is a code (`empty_object_no_steps` → `workflow.no_steps`).
fn code_named_by(name: &str) -> Option<ErrorCode> {
    let words: Vec<&str> = name.split('_').collect();
    (0..words.len())
        .find_map(|start| ErrorCode::parse(&format!("workflow.{}", words[start..].join("_"))))
}

/// A document of `steps` minimal SELF_LOOP steps.
fn steps_document(steps: usize) -> String {
    let step = r#"{"name":"s","stepType":"SelfLoop"}"#;
    format!("{{\"steps\":[{}]}}", vec![step; steps].join(","))
}

#[test]
fn loader_and_schema_agree_on_the_step_limit() {
    let limit = LoadOptions::DEFAULT_MAX_STEPS;
    assert_eq!(verdicts(&steps_document(limit)), (true, true));
    assert_eq!(verdicts(&steps_document(limit + 1)), (false, false));
    let errors = load_workflow_str(&steps_document(limit + 1), LoadOptions::STRICT).unwrap_err();
    assert_eq!(errors.problems[0].code, ErrorCode::WorkflowTooLarge);
}
