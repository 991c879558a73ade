//! The bytes of the kernel's events: runs that reach every kind a workflow emits (success,
//! routes, a failed step, a failed route, a rejected workflow, ANY_SUCCESS losers, negotiation,
//! a retried task, delegation accepted and refused), and every event's `data` is, byte for byte, its kind's typed
//! payload written out: the same keys in the same order with the same values.

use crate::support::*;
use a2aflow_kernel::{
    AgentScript, DelegationPolicy, InMemoryClient, RunInput, RunOptions, ScriptedReply,
    StaticCatalog,
};
use a2aflow_model::event_data::{AgentRequestData, AgentResponseData, NegotiationFailedData};
use a2aflow_model::{
    Backoff, ClientEvent, Event, EventKind, EventPayload, MessageContent, NegotiationReply,
    RetryPolicy, Step, StepType, Subtask, Workflow,
};
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::sync::Arc;

/// The events of `w` run against `host` and `client`, with `catalog` for delegation.
async fn events_of(
    w: Workflow,
    host: Arc<Host>,
    client: Arc<InMemoryClient>,
    catalog: StaticCatalog,
) -> Vec<Event> {
    let rec = Recorder::default();
    let options = RunOptions {
        workflow_catalog: Some(Arc::new(catalog)),
        delegation: DelegationPolicy::default(),
        ..rec.options()
    };
    a2aflow_kernel::run(w, RunInput::default(), host, client, options).await;
    rec.events()
}

fn client() -> Arc<InMemoryClient> {
    Arc::new(
        InMemoryClient::new()
            .agent("F", failing("agent.broken", 0))
            .agent("Down", failing("a2a.connection", 0))
            .agent("Slow", delayed(5_000))
            .agent(
                "N",
                AgentScript::reply(ScriptedReply::Negotiate {
                    rounds: 1,
                    then: Box::new(ScriptedReply::Echo),
                }),
            ),
    )
}

fn delegating(name: &str, target: &str) -> Step {
    Step {
        name: name.into(),
        subtasks: vec![Subtask {
            description: format!("{name} call"),
            workflow: Some(target.into()),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Every run this test makes, as (label, events).
async fn all_runs() -> Vec<(&'static str, Vec<Event>)> {
    let allow = || routing_host(Route::Allow);
    let child = Workflow {
        id: "child".into(),
        name: "child flow".into(),
        steps: vec![step("c", &["A"], &[])],
        ..Default::default()
    };
    let mut runs = Vec::new();
    let success = wf(vec![
        cond(step("a", &["A"], &[]), &[("b", "if good"), ("c", "")]),
        typed(step("b", &["A", "Slow"], &[]), StepType::AnySuccess),
        typed(step("c", &["local"], &[]), StepType::SelfLoop),
    ]);
    runs.push(("success", success, allow(), StaticCatalog::new()));
    let failed = wf(vec![step("a", &["F"], &["b"]), step("b", &["A"], &[])]);
    runs.push(("failed step", failed, allow(), StaticCatalog::new()));
    let route = wf(vec![
        cond(step("a", &["A"], &[]), &[("b", "if host fails")]),
        step("b", &["A"], &[]),
    ]);
    let failing_route = routing_host(Route::Fail("router down"));
    runs.push(("failed route", route, failing_route, StaticCatalog::new()));
    let rejected = wf(vec![step("a", &["A"], &["nowhere"])]);
    runs.push(("rejected", rejected, allow(), StaticCatalog::new()));
    let negotiate = wf(vec![step("n", &["N"], &[])]);
    let accepting = Arc::new(Host {
        negotiation: Some(NegotiationReply::Send {
            content: MessageContent::text("accept"),
        }),
        ..Default::default()
    });
    runs.push((
        "negotiation",
        negotiate.clone(),
        accepting,
        StaticCatalog::new(),
    ));
    runs.push((
        "host negotiation failure",
        negotiate,
        allow(),
        StaticCatalog::new(),
    ));
    let mut retried = step("r", &["Down"], &[]);
    retried.subtasks[0].retry = Some(RetryPolicy {
        attempts: 2,
        backoff: Backoff {
            initial: std::time::Duration::ZERO,
            ..Backoff::default()
        },
        on: Vec::new(),
    });
    runs.push(("retry", wf(vec![retried]), allow(), StaticCatalog::new()));
    let delegation = wf(vec![delegating("d", "child"), delegating("e", "missing")]);
    let catalog = StaticCatalog::new().with(child);
    runs.push(("delegation", delegation, allow(), catalog));
    let mut out = Vec::new();
    for (label, w, host, catalog) in runs {
        out.push((label, events_of(w, host, client(), catalog).await));
    }
    out.push(("parked gate", parked_gate_events().await));
    out
}

/// A task parked at a gate until the run's deadline (`task_gated`).
async fn parked_gate_events() -> Vec<Event> {
    let client = Arc::new(InMemoryClient::new().agent(
        "G",
        AgentScript::reply(ScriptedReply::Gate {
            gate: a2aflow_model::Gate::InputRequired,
            then: Box::new(ScriptedReply::Echo),
        }),
    ));
    let rec = Recorder::default();
    let options = RunOptions {
        gate_policy: a2aflow_kernel::GatePolicy::Park,
        timeout: std::time::Duration::from_millis(200),
        ..rec.options()
    };
    let w = wf(vec![step("g", &["G"], &[])]);
    a2aflow_kernel::run(
        w,
        RunInput::default(),
        Arc::new(Host::default()),
        client,
        options,
    )
    .await;
    rec.events()
}

/// The family member a payload is, for the shapes only these runs reach.
fn shape(payload: &EventPayload) -> Option<&'static str> {
    use ClientEvent as C;
    match payload {
        EventPayload::Client(C::AgentRequest(AgentRequestData::Local(_))) => Some("LocalRequest"),
        EventPayload::Client(C::AgentRequest(AgentRequestData::Delegation(_))) => {
            Some("DelegationRequest")
        }
        EventPayload::Client(C::AgentResponse(AgentResponseData::Local(_))) => {
            Some("LocalResponse")
        }
        EventPayload::Client(C::AgentResponse(AgentResponseData::Delegation(_))) => {
            Some("DelegationResponse")
        }
        EventPayload::Client(C::NegotiationFailed(NegotiationFailedData::Host(_))) => {
            Some("HostNegotiationFailed")
        }
        _ => None,
    }
}

/// `Ok` when `a` and `b` serialise to the same bytes: the same keys in the same order, the same
/// values. The one exception is a `metadata` object: a2a-lf keeps an A2A message's or task's
/// metadata in a `HashMap`, whose order differs from one map to the next, so there only the
/// entries are compared (their values still byte for byte). `Err` names the first difference.
fn same_bytes(a: &Value, b: &Value, at: &str) -> Result<(), String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys = |m: &Map<String, Value>| m.keys().cloned().collect::<Vec<_>>();
            let (mut kx, mut ky) = (keys(x), keys(y));
            if at.ends_with(".metadata") {
                kx.sort();
                ky.sort();
            }
            if kx != ky {
                return Err(format!("{at}: keys {kx:?} vs {ky:?}"));
            }
            for k in &kx {
                same_bytes(&x[k], &y[k], &format!("{at}.{k}"))?;
            }
            Ok(())
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                same_bytes(u, v, &format!("{at}[{i}]"))?;
            }
            Ok(())
        }
        _ if serde_json::to_string(a).ok() == serde_json::to_string(b).ok() => Ok(()),
        _ => Err(format!("{at}: {a} vs {b}")),
    }
}

#[tokio::test]
async fn every_kernel_event_writes_its_typed_payload_byte_for_byte() {
    let mut seen = HashSet::new();
    let mut shapes = HashSet::new();
    for (label, events) in all_runs().await {
        for e in &events {
            // Every event has the time it was emitted (a delegated child's too).
            assert!(e.time.is_some(), "{label}: {} has no time", e.kind);
            // The text a consumer receives, read back strictly as the kind's payload.
            let written = serde_json::to_string(&e.data).unwrap();
            let read: Value = serde_json::from_str(&written).unwrap();
            let payload = EventPayload::from_data(e.kind, &read).unwrap_or_else(|err| {
                panic!("{label}: {} is not its payload: {err}\n{written}", e.kind)
            });
            let typed = payload.to_data().unwrap();
            if let Err(at) = same_bytes(&read, &typed, "data") {
                panic!("{label}: {} differs at {at}\n{written}\n{typed}", e.kind);
            }
            seen.insert(e.kind);
            shapes.extend(shape(&payload));
        }
    }
    // Reserved kinds, the kinds only a wire client reports, and the host's own.
    let elsewhere = [
        EventKind::HostEvent,
        EventKind::AuthorizationRequest,
        EventKind::AuthorizationResolved,
        EventKind::Notification,
        EventKind::AgentStatusUpdate,
        EventKind::AgentArtifactUpdate,
        EventKind::AgentMessageEvent,
    ];
    let missing: Vec<_> = EventKind::ALL
        .iter()
        .filter(|k| !elsewhere.contains(k) && !seen.contains(k))
        .collect();
    assert!(missing.is_empty(), "kinds no run reached: {missing:?}");
    for s in [
        "LocalRequest",
        "DelegationRequest",
        "LocalResponse",
        "DelegationResponse",
        "HostNegotiationFailed",
    ] {
        assert!(shapes.contains(s), "no {s} event in {shapes:?}");
    }
}
