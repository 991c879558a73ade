//! `a2aflow demo`: the cross-city incident-diagnosis workflow against embedded agents.
//!
//! Five scripted A2A 1.0 agents start on loopback (testkit). The workflow fans out to two city
//! agents (one streams, one negotiates for missing information over Negotiation-T), joins at a
//! correlator, routes conditionally to an ANY_SUCCESS escalation (the slower agent is cancelled
//! remotely), and ends with a SELF_LOOP summary done by the host. The engine runs exactly as a
//! host would run it: cards fetched over HTTP, `execute_workflow_stream`, a ControlPoint.

use crate::declarative::{DeclarativeControlPoint, NegotiationPolicy, RoutePolicy};
use crate::progress::{LiveProgress, Stream};
use a2aflow::a2at::NEGOTIATION_T_EXTENSION_URI;
use a2aflow::kernel::{CallbackError, ControlPoint, RunInput};
use a2aflow::model::a2a::{AgentCard, PartContent};
use a2aflow::model::{
    ExecutionResult, LoadOptions, MessageContent, NegotiationReply, NegotiationRequest,
    RouteDecision, RouteRequest, TaskRequest, TaskResult, load_workflow_str,
};
use a2aflow::testkit::{AgentSpec, Proposal, Route, Script, TaskScript, TestServer};
use a2aflow::{EngineConfig, HostHooks, execute_workflow_stream, fetch_agent_cards};
use serde_json::json;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

/// The demo workflow document.
pub const WORKFLOW: &str = include_str!("../demo/incident.workflow.json");

/// The agents of the demo.
pub fn agents() -> Vec<AgentSpec> {
    vec![
        AgentSpec::new("north-radio").streaming(true).script(|_| {
            TaskScript::new()
                .working_with("scanning 412 cells for alarms")
                .delay(Duration::from_millis(120))
                .artifact_data(
                    "findings",
                    json!({"city": "north", "alarms": 37, "degradedCells": 12,
                           "suspect": "packet loss on transport ring R7"}),
                )
                .complete()
                .into()
        }),
        AgentSpec::new("south-transport")
            .extension(NEGOTIATION_T_EXTENSION_URI, false)
            .script(|_| {
                let proposal =
                    Proposal::information(1, 3, "the time window of the degradation (UTC)");
                TaskScript::new()
                    .working()
                    .propose(&proposal, |reply| match reply.negotiation() {
                        Some(ctx) if ctx.performative == "ACCEPT" => TaskScript::new()
                            .working_with("correlating link counters for the window")
                            .delay(Duration::from_millis(80))
                            .artifact_data(
                                "findings",
                                json!({"city": "south", "linkLoss": "4.2% on ring R7",
                                       "window": "08:10-08:55 UTC"}),
                            )
                            .complete()
                            .into(),
                        _ => TaskScript::new().fail("the requester did not accept").into(),
                    })
                    .into()
            }),
        AgentSpec::new("correlator").script(|_| {
            TaskScript::new()
                .working()
                .artifact_data(
                    "rootCause",
                    json!({"crossCity": true, "rootCause": "packet loss on shared transport ring R7",
                           "confidence": 0.87}),
                )
                .complete()
                .into()
        }),
        AgentSpec::new("field-ops").script(|_| {
            TaskScript::new()
                .working_with("assigning a field team")
                .delay(Duration::from_millis(150))
                .artifact_data("dispatch", json!({"ticket": "FO-1042", "eta": "45 min"}))
                .complete()
                .into()
        }),
        // Never answers in time: the ANY_SUCCESS loser, cancelled remotely when field-ops wins.
        AgentSpec::new("noc-backup").script(|_| Script::from(TaskScript::new().working().hang())),
    ]
}

/// The demo's host: the declarative ControlPoint, except that the conditional route reads the
/// correlator's `crossCity` flag — the kind of decision only the host can make.
struct DemoHost(DeclarativeControlPoint);

#[async_trait::async_trait]
impl ControlPoint for DemoHost {
    async fn on_task(&self, r: TaskRequest) -> Result<MessageContent, CallbackError> {
        self.0.on_task(r).await
    }
    async fn on_self_task(&self, r: TaskRequest) -> Result<TaskResult, CallbackError> {
        self.0.on_self_task(r).await
    }
    async fn on_negotiation(
        &self,
        r: NegotiationRequest,
    ) -> Result<NegotiationReply, CallbackError> {
        self.0.on_negotiation(r).await
    }
    async fn on_route(&self, r: RouteRequest) -> Result<RouteDecision, CallbackError> {
        let cross_city = r
            .source_result
            .task_results
            .iter()
            .flat_map(|t| t.outputs.iter().flat_map(|o| o.parts.iter()))
            .any(|p| matches!(&p.content, PartContent::Data(d) if d["crossCity"] == true));
        Ok(if cross_city {
            RouteDecision::allow("the correlator confirmed a cross-city fault")
        } else {
            RouteDecision::deny("no cross-city fault in the correlator's output")
        })
    }
}

/// Agents whose cards declare Negotiation-T.
pub fn negotiating_agents(cards: &[AgentCard]) -> HashSet<String> {
    cards
        .iter()
        .filter(|c| {
            c.capabilities
                .extensions
                .iter()
                .flatten()
                .any(|e| e.uri == NEGOTIATION_T_EXTENSION_URI)
        })
        .map(|c| c.name.clone())
        .collect()
}

/// Runs the demo and returns the result (for tests) after stopping the agents.
pub async fn run_demo(print: bool) -> Result<ExecutionResult, String> {
    let workflow = load_workflow_str(WORKFLOW, LoadOptions::STRICT)
        .map_err(|e| format!("the demo workflow does not load: {e}"))?
        .workflow;
    let mut builder = TestServer::builder();
    for spec in agents() {
        builder = builder.agent(spec);
    }
    let server = builder
        .spawn()
        .await
        .map_err(|e| format!("cannot start the demo agents: {e}"))?;
    let names = [
        "north-radio",
        "south-transport",
        "correlator",
        "field-ops",
        "noc-backup",
    ];
    let urls: Vec<String> = names.iter().map(|n| server.card_url(n)).collect();
    if print {
        println!(
            "a2aflow demo — {} ({} steps)",
            workflow.name,
            workflow.steps.len()
        );
        println!("agents on {}:", server.base_url());
        for (n, u) in names.iter().zip(&urls) {
            println!("  {n:<16} {u}");
        }
        println!();
    }
    let mut config = EngineConfig::default();
    config.timeouts.run_secs = 30.0;
    let outcome = async {
        let cards = fetch_agent_cards(&urls, &config)
            .await
            .map_err(|f| f.to_string())?;
        let host = DemoHost(DeclarativeControlPoint::new(
            RoutePolicy::AllowAll,
            NegotiationPolicy::Accept,
            negotiating_agents(&cards),
        ));
        let input = RunInput {
            runtime_intent: Some(
                "Users in two cities report slow mobile data since 08:10 UTC".into(),
            ),
        };
        let mut events = execute_workflow_stream(
            workflow.clone(),
            &cards,
            Arc::new(host),
            &config,
            input,
            HostHooks::default(),
        )
        .map_err(|f| f.to_string())?;
        let mut progress = print.then(|| LiveProgress::on(Stream::Stdout));
        while let Some(event) = events.next().await {
            if let Some(progress) = progress.as_mut() {
                progress.event(&event);
            }
        }
        if let Some(progress) = progress {
            progress.finish();
        }
        Ok::<_, String>(events.result().await)
    }
    .await;
    let remote_cancels = server
        .requests()
        .iter()
        .filter(|r| r.agent.as_deref() == Some("noc-backup") && r.route == Some(Route::Cancel))
        .count();
    let _ = server.shutdown().await;
    let result = outcome?;
    if print {
        print_result(&result, remote_cancels);
        println!("\nworkflow graph (Mermaid):\n");
        print!(
            "{}",
            crate::graph::render(&workflow, crate::graph::GraphFormat::Mermaid)
        );
    }
    Ok(result)
}

fn print_result(result: &ExecutionResult, remote_cancels: usize) {
    println!();
    let verdict = if result.success {
        "succeeded"
    } else {
        "FAILED"
    };
    println!("run {} {verdict}", result.execution_id);
    if let Some(f) = &result.failure {
        println!("  failure: {f}");
    }
    for step in &result.steps {
        println!("  {:<16} {:?}", step.step_name, step.status);
        for t in &step.task_results {
            let who = if t.agent_name.is_empty() {
                "(host)"
            } else {
                &t.agent_name
            };
            let outputs: Vec<String> = t
                .outputs
                .iter()
                .flat_map(|o| o.parts.iter())
                .map(|p| match &p.content {
                    PartContent::Text(s) => s.clone(),
                    PartContent::Data(d) => d.to_string(),
                    other => format!("{other:?}"),
                })
                .collect();
            let detail = match (&t.error_code, outputs.is_empty()) {
                (Some(code), _) => format!("{code}: {}", t.error.as_deref().unwrap_or("")),
                (None, false) => outputs.join(" "),
                (None, true) => String::new(),
            };
            println!("      {who:<16} {:?} {detail}", t.status);
        }
    }
    if !result.skipped_steps.is_empty() {
        println!("  skipped: {}", result.skipped_steps.join(", "));
    }
    println!("  remote CancelTask sent to the ANY_SUCCESS loser: {remote_cancels}");
}

/// `a2aflow demo`: returns the exit code.
pub fn run() -> u8 {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("a2aflow: cannot start the async runtime: {e}");
            return 2;
        }
    };
    match runtime.block_on(run_demo(true)) {
        Ok(result) if result.success => 0,
        Ok(_) => 1,
        Err(e) => {
            eprintln!("a2aflow demo: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2aflow::model::{StepStatus, TaskOutcomeStatus};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_demo_runs_every_feature_it_advertises() {
        let result = run_demo(false).await.unwrap();
        assert!(result.success, "{:#?}", result.failure);
        let names: Vec<&str> = result.steps.iter().map(|s| s.step_name.as_str()).collect();
        for step in [
            "diagnose-north",
            "diagnose-south",
            "correlate",
            "escalate",
            "summary",
        ] {
            assert!(names.contains(&step), "{step} did not run: {names:?}");
        }
        assert_eq!(names.last(), Some(&"summary"));
        let escalate = result
            .steps
            .iter()
            .find(|s| s.step_name == "escalate")
            .unwrap();
        assert_eq!(escalate.status, StepStatus::Completed);
        let loser = escalate
            .task_results
            .iter()
            .find(|t| t.agent_name == "noc-backup")
            .unwrap();
        assert_eq!(loser.status, TaskOutcomeStatus::Canceled);
        let south = result
            .steps
            .iter()
            .find(|s| s.step_name == "diagnose-south")
            .unwrap();
        let text = serde_json::to_string(&south.task_results[0].outputs).unwrap();
        assert!(
            text.contains("08:10-08:55 UTC"),
            "negotiated findings missing: {text}"
        );
    }
}
