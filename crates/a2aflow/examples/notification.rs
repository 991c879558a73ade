//! A Notification-T subscription beside a running workflow:
//! `cargo run -p a2aflow --example notification`.
//!
//! Starts one testkit agent that declares Notification-T and streams incident events, opens a
//! subscription on an `ExtensionSender` (its own connection pool), runs a workflow against the same
//! agent meanwhile, then closes the subscription. Neither operation waits for or changes the other.

use a2aflow::a2at::NOTIFICATION_T_EXTENSION_URI;
use a2aflow::extensions::{ExtensionConfig, ExtensionSender, SubscriptionControl};
use a2aflow::kernel::{CallbackError, ControlPoint, RunInput};
use a2aflow::model::{
    LoadOptions, MessageContent, ReceivedMessage, TaskRequest, load_workflow_str,
};
use a2aflow::{EngineConfig, HostHooks, execute_workflow, fetch_agent_cards};
use a2aflow_testkit::{AgentSpec, Script, TaskScript, TestServer, behaviours};
use serde_json::{Map, json};
use std::sync::Arc;
use std::time::Duration;

struct Host;

#[async_trait::async_trait]
impl ControlPoint for Host {
    async fn on_task(&self, task: TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(MessageContent::text(format!("task {}", task.description)))
    }
}

/// Subscribe requests stream five incident events and stay open; anything else is the builtin.
fn script(m: &a2aflow_testkit::IncomingMessage) -> Script {
    if m.text().starts_with("subscribe") {
        let mut s = TaskScript::new().working_with("subscribed");
        for i in 1..=5 {
            s = s
                .delay(Duration::from_millis(50))
                .working_with(format!("incident event {i}"));
        }
        s.hang().into()
    } else {
        behaviours::builtin(m)
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = TestServer::builder()
        .agent(
            AgentSpec::new("noc")
                .streaming(true)
                .extension(NOTIFICATION_T_EXTENSION_URI, false)
                .script(script),
        )
        .spawn()
        .await?;
    let config = EngineConfig::default();
    let cards = fetch_agent_cards(&[server.card_url("noc")], &config).await?;

    // The subscription: content that activates and carries Notification-T.
    let sender = ExtensionSender::new(
        cards.iter(),
        &config.channel_factory(None)?,
        ExtensionConfig::default(),
    )?;
    let mut metadata = Map::new();
    metadata.insert(
        NOTIFICATION_T_EXTENSION_URI.to_owned(),
        json!("## Subscribe\nincidents in the north city"),
    );
    let content = MessageContent {
        parts: MessageContent::text("subscribe north-city incidents").parts,
        metadata: Some(metadata),
        extensions: vec![NOTIFICATION_T_EXTENSION_URI.to_owned()],
        context_id: None,
    };
    let subscription = sender.open_notification(
        "noc",
        content,
        |_: &SubscriptionControl, event: ReceivedMessage| {
            let text = event.message.as_ref().and_then(|m| m.text()).unwrap_or("");
            println!("notification: {:?} {text}", event.state);
        },
    )?;
    subscription.acknowledgement().await?;

    // A workflow at the same time, on the workflow client's own connections.
    let workflow = load_workflow_str(
        r#"{"steps": [{"name": "check", "subtasks": [{"agent": "noc", "description": "check the north ring"}]}]}"#,
        LoadOptions::STRICT,
    )?
    .workflow;
    let result = execute_workflow(
        workflow,
        &cards,
        Arc::new(Host),
        &config,
        RunInput::default(),
        HostHooks::default(),
    )
    .await?;
    println!("workflow succeeded: {}", result.success);

    // Let the stream deliver its seven events (SUBMITTED, "subscribed", five incidents), bounded.
    let delivered = async {
        while subscription.event_count() < 7 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    if tokio::time::timeout(Duration::from_secs(10), delivered)
        .await
        .is_err()
    {
        eprintln!("only {} events within 10 s", subscription.event_count());
    }
    subscription.close();
    println!(
        "subscription ended: {:?} after {} events",
        subscription.completion().await?,
        subscription.event_count()
    );
    server.shutdown().await?;
    Ok(())
}
