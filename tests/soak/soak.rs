//! Section `soak`: many concurrent five-step workflows with mixed outcomes, all accounted for.
//!
//! Run `i` gets outcome `i mod 5` (success, remote failure, negotiation, timeout, cancel); a
//! seeded generator picks the step where that happens and the agent of every step (a quarter
//! stream, the rest are polled). Every run must come back exactly once, with `on_finish` called
//! exactly once, and with the code its script implies.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use a2aflow::EngineConfig;
use a2aflow::engine::A2aEngineClient;
use a2aflow::kernel::{self, RunInput, RunOptions};
use a2aflow::model::{
    EventKind, ExecutionResult, LoadOptions, StepStatus, Workflow, load_workflow_str,
};

use crate::host::{Host, shared_client};
use crate::memory::{mib, peak_kib, rss_kib};
use crate::rng::XorShift;
use crate::server::{POLLER, STREAMER, ServerProcess};

/// Steps per workflow (a chain).
const STEPS: usize = 5;
/// The deadline of the runs meant to time out.
const SHORT: Duration = Duration::from_secs(3);
/// The deadline of every other run.
const LONG: Duration = Duration::from_secs(900);
/// RSS allowed above baseline + 25 % of the growth after the soak, KiB.
const FIXED_SLACK_KIB: u64 = 4 * 1024;
/// Runs before the baseline is taken (connections, lazy statics, allocator warm).
const WARMUP: usize = 25;

/// What a run's script makes of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Success,
    RemoteFailure,
    Negotiation,
    Timeout,
    Cancel,
}

const OUTCOMES: [Outcome; 5] = [
    Outcome::Success,
    Outcome::RemoteFailure,
    Outcome::Negotiation,
    Outcome::Timeout,
    Outcome::Cancel,
];

/// One run's script.
#[derive(Clone, Debug)]
struct Plan {
    index: usize,
    outcome: Outcome,
    /// The step where the outcome happens.
    at: usize,
    agents: [&'static str; STEPS],
}

impl Plan {
    fn draw(index: usize, rng: &mut XorShift) -> Plan {
        let mut agents = [POLLER; STEPS];
        for agent in &mut agents {
            if rng.below(4) == 0 {
                *agent = STREAMER;
            }
        }
        Plan {
            index,
            outcome: OUTCOMES[index % OUTCOMES.len()],
            at: rng.below(STEPS),
            agents,
        }
    }

    fn word(&self, step: usize) -> &'static str {
        if step != self.at {
            return "task";
        }
        match self.outcome {
            Outcome::Success => "task",
            Outcome::RemoteFailure => "fail",
            Outcome::Negotiation => "negotiate",
            Outcome::Timeout | Outcome::Cancel => "hang",
        }
    }

    fn workflow(&self) -> Workflow {
        let steps: Vec<String> = (0..STEPS)
            .map(|k| {
                let next = if k + 1 < STEPS {
                    format!(r#", "next": [{{"step": "s{}"}}]"#, k + 1)
                } else {
                    String::new()
                };
                format!(
                    r#"{{"name": "s{k}", "subtasks": [{{"agent": "{}", "description": "{} run {} step {k}"}}]{next}}}"#,
                    self.agents[k],
                    self.word(k),
                    self.index
                )
            })
            .collect();
        let doc = format!(
            r#"{{"id": "soak-{}", "steps": [{}]}}"#,
            self.index,
            steps.join(", ")
        );
        load_workflow_str(&doc, LoadOptions::STRICT)
            .expect("the soak workflow is valid")
            .workflow
    }

    /// Checks the result against what the script implies.
    fn check(&self, result: &ExecutionResult) -> Result<(), String> {
        let code = result.failure.as_ref().map(|f| f.code.as_str());
        let status = |name: &str| {
            result
                .steps
                .iter()
                .find(|s| s.step_name == name)
                .map(|s| s.status)
        };
        let at = format!("s{}", self.at);
        match self.outcome {
            Outcome::Success | Outcome::Negotiation => {
                if !result.success || code.is_some() {
                    return Err(format!("expected success, got {code:?}"));
                }
                for k in 0..STEPS {
                    if status(&format!("s{k}")) != Some(StepStatus::Completed) {
                        return Err(format!("step s{k} not completed"));
                    }
                }
                if self.outcome == Outcome::Negotiation {
                    let step = result.steps.iter().find(|s| s.step_name == at);
                    let text = serde_json::to_string(&step).unwrap_or_default();
                    if !text.contains(r#""negotiation":"accepted""#) {
                        return Err(format!("{at} carries no accepted negotiation: {text}"));
                    }
                }
                Ok(())
            }
            Outcome::RemoteFailure => {
                let task_code = result
                    .steps
                    .iter()
                    .find(|s| s.step_name == at)
                    .and_then(|s| s.task_results.first())
                    .and_then(|t| t.error_code.clone());
                if result.success || task_code.as_deref() != Some("a2a.task_failed") {
                    return Err(format!(
                        "expected a2a.task_failed at {at}, got run {code:?}, task {task_code:?}"
                    ));
                }
                for k in self.at + 1..STEPS {
                    if status(&format!("s{k}")) == Some(StepStatus::Completed) {
                        return Err(format!("s{k} completed after the failure at {at}"));
                    }
                }
                Ok(())
            }
            Outcome::Timeout if code == Some("workflow.timeout") => Ok(()),
            Outcome::Cancel if code == Some("workflow.cancelled") => Ok(()),
            Outcome::Timeout | Outcome::Cancel => Err(format!(
                "expected {:?}'s code, got {code:?} ({:?})",
                self.outcome, result.failure
            )),
        }
    }
}

/// What came back from one run.
struct Returned {
    index: usize,
    result: ExecutionResult,
    finishes: usize,
}

async fn one_run(plan: Plan, client: Arc<A2aEngineClient>) -> Returned {
    // The default options carry a fresh cancellation token of their own.
    let defaults = RunOptions::default();
    let cancel = defaults.cancel.clone();
    let finishes = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&finishes);
    let mut options = RunOptions {
        timeout: if plan.outcome == Outcome::Timeout {
            SHORT
        } else {
            LONG
        },
        on_finish: Some(Arc::new(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
        })),
        ..defaults
    };
    if plan.outcome == Outcome::Cancel {
        // Cancel once the hanging step's remote task is known (no timer involved).
        let step = format!("s{}", plan.at);
        options.on_event = Some(Arc::new(move |event| {
            if event.kind == EventKind::AgentStatusUpdate
                && event.step.as_deref() == Some(step.as_str())
                && event.data["taskId"].is_string()
            {
                cancel.cancel();
            }
        }));
    }
    let result = kernel::run(
        plan.workflow(),
        RunInput::default(),
        Arc::new(Host),
        client,
        options,
    )
    .await;
    Returned {
        index: plan.index,
        result,
        finishes: finishes.load(Ordering::SeqCst),
    }
}

/// Runs `plans` all at once; returns each run's result by index, with the accounting problems.
async fn run_all(
    plans: &[Plan],
    client: &Arc<A2aEngineClient>,
) -> (Vec<ExecutionResult>, Vec<String>) {
    let mut set = tokio::task::JoinSet::new();
    for plan in plans {
        set.spawn(one_run(plan.clone(), Arc::clone(client)));
    }
    let first = plans.first().map_or(0, |p| p.index);
    let mut slots: Vec<Option<ExecutionResult>> = (0..plans.len()).map(|_| None).collect();
    let mut problems = Vec::new();
    while let Some(joined) = set.join_next().await {
        let returned = match joined {
            Ok(r) => r,
            Err(e) => {
                problems.push(format!("a run task ended abnormally: {e}"));
                continue;
            }
        };
        if returned.finishes != 1 {
            problems.push(format!(
                "run {}: on_finish called {} times",
                returned.index, returned.finishes
            ));
        }
        match slots.get_mut(returned.index - first) {
            Some(slot @ None) => *slot = Some(returned.result),
            Some(Some(_)) => problems.push(format!("run {}: result twice", returned.index)),
            None => problems.push(format!("run {}: not a planned run", returned.index)),
        }
    }
    let mut results = Vec::with_capacity(plans.len());
    for (plan, slot) in plans.iter().zip(slots) {
        match slot {
            Some(r) => results.push(r),
            None => problems.push(format!("run {}: no result (lost)", plan.index)),
        }
    }
    (results, problems)
}

/// The section's entry point (a child process).
pub fn run() {
    let runs = crate::env_count("A2AFLOW_SOAK_RUNS", 500);
    let seed = crate::seed();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let server = ServerProcess::start().await;
        let mut config = EngineConfig::default();
        config.timeouts.run_secs = LONG.as_secs_f64();
        let client = shared_client(&[server.card_url(POLLER), server.card_url(STREAMER)], &config).await;
        let mut rng = XorShift::new(seed);

        let warm: Vec<Plan> = (0..WARMUP).map(|i| Plan::draw(i, &mut rng)).collect();
        let (warm_results, problems) = run_all(&warm, &client).await;
        assert!(problems.is_empty(), "warm-up: {problems:?}");
        drop(warm_results);
        let baseline = rss_kib();

        let plans: Vec<Plan> = (WARMUP..WARMUP + runs)
            .map(|i| Plan::draw(i, &mut rng))
            .collect();
        let started = Instant::now();
        let (results, mut problems) = run_all(&plans, &client).await;
        let elapsed = started.elapsed().as_secs_f64();
        let peak = peak_kib();

        let mut ids = HashSet::new();
        let mut by_outcome = [0usize; 5];
        let mut remote_tasks = 0usize;
        for (plan, result) in plans.iter().zip(&results) {
            if let Err(why) = plan.check(result) {
                problems.push(format!("run {} ({:?} at s{}): {why}", plan.index, plan.outcome, plan.at));
            }
            if !ids.insert(result.execution_id.clone()) {
                problems.push(format!("run {}: execution id reused", plan.index));
            }
            by_outcome[plan.index % OUTCOMES.len()] += 1;
            remote_tasks += result.steps.iter().map(|s| s.task_results.len()).sum::<usize>();
        }
        drop(results);
        drop(client);
        server.stop().await;
        let metrics = tokio::runtime::Handle::current().metrics();
        let settled = crate::wait_until(Duration::from_secs(10), || metrics.num_alive_tasks() == 0).await;
        if !settled {
            problems.push(format!("{} tokio tasks alive after the soak", metrics.num_alive_tasks()));
        }
        drop(plans);
        // jemalloc's background thread returns freed pages within about a second.
        let growth = peak.saturating_sub(baseline);
        // Allowance for what stays by design: jemalloc's metadata and tokio's worker caches.
        let bound = baseline + growth / 4 + FIXED_SLACK_KIB;
        crate::wait_until(Duration::from_secs(10), || rss_kib() <= bound).await;
        let after = rss_kib();

        println!(
            "soak: {runs} runs (seed {seed:#x}; success/failure/negotiation/timeout/cancel = {by_outcome:?}), \
             {remote_tasks} remote tasks in {elapsed:.1} s; RSS baseline {:.1} MiB, peak {:.1} MiB, after {:.1} MiB",
            mib(baseline),
            mib(peak),
            mib(after)
        );
        crate::bench("soak.runs", runs as f64, "runs");
        crate::bench("soak.runs_per_s", runs as f64 / elapsed, "runs/s");
        crate::bench("soak.tasks_per_s", remote_tasks as f64 / elapsed, "tasks/s");
        crate::bench("soak.rss_baseline", mib(baseline), "MiB");
        crate::bench("soak.rss_peak", mib(peak), "MiB");
        crate::bench("soak.rss_after", mib(after), "MiB");
        if after > bound {
            problems.push(format!(
                "RSS after the soak {:.1} MiB is above baseline + 25% of the peak growth + 4 MiB ({:.1} MiB)",
                mib(after),
                mib(bound)
            ));
        }
        for p in problems.iter().take(20) {
            eprintln!("FAIL {p}");
        }
        assert!(problems.is_empty(), "soak: {} problems", problems.len());
    });
}
