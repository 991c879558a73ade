//! Authorization-T against the testkit (scenario area EXT).

use std::time::Duration;

use crate::support::*;
use a2aflow_extensions::{AuthorizationStatus, ExtensionConfig};
use a2aflow_model::MessageContent;
use a2aflow_model::a2a::TaskState;
use a2aflow_testkit::{Fault, Route, TestServer};
use serde_json::json;

async fn server() -> TestServer {
    TestServer::builder()
        .agent(agent("auth", &[AUTH, NOTIF]))
        .agent(agent("blocking", &[AUTH]).streaming(false))
        .agent(agent("plain", &[]))
        .spawn()
        .await
        .unwrap()
}

#[tokio::test]
async fn s_ext_02_approved_content_goes_out_unchanged_with_the_extension_activated() {
    let server = server().await;
    let sender = sender(&server, &["auth"], ExtensionConfig::default()).await;
    let content = auth_content("approve policy P-1");
    let out = sender
        .send_authorization("auth", content.clone())
        .await
        .unwrap();
    assert_eq!(out.status, AuthorizationStatus::Approved);
    assert!(out.is_success());
    assert_eq!(out.failure(), None);
    assert_eq!(out.state, Some(TaskState::Completed));
    assert_eq!(text_of(&out.result).as_deref(), Some("approved"));
    assert_eq!(out.agent, "auth");
    let req = server
        .requests()
        .into_iter()
        .find(|r| r.route == Some(Route::Stream))
        .unwrap();
    assert_eq!(req.header("a2a-extensions"), Some(AUTH));
    let msg = &req.body.unwrap()["params"]["message"];
    assert_eq!(msg["extensions"], json!([AUTH]));
    assert_eq!(msg["metadata"], json!(content.metadata.unwrap()));
    assert_eq!(msg["role"], "ROLE_USER");
    assert_eq!(msg["contextId"], json!(out.context_id));
    // A second send uses a fresh context.
    let again = sender
        .send_authorization("auth", auth_content("approve again"))
        .await
        .unwrap();
    assert_ne!(again.context_id, out.context_id);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn rejected_is_a_typed_outcome_not_success() {
    let server = server().await;
    let sender = sender(&server, &["auth"], ExtensionConfig::default()).await;
    let out = sender
        .send_authorization("auth", auth_content("reject"))
        .await
        .unwrap();
    assert_eq!(out.status, AuthorizationStatus::Rejected);
    assert!(!out.is_success());
    assert_eq!(out.failure().unwrap().code, "a2a.task_rejected");
    assert_eq!(text_of(&out.result).as_deref(), Some("denied"));
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn s_ext_01_failed_is_a_typed_outcome_on_a_blocking_agent() {
    let server = server().await;
    let sender = sender(&server, &["blocking"], ExtensionConfig::default()).await;
    let out = sender
        .send_authorization("blocking", auth_content("fail"))
        .await
        .unwrap();
    assert_eq!(out.status, AuthorizationStatus::Failed);
    assert_eq!(out.state, Some(TaskState::Failed));
    let f = out.failure().unwrap();
    assert_eq!(f.code, "a2a.task_failed");
    assert_eq!(f.details["taskId"], json!(out.task_id.clone().unwrap()));
    assert_eq!(count(&server, "blocking", Route::Send), 1);
    assert_eq!(count(&server, "blocking", Route::Stream), 0);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn slow_then_complete_waits_through_working() {
    let server = server().await;
    let sender = sender(&server, &["auth"], ExtensionConfig::default()).await;
    let out = sender
        .send_authorization("auth", auth_content("slow"))
        .await
        .unwrap();
    assert_eq!(out.status, AuthorizationStatus::Approved);
    assert_eq!(text_of(&out.result).as_deref(), Some("approved late"));
    let texts: Vec<String> = out.evidence.iter().filter_map(text_of).collect();
    assert!(texts.contains(&"checking".to_owned()), "{texts:?}");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn slow_then_complete_is_polled_after_a_dropped_stream() {
    let server = server().await;
    server
        .set_fault_times(
            "auth",
            Route::Stream,
            Fault::ResetMidStream { after_events: 1 },
            1,
        )
        .unwrap();
    let config = ExtensionConfig::default().with_poll_interval(Duration::from_millis(20));
    let sender = sender(&server, &["auth"], config).await;
    let out = sender
        .send_authorization("auth", auth_content("slow"))
        .await
        .unwrap();
    assert_eq!(out.status, AuthorizationStatus::Approved);
    assert_eq!(out.state, Some(TaskState::Completed));
    assert!(count(&server, "auth", Route::Get) >= 1);
    assert_eq!(count(&server, "auth", Route::Stream), 1, "never resent");
    server.shutdown().await.unwrap();
}

/// A 200 ms Authorization-T operation against an agent that never answers fails with the
/// operation's own timeout.
async fn assert_the_operation_times_out() {
    let server = server().await;
    let config = ExtensionConfig::default().with_authorization_timeout(Duration::from_millis(200));
    let sender = sender(&server, &["auth"], config).await;
    let err = sender
        .send_authorization("auth", auth_content("hang"))
        .await
        .unwrap_err();
    assert_eq!(err.code, "a2a.timeout");
    assert_eq!(err.message, "Authorization-T operation timed out");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn deadline_is_a_timeout_error() {
    assert_the_operation_times_out().await;
}

/// The stream's own timeout is what is left of the operation's deadline, so both timers fire in
/// the same tick, and the stream's is polled first. With the clock paused, the runtime jumps
/// straight to that tick every time: the operation's timeout must still be the one reported.
#[tokio::test(start_paused = true)]
async fn a_call_timing_out_in_the_deadlines_tick_is_the_operations_timeout() {
    assert_the_operation_times_out().await;
}

/// One send refused before anything goes out: its error code and, where fixed, its message.
struct Refusal {
    name: &'static str,
    agent: &'static str,
    content: MessageContent,
    code: &'static str,
    message: Option<String>,
}

/// Requests that went further than the card.
fn sent_past_the_card(server: &TestServer) -> usize {
    server
        .requests()
        .into_iter()
        .filter(|r| r.route.is_some_and(|r| r != Route::Card))
        .count()
}

#[tokio::test]
async fn card_without_the_extension_or_plain_content_is_refused_before_sending() {
    let server = server().await;
    let sender = sender(&server, &["auth", "plain"], ExtensionConfig::default()).await;
    let cases = [
        Refusal {
            name: "card without the extension",
            agent: "plain",
            content: auth_content("approve"),
            code: "a2a.extension_not_supported",
            message: None,
        },
        Refusal {
            name: "plain content",
            agent: "auth",
            content: MessageContent::text("wrong"),
            code: "config.invalid",
            message: Some(format!("Target capability and content must use {AUTH}")),
        },
        Refusal {
            name: "unknown agent",
            agent: "nobody",
            content: auth_content("approve"),
            code: "workflow.unknown_agent",
            message: Some("Agent not found: nobody".into()),
        },
    ];
    for case in cases {
        let err = sender
            .send_authorization(case.agent, case.content)
            .await
            .unwrap_err();
        assert_eq!(err.code, case.code, "{}", case.name);
        if let Some(message) = case.message {
            assert_eq!(err.message, message, "{}", case.name);
        }
    }
    assert_eq!(sent_past_the_card(&server), 0);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_blank_extension_uri_is_refused_before_sending() {
    let server = server().await;
    let sender = sender(&server, &["auth"], ExtensionConfig::default()).await;
    let mut content = auth_content("approve");
    content.extensions.push(" ".into());
    let err = sender
        .send_authorization("auth", content)
        .await
        .unwrap_err();
    assert_eq!(err.code, "workflow.invalid_content");
    assert_eq!(sent_past_the_card(&server), 0);
    server.shutdown().await.unwrap();
}
