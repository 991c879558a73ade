//! ROUTE: edges evaluated as a set (engine_scenarios.md "ROUTE").

use crate::support::*;
use a2aflow_kernel::{InMemoryClient, RunOptions};
use a2aflow_model::EventKind;
use std::sync::Arc;
use std::time::Duration;

#[tokio::test]
async fn s_route_01_unconditional_and_allowed_conditions_all_run() {
    let host = routing_host(Route::Allow);
    let w = wf(vec![
        cond(
            step("src", &["S"], &[]),
            &[("a", ""), ("b", "eligible"), ("c", "healthy")],
        ),
        step("a", &["A"], &[]),
        step("b", &["B"], &[]),
        step("c", &["C"], &[]),
    ]);
    let (r, _, _) = go_fresh(w, &host).await;
    assert!(r.success);
    assert_eq!(sorted(ran(&r)), vec!["a", "b", "c", "src"]);
    let mut calls: Vec<_> = host
        .route_calls()
        .iter()
        .map(|c| (c.target_step.clone(), c.condition.clone()))
        .collect();
    calls.sort();
    assert_eq!(
        calls,
        vec![
            ("b".into(), "eligible".into()),
            ("c".into(), "healthy".into())
        ]
    );
}

#[tokio::test]
async fn s_route_02_route_decision_events_for_every_edge_in_order() {
    let host = routes_host(
        Some(Route::Allow),
        &[("denied", Route::Deny("not applicable"))],
    );
    let w = wf(vec![
        cond(
            step("start", &["A"], &[]),
            &[
                ("always", ""),
                ("matched", "matched condition"),
                ("alsoMatched", "another match"),
                ("denied", "denied condition"),
            ],
        ),
        step("always", &["B"], &[]),
        step("matched", &["C"], &[]),
        step("alsoMatched", &["D"], &[]),
        step("denied", &["E"], &[]),
    ]);
    let (r, client, rec) = go_fresh(w, &host).await;
    assert!(r.success);
    assert_eq!(host.route_calls().len(), 3);
    let decisions: Vec<_> = rec
        .events()
        .into_iter()
        .filter(|e| e.kind == EventKind::RouteDecision)
        .collect();
    assert_eq!(decisions.len(), 4);
    let next: Vec<_> = decisions
        .iter()
        .map(|e| e.data["next"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(next, vec!["always", "matched", "alsoMatched", "denied"]);
    assert_eq!(decisions[0].data["conditional"], false);
    assert_eq!(decisions[0].data["allowed"], true);
    assert_eq!(decisions[3].data["conditional"], true);
    assert_eq!(decisions[3].data["allowed"], false);
    assert_eq!(decisions[3].data["reason"], "not applicable");
    assert_eq!(sorted(client.sent_agents()), vec!["A", "B", "C", "D"]);
    // every route_decision precedes its successor's step_start
    let last_decision = rec
        .events()
        .iter()
        .rposition(|e| e.kind == EventKind::RouteDecision)
        .unwrap();
    for s in ["always", "matched", "alsoMatched"] {
        assert!(rec.pos(EventKind::StepStart, Some(s)).unwrap() > last_decision);
    }
}

#[tokio::test]
async fn s_route_03_all_denied_ends_the_branch_successfully() {
    let host = routing_host(Route::Deny("no"));
    let w = wf(vec![
        cond(step("source", &["S"], &[]), &[("a", "x"), ("b", "y")]),
        step("a", &["A"], &[]),
        step("b", &["B"], &[]),
    ]);
    let (r, client, _) = go_fresh(w, &host).await;
    assert!(r.success);
    assert_eq!(ran(&r), vec!["source"]);
    assert_eq!(host.route_calls().len(), 2);
    assert_eq!(client.total_dispatches(), 1);
}

#[tokio::test]
async fn s_route_04_one_route_failure_suppresses_every_successor() {
    let host = routes_host(
        Some(Route::Allow),
        &[("failed", Route::Fail("route evaluation unavailable"))],
    );
    let w = wf(vec![
        cond(
            step("start", &["A"], &[]),
            &[
                ("always", ""),
                ("failed", "cannot evaluate"),
                ("allowed", "matched"),
            ],
        ),
        step("always", &["B"], &[]),
        step("failed", &["C"], &[]),
        step("allowed", &["D"], &[]),
    ]);
    let (r, client, rec) = go_fresh(w, &host).await;
    assert!(!r.success);
    let f = r.failure.clone().unwrap();
    assert_eq!(f.code, "workflow.route_failed");
    assert!(f.message.contains("start -> failed"), "{}", f.message);
    assert!(f.message.contains("route evaluation unavailable"));
    assert_eq!(f.details["source"], "start");
    assert_eq!(f.details["target"], "failed");
    assert_eq!(
        f.cause().and_then(|c| c.failure()).map(|c| c.code.as_str()),
        Some("workflow.execution_failed")
    );
    assert_eq!(client.sent_agents(), vec!["A"]);
    assert_eq!(ran(&r), vec!["start"]);
    assert_eq!(rec.count(EventKind::RouteDecision), 0);
}

#[tokio::test]
async fn s_route_06_whitespace_condition_is_unconditional() {
    let host = Arc::new(Host::default()); // on_route would fail (Missing)
    let (r, _, _) = go_fresh(conditional_pair("start", "next", "   \t"), &host).await;
    assert!(r.success);
    assert_eq!(r.steps.len(), 2);
    assert!(host.route_calls().is_empty());
}

#[tokio::test]
async fn s_route_07_conditional_edges_are_evaluated_concurrently() {
    let host = Arc::new(Host {
        route_default: Some(Route::Allow),
        route_barrier: Some(Arc::new(tokio::sync::Barrier::new(2))),
        ..Default::default()
    });
    let client = Arc::new(InMemoryClient::new());
    let rec = Recorder::default();
    let w = wf(vec![
        cond(step("s", &["A"], &[]), &[("x", "c1"), ("y", "c2")]),
        step("x", &["X"], &[]),
        step("y", &["Y"], &[]),
    ]);
    let r = tokio::time::timeout(Duration::from_secs(10), go(w, &host, &client, &rec))
        .await
        .expect("no deadlock");
    assert!(r.success);
    assert_eq!(r.steps.len(), 3);
}

#[tokio::test]
async fn s_route_08_missing_decision_fails_naming_the_edge() {
    let host = Arc::new(Host::default());
    let client = Arc::new(InMemoryClient::new());
    let rec = Recorder::default();
    let r = go(conditional_pair("s1", "s2", "ok?"), &host, &client, &rec).await;
    let f = r.failure.unwrap();
    assert_eq!(f.code, "workflow.route_failed");
    assert!(f.message.contains("s1 -> s2"));
    assert_eq!(
        f.cause().and_then(|c| c.failure()).map(|c| c.code.as_str()),
        Some("workflow.callback_missing")
    );
}

#[tokio::test(start_paused = true)]
async fn s_route_10_route_timeout_identifies_the_edge() {
    let host = routing_host(Route::Hang);
    let client = Arc::new(InMemoryClient::new());
    let rec = Recorder::default();
    let opts = RunOptions {
        timeout: Duration::from_secs(1),
        ..rec.options()
    };
    let t0 = tokio::time::Instant::now();
    let r = go_with(conditional_pair("start", "next", "c"), &host, &client, opts).await;
    assert_eq!(t0.elapsed(), Duration::from_secs(1));
    let f = r.failure.unwrap();
    assert_eq!(f.code, "workflow.route_failed");
    assert!(f.message.contains("start -> next"));
    assert_eq!(
        f.cause().and_then(|c| c.failure()).map(|c| c.code.as_str()),
        Some("workflow.timeout")
    );
    assert_eq!(client.sent_agents(), vec!["A"]);
}

#[tokio::test]
async fn route_callback_panic_is_a_route_failure() {
    let host = routing_host(Route::Panic);
    let client = Arc::new(InMemoryClient::new());
    let rec = Recorder::default();
    let r = go(conditional_pair("a", "b", "c"), &host, &client, &rec).await;
    let f = r.failure.unwrap();
    assert_eq!(f.code, "workflow.route_failed");
    assert_eq!(
        f.cause().and_then(|c| c.failure()).map(|c| c.code.as_str()),
        Some("workflow.callback_panicked")
    );
}

#[tokio::test]
async fn s_route_13_route_request_carries_source_results() {
    let host = routing_host(Route::Allow);
    let (r, _, _) = go_fresh(
        wf(vec![
            cond(step("s", &["x", "y"], &[]), &[("t", "cond")]),
            step("t", &["T"], &[]),
        ]),
        &host,
    )
    .await;
    assert!(r.success);
    let c = &host.route_calls()[0];
    assert_eq!(c.execution_id, "exec");
    assert_eq!(
        (
            c.source_step.as_str(),
            c.target_step.as_str(),
            c.condition.as_str()
        ),
        ("s", "t", "cond")
    );
    assert_eq!(c.source_result.step_name, "s");
    assert_eq!(c.source_result.task_results.len(), 2);
    assert_eq!(c.runtime_intent.as_deref(), Some("intent"));
}

#[tokio::test]
async fn s_route_14_terminal_target_is_decided_but_schedules_nothing() {
    let host = routing_host(Route::Allow);
    let (r, _, rec) = go_fresh(
        wf(vec![cond(step("s", &["A"], &[]), &[("end", "done?")])]),
        &host,
    )
    .await;
    assert!(r.success);
    let d: Vec<_> = rec
        .events()
        .into_iter()
        .filter(|e| e.kind == EventKind::RouteDecision)
        .collect();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].data["next"], "end");
    assert_eq!(d[0].data["allowed"], true);
    assert_eq!(r.steps.len(), 1);
}

/// `from` (agent A) with one edge to `to` (agent B) under `condition`.
fn conditional_pair(from: &str, to: &str, condition: &str) -> a2aflow_model::Workflow {
    wf(vec![
        cond(step(from, &["A"], &[]), &[(to, condition)]),
        step(to, &["B"], &[]),
    ])
}
