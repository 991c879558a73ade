//! The precomputed, index-based form of a workflow the scheduler walks, and the graph checks the
//! kernel needs before it schedules anything (roots, cycles, targets, context sources).

use a2aflow_model::{ContextFrom, ErrorCode, Failure, RESERVED_STEP_NAMES, Workflow};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet, VecDeque};

/// One outgoing edge, resolved to an index (`None` = a terminal route such as `end`).
#[derive(Debug)]
pub(crate) struct OutEdge {
    pub(crate) target: Option<usize>,
    pub(crate) conditional: bool,
}

/// One step, resolved.
#[derive(Debug)]
pub(crate) struct StepPlan {
    /// Direct predecessors, in step declaration order.
    #[allow(dead_code)]
    pub(crate) preds: Vec<usize>,
    /// Outgoing edges, in declaration order.
    pub(crate) out: Vec<OutEdge>,
    /// Number of incoming edges from steps.
    pub(crate) in_degree: u32,
    /// Candidate steps for the context window, in window order (filtered to those that ran).
    pub(crate) context: Vec<usize>,
    /// True when any outgoing edge needs `on_route`.
    pub(crate) has_conditional: bool,
}

/// The whole workflow, resolved.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) steps: Vec<StepPlan>,
    pub(crate) roots: Vec<usize>,
}

/// Every problem the kernel itself must rule out before scheduling, each with its code.
pub(crate) fn check(wf: &Workflow) -> Vec<Failure> {
    let mut problems = Vec::new();
    if wf.steps.is_empty() {
        problems.push(Failure::new(ErrorCode::WorkflowNoSteps, "workflow has no steps"));
        return problems;
    }
    let mut index: HashMap<&str, usize> = HashMap::with_capacity(wf.steps.len());
    for (i, s) in wf.steps.iter().enumerate() {
        if s.name.trim().is_empty() {
            problems.push(
                Failure::new(ErrorCode::WorkflowBlankStepName, format!("step #{i} has a blank name"))
                    .with_detail("index", i),
            );
            continue;
        }
        if RESERVED_STEP_NAMES.contains(&s.name.as_str()) {
            problems.push(
                Failure::new(
                    ErrorCode::WorkflowReservedStepName,
                    format!("step name '{}' is reserved for a terminal route", s.name),
                )
                .with_detail("steps", json!([s.name])),
            );
        }
        if index.insert(s.name.as_str(), i).is_some() {
            problems.push(
                Failure::new(ErrorCode::WorkflowDuplicateStep, format!("duplicate step '{}'", s.name))
                    .with_detail("steps", json!([s.name])),
            );
        }
    }
    for s in &wf.steps {
        let mut seen = HashSet::new();
        for e in &s.next {
            let t = e.step.trim();
            if t.is_empty() {
                problems.push(
                    Failure::new(
                        ErrorCode::WorkflowBlankTarget,
                        format!("step '{}' has a blank next target", s.name),
                    )
                    .with_detail("steps", json!([s.name])),
                );
                continue;
            }
            if !seen.insert(e.step.as_str()) {
                problems.push(
                    Failure::new(
                        ErrorCode::WorkflowDuplicateTarget,
                        format!("step '{}' has duplicate outgoing target '{}'", s.name, e.step),
                    )
                    .with_detail("steps", json!([s.name, e.step])),
                );
            }
            if !index.contains_key(e.step.as_str()) && !RESERVED_STEP_NAMES.contains(&e.step.as_str())
            {
                problems.push(
                    Failure::new(
                        ErrorCode::WorkflowUnknownTarget,
                        format!("step '{}' references unknown step '{}'", s.name, e.step),
                    )
                    .with_detail("steps", json!([s.name, e.step])),
                );
            }
        }
        if let ContextFrom::Steps(names) = &s.context_from {
            for c in names {
                if !index.contains_key(c.as_str()) {
                    problems.push(
                        Failure::new(
                            ErrorCode::WorkflowUnknownContextStep,
                            format!("step '{}' references unknown context step '{c}'", s.name),
                        )
                        .with_detail("steps", json!([s.name, c])),
                    );
                }
            }
        }
    }
    if !problems.is_empty() {
        return problems;
    }
    let preds = predecessors(wf, &index);
    // Cycles (Kahn): whatever cannot be ordered lies on or behind a cycle.
    let mut indeg: Vec<usize> = preds.iter().map(Vec::len).collect();
    let mut queue: VecDeque<usize> = (0..wf.steps.len()).filter(|&i| indeg[i] == 0).collect();
    if queue.is_empty() {
        problems.push(Failure::new(
            ErrorCode::WorkflowNoRoot,
            "workflow has no root step (every step has an incoming edge)",
        ));
    }
    let mut ordered = 0;
    while let Some(i) = queue.pop_front() {
        ordered += 1;
        for e in &wf.steps[i].next {
            if let Some(&t) = index.get(e.step.as_str()) {
                indeg[t] -= 1;
                if indeg[t] == 0 {
                    queue.push_back(t);
                }
            }
        }
    }
    if ordered < wf.steps.len() {
        let mut names: Vec<&str> = (0..wf.steps.len())
            .filter(|&i| indeg[i] > 0)
            .map(|i| wf.steps[i].name.as_str())
            .collect();
        names.sort_unstable();
        problems.push(
            Failure::new(
                ErrorCode::WorkflowCycle,
                format!("workflow contains a cycle through steps [{}]", names.join(", ")),
            )
            .with_detail("steps", json!(names)),
        );
        return problems;
    }
    for (i, s) in wf.steps.iter().enumerate() {
        if let ContextFrom::Steps(names) = &s.context_from {
            let anc: HashSet<usize> = ancestors(&preds, i).into_iter().collect();
            for c in names {
                if index.get(c.as_str()).is_some_and(|ci| !anc.contains(ci)) {
                    problems.push(
                        Failure::new(
                            ErrorCode::WorkflowContextNotUpstream,
                            format!(
                                "step '{}' context source '{c}' is not an upstream dependency",
                                s.name
                            ),
                        )
                        .with_detail("steps", json!([s.name, c])),
                    );
                }
            }
        }
    }
    problems
}

/// One failure summarising validation problems (the first problem's code, all messages).
pub(crate) fn summarise(problems: Vec<Failure>) -> Failure {
    let code = problems
        .first()
        .map(|p| p.code.clone())
        .unwrap_or_else(|| ErrorCode::WorkflowInvalidDocument.as_str().to_owned());
    let message = format!(
        "invalid workflow: {}",
        problems.iter().map(|p| p.message.as_str()).collect::<Vec<_>>().join("; ")
    );
    let list: Vec<Value> = problems
        .iter()
        .map(|p| json!({"code": p.code, "message": p.message, "details": p.details}))
        .collect();
    Failure {
        code,
        message,
        details: serde_json::Map::new(),
    }
    .with_detail("problems", Value::Array(list))
}

fn predecessors(wf: &Workflow, index: &HashMap<&str, usize>) -> Vec<Vec<usize>> {
    let mut preds = vec![Vec::new(); wf.steps.len()];
    for (i, s) in wf.steps.iter().enumerate() {
        for e in &s.next {
            if let Some(&t) = index.get(e.step.as_str()) {
                preds[t].push(i); // sources visited in declaration order: stays sorted
            }
        }
    }
    preds
}

/// All ancestors of `i`, breadth-first, nearest first.
fn ancestors(preds: &[Vec<usize>], i: usize) -> Vec<usize> {
    let mut seen = HashSet::new();
    let mut order = Vec::new();
    let mut queue: VecDeque<usize> = preds[i].iter().copied().collect();
    while let Some(p) = queue.pop_front() {
        if p != i && seen.insert(p) {
            order.push(p);
            queue.extend(preds[p].iter().copied());
        }
    }
    order
}

/// Resolves a workflow that passed [`check`] (or the model's validator) into indices.
pub(crate) fn plan(wf: &Workflow) -> Plan {
    let index: HashMap<&str, usize> = wf
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.as_str(), i))
        .collect();
    let preds = predecessors(wf, &index);
    let mut steps = Vec::with_capacity(wf.steps.len());
    for (i, s) in wf.steps.iter().enumerate() {
        let out: Vec<OutEdge> = s
            .next
            .iter()
            .map(|e| OutEdge {
                target: index.get(e.step.as_str()).copied(),
                conditional: !e.is_unconditional(),
            })
            .collect();
        let context = match &s.context_from {
            ContextFrom::Predecessors => preds[i].clone(),
            ContextFrom::AllAncestors => ancestors(&preds, i),
            ContextFrom::Steps(names) => names
                .iter()
                .filter_map(|n| index.get(n.as_str()).copied())
                .collect(),
        };
        steps.push(StepPlan {
            has_conditional: out.iter().any(|e| e.conditional),
            in_degree: u32::try_from(preds[i].len()).unwrap_or(u32::MAX),
            preds: preds[i].clone(),
            out,
            context,
        });
    }
    let roots = (0..steps.len()).filter(|&i| steps[i].in_degree == 0).collect();
    Plan { steps, roots }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2aflow_model::{Edge, Step};

    fn step(name: &str, next: &[&str]) -> Step {
        Step {
            name: name.into(),
            next: next
                .iter()
                .map(|t| Edge {
                    step: (*t).into(),
                    condition: String::new(),
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn ancestors_are_nearest_first_and_preds_in_declaration_order() {
        let wf = Workflow {
            steps: vec![step("s1", &["s2"]), step("s2", &["s3"]), step("s3", &[])],
            ..Default::default()
        };
        assert!(check(&wf).is_empty());
        let index: HashMap<&str, usize> = [("s1", 0), ("s2", 1), ("s3", 2)].into();
        let preds = predecessors(&wf, &index);
        assert_eq!(ancestors(&preds, 2), vec![1, 0]);
        let p = plan(&wf);
        assert_eq!(p.roots, vec![0]);
        assert_eq!(p.steps[2].in_degree, 1);
    }

    #[test]
    fn cycle_and_unknown_target_are_reported_with_codes() {
        let wf = Workflow {
            steps: vec![step("a", &["b"]), step("b", &["a"])],
            ..Default::default()
        };
        let codes: Vec<String> = check(&wf).into_iter().map(|f| f.code).collect();
        assert_eq!(codes, vec!["workflow.no_root", "workflow.cycle"]);
        let wf = Workflow {
            steps: vec![step("a", &["ghost", "end"])],
            ..Default::default()
        };
        let codes: Vec<String> = check(&wf).into_iter().map(|f| f.code).collect();
        assert_eq!(codes, vec!["workflow.unknown_target"]);
    }
}
