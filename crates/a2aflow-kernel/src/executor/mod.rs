//! The scheduler: an online ready queue over the precomputed [`Plan`], dead-path elimination,
//! step policies, routing and the run's stop rules. It owns every spawned task of the run in one
//! [`JoinSet`] and drains it before returning, so nothing outlives the run.
//!
//! The [`Executor`]'s state and its loop are here; starting a step and its tasks in `start`,
//! a task's end and a step's end in `settle`, route decisions and dead paths in `routes`.

mod routes;
mod settle;
mod start;

pub(crate) use settle::unshared;

use crate::context::RunContext;
use crate::graph::{Plan, Walk};
use crate::ids::TaskIds;
use crate::interrupt::Interrupt;
use crate::task::TaskDone;
use a2aflow_model::event_data::WorkflowCompleteData;
use a2aflow_model::{
    ExecutionResult, Failure, RouteDecision, StepResult, StepStatus, TaskResultView, UpstreamResult,
};
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use tokio::task::{JoinError, JoinSet};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

// The Task variant is the hot path; boxing it would cost one allocation per task.
#[allow(clippy::large_enum_variant)]
enum Job {
    Task(TaskDone),
    Routes {
        step: usize,
        result: Result<Vec<RouteDecision>, (usize, Failure)>,
        interrupt: Option<Interrupt>,
    },
}

struct Running {
    views: Vec<Option<TaskResultView>>,
    remaining: usize,
    /// Per subtask: its cancellation token and the flag that closes its event emitter.
    handles: Vec<(CancellationToken, Arc<AtomicBool>)>,
    interrupt: Option<Interrupt>,
}

impl Running {
    /// A step of `n` subtasks, none started yet.
    fn new(n: usize) -> Self {
        Running {
            views: vec![None; n],
            remaining: n,
            handles: Vec::with_capacity(n),
            interrupt: None,
        }
    }
}

/// A step's state. `Running` is held inline: a step's record is one allocation fewer (the
/// states are one allocation per run, a few dozen bytes per step).
enum StepState {
    Waiting,
    Running(Running),
    Routing,
    Done,
    Skipped,
}

/// One run of the scheduler over a validated workflow.
pub(crate) struct Executor {
    ctx: Arc<RunContext>,
    plan: Arc<Plan>,
    state: Vec<StepState>,
    unresolved: Vec<u32>,
    activated: Vec<bool>,
    results: Vec<Option<Arc<UpstreamResult>>>,
    jobs: JoinSet<Job>,
    ready: VecDeque<usize>,
    completed: Vec<StepResult>,
    /// The step index of each entry of `completed`.
    completed_steps: Vec<usize>,
    failure: Option<Failure>,
    stopped: bool,
    /// Remote identities of ANY_SUCCESS losers that reported after their step ended:
    /// (step, subtask, context id, remote task id), filled into the result by `finish`.
    late_ids: Vec<LateIds>,
    /// The buffers of the ancestor walk of `"*"` context windows (allocated on first use).
    walk: Walk,
    /// The buffer the run's local task ids are written in.
    ids: TaskIds,
}

/// What woke the executor's loop (moved out at once, so the size of a job costs nothing).
#[allow(clippy::large_enum_variant)]
enum Wake {
    /// A job ended.
    Joined(Result<Job, JoinError>),
    /// The number of tasks parked at a gate changed.
    Parked,
}

/// Resolves when the number of the run's parked tasks changed; never without a suspension.
async fn parked_changed(ctx: &RunContext) {
    match &ctx.suspension {
        Some(s) => s.changed().await,
        None => std::future::pending().await,
    }
}

/// See [`Executor::late_ids`].
type LateIds = (usize, usize, Option<String>, Option<String>);

impl Executor {
    pub(crate) fn new(ctx: Arc<RunContext>, plan: Arc<Plan>) -> Self {
        let n = plan.steps.len();
        Executor {
            unresolved: plan.steps.iter().map(|s| s.in_degree).collect(),
            activated: vec![false; n],
            state: (0..n).map(|_| StepState::Waiting).collect(),
            results: vec![None; n],
            jobs: JoinSet::new(),
            ready: plan.roots.iter().copied().collect(),
            // One allocation up front: growing a large Vec frees large blocks, which makes the
            // allocator consolidate its free lists on every growth step.
            completed: Vec::with_capacity(n),
            completed_steps: Vec::with_capacity(n),
            failure: None,
            stopped: false,
            late_ids: Vec::new(),
            walk: Walk::default(),
            ids: TaskIds::default(),
            ctx,
            plan,
        }
    }

    fn name(&self, s: usize) -> &str {
        &self.ctx.step(s).name
    }

    fn fail_run(&mut self, f: Failure) {
        self.stopped = true;
        if self.failure.is_none() {
            self.failure = Some(f);
        }
    }

    /// Stops the run for `i` (the first failure recorded wins).
    fn interrupt_run(&mut self, i: Interrupt) {
        let failure = self.ctx.interrupt_failure(i);
        self.fail_run(failure);
    }

    /// Runs the workflow to its end and returns the result.
    pub(crate) async fn run(mut self) -> ExecutionResult {
        let backstop = self.ctx.deadline + self.ctx.grace + Duration::from_secs(1);
        let sleep = tokio::time::sleep_until(backstop);
        tokio::pin!(sleep);
        loop {
            self.start_ready().await;
            if self.jobs.is_empty() {
                break;
            }
            let next = tokio::select! {
                biased;
                j = self.jobs.join_next() => j.map(Wake::Joined),
                _ = sleep.as_mut() => None,
                () = parked_changed(&self.ctx) => Some(Wake::Parked),
            };
            match next {
                Some(Wake::Joined(joined)) => {
                    self.on_joined(joined).await;
                    self.maybe_suspend();
                }
                Some(Wake::Parked) => self.maybe_suspend(),
                None => self.on_backstop().await,
            }
        }
        self.finish().await
    }

    /// Starts every ready step, unless the run stopped, was cancelled or is past its deadline.
    async fn start_ready(&mut self) {
        while let Some(s) = self.ready.pop_front() {
            if self.stopped {
                continue;
            }
            if self.ctx.run_token.is_cancelled() {
                self.interrupt_run(Interrupt::Cancelled);
                continue;
            }
            if Instant::now() >= self.ctx.deadline {
                self.interrupt_run(Interrupt::Timeout);
                continue;
            }
            self.start_step(s).await;
        }
    }

    /// One job of the run ended.
    async fn on_joined(&mut self, joined: Result<Job, JoinError>) {
        match joined {
            Ok(Job::Task(done)) => self.on_task_done(done).await,
            Ok(Job::Routes {
                step,
                result,
                interrupt,
            }) => self.on_routes(step, result, interrupt).await,
            Err(e) => {
                // Jobs catch their own panics; only an abort can land here.
                tracing::error!(error = %e, "a run job ended abnormally");
            }
        }
    }

    /// Suspends the run when every job left is a task parked at a gate and nothing is ready:
    /// the parked tasks stop (the run's token), and nothing they or their steps end with is
    /// journaled.
    fn maybe_suspend(&mut self) {
        let Some(s) = &self.ctx.suspension else {
            return;
        };
        let only_gates = !self.jobs.is_empty() && s.parked() == self.jobs.len();
        if !only_gates || !self.ready.is_empty() || self.stopped || s.is_suspended() {
            return;
        }
        let gates = self
            .ctx
            .gates
            .as_ref()
            .map(|b| b.open_gates(&self.ctx.execution_id))
            .unwrap_or_default();
        s.suspend(gates);
        self.ctx.run_token.cancel();
    }

    /// Jobs outlived the run's deadline and grace: they are aborted and the run times out.
    async fn on_backstop(&mut self) {
        tracing::error!("jobs outlived the run's deadline and grace; aborting them");
        self.jobs.abort_all();
        while self.jobs.join_next().await.is_some() {}
        self.interrupt_run(Interrupt::Timeout);
        self.cancel_running().await;
    }

    async fn finish(mut self) -> ExecutionResult {
        if let Some(f) = self.ctx.durable.as_ref().and_then(|d| d.failure()) {
            // The store failed: the run ends with that failure, whatever else stopped it.
            self.failure = Some(f);
        }
        let success = self.failure.is_none();
        self.move_results();
        self.ctx.emit_run(|| WorkflowCompleteData { success }).await;
        let skipped_steps = self
            .state
            .iter()
            .enumerate()
            .filter(|(_, st)| matches!(st, StepState::Waiting | StepState::Skipped))
            .map(|(i, _)| self.name(i).to_owned())
            .collect();
        ExecutionResult {
            execution_id: String::from(&*self.ctx.execution_id),
            workflow_id: self.ctx.workflow.id.clone(),
            success,
            failure: self.failure,
            steps: self.completed,
            skipped_steps,
        }
    }

    /// Moves each completed step's shared views into its result, with the remote identities of
    /// its late ANY_SUCCESS losers.
    fn move_results(&mut self) {
        // Every job has ended, so each shared result is normally held only here: move it out.
        for (done, &s) in self.completed.iter_mut().zip(&self.completed_steps) {
            if done.status != StepStatus::Completed {
                continue;
            }
            if let Some(shared) = self.results[s].take() {
                done.task_results = match Arc::try_unwrap(shared) {
                    Ok(r) => r.task_results,
                    Err(shared) => shared.task_results.clone(),
                };
            }
            for (_, index, context_id, remote_task_id) in
                self.late_ids.iter_mut().filter(|l| l.0 == s)
            {
                if let Some(view) = done.task_results.get_mut(*index) {
                    view.context_id = view.context_id.take().or(context_id.take());
                    view.remote_task_id = view.remote_task_id.take().or(remote_task_id.take());
                }
            }
        }
    }

    fn take_views(&mut self, s: usize) -> Vec<TaskResultView> {
        match std::mem::replace(&mut self.state[s], StepState::Done) {
            // `filter_map`, not `flatten`: it collects in place, into the views' own allocation
            // (`flatten` knows no length up front and reserved room for four views, 1.3 KiB,
            // for a step of one).
            #[expect(
                clippy::filter_map_identity,
                reason = "collects in place; flatten does not"
            )]
            StepState::Running(r) => r.views.into_iter().filter_map(|v| v).collect(),
            other => {
                self.state[s] = other;
                Vec::new()
            }
        }
    }

    /// Cancels every running step after the backstop fired.
    async fn cancel_running(&mut self) {
        for s in 0..self.state.len() {
            if matches!(self.state[s], StepState::Running(_)) {
                let f = self.ctx.interrupt_failure(Interrupt::Timeout);
                let views = self.take_views(s);
                self.finish_step(s, StepStatus::Canceled, views, Some(f))
                    .await;
            } else if matches!(self.state[s], StepState::Routing) {
                self.state[s] = StepState::Done;
            }
        }
    }
}
