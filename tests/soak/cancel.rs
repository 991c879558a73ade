//! Section `cancel`: one workflow cancelled at a seeded random point, many times.
//!
//! The workflow is a chain: a quick task (blocking send), a streamed task, a slow task (blocking
//! send), a negotiation. Run `r` draws `k` in `0..=E` (E = the events of an uncancelled run)
//! and cancels when the k-th event arrives, so cancels land before, between and inside remote
//! calls; `k == E` never cancels. After each run:
//! - the result is `workflow.cancelled` (or a success, when every task's result was in hand
//!   before the cancel, or the cancel never came);
//! - after the cancel: no step start, no agent request, no negotiation, no
//!   task completing, no run completion; no step the result calls completed whose task result
//!   was not in hand before the cancel;
//! - no host callback (`on_task`, `on_negotiation`) after the cancel;
//! - no `task_request` after the cancel either: a step whose `step_start` (or an earlier
//!   `task_request`) carried the cancel announces no further task;
//! - every remote task the engine knew as not final got a CancelTask on the agent (request log);
//! - no tokio task is left alive beyond the agent server's own, and no connection stays open.
//!
//! Workers run on current-thread runtimes of their own, each with its own in-process agents.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use a2aflow::a2at::NEGOTIATION_T_EXTENSION_URI;
use a2aflow::kernel::{CallbackError, ControlPoint, RunInput};
use a2aflow::model::{
    Event, EventKind, ExecutionResult, LoadOptions, MessageContent, NegotiationReply,
    NegotiationRequest, StepStatus, TaskRequest, TaskResult, Workflow, load_workflow_str,
};
use a2aflow::testkit::{AgentSpec, Route, TestServer};
use a2aflow::{EngineConfig, HostHooks, execute_workflow, fetch_agent_cards};

use crate::host::Host;
use crate::rng::XorShift;
use crate::server::{POLLER, STREAMER};

/// Worker threads (each mostly waits on the agents).
const WORKERS: usize = 12;
/// How long cleanup (CancelTask, connections, tasks) may take after a run returns.
const SETTLE: Duration = Duration::from_secs(5);

const WORKFLOW: &str = r#"{"id": "cancel", "steps": [
  {"name": "quick", "subtasks": [{"agent": "poller", "description": "task quick"}], "next": [{"step": "streamed"}]},
  {"name": "streamed", "subtasks": [{"agent": "streamer", "description": "stream three"}], "next": [{"step": "slow"}]},
  {"name": "slow", "subtasks": [{"agent": "poller", "description": "slow 0.15 then done"}], "next": [{"step": "negotiated"}]},
  {"name": "negotiated", "subtasks": [{"agent": "streamer", "description": "negotiate terms"}]}
]}"#;

/// Events that must not follow a cancel.
const NOT_AFTER_CANCEL: [EventKind; 5] = [
    EventKind::StepStart,
    EventKind::TaskRequest,
    EventKind::AgentRequest,
    EventKind::NegotiationRequest,
    EventKind::Complete,
];

/// Events that end a run: a cancel at one of them has nothing left to stop.
const CLOSING: [EventKind; 4] = [
    EventKind::WorkflowComplete,
    EventKind::Complete,
    EventKind::Error,
    EventKind::Close,
];

/// Steps of the workflow.
const STEPS: usize = 4;

/// What one run's event callback saw.
#[derive(Default)]
struct Seen {
    count: usize,
    cancelled_at: Option<EventKind>,
    /// Steps whose task result (`task_status_changed` COMPLETED) arrived before the cancel.
    in_hand: HashSet<String>,
    after_cancel: Vec<EventKind>,
    /// Tasks reported COMPLETED after the cancel.
    completed_after_cancel: Vec<String>,
    /// Host callbacks made after the cancel.
    callbacks_after_cancel: Vec<String>,
    /// Remote task id → whether its last known state was final.
    remote: HashMap<String, bool>,
}

fn workflow() -> Workflow {
    load_workflow_str(WORKFLOW, LoadOptions::STRICT)
        .expect("the cancel workflow is valid")
        .workflow
}

fn observe(seen: &Mutex<Seen>, cancel_at: usize, cancel: &dyn Fn(), event: &Event) {
    let mut s = seen.lock().unwrap();
    s.count += 1;
    if event.kind == EventKind::AgentStatusUpdate
        && let Some(id) = event.data["taskId"].as_str()
    {
        let is_final = event.data["isFinal"].as_bool().unwrap_or(false);
        s.remote.insert(id.to_owned(), is_final);
    }
    let completed =
        event.kind == EventKind::TaskStatusChanged && event.data["status"] == "COMPLETED";
    if s.cancelled_at.is_some() {
        s.after_cancel.push(event.kind);
        if completed {
            s.completed_after_cancel
                .push(event.step.clone().unwrap_or_default());
        }
        return;
    }
    if completed && let Some(step) = &event.step {
        s.in_hand.insert(step.clone());
    }
    if s.count == cancel_at {
        s.cancelled_at = Some(event.kind);
        drop(s);
        cancel();
    }
}

/// The shared host, noting every callback made after the cancel.
struct WatchedHost {
    seen: Arc<Mutex<Seen>>,
}

impl WatchedHost {
    fn note(&self, what: &str) {
        let mut s = self.seen.lock().unwrap();
        if s.cancelled_at.is_some() {
            s.callbacks_after_cancel.push(what.to_owned());
        }
    }
}

#[async_trait::async_trait]
impl ControlPoint for WatchedHost {
    async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
        self.note(&format!("on_task({})", request.step_name));
        Host.on_task(request).await
    }

    async fn on_self_task(&self, request: TaskRequest) -> Result<TaskResult, CallbackError> {
        Host.on_self_task(request).await
    }

    async fn on_negotiation(
        &self,
        request: NegotiationRequest,
    ) -> Result<NegotiationReply, CallbackError> {
        self.note("on_negotiation");
        Host.on_negotiation(request).await
    }
}

struct Agents {
    server: TestServer,
    config: EngineConfig,
    cards: Vec<a2aflow::model::a2a::AgentCard>,
    /// Tokio tasks alive with only the agents running.
    idle_tasks: usize,
}

async fn agents() -> Agents {
    let agent = |name: &str, streaming: bool| {
        AgentSpec::new(name)
            .streaming(streaming)
            .extension(NEGOTIATION_T_EXTENSION_URI, false)
    };
    let server = TestServer::builder()
        .agent(agent(POLLER, false))
        .agent(agent(STREAMER, true))
        .spawn()
        .await
        .unwrap();
    let mut config = EngineConfig::default();
    config.timeouts.run_secs = 30.0;
    config.cancel_timeout_secs = 2.0;
    let cards = fetch_agent_cards(
        &[server.card_url(POLLER), server.card_url(STREAMER)],
        &config,
    )
    .await
    .unwrap();
    let metrics = tokio::runtime::Handle::current().metrics();
    assert!(crate::wait_until(SETTLE, || server.open_connections() == 0).await);
    let idle_tasks = metrics.num_alive_tasks();
    Agents {
        server,
        config,
        cards,
        idle_tasks,
    }
}

/// What one run showed: the remote tasks that needed a CancelTask, and whether a `task_request`
/// event followed the cancel.
struct RunReport {
    remote_cancels: usize,
}

/// One run cancelled at the `cancel_at`-th event (1-based; never when past the last event).
async fn one_run(agents: &Agents, cancel_at: usize) -> Result<RunReport, String> {
    agents.server.clear_requests();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let mut hooks = HostHooks::default();
    let token = hooks.run_options.cancel.clone();
    let observed = Arc::clone(&seen);
    hooks.run_options.on_event = Some(Arc::new(move |event| {
        observe(&observed, cancel_at, &|| token.cancel(), event);
    }));
    let result: ExecutionResult = execute_workflow(
        workflow(),
        &agents.cards,
        Arc::new(WatchedHost {
            seen: Arc::clone(&seen),
        }),
        &agents.config,
        RunInput::default(),
        hooks,
    )
    .await
    .map_err(|f| format!("construction failed: {f}"))?;

    let mut problems = Vec::new();
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    let code = result.failure.as_ref().map(|f| f.code.clone());
    match seen.cancelled_at {
        None if !result.success => problems.push(format!("uncancelled run failed: {code:?}")),
        None => {}
        Some(kind) if CLOSING.contains(&kind) => {}
        Some(_) if result.success && seen.in_hand.len() == STEPS => {}
        Some(kind) if code.as_ref().map(|c| c.as_str()) != Some("workflow.cancelled") => problems
            .push(format!(
                "cancelled at {kind:?}, result {code:?}, success {}",
                result.success
            )),
        Some(_) => {}
    }
    let all_in_hand = seen.in_hand.len() == STEPS;
    if let Some(bad) = seen
        .after_cancel
        .iter()
        .find(|k| NOT_AFTER_CANCEL.contains(k) && !(**k == EventKind::Complete && all_in_hand))
    {
        problems.push(format!(
            "{bad:?} after the cancel at {:?} (then: {:?})",
            seen.cancelled_at, seen.after_cancel
        ));
    }
    if !seen.completed_after_cancel.is_empty() {
        problems.push(format!(
            "tasks completed after the cancel at {:?}: {:?}",
            seen.cancelled_at, seen.completed_after_cancel
        ));
    }
    for step in &result.steps {
        if step.status == StepStatus::Completed
            && seen.cancelled_at.is_some()
            && !seen.in_hand.contains(step.step_name.as_str())
        {
            problems.push(format!(
                "{} completed without its result in hand at the cancel",
                step.step_name
            ));
        }
    }
    // The kernel never calls the host once the run is cancelled.
    if !seen.callbacks_after_cancel.is_empty() {
        problems.push(format!(
            "host callbacks after the cancel at event {:?}: {:?}",
            seen.cancelled_at, seen.callbacks_after_cancel
        ));
    }
    let mut cancelled_remote = 0;
    if seen.cancelled_at.is_some() {
        for (id, _) in seen.remote.iter().filter(|(_, is_final)| !**is_final) {
            cancelled_remote += 1;
            let reached = crate::wait_until(SETTLE, || {
                agents.server.requests().iter().any(|r| {
                    r.route == Some(Route::Cancel)
                        && (r.path.contains(id.as_str())
                            || r.body
                                .as_ref()
                                .is_some_and(|b| b.to_string().contains(id.as_str())))
                })
            })
            .await;
            if !reached {
                problems.push(format!("no CancelTask reached the agent for task {id}"));
            }
        }
    }
    drop(result);
    if !crate::wait_until(SETTLE, || agents.server.open_connections() == 0).await {
        problems.push(format!(
            "{} connections left open",
            agents.server.open_connections()
        ));
    }
    let metrics = tokio::runtime::Handle::current().metrics();
    if !crate::wait_until(SETTLE, || metrics.num_alive_tasks() <= agents.idle_tasks).await {
        problems.push(format!(
            "{} tokio tasks alive, {} with only the agents running",
            metrics.num_alive_tasks(),
            agents.idle_tasks
        ));
    }
    if problems.is_empty() {
        Ok(RunReport {
            remote_cancels: cancelled_remote,
        })
    } else {
        Err(problems.join("; "))
    }
}

/// Counts the events of one uncancelled run.
async fn events_of_a_full_run(agents: &Agents) -> usize {
    let count = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&count);
    let mut hooks = HostHooks::default();
    hooks.run_options.on_event = Some(Arc::new(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    }));
    let result = execute_workflow(
        workflow(),
        &agents.cards,
        Arc::new(Host),
        &agents.config,
        RunInput::default(),
        hooks,
    )
    .await
    .unwrap();
    assert!(
        result.success,
        "the uncancelled run failed: {:?}",
        result.failure
    );
    count.load(Ordering::SeqCst)
}

/// The section's entry point (a child process).
pub fn run() {
    let runs = crate::env_count("A2AFLOW_CANCEL_RUNS", 1000);
    let seed = crate::seed();
    let next = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(Mutex::new(Vec::new()));
    let cancelled_tasks = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let next = Arc::clone(&next);
            let failures = Arc::clone(&failures);
            let cancelled_tasks = Arc::clone(&cancelled_tasks);
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async {
                    let agents = agents().await;
                    let events = events_of_a_full_run(&agents).await;
                    loop {
                        let r = next.fetch_add(1, Ordering::SeqCst);
                        if r >= runs {
                            break;
                        }
                        let cancel_at = 1 + XorShift::new(seed ^ (r as u64 + 1)).below(events + 1);
                        match one_run(&agents, cancel_at).await {
                            Ok(report) => {
                                cancelled_tasks.fetch_add(report.remote_cancels, Ordering::SeqCst);
                            }
                            Err(why) => failures.lock().unwrap().push(format!(
                                "run {r} (cancel at event {cancel_at}/{events}): {why}"
                            )),
                        }
                    }
                    agents.server.shutdown().await.unwrap();
                });
            })
        })
        .collect();
    for w in workers {
        w.join().expect("a cancel worker panicked");
    }
    let failures = failures.lock().unwrap();
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "cancel: {runs} runs cancelled at random events (seed {seed:#x}), {} remote tasks known \
         and not final at the cancel, each got a CancelTask; {} failed; {elapsed:.1} s",
        cancelled_tasks.load(Ordering::SeqCst),
        failures.len()
    );
    crate::bench("cancel.runs", runs as f64, "runs");
    crate::bench(
        "cancel.remote_cancels",
        cancelled_tasks.load(Ordering::SeqCst) as f64,
        "CancelTask",
    );
    crate::bench("cancel.failed", failures.len() as f64, "runs");
    for f in failures.iter().take(20) {
        eprintln!("FAIL {f}");
    }
    assert!(
        failures.is_empty(),
        "cancel: {} runs failed",
        failures.len()
    );
}
