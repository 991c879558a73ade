//! Reading a run's journal back in the test process: where a kill landed (what the killed
//! process had journaled), and that no host callback was answered twice across kill and resume.

use a2aflow::StoreLocation;
use a2aflow::kernel::journal::{CallbackAnswered, JournalRecord, RunJournal};
use a2aflow::model::a2a::TaskState;
use std::collections::BTreeMap;
use std::path::Path;

/// The journal of `execution_id` in the store file at `store`; `None` when the store has no
/// such run (killed before its first record).
pub async fn load(store: &Path, execution_id: &str) -> Option<RunJournal> {
    let location = StoreLocation::parse(&store.display().to_string()).expect("a store path");
    let store = location.open_existing().await.expect("the store opens");
    match store.load(execution_id).await {
        Ok(journal) => Some(journal),
        Err(e) if e.is(a2aflow::model::ErrorCode::StoreUnknownExecution) => None,
        Err(e) => panic!("the journal of {execution_id}: {e}"),
    }
}

fn records(journal: &RunJournal) -> impl Iterator<Item = &JournalRecord> {
    journal.entries.iter().map(|e| &e.record)
}

/// How many times each host callback was answered, by callback and key
/// (`route ask->left`, `negotiation TASK#1/1`, `task TASK#1`, `self TASK#1`).
pub fn answers(journal: &RunJournal) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for record in records(journal) {
        let JournalRecord::CallbackAnswered(answered) = record else {
            continue;
        };
        let key = match answered {
            CallbackAnswered::OnTask { key, .. } => {
                format!("task {}#{}", key.local_task_id, key.attempt)
            }
            CallbackAnswered::OnSelfTask { key, .. } => {
                format!("self {}#{}", key.local_task_id, key.attempt)
            }
            CallbackAnswered::OnRoute { key, .. } => {
                format!("route {}->{}", key.source_step, key.target_step)
            }
            CallbackAnswered::OnNegotiation { key, .. } => format!(
                "negotiation {}#{}/{}",
                key.local_task_id, key.attempt, key.exchange
            ),
            other => format!("other {other:?}"),
        };
        *counts.entry(key).or_default() += 1;
    }
    counts
}

/// Where a kill of the routed workflow landed, judged by what its journal held at the kill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum KillPoint {
    /// The negotiating task had its proposal (INPUT_REQUIRED) and had not ended.
    MidNegotiation,
    /// A step with conditional edges had ended and its successor had not sent yet (between the
    /// two steps: the route decisions and the successor's content being asked for).
    Routing,
    /// Anywhere else.
    Elsewhere,
}

/// Classifies the kill by the journal the killed process left. `negotiating` is the local task
/// id suffix of the negotiating subtask (`:ask:0`); `routed` pairs each step with conditional
/// edges with the step its taken edge leads to.
pub fn kill_point(journal: &RunJournal, negotiating: &str, routed: &[(&str, &str)]) -> KillPoint {
    let mut proposal = false;
    let mut negotiation_ended = false;
    let mut finished_steps = Vec::new();
    let mut sent_steps = Vec::new();
    for record in records(journal) {
        match record {
            JournalRecord::RemoteState {
                local_task_id,
                state,
            } if local_task_id.ends_with(negotiating) && *state == TaskState::InputRequired => {
                proposal = true;
            }
            JournalRecord::TaskFinished { local_task_id, .. }
                if local_task_id.ends_with(negotiating) =>
            {
                negotiation_ended = true;
            }
            JournalRecord::StepFinished { result } => finished_steps.push(result.step_name.clone()),
            JournalRecord::TaskIntent(intent) => sent_steps.push(intent.step.clone()),
            _ => {}
        }
    }
    if proposal && !negotiation_ended {
        return KillPoint::MidNegotiation;
    }
    let routing = routed.iter().any(|(source, target)| {
        finished_steps.iter().any(|s| s == source) && !sent_steps.iter().any(|s| s == target)
    });
    if routing {
        KillPoint::Routing
    } else {
        KillPoint::Elsewhere
    }
}
