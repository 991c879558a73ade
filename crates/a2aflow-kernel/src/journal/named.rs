//! The step and run ends as a driver journals them: `stepEnded` and `runEnded` name each task
//! result a `taskFinished` record of the same journal already holds instead of repeating it
//! (a wide step's results were written three times: once per task, again in its step's end,
//! again in the run's). [`RunJournal::expand_named`] turns them back into the `stepFinished` /
//! `runFinished` records they stand for when a store reads a journal, so every reader sees one
//! shape; journals written before (full `stepFinished` / `runFinished`) read as they are.

use super::{JournalEntry, JournalRecord, RunJournal, StoreError};
use a2aflow_model::{
    ErrorCode, ExecutionResult, Failure, StepResult, StepStatus, StepType, TaskResultView,
};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// One task result in a `stepEnded` or `runEnded` record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum TaskSlot {
    /// The result the last `taskFinished` record of this local task id (earlier in the same
    /// journal) holds.
    Journaled(String),
    /// The result itself (a task without such a record, or whose result changed after it: an
    /// ANY_SUCCESS loser recorded cancelled, say).
    View(Box<TaskResultView>),
}

/// A [`StepResult`] whose task results may be named ([`TaskSlot`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NamedStepResult {
    /// Step name.
    pub step_name: String,
    /// Step type.
    pub step_type: StepType,
    /// How it ended.
    pub status: StepStatus,
    /// One slot per subtask, in the step result's order.
    pub task_results: Vec<TaskSlot>,
    /// The step's failure, when failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
}

/// An [`ExecutionResult`] whose steps' task results may be named ([`TaskSlot`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NamedExecutionResult {
    /// The run's execution id.
    pub execution_id: String,
    /// The workflow id.
    pub workflow_id: String,
    /// True when the run succeeded.
    pub success: bool,
    /// Why it failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    /// Steps that ran, in completion order.
    pub steps: Vec<NamedStepResult>,
    /// Steps that never ran.
    #[serde(default)]
    pub skipped_steps: Vec<String>,
}

impl NamedStepResult {
    /// `result` with each task result that `journaled` vouches for (it returns true when the
    /// view is exactly what the journal's last `taskFinished` of that task holds) named.
    pub fn naming(result: StepResult, mut journaled: impl FnMut(&TaskResultView) -> bool) -> Self {
        let StepResult {
            step_name,
            step_type,
            status,
            task_results,
            failure,
        } = result;
        NamedStepResult {
            step_name: step_name.into(),
            step_type,
            status,
            task_results: task_results
                .into_iter()
                .map(|v| {
                    if journaled(&v) {
                        TaskSlot::Journaled(v.task_id.into())
                    } else {
                        TaskSlot::View(Box::new(v))
                    }
                })
                .collect(),
            failure,
        }
    }

    /// [`NamedStepResult::naming`] for a borrowed result: only the views not named are copied.
    pub fn naming_ref(result: &StepResult, journaled: impl FnMut(&TaskResultView) -> bool) -> Self {
        NamedStepResult::naming_views(
            result.step_name.to_string(),
            result.step_type,
            result.status,
            &result.task_results,
            result.failure.clone(),
            journaled,
        )
    }

    /// A step's end from its parts, its task results borrowed: each one `journaled` vouches for
    /// is named, only the others are copied.
    pub fn naming_views(
        step_name: String,
        step_type: StepType,
        status: StepStatus,
        views: &[TaskResultView],
        failure: Option<Failure>,
        mut journaled: impl FnMut(&TaskResultView) -> bool,
    ) -> Self {
        NamedStepResult {
            step_name,
            step_type,
            status,
            task_results: views
                .iter()
                .map(|v| {
                    if journaled(v) {
                        TaskSlot::Journaled(v.task_id.to_string())
                    } else {
                        TaskSlot::View(Box::new(v.clone()))
                    }
                })
                .collect(),
            failure,
        }
    }

    /// The step result, each named task result taken from `finished` (local task id → the
    /// last `taskFinished` result before this record); `None` names the first id it lacks.
    fn expand(&self, finished: &HashMap<&str, &TaskResultView>) -> Result<StepResult, String> {
        let task_results = self
            .task_results
            .iter()
            .map(|slot| match slot {
                TaskSlot::View(v) => Ok(v.as_ref().clone()),
                TaskSlot::Journaled(id) => finished
                    .get(id.as_str())
                    .map(|v| (*v).clone())
                    .ok_or_else(|| id.clone()),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(StepResult {
            step_name: self.step_name.as_str().into(),
            step_type: self.step_type,
            status: self.status,
            task_results,
            failure: self.failure.clone(),
        })
    }
}

impl NamedExecutionResult {
    /// `result` with each task result `journaled` vouches for named (see
    /// [`NamedStepResult::naming`]); only the views not named are copied.
    pub fn naming(
        result: &ExecutionResult,
        mut journaled: impl FnMut(&TaskResultView) -> bool,
    ) -> Self {
        NamedExecutionResult {
            execution_id: result.execution_id.clone(),
            workflow_id: result.workflow_id.clone(),
            success: result.success,
            failure: result.failure.clone(),
            steps: result
                .steps
                .iter()
                .map(|s| NamedStepResult::naming_ref(s, &mut journaled))
                .collect(),
            skipped_steps: result.skipped_steps.clone(),
        }
    }

    fn expand(&self, finished: &HashMap<&str, &TaskResultView>) -> Result<ExecutionResult, String> {
        Ok(ExecutionResult {
            execution_id: self.execution_id.clone(),
            workflow_id: self.workflow_id.clone(),
            success: self.success,
            failure: self.failure.clone(),
            steps: self
                .steps
                .iter()
                .map(|s| s.expand(finished))
                .collect::<Result<_, _>>()?,
            skipped_steps: self.skipped_steps.clone(),
        })
    }
}

impl RunJournal {
    /// The journal with each `stepEnded` / `runEnded` record replaced by the `stepFinished` /
    /// `runFinished` record it stands for (same sequence number), its named task results taken
    /// from the last `taskFinished` record of each task before it. `store.corrupt` when one
    /// names a task with no such record. A journal without them is returned as it is. Stores
    /// call this when they read a journal back.
    pub fn expand_named(mut self) -> Result<Self, StoreError> {
        let mut expanded: Vec<(usize, JournalRecord)> = Vec::new();
        {
            let mut finished: HashMap<&str, &TaskResultView> = HashMap::new();
            for (at, entry) in self.entries.iter().enumerate() {
                let whole = match &entry.record {
                    JournalRecord::TaskFinished {
                        local_task_id,
                        result,
                    } => {
                        finished.insert(local_task_id.as_str(), result);
                        continue;
                    }
                    JournalRecord::StepEnded { result } => result
                        .expand(&finished)
                        .map(|result| JournalRecord::StepFinished { result }),
                    JournalRecord::RunEnded { result } => result
                        .expand(&finished)
                        .map(|result| JournalRecord::RunFinished { result }),
                    _ => continue,
                };
                let record =
                    whole.map_err(|missing| unresolved(&self.execution_id, entry, &missing))?;
                expanded.push((at, record));
            }
        }
        for (at, record) in expanded {
            if let Some(entry) = self.entries.get_mut(at) {
                entry.record = record;
            }
        }
        Ok(self)
    }
}

/// `store.corrupt`: `entry` names a task result the journal does not hold before it.
fn unresolved(execution_id: &str, entry: &JournalEntry, missing: &str) -> StoreError {
    StoreError::new(
        ErrorCode::StoreCorrupt,
        format!(
            "record {} ({}) of run '{execution_id}' names the result of task '{missing}', but \
             no taskFinished record of that task comes before it",
            entry.seq,
            entry.record.kind()
        ),
    )
    .with_detail("executionId", execution_id)
    .with_detail("seq", entry.seq)
    .with_detail("localTaskId", missing)
}
