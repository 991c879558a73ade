//! `load_workflow_str` loads a document without problems in one streaming pass and any other by
//! the full path; both must give what the full loader gives on the parsed value
//! (`load_workflow_value`): the same workflow, root, problems and warnings (text loading adds
//! duplicate-key warnings and positions, which the value cannot have).

use a2aflow_model::{ErrorCode, LoadOptions, Problem, load_workflow_str, load_workflow_value};
use std::path::PathBuf;

fn corpus() -> Vec<(String, String)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut out = Vec::new();
    for dir in ["loads", "load_errors", "validation_errors"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        for f in files {
            let name = format!("{dir}/{}", f.file_name().unwrap().to_string_lossy());
            out.push((name, std::fs::read_to_string(&f).unwrap()));
        }
    }
    out
}

/// Documents on the edges of the streaming pass: wrappers, aliases, repeats, escapes, limits.
const EDGE_CASES: &[&str] = &[
    r#"{"data":{"id":"w","steps":[{"name":"a","subtasks":[{"agent":"x"}]}]},"code":0,"msg":{"k":1}}"#,
    r#"{"data":{"id":"w","steps":[{"name":"a"}]},"steps":[{"name":"b"}]}"#,
    r#"{"steps":[{"name":"b"}],"data":{"id":"w","steps":[{"name":"a"}]}}"#,
    r#"{"data":"not an object","steps":[]}"#,
    r#"{"data":[1,2]}"#,
    r#"{"data":{"data":{"steps":[]},"steps":[{"name":"a"}]}}"#,
    r#"{"steps":null,"data":{"steps":[{"name":"a"}]}}"#,
    r#"{"id":"w","steps":[{"name":"a","type":"SelfLoop","step_type":"SelfLoop"}]}"#,
    r#"{"id":"w","steps":[{"name":"a","type":"SelfLoop","step_type":"AllSuccess"}]}"#,
    r#"{"id":"w","callable_by":["p"],"callableBy":["p"],"steps":[{"name":"a"}]}"#,
    r#"{"id":"w","steps":[{"name":"a","next":[{"step":"b","step":"c"}]},{"name":"b"},{"name":"c"}]}"#,
    r#"{"id":"w","id":"v","steps":[]}"#,
    r#"{"id":"w","st\u0065ps":[{"name":"a"}]}"#,
    r#"{"id":"w","steps":[{"name":"a\u200b"}]}"#,
    r#"{"id":"w","steps":[{"name":"a","extra":1}]}"#,
    r#"{"id":"w","steps":[{"name":"a","layer":1.0,"timeout":2.5,"subtasks":[{"agent":"x","retry":{"attempts":3,"backoff":{"initial":1,"max":2}},"timeout":1}]}]}"#,
    r#"{"id":"w","steps":[{"name":"a","layer":1.5}]}"#,
    r#"{"id":"w","steps":[{"name":"a","context_from":"*"},{"name":"b","contextFrom":["a"]}]}"#,
    r#"{"id":"w","steps":[1,{"name":"a"}]}"#,
    r#"{"id":"w","steps":{"name":"a"}}"#,
    r#"{"id":"w","steps":[{"name":"a"},{"name":"b"},{"name":"c"}]}"#,
    r#"[{"name":"a"}]"#,
    r#"{"id":"w","steps":[{"name":"a"}]} trailing"#,
    r#"{"id":"w","steps":[{"name":"a"}]"#,
    r#"{"id":"w","description":"\"}{\"","steps":[{"name":"a\"b"}]}"#,
    r#"{}"#,
    r#"{"id":"w","steps":[{"name":"a","next":[{"step":"b","when":"x"}]},{"name":"b"}]}"#,
    r#"{"id":"w","steps":[{"name":"a","next":[{"step":7}]},{"name":"b"}]}"#,
    r#"{"id":"w","steps":[{"name":"a","next":[{"step":"b","condition":null}]},{"name":"b"}]}"#,
    r#"{"id":"w","steps":[{"name":"a","next":[{"step":"b\u200b"}]},{"name":"b"}]}"#,
    r#"{"id":"w","steps":[{"name":"a","next":null},{"name":"b","next":"a"}]}"#,
    r#"{"id":"w","steps":[{"name":"a","next":[{}, {"condition":"c"}]}]}"#,
];

fn strip_positions(problems: &[Problem]) -> Vec<Problem> {
    problems
        .iter()
        .filter(|p| p.code != ErrorCode::WorkflowDuplicateKey)
        .map(|p| {
            let mut p = p.clone();
            p.position = None;
            p
        })
        .collect()
}

fn has_duplicate(problems: &[Problem]) -> bool {
    problems
        .iter()
        .any(|p| p.code == ErrorCode::WorkflowDuplicateKey)
}

/// Compares the text loader with the value loader on `text`.
fn same_as_value_loader(name: &str, text: &str, options: LoadOptions) {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
        let errors = load_workflow_str(text, options).expect_err(name);
        assert_eq!(errors.problems.len(), 1, "{name}");
        assert_eq!(
            errors.problems[0].code,
            ErrorCode::WorkflowInvalidDocument,
            "{name}"
        );
        return;
    };
    let by_text = load_workflow_str(text, options);
    let by_value = load_workflow_value(&value, options);
    match (by_text, by_value) {
        (Ok(t), Ok(v)) => {
            assert_eq!(t.workflow, v.workflow, "{name}");
            assert_eq!(t.root_pointer(), v.root_pointer(), "{name}");
            assert_eq!(strip_positions(&t.warnings), v.warnings, "{name}");
            if !has_duplicate(&t.warnings) {
                assert!(t.warnings.iter().all(|w| w.position.is_some()), "{name}");
            }
        }
        (Err(t), Err(v)) => {
            assert_eq!(strip_positions(&t.problems), v.problems, "{name}");
            assert_eq!(strip_positions(&t.warnings), v.warnings, "{name}");
            assert!(t.problems.iter().all(|p| p.position.is_some()), "{name}");
        }
        (t, v) => panic!("{name}: text loader {t:?}, value loader {v:?}"),
    }
}

#[test]
fn text_and_value_loaders_agree_on_the_corpus_and_the_edge_cases() {
    let options = [
        LoadOptions::LENIENT,
        LoadOptions::STRICT,
        LoadOptions::LENIENT.with_max_steps(2),
    ];
    let mut documents = corpus();
    documents.extend(
        EDGE_CASES
            .iter()
            .enumerate()
            .map(|(i, t)| (format!("edge case {i}"), (*t).to_owned())),
    );
    for (name, text) in &documents {
        for o in options {
            same_as_value_loader(name, text, o);
        }
    }
}

#[test]
fn repeated_and_escaped_keys_still_give_their_warnings_at_their_place() {
    let loaded = load_workflow_str(
        "{\"id\":\"w\",\n \"steps\":[{\"name\":\"a\",\"name\":\"b\"}]}",
        LoadOptions::LENIENT,
    )
    .unwrap();
    assert_eq!(loaded.warnings.len(), 1);
    let w = &loaded.warnings[0];
    assert_eq!(w.code, ErrorCode::WorkflowDuplicateKey);
    assert_eq!(w.path, "/steps/0/name");
    assert_eq!(w.position.map(|p| (p.line, p.column)), Some((2, 30)));
    assert_eq!(loaded.workflow.steps[0].name, "b");
    let escaped = load_workflow_str(
        r#"{"id":"w","i\u0064":"v","steps":[]}"#,
        LoadOptions::LENIENT,
    )
    .unwrap();
    assert_eq!(escaped.warnings.len(), 1);
    assert_eq!(escaped.warnings[0].code, ErrorCode::WorkflowDuplicateKey);
}

#[test]
fn validation_problems_of_a_clean_document_are_located_in_its_text() {
    let text = "{\"id\":\"w\",\"steps\":[\n  {\"name\":\"a\",\"subtasks\":[{\"agent\":\"x\"}],\"next\":[{\"step\":\"nowhere\"}]}\n]}";
    let loaded = load_workflow_str(text, LoadOptions::STRICT).unwrap();
    assert!(loaded.warnings.is_empty());
    let mut errors = a2aflow_model::validate(&loaded.workflow).unwrap_err();
    loaded.locate(Some(text), &mut errors);
    let p = errors
        .problems
        .iter()
        .find(|p| p.path == "/steps/0/next/0/step")
        .unwrap_or_else(|| panic!("{errors:?}"));
    assert_eq!(p.position.map(|p| (p.line, p.column)), Some((2, 58)));
}
