//! Property tests over random DAGs: at-most-once, reachability, readiness, termination and causal
//! event order, with random route decisions, failures and delays (paused tokio clock).

use a2aflow_kernel::{
    AgentScript, CallbackError, ControlPoint, InMemoryClient, RunInput, RunOptions, ScriptedReply,
};
use a2aflow_model::{
    Edge, Event, EventKind, Failure, RouteDecision, RouteRequest, Step, Subtask, Workflow,
};
use async_trait::async_trait;
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Debug, Clone)]
struct Node {
    out: Vec<(usize, bool, bool)>, // (target, conditional, allowed)
    fail: bool,
    delay_ms: u64,
}

fn graph() -> impl Strategy<Value = Vec<Node>> {
    (1usize..=200).prop_flat_map(|n| {
        proptest::collection::vec(
            (
                proptest::collection::vec(
                    (any::<usize>(), any::<bool>(), prop::bool::weighted(0.7)),
                    0..4,
                ),
                prop::bool::weighted(0.03),
                0u64..20,
            ),
            n,
        )
        .prop_map(move |raw| {
            raw.into_iter()
                .enumerate()
                .map(|(i, (edges, fail, delay_ms))| {
                    let mut seen = HashSet::new();
                    let out = if i + 1 >= n {
                        Vec::new()
                    } else {
                        edges
                            .into_iter()
                            .map(|(o, c, a)| (i + 1 + o % (n - i - 1), c, a))
                            .filter(|(t, _, _)| seen.insert(*t))
                            .collect()
                    };
                    Node {
                        out,
                        fail,
                        delay_ms,
                    }
                })
                .collect()
        })
    })
}

struct RouteHost {
    decisions: HashMap<(String, String), bool>,
}

#[async_trait]
impl ControlPoint for RouteHost {
    async fn on_task(
        &self,
        r: a2aflow_model::TaskRequest,
    ) -> Result<a2aflow_model::MessageContent, CallbackError> {
        Ok(a2aflow_model::MessageContent::text(r.description))
    }
    async fn on_route(&self, r: RouteRequest) -> Result<RouteDecision, CallbackError> {
        let allowed = self.decisions[&(r.source_step.clone(), r.target_step.clone())];
        Ok(RouteDecision {
            allowed,
            reason: None,
        })
    }
}

fn name(i: usize) -> String {
    format!("s{i}")
}

fn build(nodes: &[Node]) -> (Workflow, RouteHost, InMemoryClient) {
    let mut decisions = HashMap::new();
    let mut client = InMemoryClient::new().recording(false);
    let steps = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let agent = format!("ag{i}");
            let reply = if n.fail {
                ScriptedReply::Fail(Failure::new(
                    a2aflow_model::ErrorCode::A2aTaskFailed,
                    "boom",
                ))
            } else {
                ScriptedReply::Echo
            };
            client = std::mem::take(&mut client).agent(
                agent.clone(),
                AgentScript::reply(reply).after(Duration::from_millis(n.delay_ms)),
            );
            Step {
                name: name(i),
                subtasks: vec![Subtask {
                    agent,
                    skill: "k".into(),
                    description: format!("task {i}"),
                    workflow: None,
                    retry: None,
                    timeout: None,
                }],
                next: n
                    .out
                    .iter()
                    .map(|&(t, c, a)| {
                        if c {
                            decisions.insert((name(i), name(t)), a);
                        }
                        Edge {
                            step: name(t).into(),
                            condition: if c { "cond".into() } else { "".into() },
                        }
                    })
                    .collect(),
                ..Default::default()
            }
        })
        .collect();
    (
        Workflow {
            id: "p".into(),
            name: "p".into(),
            steps,
            ..Default::default()
        },
        RouteHost { decisions },
        client,
    )
}

/// The steps that run when nothing fails: reachable from a root through activated edges.
fn oracle(nodes: &[Node]) -> HashSet<usize> {
    let n = nodes.len();
    let mut has_pred = vec![false; n];
    for node in nodes {
        for &(t, _, _) in &node.out {
            has_pred[t] = true;
        }
    }
    let mut runs: HashSet<usize> = (0..n).filter(|&i| !has_pred[i]).collect();
    for (i, node) in nodes.iter().enumerate() {
        // indices are topologically ordered (edges only go forward)
        if runs.contains(&i) {
            for &(t, c, a) in &node.out {
                if !c || a {
                    runs.insert(t);
                }
            }
        }
    }
    runs
}

fn check(
    nodes: &[Node],
    events: &[Event],
    result: &a2aflow_model::ExecutionResult,
) -> Result<(), TestCaseError> {
    let expected = oracle(nodes);
    let index: HashMap<String, usize> = (0..nodes.len()).map(|i| (name(i), i)).collect();
    // seq is dense and ordered
    for (k, e) in events.iter().enumerate() {
        prop_assert_eq!(e.seq, k as u64);
    }
    let pos = |kind: EventKind, step: usize| {
        events
            .iter()
            .position(|e| e.kind == kind && e.step.as_deref() == Some(name(step).as_str()))
    };
    let mut started = HashSet::new();
    for e in events.iter().filter(|e| e.kind == EventKind::StepStart) {
        let s = index[e.step.as_deref().unwrap()];
        prop_assert!(started.insert(s), "step {} started twice", s);
    }
    let ran: Vec<usize> = result
        .steps
        .iter()
        .map(|s| index[s.step_name.as_str()])
        .collect();
    prop_assert_eq!(
        ran.iter().copied().collect::<HashSet<_>>().len(),
        ran.len(),
        "a step ran twice"
    );
    prop_assert_eq!(ran.iter().copied().collect::<HashSet<_>>(), started.clone());
    let any_fail = ran.iter().any(|&s| nodes[s].fail);
    prop_assert_eq!(result.success, !any_fail);
    if result.success {
        prop_assert_eq!(&started, &expected);
    } else {
        prop_assert!(started.is_subset(&expected));
    }
    // readiness: every predecessor resolved before the step started
    for &t in &started {
        let t_start = pos(EventKind::StepStart, t).unwrap();
        let mut activated = false;
        let mut is_root = true;
        for (p, node) in nodes.iter().enumerate() {
            for &(tt, c, a) in &node.out {
                if tt != t {
                    continue;
                }
                is_root = false;
                match pos(EventKind::StepComplete, p) {
                    Some(done) => {
                        prop_assert!(
                            done < t_start,
                            "{} started before predecessor {} completed",
                            t,
                            p
                        );
                        let decided = events.iter().position(|e| {
                            e.kind == EventKind::RouteDecision
                                && e.step.as_deref() == Some(name(p).as_str())
                                && e.data["next"] == name(t)
                        });
                        prop_assert!(
                            decided.is_some_and(|d| d < t_start),
                            "edge {}->{} undecided at start",
                            p,
                            t
                        );
                        activated |= !c || a;
                    }
                    None => prop_assert!(
                        !expected.contains(&p),
                        "{} started while live predecessor {} had not run",
                        t,
                        p
                    ),
                }
            }
        }
        prop_assert!(
            is_root || activated,
            "{} started without an activated edge",
            t
        );
    }
    // causal order per task and run
    for e in events.iter().filter(|e| e.kind == EventKind::TaskResponse) {
        let tid = e.task_id.clone();
        let at = |k: EventKind| events.iter().position(|x| x.kind == k && x.task_id == tid);
        let order = [
            at(EventKind::TaskRequest),
            at(EventKind::AgentRequest),
            at(EventKind::AgentResponse),
            at(EventKind::TaskStatusChanged),
            at(EventKind::TaskResponse),
        ];
        prop_assert!(
            order.iter().all(Option::is_some),
            "missing task events for {:?}",
            tid
        );
        prop_assert!(
            order.windows(2).all(|w| w[0] < w[1]),
            "task events out of order for {:?}",
            tid
        );
        let step = index[e.step.as_deref().unwrap()];
        prop_assert!(pos(EventKind::StepStart, step) < order[0]);
        prop_assert!(pos(EventKind::StepComplete, step).unwrap() > order[4].unwrap());
    }
    let kinds: Vec<EventKind> = events.iter().map(|e| e.kind).collect();
    prop_assert_eq!(kinds[0], EventKind::Start);
    let wc = kinds
        .iter()
        .position(|k| *k == EventKind::WorkflowComplete)
        .unwrap();
    let tail: Vec<EventKind> = kinds[wc..].to_vec();
    let last = if result.success {
        EventKind::Complete
    } else {
        EventKind::Error
    };
    prop_assert_eq!(
        tail,
        vec![EventKind::WorkflowComplete, last, EventKind::Close]
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_dags_schedule_correctly(nodes in graph()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
        let (w, host, client) = build(&nodes);
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = events.clone();
        let result = rt.block_on(async move {
            let r = tokio::time::timeout(
                Duration::from_secs(3600),
                a2aflow_kernel::run(w, RunInput::default(), Arc::new(host), Arc::new(client), RunOptions {
                    on_event: Some(Arc::new(move |e: &Event| sink.lock().unwrap().push(e.clone()))),
                    ..Default::default()
                }),
            )
            .await
            .expect("the run terminates");
            assert_eq!(tokio::runtime::Handle::current().metrics().num_alive_tasks(), 0);
            r
        });
        let events = events.lock().unwrap().clone();
        check(&nodes, &events, &result)?;
    }
}
