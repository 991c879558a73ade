//! The crash test: a real `a2aflow run --store` process against in-process testkit agents is
//! killed with SIGKILL at a random point, then `a2aflow runs resume` continues the run in a
//! fresh process. With `--resend`, every run ends as an uninterrupted run does and each logical
//! task's business command takes effect exactly once; without it, a task whose send never
//! created a task ends `workflow.outcome_unknown` and nothing is sent twice.
//!
//! `A2AFLOW_CRASH_KILLS` (default 200) sets the kills of the `--resend` mode (the default mode
//! gets a fifth of them); `A2AFLOW_CRASH_SEED` the kill points. Prints
//! `crash: kills N resumes N duplicates 0 lost 0 outcome_unknown K`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap

mod host;
#[allow(dead_code)] // the crash test draws only `below`
#[path = "../soak/rng.rs"]
mod rng;
mod tally;

use a2aflow::testkit::{AgentSpec, Binding, TestServer};
use host::Host;
use rng::XorShift;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const OUTCOME_UNKNOWN: &str = "workflow.outcome_unknown";

/// The lease of every driver: a resume waits this long after a kill before it tries.
const LEASE: Duration = Duration::from_millis(300);

/// A chain, a parallel step with a `slow` task (the kill lands while a stream or a poll waits),
/// and a last step: four logical tasks on two agents, one blocking (JSON-RPC), one streaming
/// (HTTP+JSON).
fn workflow() -> Value {
    json!({"id": "crash", "name": "crash", "steps": [
        {"name": "first", "subtasks": [{"agent": "a", "description": "task one"}],
         "next": [{"step": "fanout"}]},
        {"name": "fanout", "subtasks": [
            {"agent": "a", "description": "slow 0.3 two"},
            {"agent": "b", "description": "slow 0.2 three"}],
         "next": [{"step": "last"}]},
        {"name": "last", "subtasks": [{"agent": "b", "description": "task four"}]}
    ]})
}

/// The figures the test prints.
#[derive(Default)]
struct Figures {
    kills: usize,
    resumes: usize,
    duplicates: usize,
    lost: usize,
    outcome_unknown: usize,
    /// Killed before the run's first journal record: there was nothing to resume.
    never_started: usize,
    /// Finished before the kill landed (not counted as kills).
    finished_first: usize,
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A kill point: a quarter of them within the first 15 ms after the id is printed (before or
/// around the first send), the rest spread over the run.
fn kill_delay(rng: &mut XorShift) -> Duration {
    let ms = if rng.below(4) == 0 {
        rng.below(15)
    } else {
        15 + rng.below(435)
    };
    Duration::from_millis(ms as u64)
}

struct Crash {
    host: Host,
    server: TestServer,
    agents: tally::Agents,
    baseline: Value,
    runtime: tokio::runtime::Runtime,
}

impl Crash {
    /// One kill and its resume; `resend` chooses the policy. Panics on a wrong result.
    fn once(&self, delay: Duration, resend: bool, figures: &mut Figures) {
        self.server.clear_requests();
        let killed = self.host.run_and_kill(delay);
        let id = killed
            .execution_id
            .expect("the run printed its execution id before it started");
        if killed.was_running {
            figures.kills += 1;
        } else {
            figures.finished_first += 1;
        }
        std::thread::sleep(LEASE);
        let resumed = self.host.resume(&id, resend);
        figures.resumes += 1;
        if resumed.code == Some(2) && resumed.stderr.contains("store.unknown_execution") {
            // Killed between printing the id and journaling the run: nothing may have gone out.
            assert!(
                tally::sends_per_context(&self.server).is_empty(),
                "a send before the run was journaled"
            );
            figures.never_started += 1;
            return;
        }
        let result = resumed
            .result
            .unwrap_or_else(|| panic!("resume printed no result: {}", resumed.stderr));
        assert_eq!(result["executionId"], id.as_str());
        let sends = tally::sends_per_context(&self.server);
        let tasks = tally::tasks(&result);
        let unknown = tasks
            .iter()
            .filter(|t| t.3.as_deref() == Some(OUTCOME_UNKNOWN))
            .count();
        figures.outcome_unknown += unknown;
        if resend {
            assert_eq!(unknown, 0, "with --resend nothing is unknown: {result}");
            assert_eq!(resumed.code, Some(0), "{}", resumed.stderr);
            assert_eq!(
                tally::shape(&result),
                tally::shape(&self.baseline),
                "run {id} after a kill at {delay:?}"
            );
        } else {
            self.check_without_resend(&result, &sends);
        }
        self.count_effects(&tasks, &sends, figures);
    }

    /// Without `--resend`: nothing was sent twice, and every task that is not
    /// `workflow.outcome_unknown` ended as in the uninterrupted run.
    fn check_without_resend(&self, result: &Value, sends: &BTreeMap<(String, String), usize>) {
        for ((agent, ctx), n) in sends {
            assert_eq!(*n, 1, "{agent}/{ctx} was sent {n} times without --resend");
        }
        let expected: BTreeMap<String, Value> = task_shapes(&self.baseline);
        for (description, shape) in task_shapes(result) {
            if shape["errorCode"] == OUTCOME_UNKNOWN {
                continue;
            }
            assert_eq!(
                Some(&shape),
                expected.get(&description),
                "task `{description}` after a resume without --resend"
            );
        }
    }

    /// Each logical task's command took effect once: one task at its agent for its context
    /// id, and no task under any other context id this run sent.
    fn count_effects(
        &self,
        tasks: &[(String, Option<String>, String, Option<String>)],
        sends: &BTreeMap<(String, String), usize>,
        figures: &mut Figures,
    ) {
        let mut seen = std::collections::BTreeSet::new();
        for (agent, ctx, _, code) in tasks {
            let Some(ctx) = ctx else {
                figures.lost += 1;
                continue;
            };
            seen.insert((agent.clone(), ctx.clone()));
            let n = self.runtime.block_on(self.agents.tasks_of(agent, ctx));
            let unknown = code.as_deref() == Some(OUTCOME_UNKNOWN);
            match n {
                0 if !unknown => figures.lost += 1,
                0 | 1 => {}
                n => figures.duplicates += n - 1,
            }
        }
        for (agent, ctx) in sends.keys() {
            if !seen.contains(&(agent.clone(), ctx.clone())) {
                figures.duplicates += self.runtime.block_on(self.agents.tasks_of(agent, ctx));
            }
        }
    }
}

/// Each task's compared shape by its description (unique in the workflow).
fn task_shapes(result: &Value) -> BTreeMap<String, Value> {
    tally::shape(result)["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["tasks"].as_array().cloned().unwrap_or_default())
        .map(|t| (t["description"].as_str().unwrap_or_default().to_owned(), t))
        .collect()
}

fn main() {
    rng::self_check();
    let kills = env_number("A2AFLOW_CRASH_KILLS", 200) as usize;
    let seed = env_number("A2AFLOW_CRASH_SEED", 0x5eed_c4a5);
    let started = Instant::now();
    let bin = host::cli_binary();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime
        .block_on(
            TestServer::builder()
                .request_log_capacity(100_000)
                .agent(AgentSpec::new("a"))
                .agent(
                    AgentSpec::new("b")
                        .streaming(true)
                        .bindings(&[Binding::HttpJson]),
                )
                .spawn(),
        )
        .unwrap();
    let agents = runtime.block_on(tally::Agents::connect(&server, &["a", "b"]));
    let dir = tempfile::tempdir().unwrap();
    let workflow_path = dir.path().join("crash.json");
    std::fs::write(&workflow_path, workflow().to_string()).unwrap();
    let config = dir.path().join("engine.toml");
    // A short lease, so a killed driver's run is taken over quickly, and the shortest poll.
    std::fs::write(
        &config,
        format!(
            "store_lease_secs = {}\npoll_interval_ms = 100\n",
            LEASE.as_secs_f64()
        ),
    )
    .unwrap();
    let host = Host {
        bin,
        workflow: workflow_path,
        store: dir.path().join("runs.db"),
        config,
        args: host::agent_args([("a", server.card_url("a")), ("b", server.card_url("b"))]),
    };
    let (_, baseline) = host.run_uninterrupted();
    assert_eq!(baseline["success"], true, "{baseline}");
    let crash = Crash {
        host,
        server,
        agents,
        baseline,
        runtime,
    };
    let mut rng = XorShift::new(seed);
    let mut figures = Figures::default();
    for (resend, target) in [(true, kills), (false, (kills / 5).max(1))] {
        let goal = figures.kills + target;
        let mut tries = 0;
        while figures.kills < goal {
            tries += 1;
            assert!(
                tries <= 3 * target,
                "too few kills landed while the run was running"
            );
            crash.once(kill_delay(&mut rng), resend, &mut figures);
        }
    }
    println!(
        "crash: kills {} resumes {} duplicates {} lost {} outcome_unknown {}",
        figures.kills, figures.resumes, figures.duplicates, figures.lost, figures.outcome_unknown
    );
    println!(
        "crash: seed {seed:#x} never_started {} finished_before_kill {} in {:.1}s",
        figures.never_started,
        figures.finished_first,
        started.elapsed().as_secs_f64()
    );
    let Crash {
        server,
        agents,
        runtime,
        ..
    } = crash;
    drop(agents);
    runtime.block_on(server.shutdown()).unwrap();
    assert_eq!(
        figures.duplicates, 0,
        "a business command took effect twice"
    );
    assert_eq!(figures.lost, 0, "a business command was lost");
}
