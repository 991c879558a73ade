//! A task's end and a step's end: `task_status_changed` / `task_response`, the ANY_SUCCESS win
//! that cancels the losers, the step's outcome by its type, `step_complete`, and the hand-over
//! of a completed step's result to its routes.

use super::{Executor, Running, StepState};
use crate::durable::{Durable, StepEnd};
use crate::journal::JournalRecord;
use crate::refill;
use crate::task::TaskDone;
use crate::view::{fail_view, subtask_view};
use a2aflow_model::event_data::{ErrorData, StepCompleteData, TaskResponseData};
use a2aflow_model::{
    ErrorCode, EventKind, Failure, StepResult, StepStatus, StepType, TaskOutcomeStatus,
    TaskResultView, UpstreamResult,
};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::Ordering;

impl Executor {
    /// A task job ended: its result is recorded, and the step ends when this settles it.
    pub(super) async fn on_task_done(&mut self, done: TaskDone) {
        let Some(won) = self.admit_done(&done) else {
            self.keep_late_ids(done);
            return;
        };
        let TaskDone {
            step: s,
            index,
            view,
            interrupt,
        } = done;
        let view = self.emit_task_end(s, index, *view).await;
        if let Some(i) = interrupt {
            self.interrupt_run(i);
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
            self.settle_won(s).await;
        } else if running.remaining == 0 {
            self.settle_step(s).await;
        }
    }

    /// Whether `done` is recorded (`Some`), and if so whether it wins its ANY_SUCCESS step.
    /// `None` for the result of a step that already ended (a late ANY_SUCCESS loser) and for a
    /// subtask recorded already.
    fn admit_done(&self, done: &TaskDone) -> Option<bool> {
        let StepState::Running(running) = &self.state[done.step] else {
            return None;
        };
        if running.views[done.index].is_some() {
            return None;
        }
        Some(
            self.ctx.step(done.step).step_type == StepType::AnySuccess
                && done.view.status == TaskOutcomeStatus::Completed
                && done.interrupt.is_none()
                && running.interrupt.is_none(),
        )
    }

    /// A late ANY_SUCCESS loser: the step already ended, the result is dropped; only its remote
    /// identity is kept for the run's result.
    fn keep_late_ids(&mut self, done: TaskDone) {
        if matches!(self.state[done.step], StepState::Running(_)) {
            return; // a duplicate: its subtask is recorded already
        }
        let view = *done.view;
        if view.context_id.is_some() || view.remote_task_id.is_some() {
            self.late_ids
                .push((done.step, done.index, view.context_id, view.remote_task_id));
        }
    }

    /// Emits a task's end: `task_status_changed`, then `task_response`, whose result shares
    /// `view`; the view is handed back (copied only when a consumer kept the event).
    async fn emit_task_end(&self, s: usize, index: usize, view: TaskResultView) -> TaskResultView {
        if !self.ctx.hub.enabled() {
            // No one listens: neither event is built, and the view is not shared.
            return view;
        }
        let name = self.name(s);
        // The two events of a task's end happen together: one time.
        let at = self.ctx.hub.moment();
        let event = (Some(name), Some(view.task_id.as_str()), at);
        self.ctx
            .hub
            .emit_refilled(event, EventKind::TaskStatusChanged, |p| {
                refill::task_status_changed(p, name, index, &view.agent_name, view.status)
            })
            .await;
        let view = Arc::new(view);
        let event = (Some(name), Some(view.task_id.as_str()), at);
        let payload = || TaskResponseData {
            step: self.plan.steps[s].name.clone(),
            subtask_index: index,
            result: view.clone(),
        };
        self.ctx
            .hub
            .emit_payload_at(event, || payload().into())
            .await;
        unshared(view)
    }

    /// A subtask of ANY_SUCCESS step `s` won: the others are cancelled and recorded CANCELED,
    /// and the step completes.
    async fn settle_won(&mut self, s: usize) {
        let StepState::Running(running) = &mut self.state[s] else {
            return;
        };
        let losers = cancel_losers(running, &self.ctx.execution_id, self.ctx.step(s));
        if let Some(d) = &self.ctx.durable {
            Box::pin(journal_cancels(d, &losers)).await;
        }
        for (j, lv) in &losers {
            self.emit_task_end(s, *j, lv.clone()).await;
        }
        let views = self.take_views(s);
        self.finish_step(s, StepStatus::Completed, views, None)
            .await;
    }

    /// Every subtask of step `s` ended: the step ends by its type's rule.
    async fn settle_step(&mut self, s: usize) {
        let interrupted = match &self.state[s] {
            StepState::Running(running) => running.interrupt,
            _ => None,
        };
        let views = self.take_views(s);
        if let Some(i) = interrupted {
            let f = self.ctx.interrupt_failure(i);
            self.finish_step(s, StepStatus::Canceled, views, Some(f))
                .await;
            return;
        }
        let ok = match self.ctx.step(s).step_type {
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
            let f = self.step_failure(s, &views);
            self.finish_step(s, StepStatus::Failed, views, Some(f))
                .await;
        }
    }

    /// The `workflow.step_failed` failure of step `s`, its failed tasks as the causes.
    fn step_failure(&self, s: usize, views: &[TaskResultView]) -> Failure {
        let causes: Vec<_> = views
            .iter()
            .filter(|v| v.status != TaskOutcomeStatus::Completed)
            .map(|v| {
                json!({
                    "taskId": v.task_id,
                    "agent": v.agent_name,
                    "code": v.error_code,
                    "message": v.error,
                })
            })
            .collect();
        let first_code = views
            .iter()
            .find_map(|v| v.error_code.clone())
            .unwrap_or_default();
        Failure::new(
            ErrorCode::WorkflowStepFailed,
            format!("Step execution failed: step '{}'", self.name(s)),
        )
        .with_detail("step", self.name(s))
        .with_detail("code", first_code)
        .with_detail("causes", causes)
    }

    /// Ends step `s` with `status`: `step_complete` (and `error` for a failed step), its result
    /// recorded, and — completed and the run going on — its routes.
    pub(super) async fn finish_step(
        &mut self,
        s: usize,
        status: StepStatus,
        views: Vec<TaskResultView>,
        failure: Option<Failure>,
    ) {
        self.state[s] = StepState::Done;
        let ctx = self.ctx.clone();
        let step = ctx.step(s);
        let views = Arc::new(views);
        ctx.emit_step(&step.name, || StepCompleteData {
            step: self.plan.steps[s].name.clone(),
            status,
            results: views.clone(),
            failure: failure.clone(),
        })
        .await;
        let views = unshared(views);
        if status == StepStatus::Failed
            && let Some(f) = &failure
        {
            ctx.emit_step(&step.name, || ErrorData {
                step: Some(step.name.clone()),
                error: "Step execution failed".to_owned(),
                error_code: f.code.clone(),
                failure: f.clone(),
                steps: None,
            })
            .await;
            self.fail_run(f.clone());
        }
        if let Some(d) = ctx.durable.as_ref().filter(|_| !ctx.is_suspended()) {
            let end = StepEnd {
                name: &step.name,
                step_type: step.step_type,
                status,
                views: &views,
                failure: failure.as_ref(),
            };
            Box::pin(d.step_finished(end)).await;
        }
        if let Some(result) = self.record_step(s, status, views, failure) {
            self.route(s, result).await;
        }
    }

    /// Records the result of step `s`; a completed step's is also shared with its successors
    /// (and returned for its routes).
    fn record_step(
        &mut self,
        s: usize,
        status: StepStatus,
        views: Vec<TaskResultView>,
        failure: Option<Failure>,
    ) -> Option<Arc<UpstreamResult>> {
        let step = self.ctx.step(s);
        let name = &self.plan.steps[s].name;
        // A completed step's views live once, in the shared `results` entry its successors read;
        // `finish` moves them into the step's result (no copy once every reader is gone).
        let (task_results, result) = if status == StepStatus::Completed {
            let result = Arc::new(UpstreamResult {
                step_name: name.clone(),
                task_results: views,
            });
            (Vec::new(), Some(result))
        } else {
            (views, None)
        };
        self.completed.push(StepResult {
            step_name: name.clone(),
            step_type: step.step_type,
            status,
            task_results,
            failure,
        });
        self.completed_steps.push(s);
        if let Some(result) = &result {
            self.results[s] = Some(result.clone());
        }
        result
    }
}

/// Journals a cancel for each loser whose remote task is known (resume sends the ones the
/// client did not get to).
async fn journal_cancels(d: &Durable, losers: &[(usize, TaskResultView)]) {
    let records: Vec<JournalRecord> = losers
        .iter()
        .filter_map(|(_, lv)| {
            let remote = d.remote_id(&lv.task_id)?;
            Some(JournalRecord::CancelRequested {
                local_task_id: Some(lv.task_id.to_string()),
                remote_task_id: Some(remote),
            })
        })
        .collect();
    if !records.is_empty() {
        // A failure stops the run (see `Durable::write`).
        let _ = d.write(records).await;
    }
}

/// Cancels every subtask of a won ANY_SUCCESS step that has not ended, records each CANCELED,
/// and returns the losers' views for their events.
fn cancel_losers(
    running: &mut Running,
    execution_id: &str,
    step: &a2aflow_model::Step,
) -> Vec<(usize, TaskResultView)> {
    let mut losers = Vec::new();
    for (j, v) in running.views.iter_mut().enumerate() {
        if v.is_none() {
            let (token, closed) = &running.handles[j];
            closed.store(true, Ordering::Release);
            token.cancel();
            let mut lv = subtask_view(execution_id, step, j);
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
    losers
}

/// The value of `shared` once an event that shared it has been delivered: moved out when no
/// consumer kept the event (a counting sink, no sink), copied when one did.
pub(crate) fn unshared<T: Clone>(shared: Arc<T>) -> T {
    Arc::try_unwrap(shared).unwrap_or_else(|kept| (*kept).clone())
}
