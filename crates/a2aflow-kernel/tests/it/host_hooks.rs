//! The host's hooks around events: an event hook that keeps, drops, changes or adds events
//! (S-RUN-04, S-RUN-06), and an asynchronous finish hook that sees the result and the run's
//! events, exactly once, before `close`.

use crate::support::*;
use a2aflow_kernel::{
    EventEdit, EventHook, FinishHook, InMemoryClient, MemoryStore, RunOptions, RunStore,
};
use a2aflow_model::{Event, EventKind, ExecutionResult};
use async_trait::async_trait;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn two_steps() -> a2aflow_model::Workflow {
    wf(vec![step("s1", &["A"], &["s2"]), step("s2", &["B"], &[])])
}

fn host_event(data: serde_json::Value) -> Event {
    Event {
        seq: 0,
        kind: EventKind::HostEvent,
        time: None,
        execution_id: "exec".into(),
        depth: 0,
        step: None,
        task_id: None,
        data: data.into(),
    }
}

async fn run_hooked(hook: EventHook) -> (ExecutionResult, Recorder) {
    let rec = Recorder::default();
    let options = RunOptions {
        event_hook: Some(hook),
        ..rec.options()
    };
    let client = Arc::new(InMemoryClient::new());
    let host = Arc::new(Host::default());
    let r = go_with(two_steps(), &host, &client, options).await;
    (r, rec)
}

#[tokio::test]
async fn s_run_04_an_injected_event_comes_right_before_the_first_step_start() {
    let injected = Arc::new(AtomicBool::new(false));
    let once = injected.clone();
    let hook: EventHook = Arc::new(move |e: &Event| {
        if e.kind == EventKind::StepStart && !once.swap(true, Ordering::SeqCst) {
            EventEdit::Replace(vec![
                host_event(serde_json::json!({"custom": true})),
                e.clone(),
            ])
        } else {
            EventEdit::Keep
        }
    });
    let (r, rec) = run_hooked(hook).await;
    assert!(r.success);
    let kinds = rec.kinds();
    let first_step = kinds
        .iter()
        .position(|k| *k == EventKind::StepStart)
        .unwrap();
    assert_eq!(kinds[first_step - 1], EventKind::HostEvent, "{kinds:?}");
    assert_eq!(rec.count(EventKind::HostEvent), 1);
    assert_eq!(rec.events()[first_step - 1].data["custom"], true);
    // Built without a time, it has the time of the event it was put before.
    let times: Vec<_> = rec.events().iter().map(|e| e.time).collect();
    assert!(times[first_step].is_some());
    assert_eq!(times[first_step - 1], times[first_step]);
    // The sequence stays gapless with the injected event numbered in place.
    let seqs: Vec<u64> = rec.events().iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (0..kinds.len() as u64).collect::<Vec<_>>());
}

#[tokio::test]
async fn s_run_06_a_panicking_hook_leaves_the_events_and_the_result_unchanged() {
    let (plain, plain_rec) = run_hooked(Arc::new(|_: &Event| EventEdit::Keep)).await;
    let (r, rec) = run_hooked(Arc::new(|_: &Event| panic!("the hook is broken"))).await;
    assert!(r.success && plain.success);
    assert_eq!(rec.kinds(), plain_rec.kinds());
    assert_eq!(rec.kinds().last(), Some(&EventKind::Close));
}

#[tokio::test]
async fn a_dropped_kind_reaches_neither_the_sink_nor_the_store_nor_the_finish_hook() {
    let rec = Recorder::default();
    let store = Arc::new(MemoryStore::new());
    let finish = Arc::new(Finished::default());
    let options = RunOptions {
        event_hook: Some(Arc::new(|e: &Event| match e.kind {
            EventKind::TaskStatusChanged => EventEdit::Drop,
            _ => EventEdit::Keep,
        })),
        finish_hook: Some(finish.clone()),
        store: Some(store.clone()),
        ..rec.options()
    };
    let client = Arc::new(InMemoryClient::new());
    let r = go_with(two_steps(), &Arc::new(Host::default()), &client, options).await;
    assert!(r.success, "{:?}", r.failure);
    assert_eq!(rec.count(EventKind::TaskStatusChanged), 0);
    assert!(rec.count(EventKind::TaskResponse) > 0);
    let stored = store.events("exec", None, 10_000).await.unwrap();
    assert_eq!(stored.len(), rec.events().len());
    assert!(
        stored
            .iter()
            .all(|e| e.kind != EventKind::TaskStatusChanged)
    );
    let (_, events) = finish.only_call();
    assert!(
        events
            .iter()
            .all(|e| e.kind != EventKind::TaskStatusChanged)
    );
}

/// A finish hook that awaits before it records what it saw.
#[derive(Default)]
struct Finished {
    calls: Mutex<Vec<(ExecutionResult, Vec<Event>)>>,
}

impl Finished {
    fn only_call(&self) -> (ExecutionResult, Vec<Event>) {
        let calls = self.calls.lock().unwrap();
        assert_eq!(calls.len(), 1, "called exactly once");
        calls[0].clone()
    }
}

#[async_trait]
impl FinishHook for Finished {
    async fn finished(&self, result: &ExecutionResult, events: &[Event]) {
        tokio::time::sleep(Duration::from_millis(20)).await;
        self.calls
            .lock()
            .unwrap()
            .push((result.clone(), events.to_vec()));
    }
}

#[tokio::test]
async fn the_finish_hook_is_awaited_once_with_the_result_and_the_events_before_close() {
    let finish = Arc::new(Finished::default());
    let options = RunOptions {
        finish_hook: Some(finish.clone()),
        ..Default::default()
    };
    let client = Arc::new(InMemoryClient::new());
    let r = go_with(two_steps(), &Arc::new(Host::default()), &client, options).await;
    // Recorded after an await inside the hook: the run waited for it.
    let (result, events) = finish.only_call();
    assert_eq!(result, r);
    let kinds: Vec<EventKind> = events.iter().map(|e| e.kind).collect();
    assert_eq!(kinds.first(), Some(&EventKind::Start));
    assert_eq!(kinds.last(), Some(&EventKind::Complete), "{kinds:?}");
    assert!(!kinds.contains(&EventKind::Close));
}

#[tokio::test]
async fn a_rejected_workflow_calls_the_finish_hook_once_with_its_error() {
    let finish = Arc::new(Finished::default());
    let options = RunOptions {
        finish_hook: Some(finish.clone()),
        ..Default::default()
    };
    let client = Arc::new(InMemoryClient::new());
    // A step pointing at a step that does not exist: rejected before scheduling.
    let bad = wf(vec![step("s1", &["A"], &["missing"])]);
    let r = go_with(bad, &Arc::new(Host::default()), &client, options).await;
    assert!(!r.success);
    let (result, events) = finish.only_call();
    assert_eq!(result, r);
    let kinds: Vec<EventKind> = events.iter().map(|e| e.kind).collect();
    assert_eq!(kinds, [EventKind::Start, EventKind::Error]);
}

/// A finish hook that never returns.
struct Stuck;

#[async_trait]
impl FinishHook for Stuck {
    async fn finished(&self, _result: &ExecutionResult, _events: &[Event]) {
        std::future::pending::<()>().await
    }
}

#[tokio::test]
async fn a_finish_hook_that_never_returns_is_abandoned_after_the_cleanup_grace() {
    let rec = Recorder::default();
    let options = RunOptions {
        finish_hook: Some(Arc::new(Stuck)),
        cleanup_grace: Duration::from_millis(50),
        ..rec.options()
    };
    let client = Arc::new(InMemoryClient::new());
    let host = Arc::new(Host::default());
    let run = go_with(two_steps(), &host, &client, options);
    // A hang guard only, never a timing assertion.
    let r = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the run ends although its finish hook never returns");
    assert!(r.success);
    assert_eq!(rec.kinds().last(), Some(&EventKind::Close));
}

/// A run whose first agent answers after 60 s, ended early by `options` (its cancellation or its
/// deadline) with `expected`: the finish hook is called once with that ending, before `close`.
async fn ended_early(options: RunOptions, expected: &str) {
    let finish = Arc::new(Finished::default());
    let rec = Recorder::default();
    let options = RunOptions {
        finish_hook: Some(finish.clone()),
        on_event: rec.options().on_event,
        ..options
    };
    let client = Arc::new(InMemoryClient::new().agent("A", delayed(60_000)));
    let host = Arc::new(Host::default());
    let run = go_with(two_steps(), &host, &client, options);
    // A hang guard only, never a timing assertion.
    let r = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the run ends");
    assert!(!r.success);
    let (result, events) = finish.only_call();
    assert_eq!(result, r);
    assert_eq!(
        result.failure.as_ref().unwrap().code,
        expected,
        "{result:?}"
    );
    assert!(events.iter().all(|e| e.kind != EventKind::Close));
    assert_eq!(rec.kinds().last(), Some(&EventKind::Close));
}

#[tokio::test]
async fn a_cancelled_run_calls_the_finish_hook_once_with_its_ending() {
    let cancel = tokio_util::sync::CancellationToken::new();
    let trigger = cancel.clone();
    // Cancelled as the first step starts.
    let hook: EventHook = Arc::new(move |e: &Event| {
        if e.kind == EventKind::StepStart {
            trigger.cancel();
        }
        EventEdit::Keep
    });
    let options = RunOptions {
        cancel,
        event_hook: Some(hook),
        ..Default::default()
    };
    ended_early(options, "workflow.cancelled").await;
}

#[tokio::test]
async fn a_run_past_its_deadline_calls_the_finish_hook_once_with_its_ending() {
    let options = RunOptions {
        timeout: Duration::from_millis(100),
        ..Default::default()
    };
    ended_early(options, "workflow.timeout").await;
}
