//! Shared fixtures: a scripted A2A-T agent, cards, contents and a sender over the testkit.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2aflow_extensions::{ExtensionConfig, ExtensionSender, NotificationSubscription};
use a2aflow_model::a2a::AgentCard;
use a2aflow_model::{MessageContent, ReceivedMessage};
use a2aflow_protocol::{CallOptions, HttpClient};
use a2aflow_protocol::{ChannelConfig, ChannelFactory};
use a2aflow_testkit::{AgentSpec, IncomingMessage, Route, Script, TaskScript, TestServer};
use a2at::{AUTHORIZATION_T_EXTENSION_URI, NOTIFICATION_T_EXTENSION_URI};
use serde_json::{Map, json};

pub const AUTH: &str = AUTHORIZATION_T_EXTENSION_URI;
pub const NOTIF: &str = NOTIFICATION_T_EXTENSION_URI;

/// The A2A-T agent script, chosen by the first word of the message text.
pub fn script(m: &IncomingMessage) -> Script {
    let words: Vec<&str> = m.text().split_whitespace().collect();
    let n = words
        .get(1)
        .and_then(|w| w.parse::<usize>().ok())
        .unwrap_or(3);
    let events = |mut s: TaskScript| {
        for i in 1..=n {
            s = s.working_with(format!("event {i}"));
        }
        s
    };
    match words.first().copied().unwrap_or_default() {
        "approve" => TaskScript::new().working().complete_with("approved").into(),
        "reject" => TaskScript::new().reject("denied").into(),
        "fail" => TaskScript::new().working().fail("broken").into(),
        "slow" => TaskScript::new()
            .working_with("checking")
            .delay(Duration::from_millis(300))
            .complete_with("approved late")
            .into(),
        "hang" => TaskScript::new().working_with("pending").hang().into(),
        // ready, a pause (the stream is up), n events, then the task stays open
        "ticks" => events(
            TaskScript::new()
                .working_with("ready")
                .delay(Duration::from_secs(1)),
        )
        .hang()
        .into(),
        // n events, then the task stays open
        "events" => events(TaskScript::new()).hang().into(),
        // n events, then the task completes (the stream ends)
        "finish" => events(TaskScript::new()).complete_with("done").into(),
        // two events, a pause, a third, then completion
        "gap" => TaskScript::new()
            .working_with("event 1")
            .working_with("event 2")
            .delay(Duration::from_millis(400))
            .working_with("event 3")
            .complete_with("done")
            .into(),
        _ => Script::reply_text(m.text()),
    }
}

/// An agent declaring `uris`, running [`script`].
pub fn agent(name: &str, uris: &[&str]) -> AgentSpec {
    let mut spec = AgentSpec::new(name).script(script);
    for uri in uris {
        spec = spec.extension(*uri, false);
    }
    spec
}

pub async fn card(server: &TestServer, name: &str) -> AgentCard {
    HttpClient::new()
        .unwrap()
        .fetch_agent_card(&server.card_url(name), &CallOptions::default())
        .await
        .unwrap()
}

/// The door with its default configuration.
pub fn channels() -> ChannelFactory {
    ChannelFactory::new(ChannelConfig::new().unwrap()).unwrap()
}

pub async fn sender(
    server: &TestServer,
    names: &[&str],
    config: ExtensionConfig,
) -> ExtensionSender {
    let mut cards = Vec::new();
    for name in names {
        cards.push(card(server, name).await);
    }
    ExtensionSender::new(cards.iter(), &channels(), config).unwrap()
}

fn content(uri: &str, template: &str, text: &str) -> MessageContent {
    let mut metadata = Map::new();
    metadata.insert(uri.to_owned(), json!(format!("## Request\n{text}")));
    metadata.insert("templateUri".into(), json!(template));
    MessageContent {
        parts: MessageContent::text(text).parts,
        metadata: Some(metadata),
        extensions: vec![uri.to_owned()],
        context_id: None,
    }
}

/// Authorization-T content (activates and carries the URI).
pub fn auth_content(text: &str) -> MessageContent {
    content(
        AUTH,
        "Authorization-T/authorization-policy-management/v1",
        text,
    )
}

/// Notification-T content (activates and carries the URI).
pub fn notif_content(text: &str) -> MessageContent {
    content(
        NOTIF,
        "Notification-T/network-layer/subscribe-incident/v1",
        text,
    )
}

pub fn count(server: &TestServer, agent: &str, route: Route) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.agent.as_deref() == Some(agent) && r.route == Some(route))
        .count()
}

pub fn state_of(server: &TestServer, agent: &str, task_id: &str) -> String {
    server.task(agent, task_id).unwrap()["status"]["state"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The text of a received event's message, if any.
pub fn text_of(r: &ReceivedMessage) -> Option<String> {
    r.message
        .as_ref()
        .and_then(|m| m.parts.iter().find_map(|p| p.as_text().map(str::to_owned)))
}

/// Every event a recorder saw.
pub type Seen = Arc<Mutex<Vec<ReceivedMessage>>>;

/// A listener that records every event.
pub fn recorder() -> (
    Seen,
    impl FnMut(&a2aflow_extensions::SubscriptionControl, ReceivedMessage) + Send + 'static,
) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    (
        seen,
        move |_: &a2aflow_extensions::SubscriptionControl, r: ReceivedMessage| {
            sink.lock().unwrap().push(r);
        },
    )
}

/// Opens a Notification-T subscription on `agent` whose listener records every event.
pub fn open_recorded(
    sender: &ExtensionSender,
    agent: &str,
    content: MessageContent,
) -> (NotificationSubscription, Seen) {
    let (seen, listener) = recorder();
    let sub = sender.open_notification(agent, content, listener).unwrap();
    (sub, seen)
}

/// Waits (bounded) until `cond` holds, yielding between checks.
pub async fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
