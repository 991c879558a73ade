//! `docs/error-codes.md` is generated from `ErrorCode::ALL` and must not drift.
//!
//! Regenerate with `A2AFLOW_BLESS=1 cargo test -p a2aflow-model --test it error_codes_doc`.

use a2aflow_model::ErrorCode;
use a2aflow_model::error_code::error_codes_markdown;
use std::path::PathBuf;

fn doc_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/error-codes.md")
}

#[test]
fn error_codes_doc_matches_the_registry() {
    let expected = error_codes_markdown();
    let path = doc_path();
    if std::env::var_os("A2AFLOW_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &expected).expect("write docs/error-codes.md");
        return;
    }
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        actual == expected,
        "docs/error-codes.md is out of date with ErrorCode::ALL.\n\
         Regenerate it with: A2AFLOW_BLESS=1 cargo test -p a2aflow-model --test it error_codes_doc"
    );
}

#[test]
fn the_generated_doc_lists_every_code_once_with_its_description() {
    let doc = error_codes_markdown();
    for &code in ErrorCode::ALL {
        let row = format!("| `{}` | {} |", code.as_str(), code.description().trim());
        assert_eq!(doc.matches(&row).count(), 1, "{row}");
    }
    assert!(doc.contains("\n## `workflow.*`\n"));
    assert!(doc.contains("\n## `a2a.*`\n"));
}
