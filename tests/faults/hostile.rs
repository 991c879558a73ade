//! The hostile-card cells: a card fetched from one origin that sends the engine, with the agent's
//! credentials, to another origin (or from https to plain http).

use std::sync::Arc;

use a2aflow::kernel::{CallbackError, ControlPoint, RunInput};
use a2aflow::model::a2a::AgentCard;
use a2aflow::model::{MessageContent, TaskOutcomeStatus, TaskRequest};
use a2aflow::testkit::{AgentSpec, TestServer, TlsOptions};
use a2aflow::{AgentEndpoint, EngineConfig, HostHooks, discover_agents, execute_workflow};
use serde_json::json;

use crate::cells::{Cell, Expect, Trouble};
use crate::probe::{check_code, workflow};

/// The bearer token the real agent demands and the credentials file holds.
pub const TOKEN: &str = "hostile-cell-token";

/// Whether the cell is a hostile-card cell.
pub fn is_hostile(cell: &Cell) -> bool {
    matches!(
        cell.trouble,
        Trouble::CrossOriginCard { .. } | Trouble::DowngradeCard
    )
}

struct Host;

#[async_trait::async_trait]
impl ControlPoint for Host {
    async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(MessageContent::text(request.description))
    }
}

/// Serves a card for `faulty` that points at the real agent on `real`, configures credentials
/// for `faulty`, and runs the workflow: construction must refuse with the cell's code and nothing
/// may reach `real`, or (opt-in) the faulty step completes with the token.
pub async fn exercise(
    cell: &Cell,
    real: &TestServer,
    healthy: &[AgentCard],
    config: &EngineConfig,
) -> Result<(), String> {
    let interfaces = json!([
        {"url": real.jsonrpc_url("faulty"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": real.rest_url("faulty"), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
    ]);
    let spec = AgentSpec::new("faulty")
        .streaming(false)
        .require_auth(a2aflow::testkit::Credential::Bearer(TOKEN.into()))
        .card_patch(move |card| card["supportedInterfaces"] = interfaces.clone());
    let downgrade = cell.trouble == Trouble::DowngradeCard;
    let front = TestServer::builder()
        .agent(spec)
        .bind_tls(downgrade.then(TlsOptions::new))
        .spawn()
        .await
        .map_err(|e| format!("front server: {e}"))?;
    let verdict = run_against(cell, &front, real, healthy, config).await;
    front.shutdown().await.map_err(|e| e.to_string())?;
    verdict
}

async fn run_against(
    cell: &Cell,
    front: &TestServer,
    real: &TestServer,
    healthy: &[AgentCard],
    config: &EngineConfig,
) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let opt_in = matches!(
        cell.trouble,
        Trouble::CrossOriginCard { opt_in: true } | Trouble::DowngradeCard
    );
    let mut entry = json!({"bearer": {"token": TOKEN}});
    if opt_in {
        entry["allowed_origins"] = json!([real.base_url()]);
    }
    let creds = dir.path().join("credentials.json");
    std::fs::write(&creds, json!({ "faulty": entry }).to_string()).map_err(|e| e.to_string())?;
    let mut config = config.clone();
    config.credentials_file = Some(creds);
    if let Some(pem) = front.ca_pem() {
        let ca = dir.path().join("front-ca.pem");
        std::fs::write(&ca, pem).map_err(|e| e.to_string())?;
        config.tls.ca_bundle = Some(ca);
    }
    let mut agents = discover_agents(&[("faulty", front.card_url("faulty"))], &config)
        .await
        .map_err(|f| format!("hostile card fetch failed: {f}"))?;
    agents.extend(healthy.iter().cloned().map(AgentEndpoint::from));
    real.clear_requests();
    let outcome = execute_workflow(
        workflow(Some("task sent")),
        &agents,
        Arc::new(Host),
        &config,
        RunInput::default(),
        HostHooks::default(),
    )
    .await;
    let token_sent = real.requests().iter().any(|r| {
        r.headers
            .get_all("authorization")
            .iter()
            .any(|v| v.to_str().is_ok_and(|v| v.contains(TOKEN)))
    });
    match (cell.expect, outcome) {
        (Expect::Recovers, Ok(result)) => {
            let completed = result
                .steps
                .iter()
                .find(|s| s.step_name == "faulty")
                .and_then(|s| s.task_results.first())
                .is_some_and(|t| t.status == TaskOutcomeStatus::Completed);
            if !completed || !token_sent {
                return Err(format!(
                    "with the opt-in the faulty step should complete with the token (completed {completed}, token sent {token_sent}): {:?}",
                    result.failure
                ));
            }
            Ok(())
        }
        (expect, outcome) => {
            let code = outcome.err().map(|f| String::from(f.code));
            check_code(expect, code.as_deref(), "construction")?;
            if !real.requests().is_empty() {
                return Err(format!(
                    "{} request(s) reached the other origin (token among them: {token_sent})",
                    real.requests().len()
                ));
            }
            Ok(())
        }
    }
}
