//! RUN: lifecycle events, on_finish, streaming with back-pressure, determinism, no leaks
//! (engine_scenarios.md "RUN").

use crate::support::*;
use a2aflow_kernel::{InMemoryClient, RunInput, RunOptions, run_stream};
use a2aflow_model::{Event, EventKind, ExecutionResult, StepType};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn s_run_01_full_lifecycle_event_sequence() {
    let host = Arc::new(Host::default());
    let (r, _, rec) = go_fresh(
        wf(vec![step("s1", &["A"], &["s2"]), step("s2", &["B"], &[])]),
        &host,
    )
    .await;
    assert!(r.success);
    use EventKind::*;
    let step_part = [
        StepStart,
        TaskRequest,
        AgentRequest,
        AgentResponse,
        TaskStatusChanged,
        TaskResponse,
        StepComplete,
    ];
    let mut expected = vec![Start];
    expected.extend(step_part);
    expected.push(RouteDecision);
    expected.extend(step_part);
    expected.extend([WorkflowComplete, Complete, Close]);
    assert_eq!(rec.kinds(), expected);
    let seqs: Vec<u64> = rec.events().iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (0..expected.len() as u64).collect::<Vec<_>>());
    let start = &rec.events()[0];
    assert_eq!(start.data["workflow"], "test workflow");
    assert_eq!(start.data["steps"], 2);
}

#[tokio::test]
async fn s_run_11_every_event_carries_the_execution_id_and_task_ids() {
    let host = Arc::new(Host::default());
    let (_, _, rec) = go_fresh(wf(vec![step("s", &["A", "B"], &[])]), &host).await;
    assert!(rec.events().iter().all(|e| e.execution_id == "exec"));
    let ids: Vec<_> = rec
        .events()
        .into_iter()
        .filter(|e| e.kind == EventKind::TaskResponse)
        .map(|e| e.task_id.unwrap())
        .collect();
    assert_eq!(sorted(ids), vec!["exec:s:0", "exec:s:1"]);
    // data is JSON-serialisable
    for e in rec.events() {
        serde_json::to_string(&e).unwrap();
    }
}

/// (success, close already emitted) per on_finish call.
type FinishLog = Arc<Mutex<Vec<(bool, bool)>>>;

fn finish_counter(rec: &Recorder) -> (Arc<AtomicUsize>, FinishLog, a2aflow_kernel::OnFinish) {
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (c, s, events) = (count.clone(), seen.clone(), rec.0.clone());
    let hook: a2aflow_kernel::OnFinish = Arc::new(move |r: &ExecutionResult| {
        c.fetch_add(1, Ordering::SeqCst);
        let closed = events
            .lock()
            .unwrap()
            .iter()
            .any(|e| e.kind == EventKind::Close);
        s.lock().unwrap().push((r.success, closed));
    });
    (count, seen, hook)
}

#[tokio::test(start_paused = true)]
async fn on_finish_runs_exactly_once_before_close_in_every_ending() {
    let host = Arc::new(Host {
        task_fail: [("bad".to_string(), business("biz.x", "x"))].into(),
        ..Default::default()
    });
    let client = Arc::new(InMemoryClient::new().agent("slow", delayed(10_000)));
    let cases: Vec<(a2aflow_model::Workflow, Option<u64>, bool)> = vec![
        (wf(vec![step("ok", &["A"], &[])]), None, true),
        (wf(vec![step("fail", &["bad"], &[])]), None, false),
        (wf(vec![step("slow", &["slow"], &[])]), Some(50), false),
        (wf(vec![step("ghost", &["A"], &["nope"])]), None, false),
    ];
    for (w, cancel_ms, success) in cases {
        let rec = Recorder::default();
        let (count, seen, hook) = finish_counter(&rec);
        let cancel = CancellationToken::new();
        if let Some(ms) = cancel_ms {
            let c = cancel.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                c.cancel();
            });
        }
        let r = go_with(
            w,
            &host,
            &client,
            RunOptions {
                on_finish: Some(hook),
                cancel,
                ..rec.options()
            },
        )
        .await;
        assert_eq!(r.success, success);
        assert_eq!(count.load(Ordering::SeqCst), 1);
        assert_eq!(seen.lock().unwrap().clone(), vec![(success, false)]);
        assert_eq!(rec.kinds().last(), Some(&EventKind::Close));
        assert_eq!(rec.count(EventKind::Close), 1);
        assert_eq!(rec.count(EventKind::Start), 1);
    }
}

#[tokio::test]
async fn s_run_13_panicking_on_finish_and_sink_do_not_break_the_run() {
    let host = Arc::new(Host::default());
    let client = Arc::new(InMemoryClient::new());
    let rec = Recorder::default();
    let cb = rec.callback();
    let opts = RunOptions {
        on_finish: Some(Arc::new(|_: &ExecutionResult| panic!("persist failed"))),
        on_event: Some(Arc::new(move |e: &Event| {
            cb(e);
            if e.kind == EventKind::StepStart {
                panic!("sink bug");
            }
        })),
        ..rec.options()
    };
    let r = go_with(wf(vec![step("s", &["A"], &[])]), &host, &client, opts).await;
    assert!(r.success);
    assert_eq!(rec.kinds().last(), Some(&EventKind::Close));
}

#[tokio::test]
async fn stream_delivers_the_same_events_and_the_result() {
    let host = Arc::new(Host::default());
    let client = Arc::new(InMemoryClient::new());
    let w = wf(vec![
        step("s1", &["A"], &["s2"]),
        step("s2", &["B", "C"], &[]),
    ]);
    let rec = Recorder::default();
    let direct = go(w.clone(), &host, &client, &rec).await;
    let mut stream = run_stream(
        w,
        RunInput {
            runtime_intent: Some("intent".into()),
        },
        host.clone(),
        client.clone(),
        RunOptions {
            event_buffer: 1,
            execution_id: Some("exec".into()),
            ..Default::default()
        },
    );
    let mut kinds = Vec::new();
    while let Some(e) = stream.next().await {
        kinds.push(e.kind);
    }
    let r = stream.result().await;
    assert!(r.success);
    assert_eq!(r.steps.len(), direct.steps.len());
    assert_eq!(kinds.len(), rec.kinds().len());
    assert_eq!(kinds.first(), Some(&EventKind::Start));
    assert_eq!(kinds.last(), Some(&EventKind::Close));
}

#[tokio::test]
async fn stream_applies_back_pressure_to_the_run() {
    let host = Arc::new(Host::default());
    let client = Arc::new(InMemoryClient::new());
    let rec = Recorder::default();
    let (count, _, hook) = finish_counter(&rec);
    let w = wf(vec![
        step("s1", &["A"], &["s2"]),
        step("s2", &["B"], &["s3"]),
        step("s3", &["C"], &[]),
    ]);
    let mut stream = run_stream(
        w,
        RunInput::default(),
        host.clone(),
        client.clone(),
        RunOptions {
            event_buffer: 1,
            on_finish: Some(hook),
            ..Default::default()
        },
    );
    for _ in 0..200 {
        tokio::task::yield_now().await;
    }
    // Only `start` fits in the buffer; the run waits at `step_start`.
    assert_eq!(client.total_dispatches(), 0);
    assert_eq!(count.load(Ordering::SeqCst), 0);
    assert_eq!(stream.next().await.unwrap().kind, EventKind::Start);
    let r = stream.result().await;
    assert!(r.success);
    assert_eq!(client.total_dispatches(), 3);
    assert_eq!(count.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_stream_cancels_the_run() {
    let host = Arc::new(Host::default());
    let client = Arc::new(InMemoryClient::new().with_default(Some(delayed(60_000))));
    let (tx, rx) = tokio::sync::oneshot::channel();
    let tx = Mutex::new(Some(tx));
    let hook: a2aflow_kernel::OnFinish = Arc::new(move |r: &ExecutionResult| {
        if let Some(tx) = tx.lock().unwrap().take() {
            let _ = tx.send(r.clone());
        }
    });
    let mut stream = run_stream(
        wf(vec![step("s", &["A"], &[])]),
        RunInput::default(),
        host.clone(),
        client.clone(),
        RunOptions {
            on_finish: Some(hook),
            ..Default::default()
        },
    );
    while let Some(e) = stream.next().await {
        if e.kind == EventKind::TaskRequest {
            break;
        }
    }
    drop(stream);
    let r = rx.await.unwrap();
    assert_eq!(r.failure.unwrap().code, "workflow.cancelled");
    assert_eq!(client.cancellations("A"), 1);
}

fn busy_workflow() -> a2aflow_model::Workflow {
    wf(vec![
        step("root", &["r"], &["a", "b"]),
        typed(step("a", &["a1", "a2"], &["join"]), StepType::AnySuccess),
        step("b", &["b1", "b2", "b3"], &["join"]),
        typed(step("join", &["local"], &[]), StepType::SelfLoop),
    ])
}

fn busy_client() -> Arc<InMemoryClient> {
    Arc::new(
        InMemoryClient::new()
            .agent("r", delayed(5))
            .agent("a1", delayed(30))
            .agent("a2", delayed(10))
            .agent("b1", delayed(10))
            .agent("b2", delayed(10))
            .agent("b3", delayed(20)),
    )
}

#[tokio::test(start_paused = true)]
async fn deterministic_event_sequence_with_paused_clock() {
    let mut runs = Vec::new();
    for _ in 0..3 {
        let host = Arc::new(Host::default());
        let rec = Recorder::default();
        let r = go(busy_workflow(), &host, &busy_client(), &rec).await;
        assert!(r.success);
        runs.push(rec.untimed());
    }
    assert!(runs[0].len() > 30);
    assert_eq!(runs[0], runs[1]);
    assert_eq!(runs[1], runs[2]);
}

fn alive() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

#[tokio::test(start_paused = true)]
async fn no_spawned_task_outlives_a_run() {
    assert_eq!(alive(), 0);
    // normal
    let host = routing_host(Route::Allow);
    let rec = Recorder::default();
    let r = go(busy_workflow(), &host, &busy_client(), &rec).await;
    assert!(r.success);
    assert_eq!(alive(), 0, "after a normal run");
    // failed while siblings run, plus conditional routes
    let client = Arc::new(
        InMemoryClient::new()
            .agent("f", failing("a2a.internal", 5))
            .with_default(Some(delayed(20))),
    );
    let w = wf(vec![
        cond(step("s", &["x"], &[]), &[("t", "c")]),
        step("t", &["y"], &[]),
        step("u", &["f"], &[]),
    ]);
    let r = go(w, &host, &client, &rec).await;
    assert!(!r.success);
    assert_eq!(alive(), 0, "after a failed run");
    // cancelled
    let client = Arc::new(InMemoryClient::new().with_default(Some(delayed(60_000))));
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(10)).await;
        c.cancel();
    });
    let r = go_with(
        busy_workflow(),
        &host,
        &client,
        RunOptions {
            cancel,
            ..rec.options()
        },
    )
    .await;
    canceller.await.unwrap();
    assert_eq!(r.failure.unwrap().code, "workflow.cancelled");
    assert_eq!(alive(), 0, "after a cancelled run");
    // timed out, with a host callback that ignores cancellation entirely
    let host = Arc::new(Host {
        task_hang: vec!["r".into()],
        route_default: Some(Route::Hang),
        ..Default::default()
    });
    let r = go_with(
        busy_workflow(),
        &host,
        &busy_client(),
        RunOptions {
            timeout: Duration::from_secs(1),
            ..rec.options()
        },
    )
    .await;
    assert_eq!(r.failure.unwrap().code, "workflow.timeout");
    assert_eq!(alive(), 0, "after a timed-out run");
}

#[tokio::test(start_paused = true)]
async fn a_prepared_workflow_runs_repeatedly_like_run() {
    let w = wf(vec![
        step("a", &["x"], &["b", "c"]),
        step("b", &["y"], &["d"]),
        step("c", &["z"], &["d"]),
        step("d", &["w"], &[]),
    ]);
    let prepared = a2aflow_kernel::PreparedWorkflow::new(w.clone()).unwrap();
    let host = Arc::new(Host::default());
    let client = Arc::new(InMemoryClient::new());
    let plain_rec = Recorder::default();
    let plain = go(w, &host, &client, &plain_rec).await;
    assert!(plain.success);
    for _ in 0..2 {
        let rec = Recorder::default();
        let r = a2aflow_kernel::run_prepared(
            &prepared,
            RunInput {
                runtime_intent: Some("intent".into()),
            },
            host.clone(),
            client.clone(),
            rec.options(),
        )
        .await;
        assert_eq!(r, plain);
        assert_eq!(rec.untimed(), plain_rec.untimed());
    }
    assert_eq!(client.total_dispatches(), 12);
}

#[tokio::test]
async fn a_cancelled_stream_keeps_delivering_events_until_close() {
    let host = Arc::new(Host::default());
    let client = Arc::new(
        InMemoryClient::new().agent(
            "A",
            a2aflow_kernel::AgentScript::reply(a2aflow_kernel::ScriptedReply::Echo)
                .after(Duration::from_secs(300)),
        ),
    );
    let mut stream = run_stream(
        wf(vec![step("s1", &["A"], &[])]),
        RunInput::default(),
        host,
        client.clone(),
        RunOptions::default(),
    );
    let mut kinds = Vec::new();
    while let Some(e) = stream.next().await {
        if e.kind == EventKind::TaskRequest {
            stream.cancel();
        }
        kinds.push(e.kind);
    }
    let r = stream.result().await;
    assert!(!r.success);
    assert_eq!(
        r.failure.map(|f| String::from(f.code)).as_deref(),
        Some("workflow.cancelled")
    );
    assert!(kinds.contains(&EventKind::StepComplete), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&EventKind::Close), "{kinds:?}");
}
