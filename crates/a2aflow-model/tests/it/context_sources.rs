//! `contextFrom` sources are checked against the graph: every step of a long chain may name the
//! root, and a step that reaches a source only through a step verified earlier is accepted,
//! while one beside such a path is still rejected.

use a2aflow_model::{ContextFrom, Edge, ErrorCode, Step, Subtask, Workflow, validate};

fn step(name: &str, next: &[&str], context: &[&str]) -> Step {
    Step {
        name: name.into(),
        subtasks: vec![Subtask {
            agent: "a".into(),
            ..Default::default()
        }],
        next: next
            .iter()
            .map(|t| Edge {
                step: (*t).into(),
                condition: "".into(),
            })
            .collect(),
        context_from: if context.is_empty() {
            ContextFrom::Predecessors
        } else {
            ContextFrom::Steps(context.iter().map(|c| (*c).to_owned()).collect())
        },
        ..Default::default()
    }
}

#[test]
fn every_step_of_a_long_chain_may_name_the_root() {
    let n = 10_000;
    let names: Vec<String> = (0..n).map(|i| format!("s{i}")).collect();
    let steps = (0..n)
        .map(|i| {
            let next: Vec<&str> = names.get(i + 1).map(String::as_str).into_iter().collect();
            let context: &[&str] = if i == 0 { &[] } else { &["s0"] };
            step(&names[i], &next, context)
        })
        .collect();
    let workflow = Workflow {
        steps,
        ..Default::default()
    };
    assert!(validate(&workflow).is_ok());
}

#[test]
fn a_source_found_upstream_of_one_branch_is_not_upstream_of_its_sibling() {
    // root -> a -> b, root -> c; d joins b and c. `a` is upstream of b (and so of d), not of c.
    let workflow = Workflow {
        steps: vec![
            step("root", &["a", "c"], &[]),
            step("a", &["b"], &[]),
            step("b", &["d"], &["a"]),
            step("c", &["d"], &["a"]),
            step("d", &[], &["a", "root"]),
        ],
        ..Default::default()
    };
    let errors = validate(&workflow).unwrap_err();
    assert_eq!(errors.codes(), [ErrorCode::WorkflowContextNotUpstream]);
    let problems: Vec<_> = errors.problems.iter().map(|p| p.path.clone()).collect();
    assert_eq!(problems, ["/steps/3/contextFrom/0"]);
}
