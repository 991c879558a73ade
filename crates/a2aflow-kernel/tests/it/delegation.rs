//! Delegation execution: subtasks that run child workflows in the same engine.
//!
//! Every record the engine emits in these tests (the `delegationRequest` of an `agent_request`
//! event, the `delegationTask` of an `agent_response` event) is validated against the schemas.

use crate::support;
use crate::support::{Host, Recorder, step};
use a2aflow_kernel::{
    AgentScript, Budget, CostMeter, DelegationFirewall, DelegationPolicy, InMemoryClient, RunInput,
    RunOptions, ScriptedReply, StaticCatalog,
};
use a2aflow_model::a2a::{PartContent, TaskState};
use a2aflow_model::delegation::{
    RefusalReason, keys, validate_delegation_request, validate_delegation_task,
};
use a2aflow_model::{
    ErrorCode, Event, EventKind, ExecutionResult, Failure, Step, Subtask, TaskOutcomeStatus,
    TaskResultView, Workflow,
};
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A subtask that runs child workflow `target`.
fn call(target: &str, description: &str) -> Subtask {
    Subtask {
        description: description.into(),
        workflow: Some(target.into()),
        ..Default::default()
    }
}

/// A step whose subtasks are the given calls.
fn calls(name: &str, subtasks: Vec<Subtask>) -> Step {
    Step {
        name: name.into(),
        subtasks,
        ..Default::default()
    }
}

fn flow(id: &str, steps: Vec<Step>) -> Workflow {
    Workflow {
        id: id.into(),
        name: format!("{id} flow"),
        steps,
        ..Default::default()
    }
}

fn options(rec: &Recorder, catalog: StaticCatalog, policy: DelegationPolicy) -> RunOptions {
    RunOptions {
        workflow_catalog: Some(Arc::new(catalog)),
        delegation: policy,
        ..rec.options()
    }
}

async fn run(
    root: Workflow,
    client: &Arc<InMemoryClient>,
    options: RunOptions,
) -> (ExecutionResult, Arc<Host>) {
    let host = Arc::new(Host::default());
    let result = a2aflow_kernel::run(
        root,
        RunInput::default(),
        host.clone(),
        client.clone(),
        options,
    )
    .await;
    (result, host)
}

/// Runs `root` with `catalog` and the default policy on a fresh client and recorder.
async fn run_catalog(
    root: Workflow,
    catalog: StaticCatalog,
) -> (ExecutionResult, Arc<InMemoryClient>, Recorder) {
    let rec = Recorder::default();
    let client = Arc::new(InMemoryClient::new());
    let (result, _) = run(
        root,
        &client,
        options(&rec, catalog, DelegationPolicy::default()),
    )
    .await;
    (result, client, rec)
}

/// Validates every delegation record among `events`; returns (requests, task records).
fn validate_records(events: &[Event]) -> (Vec<Value>, Vec<Value>) {
    let mut requests = Vec::new();
    let mut tasks = Vec::new();
    for e in events {
        if let Some(r) = e.data.get("delegationRequest") {
            validate_delegation_request(r).unwrap_or_else(|err| panic!("{err}: {r}"));
            assert_eq!(e.kind, EventKind::AgentRequest);
            requests.push(r.clone());
        }
        if let Some(t) = e.data.get("delegationTask") {
            validate_delegation_task(t).unwrap_or_else(|err| panic!("{err}: {t}"));
            assert_eq!(e.kind, EventKind::AgentResponse);
            tasks.push(t.clone());
        }
    }
    (requests, tasks)
}

/// The single view of the single failed step of a result.
fn failed_view(result: &ExecutionResult) -> &TaskResultView {
    let step = result.steps.iter().find(|s| s.failure.is_some()).unwrap();
    step.task_results
        .iter()
        .find(|v| v.status != TaskOutcomeStatus::Completed)
        .unwrap()
}

fn metadata<'a>(view: &'a TaskResultView, key: &str) -> Option<&'a Value> {
    view.received_messages[0].task_metadata.as_ref()?.get(key)
}

/// The result document carried in a completed delegating view's output.
fn document(view: &TaskResultView) -> ExecutionResult {
    let PartContent::Data(data) = &view.outputs[0].parts[0].content else {
        panic!("not a data part: {:?}", view.outputs);
    };
    serde_json::from_value(data.clone()).unwrap()
}

#[tokio::test]
async fn three_level_tree_with_fan_out() {
    let leaf = flow("leaf", vec![step("work", &["worker"], &[])]);
    let mid = flow(
        "mid",
        vec![calls(
            "delegate",
            vec![call("leaf", "leaf job A"), call("leaf", "leaf job B")],
        )],
    );
    let root = flow(
        "root",
        vec![calls(
            "fan",
            vec![call("mid", "mid job 1"), call("mid", "mid job 2")],
        )],
    );
    let catalog = StaticCatalog::new().with(mid).with(leaf);
    let rec = Recorder::default();
    let client = Arc::new(InMemoryClient::new());
    let (result, host) = run(
        root,
        &client,
        options(&rec, catalog, DelegationPolicy::default()),
    )
    .await;
    assert!(result.success, "{:?}", result.failure);
    // Two children, four grandchildren, each grandchild one remote dispatch.
    assert_eq!(client.dispatches("worker"), 4);

    let views = &result.steps[0].task_results;
    assert_eq!(views.len(), 2);
    let mut child_ids = BTreeSet::new();
    for view in views {
        assert_eq!(view.status, TaskOutcomeStatus::Completed);
        let evidence = &view.received_messages[0];
        assert_eq!(evidence.state, Some(TaskState::Completed));
        assert_eq!(evidence.context_id.as_deref(), Some("exec"));
        assert_eq!(metadata(view, keys::DEPTH), Some(&Value::from(1)));
        assert_eq!(
            metadata(view, keys::STATUS),
            Some(&Value::from("SUCCEEDED"))
        );
        assert_eq!(metadata(view, keys::ROOT_EXECUTION_ID), Some(&Value::Null));
        let child_id = view.remote_task_id.clone().unwrap();
        assert_eq!(
            view.outputs[0].artifact_id.as_deref(),
            Some(format!("{child_id}/result").as_str())
        );
        // The output is the child's result document, which holds the grandchildren's.
        let child = document(view);
        assert_eq!(child.execution_id, child_id);
        assert_eq!(child.workflow_id, "mid");
        let grandchildren = &child.steps[0].task_results;
        assert_eq!(grandchildren.len(), 2);
        for g in grandchildren {
            assert_eq!(
                g.received_messages[0]
                    .task_metadata
                    .as_ref()
                    .unwrap()
                    .get(keys::ROOT_EXECUTION_ID),
                Some(&Value::from("exec"))
            );
            assert_eq!(document(g).workflow_id, "leaf");
        }
        child_ids.insert(child_id);
    }
    assert_eq!(child_ids.len(), 2, "each child has its own execution id");

    // The child's instruction became the grandchild's runtime intent.
    let intents: BTreeSet<_> = host
        .task_calls()
        .into_iter()
        .filter(|t| t.agent == "worker")
        .map(|t| t.workflow_input.runtime_intent.unwrap())
        .collect();
    assert_eq!(
        intents,
        BTreeSet::from(["leaf job A".to_owned(), "leaf job B".to_owned()])
    );

    // One totally ordered stream: seq 0..n, child events tagged with their id and depth.
    let events = rec.events();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (0..events.len() as u64).collect::<Vec<_>>());
    let starts: Vec<(u32, &str)> = events
        .iter()
        .filter(|e| e.kind == EventKind::Start)
        .map(|e| (e.depth, e.execution_id.as_str()))
        .collect();
    assert_eq!(starts.len(), 7);
    assert_eq!(starts.iter().filter(|(d, _)| *d == 1).count(), 2);
    assert_eq!(starts.iter().filter(|(d, _)| *d == 2).count(), 4);
    for e in &events {
        match e.depth {
            0 => assert_eq!(e.execution_id, "exec"),
            1 => assert!(child_ids.contains(&e.execution_id), "{e:?}"),
            2 => assert!(
                e.execution_id != "exec" && !child_ids.contains(&e.execution_id),
                "{e:?}"
            ),
            d => panic!("depth {d}"),
        }
    }
    assert_eq!(
        events.iter().filter(|e| e.kind == EventKind::Close).count(),
        7
    );
    assert_eq!(
        events.last().map(|e| (e.kind, e.depth)),
        Some((EventKind::Close, 0))
    );

    let (requests, tasks) = validate_records(&events);
    assert_eq!((requests.len(), tasks.len()), (6, 6));
    let depths: BTreeSet<_> = requests
        .iter()
        .map(|r| r["metadata"][keys::DEPTH].as_u64().unwrap())
        .collect();
    assert_eq!(depths, BTreeSet::from([1, 2]));
}

/// Runs `root` and returns the refused view's reason and the failed result.
async fn refused(
    root: Workflow,
    catalog: StaticCatalog,
    policy: DelegationPolicy,
) -> (ExecutionResult, Vec<Event>) {
    let rec = Recorder::default();
    let client = Arc::new(InMemoryClient::new());
    let (result, _) = run(root, &client, options(&rec, catalog, policy)).await;
    assert!(!result.success);
    let events = rec.events();
    validate_records(&events);
    (result, events)
}

/// Checks a view refused directly by the root's policy.
fn assert_refused(view: &TaskResultView, reason: RefusalReason) {
    assert_eq!(view.status, TaskOutcomeStatus::Failed);
    assert_eq!(view.error_code.as_deref(), Some("delegation.refused"));
    assert_eq!(
        view.error_details["refusalReason"],
        Value::from(reason.as_str())
    );
    let evidence = &view.received_messages[0];
    assert_eq!(evidence.state, Some(TaskState::Rejected));
    assert_eq!(
        metadata(view, keys::REFUSAL_REASON),
        Some(&Value::from(reason.as_str()))
    );
    assert_eq!(metadata(view, keys::EXECUTION_ID), None);
    assert_eq!(view.remote_task_id, None, "no child execution exists");
    assert!(view.outputs.is_empty());
}

fn child_starts(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|e| e.kind == EventKind::Start && e.depth > 0)
        .count()
}

#[tokio::test]
async fn flow_not_found() {
    let root = flow("root", vec![calls("s", vec![call("ghost", "x")])]);
    let (result, events) = refused(root, StaticCatalog::new(), DelegationPolicy::default()).await;
    assert_refused(failed_view(&result), RefusalReason::FlowNotFound);
    assert_eq!(child_starts(&events), 0);
    assert_eq!(
        result.failure.unwrap().details["code"],
        Value::from("delegation.refused")
    );
}

#[tokio::test]
async fn flow_not_callable() {
    let mut locked = flow("locked", vec![step("w", &["worker"], &[])]);
    locked.callable_by = Some(vec!["someone-else".into()]);
    let root = flow("root", vec![calls("s", vec![call("locked", "x")])]);
    let (result, events) = refused(
        root,
        StaticCatalog::new().with(locked),
        DelegationPolicy::default(),
    )
    .await;
    let view = failed_view(&result);
    assert_refused(view, RefusalReason::FlowNotCallable);
    assert_eq!(
        metadata(view, keys::FLOW_NAME),
        Some(&Value::from("locked flow"))
    );
    assert_eq!(child_starts(&events), 0);
}

#[tokio::test]
async fn callable_by_admits_a_listed_caller() {
    let mut open_to_root = flow("child", vec![step("w", &["worker"], &[])]);
    open_to_root.callable_by = Some(vec!["root".into()]);
    let root = flow("root", vec![calls("s", vec![call("child", "x")])]);
    let (result, _, rec) = run_catalog(root, StaticCatalog::new().with(open_to_root)).await;
    assert!(result.success, "{:?}", result.failure);
    validate_records(&rec.events());
}

/// A refusal inside a child: the parent sees `delegation.child_failed` with the refusal as cause.
fn assert_nested_refusal(result: &ExecutionResult, events: &[Event], reason: RefusalReason) {
    let view = failed_view(result);
    assert_eq!(view.error_code.as_deref(), Some("delegation.child_failed"));
    assert_eq!(
        view.error_details["cause"],
        Value::from("delegation.refused")
    );
    assert_eq!(metadata(view, keys::STATUS), Some(&Value::from("FAILED")));
    let (_, tasks) = validate_records(events);
    let rejected: Vec<_> = tasks
        .iter()
        .filter(|t| t["status"]["state"] == "TASK_STATE_REJECTED")
        .collect();
    assert_eq!(rejected.len(), 1);
    assert_eq!(
        rejected[0]["metadata"][keys::REFUSAL_REASON],
        Value::from(reason.as_str())
    );
    assert_eq!(rejected[0]["metadata"][keys::DEPTH], Value::from(2));
}

#[tokio::test]
async fn depth_exceeded() {
    let a = flow("a", vec![calls("s", vec![call("b", "deeper")])]);
    let b = flow("b", vec![step("w", &["worker"], &[])]);
    let root = flow("root", vec![calls("s", vec![call("a", "x")])]);
    let policy = DelegationPolicy {
        max_depth: 1,
        ..Default::default()
    };
    let (result, events) = refused(root, StaticCatalog::new().with(a).with(b), policy).await;
    assert_nested_refusal(&result, &events, RefusalReason::DepthExceeded);
    // The child at depth 1 ran; nothing started at depth 2.
    assert_eq!(child_starts(&events), 1);
}

#[tokio::test]
async fn cycle_detected() {
    let a = flow("a", vec![calls("s", vec![call("root", "back up")])]);
    let root = flow("root", vec![calls("s", vec![call("a", "x")])]);
    let catalog = StaticCatalog::new().with(a).with(root.clone());
    let (result, events) = refused(root, catalog, DelegationPolicy::default()).await;
    assert_nested_refusal(&result, &events, RefusalReason::CycleDetected);
    assert_eq!(child_starts(&events), 1);
}

#[tokio::test]
async fn fanout_exceeded() {
    let child = flow("child", vec![step("w", &["worker"], &[])]);
    let root = flow(
        "root",
        vec![calls("s", vec![call("child", "one"), call("child", "two")])],
    );
    let policy = DelegationPolicy {
        max_fan_out: 1,
        ..Default::default()
    };
    let (result, events) = refused(root, StaticCatalog::new().with(child), policy).await;
    let views = &result.steps[0].task_results;
    let done: Vec<_> = views
        .iter()
        .filter(|v| v.status == TaskOutcomeStatus::Completed)
        .collect();
    assert_eq!(done.len(), 1, "one child within the cap ran");
    assert_refused(failed_view(&result), RefusalReason::FanoutExceeded);
    assert_eq!(child_starts(&events), 1);
}

/// The host's tool policy in the tests: workflow `locked` may not delegate at all, and the call
/// `root` → `secret` is denied.
#[derive(Debug)]
struct Firewall;
impl DelegationFirewall for Firewall {
    fn may_delegate(&self, caller: &str) -> bool {
        caller != "locked"
    }
    fn allows(&self, caller: &str, target: &str) -> bool {
        !(caller == "root" && target == "secret")
    }
}

fn firewalled() -> DelegationPolicy {
    DelegationPolicy {
        firewall: Some(Arc::new(Firewall)),
        ..Default::default()
    }
}

#[tokio::test]
async fn tool_not_allowed() {
    let locked = flow("locked", vec![calls("s", vec![call("child", "go")])]);
    let child = flow("child", vec![step("w", &["worker"], &[])]);
    let root = flow("root", vec![calls("s", vec![call("locked", "x")])]);
    let catalog = StaticCatalog::new().with(locked).with(child);
    let (result, events) = refused(root, catalog, firewalled()).await;
    assert_nested_refusal(&result, &events, RefusalReason::ToolNotAllowed);
    // `locked` itself ran (root may delegate); its own call was refused.
    assert_eq!(child_starts(&events), 1);
}

#[tokio::test]
async fn firewall_denied() {
    let secret = flow("secret", vec![step("w", &["worker"], &[])]);
    let open = flow("open", vec![step("w", &["worker"], &[])]);
    let root = flow(
        "root",
        vec![calls("s", vec![call("secret", "no"), call("open", "yes")])],
    );
    let catalog = StaticCatalog::new().with(secret).with(open);
    let (result, events) = refused(root, catalog, firewalled()).await;
    assert_refused(failed_view(&result), RefusalReason::FirewallDenied);
    let views = &result.steps[0].task_results;
    assert_eq!(
        views[1].status,
        TaskOutcomeStatus::Completed,
        "the allowed call ran"
    );
    assert_eq!(child_starts(&events), 1);
}

struct RootAlreadySpent;
impl CostMeter for RootAlreadySpent {
    fn cost(&self, execution_id: &str) -> Option<f64> {
        (execution_id == "exec").then_some(2.5)
    }
}

#[tokio::test]
async fn budget_exceeded() {
    let child = flow("child", vec![step("w", &["worker"], &[])]);
    let root = flow("root", vec![calls("s", vec![call("child", "x")])]);
    let policy = DelegationPolicy {
        budget: Some(Budget {
            limit: 2.5,
            meter: Arc::new(RootAlreadySpent),
        }),
        ..Default::default()
    };
    let (result, events) = refused(root, StaticCatalog::new().with(child), policy).await;
    assert_refused(failed_view(&result), RefusalReason::BudgetExceeded);
    assert_eq!(child_starts(&events), 0);
}

struct Flat;
impl CostMeter for Flat {
    fn cost(&self, _: &str) -> Option<f64> {
        Some(0.25)
    }
}

#[tokio::test]
async fn budget_admits_until_spent_and_records_the_cost() {
    let child = flow("child", vec![step("w", &["worker"], &[])]);
    let root = flow("root", vec![calls("s", vec![call("child", "x")])]);
    let rec = Recorder::default();
    let client = Arc::new(InMemoryClient::new());
    let policy = DelegationPolicy {
        budget: Some(Budget {
            limit: 1.0,
            meter: Arc::new(Flat),
        }),
        ..Default::default()
    };
    let (result, _) = run(
        root,
        &client,
        options(&rec, StaticCatalog::new().with(child), policy),
    )
    .await;
    assert!(result.success, "{:?}", result.failure);
    let view = &result.steps[0].task_results[0];
    assert_eq!(metadata(view, keys::COST), Some(&Value::from(0.25)));
    validate_records(&rec.events());
}

#[tokio::test]
async fn grandchild_failure_propagates_its_code() {
    let leaf = flow("leaf", vec![step("work", &["broken"], &[])]);
    let mid = flow("mid", vec![calls("delegate", vec![call("leaf", "x")])]);
    let root = flow("root", vec![calls("top", vec![call("mid", "y")])]);
    let rec = Recorder::default();
    let client = Arc::new(InMemoryClient::new().agent(
        "broken",
        AgentScript::reply(ScriptedReply::Fail(Failure::new(
            ErrorCode::A2aTaskFailed,
            "the agent gave up",
        ))),
    ));
    let (result, _) = run(
        root,
        &client,
        options(
            &rec,
            StaticCatalog::new().with(mid).with(leaf),
            DelegationPolicy::default(),
        ),
    )
    .await;
    let failure = result.failure.clone().unwrap();
    assert_eq!(failure.code, "workflow.step_failed");
    assert_eq!(
        failure.details["code"],
        Value::from("delegation.child_failed")
    );
    let view = failed_view(&result);
    assert_eq!(view.error_code.as_deref(), Some("delegation.child_failed"));
    assert_eq!(view.error_details["cause"], Value::from("a2a.task_failed"));
    assert_eq!(
        view.error_details["childCode"],
        Value::from("workflow.step_failed")
    );
    assert_eq!(view.received_messages[0].state, Some(TaskState::Failed));
    assert!(
        view.received_messages[0].artifacts.is_empty(),
        "a failed child has no result artifact"
    );
    let (requests, tasks) = validate_records(&rec.events());
    assert_eq!((requests.len(), tasks.len()), (2, 2));
    assert!(
        tasks
            .iter()
            .all(|t| t["status"]["state"] == "TASK_STATE_FAILED")
    );
}

#[tokio::test]
async fn cancelling_the_root_reaches_the_grandchild() {
    let leaf = flow("leaf", vec![step("work", &["slow"], &[])]);
    let mid = flow("mid", vec![calls("delegate", vec![call("leaf", "x")])]);
    let root = flow("root", vec![calls("top", vec![call("mid", "y")])]);
    let client = Arc::new(InMemoryClient::new().agent(
        "slow",
        AgentScript::reply(ScriptedReply::Echo).after(Duration::from_secs(3600)),
    ));
    let rec = Recorder::default();
    let cancel = CancellationToken::new();
    let record = rec.callback();
    let trigger = cancel.clone();
    let options = RunOptions {
        workflow_catalog: Some(Arc::new(StaticCatalog::new().with(mid).with(leaf))),
        execution_id: Some("exec".into()),
        cancel: cancel.clone(),
        // Cancel the root the moment the grandchild's agent has the work.
        on_event: Some(Arc::new(move |e: &Event| {
            record(e);
            if e.kind == EventKind::AgentRequest && e.depth == 2 && e.data["agent"] == "slow" {
                trigger.cancel();
            }
        })),
        ..Default::default()
    };
    let (result, _) = run(root, &client, options).await;
    assert!(cancel.is_cancelled());
    let events = rec.events();
    assert_eq!(
        result.failure.as_ref().map(|f| f.code.as_str()),
        Some("workflow.cancelled")
    );
    assert_eq!(
        client.cancellations("slow"),
        1,
        "the grandchild's task saw the cancel"
    );
    // Every run of the tree closed before the root did: nothing is left running.
    let closes: Vec<u32> = events
        .iter()
        .filter(|e| e.kind == EventKind::Close)
        .map(|e| e.depth)
        .collect();
    assert_eq!(closes, [2, 1, 0]);
    let grandchild_error = events
        .iter()
        .find(|e| e.kind == EventKind::Error && e.depth == 2 && e.step.is_none())
        .unwrap();
    assert_eq!(grandchild_error.data["errorCode"], "workflow.cancelled");
    validate_records(&events);
}

#[tokio::test]
async fn without_a_catalog_the_subtask_fails_clearly() {
    let root = flow("root", vec![calls("s", vec![call("child", "x")])]);
    let rec = Recorder::default();
    let client = Arc::new(InMemoryClient::new());
    let (result, _) = run(root, &client, rec.options()).await;
    let view = failed_view(&result);
    assert_eq!(view.error_code.as_deref(), Some("delegation.no_catalog"));
    assert_eq!(view.error_details["flowId"], Value::from("child"));
    assert_eq!(child_starts(&rec.events()), 0);
}

#[tokio::test]
async fn an_invalid_child_workflow_fails_with_its_validation_code() {
    // A child whose only step routes to a missing step: the child run rejects it.
    let broken = flow("broken", vec![step("a", &["worker"], &["nowhere"])]);
    let root = flow("root", vec![calls("s", vec![call("broken", "x")])]);
    let (result, client, rec) = run_catalog(root, StaticCatalog::new().with(broken)).await;
    let view = failed_view(&result);
    assert_eq!(view.error_code.as_deref(), Some("delegation.child_failed"));
    let cause = view.error_details["cause"].as_str().unwrap();
    assert!(cause.starts_with("workflow."), "{cause}");
    assert_eq!(client.dispatches("worker"), 0);
    validate_records(&rec.events());
}

#[tokio::test(start_paused = true)]
async fn the_deadline_stops_the_whole_tree() {
    let leaf = flow("leaf", vec![step("work", &["slow"], &[])]);
    let mid = flow("mid", vec![calls("delegate", vec![call("leaf", "x")])]);
    let root = flow("root", vec![calls("top", vec![call("mid", "y")])]);
    let client = Arc::new(InMemoryClient::new().agent(
        "slow",
        AgentScript::reply(ScriptedReply::Echo).after(Duration::from_secs(3600)),
    ));
    let rec = Recorder::default();
    let options = RunOptions {
        timeout: Duration::from_secs(30),
        ..options(
            &rec,
            StaticCatalog::new().with(mid).with(leaf),
            DelegationPolicy::default(),
        )
    };
    let (result, _) = run(root, &client, options).await;
    assert_eq!(
        result.failure.as_ref().map(|f| f.code.as_str()),
        Some("workflow.timeout")
    );
    assert_eq!(client.cancellations("slow"), 1);
    let closes: Vec<u32> = rec
        .events()
        .iter()
        .filter(|e| e.kind == EventKind::Close)
        .map(|e| e.depth)
        .collect();
    assert_eq!(closes, [2, 1, 0]);
}

fn load(text: &str) -> Workflow {
    a2aflow_model::load_workflow_str(text, a2aflow_model::LoadOptions::STRICT)
        .unwrap()
        .workflow
}

#[tokio::test]
async fn documents_with_callable_by_run_as_written() {
    // Loaded from strict documents: `workflow` on a subtask, `callableBy` / `callable_by`.
    let review = load(
        r#"{"id": "review", "name": "Review", "callableBy": ["release"],
            "steps": [{"name": "read", "subtasks": [{"agent": "reader", "description": "read it"}]}]}"#,
    );
    let release = load(
        r#"{"id": "release", "steps": [{"name": "check",
            "subtasks": [{"workflow": "review", "description": "review the release"}]}]}"#,
    );
    let intruder = load(
        r#"{"id": "intruder", "steps": [{"name": "check",
            "subtasks": [{"workflow": "review", "description": "peek"}]}]}"#,
    );
    let catalog = StaticCatalog::new().with(review);
    let client = Arc::new(InMemoryClient::new());

    let rec = Recorder::default();
    let (ok, _) = run(
        release,
        &client,
        options(&rec, catalog.clone(), DelegationPolicy::default()),
    )
    .await;
    assert!(ok.success, "{:?}", ok.failure);
    assert_eq!(client.dispatches("reader"), 1);
    validate_records(&rec.events());

    let rec = Recorder::default();
    let (refused, _) = run(
        intruder,
        &client,
        options(&rec, catalog, DelegationPolicy::default()),
    )
    .await;
    assert_refused(failed_view(&refused), RefusalReason::FlowNotCallable);
    assert_eq!(
        client.dispatches("reader"),
        1,
        "the refused call sent nothing"
    );
    validate_records(&rec.events());
}

#[tokio::test(start_paused = true)]
async fn an_any_success_winner_cancels_a_delegating_sibling() {
    let slow = flow("slow", vec![step("work", &["sluggish"], &[])]);
    let root = flow(
        "root",
        vec![Step {
            name: "race".into(),
            step_type: a2aflow_model::StepType::AnySuccess,
            subtasks: vec![
                support::sub("quick", "fast path"),
                call("slow", "slow path"),
            ],
            ..Default::default()
        }],
    );
    // The winner answers after 1 s of paused time: by then the child has dispatched its work.
    let client = Arc::new(
        InMemoryClient::new()
            .agent(
                "sluggish",
                AgentScript::reply(ScriptedReply::Echo).after(Duration::from_secs(3600)),
            )
            .agent(
                "quick",
                AgentScript::reply(ScriptedReply::Echo).after(Duration::from_secs(1)),
            ),
    );
    let rec = Recorder::default();
    let (result, _) = run(
        root,
        &client,
        options(
            &rec,
            StaticCatalog::new().with(slow),
            DelegationPolicy::default(),
        ),
    )
    .await;
    assert!(result.success, "{:?}", result.failure);
    let views = &result.steps[0].task_results;
    assert_eq!(views[1].status, TaskOutcomeStatus::Canceled);
    // The loser's child run was cancelled and closed before the root closed.
    assert_eq!(client.cancellations("sluggish"), 1);
    let closes: Vec<u32> = rec
        .events()
        .iter()
        .filter(|e| e.kind == EventKind::Close)
        .map(|e| e.depth)
        .collect();
    assert_eq!(closes, [1, 0]);
    validate_records(&rec.events());
}
