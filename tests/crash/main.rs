//! The crash test: a real `a2aflow run --store` process against in-process testkit agents is
//! killed with SIGKILL at a random point, then `a2aflow runs resume` continues the run in a
//! fresh process. With `--resend`, every run ends as an uninterrupted run does and each logical
//! task's business command takes effect exactly once; without it, a task whose send never
//! created a task ends `workflow.outcome_unknown` and nothing is sent twice.
//!
//! Two workflows take turns: a chain with a parallel `slow` step, and a routed one whose first
//! task negotiates (Negotiation-T) before conditional edges choose its successors, so kills land
//! mid negotiation and during routing; there no host callback may be answered twice (the
//! journal holds one answer per route edge and per negotiation exchange). Some resumes are
//! killed too and resumed again. After the kills: two resumes racing on one killed run (one
//! drives it, the other gets `store.locked`), and `runs cancel` of a killed run carried out by
//! the resume (the agent sees the CancelTask, the run ends cancelled).
//!
//! `A2AFLOW_CRASH_KILLS` (default 200) sets the kills of the `--resend` mode (the default mode
//! gets a fifth of them); `A2AFLOW_CRASH_SEED` the kill points. Prints
//! `crash: kills N resumes N duplicates 0 lost 0 outcome_unknown K`, then the new counts
//! (`crash: mid_negotiation N routing N resume_kills N reasked 0 duplicate_replies 0 raced N
//! cancelled N`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap

mod host;
mod journal;
#[allow(dead_code)] // the crash test draws only `below`
#[path = "../soak/rng.rs"]
mod rng;
mod scenes;
mod tally;

use a2aflow::testkit::{AgentSpec, Binding, NEGOTIATION_T_URI, TestServer};
use host::Host;
use journal::KillPoint;
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

/// A negotiating task (agent `n` proposes, the CLI accepts) whose conditional edges are decided
/// by the `--routes` table of [`routes`]: `left` is taken, `right` skipped, then `close` behind
/// another conditional edge.
fn routed_workflow() -> Value {
    json!({"id": "routed", "name": "routed", "steps": [
        {"name": "ask", "subtasks": [{"agent": "n", "description": "negotiate the price"}],
         "next": [{"step": "left", "condition": "the price was agreed"},
                  {"step": "right", "condition": "the price was refused"}]},
        {"name": "left", "subtasks": [{"agent": "a", "description": "slow 0.2 left"}],
         "next": [{"step": "close", "condition": "left is done"}]},
        {"name": "right", "subtasks": [{"agent": "b", "description": "task right"}]},
        {"name": "close", "subtasks": [{"agent": "b", "description": "task close"}]}
    ]})
}

/// The route decisions of [`routed_workflow`], for `--routes`.
fn routes() -> Value {
    json!({"ask->left": true, "ask->right": false, "left->close": true})
}

/// The edges of [`routed_workflow`] whose decision the host gives, each exactly once per run.
const ROUTED_EDGES: [&str; 3] = ["route ask->left", "route ask->right", "route left->close"];

/// The steps with conditional edges and the successor each one's taken edge leads to.
const ROUTED_STEPS: [(&str, &str); 2] = [("ask", "left"), ("left", "close")];

/// The local task id suffix of the negotiating subtask.
const NEGOTIATING: &str = ":ask:0";

/// Every this-many-th kill, the first resume is killed too before the run is resumed again.
const RESUME_KILL_EVERY: usize = 6;

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
    /// Kills of the routed workflow that landed mid negotiation.
    mid_negotiation: usize,
    /// Kills of the routed workflow that landed during routing (between two steps).
    routing: usize,
    /// Resumes killed while they drove the run (then resumed again).
    resume_kills: usize,
    /// Host callbacks answered twice across kill and resume.
    reasked: usize,
    /// Negotiation replies an agent received more than once.
    duplicate_replies: usize,
    /// Killed runs resumed by two processes at once.
    raced: usize,
    /// Killed runs cancelled with `runs cancel` and ended by their resume.
    cancelled: usize,
}

/// A workflow of the crash test: its host processes and its uninterrupted result.
struct Flow {
    host: Host,
    baseline: Value,
    /// The routed workflow (negotiation and routing checks), else the chain.
    routed: bool,
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A kill point: a quarter of them within the first 15 ms after the id is printed (before or
/// around the first send), the rest spread over the run (`span_ms` long).
fn kill_delay(rng: &mut XorShift, span_ms: usize) -> Duration {
    let ms = if rng.below(4) == 0 {
        rng.below(15)
    } else {
        15 + rng.below(span_ms - 15)
    };
    Duration::from_millis(ms as u64)
}

/// The kill span of the chain workflow; the routed one is shorter (one `slow` task).
const CHAIN_SPAN_MS: usize = 450;
const ROUTED_SPAN_MS: usize = 300;

/// A kill point of the routed workflow: half of them [`kill_delay`]'s, the other half early in
/// the run (15 to 75 ms after the id), where the negotiation and the first routing happen.
fn routed_kill_delay(rng: &mut XorShift) -> Duration {
    if rng.below(2) == 0 {
        Duration::from_millis(15 + rng.below(60) as u64)
    } else {
        kill_delay(rng, ROUTED_SPAN_MS)
    }
}

struct Crash {
    flows: [Flow; 2],
    server: TestServer,
    agents: tally::Agents,
    runtime: tokio::runtime::Runtime,
}

impl Crash {
    /// One kill and its resume; `resend` chooses the policy; `kill_resume` kills the first
    /// resume too. Panics on a wrong result.
    fn once(
        &self,
        flow: &Flow,
        delay: Duration,
        resend: bool,
        kill_resume: Option<Duration>,
        figures: &mut Figures,
    ) {
        self.server.clear_requests();
        let killed = flow.host.run_and_kill(delay);
        let id = killed
            .execution_id
            .expect("the run printed its execution id before it started");
        if killed.was_running {
            figures.kills += 1;
            if flow.routed {
                self.classify(flow, &id, figures);
            }
        } else {
            figures.finished_first += 1;
        }
        std::thread::sleep(LEASE);
        if let Some(after) = kill_resume {
            if flow.host.resume_and_kill(&id, resend, after) {
                figures.resume_kills += 1;
            }
            figures.resumes += 1;
            std::thread::sleep(LEASE);
        }
        let resumed = flow.host.resume(&id, resend);
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
            assert_eq!(
                resumed.code,
                Some(0),
                "run {id} after a kill at {delay:?}: {}\n{result}",
                resumed.stderr
            );
            assert_eq!(
                tally::shape(&result),
                tally::shape(&flow.baseline),
                "run {id} after a kill at {delay:?}"
            );
        } else {
            self.check_without_resend(flow, &result, &sends);
        }
        self.count_effects(&tasks, &sends, figures);
        if flow.routed {
            self.count_answers(flow, &id, resend && unknown == 0, figures);
        }
    }

    /// Where the kill of a routed run landed, by the journal the killed process left (nothing
    /// to classify when it was killed before the run's first record).
    fn classify(&self, flow: &Flow, id: &str, figures: &mut Figures) {
        let Some(journal) = self.runtime.block_on(journal::load(&flow.host.store, id)) else {
            return;
        };
        match journal::kill_point(&journal, NEGOTIATING, &ROUTED_STEPS) {
            KillPoint::MidNegotiation => figures.mid_negotiation += 1,
            KillPoint::Routing => figures.routing += 1,
            KillPoint::Elsewhere => {}
        }
    }

    /// No host callback was answered twice across the kill and the resume (the journal holds
    /// every answer); with the whole run done, each route edge was decided exactly once. No
    /// negotiation reply reached the agent twice.
    fn count_answers(&self, flow: &Flow, id: &str, whole_run: bool, figures: &mut Figures) {
        let journal = self
            .runtime
            .block_on(journal::load(&flow.host.store, id))
            .expect("the resumed run's journal");
        let answers = journal::answers(&journal);
        figures.reasked += answers.values().map(|n| n.saturating_sub(1)).sum::<usize>();
        if whole_run {
            for edge in ROUTED_EDGES {
                assert_eq!(answers.get(edge), Some(&1), "run {id}: {edge}: {answers:?}");
            }
        }
        figures.duplicate_replies += tally::follow_ups_per_context(&self.server)
            .values()
            .map(|n| n.saturating_sub(1))
            .sum::<usize>();
    }

    /// Without `--resend`: nothing was sent twice, and every task that is not
    /// `workflow.outcome_unknown` ended as in the uninterrupted run.
    fn check_without_resend(
        &self,
        flow: &Flow,
        result: &Value,
        sends: &BTreeMap<(String, String), usize>,
    ) {
        for ((agent, ctx), n) in sends {
            assert_eq!(*n, 1, "{agent}/{ctx} was sent {n} times without --resend");
        }
        let expected: BTreeMap<String, Value> = task_shapes(&flow.baseline);
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

/// Writes `workflow` and starts its host: the chain's or, `routes` given, the routed one's.
fn flow_host(
    dir: &std::path::Path,
    name: &str,
    workflow: &Value,
    routes: Option<&Value>,
    base: &Host,
) -> Host {
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, workflow.to_string()).unwrap();
    let mut args = base.args.clone();
    if let Some(routes) = routes {
        let table = dir.join(format!("{name}-routes.json"));
        std::fs::write(&table, routes.to_string()).unwrap();
        args.extend(["--routes".to_owned(), table.display().to_string()]);
    }
    Host {
        bin: base.bin.clone(),
        workflow: path,
        store: base.store.clone(),
        config: base.config.clone(),
        args,
    }
}

fn flow(host: Host, routed: bool) -> Flow {
    let (_, baseline) = host.run_uninterrupted();
    assert_eq!(baseline["success"], true, "{baseline}");
    Flow {
        host,
        baseline,
        routed,
    }
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
                .agent(AgentSpec::new("n").extension(NEGOTIATION_T_URI, false))
                .spawn(),
        )
        .unwrap();
    let agents = runtime.block_on(tally::Agents::connect(&server, &["a", "b", "n"]));
    let dir = tempfile::tempdir().unwrap();
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
    let base = Host {
        bin,
        workflow: dir.path().join("none.json"),
        store: dir.path().join("runs.db"),
        config,
        args: host::agent_args([
            ("a", server.card_url("a")),
            ("b", server.card_url("b")),
            ("n", server.card_url("n")),
        ]),
    };
    let chain = flow_host(dir.path(), "crash", &workflow(), None, &base);
    let routed = flow_host(
        dir.path(),
        "routed",
        &routed_workflow(),
        Some(&routes()),
        &base,
    );
    let cancel = flow_host(
        dir.path(),
        "cancel",
        &scenes::cancel_workflow(),
        None,
        &base,
    );
    let race = flow(
        flow_host(dir.path(), "race", &scenes::race_workflow(), None, &base),
        false,
    );
    let crash = Crash {
        flows: [flow(chain, false), flow(routed, true)],
        server,
        agents,
        runtime,
    };
    let mut rng = XorShift::new(seed);
    let mut figures = Figures::default();
    let mut round = 0;
    for (resend, target) in [(true, kills), (false, (kills / 5).max(1))] {
        let goal = figures.kills + target;
        let mut tries = 0;
        while figures.kills < goal {
            tries += 1;
            assert!(
                tries <= 3 * target,
                "too few kills landed while the run was running"
            );
            round += 1;
            let flow = &crash.flows[round % 2];
            let delay = if flow.routed {
                routed_kill_delay(&mut rng)
            } else {
                kill_delay(&mut rng, CHAIN_SPAN_MS)
            };
            let kill_resume = (round % RESUME_KILL_EVERY == 0)
                .then(|| Duration::from_millis(rng.below(200) as u64));
            crash.once(flow, delay, resend, kill_resume, &mut figures);
        }
    }
    scenes::racing_resumes(&crash, &race, &mut figures);
    scenes::pending_cancels(&crash, &cancel, &mut figures);
    println!(
        "crash: kills {} resumes {} duplicates {} lost {} outcome_unknown {}",
        figures.kills, figures.resumes, figures.duplicates, figures.lost, figures.outcome_unknown
    );
    println!(
        "crash: mid_negotiation {} routing {} resume_kills {} reasked {} duplicate_replies {} \
         raced {} cancelled {}",
        figures.mid_negotiation,
        figures.routing,
        figures.resume_kills,
        figures.reasked,
        figures.duplicate_replies,
        figures.raced,
        figures.cancelled
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
    assert_eq!(figures.reasked, 0, "a host callback was answered twice");
    assert_eq!(
        figures.duplicate_replies, 0,
        "a negotiation reply reached the agent twice"
    );
    // A small run (a quick local check) may miss them; the CI size never does.
    assert!(
        kills < 50 || (figures.mid_negotiation > 0 && figures.routing > 0),
        "no kill landed mid negotiation or during routing"
    );
}
