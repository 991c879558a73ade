//! Arbitrary bytes through `a2aflow_model::load_workflow_bytes` (strict and lenient), then
//! `a2aflow_model::validate` and `Loaded::locate` on every document that loads.
//!
//! Bytes that are not UTF-8 must give exactly one `workflow.invalid_encoding` problem with a
//! position inside the document; UTF-8 bytes must load exactly as `load_workflow_str` loads them.
//!
//! Checks: no panic; strict success implies lenient success with the same workflow; a lenient
//! load without unknown-key warnings loads strictly too; every reported position is 1-based and
//! inside the text; every error converts to a `Failure` with a `workflow.*` code; a loaded
//! workflow, serialised back to JSON, loads again to the same workflow.
#![no_main]

use a2aflow_model::{
    ErrorCode, LoadOptions, Problem, load_workflow_bytes, load_workflow_str, validate,
};
use libfuzzer_sys::fuzz_target;

fn check_positions(text: &str, problems: &[Problem]) {
    let lines = text.split('\n').count();
    for p in problems {
        if let Some(pos) = p.position {
            assert!(pos.line >= 1 && pos.column >= 1, "{pos:?} for {}", p.path);
            assert!(
                pos.line <= lines,
                "{pos:?} beyond {lines} lines for {}",
                p.path
            );
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let strict = load_workflow_bytes(data, LoadOptions::STRICT);
    let lenient = load_workflow_bytes(data, LoadOptions::LENIENT);
    let Ok(text) = std::str::from_utf8(data) else {
        let lossy = String::from_utf8_lossy(data);
        for r in [&strict, &lenient] {
            let errors = r.as_ref().expect_err("bytes that are not UTF-8 loaded");
            assert_eq!(errors.problems.len(), 1, "{errors}");
            assert_eq!(errors.problems[0].code, ErrorCode::WorkflowInvalidEncoding);
            assert!(errors.problems[0].position.is_some(), "{errors}");
            check_positions(&lossy, &errors.problems);
        }
        return;
    };
    assert_eq!(
        strict.as_ref().err(),
        load_workflow_str(text, LoadOptions::STRICT).as_ref().err(),
        "bytes and text loaded differently"
    );

    for r in [&strict, &lenient] {
        match r {
            Ok(loaded) => check_positions(text, &loaded.warnings),
            Err(errors) => {
                assert!(!errors.problems.is_empty(), "an error without problems");
                check_positions(text, &errors.problems);
                check_positions(text, &errors.warnings);
                assert!(errors.to_failure().code.as_str().starts_with("workflow."));
                let _ = errors.to_string();
            }
        }
    }

    if let Ok(s) = &strict {
        let l = lenient.as_ref().expect("strict loads but lenient does not");
        assert_eq!(
            s.workflow, l.workflow,
            "strict and lenient loaded different workflows"
        );
    }
    let Ok(loaded) = lenient else {
        return;
    };
    if !loaded
        .warnings
        .iter()
        .any(|w| w.code == ErrorCode::WorkflowUnknownKey)
    {
        assert!(
            strict.is_ok(),
            "no unknown keys but strict load failed: {:?}",
            strict.err()
        );
    }

    if let Err(mut errors) = validate(&loaded.workflow) {
        assert!(
            !errors.problems.is_empty(),
            "a validation error without problems"
        );
        loaded.locate(Some(text), &mut errors);
        check_positions(text, &errors.problems);
        assert!(errors.to_failure().code.as_str().starts_with("workflow."));
    }

    let again = serde_json::to_string(&loaded.workflow).expect("a Workflow always serialises");
    let reloaded = load_workflow_str(&again, LoadOptions::LENIENT)
        .unwrap_or_else(|e| panic!("serialised workflow does not load: {e}\n{again}"));
    assert_eq!(
        reloaded.workflow, loaded.workflow,
        "serialise/load round trip changed the workflow"
    );
});
