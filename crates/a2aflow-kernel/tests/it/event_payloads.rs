//! The kernel's events carry their typed payloads (a sink that only counts builds no JSON), and
//! the results the big payloads share with the run come back whole whether a consumer kept the
//! events (the run copies them) or not (the run takes them back).

use crate::support::*;
use a2aflow_kernel::{EventCallback, InMemoryClient, RunOptions};
use a2aflow_model::{Event, EventKind, EventPayload, ExecutionResult, StepType};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Two steps of two subtasks each, then a third: every result-carrying kind is emitted.
fn workflow() -> a2aflow_model::Workflow {
    wf(vec![
        typed(step("a", &["A", "B"], &["b"]), StepType::AllSuccess),
        step("b", &["C"], &["c"]),
        step("c", &["D"], &[]),
    ])
}

async fn run_with(options: RunOptions) -> ExecutionResult {
    let client = Arc::new(InMemoryClient::new());
    go_with(workflow(), &Arc::new(Host::default()), &client, options).await
}

#[tokio::test]
async fn every_kernel_event_reaches_the_sink_with_its_typed_payload() {
    let rec = Recorder::default();
    let result = run_with(rec.options()).await;
    assert!(result.success);
    let events = rec.events();
    assert!(events.len() > 10, "{:?}", rec.kinds());
    for e in &events {
        let payload = e.data.payload();
        assert!(
            payload.is_some(),
            "{} reached the sink as JSON only",
            e.kind
        );
        assert_eq!(payload.map(EventPayload::kind), Some(e.kind));
    }
}

#[tokio::test]
async fn a_consumer_that_keeps_the_events_sees_the_results_the_run_returns() {
    let rec = Recorder::default();
    let result = run_with(rec.options()).await;
    assert_eq!(result.steps.len(), 3);
    let events = rec.events();
    let of =
        |kind: EventKind| -> Vec<&Event> { events.iter().filter(|e| e.kind == kind).collect() };
    let Ok(EventPayload::Complete(complete)) = of(EventKind::Complete)[0].payload() else {
        panic!("no complete payload");
    };
    assert_eq!(*complete.steps, result.steps);
    for e in of(EventKind::StepComplete) {
        let Ok(EventPayload::StepComplete(d)) = e.payload() else {
            panic!("no step_complete payload");
        };
        let step = result.steps.iter().find(|s| s.step_name == d.step).unwrap();
        assert_eq!(*d.results, step.task_results, "{}", d.step);
    }
    for e in of(EventKind::TaskResponse) {
        let Ok(EventPayload::TaskResponse(d)) = e.payload() else {
            panic!("no task_response payload");
        };
        let step = result.steps.iter().find(|s| s.step_name == d.step).unwrap();
        assert_eq!(*d.result, step.task_results[d.subtask_index]);
    }
}

#[tokio::test]
async fn a_counting_sink_leaves_the_run_its_whole_result() {
    let counted = Arc::new(AtomicUsize::new(0));
    let count = counted.clone();
    let on_event: EventCallback = Arc::new(move |_: &Event| {
        count.fetch_add(1, Ordering::Relaxed);
    });
    let result = run_with(RunOptions {
        on_event: Some(on_event),
        ..RunOptions::default()
    })
    .await;
    let recorded = Recorder::default();
    let expected = run_with(recorded.options()).await;
    assert_eq!(counted.load(Ordering::Relaxed), recorded.events().len());
    assert!(result.success);
    let tasks = |r: &ExecutionResult| -> Vec<(String, usize)> {
        r.steps
            .iter()
            .map(|s| (s.step_name.to_string(), s.task_results.len()))
            .collect()
    };
    assert_eq!(tasks(&result), tasks(&expected));
    assert_eq!(
        tasks(&result),
        [("a".into(), 2), ("b".into(), 1), ("c".into(), 1)]
    );
}

/// A fan-out (one step's route decisions emitted together, one of them the host's) after a
/// step of two tasks.
fn fan_out() -> a2aflow_model::Workflow {
    let a = step("a", &["A", "B"], &[]);
    wf(vec![
        cond(a, &[("b", ""), ("c", "only if c"), ("d", "")]),
        step("b", &["C"], &["e"]),
        step("c", &["D"], &["e"]),
        step("d", &["E"], &["e"]),
        step("e", &["F"], &[]),
    ])
}

/// An event's text without its time (two runs differ only there).
fn untimed_text(e: &Event) -> String {
    let mut e = e.clone();
    e.time = None;
    serde_json::to_string(&e).unwrap()
}

/// A host that denies the edge to `c` (so `c` is skipped).
fn denies_c() -> Arc<Host> {
    let mut host = Host::default();
    host.routes.insert("c".into(), Route::Deny("not c"));
    Arc::new(host)
}

/// The kernel reuses what a callback sink's event leaves (its strings, its payload's
/// allocation) for the next event. A sink that keeps only some events (every other one here)
/// reads them afterwards as it saw them, and sees the events a sink keeping all of them sees.
#[tokio::test]
async fn events_a_sink_kept_read_later_as_when_it_saw_them() {
    type Seen = (Vec<String>, Vec<Event>);
    let seen: Arc<std::sync::Mutex<Seen>> = Arc::default();
    let sink = seen.clone();
    let on_event: EventCallback = Arc::new(move |e: &Event| {
        let mut s = sink.lock().unwrap();
        s.0.push(untimed_text(e));
        if e.seq.is_multiple_of(2) {
            s.1.push(e.clone());
        }
    });
    let client = Arc::new(InMemoryClient::new());
    let options = RunOptions {
        on_event: Some(on_event),
        execution_id: Some("exec".into()),
        ..RunOptions::default()
    };
    let result = go_with(fan_out(), &denies_c(), &client, options).await;
    assert!(result.success);
    let (texts, kept) = std::mem::take(&mut *seen.lock().unwrap());
    assert!(kept.len() > 10, "{} events kept", kept.len());
    for e in &kept {
        assert_eq!(untimed_text(e), texts[e.seq as usize], "event {}", e.seq);
    }
    let all = Recorder::default();
    let client = Arc::new(InMemoryClient::new());
    assert!(
        go_with(fan_out(), &denies_c(), &client, all.options())
            .await
            .success
    );
    let expected: Vec<String> = all.events().iter().map(untimed_text).collect();
    assert_eq!(texts, expected);
    let decisions: Vec<&String> = expected
        .iter()
        .filter(|t| t.contains("route_decision"))
        .collect();
    assert_eq!(decisions.len(), 5, "{decisions:#?}");
    assert!(decisions[1].contains("not c"), "{}", decisions[1]);
}

/// With a callback sink, events that happen together share one clock read: a step's start and
/// its tasks' requests, a task's status change and its response. The sink here takes 3 ms over
/// the first event of each pair, so events that each read the clock would differ.
#[tokio::test]
async fn events_that_happen_together_have_one_time() {
    let rec = Recorder::default();
    let keep = rec.callback();
    let on_event: EventCallback = Arc::new(move |e: &Event| {
        if matches!(e.kind, EventKind::StepStart | EventKind::TaskStatusChanged) {
            std::thread::sleep(std::time::Duration::from_millis(3));
        }
        keep(e);
    });
    let result = run_with(RunOptions {
        on_event: Some(on_event),
        ..RunOptions::default()
    })
    .await;
    assert!(result.success);
    let events = rec.events();
    let time_of = |kind: EventKind, step: &str, task: Option<&str>| -> Vec<_> {
        events
            .iter()
            .filter(|e| e.kind == kind && e.step.as_deref() == Some(step))
            .filter(|e| task.is_none() || e.task_id.as_deref() == task)
            .map(|e| e.time.unwrap())
            .collect()
    };
    let mut pairs = 0;
    for start in events.iter().filter(|e| e.kind == EventKind::StepStart) {
        let step = start.step.as_deref().unwrap();
        let requests = time_of(EventKind::TaskRequest, step, None);
        assert!(!requests.is_empty(), "{step}");
        assert!(requests.iter().all(|t| Some(*t) == start.time), "{step}");
        pairs += requests.len();
    }
    for changed in events
        .iter()
        .filter(|e| e.kind == EventKind::TaskStatusChanged)
    {
        let (step, task) = (changed.step.as_deref().unwrap(), changed.task_id.as_deref());
        let responses = time_of(EventKind::TaskResponse, step, task);
        assert_eq!(responses, [changed.time.unwrap()], "{step} {task:?}");
        pairs += 1;
    }
    // Every task is in two pairs.
    assert_eq!(pairs, 2 * 4);
}
