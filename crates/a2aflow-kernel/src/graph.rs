//! The precomputed, index-based form of a workflow the scheduler walks. Built only from a
//! workflow that passed [`a2aflow_model::validate()`] (unique names, resolvable edges, acyclic,
//! at least one root, context sources that are ancestors).

use a2aflow_model::{ContextFrom, Workflow};
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

/// Resolves a validated workflow into indices.
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
            out,
            context,
        });
    }
    let roots = (0..steps.len())
        .filter(|&i| steps[i].in_degree == 0)
        .collect();
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
        let index: HashMap<&str, usize> = [("s1", 0), ("s2", 1), ("s3", 2)].into();
        let preds = predecessors(&wf, &index);
        assert_eq!(ancestors(&preds, 2), vec![1, 0]);
        let p = plan(&wf);
        assert_eq!(p.roots, vec![0]);
        assert_eq!(p.steps[2].in_degree, 1);
    }
}
