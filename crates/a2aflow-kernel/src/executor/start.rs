//! Starting a step: its `step_start` event, the context window, and one announced, spawned job
//! per subtask (or none, when the run stopped while the step was being started).

use super::{Executor, Job, Running, StepState};
use crate::context::{RunContext, TaskCtx, TaskLimit};
use crate::graph::Plan;
use crate::ids::TaskIds;
use crate::interrupt::{Interrupt, interrupted};
use crate::panic_guard::CatchUnwind;
use crate::refill;
use crate::task::{TaskDone, run_task};
use crate::view::{fail_view, subtask_view};
use a2aflow_model::{
    ErrorCode, EventKind, EventTime, Failure, StepResult, StepStatus, TaskInput, TaskOutcomeStatus,
    TaskRequest, WorkflowInput,
};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, Span};

/// A step being started: which step, its span, and the state its tasks are recorded in.
struct Starting {
    s: usize,
    span: Span,
    running: Running,
    /// When the step started (its `timeout` counts from here).
    started: Instant,
    /// The time of its `step_start` event, for its tasks' `task_request` events.
    at: Option<EventTime>,
}

impl Executor {
    /// Starts step `s`: announces it, then each of its subtasks.
    pub(super) async fn start_step(&mut self, s: usize) {
        let ctx = self.ctx.clone();
        let step = ctx.step(s);
        let span = tracing::info_span!("step", step = %step.name);
        // A step's start and its tasks' requests happen together: one time.
        let at = ctx.hub.moment();
        ctx.hub
            .emit_refilled((Some(&step.name), None, at), EventKind::StepStart, |p| {
                refill::step_start(p, &step.name, step.step_type)
            })
            .await;
        if let Some(done) = replayed_step(&ctx, &step.name) {
            // A resumed run: the step finished before the restart; it keeps its result.
            self.state[s] = StepState::Running(Running::new(0));
            self.finish_step(s, done.status, done.task_results, done.failure)
                .await;
            return;
        }
        let n = step.subtasks.len();
        if n == 0 {
            self.state[s] = StepState::Running(Running::new(0));
            self.finish_step(s, StepStatus::Completed, Vec::new(), None)
                .await;
            return;
        }
        let mut input = Some(self.workflow_input(s));
        self.ids.start(&ctx.execution_id, &step.name);
        let mut st = Starting {
            s,
            span,
            running: Running::new(n),
            started: Instant::now(),
            at,
        };
        for i in 0..n {
            // A run cancelled (or past its deadline) while its step was being started, e.g. by
            // the host's sink on `step_start`, announces no further task: the rest end CANCELED
            // here, with no `task_request` event, no callback and no request.
            if let Some(interrupt) = interrupted(&ctx.run_token, ctx.deadline) {
                self.cancel_unannounced(&mut st, i, interrupt);
                continue;
            }
            // The last subtask takes the window; the others share it (`Arc`s, not copies).
            let workflow_input = if i + 1 == n {
                input.take().unwrap_or_default()
            } else {
                input.clone().unwrap_or_default()
            };
            let request = task_request(&ctx, &self.plan, &mut self.ids, s, i, workflow_input);
            self.start_task(&mut st, request).await;
        }
        self.started(st).await;
    }

    /// Builds the context window of step `s` from steps that completed (shared, not copied).
    fn workflow_input(&mut self, s: usize) -> WorkflowInput {
        let results = &self.results;
        let mut upstream_results = Vec::new();
        self.plan.window(s, &mut self.walk, |c| {
            if let Some(r) = &results[c] {
                upstream_results.push(r.clone());
            }
        });
        WorkflowInput {
            runtime_intent: self.ctx.runtime_intent.clone(),
            upstream_results,
        }
    }

    /// Records subtask `i` CANCELED by `interrupt` before it was announced.
    fn cancel_unannounced(&mut self, st: &mut Starting, i: usize, interrupt: Interrupt) {
        let failure = self.ctx.interrupt_failure(interrupt);
        let mut view = subtask_view(&self.ctx.execution_id, self.ctx.step(st.s), i);
        fail_view(&mut view, TaskOutcomeStatus::Canceled, failure.clone());
        let running = &mut st.running;
        running.views[i] = Some(view);
        running.remaining -= 1;
        running.interrupt.get_or_insert(interrupt);
        // Handles stay indexed by subtask; this one has nothing left to stop.
        running
            .handles
            .push((CancellationToken::new(), Arc::new(AtomicBool::new(true))));
        self.fail_run(failure);
    }

    /// Announces the task `request` describes (`task_request`) and spawns its job.
    async fn start_task(&mut self, st: &mut Starting, request: TaskRequest) {
        let ctx = &self.ctx;
        let step = ctx.step(st.s);
        let i = request.subtask_index;
        let sub = &step.subtasks[i];
        let task_id = Some(request.local_task_id.as_str());
        ctx.hub
            .emit_refilled(
                (Some(&step.name), task_id, st.at),
                EventKind::TaskRequest,
                |p| refill::task_request(p, &step.name, sub, i, &request.local_task_id),
            )
            .await;
        let token = ctx.run_token.child_token();
        let closed = Arc::new(AtomicBool::new(false));
        st.running.handles.push((token.clone(), closed.clone()));
        let task_span = tracing::info_span!(
            parent: &st.span,
            "task",
            task_id = %request.local_task_id,
            agent = %sub.agent,
        );
        let (deadline, limit) = TaskLimit::deadline_of(ctx, st.s, i, st.started);
        let job = TaskCtx {
            run: ctx.clone(),
            step: st.s,
            index: i,
            token,
            closed,
            deadline,
            limit,
        };
        // Boxed: the request is handed down to the task's futures, each of which would
        // otherwise keep room for it for the task's life.
        self.jobs
            .spawn(task_job(job, Box::new(request)).instrument(task_span));
    }

    /// Every subtask of the step was started or stopped: the step runs, or (none started) ends
    /// CANCELED at once.
    async fn started(&mut self, st: Starting) {
        let Starting { s, running, .. } = st;
        if running.remaining == 0 {
            // Every task was stopped before it was announced.
            let failure = running.interrupt.map(|i| self.ctx.interrupt_failure(i));
            let views = running.views.into_iter().flatten().collect();
            self.finish_step(s, StepStatus::Canceled, views, failure)
                .await;
            return;
        }
        self.state[s] = StepState::Running(running);
    }
}

/// The journaled result of step `name`, when a resumed run finished it before the restart.
fn replayed_step(ctx: &RunContext, name: &str) -> Option<StepResult> {
    ctx.durable.as_ref()?.replay().step(name).cloned()
}

/// The request of subtask `i` of step `s`, with its context window: the plan's names shared.
fn task_request(
    ctx: &RunContext,
    plan: &Plan,
    ids: &mut TaskIds,
    s: usize,
    i: usize,
    workflow_input: WorkflowInput,
) -> TaskRequest {
    let step = &plan.steps[s];
    let sub = &step.subtasks[i];
    TaskRequest {
        execution_id: ctx.execution_id.clone(),
        workflow_id: plan.workflow_id.clone(),
        step_name: step.name.clone(),
        step_type: ctx.step(s).step_type,
        subtask_index: i,
        local_task_id: ids.of(i),
        agent: sub.agent.clone(),
        skill: sub.skill.clone(),
        description: sub.description.clone(),
        input: TaskInput {
            text: sub.text.clone(),
            data: None,
        },
        workflow_input,
        remaining_ms: 0,
    }
}

/// The job of one subtask: the task run to its end, a panic in it recorded as its failure.
fn task_job(t: TaskCtx, request: Box<TaskRequest>) -> impl Future<Output = Job> + Send {
    let (run, s, i) = (t.run.clone(), t.step, t.index);
    async move {
        match CatchUnwind::new(Box::pin(run_task(t, request))).await {
            Ok(done) => Job::Task(done),
            Err(m) => Job::Task(panicked_task(&run, s, i, &m)),
        }
    }
}

/// What a subtask whose job panicked with `message` hands back.
fn panicked_task(ctx: &RunContext, s: usize, i: usize, message: &str) -> TaskDone {
    let mut view = subtask_view(&ctx.execution_id, ctx.step(s), i);
    fail_view(
        &mut view,
        TaskOutcomeStatus::Failed,
        Failure::new(
            ErrorCode::WorkflowExecutionFailed,
            format!("the task panicked: {message}"),
        ),
    );
    TaskDone {
        step: s,
        index: i,
        view: Box::new(view),
        interrupt: None,
    }
}
