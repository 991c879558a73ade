//! What `/api/runs/{id}` answers: the run's view from its journal ([`a2aflow::ExecutionView`]),
//! the drawing of its workflow ([`Layout`]), and per task what only its events tell
//! (Negotiation-T rounds, artifacts, the binding).

use crate::layout::{Layout, layout};
use crate::views::Views;
use a2aflow::executions::execution_view;
use a2aflow::kernel::journal::wall_clock_ms;
use a2aflow::model::{ErrorCode, Event, EventKind, Failure};
use a2aflow::{ExecutionView, RunState, RunStore, execution_events};
use serde::{Serialize, Serializer};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Events read per store call while folding a run's events.
pub(crate) const EVENT_PAGE: usize = 1000;

/// At most this many events are folded into a run's task facts (a bound on one request's
/// work); `eventsTruncated` says when a run has more.
const MAX_FOLDED_EVENTS: usize = 200_000;

/// One run, as the page shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunDetail {
    /// The journal's view (state, steps, tasks, open gates, failure).
    #[serde(flatten)]
    pub(crate) view: ExecutionView,
    /// Whether the run has finished.
    pub(crate) finished: bool,
    /// The workflow drawn as `a2aflow graph` draws it.
    #[serde(serialize_with = "kept_graph")]
    pub(crate) graph: Arc<Layout>,
    /// Per local task id, what its events tell (absent in the stream's `run` messages: the page
    /// folds the events it receives itself).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) task_facts: Option<BTreeMap<String, TaskFacts>>,
    /// The page can resume the run now: it has not finished, no driver holds its lease, and
    /// the host gave the page a resumer.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) resumable: bool,
    /// More events than were folded into `taskFacts`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) events_truncated: bool,
}

/// What a task's events tell beyond its journal view.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskFacts {
    /// Negotiation-T rounds the agent proposed.
    pub(crate) negotiation_rounds: u32,
    /// The artifacts the agent streamed or returned (names or ids, in order, without repeats).
    pub(crate) artifacts: Vec<String>,
    /// The protocol binding the task's last request went on (`JSONRPC`, `HTTP+JSON`, `GRPC`),
    /// when its `agent_request` named one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) binding: Option<String>,
}

/// Whether a run in `state` has finished.
pub(crate) fn is_finished(state: RunState) -> bool {
    !matches!(state, RunState::Running | RunState::Waiting)
}

fn kept_graph<S: Serializer>(graph: &Arc<Layout>, s: S) -> Result<S::Ok, S::Error> {
    graph.as_ref().serialize(s)
}

/// The run `execution_id` without its task facts, as JSON text (what the page asks for and the
/// stream's `run` messages carry), and whether it finished. A finished run's answer is kept in
/// `views` and served from there: its journal no longer changes.
pub(crate) async fn run_answer(
    store: &dyn RunStore,
    views: &Views,
    execution_id: &str,
    can_resume: bool,
) -> Result<(Arc<str>, bool), Failure> {
    if let Some(kept) = views.finished(execution_id) {
        return Ok((kept, true));
    }
    let detail = run_detail(store, views, execution_id, false, can_resume).await?;
    let text: Arc<str> = serde_json::to_string(&detail)
        .map_err(|e| Failure::new(ErrorCode::ConfigInvalid, e.to_string()))?
        .into();
    if detail.finished {
        views.keep_finished(execution_id, text.clone());
    }
    Ok((text, detail.finished))
}

/// The run `execution_id` with its drawing (kept in `views` once made); with `facts`, its
/// events folded too; `can_resume` when the page has a resumer.
pub(crate) async fn run_detail(
    store: &dyn RunStore,
    views: &Views,
    execution_id: &str,
    facts: bool,
    can_resume: bool,
) -> Result<RunDetail, Failure> {
    let journal = store.load(execution_id).await?;
    let live = journal.finished().is_none() && lease_live(store, execution_id).await?;
    let view = execution_view(&journal, live)?;
    let graph = match views.graph(execution_id) {
        Some(graph) => graph,
        None => {
            let graph = Arc::new(layout(&journal.started()?.workflow()?));
            views.keep_graph(execution_id, graph.clone());
            graph
        }
    };
    let (task_facts, events_truncated) = if facts {
        let (f, t) = fold_facts(store, execution_id).await?;
        (Some(f), t)
    } else {
        (None, false)
    };
    let finished = is_finished(view.state);
    Ok(RunDetail {
        resumable: can_resume && !finished && !live,
        finished,
        view,
        graph,
        task_facts,
        events_truncated,
    })
}

/// Whether a driver holds the run's lease now (as [`a2aflow::get_execution`] decides it).
async fn lease_live(store: &dyn RunStore, execution_id: &str) -> Result<bool, Failure> {
    let now = wall_clock_ms();
    Ok(store
        .lease(execution_id)
        .await?
        .is_some_and(|l| l.expires_at_ms > now))
}

async fn fold_facts(
    store: &dyn RunStore,
    execution_id: &str,
) -> Result<(BTreeMap<String, TaskFacts>, bool), Failure> {
    let mut facts = BTreeMap::new();
    let mut after = None;
    let mut folded = 0;
    loop {
        let page = execution_events(store, execution_id, after, EVENT_PAGE).await?;
        for event in &page {
            fold(&mut facts, event);
        }
        folded += page.len();
        after = page.last().map(|e| e.seq);
        if page.len() < EVENT_PAGE {
            return Ok((facts, false));
        }
        if folded >= MAX_FOLDED_EVENTS {
            return Ok((facts, true));
        }
    }
}

fn fold(facts: &mut BTreeMap<String, TaskFacts>, event: &Event) {
    let Some(task) = &event.task_id else { return };
    match event.kind {
        EventKind::NegotiationRequest => {
            facts.entry(task.clone()).or_default().negotiation_rounds += 1;
        }
        EventKind::AgentRequest => {
            if let Some(binding) = event.data.get("binding").and_then(Value::as_str) {
                facts.entry(task.clone()).or_default().binding = Some(binding.to_owned());
            }
        }
        EventKind::AgentArtifactUpdate => {
            let name = ["artifactName", "artifactId"]
                .iter()
                .find_map(|k| event.data.get(*k).and_then(Value::as_str));
            if let Some(name) = name {
                push_new(&mut facts.entry(task.clone()).or_default().artifacts, name);
            }
        }
        EventKind::TaskResponse => {
            let outputs = event
                .data
                .pointer("/result/outputs")
                .and_then(Value::as_array);
            for output in outputs.into_iter().flatten() {
                let name = ["name", "artifactId"]
                    .iter()
                    .find_map(|k| output.get(*k).and_then(Value::as_str));
                if let Some(name) = name {
                    push_new(&mut facts.entry(task.clone()).or_default().artifacts, name);
                }
            }
        }
        _ => {}
    }
}

fn push_new(list: &mut Vec<String>, name: &str) {
    if !list.iter().any(|n| n == name) {
        list.push(name.to_owned());
    }
}
