//! SCHED: readiness, parallelism, policies, dead paths, limits (engine_scenarios.md "SCHED").

use crate::support::*;
use a2aflow_kernel::{AgentScript, InMemoryClient, RunOptions, ScriptedReply};
use a2aflow_model::{ContextFrom, EventKind, Output, StepStatus, StepType, TaskOutcomeStatus};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

#[tokio::test(start_paused = true)]
async fn s_sched_01_roots_dispatch_together_and_merge_waits_for_both() {
    let host = Arc::new(Host {
        task_delay: [
            ("agent_a".to_string(), Duration::from_millis(200)),
            ("agent_b".to_string(), Duration::from_millis(200)),
        ]
        .into(),
        ..Default::default()
    });
    let client = Arc::new(InMemoryClient::new().agent("agent_b", delayed(300)));
    let rec = Recorder::default();
    let w = wf(vec![
        step("step_a", &["agent_a"], &["merge"]),
        step("step_b", &["agent_b"], &["merge"]),
        ctx(
            step("merge", &["agent_m"], &[]),
            ContextFrom::Steps(vec!["step_a".into(), "step_b".into()]),
        ),
    ]);
    let t0 = Instant::now();
    let r = go(w, &host, &client, &rec).await;
    assert!(r.success, "{:?}", r.failure);
    assert_eq!(sorted(ran(&r)), vec!["merge", "step_a", "step_b"]);
    // on_task 200 ms (both concurrently) + agent_b 300 ms, then merge: 500 ms total, not 700.
    assert_eq!(t0.elapsed(), Duration::from_millis(500));
    let merge = host.task_call("merge");
    let names: Vec<_> = merge
        .workflow_input
        .upstream_results
        .iter()
        .map(|u| u.step_name.clone())
        .collect();
    assert_eq!(names, vec!["step_a", "step_b"]);
}

#[tokio::test]
async fn s_sched_02_sequential_steps_prepare_in_order() {
    let host = Arc::new(Host::default());
    let (r, _, _) = go_fresh(
        wf(vec![step("s1", &["a1"], &["s2"]), step("s2", &["a2"], &[])]),
        &host,
    )
    .await;
    assert!(r.success);
    assert_eq!(ran(&r), vec!["s1", "s2"]);
    let agents: Vec<_> = host.task_calls().iter().map(|t| t.agent.clone()).collect();
    assert_eq!(agents, vec!["a1", "a2"]);
}

#[tokio::test(start_paused = true)]
async fn s_sched_03_parallel_branches_schedule_shared_merge_exactly_once() {
    let host = Arc::new(Host::default());
    let client = Arc::new(
        InMemoryClient::new()
            .agent("c1", delayed(10))
            .agent("c2", delayed(10)),
    );
    let rec = Recorder::default();
    let w = wf(vec![
        step("city1", &["c1"], &["merge"]),
        step("city2", &["c2"], &["merge"]),
        ctx(
            typed(step("merge", &["local"], &[]), StepType::SelfLoop),
            ContextFrom::Steps(vec!["city1".into(), "city2".into()]),
        ),
    ]);
    let r = go(w, &host, &client, &rec).await;
    assert!(r.success);
    assert_eq!(host.self_calls().len(), 1);
    assert_eq!(r.steps.len(), 3);
    assert_eq!(
        host.self_calls()[0].workflow_input.upstream_results.len(),
        2
    );
}

#[tokio::test]
async fn s_sched_08_any_success_all_fail_is_a_step_failure() {
    let host = Arc::new(Host::default());
    let client = Arc::new(
        InMemoryClient::new()
            .agent("x", failing("a2a.task_failed", 0))
            .agent("y", failing("a2a.task_failed", 0)),
    );
    let rec = Recorder::default();
    let r = go(
        wf(vec![typed(
            step("any", &["x", "y"], &[]),
            StepType::AnySuccess,
        )]),
        &host,
        &client,
        &rec,
    )
    .await;
    assert!(!r.success);
    let f = r.failure.unwrap();
    assert_eq!(f.code, "workflow.step_failed");
    assert_eq!(f.details["code"], "a2a.task_failed");
    let errors: Vec<_> = rec
        .events()
        .into_iter()
        .filter(|e| e.kind == EventKind::Error && e.step.is_some())
        .collect();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].data["errorCode"], "workflow.step_failed");
    let views = &r.steps[0].task_results;
    assert!(
        views
            .iter()
            .all(|v| v.error_code.as_deref() == Some("a2a.task_failed"))
    );
}

#[tokio::test]
async fn s_sched_09_self_loop_calls_on_self_task_and_sees_upstream_data() {
    let host = Arc::new(Host {
        self_outputs: [(
            "merge".to_string(),
            vec![Output::data(serde_json::json!(["merged"]))],
        )]
        .into(),
        ..Default::default()
    });
    let data = serde_json::json!({"diagnosis": ["found"], "alarmCount": 1});
    let client = Arc::new(InMemoryClient::new().agent(
        "SPN",
        AgentScript::reply(ScriptedReply::Succeed(vec![Output::data(data.clone())])),
    ));
    let rec = Recorder::default();
    let mut merge = typed(step("merge", &["local"], &[]), StepType::SelfLoop);
    merge.subtasks[0].description = "merge results".into();
    let r = go(
        wf(vec![step("diag", &["SPN"], &["merge"]), merge]),
        &host,
        &client,
        &rec,
    )
    .await;
    assert!(r.success);
    assert_eq!(client.total_dispatches(), 1);
    assert_eq!(client.dispatches("SPN"), 1);
    let calls = host.self_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].input.text.as_deref(), Some("merge results"));
    assert_eq!(
        calls[0].workflow_input.runtime_intent.as_deref(),
        Some("intent")
    );
    let up = &calls[0].workflow_input.upstream_results;
    assert_eq!(up.len(), 1);
    assert_eq!(up[0].step_name, "diag");
    assert_eq!(
        up[0].task_results[0].outputs[0].parts[0],
        a2aflow_model::a2a::Part::data(data)
    );
    assert_eq!(
        r.steps[1].task_results[0].outputs,
        vec![Output::data(serde_json::json!(["merged"]))]
    );
    assert!(host.task_calls().iter().all(|t| t.step_name != "merge"));
}

#[tokio::test]
async fn s_sched_11_task_failure_stops_the_workflow() {
    let host = Arc::new(Host {
        task_fail: [("A".to_string(), business("biz.bad_input", "no circuit"))].into(),
        ..Default::default()
    });
    let (r, client, rec) = go_fresh(
        wf(vec![step("s1", &["A"], &["s2"]), step("s2", &["B"], &[])]),
        &host,
    )
    .await;
    assert!(!r.success);
    assert_eq!(client.total_dispatches(), 0);
    assert_eq!(r.skipped_steps, vec!["s2"]);
    let v = &r.steps[0].task_results[0];
    assert_eq!(v.status, TaskOutcomeStatus::Failed);
    assert_eq!(v.error_code.as_deref(), Some("biz.bad_input"));
    assert_eq!(r.failure.unwrap().details["code"], "biz.bad_input");
    assert!(rec.count(EventKind::Error) >= 1);
}

#[tokio::test(start_paused = true)]
async fn s_sched_12_failure_waits_for_running_sibling_and_skips_merge() {
    let host = Arc::new(Host::default());
    let client = Arc::new(
        InMemoryClient::new()
            .agent("agent1", failing("a2a.internal", 10))
            .agent("agent2", delayed(100)),
    );
    let rec = Recorder::default();
    let w = wf(vec![
        step("r1", &["agent1"], &["merge"]),
        step("r2", &["agent2"], &["merge"]),
        typed(step("merge", &["local"], &[]), StepType::SelfLoop),
    ]);
    let t0 = Instant::now();
    let r = go(w, &host, &client, &rec).await;
    assert_eq!(
        t0.elapsed(),
        Duration::from_millis(100),
        "the run waits for agent2"
    );
    assert!(!r.success);
    assert_eq!(client.cancellations("agent2"), 0);
    assert_eq!(ran(&r), vec!["r1", "r2"]);
    assert_eq!(r.steps[1].status, StepStatus::Completed);
    assert!(host.self_calls().is_empty());
    assert_eq!(r.skipped_steps, vec!["merge"]);
    let responses: Vec<_> = rec
        .events()
        .into_iter()
        .filter(|e| e.kind == EventKind::TaskResponse)
        .collect();
    assert_eq!(responses.len(), 2);
    assert_ne!(responses[0].task_id, responses[1].task_id);
    assert!(responses.iter().all(|e| e.execution_id == "exec"));
}

#[tokio::test]
async fn s_sched_16_task_ids_are_distinct_and_stable() {
    let host = Arc::new(Host::default());
    let (r, _, _) = go_fresh(wf(vec![step("s", &["a", "b"], &[])]), &host).await;
    let ids: Vec<_> = host
        .task_calls()
        .iter()
        .map(|t| t.local_task_id.to_string())
        .collect();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1]);
    assert_eq!(sorted(ids.clone()), vec!["exec:s:0", "exec:s:1"]);
    let view_ids: Vec<_> = r.steps[0]
        .task_results
        .iter()
        .map(|v| v.task_id.clone())
        .collect();
    assert_eq!(view_ids, vec!["exec:s:0", "exec:s:1"]);
}

#[tokio::test]
async fn s_sched_17_step_without_subtasks() {
    // A SELF_LOOP step without subtasks succeeds; the model's validator rejects an empty
    // ANY_SUCCESS / ALL_SUCCESS step up front (workflow.empty_subtasks), with zero sends.
    let host = Arc::new(Host::default());
    let (r, client, rec) = go_fresh(
        wf(vec![
            typed(step("local", &[], &["next"]), StepType::SelfLoop),
            step("next", &["a"], &[]),
        ]),
        &host,
    )
    .await;
    assert!(r.success, "{:?}", r.failure);
    assert_eq!(ran(&r), vec!["local", "next"]);
    assert!(host.self_calls().is_empty());
    let r = go(
        wf(vec![typed(step("any", &[], &[]), StepType::AnySuccess)]),
        &host,
        &client,
        &rec,
    )
    .await;
    assert_eq!(r.failure.unwrap().code, "workflow.empty_subtasks");
    assert_eq!(client.total_dispatches(), 1);
}

#[tokio::test(start_paused = true)]
async fn s_cancel_09_any_success_first_wins_and_losers_are_cancelled() {
    let host = Arc::new(Host::default());
    let client = Arc::new(
        InMemoryClient::new()
            .agent("fast", delayed(10))
            .agent("slow", delayed(1000))
            .agent("slower", delayed(2000)),
    );
    let rec = Recorder::default();
    let t0 = Instant::now();
    let r = go(
        wf(vec![
            typed(
                step("any", &["slow", "fast", "slower"], &["after"]),
                StepType::AnySuccess,
            ),
            step("after", &["x"], &[]),
        ]),
        &host,
        &client,
        &rec,
    )
    .await;
    assert!(r.success);
    assert_eq!(t0.elapsed(), Duration::from_millis(10));
    assert_eq!(client.cancellations("slow"), 1);
    assert_eq!(client.cancellations("slower"), 1);
    let st: Vec<_> = r.steps[0].task_results.iter().map(|v| v.status).collect();
    assert_eq!(
        st,
        vec![
            TaskOutcomeStatus::Canceled,
            TaskOutcomeStatus::Completed,
            TaskOutcomeStatus::Canceled
        ]
    );
    assert_eq!(
        r.steps[0].task_results[0].error_code.as_deref(),
        Some("workflow.cancelled")
    );
    assert_eq!(ran(&r), vec!["any", "after"]);
}

#[tokio::test(start_paused = true)]
async fn any_success_losers_keep_their_remote_identity_in_the_result() {
    let host = Arc::new(Host::default());
    let client = Arc::new(
        InMemoryClient::new()
            .agent("fast", delayed(10))
            .agent("slow", delayed(1000)),
    );
    let rec = Recorder::default();
    let r = go(
        wf(vec![typed(
            step("any", &["slow", "fast"], &[]),
            StepType::AnySuccess,
        )]),
        &host,
        &client,
        &rec,
    )
    .await;
    assert!(r.success);
    assert_eq!(client.cancellations("slow"), 1);
    let loser = &r.steps[0].task_results[0];
    assert_eq!(loser.status, TaskOutcomeStatus::Canceled);
    assert_eq!(
        loser.context_id,
        Some(a2aflow_kernel::task_context_id("exec", "exec:any:0"))
    );
    assert_eq!(loser.remote_task_id.as_deref(), Some("task-exec:any:0"));
    let winner = &r.steps[0].task_results[1];
    assert_eq!(winner.status, TaskOutcomeStatus::Completed);
    assert_eq!(
        winner.context_id,
        Some(a2aflow_kernel::task_context_id("exec", "exec:any:1"))
    );
}

#[tokio::test(start_paused = true)]
async fn online_queue_releases_a_step_without_waiting_for_unrelated_branches() {
    // a(10ms) -> a2 ; b(1000ms). a2 must start at 10 ms, not after b.
    let host = Arc::new(Host::default());
    let client = Arc::new(
        InMemoryClient::new()
            .agent("fa", delayed(10))
            .agent("fb", delayed(1000))
            .agent("fa2", delayed(10)),
    );
    let rec = Recorder::default();
    let t0 = Instant::now();
    let started = Arc::new(std::sync::Mutex::new(None));
    let s2 = started.clone();
    let cb = rec.callback();
    let mut opts = rec.options();
    opts.on_event = Some(Arc::new(move |e: &a2aflow_model::Event| {
        if e.kind == EventKind::StepStart && e.step.as_deref() == Some("a2") {
            *s2.lock().unwrap() = Some(t0.elapsed());
        }
        cb(e)
    }));
    let r = go_with(
        wf(vec![
            step("a", &["fa"], &["a2"]),
            step("b", &["fb"], &[]),
            step("a2", &["fa2"], &[]),
        ]),
        &host,
        &client,
        opts,
    )
    .await;
    assert!(r.success);
    assert_eq!(*started.lock().unwrap(), Some(Duration::from_millis(10)));
    assert_eq!(ran(&r), vec!["a", "a2", "b"]);
}

#[tokio::test]
async fn dead_path_join_after_denied_branch_runs_once_and_does_not_hang() {
    // start -> {left (denied), right (allowed)} -> join ; left -> deep -> join
    let host = routes_host(
        None,
        &[("left", Route::Deny("no")), ("right", Route::Allow)],
    );
    let w = wf(vec![
        cond(
            step("start", &["s"], &[]),
            &[("left", "go left?"), ("right", "go right?")],
        ),
        step("left", &["l"], &["deep", "join"]),
        step("deep", &["d"], &["join"]),
        step("right", &["r"], &["join"]),
        step("join", &["j"], &[]),
    ]);
    let (r, client, _) = go_fresh(w, &host).await;
    assert!(r.success, "{:?}", r.failure);
    assert_eq!(ran(&r), vec!["start", "right", "join"]);
    assert_eq!(r.skipped_steps, vec!["left", "deep"]);
    assert_eq!(client.dispatches("j"), 1);
    let join = host.task_call("join");
    let up: Vec<_> = join
        .workflow_input
        .upstream_results
        .iter()
        .map(|u| u.step_name.clone())
        .collect();
    assert_eq!(
        up,
        vec!["right"],
        "only predecessors that ran are in the window"
    );
}

#[tokio::test]
async fn join_whose_every_incoming_edge_is_dead_is_skipped() {
    let host = routing_host(Route::Deny("no"));
    let w = wf(vec![
        cond(step("start", &["s"], &[]), &[("a", "x"), ("b", "y")]),
        step("a", &["a"], &["join"]),
        step("b", &["b"], &["join"]),
        step("join", &["j"], &["tail"]),
        step("tail", &["t"], &[]),
    ]);
    let (r, _, rec) = go_fresh(w, &host).await;
    assert!(r.success);
    assert_eq!(ran(&r), vec!["start"]);
    assert_eq!(r.skipped_steps, vec!["a", "b", "join", "tail"]);
    assert_eq!(rec.count(EventKind::StepStart), 1);
}

#[tokio::test(start_paused = true)]
async fn remote_task_limit_bounds_concurrent_dispatches() {
    let host = Arc::new(Host::default());
    let client = Arc::new(InMemoryClient::new().with_default(Some(delayed(100))));
    let rec = Recorder::default();
    let opts = RunOptions {
        max_concurrent_remote_tasks: Some(2),
        ..rec.options()
    };
    let t0 = Instant::now();
    let r = go_with(
        wf(vec![step("wide", &["a", "b", "c", "d", "e"], &[])]),
        &host,
        &client,
        opts,
    )
    .await;
    assert!(r.success);
    assert_eq!(
        t0.elapsed(),
        Duration::from_millis(300),
        "5 tasks, 2 at a time, 100 ms each"
    );
    let t0 = Instant::now();
    let r = go(
        wf(vec![step("wide", &["a", "b", "c", "d", "e"], &[])]),
        &host,
        &client,
        &rec,
    )
    .await;
    assert!(r.success);
    assert_eq!(
        t0.elapsed(),
        Duration::from_millis(100),
        "unbounded by default"
    );
}

#[tokio::test]
async fn panicking_callback_fails_its_step_not_the_scheduler() {
    let host = Arc::new(Host {
        task_panic: vec!["bad".into()],
        ..Default::default()
    });
    let (r, _, rec) = go_fresh(
        wf(vec![
            step("s", &["bad", "good"], &["next"]),
            step("next", &["n"], &[]),
        ]),
        &host,
    )
    .await;
    assert!(!r.success);
    let v = &r.steps[0].task_results;
    assert_eq!(
        v[0].error_code.as_deref(),
        Some("workflow.callback_panicked")
    );
    assert!(v[0].error.as_deref().unwrap().contains("host bug for bad"));
    assert_eq!(v[1].status, TaskOutcomeStatus::Completed);
    assert_eq!(
        r.failure.unwrap().details["code"],
        "workflow.callback_panicked"
    );
    assert_eq!(rec.kinds().last(), Some(&EventKind::Close));
}

#[tokio::test]
async fn missing_callbacks_fail_with_callback_missing_never_success() {
    struct Nothing;
    impl a2aflow_kernel::ControlPoint for Nothing {}
    let client = Arc::new(InMemoryClient::new());
    let r = a2aflow_kernel::run(
        wf(vec![step("s", &["a"], &[])]),
        Default::default(),
        Arc::new(Nothing),
        client.clone(),
        RunOptions::default(),
    )
    .await;
    assert!(!r.success);
    assert_eq!(
        r.steps[0].task_results[0].error_code.as_deref(),
        Some("workflow.callback_missing")
    );
    assert_eq!(client.total_dispatches(), 0);
    let host = Arc::new(Host {
        self_missing: true,
        ..Default::default()
    });
    let rec = Recorder::default();
    let r = go(
        wf(vec![typed(step("s", &["l"], &[]), StepType::SelfLoop)]),
        &host,
        &client,
        &rec,
    )
    .await;
    assert_eq!(
        r.steps[0].task_results[0].error_code.as_deref(),
        Some("workflow.callback_missing")
    );
}

#[tokio::test]
async fn other_callback_errors_become_execution_failed_keeping_the_message() {
    let host = Arc::new(Host {
        task_fail: [(
            "a".to_string(),
            a2aflow_kernel::CallbackError::Other("template not found: x.j2".into()),
        )]
        .into(),
        ..Default::default()
    });
    let (r, _, _) = go_fresh(wf(vec![step("s", &["a"], &[])]), &host).await;
    let v = &r.steps[0].task_results[0];
    assert_eq!(v.error_code.as_deref(), Some("workflow.execution_failed"));
    assert_eq!(v.error.as_deref(), Some("template not found: x.j2"));
}

#[tokio::test]
async fn s_sched_13_duplicate_descriptions_keep_separate_results() {
    let host = Arc::new(Host::default());
    let mut s = step("s", &[], &[]);
    s.subtasks = vec![sub("City1", "X"), sub("City2", "X")];
    let (r, _, _) = go_fresh(wf(vec![s]), &host).await;
    let v = &r.steps[0].task_results;
    assert_eq!(v.len(), 2);
    assert_eq!(
        (v[0].agent_name.as_str(), v[1].agent_name.as_str()),
        ("City1", "City2")
    );
    assert_ne!(v[0].task_id, v[1].task_id);
}
