//! Validation of a workflow definition: one function, every problem at once.
//!
//! [`validate()`] checks what the document format cannot: names, edges, the graph and the
//! `contextFrom` sources. Each [`Problem`] has a stable code, a message a person can act on, the
//! path of the offending value inside the workflow (`/steps/2/next/0/step`; see
//! [`crate::Loaded::locate`] to turn it into a document position) and the step names involved.
//!
//! | code | when |
//! |---|---|
//! | `workflow.no_steps` | the workflow has no steps |
//! | `workflow.blank_step_name` | a step name is empty or whitespace |
//! | `workflow.invalid_name` | a name or id holds a control character (see [`crate::names`]) |
//! | `workflow.reserved_step_name` | a step is named `end`, `retry` or `endNode` |
//! | `workflow.duplicate_step` | two steps share a name |
//! | `workflow.empty_subtasks` | a step that is not SELF_LOOP has no subtasks |
//! | `workflow.blank_agent` | a subtask has a blank agent and no child workflow (SELF_LOOP subtasks may) |
//! | `workflow.subtask_target` | a subtask names both an agent and a child workflow, or a blank child workflow |
//! | `workflow.blank_target` | a `next` entry has a blank target |
//! | `workflow.duplicate_target` | a step lists the same `next` target twice (terminal targets too) |
//! | `workflow.unknown_target` | a `next` target is neither a step nor a terminal route |
//! | `workflow.context_wildcard_mixed` | `contextFrom` mixes `"*"` with step names |
//! | `workflow.unknown_context_step` | `contextFrom` names a step that does not exist |
//! | `workflow.context_not_upstream` | `contextFrom` names a step that is not an ancestor |
//! | `workflow.cycle` | the steps form a cycle (one cycle path is reported) |
//! | `workflow.no_root` | every step has an incoming edge |
//! | `workflow.invalid_timeout` | a step's or subtask's `timeout` is 0 |
//! | `workflow.invalid_retry` | a retry policy has no attempt, `initial` > `max`, a multiplier below 1 or a jitter outside 0..=1 |
//! | `workflow.retry_code_refused` | a retry policy's `on` names a code no attempt can change, or an unknown one |

use crate::definition::{
    CONTEXT_WILDCARD, ContextFrom, RESERVED_STEP_NAMES, Step, StepType, Workflow,
};
use crate::error_code::{ErrorCode, Failure};
use crate::names::{first_hidden, is_control_character, visible};
use crate::problem::{Problem, problems_to_failure, write_problems};
use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt::{self, Display};
use std::time::Duration;

/// The workflow is invalid; every problem found is listed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub struct ValidationErrors {
    /// The problems, per step in document order, then the graph-wide ones.
    pub problems: Vec<Problem>,
}

impl std::fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write_problems(f, "invalid workflow", &self.problems)
    }
}

impl ValidationErrors {
    /// One [`Failure`]: the first problem's code, all messages, the problems as details.
    pub fn to_failure(&self) -> Failure {
        problems_to_failure(
            ErrorCode::WorkflowNoSteps,
            "invalid workflow",
            &self.problems,
        )
    }

    /// The codes of the problems, in order.
    pub fn codes(&self) -> Vec<ErrorCode> {
        self.problems.iter().map(|p| p.code).collect()
    }
}

/// Checks a workflow and reports every problem at once. `Ok(())` means the kernel can schedule
/// it: names are unique, every edge resolves, the graph is acyclic with at least one root, and
/// every `contextFrom` source is an ancestor.
pub fn validate(workflow: &Workflow) -> Result<(), ValidationErrors> {
    let mut out = Vec::new();
    out.extend(control_in_name("workflow id", &workflow.id, "/id", &[]));
    out.extend(control_in_name(
        "workflow name",
        &workflow.name,
        "/name",
        &[],
    ));
    if workflow.steps.is_empty() {
        out.push(Problem::new(
            ErrorCode::WorkflowNoSteps,
            "/steps",
            "the workflow has no steps; add at least one step",
        ));
        return Err(ValidationErrors { problems: out });
    }
    let graph = Graph::new(workflow);
    let mut walk = Walk::new(workflow.steps.len());
    for i in 0..workflow.steps.len() {
        check_step(workflow, &graph, &mut walk, i, &mut out);
    }
    if let Some(p) = graph.cycle(workflow) {
        out.push(p);
    }
    if !graph.has_root() {
        out.push(
            Problem::new(
                ErrorCode::WorkflowNoRoot,
                "/steps",
                "no step is a root: every step is the target of another step's `next`; at least one step must start the workflow",
            )
            .with_steps(workflow.steps.iter().map(|s| s.name.clone())),
        );
    }
    if out.is_empty() {
        Ok(())
    } else {
        Err(ValidationErrors { problems: out })
    }
}

/// A `workflow.invalid_name` problem when `value` (a name or id, described by `what`) holds a
/// control character. `what` and `path` are formatted only then (pass `format_args!`): every
/// run validates its workflow, and a valid one costs no allocation per name.
fn control_in_name(
    what: impl Display,
    value: &str,
    path: impl Display,
    steps: &[&str],
) -> Option<Problem> {
    let (at, c) = first_hidden(value, is_control_character)?;
    Some(
        Problem::new(
            ErrorCode::WorkflowInvalidName,
            path.to_string(),
            format!(
                "{what} '{}' contains the control character U+{:04X} (character {}); names cannot hold newlines, tabs, escapes or other control characters, so remove it",
                visible(value),
                u32::from(c),
                at + 1
            ),
        )
        .with_steps(steps.iter().copied()),
    )
}

/// A `workflow.invalid_timeout` problem when `t` is zero (`path` and `what` formatted only
/// then).
fn zero_timeout(
    t: Option<Duration>,
    path: impl Display,
    what: impl Display,
    name: &str,
) -> Option<Problem> {
    t.filter(|t| t.is_zero())?;
    Some(
        Problem::new(
            ErrorCode::WorkflowInvalidTimeout,
            path.to_string(),
            format!("{what} has a timeout of 0 seconds, so it could never run; give a positive number of seconds or leave `timeout` out"),
        )
        .with_steps([name]),
    )
}

/// The step's and its subtasks' timeouts and retry policies (see [`crate::RetryPolicy::problems`]).
fn check_policies(step: &Step, sp: StepPath, who: Label<'_>, out: &mut Vec<Problem>) {
    let name = step.name.as_str();
    out.extend(zero_timeout(
        step.timeout,
        format_args!("{sp}/timeout"),
        who,
        name,
    ));
    for (j, t) in step.subtasks.iter().enumerate() {
        out.extend(zero_timeout(
            t.timeout,
            format_args!("{sp}/subtasks/{j}/timeout"),
            format_args!("subtask #{j} of {who}"),
            name,
        ));
    }
    let self_loop = step.step_type == StepType::SelfLoop;
    for (j, t) in step.subtasks.iter().enumerate() {
        if let Some(policy) = &t.retry {
            let path = format!("{sp}/subtasks/{j}/retry");
            if self_loop || t.workflow.is_some() {
                let what = if self_loop { "SELF_LOOP" } else { "delegating" };
                out.push(
                    Problem::new(
                        ErrorCode::WorkflowInvalidRetry,
                        path,
                        format!("subtask #{j} of {who} is {what}, and only a remote agent's subtask is retried; remove `retry`"),
                    )
                    .with_steps([name]),
                );
                continue;
            }
            out.extend(
                policy
                    .problems(&path)
                    .into_iter()
                    .map(|p| p.with_steps([name])),
            );
        }
    }
}

fn is_reserved(name: &str) -> bool {
    RESERVED_STEP_NAMES.contains(&name)
}

/// How a message names step `i`: `step 'name'`, or `step #i` when the name is blank. Written
/// only into a problem's message (it is `Copy` and formats on demand).
#[derive(Clone, Copy)]
struct Label<'w> {
    i: usize,
    name: &'w str,
}

impl Display for Label<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.name.trim().is_empty() {
            write!(f, "step #{}", self.i)
        } else {
            write!(f, "step '{}'", visible(self.name))
        }
    }
}

/// The JSON pointer of step `i` (`/steps/i`), formatted on demand.
#[derive(Clone, Copy)]
struct StepPath(usize);

impl Display for StepPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "/steps/{}", self.0)
    }
}

/// Reusable state of [`Graph::is_upstream`]: a visit stamp per step (no set to clear between
/// walks), the queue, and per step the last source (plus one) found upstream of it.
struct Walk {
    seen: Vec<usize>,
    stamp: usize,
    queue: VecDeque<usize>,
    found: Vec<usize>,
}

impl Walk {
    fn new(steps: usize) -> Self {
        Walk {
            seen: vec![0; steps],
            stamp: 0,
            queue: VecDeque::new(),
            found: vec![0; steps],
        }
    }
}

/// The steps as a graph of indices. A name resolves to its first step.
struct Graph<'w> {
    by_name: HashMap<&'w str, usize>,
    /// For each step, the steps its `next` entries reach (with the entry index), in order.
    succ: Vec<Vec<(usize, usize)>>,
    /// For each step, the steps whose `next` reaches it.
    pred: Vec<Vec<usize>>,
    /// What every `next` entry resolved to, all steps' entries in order (step `i`'s from
    /// `first_entry[i]`): the checks read it instead of looking each target up again.
    entries: Vec<Resolved>,
    first_entry: Vec<usize>,
}

/// What a `next` entry's target names.
#[derive(Clone, Copy, PartialEq)]
enum Resolved {
    /// A step, the first time its step's entries name it.
    Step,
    /// A step an earlier entry of the same step already names.
    Repeat,
    /// No step: a terminal route, an unknown name or a blank.
    NoStep,
}

impl<'w> Graph<'w> {
    fn new(workflow: &'w Workflow) -> Self {
        let mut by_name = HashMap::new();
        for (i, s) in workflow.steps.iter().enumerate() {
            if !s.name.trim().is_empty() && !is_reserved(&s.name) {
                by_name.entry(s.name.as_str()).or_insert(i);
            }
        }
        let n = workflow.steps.len();
        let mut succ = vec![Vec::new(); n];
        let mut pred = vec![Vec::new(); n];
        let mut entries = Vec::with_capacity(workflow.steps.iter().map(|s| s.next.len()).sum());
        let mut first_entry = Vec::with_capacity(n);
        // `named_by[t] == i`: step `i` already has an entry to step `t` (one pass, no scan).
        let mut named_by = vec![usize::MAX; n];
        for (i, s) in workflow.steps.iter().enumerate() {
            first_entry.push(entries.len());
            for (k, e) in s.next.iter().enumerate() {
                entries.push(match by_name.get(&*e.step) {
                    None => Resolved::NoStep,
                    Some(&t) if named_by[t] == i => Resolved::Repeat,
                    Some(&t) => {
                        named_by[t] = i;
                        succ[i].push((t, k));
                        pred[t].push(i);
                        Resolved::Step
                    }
                });
            }
        }
        Graph {
            by_name,
            succ,
            pred,
            entries,
            first_entry,
        }
    }

    /// What entry `k` of step `i`'s `next` resolved to.
    fn resolved(&self, i: usize, k: usize) -> Resolved {
        self.entries[self.first_entry[i] + k]
    }

    /// A root has no incoming edge from another step (self edges do not count).
    fn has_root(&self) -> bool {
        self.pred
            .iter()
            .enumerate()
            .any(|(i, ps)| ps.iter().all(|&p| p == i))
    }

    /// True when `source` reaches `i` through `next` edges. Walks up from `i` and stops at
    /// `source`, so the usual context source (a near ancestor) costs a few steps, not the graph;
    /// it also stops at a step `source` was already found to reach, so many steps naming one
    /// far source (e.g. the root) cost a few steps each too.
    fn is_upstream(&self, source: usize, i: usize, walk: &mut Walk) -> bool {
        walk.stamp += 1;
        walk.queue.clear();
        walk.queue.extend(self.pred[i].iter().copied());
        while let Some(p) = walk.queue.pop_front() {
            if p == source || walk.found[p] == source + 1 {
                walk.found[i] = source + 1;
                return true;
            }
            if walk.seen[p] != walk.stamp {
                walk.seen[p] = walk.stamp;
                walk.queue.extend(self.pred[p].iter().copied());
            }
        }
        false
    }

    /// The first cycle met by a depth-first walk in document and edge order.
    fn cycle(&self, workflow: &Workflow) -> Option<Problem> {
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            New,
            Open,
            Done,
        }
        let mut mark = vec![Mark::New; self.succ.len()];
        for start in 0..self.succ.len() {
            if mark[start] != Mark::New {
                continue;
            }
            // Stack of (node, next successor position); `path` mirrors the open nodes.
            let mut stack = vec![(start, 0usize)];
            mark[start] = Mark::Open;
            while let Some(&mut (node, ref mut pos)) = stack.last_mut() {
                if let Some(&(t, k)) = self.succ[node].get(*pos) {
                    *pos += 1;
                    match mark[t] {
                        Mark::New => {
                            mark[t] = Mark::Open;
                            stack.push((t, 0));
                        }
                        Mark::Open => {
                            let from = stack.iter().position(|&(x, _)| x == t).unwrap_or(0);
                            let names: Vec<String> = stack[from..]
                                .iter()
                                .map(|&(x, _)| workflow.steps[x].name.clone())
                                .collect();
                            let mut shown: Vec<String> =
                                names.iter().map(|n| visible(n).into_owned()).collect();
                            shown.push(visible(&workflow.steps[t].name).into_owned());
                            return Some(
                                Problem::new(
                                    ErrorCode::WorkflowCycle,
                                    format!("/steps/{node}/next/{k}/step"),
                                    format!(
                                        "the steps form a cycle: {}; a workflow must be acyclic, so remove or redirect one of these edges",
                                        shown.join(" -> ")
                                    ),
                                )
                                .with_steps(names),
                            );
                        }
                        Mark::Done => {}
                    }
                } else {
                    mark[node] = Mark::Done;
                    stack.pop();
                }
            }
        }
        None
    }
}

fn check_step(
    workflow: &Workflow,
    graph: &Graph<'_>,
    walk: &mut Walk,
    i: usize,
    out: &mut Vec<Problem>,
) {
    let step = &workflow.steps[i];
    // Paths and messages are formatted only for a problem: a valid workflow validates without
    // allocating per step, subtask or edge (every run validates its workflow).
    let sp = StepPath(i);
    let name = step.name.as_str();
    let who = Label { i, name };

    // names
    if name.trim().is_empty() {
        out.push(Problem::new(
            ErrorCode::WorkflowBlankStepName,
            format!("{sp}/name"),
            format!("{who} has a blank name; give every step a unique, nonblank name"),
        ));
    } else if let Some(p) = control_in_name("step name", name, format_args!("{sp}/name"), &[name]) {
        out.push(p);
    } else if is_reserved(name) {
        out.push(
            Problem::new(
                ErrorCode::WorkflowReservedStepName,
                format!("{sp}/name"),
                format!(
                    "step name '{}' is reserved for a terminal route ({}); rename the step",
                    visible(name),
                    RESERVED_STEP_NAMES.join(", ")
                ),
            )
            .with_steps([name]),
        );
    } else if let Some(&first) = graph.by_name.get(name).filter(|&&f| f != i) {
        out.push(
            Problem::new(
                ErrorCode::WorkflowDuplicateStep,
                format!("{sp}/name"),
                format!(
                    "duplicate step '{}': steps #{first} and #{i} share the name; step names must be unique",
                    visible(name)
                ),
            )
            .with_steps([name]),
        );
    }

    // subtasks
    let self_loop = step.step_type == StepType::SelfLoop;
    if step.subtasks.is_empty() && !self_loop {
        out.push(
            Problem::new(
                ErrorCode::WorkflowEmptySubtasks,
                format!("{sp}/subtasks"),
                format!(
                    "{who} is {} but has no subtasks; add a subtask or make it SELF_LOOP",
                    step.step_type.as_str()
                ),
            )
            .with_steps([name]),
        );
    }
    for (j, t) in step.subtasks.iter().enumerate() {
        let blank_agent = t.agent.trim().is_empty();
        let agent_control = control_in_name(
            format_args!("agent of subtask #{j} of {who}"),
            &t.agent,
            format_args!("{sp}/subtasks/{j}/agent"),
            &[name],
        );
        let workflow_control = t.workflow.as_deref().and_then(|w| {
            control_in_name(
                format_args!("child workflow of subtask #{j} of {who}"),
                w,
                format_args!("{sp}/subtasks/{j}/workflow"),
                &[name],
            )
        });
        if agent_control.is_some() || workflow_control.is_some() {
            out.extend(agent_control);
            out.extend(workflow_control);
            continue;
        }
        match &t.workflow {
            Some(w) if !blank_agent => out.push(
                Problem::new(
                    ErrorCode::WorkflowSubtaskTarget,
                    format!("{sp}/subtasks/{j}"),
                    format!(
                        "subtask #{j} of {who} names both agent '{}' and child workflow '{}'; keep one of them",
                        visible(&t.agent),
                        visible(w)
                    ),
                )
                .with_steps([name]),
            ),
            Some(w) if w.trim().is_empty() => out.push(
                Problem::new(
                    ErrorCode::WorkflowSubtaskTarget,
                    format!("{sp}/subtasks/{j}/workflow"),
                    format!("subtask #{j} of {who} has a blank child workflow id; name the workflow to run or an agent"),
                )
                .with_steps([name]),
            ),
            None if blank_agent && !self_loop => out.push(
                Problem::new(
                    ErrorCode::WorkflowBlankAgent,
                    format!("{sp}/subtasks/{j}/agent"),
                    format!("subtask #{j} of {who} has a blank agent name; name the agent to send to (or a child `workflow`)"),
                )
                .with_steps([name]),
            ),
            _ => {}
        }
    }
    check_policies(step, sp, who, out);

    // next (the graph resolved each target; only names that are no step are hashed here)
    let mut no_step = HashSet::new();
    for (k, e) in step.next.iter().enumerate() {
        let ep = || format!("{sp}/next/{k}/step");
        let target = &*e.step;
        let resolved = graph.resolved(i, k);
        let repeated = match resolved {
            Resolved::Step => false,
            Resolved::Repeat => true,
            Resolved::NoStep => !no_step.insert(target),
        };
        if target.trim().is_empty() {
            out.push(
                Problem::new(
                    ErrorCode::WorkflowBlankTarget,
                    ep(),
                    format!("{who} has a `next` entry (#{k}) with a blank target; name a step or a terminal route"),
                )
                .with_steps([name]),
            );
        } else if let Some(p) = control_in_name(
            format_args!("`next` target #{k} of {who}"),
            target,
            format_args!("{sp}/next/{k}/step"),
            &[name, target],
        ) {
            out.push(p);
        } else if repeated {
            out.push(
                Problem::new(
                    ErrorCode::WorkflowDuplicateTarget,
                    ep(),
                    format!(
                        "{who} lists '{}' in `next` more than once; keep one entry per target",
                        visible(target)
                    ),
                )
                .with_steps([name, target]),
            );
        } else if resolved == Resolved::NoStep && !is_reserved(target) {
            out.push(
                Problem::new(
                    ErrorCode::WorkflowUnknownTarget,
                    ep(),
                    format!(
                        "{who} references unknown step '{}' in `next`; name an existing step or a terminal route ({})",
                        visible(target),
                        RESERVED_STEP_NAMES.join(", ")
                    ),
                )
                .with_steps([name, target]),
            );
        }
    }

    // contextFrom
    if let ContextFrom::Steps(sources) = &step.context_from {
        if step.context_from.is_wildcard_mixed() {
            out.push(
                Problem::new(
                    ErrorCode::WorkflowContextWildcardMixed,
                    format!("{sp}/contextFrom"),
                    format!("{who} cannot combine '*' with named context sources; use either [\"*\"] or a list of step names"),
                )
                .with_steps([name]),
            );
        }
        for (k, source) in sources.iter().enumerate() {
            if source == CONTEXT_WILDCARD {
                continue;
            }
            let cp = || format!("{sp}/contextFrom/{k}");
            if let Some(p) = control_in_name(
                format_args!("`contextFrom` entry #{k} of {who}"),
                source,
                format_args!("{sp}/contextFrom/{k}"),
                &[name, source.as_str()],
            ) {
                out.push(p);
                continue;
            }
            match graph.by_name.get(source.as_str()) {
                None => out.push(
                    Problem::new(
                        ErrorCode::WorkflowUnknownContextStep,
                        cp(),
                        format!("{who} references unknown context step '{}' in `contextFrom`; name an existing upstream step", visible(source)),
                    )
                    .with_steps([name, source.as_str()]),
                ),
                Some(&s) => {
                    if !graph.is_upstream(s, i, walk) {
                        out.push(
                            Problem::new(
                                ErrorCode::WorkflowContextNotUpstream,
                                cp(),
                                format!("{who} context source '{0}' is not an upstream dependency: no path of `next` edges leads from '{0}' to this step", visible(source)),
                            )
                            .with_steps([name, source.as_str()]),
                        );
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::definition::{Edge, Step, Subtask};

    fn step(name: &str, next: &[&str]) -> Step {
        Step {
            name: name.to_owned(),
            subtasks: vec![Subtask {
                agent: format!("agent-{name}"),
                ..Subtask::default()
            }],
            next: next
                .iter()
                .map(|t| Edge {
                    step: (*t).into(),
                    condition: "".into(),
                })
                .collect(),
            ..Step::default()
        }
    }

    fn wf(steps: Vec<Step>) -> Workflow {
        Workflow {
            id: "w".into(),
            steps,
            ..Workflow::default()
        }
    }

    fn problems(w: &Workflow) -> Vec<Problem> {
        validate(w).unwrap_err().problems
    }

    fn only(w: &Workflow) -> Problem {
        let ps = problems(w);
        assert_eq!(ps.len(), 1, "{ps:#?}");
        ps.into_iter().next().unwrap()
    }

    #[test]
    fn a_valid_diamond_passes() {
        let mut merge = step("merge", &["end"]);
        merge.context_from = ContextFrom::Steps(vec!["left".into(), "start".into()]);
        let w = wf(vec![
            step("start", &["left", "right"]),
            step("left", &["merge"]),
            step("right", &["merge"]),
            merge,
        ]);
        assert_eq!(validate(&w), Ok(()));
    }

    #[test]
    fn s_val_02_context_source_not_upstream() {
        let mut right = step("right", &[]);
        right.context_from = ContextFrom::Steps(vec!["left".into()]);
        let p = only(&wf(vec![step("left", &[]), right]));
        assert_eq!(p.code, ErrorCode::WorkflowContextNotUpstream);
        assert_eq!(p.path, "/steps/1/contextFrom/0");
        assert_eq!(p.steps, ["right", "left"]);
        assert!(
            p.message
                .starts_with("step 'right' context source 'left' is not an upstream dependency"),
            "{}",
            p.message
        );
    }

    #[test]
    fn s_val_04_two_step_cycle_reports_the_path() {
        let ps = problems(&wf(vec![
            step("first", &["second"]),
            step("second", &["first"]),
        ]));
        let codes: Vec<_> = ps.iter().map(|p| p.code).collect();
        assert_eq!(codes, [ErrorCode::WorkflowCycle, ErrorCode::WorkflowNoRoot]);
        assert_eq!(ps[0].steps, ["first", "second"]);
        assert_eq!(ps[0].path, "/steps/1/next/0/step");
        assert!(
            ps[0].message.contains("first -> second -> first"),
            "{}",
            ps[0].message
        );
    }

    #[test]
    fn a_longer_cycle_below_a_root_reports_one_cycle() {
        let w = wf(vec![
            step("root", &["a"]),
            step("a", &["b"]),
            step("b", &["c"]),
            step("c", &["a", "end"]),
        ]);
        let p = only(&w);
        assert_eq!(p.code, ErrorCode::WorkflowCycle);
        assert_eq!(p.steps, ["a", "b", "c"]);
        assert!(
            p.message
                .contains("the steps form a cycle: a -> b -> c -> a;"),
            "{}",
            p.message
        );
    }

    #[test]
    fn a_self_edge_is_a_cycle() {
        let p = only(&wf(vec![step("a", &["a"])]));
        assert_eq!(p.code, ErrorCode::WorkflowCycle);
        assert!(p.message.contains("a -> a"));
    }

    #[test]
    fn s_val_08_blank_target() {
        let p = only(&wf(vec![step("start", &["  "])]));
        assert_eq!(p.code, ErrorCode::WorkflowBlankTarget);
        assert_eq!(p.path, "/steps/0/next/0/step");
        assert!(
            p.message
                .contains("step 'start' has a `next` entry (#0) with a blank target")
        );
    }

    #[test]
    fn s_val_10_blank_step_name() {
        let p = only(&wf(vec![step(" ", &[])]));
        assert_eq!(p.code, ErrorCode::WorkflowBlankStepName);
        assert_eq!(p.path, "/steps/0/name");
        assert_eq!(
            p.message,
            "step #0 has a blank name; give every step a unique, nonblank name"
        );
    }

    #[test]
    fn s_val_12_unknown_context_step() {
        let mut m = step("m", &[]);
        m.context_from = ContextFrom::Steps(vec!["ghost".into()]);
        let p = only(&wf(vec![m]));
        assert_eq!(p.code, ErrorCode::WorkflowUnknownContextStep);
        assert_eq!(p.steps, ["m", "ghost"]);
        assert!(
            p.message
                .contains("references unknown context step 'ghost'")
        );
    }

    #[test]
    fn s_val_14_no_steps() {
        let p = only(&wf(vec![]));
        assert_eq!(p.code, ErrorCode::WorkflowNoSteps);
        assert_eq!(
            p.message,
            "the workflow has no steps; add at least one step"
        );
    }

    #[test]
    fn s_val_16_terminal_targets_are_not_steps() {
        let w = wf(vec![step("s1", &["s2"]), step("s2", &["endNode"])]);
        assert_eq!(validate(&w), Ok(()));
        let w = wf(vec![step("s1", &["end", "retry"])]);
        assert_eq!(validate(&w), Ok(()));
    }

    #[test]
    fn duplicate_step_names() {
        let p = only(&wf(vec![step("a", &[]), step("b", &[]), step("a", &[])]));
        assert_eq!(p.code, ErrorCode::WorkflowDuplicateStep);
        assert_eq!(p.path, "/steps/2/name");
        assert_eq!(p.steps, ["a"]);
        assert_eq!(
            p.message,
            "duplicate step 'a': steps #0 and #2 share the name; step names must be unique"
        );
    }

    #[test]
    fn reserved_step_names() {
        for name in RESERVED_STEP_NAMES {
            let p = only(&wf(vec![step("a", &[]), step(name, &[])]));
            assert_eq!(p.code, ErrorCode::WorkflowReservedStepName);
            assert!(
                p.message
                    .contains(&format!("step name '{name}' is reserved"))
            );
        }
    }

    #[test]
    fn unknown_and_duplicate_targets() {
        let ps = problems(&wf(vec![
            step("a", &["b", "ghost", "b", "end", "end"]),
            step("b", &[]),
        ]));
        let got: Vec<_> = ps.iter().map(|p| (p.code, p.path.as_str())).collect();
        assert_eq!(
            got,
            [
                (ErrorCode::WorkflowUnknownTarget, "/steps/0/next/1/step"),
                (ErrorCode::WorkflowDuplicateTarget, "/steps/0/next/2/step"),
                (ErrorCode::WorkflowDuplicateTarget, "/steps/0/next/4/step"),
            ]
        );
        assert_eq!(ps[0].steps, ["a", "ghost"]);
        assert!(ps[0].message.contains("references unknown step 'ghost'"));
        assert!(ps[1].message.contains("lists 'b' in `next` more than once"));
    }

    #[test]
    fn wildcard_mixed_with_names() {
        let mut b = step("b", &[]);
        b.context_from = ContextFrom::Steps(vec!["*".into(), "a".into()]);
        let p = only(&wf(vec![step("a", &["b"]), b]));
        assert_eq!(p.code, ErrorCode::WorkflowContextWildcardMixed);
        assert_eq!(p.path, "/steps/1/contextFrom");
        assert!(
            p.message
                .contains("cannot combine '*' with named context sources")
        );
    }

    #[test]
    fn context_sources_may_be_any_ancestor_and_empty_is_valid() {
        let mut c = step("c", &[]);
        c.context_from = ContextFrom::Steps(vec!["a".into()]);
        let mut b = step("b", &["c"]);
        b.context_from = ContextFrom::Steps(vec![]);
        let w = wf(vec![step("a", &["b"]), b, c]);
        assert_eq!(validate(&w), Ok(()));
    }

    #[test]
    fn subtask_rules() {
        let mut empty = step("empty", &[]);
        empty.subtasks.clear();
        let mut looped = step("looped", &[]);
        looped.step_type = StepType::SelfLoop;
        looped.subtasks = vec![Subtask::default()];
        let mut bad = step("bad", &[]);
        bad.subtasks = vec![
            Subtask::default(),
            Subtask {
                agent: "x".into(),
                workflow: Some("child".into()),
                ..Subtask::default()
            },
            Subtask {
                workflow: Some(" ".into()),
                ..Subtask::default()
            },
            Subtask {
                workflow: Some("child".into()),
                ..Subtask::default()
            },
        ];
        let mut empty_loop = step("empty_loop", &[]);
        empty_loop.step_type = StepType::SelfLoop;
        empty_loop.subtasks.clear();
        let ps = problems(&wf(vec![empty, looped, bad, empty_loop]));
        let got: Vec<_> = ps.iter().map(|p| (p.code, p.path.as_str())).collect();
        assert_eq!(
            got,
            [
                (ErrorCode::WorkflowEmptySubtasks, "/steps/0/subtasks"),
                (ErrorCode::WorkflowBlankAgent, "/steps/2/subtasks/0/agent"),
                (ErrorCode::WorkflowSubtaskTarget, "/steps/2/subtasks/1"),
                (
                    ErrorCode::WorkflowSubtaskTarget,
                    "/steps/2/subtasks/2/workflow"
                ),
            ]
        );
        assert_eq!(
            ps[0].message,
            "step 'empty' is ALL_SUCCESS but has no subtasks; add a subtask or make it SELF_LOOP"
        );
        assert!(
            ps[1]
                .message
                .contains("subtask #0 of step 'bad' has a blank agent name")
        );
        assert!(
            ps[2]
                .message
                .contains("names both agent 'x' and child workflow 'child'")
        );
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let mut b = step("b", &["ghost", "a"]);
        b.context_from = ContextFrom::Steps(vec!["nobody".into()]);
        let w = wf(vec![step("a", &["b"]), b, step("", &[]), step("end", &[])]);
        let e = validate(&w).unwrap_err();
        assert_eq!(
            e.codes(),
            [
                ErrorCode::WorkflowUnknownTarget,
                ErrorCode::WorkflowUnknownContextStep,
                ErrorCode::WorkflowBlankStepName,
                ErrorCode::WorkflowReservedStepName,
                ErrorCode::WorkflowCycle,
            ]
        );
        let f = e.to_failure();
        assert_eq!(f.code, "workflow.unknown_target");
        assert!(e.to_string().starts_with(
            "invalid workflow: 5 problems\n  [workflow.unknown_target] /steps/1/next/0/step: "
        ));
    }

    #[test]
    fn control_characters_in_names_are_invalid_and_shown_escaped() {
        let mut a = step("a\nb", &["c\u{1b}[2J", "d"]);
        a.subtasks[0].agent = "agent\r".into();
        a.context_from = ContextFrom::Steps(vec!["x\u{7f}".into()]);
        let mut d = step("d", &[]);
        d.subtasks[0].agent = String::new();
        d.subtasks[0].workflow = Some("child\u{85}".into());
        let mut w = wf(vec![a, d]);
        w.id = "id\t".into();
        w.name = "ok name".into();
        let e = validate(&w).unwrap_err();
        let got: Vec<_> = e
            .problems
            .iter()
            .filter(|p| p.code == ErrorCode::WorkflowInvalidName)
            .map(|p| p.path.as_str())
            .collect();
        assert_eq!(
            got,
            [
                "/id",
                "/steps/0/name",
                "/steps/0/subtasks/0/agent",
                "/steps/0/next/0/step",
                "/steps/0/contextFrom/0",
                "/steps/1/subtasks/0/workflow",
            ],
            "{e}"
        );
        // no other problem for the same values (no unknown target / context step on top)
        assert_eq!(e.problems.len(), got.len(), "{e}");
        assert!(
            e.problems[1].message.starts_with(
                "step name 'a\\u{000A}b' contains the control character U+000A (character 2)"
            ),
            "{}",
            e.problems[1].message
        );
        for p in &e.problems {
            assert!(
                !p.message.chars().any(crate::names::is_control_character),
                "{:?}",
                p.message
            );
        }
    }

    #[test]
    fn messages_about_other_problems_show_hidden_characters_escaped() {
        // invisible characters are no validation error, but no message carries them raw
        let w = wf(vec![step("a\u{202E}", &["ghost\u{200B}"])]);
        let e = validate(&w).unwrap_err();
        assert_eq!(e.codes(), [ErrorCode::WorkflowUnknownTarget]);
        assert!(
            e.problems[0]
                .message
                .starts_with("step 'a\\u{202E}' references unknown step 'ghost\\u{200B}'"),
            "{}",
            e.problems[0].message
        );
    }
}
