//! Property tests: the loader never panics on arbitrary text or JSON and loads faithfully what
//! it is given; validation never panics, is deterministic, and accepts only DAGs with unique
//! names.

use a2aflow_model::{
    ContextFrom, Edge, LoadOptions, RESERVED_STEP_NAMES, SourceMap, Step, StepType, Subtask,
    Workflow, load_workflow_str, load_workflow_value, validate,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use std::collections::{HashMap, HashSet};

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|i| json!(i)),
        (-1e6f64..1e6).prop_map(|f| json!(f)),
        "[a-zA-Z_*/~ ]{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("AllSuccess"),
            Just("ANY_SUCCESS"),
            Just("self_loop"),
            Just("*"),
            Just("end")
        ]
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    let keys = prop_oneof![
        Just("steps"),
        Just("name"),
        Just("subtasks"),
        Just("tasks"),
        Just("next"),
        Just("step"),
        Just("condition"),
        Just("agent"),
        Just("workflow"),
        Just("step_type"),
        Just("stepType"),
        Just("type"),
        Just("context_from"),
        Just("contextFrom"),
        Just("layer"),
        Just("data"),
        Just("callableBy"),
        Just("id"),
        Just("x/y~z"),
    ];
    leaf.prop_recursive(5, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((keys.clone(), inner), 0..6).prop_map(|kv| {
                Value::Object(
                    kv.into_iter()
                        .map(|(k, v)| (k.to_owned(), v))
                        .collect::<Map<_, _>>(),
                )
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn loader_never_panics_on_arbitrary_text(text in "\\PC{0,200}") {
        let _ = load_workflow_str(&text, LoadOptions::default());
        let _ = load_workflow_str(&text, LoadOptions::STRICT);
        let _ = SourceMap::new(&text).locate("/steps/0/name");
    }

    #[test]
    fn loader_never_panics_on_json_like_text(text in "[\\[\\]{}\":,a-z0-9 \\\\\\n*.-]{0,120}") {
        let _ = load_workflow_str(&text, LoadOptions::default());
    }

    #[test]
    fn loader_never_panics_on_arbitrary_json_and_positions_every_problem(value in arb_json()) {
        let text = serde_json::to_string_pretty(&value).unwrap();
        let lenient = load_workflow_value(&value, LoadOptions::default());
        let strict = load_workflow_value(&value, LoadOptions::STRICT);
        // strict accepts a subset of what lenient accepts
        if strict.is_ok() {
            prop_assert!(lenient.is_ok());
        }
        match load_workflow_str(&text, LoadOptions::default()) {
            Ok(loaded) => {
                prop_assert_eq!(&loaded.workflow, &lenient.unwrap().workflow);
                for w in &loaded.warnings {
                    prop_assert!(w.position.is_some(), "{}", w);
                }
                // validation of whatever loaded never panics either
                let _ = validate(&loaded.workflow);
            }
            Err(errors) => {
                prop_assert!(lenient.is_err());
                for p in &errors.problems {
                    prop_assert!(p.position.is_some(), "{}", p);
                    prop_assert!(!p.message.is_empty());
                }
            }
        }
    }
}

/// Names drawn from a small pool so duplicates, blanks, reserved names and dangling targets
/// all occur.
fn arb_name() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (0u8..6).prop_map(|i| format!("s{i}")),
        1 => Just(String::new()),
        1 => Just(" ".to_owned()),
        1 => prop::sample::select(RESERVED_STEP_NAMES).prop_map(str::to_owned),
        1 => Just("ghost".to_owned()),
    ]
}

fn arb_step() -> impl Strategy<Value = Step> {
    (
        arb_name(),
        prop::collection::vec(
            (
                prop_oneof![Just(""), Just(" "), Just("agent")],
                prop::option::of(prop_oneof![Just(""), Just("child")]),
            ),
            0..3,
        ),
        prop::collection::vec((arb_name(), prop_oneof![Just(""), Just("ok?")]), 0..4),
        prop_oneof![
            Just(StepType::AllSuccess),
            Just(StepType::AnySuccess),
            Just(StepType::SelfLoop)
        ],
        prop_oneof![
            Just(ContextFrom::Predecessors),
            Just(ContextFrom::AllAncestors),
            prop::collection::vec(
                prop_oneof![4 => arb_name(), 1 => Just("*".to_owned())],
                0..3
            )
            .prop_map(ContextFrom::from_names),
        ],
        prop::option::of(-2i64..5),
    )
        .prop_map(
            |(name, subtasks, next, step_type, context_from, layer)| Step {
                name,
                subtasks: subtasks
                    .into_iter()
                    .map(|(agent, workflow)| Subtask {
                        agent: agent.to_owned(),
                        skill: "skill".to_owned(),
                        description: "do it".to_owned(),
                        workflow: workflow.map(str::to_owned),
                        retry: None,
                        timeout: None,
                    })
                    .collect(),
                next: next
                    .into_iter()
                    .map(|(step, condition)| Edge {
                        step: step.into(),
                        condition: condition.into(),
                    })
                    .collect(),
                step_type,
                context_from,
                layer,
                timeout: None,
            },
        )
}

fn arb_workflow() -> impl Strategy<Value = Workflow> {
    (
        prop::collection::vec(arb_step(), 0..8),
        prop::option::of(prop::collection::vec("[a-z]{1,4}", 0..3)),
    )
        .prop_map(|(steps, callable_by)| Workflow {
            id: "w".into(),
            name: "n".into(),
            description: String::new(),
            steps,
            callable_by,
        })
}

/// The PSOP document for a workflow, spelled the way the reference engines write it.
fn to_psop(w: &Workflow) -> Value {
    let steps: Vec<Value> = w
        .steps
        .iter()
        .map(|s| {
            let mut o = json!({
                "name": s.name,
                "subtasks": s.subtasks.iter().map(|t| {
                    let mut t2 = json!({"agent": t.agent, "skill": t.skill, "description": t.description});
                    if let Some(wf) = &t.workflow { t2["workflow"] = json!(wf); }
                    t2
                }).collect::<Vec<_>>(),
                "next": s.next.iter().map(|e| json!({"step": &*e.step, "condition": &*e.condition})).collect::<Vec<_>>(),
                "step_type": s.step_type.as_str(),
            });
            match &s.context_from {
                ContextFrom::Predecessors => {}
                ContextFrom::AllAncestors => o["context_from"] = json!("*"),
                ContextFrom::Steps(names) => o["context_from"] = json!(names),
            }
            if let Some(layer) = s.layer {
                o["layer"] = json!(layer);
            }
            o
        })
        .collect();
    let mut doc = json!({"id": w.id, "name": w.name, "description": w.description, "steps": steps});
    if let Some(c) = &w.callable_by {
        doc["callable_by"] = json!(c);
    }
    doc
}

/// True when the steps with valid names and their resolvable edges form a DAG.
fn is_dag(w: &Workflow) -> bool {
    let index: HashMap<&str, usize> = w
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.as_str(), i))
        .collect();
    let mut indegree = vec![0usize; w.steps.len()];
    for s in &w.steps {
        for e in &s.next {
            if let Some(&t) = index.get(&*e.step) {
                indegree[t] += 1;
            }
        }
    }
    let mut ready: Vec<usize> = (0..w.steps.len()).filter(|&i| indegree[i] == 0).collect();
    let mut seen = 0;
    while let Some(i) = ready.pop() {
        seen += 1;
        for e in &w.steps[i].next {
            if let Some(&t) = index.get(&*e.step) {
                indegree[t] -= 1;
                if indegree[t] == 0 {
                    ready.push(t);
                }
            }
        }
    }
    seen == w.steps.len()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn validate_is_deterministic_and_accepts_only_sound_dags(w in arb_workflow()) {
        let first = validate(&w);
        let second = validate(&w.clone());
        prop_assert_eq!(&first, &second);
        match first {
            Ok(()) => {
                let names: HashSet<&str> = w.steps.iter().map(|s| s.name.as_str()).collect();
                prop_assert_eq!(names.len(), w.steps.len(), "duplicate names passed");
                prop_assert!(!w.steps.is_empty());
                prop_assert!(is_dag(&w), "a cycle passed validation");
                for s in &w.steps {
                    prop_assert!(!s.name.trim().is_empty());
                    prop_assert!(!RESERVED_STEP_NAMES.contains(&s.name.as_str()));
                    for e in &s.next {
                        prop_assert!(names.contains(&*e.step) || RESERVED_STEP_NAMES.contains(&&*e.step));
                    }
                    prop_assert!(!s.context_from.is_wildcard_mixed());
                }
            }
            Err(errors) => {
                prop_assert!(!errors.problems.is_empty());
                let cycles = errors.problems.iter().filter(|p| p.code == a2aflow_model::ErrorCode::WorkflowCycle).count();
                prop_assert!(cycles <= 1, "more than one cycle reported");
                for p in &errors.problems {
                    prop_assert!(p.path.starts_with("/steps"), "{}", p);
                    prop_assert!(!p.message.is_empty());
                }
            }
        }
    }

    #[test]
    fn psop_documents_load_back_to_the_same_workflow(w in arb_workflow()) {
        let doc = to_psop(&w);
        let loaded = load_workflow_value(&doc, LoadOptions::STRICT).unwrap();
        prop_assert!(loaded.warnings.is_empty());
        prop_assert_eq!(&loaded.workflow, &w);
        let text = serde_json::to_string(&doc).unwrap();
        let from_text = load_workflow_str(&text, LoadOptions::STRICT).unwrap();
        prop_assert_eq!(&from_text.workflow, &w);
        // and the wrapped form loads the same
        let wrapped = load_workflow_value(&json!({"data": doc}), LoadOptions::STRICT).unwrap();
        prop_assert_eq!(&wrapped.workflow, &w);
    }
}

/// A well-formed DAG: unique names, edges only forward (plus terminal routes), agents named,
/// `contextFrom` naming only ancestors.
fn arb_dag() -> impl Strategy<Value = Workflow> {
    (1usize..10)
        .prop_flat_map(|n| {
            (
                Just(n),
                prop::collection::vec(prop::collection::vec(any::<prop::sample::Index>(), 0..3), n),
                prop::collection::vec(any::<bool>(), n),
            )
        })
        .prop_map(|(n, edges, terminal)| {
            let mut steps: Vec<Step> = (0..n)
                .map(|i| Step {
                    name: format!("s{i}"),
                    subtasks: vec![Subtask {
                        agent: format!("agent{i}"),
                        ..Subtask::default()
                    }],
                    ..Step::default()
                })
                .collect();
            for (i, picks) in edges.iter().enumerate() {
                let mut targets: Vec<usize> = picks
                    .iter()
                    .filter(|_| i + 1 < n)
                    .map(|p| i + 1 + p.index(n - i - 1))
                    .collect();
                targets.sort_unstable();
                targets.dedup();
                steps[i].next = targets
                    .into_iter()
                    .map(|t| Edge {
                        step: format!("s{t}").into(),
                        condition: "".into(),
                    })
                    .collect();
                if terminal[i] {
                    steps[i].next.push(Edge {
                        step: "end".into(),
                        condition: "done?".into(),
                    });
                }
            }
            // each step reads every direct predecessor by name (always ancestors)
            for j in 0..n {
                let preds: Vec<String> = (0..j)
                    .filter(|&i| steps[i].next.iter().any(|e| *e.step == *format!("s{j}")))
                    .map(|i| format!("s{i}"))
                    .collect();
                if !preds.is_empty() {
                    steps[j].context_from = ContextFrom::Steps(preds);
                }
            }
            Workflow {
                steps,
                ..Workflow::default()
            }
        })
}

proptest! {
    #[test]
    fn validate_accepts_every_well_formed_dag(w in arb_dag()) {
        prop_assert_eq!(validate(&w), Ok(()));
    }

    #[test]
    fn a_back_edge_in_a_well_formed_dag_is_reported_as_one_cycle(w in arb_dag(), pick in any::<prop::sample::Index>()) {
        // add an edge from the last step back to an earlier one that reaches it, or a self edge
        let mut w = w;
        let last = w.steps.len() - 1;
        let target = pick.index(w.steps.len());
        let reaches = |from: usize| -> bool {
            let mut stack = vec![from];
            let mut seen = HashSet::new();
            while let Some(i) = stack.pop() {
                if i == last { return true; }
                if seen.insert(i) {
                    for e in &w.steps[i].next {
                        if let Some(k) = e.step.strip_prefix('s').and_then(|x| x.parse::<usize>().ok()) {
                            stack.push(k);
                        }
                    }
                }
            }
            false
        };
        let target = if reaches(target) { target } else { last };
        w.steps[last].next.push(Edge { step: format!("s{target}").into(), condition: "".into() });
        let errors = validate(&w).unwrap_err();
        let cycles: Vec<_> = errors.problems.iter().filter(|p| p.code == a2aflow_model::ErrorCode::WorkflowCycle).collect();
        prop_assert_eq!(cycles.len(), 1);
        let target_name = format!("s{target}");
        prop_assert!(cycles[0].steps.contains(&target_name));
        let needle = format!("{target_name} -> ");
        prop_assert!(cycles[0].message.contains(&needle), "{}", cycles[0].message);
    }
}
