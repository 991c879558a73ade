//! The scheduler: an online ready queue over the precomputed [`Plan`], dead-path elimination,
//! step policies, routing and the run's stop rules. It owns every spawned task of the run in one
//! [`JoinSet`] and drains it before returning, so nothing outlives the run.

use crate::client::RemoteClient;
use crate::control_point::ControlPoint;
use crate::events::EventHub;
use crate::graph::Plan;
use crate::panic_guard::CatchUnwind;
use crate::task::{Guarded, Interrupt, TaskDone, fail_view, guard, panicked, run_task};
use a2aflow_model::{
    ErrorCode, EventKind, ExecutionResult, Failure, RouteDecision, RouteRequest, StepResult,
    StepStatus, StepType, TaskInput, TaskOutcomeStatus, TaskRequest, TaskResultView,
    UpstreamResult, Workflow, WorkflowInput,
};
use serde_json::json;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// What every job of one run shares.
pub(crate) struct RunShared {
    pub(crate) execution_id: Arc<str>,
    pub(crate) workflow: Arc<Workflow>,
    pub(crate) cp: Arc<dyn ControlPoint>,
    pub(crate) client: Arc<dyn RemoteClient>,
    pub(crate) hub: Arc<EventHub>,
    pub(crate) deadline: Instant,
    pub(crate) timeout: Duration,
    pub(crate) grace: Duration,
    pub(crate) run_token: CancellationToken,
    pub(crate) semaphore: Option<Arc<Semaphore>>,
    pub(crate) runtime_intent: Option<String>,
    /// Where this run sits in a delegation tree (catalog, policy, depth, ancestry).
    pub(crate) delegation: crate::delegation::Scope,
}

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

enum StepState {
    Waiting,
    Running(Box<Running>),
    Routing,
    Done,
    Skipped,
}

/// One run of the scheduler over a validated workflow.
pub(crate) struct Executor {
    sh: Arc<RunShared>,
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
}

/// See [`Executor::late_ids`].
type LateIds = (usize, usize, Option<String>, Option<String>);

impl Executor {
    pub(crate) fn new(sh: Arc<RunShared>, plan: Arc<Plan>) -> Self {
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
            sh,
            plan,
        }
    }

    fn name(&self, s: usize) -> &str {
        &self.sh.workflow.steps[s].name
    }

    async fn emit(
        &self,
        kind: EventKind,
        step: Option<usize>,
        data: impl FnOnce() -> serde_json::Value,
    ) {
        let name = step.map(|s| self.name(s));
        self.sh.hub.emit(kind, name, None, None, data).await;
    }

    fn fail_run(&mut self, f: Failure) {
        self.stopped = true;
        if self.failure.is_none() {
            self.failure = Some(f);
        }
    }

    /// Runs the workflow to its end and returns the result.
    pub(crate) async fn run(mut self) -> ExecutionResult {
        let backstop = self.sh.deadline + self.sh.grace + Duration::from_secs(1);
        let sleep = tokio::time::sleep_until(backstop);
        tokio::pin!(sleep);
        loop {
            while let Some(s) = self.ready.pop_front() {
                if self.stopped {
                    continue;
                }
                if self.sh.run_token.is_cancelled() {
                    self.fail_run(Interrupt::Cancelled.failure(self.sh.timeout.as_millis()));
                    continue;
                }
                if Instant::now() >= self.sh.deadline {
                    self.fail_run(Interrupt::Timeout.failure(self.sh.timeout.as_millis()));
                    continue;
                }
                self.start_step(s).await;
            }
            if self.jobs.is_empty() {
                break;
            }
            let next = tokio::select! {
                biased;
                j = self.jobs.join_next() => j,
                _ = sleep.as_mut() => None,
            };
            match next {
                Some(Ok(Job::Task(done))) => self.on_task_done(done).await,
                Some(Ok(Job::Routes {
                    step,
                    result,
                    interrupt,
                })) => self.on_routes(step, result, interrupt).await,
                Some(Err(e)) => {
                    // Jobs catch their own panics; only an abort can land here.
                    tracing::error!(error = %e, "a run job ended abnormally");
                }
                None => {
                    tracing::error!("jobs outlived the run's deadline and grace; aborting them");
                    self.jobs.abort_all();
                    while self.jobs.join_next().await.is_some() {}
                    self.fail_run(Interrupt::Timeout.failure(self.sh.timeout.as_millis()));
                    self.cancel_running().await;
                }
            }
        }
        self.finish().await
    }

    async fn finish(mut self) -> ExecutionResult {
        let success = self.failure.is_none();
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
        self.emit(
            EventKind::WorkflowComplete,
            None,
            || json!({"success": success}),
        )
        .await;
        let skipped_steps = self
            .state
            .iter()
            .enumerate()
            .filter(|(_, st)| matches!(st, StepState::Waiting | StepState::Skipped))
            .map(|(i, _)| self.name(i).to_owned())
            .collect();
        ExecutionResult {
            execution_id: self.sh.execution_id.to_string(),
            workflow_id: self.sh.workflow.id.clone(),
            success,
            failure: self.failure,
            steps: self.completed,
            skipped_steps,
        }
    }

    /// Builds the context window of step `s` from steps that completed (shared, not copied).
    fn workflow_input(&self, s: usize) -> WorkflowInput {
        WorkflowInput {
            runtime_intent: self.sh.runtime_intent.clone(),
            upstream_results: self.plan.steps[s]
                .context
                .iter()
                .filter_map(|&c| self.results[c].clone())
                .collect(),
        }
    }

    async fn start_step(&mut self, s: usize) {
        let sh = self.sh.clone();
        let step = &sh.workflow.steps[s];
        let span = tracing::info_span!("step", step = %step.name);
        self.emit(
            EventKind::StepStart,
            Some(s),
            || json!({"step": step.name, "stepType": step.step_type.as_str()}),
        )
        .await;
        let n = step.subtasks.len();
        if n == 0 {
            self.state[s] = StepState::Running(Box::new(Running {
                views: Vec::new(),
                remaining: 0,
                handles: Vec::new(),
                interrupt: None,
            }));
            self.finish_step(s, StepStatus::Completed, Vec::new(), None)
                .await;
            return;
        }
        let mut input = Some(self.workflow_input(s));
        let mut running = Running {
            views: vec![None; n],
            remaining: n,
            handles: Vec::with_capacity(n),
            interrupt: None,
        };
        for (i, sub) in step.subtasks.iter().enumerate() {
            // A run cancelled (or past its deadline) while its step was being started, e.g. by
            // the host's sink on `step_start`, announces no further task: the rest end CANCELED
            // here, with no `task_request` event, no callback and no request.
            if let Some(interrupt) = crate::task::interrupted(&sh.run_token, sh.deadline) {
                let failure = interrupt.failure(sh.timeout.as_millis());
                let mut view = subtask_view(&sh, s, i);
                fail_view(&mut view, TaskOutcomeStatus::Canceled, failure.clone());
                running.views[i] = Some(view);
                running.remaining -= 1;
                running.interrupt.get_or_insert(interrupt);
                // Handles stay indexed by subtask; this one has nothing left to stop.
                running
                    .handles
                    .push((CancellationToken::new(), Arc::new(AtomicBool::new(true))));
                self.fail_run(failure);
                continue;
            }
            let workflow_input = if i + 1 == n {
                input.take().unwrap_or_default()
            } else {
                input.clone().unwrap_or_default()
            };
            let request = TaskRequest {
                execution_id: sh.execution_id.to_string(),
                workflow_id: sh.workflow.id.clone(),
                step_name: step.name.clone(),
                step_type: step.step_type,
                subtask_index: i,
                local_task_id: local_task_id(&sh.execution_id, &step.name, i),
                agent: sub.agent.clone(),
                skill: sub.skill.clone(),
                description: sub.description.clone(),
                input: TaskInput {
                    text: (!sub.description.trim().is_empty()).then(|| sub.description.clone()),
                    data: None,
                },
                workflow_input,
            };
            sh.hub
                .emit(
                    EventKind::TaskRequest,
                    Some(&step.name),
                    Some(&request.local_task_id),
                    None,
                    || {
                        json!({"step": step.name, "agent": sub.agent, "skill": sub.skill,
                               "task": sub.description, "subtaskIndex": i,
                               "taskId": request.local_task_id})
                    },
                )
                .await;
            let token = sh.run_token.child_token();
            let closed = Arc::new(AtomicBool::new(false));
            running.handles.push((token.clone(), closed.clone()));
            let task_span = tracing::info_span!(parent: &span, "task", task_id = %request.local_task_id, agent = %sub.agent);
            let job_sh = sh.clone();
            let sh_panic = sh.clone();
            self.jobs.spawn(
                async move {
                    match CatchUnwind::new(Box::pin(run_task(job_sh, s, i, request, token, closed)))
                        .await
                    {
                        Ok(done) => Job::Task(done),
                        Err(m) => {
                            let mut view = subtask_view(&sh_panic, s, i);
                            fail_view(
                                &mut view,
                                TaskOutcomeStatus::Failed,
                                Failure::new(
                                    ErrorCode::WorkflowExecutionFailed,
                                    format!("the task panicked: {m}"),
                                ),
                            );
                            Job::Task(TaskDone {
                                step: s,
                                index: i,
                                view,
                                interrupt: None,
                            })
                        }
                    }
                }
                .instrument(task_span),
            );
        }
        if running.remaining == 0 {
            // Every task was stopped before it was announced.
            let failure = running.interrupt.map(|i| i.failure(sh.timeout.as_millis()));
            let views = running.views.into_iter().flatten().collect();
            self.finish_step(s, StepStatus::Canceled, views, failure)
                .await;
            return;
        }
        self.state[s] = StepState::Running(Box::new(running));
    }

    async fn emit_task_end(&self, s: usize, index: usize, view: &TaskResultView) {
        if !self.sh.hub.enabled() {
            return;
        }
        let name = self.name(s);
        let status = match view.status {
            TaskOutcomeStatus::Completed => "COMPLETED",
            TaskOutcomeStatus::Failed => "FAILED",
            TaskOutcomeStatus::Canceled => "CANCELED",
        };
        self.sh
            .hub
            .emit(EventKind::TaskStatusChanged, Some(name), Some(&view.task_id), None, || {
                json!({"step": name, "subtaskIndex": index, "agent": view.agent_name, "status": status})
            })
            .await;
        self.sh
            .hub
            .emit(
                EventKind::TaskResponse,
                Some(name),
                Some(&view.task_id),
                None,
                || json!({"step": name, "subtaskIndex": index, "result": view}),
            )
            .await;
    }

    async fn on_task_done(&mut self, done: TaskDone) {
        let TaskDone {
            step: s,
            index,
            view,
            interrupt,
        } = done;
        let (won, duplicate) = match &self.state[s] {
            StepState::Running(running) => (
                self.sh.workflow.steps[s].step_type == StepType::AnySuccess
                    && view.status == TaskOutcomeStatus::Completed
                    && interrupt.is_none()
                    && running.interrupt.is_none(),
                running.views[index].is_some(),
            ),
            // A late ANY_SUCCESS loser: the step already ended, the result is dropped; only its
            // remote identity is kept for the run's result.
            _ => {
                if view.context_id.is_some() || view.remote_task_id.is_some() {
                    self.late_ids
                        .push((s, index, view.context_id, view.remote_task_id));
                }
                return;
            }
        };
        if duplicate {
            return;
        }
        self.emit_task_end(s, index, &view).await;
        if let Some(i) = interrupt {
            self.fail_run(i.failure(self.sh.timeout.as_millis()));
        }
        let StepState::Running(running) = &mut self.state[s] else {
            return;
        };
        running.remaining -= 1;
        if interrupt.is_some() && running.interrupt.is_none() {
            running.interrupt = interrupt;
        }
        running.views[index] = Some(view);
        if won {
            let mut losers = Vec::new();
            for (j, v) in running.views.iter_mut().enumerate() {
                if v.is_none() {
                    let (token, closed) = &running.handles[j];
                    closed.store(true, Ordering::Release);
                    token.cancel();
                    let mut lv = subtask_view(&self.sh, s, j);
                    fail_view(
                        &mut lv,
                        TaskOutcomeStatus::Canceled,
                        Failure::new(
                            ErrorCode::WorkflowCancelled,
                            "cancelled: another subtask of this ANY_SUCCESS step succeeded first",
                        ),
                    );
                    *v = Some(lv.clone());
                    losers.push((j, lv));
                }
            }
            running.remaining = 0;
            for (j, lv) in &losers {
                self.emit_task_end(s, *j, lv).await;
            }
            let views = self.take_views(s);
            self.finish_step(s, StepStatus::Completed, views, None)
                .await;
            return;
        }
        if running.remaining > 0 {
            return;
        }
        let interrupted = running.interrupt;
        let views = self.take_views(s);
        if let Some(i) = interrupted {
            let f = i.failure(self.sh.timeout.as_millis());
            self.finish_step(s, StepStatus::Canceled, views, Some(f))
                .await;
            return;
        }
        let step_type = self.sh.workflow.steps[s].step_type;
        let ok = match step_type {
            StepType::AnySuccess => views
                .iter()
                .any(|v| v.status == TaskOutcomeStatus::Completed),
            StepType::AllSuccess | StepType::SelfLoop => views
                .iter()
                .all(|v| v.status == TaskOutcomeStatus::Completed),
        };
        if ok {
            self.finish_step(s, StepStatus::Completed, views, None)
                .await;
        } else {
            let causes: Vec<_> = views
                .iter()
                .filter(|v| v.status != TaskOutcomeStatus::Completed)
                .map(|v| json!({"taskId": v.task_id, "agent": v.agent_name, "code": v.error_code, "message": v.error}))
                .collect();
            let first_code = views
                .iter()
                .find_map(|v| v.error_code.clone())
                .unwrap_or_default();
            let f = Failure::new(
                ErrorCode::WorkflowStepFailed,
                format!("Step execution failed: step '{}'", self.name(s)),
            )
            .with_detail("step", self.name(s))
            .with_detail("code", first_code)
            .with_detail("causes", causes);
            self.finish_step(s, StepStatus::Failed, views, Some(f))
                .await;
        }
    }

    fn take_views(&mut self, s: usize) -> Vec<TaskResultView> {
        match std::mem::replace(&mut self.state[s], StepState::Done) {
            StepState::Running(r) => r.views.into_iter().flatten().collect(),
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
                let f = Interrupt::Timeout.failure(self.sh.timeout.as_millis());
                let views = self.take_views(s);
                self.finish_step(s, StepStatus::Canceled, views, Some(f))
                    .await;
            } else if matches!(self.state[s], StepState::Routing) {
                self.state[s] = StepState::Done;
            }
        }
    }

    async fn finish_step(
        &mut self,
        s: usize,
        status: StepStatus,
        views: Vec<TaskResultView>,
        failure: Option<Failure>,
    ) {
        self.state[s] = StepState::Done;
        let sh = self.sh.clone();
        let step = &sh.workflow.steps[s];
        self.emit(
            EventKind::StepComplete,
            Some(s),
            || json!({"step": step.name, "status": status, "results": views, "failure": failure}),
        )
        .await;
        if status == StepStatus::Failed {
            if let Some(f) = &failure {
                self.emit(EventKind::Error, Some(s), || {
                    json!({"step": step.name, "error": "Step execution failed",
                           "errorCode": f.code, "failure": f})
                })
                .await;
                self.fail_run(f.clone());
            }
        }
        // A completed step's views live once, in the shared `results` entry its successors read;
        // `finish` moves them into the step's result (no copy once every reader is gone).
        let (task_results, result) = if status == StepStatus::Completed {
            let result = Arc::new(UpstreamResult {
                step_name: step.name.clone(),
                task_results: views,
            });
            (Vec::new(), Some(result))
        } else {
            (views, None)
        };
        self.completed.push(StepResult {
            step_name: step.name.clone(),
            step_type: step.step_type,
            status,
            task_results,
            failure,
        });
        self.completed_steps.push(s);
        let Some(result) = result else { return };
        self.results[s] = Some(result.clone());
        if self.stopped {
            return;
        }
        if !self.plan.steps[s].has_conditional {
            self.apply_routes(s, None).await;
            return;
        }
        self.state[s] = StepState::Routing;
        let job_sh = sh.clone();
        self.jobs.spawn(
            async move {
                let (result, interrupt) = evaluate_routes(&job_sh, s, result).await;
                Job::Routes {
                    step: s,
                    result,
                    interrupt,
                }
            }
            .instrument(tracing::info_span!("routes", step = %step.name)),
        );
    }

    async fn on_routes(
        &mut self,
        s: usize,
        result: Result<Vec<RouteDecision>, (usize, Failure)>,
        interrupt: Option<Interrupt>,
    ) {
        self.state[s] = StepState::Done;
        if let Some(i) = interrupt {
            self.fail_run(i.failure(self.sh.timeout.as_millis()));
            return;
        }
        match result {
            Ok(decisions) => {
                if !self.stopped {
                    self.apply_routes(s, Some(decisions)).await;
                }
            }
            Err((e, cause)) => {
                let source = self.name(s).to_owned();
                let target = self.sh.workflow.steps[s].next[e].step.clone();
                let f = Failure::new(
                    ErrorCode::WorkflowRouteFailed,
                    format!(
                        "on_route failed for edge {source} -> {target}: {}",
                        cause.message
                    ),
                )
                .with_detail("source", source.clone())
                .with_detail("target", target)
                .with_detail("cause", json!(cause));
                self.emit(EventKind::Error, Some(s), || {
                    json!({"step": source, "error": f.message, "errorCode": f.code, "failure": f})
                })
                .await;
                self.fail_run(f);
            }
        }
    }

    /// Emits the decisions and resolves the edges. `None` means every edge is unconditional.
    async fn apply_routes(&mut self, s: usize, decisions: Option<Vec<RouteDecision>>) {
        let sh = self.sh.clone();
        let step = &sh.workflow.steps[s];
        let allowed = |e: usize| decisions.as_ref().is_none_or(|d| d[e].allowed);
        if sh.hub.enabled() {
            for (e, edge) in step.next.iter().enumerate() {
                let reason = match &decisions {
                    Some(d) => d[e].reason.as_deref(),
                    None => Some("unconditional edge"),
                };
                sh.hub
                    .emit(EventKind::RouteDecision, Some(&step.name), None, None, || {
                        json!({"step": step.name, "next": edge.step, "condition": edge.condition,
                               "conditional": !edge.is_unconditional(), "allowed": allowed(e),
                               "reason": reason})
                    })
                    .await;
            }
        }
        for e in 0..step.next.len() {
            if let Some(t) = self.plan.steps[s].out[e].target {
                self.resolve(t, allowed(e));
            }
        }
    }

    /// Resolves one incoming edge of `t`; a step whose edges all resolved without activation
    /// never runs, and its own outgoing edges resolve as not activated (dead-path elimination).
    fn resolve(&mut self, t: usize, activated: bool) {
        if !self.resolve_edge(t, activated) {
            return;
        }
        // Dead path: only now is a work list needed (a stack, as before: same ready order).
        let mut work: Vec<usize> = self.plan.steps[t]
            .out
            .iter()
            .filter_map(|e| e.target)
            .collect();
        while let Some(x) = work.pop() {
            if self.resolve_edge(x, false) {
                work.extend(self.plan.steps[x].out.iter().filter_map(|e| e.target));
            }
        }
    }

    /// Resolves one incoming edge of `t`; true when `t` became dead (all resolved, none active).
    fn resolve_edge(&mut self, t: usize, activated: bool) -> bool {
        self.unresolved[t] = self.unresolved[t].saturating_sub(1);
        self.activated[t] |= activated;
        if self.unresolved[t] != 0 {
            return false;
        }
        if self.activated[t] {
            self.ready.push_back(t);
            return false;
        }
        self.state[t] = StepState::Skipped;
        true
    }
}

/// The stable local id of subtask `i` of a step: `<execution id>:<step name>:<i>` (built without
/// the formatting machinery: it is made once per task).
fn local_task_id(execution_id: &str, step: &str, i: usize) -> String {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = i;
    loop {
        at -= 1;
        // `rest % 10` is below 10, so the cast cannot truncate.
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let mut id = String::with_capacity(execution_id.len() + step.len() + 2 + digits.len() - at);
    id.push_str(execution_id);
    id.push(':');
    id.push_str(step);
    id.push(':');
    for &d in &digits[at..] {
        id.push(char::from(d));
    }
    id
}

/// The view of subtask `i` of step `s` before it produced anything.
fn subtask_view(sh: &RunShared, s: usize, i: usize) -> TaskResultView {
    let step = &sh.workflow.steps[s];
    let sub = &step.subtasks[i];
    TaskResultView {
        agent_name: sub.agent.clone(),
        skill: sub.skill.clone(),
        task_id: local_task_id(&sh.execution_id, &step.name, i),
        task_description: sub.description.clone(),
        status: TaskOutcomeStatus::Completed,
        context_id: None,
        remote_task_id: None,
        outputs: Vec::new(),
        received_messages: Vec::new(),
        error: None,
        error_code: None,
        error_details: serde_json::Map::new(),
    }
}

type RouteOutcome = (
    Result<Vec<RouteDecision>, (usize, Failure)>,
    Option<Interrupt>,
);

/// Evaluates every outgoing edge of `s` concurrently; all decisions are in before it returns.
async fn evaluate_routes(
    sh: &Arc<RunShared>,
    s: usize,
    source: Arc<UpstreamResult>,
) -> RouteOutcome {
    let step = &sh.workflow.steps[s];
    let mut set: JoinSet<(usize, Guarded<Result<RouteDecision, crate::CallbackError>>)> =
        JoinSet::new();
    let mut decisions: Vec<Option<Result<RouteDecision, Failure>>> = vec![None; step.next.len()];
    for (e, edge) in step.next.iter().enumerate() {
        if edge.is_unconditional() {
            decisions[e] = Some(Ok(RouteDecision::allow("unconditional edge")));
            continue;
        }
        let request = RouteRequest {
            execution_id: sh.execution_id.to_string(),
            source_step: step.name.clone(),
            target_step: edge.step.clone(),
            condition: edge.condition.clone(),
            source_result: (*source).clone(),
            runtime_intent: sh.runtime_intent.clone(),
        };
        let cp = sh.cp.clone();
        let token = sh.run_token.clone();
        let deadline = sh.deadline;
        set.spawn(
            async move {
                let sleep = tokio::time::sleep_until(deadline);
                tokio::pin!(sleep);
                (
                    e,
                    guard(cp.on_route(request), &token, sleep, deadline).await,
                )
            }
            .in_current_span(),
        );
    }
    let mut interrupt = None;
    while let Some(joined) = set.join_next().await {
        let Ok((e, g)) = joined else { continue };
        decisions[e] = Some(match g {
            Guarded::Done(Ok(d)) => Ok(d),
            Guarded::Done(Err(err)) => Err(err.into_failure()),
            Guarded::Panicked(m) => Err(panicked("on_route", &m)),
            Guarded::Interrupted(Interrupt::Timeout) => {
                Err(Interrupt::Timeout.failure(sh.timeout.as_millis()))
            }
            Guarded::Interrupted(Interrupt::Cancelled) => {
                interrupt = Some(Interrupt::Cancelled);
                Err(Interrupt::Cancelled.failure(sh.timeout.as_millis()))
            }
        });
    }
    if interrupt.is_some() {
        return (Ok(Vec::new()), interrupt);
    }
    let mut out = Vec::with_capacity(decisions.len());
    for (e, d) in decisions.into_iter().enumerate() {
        match d {
            Some(Ok(d)) => out.push(d),
            Some(Err(f)) => return (Err((e, f)), None),
            None => {
                return (
                    Err((
                        e,
                        Failure::new(
                            ErrorCode::WorkflowExecutionFailed,
                            "on_route gave no decision",
                        ),
                    )),
                    None,
                );
            }
        }
    }
    (Ok(out), None)
}
