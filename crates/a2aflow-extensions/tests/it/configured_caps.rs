//! The sender's reducers use the limits its channels were built with, not the defaults.

use std::time::Duration;

use crate::support::*;
use a2aflow_extensions::{ExtensionConfig, ExtensionSender};
use a2aflow_protocol::{ChannelConfig, ChannelFactory, Limits};
use a2aflow_testkit::TestServer;

/// A sender whose channels cap assembled artifacts and task evidence at `cap` bytes.
async fn capped_sender(server: &TestServer, name: &str, cap: usize) -> ExtensionSender {
    let mut limits = Limits::default();
    limits.max_artifact = cap;
    limits.max_task_evidence = cap;
    let channels = ChannelFactory::new(ChannelConfig::new().unwrap().with_limits(limits)).unwrap();
    let c = card(server, name).await;
    ExtensionSender::new([&c], &channels, ExtensionConfig::default()).unwrap()
}

#[tokio::test]
async fn a_smaller_configured_evidence_cap_ends_an_authorization() {
    let server = TestServer::builder()
        .agent(agent("auth", &[AUTH]))
        .spawn()
        .await
        .unwrap();
    // The default caps take the answer.
    let roomy = capped_sender(&server, "auth", Limits::DEFAULT_MAX_TASK_EVIDENCE).await;
    let out = roomy
        .send_authorization("auth", auth_content("approve policy P-1"))
        .await
        .unwrap();
    assert!(out.is_success());
    // Four bytes cannot hold the agent's "approved".
    let tight = capped_sender(&server, "auth", 4).await;
    let err = tight
        .send_authorization("auth", auth_content("approve policy P-1"))
        .await
        .unwrap_err();
    assert_eq!(err.code, "a2a.response_too_large", "{err}");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_smaller_configured_cap_ends_a_notification_subscription() {
    let server = TestServer::builder()
        .agent(agent("notif", &[NOTIF]))
        .spawn()
        .await
        .unwrap();
    let tight = capped_sender(&server, "notif", 4).await;
    let sub = tight
        .open_notification("notif", notif_content("events 1"), |_, _| {})
        .unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(30), sub.completion())
        .await
        .expect("the subscription ends");
    let err = ended.unwrap_err();
    assert_eq!(err.code, "a2a.response_too_large", "{err}");
    server.shutdown().await.unwrap();
}
