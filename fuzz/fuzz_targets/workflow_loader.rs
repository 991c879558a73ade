//! Arbitrary text through `a2aflow_model::load_workflow_str` (strict and lenient), then
//! `a2aflow_model::validate` and `Loaded::locate` on every document that loads.
//!
//! Checks: no panic; strict success implies lenient success with the same workflow; a lenient
//! load without unknown-key warnings loads strictly too; every reported position is 1-based and
//! inside the text; every error converts to a `Failure` with a `workflow.*` code; a loaded
//! workflow, serialised back to JSON, loads again to the same workflow.
#![no_main]

use a2aflow_model::{ErrorCode, LoadOptions, Problem, load_workflow_str, validate};
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
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let strict = load_workflow_str(text, LoadOptions::STRICT);
    let lenient = load_workflow_str(text, LoadOptions::LENIENT);

    for r in [&strict, &lenient] {
        match r {
            Ok(loaded) => check_positions(text, &loaded.warnings),
            Err(errors) => {
                assert!(!errors.problems.is_empty(), "an error without problems");
                check_positions(text, &errors.problems);
                check_positions(text, &errors.warnings);
                assert!(errors.to_failure().code.starts_with("workflow."));
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
        loaded.locate(&mut errors);
        check_positions(text, &errors.problems);
        assert!(errors.to_failure().code.starts_with("workflow."));
    }

    let again = serde_json::to_string(&loaded.workflow).expect("a Workflow always serialises");
    let reloaded = load_workflow_str(&again, LoadOptions::LENIENT)
        .unwrap_or_else(|e| panic!("serialised workflow does not load: {e}\n{again}"));
    assert_eq!(
        reloaded.workflow, loaded.workflow,
        "serialise/load round trip changed the workflow"
    );
});
