//! The precomputed, index-based form of a workflow the scheduler walks. Built only from a
//! workflow that passed [`a2aflow_model::validate()`] (unique names, resolvable edges, acyclic,
//! at least one root, context sources that are ancestors).

use a2aflow_model::{ContextFrom, SharedStr, Step, Workflow};
use std::collections::{HashMap, VecDeque};

/// One outgoing edge, resolved to an index (`None` = a terminal route such as `end`).
#[derive(Debug)]
pub(crate) struct OutEdge {
    pub(crate) target: Option<usize>,
    pub(crate) conditional: bool,
}

/// Where a step's context window comes from (the `contextFrom` of its definition, resolved).
#[derive(Debug)]
pub(crate) enum Window {
    /// Its direct predecessors, in declaration order.
    Predecessors,
    /// Every ancestor, breadth-first, nearest first: walked when the step starts (see
    /// [`Plan::window`]), so planning stays linear however many ancestors a step has.
    Ancestors,
    /// The steps it names, in listed order.
    Listed(Vec<usize>),
}

/// One step, resolved.
#[derive(Debug)]
pub(crate) struct StepPlan {
    /// Outgoing edges, in declaration order.
    pub(crate) out: Vec<OutEdge>,
    /// Number of incoming edges from steps.
    pub(crate) in_degree: u32,
    /// Candidate steps for the context window (filtered to those that ran).
    pub(crate) window: Window,
    /// True when any outgoing edge needs `on_route`.
    pub(crate) has_conditional: bool,
    /// The step's name, shared by every request and view of its tasks.
    pub(crate) name: SharedStr,
    /// Its subtasks' names, shared the same way.
    pub(crate) subtasks: Vec<SubtaskNames>,
}

/// The names of one subtask that every request and view of it carries: made once per plan,
/// cloned (a reference count) per task.
#[derive(Debug)]
pub(crate) struct SubtaskNames {
    pub(crate) agent: SharedStr,
    pub(crate) skill: SharedStr,
    pub(crate) description: SharedStr,
    /// The task's input text: the description, when it is not blank.
    pub(crate) text: Option<SharedStr>,
}

impl SubtaskNames {
    /// The names of `step`'s subtasks; an agent or skill the plan met before (`seen`) is shared
    /// with it, not copied (a step's subtasks mostly go to a few agents). Descriptions, mostly
    /// distinct, are not looked up.
    fn of<'w>(step: &'w Step, seen: &mut HashMap<&'w str, SharedStr>) -> Vec<SubtaskNames> {
        let mut shared = |name: &'w str| {
            seen.entry(name)
                .or_insert_with(|| SharedStr::from(name))
                .clone()
        };
        step.subtasks
            .iter()
            .map(|sub| {
                let description = SharedStr::from(sub.description.as_str());
                SubtaskNames {
                    agent: shared(&sub.agent),
                    skill: shared(&sub.skill),
                    text: (!description.trim().is_empty()).then(|| description.clone()),
                    description,
                }
            })
            .collect()
    }
}

/// The whole workflow, resolved.
#[derive(Debug)]
pub(crate) struct Plan {
    /// The workflow's id, shared by every request of the run.
    pub(crate) workflow_id: SharedStr,
    pub(crate) steps: Vec<StepPlan>,
    pub(crate) roots: Vec<usize>,
    /// Each step's direct predecessors, in declaration order.
    pub(crate) preds: Vec<Vec<usize>>,
}

/// Reusable buffers of the breadth-first ancestor walk (one per run, allocated on first use).
#[derive(Debug, Default)]
pub(crate) struct Walk {
    /// The stamp of the walk that last saw each step.
    seen: Vec<u32>,
    stamp: u32,
    queue: VecDeque<usize>,
}

impl Plan {
    /// Calls `each` with every candidate step of `s`'s context window, in window order.
    pub(crate) fn window(&self, s: usize, walk: &mut Walk, mut each: impl FnMut(usize)) {
        match &self.steps[s].window {
            Window::Predecessors => self.preds[s].iter().for_each(|&p| each(p)),
            Window::Listed(steps) => steps.iter().for_each(|&p| each(p)),
            Window::Ancestors => ancestors(&self.preds, s, walk, each),
        }
    }
}

fn predecessors(wf: &Workflow, index: &HashMap<&str, usize>) -> Vec<Vec<usize>> {
    let mut preds = vec![Vec::new(); wf.steps.len()];
    for (i, s) in wf.steps.iter().enumerate() {
        for e in &s.next {
            if let Some(&t) = index.get(&*e.step) {
                preds[t].push(i); // sources visited in declaration order: stays sorted
            }
        }
    }
    preds
}

/// Calls `each` with every ancestor of `i`, breadth-first, nearest first.
fn ancestors(preds: &[Vec<usize>], i: usize, walk: &mut Walk, mut each: impl FnMut(usize)) {
    if walk.seen.len() < preds.len() {
        walk.seen = vec![0; preds.len()];
        walk.stamp = 0;
    }
    walk.stamp = walk.stamp.wrapping_add(1);
    if walk.stamp == 0 {
        // The stamps wrapped: forget every earlier walk.
        walk.seen.fill(0);
        walk.stamp = 1;
    }
    walk.queue.clear();
    walk.queue.extend(preds[i].iter().copied());
    while let Some(p) = walk.queue.pop_front() {
        if p != i && walk.seen[p] != walk.stamp {
            walk.seen[p] = walk.stamp;
            each(p);
            walk.queue.extend(preds[p].iter().copied());
        }
    }
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
    let mut names = HashMap::new();
    let mut steps = Vec::with_capacity(wf.steps.len());
    for (i, s) in wf.steps.iter().enumerate() {
        let out: Vec<OutEdge> = s
            .next
            .iter()
            .map(|e| OutEdge {
                target: index.get(&*e.step).copied(),
                conditional: !e.is_unconditional(),
            })
            .collect();
        let window = match &s.context_from {
            ContextFrom::Predecessors => Window::Predecessors,
            ContextFrom::AllAncestors => Window::Ancestors,
            ContextFrom::Steps(names) => Window::Listed(
                names
                    .iter()
                    .filter_map(|n| index.get(n.as_str()).copied())
                    .collect(),
            ),
        };
        steps.push(StepPlan {
            has_conditional: out.iter().any(|e| e.conditional),
            in_degree: u32::try_from(preds[i].len()).unwrap_or(u32::MAX),
            out,
            window,
            name: s.name.as_str().into(),
            subtasks: SubtaskNames::of(s, &mut names),
        });
    }
    let roots = (0..steps.len())
        .filter(|&i| steps[i].in_degree == 0)
        .collect();
    Plan {
        workflow_id: wf.id.as_str().into(),
        steps,
        roots,
        preds,
    }
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
                    condition: "".into(),
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
        let mut seen = Vec::new();
        ancestors(&preds, 2, &mut Walk::default(), |a| seen.push(a));
        assert_eq!(seen, vec![1, 0]);
        let p = plan(&wf);
        assert_eq!(p.roots, vec![0]);
        assert_eq!(p.steps[2].in_degree, 1);
    }

    fn windows(p: &Plan, s: usize, walk: &mut Walk) -> Vec<usize> {
        let mut seen = Vec::new();
        p.window(s, walk, |c| seen.push(c));
        seen
    }

    #[test]
    fn a_plan_holds_each_agent_and_skill_once_and_every_subtask_shares_it() {
        let sub = |agent: &str, description: &str| a2aflow_model::Subtask {
            agent: agent.into(),
            skill: "sk".into(),
            description: description.into(),
            ..Default::default()
        };
        let mut s1 = step("s1", &["s2"]);
        s1.subtasks = vec![sub("a", "one"), sub("b", " "), sub("a", "two")];
        let mut s2 = step("s2", &[]);
        s2.subtasks = vec![sub("b", "three")];
        let wf = Workflow {
            id: "w".into(),
            steps: vec![s1, s2],
            ..Default::default()
        };
        let p = plan(&wf);
        let (first, second) = (&p.steps[0].subtasks, &p.steps[1].subtasks);
        assert_eq!(p.workflow_id, "w");
        assert_eq!(p.steps[1].name, "s2");
        assert_eq!(first[0].agent, "a");
        assert!(SharedStr::ptr_eq(&first[0].agent, &first[2].agent));
        assert!(SharedStr::ptr_eq(&first[1].agent, &second[0].agent));
        assert!(SharedStr::ptr_eq(&first[0].skill, &second[0].skill));
        assert_eq!(first[2].description, "two");
        // The input text is the description itself, absent when blank.
        assert!(SharedStr::ptr_eq(
            first[0].text.as_ref().unwrap(),
            &first[0].description
        ));
        assert!(first[1].text.is_none());
    }

    #[test]
    fn star_windows_are_every_ancestor_nearest_first_with_one_reused_walk() {
        let mut wf = Workflow {
            steps: vec![
                step("s1", &["s2", "s3"]),
                step("s2", &["s4"]),
                step("s3", &["s4"]),
                step("s4", &["s5"]),
                step("s5", &[]),
            ],
            ..Default::default()
        };
        wf.steps[3].context_from = ContextFrom::AllAncestors;
        wf.steps[4].context_from = ContextFrom::AllAncestors;
        wf.steps[2].context_from = ContextFrom::Steps(vec!["s1".into(), "ghost".into()]);
        let p = plan(&wf);
        let mut walk = Walk::default();
        assert_eq!(windows(&p, 3, &mut walk), [1, 2, 0]);
        assert_eq!(windows(&p, 4, &mut walk), [3, 1, 2, 0]);
        assert_eq!(windows(&p, 3, &mut walk), [1, 2, 0]);
        assert_eq!(windows(&p, 1, &mut walk), [0]);
        assert_eq!(windows(&p, 2, &mut walk), [0]);
        assert_eq!(windows(&p, 0, &mut walk), [] as [usize; 0]);
    }

    #[test]
    fn a_long_chain_of_star_windows_is_planned_without_listing_ancestors() {
        let n = 10_000;
        let names: Vec<String> = (0..n).map(|i| format!("s{i}")).collect();
        let steps = (0..n)
            .map(|i| {
                let next: &[&str] = if i + 1 < n {
                    &[names[i + 1].as_str()]
                } else {
                    &[]
                };
                Step {
                    context_from: ContextFrom::AllAncestors,
                    ..step(&names[i], next)
                }
            })
            .collect();
        let p = plan(&Workflow {
            steps,
            ..Default::default()
        });
        assert!(
            p.steps
                .iter()
                .all(|s| matches!(s.window, Window::Ancestors))
        );
        let mut walk = Walk::default();
        let last = windows(&p, n - 1, &mut walk);
        assert_eq!(last.len(), n - 1);
        assert!(last.iter().rev().copied().eq(0..n - 1), "nearest first");
    }
}
