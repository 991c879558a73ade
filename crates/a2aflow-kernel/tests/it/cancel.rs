//! CANCEL / TIMEOUT: one deadline per run, cancellation reaches everything in flight, late results
//! are dropped (engine_scenarios.md "CANCEL").

use crate::support::*;
use a2aflow_kernel::{AgentScript, InMemoryClient, RunOptions, ScriptedReply};
use a2aflow_model::{MessageContent, NegotiationReply, StepStatus, TaskOutcomeStatus};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

fn cancel_after(ms: u64) -> CancellationToken {
    let token = CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        t.cancel();
    });
    token
}

#[tokio::test(start_paused = true)]
async fn s_cancel_01a_cancelled_preparation_never_sends() {
    let host = Arc::new(Host {
        task_hang: vec!["A".into()],
        ..Default::default()
    });
    let client = Arc::new(InMemoryClient::new());
    let rec = Recorder::default();
    let opts = RunOptions {
        cancel: cancel_after(50),
        ..rec.options()
    };
    let r = go_with(
        wf(vec![step("s", &["A"], &["t"]), step("t", &["B"], &[])]),
        &host,
        &client,
        opts,
    )
    .await;
    assert_eq!(r.failure.as_ref().unwrap().code, "workflow.cancelled");
    assert_eq!(client.total_dispatches(), 0);
    assert_eq!(r.steps[0].status, StepStatus::Canceled);
    assert_eq!(
        r.steps[0].task_results[0].status,
        TaskOutcomeStatus::Canceled
    );
    assert_eq!(r.skipped_steps, vec!["t"]);
}

#[tokio::test(start_paused = true)]
async fn s_cancel_01b_content_ready_after_the_deadline_is_never_sent() {
    let host = Arc::new(Host {
        task_delay: [("A".to_string(), Duration::from_secs(2))].into(),
        ..Default::default()
    });
    let client = Arc::new(InMemoryClient::new());
    let rec = Recorder::default();
    let opts = RunOptions {
        timeout: Duration::from_secs(1),
        ..rec.options()
    };
    let t0 = Instant::now();
    let r = go_with(wf(vec![step("s", &["A"], &[])]), &host, &client, opts).await;
    assert_eq!(t0.elapsed(), Duration::from_secs(1));
    assert_eq!(r.failure.as_ref().unwrap().code, "workflow.timeout");
    assert_eq!(
        r.steps[0].task_results[0].error_code.as_deref(),
        Some("workflow.timeout")
    );
    assert_eq!(client.total_dispatches(), 0);
}

#[tokio::test(start_paused = true)]
async fn run_cancellation_reaches_remote_tasks_in_flight() {
    let host = Arc::new(Host::default());
    let client = Arc::new(InMemoryClient::new().with_default(Some(delayed(10_000))));
    let rec = Recorder::default();
    let opts = RunOptions {
        cancel: cancel_after(100),
        ..rec.options()
    };
    let t0 = Instant::now();
    let r = go_with(
        wf(vec![step("a", &["x", "y"], &[]), step("b", &["z"], &[])]),
        &host,
        &client,
        opts,
    )
    .await;
    assert_eq!(t0.elapsed(), Duration::from_millis(100));
    assert_eq!(r.failure.as_ref().unwrap().code, "workflow.cancelled");
    assert_eq!(
        client.cancellations("x") + client.cancellations("y") + client.cancellations("z"),
        3
    );
    assert!(r.steps.iter().all(|s| s.status == StepStatus::Canceled));
}

#[tokio::test(start_paused = true)]
async fn deadline_cancels_remote_work_and_drops_its_result() {
    let host = Arc::new(Host::default());
    let client = Arc::new(InMemoryClient::new().agent("slow", delayed(5_000)));
    let rec = Recorder::default();
    let opts = RunOptions {
        timeout: Duration::from_secs(2),
        ..rec.options()
    };
    let t0 = Instant::now();
    let r = go_with(
        wf(vec![
            step("s", &["slow"], &["next"]),
            step("next", &["n"], &[]),
        ]),
        &host,
        &client,
        opts,
    )
    .await;
    assert_eq!(t0.elapsed(), Duration::from_secs(2));
    let f = r.failure.unwrap();
    assert_eq!(f.code, "workflow.timeout");
    let v = &r.steps[0].task_results[0];
    assert_eq!(v.status, TaskOutcomeStatus::Canceled);
    assert!(v.outputs.is_empty());
    assert_eq!(client.dispatches("n"), 0);
}

#[tokio::test(start_paused = true)]
async fn s_cancel_08_negotiation_shares_the_run_deadline() {
    let host = Arc::new(Host {
        negotiation: Some(NegotiationReply::Send {
            content: MessageContent::text("counter"),
        }),
        negotiation_delay: Duration::from_secs(60),
        ..Default::default()
    });
    let client = Arc::new(
        InMemoryClient::new().agent(
            "neg",
            AgentScript::reply(ScriptedReply::Negotiate {
                rounds: 1,
                then: Box::new(ScriptedReply::Echo),
            })
            .after(Duration::from_secs(3)),
        ),
    );
    let rec = Recorder::default();
    let opts = RunOptions {
        timeout: Duration::from_secs(10),
        ..rec.options()
    };
    let t0 = Instant::now();
    let r = go_with(wf(vec![step("s", &["neg"], &[])]), &host, &client, opts).await;
    assert_eq!(
        t0.elapsed(),
        Duration::from_secs(10),
        "bounded by the remaining 7 s, not the callback's 60 s"
    );
    assert_eq!(r.failure.unwrap().code, "workflow.timeout");
    assert_eq!(host.negotiation_calls.lock().unwrap().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_run_future_stops_the_run() {
    // `run` drives the run as its own task; dropping the caller's future must still end it,
    // exactly as dropping an unspawned run did: nothing after the drop is dispatched.
    let host = Arc::new(Host::default());
    let client = Arc::new(InMemoryClient::new().with_default(Some(delayed(1_000))));
    let rec = Recorder::default();
    let run = go(
        wf(vec![step("a", &["x"], &["b"]), step("b", &["z"], &[])]),
        &host,
        &client,
        &rec,
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(100), run)
            .await
            .is_err(),
        "the run is still waiting on `a` when it is dropped"
    );
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(client.dispatches("x"), 1);
    assert_eq!(
        client.dispatches("z"),
        0,
        "the dropped run went on to step b"
    );
}

/// The host's sink cancels the run when the `nth` event of `kind` arrives (callback sinks run
/// inline, so the cancel lands inside the kernel's emit).
fn cancel_on(rec: &Recorder, kind: a2aflow_model::EventKind, nth: usize) -> RunOptions {
    let token = CancellationToken::new();
    let (t, seen, record) = (
        token.clone(),
        std::sync::atomic::AtomicUsize::new(0),
        rec.callback(),
    );
    RunOptions {
        cancel: token,
        on_event: Some(Arc::new(move |e: &a2aflow_model::Event| {
            record(e);
            if e.kind == kind && seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1 == nth {
                t.cancel();
            }
        })),
        ..rec.options()
    }
}

/// One step over `agents`, run with the sink cancelling on the first event of `kind`: the
/// result, the events and the dispatches made.
async fn cancelled_on(
    kind: a2aflow_model::EventKind,
    agents: &[&str],
) -> (a2aflow_model::ExecutionResult, Recorder, usize) {
    let host = Arc::new(Host::default());
    let client = Arc::new(InMemoryClient::new());
    let rec = Recorder::default();
    let opts = cancel_on(&rec, kind, 1);
    let r = go_with(wf(vec![step("s", agents, &[])]), &host, &client, opts).await;
    assert_eq!(r.failure.as_ref().unwrap().code, "workflow.cancelled");
    assert_eq!(r.steps[0].status, StepStatus::Canceled);
    (r, rec, client.total_dispatches())
}

#[tokio::test(start_paused = true)]
async fn a_cancel_on_step_start_announces_no_task() {
    use a2aflow_model::EventKind;
    let (r, rec, dispatches) = cancelled_on(EventKind::StepStart, &["A", "B"]).await;
    assert_eq!(rec.count(EventKind::TaskRequest), 0, "{:?}", rec.kinds());
    assert_eq!(dispatches, 0);
    let tasks = &r.steps[0].task_results;
    assert_eq!(tasks.len(), 2);
    for (t, agent) in tasks.iter().zip(["A", "B"]) {
        assert_eq!(t.agent_name, agent);
        assert_eq!(t.status, TaskOutcomeStatus::Canceled);
        assert_eq!(t.error_code.as_deref(), Some("workflow.cancelled"));
    }
    let complete = rec.pos(EventKind::StepComplete, Some("s"));
    assert!(complete.is_some(), "{:?}", rec.kinds());
}

#[tokio::test(start_paused = true)]
async fn a_cancel_on_a_task_request_announces_no_later_task() {
    use a2aflow_model::EventKind;
    let (r, rec, dispatches) = cancelled_on(EventKind::TaskRequest, &["A", "B", "C"]).await;
    assert_eq!(rec.count(EventKind::TaskRequest), 1, "{:?}", rec.kinds());
    assert_eq!(dispatches, 0);
    let statuses: Vec<_> = r.steps[0].task_results.iter().map(|t| t.status).collect();
    assert_eq!(statuses, [TaskOutcomeStatus::Canceled; 3]);
}
