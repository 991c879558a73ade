//! The agents a workflow names, checked against the agents a host can reach — before anything
//! runs. The kernel finds an unknown agent only when its step dispatches, after earlier steps may
//! have had side effects; a host that knows its full agent set up front (the CLI does) refuses
//! the run instead.

use a2aflow_model::problem::problems_to_failure;
use a2aflow_model::{ErrorCode, Failure, Problem, StepType, Workflow};
use std::collections::HashSet;

/// Every subtask of `workflow` that names an agent outside `known`, as a `workflow.unknown_agent`
/// problem at `/steps/<i>/subtasks/<j>/agent`, in document order.
///
/// SELF_LOOP steps (local work, nothing is sent) and subtasks that delegate to a child `workflow`
/// name no agent and are skipped; a child workflow's own agents are checked when it is loaded.
pub fn unknown_agents<'a>(
    workflow: &Workflow,
    known: impl IntoIterator<Item = &'a str>,
) -> Vec<Problem> {
    let known: HashSet<&str> = known.into_iter().collect();
    let mut problems = Vec::new();
    for (i, step) in workflow.steps.iter().enumerate() {
        if step.step_type == StepType::SelfLoop {
            continue;
        }
        for (j, subtask) in step.subtasks.iter().enumerate() {
            if subtask.workflow.is_some() || known.contains(subtask.agent.as_str()) {
                continue;
            }
            let mut problem = Problem::new(
                ErrorCode::WorkflowUnknownAgent,
                format!("/steps/{i}/subtasks/{j}/agent"),
                format!(
                    "step '{}' names agent '{}', for which no agent card was given",
                    step.name, subtask.agent
                ),
            );
            problem.steps = vec![step.name.clone()];
            problems.push(problem);
        }
    }
    problems
}

/// [`unknown_agents`] as one `workflow.unknown_agent` failure (every problem in the message and
/// under `details.problems`); `Ok(())` when every agent is known.
///
/// ```
/// use a2aflow_kernel::check_agents;
/// use a2aflow_model::{Step, Subtask, Workflow};
/// let w = Workflow {
///     steps: vec![Step {
///         name: "s".into(),
///         subtasks: vec![Subtask { agent: "billing".into(), ..Default::default() }],
///         ..Default::default()
///     }],
///     ..Default::default()
/// };
/// assert!(check_agents(&w, ["billing"]).is_ok());
/// assert_eq!(check_agents(&w, ["noc"]).unwrap_err().code, "workflow.unknown_agent");
/// ```
pub fn check_agents<'a>(
    workflow: &Workflow,
    known: impl IntoIterator<Item = &'a str>,
) -> Result<(), Failure> {
    let problems = unknown_agents(workflow, known);
    if problems.is_empty() {
        return Ok(());
    }
    Err(problems_to_failure(
        ErrorCode::WorkflowUnknownAgent,
        "unknown agents",
        &problems,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2aflow_model::{Step, Subtask};

    fn step(name: &str, step_type: StepType, subtasks: Vec<Subtask>) -> Step {
        Step {
            name: name.into(),
            step_type,
            subtasks,
            ..Default::default()
        }
    }

    fn agent(name: &str) -> Subtask {
        Subtask {
            agent: name.into(),
            ..Default::default()
        }
    }

    #[test]
    fn every_unknown_agent_of_every_step_is_listed_and_local_work_is_skipped() {
        let w = Workflow {
            steps: vec![
                step("first", StepType::AllSuccess, vec![agent("a")]),
                step("local", StepType::SelfLoop, vec![agent("")]),
                step(
                    "later",
                    StepType::AnySuccess,
                    vec![
                        agent("a"),
                        agent("ghost"),
                        Subtask {
                            workflow: Some("child".into()),
                            ..Default::default()
                        },
                        agent("phantom"),
                    ],
                ),
            ],
            ..Default::default()
        };
        let problems = unknown_agents(&w, ["a"]);
        let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(
            paths,
            ["/steps/2/subtasks/1/agent", "/steps/2/subtasks/3/agent"]
        );
        assert!(
            problems
                .iter()
                .all(|p| p.code == ErrorCode::WorkflowUnknownAgent && p.steps == ["later"])
        );
        let f = check_agents(&w, ["a"]).unwrap_err();
        assert!(f.message.contains("'ghost'") && f.message.contains("'phantom'"));
        assert_eq!(f.details["problems"].as_array().map(Vec::len), Some(2));
        assert!(check_agents(&w, ["a", "ghost", "phantom"]).is_ok());
    }
}
