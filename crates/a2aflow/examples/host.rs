//! A host with a hand-written ControlPoint: `cargo run -p a2aflow --example host [CARD_URL]`.
//! Without a URL it starts a scriptable testkit agent on loopback to talk to.

use a2aflow::kernel::{CallbackError, ControlPoint, RunInput};
use a2aflow::model::{LoadOptions, MessageContent, TaskRequest, load_workflow_str};
use a2aflow::{EngineConfig, HostHooks, discover_agents, execute_workflow};
use std::sync::Arc;

// README:begin
struct Host;

#[async_trait::async_trait]
impl ControlPoint for Host {
    // The host decides every message's content; the engine wraps and sends it unchanged.
    async fn on_task(&self, task: TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(MessageContent::text(format!("task {}", task.description)))
    }
}

async fn run_once(card_url: String) -> Result<(), Box<dyn std::error::Error>> {
    let workflow = load_workflow_str(
        r#"{"steps": [{"name": "ask", "subtasks": [{"agent": "alpha", "description": "hello"}]}]}"#,
        LoadOptions::STRICT,
    )?
    .workflow;
    let config = EngineConfig::default(); // or EngineConfig::from_file("engine.toml")?
    // The name the workflow (and the credentials file) uses for the agent, and the URL you trust
    // for it: credentials go only to that URL's origin, whatever the fetched card names.
    let agents = discover_agents(&[("alpha", card_url.as_str())], &config).await?;
    let host = Arc::new(Host);
    let result = execute_workflow(
        workflow,
        &agents,
        host,
        &config,
        RunInput::default(),
        HostHooks::default(),
    )
    .await?;
    println!("{}", serde_json::to_string_pretty(&result)?);
    Ok(())
}
// README:end

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    match std::env::args().nth(1) {
        Some(url) => run_once(url).await,
        None => {
            let server = a2aflow_testkit::TestServer::builder()
                .agent(a2aflow_testkit::AgentSpec::new("alpha"))
                .spawn()
                .await?;
            let outcome = run_once(server.card_url("alpha")).await;
            server.shutdown().await?;
            outcome
        }
    }
}
