//! Notification-T against the testkit (scenario area EXT).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::*;
use a2aflow_extensions::{Ended, ExtensionConfig, ResubscribePolicy, SubscriptionControl};
use a2aflow_model::a2a::TaskState;
use a2aflow_model::{MessageContent, ReceivedMessage};
use a2aflow_testkit::{Fault, Route, TestServer};
use serde_json::json;

async fn server() -> TestServer {
    TestServer::builder()
        .agent(agent("notif", &[NOTIF]))
        .agent(agent("plain", &[AUTH]))
        .spawn()
        .await
        .unwrap()
}

fn texts(seen: &Arc<Mutex<Vec<ReceivedMessage>>>) -> Vec<String> {
    seen.lock().unwrap().iter().filter_map(text_of).collect()
}

#[tokio::test]
async fn n_events_are_delivered_in_order_then_the_remote_terminal_end_completes_it() {
    let server = server().await;
    let sender = sender(&server, &["notif"], ExtensionConfig::default()).await;
    let (seen, listener) = recorder();
    let content = notif_content("finish 5");
    let sub = sender
        .open_notification("notif", content.clone(), listener)
        .unwrap();
    let ack = sub.acknowledgement().await.unwrap();
    assert_eq!(ack.state, Some(TaskState::Working));
    assert_eq!(text_of(&ack).as_deref(), Some("event 1"));
    let ended = sub.completion().await.unwrap();
    assert_eq!(
        ended,
        Ended::RemoteEnded {
            final_state: Some(TaskState::Completed)
        }
    );
    assert!(!sub.is_active());
    let got = texts(&seen);
    let expected: Vec<String> = (1..=5)
        .map(|i| format!("event {i}"))
        .chain(["done".to_owned()])
        .collect();
    let mut dedup = got.clone();
    dedup.dedup();
    assert_eq!(dedup, expected, "{got:?}");
    assert_eq!(sub.event_count(), seen.lock().unwrap().len() as u64);
    assert!(sub.last_event_at().unwrap() >= sub.opened_at());
    assert_eq!(sender.live_subscriptions(), 0);
    // the wire: Notification-T activated, the content unchanged
    let req = server
        .requests()
        .into_iter()
        .find(|r| r.route == Some(Route::Stream))
        .unwrap();
    assert_eq!(req.header("a2a-extensions"), Some(NOTIF));
    let msg = &req.body.unwrap()["params"]["message"];
    assert_eq!(msg["extensions"], json!([NOTIF]));
    assert_eq!(msg["metadata"], json!(content.metadata.unwrap()));
    assert_eq!(msg["contextId"], json!(sub.context_id()));
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn early_close_from_the_first_event_stops_the_listener_and_cancels() {
    let server = server().await;
    let sender = sender(&server, &["notif"], ExtensionConfig::default()).await;
    let calls = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&calls);
    let sub = sender
        .open_notification(
            "notif",
            notif_content("events 20"),
            move |control: &SubscriptionControl, _r: ReceivedMessage| {
                c.fetch_add(1, Ordering::SeqCst);
                control.close();
            },
        )
        .unwrap();
    assert_eq!(sub.completion().await.unwrap(), Ended::Closed);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(sender.live_subscriptions(), 0);
    // the first event was the SUBMITTED snapshot: closed before the acknowledgement
    let err = sub.acknowledgement().await.unwrap_err();
    assert_eq!(err.details["reason"], json!("closedBeforeAcknowledgement"));
    assert_eq!(sub.event_count(), 1);
    let task_id = sub.task_id().unwrap();
    assert_eq!(state_of(&server, "notif", &task_id), "TASK_STATE_CANCELED");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn close_while_idle_is_idempotent_and_cancels_once() {
    let server = server().await;
    let sender = sender(&server, &["notif"], ExtensionConfig::default()).await;
    let (sub, _seen) = open_recorded(&sender, "notif", notif_content("hang"));
    sub.acknowledgement().await.unwrap();
    assert!(sub.is_active());
    sub.close();
    sub.close();
    assert_eq!(sub.completion().await.unwrap(), Ended::Closed);
    sub.close();
    assert_eq!(sub.completion().await.unwrap(), Ended::Closed);
    assert_eq!(count(&server, "notif", Route::Cancel), 1);
    let task_id = sub.task_id().unwrap();
    assert_eq!(state_of(&server, "notif", &task_id), "TASK_STATE_CANCELED");
    assert_eq!(sender.live_subscriptions(), 0);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn close_before_the_acknowledgement_fails_it() {
    let server = server().await;
    server
        .set_fault("notif", Route::Stream, Fault::NeverAnswer)
        .unwrap();
    let sender = sender(&server, &["notif"], ExtensionConfig::default()).await;
    let (sub, seen) = open_recorded(&sender, "notif", notif_content("hang"));
    sub.close();
    let err = sub.acknowledgement().await.unwrap_err();
    assert_eq!(err.code, "a2a.task_canceled");
    assert_eq!(
        err.message,
        "Notification-T subscription closed before acknowledgement"
    );
    assert_eq!(sub.completion().await.unwrap(), Ended::Closed);
    assert!(seen.lock().unwrap().is_empty());
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn dropping_the_handle_closes_it_and_leaves_no_task() {
    let server = server().await;
    let sender = sender(&server, &["notif"], ExtensionConfig::default()).await;
    let (sub, _seen) = open_recorded(&sender, "notif", notif_content("hang"));
    sub.acknowledgement().await.unwrap();
    let task_id = sub.task_id().unwrap();
    assert_eq!(sender.live_subscriptions(), 1);
    drop(sub);
    until("the subscription task to exit", || {
        sender.live_subscriptions() == 0
    })
    .await;
    until("the remote cancel", || {
        state_of(&server, "notif", &task_id) == "TASK_STATE_CANCELED"
    })
    .await;
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn stream_reset_is_resubscribed_and_the_gap_shows_in_liveness() {
    let server = server().await;
    server
        .set_fault_times(
            "notif",
            Route::Stream,
            Fault::ResetMidStream { after_events: 2 },
            1,
        )
        .unwrap();
    let config = ExtensionConfig::default()
        .with_resubscribe(ResubscribePolicy::new(3, Duration::from_millis(20)));
    let sender = sender(&server, &["notif"], config).await;
    let (sub, seen) = open_recorded(&sender, "notif", notif_content("gap"));
    sub.acknowledgement().await.unwrap();
    let ended = sub.completion().await.unwrap();
    assert_eq!(
        ended,
        Ended::RemoteEnded {
            final_state: Some(TaskState::Completed)
        }
    );
    assert_eq!(sub.resubscribes(), 1);
    assert_eq!(count(&server, "notif", Route::Subscribe), 1);
    assert_eq!(count(&server, "notif", Route::Stream), 1, "never resent");
    let got = texts(&seen);
    assert!(got.contains(&"event 3".to_owned()), "{got:?}");
    assert_eq!(got.last().map(String::as_str), Some("done"));
    assert_eq!(sub.event_count(), seen.lock().unwrap().len() as u64);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn resubscribe_budget_exhausted_fails_the_completion() {
    let server = server().await;
    server
        .set_fault(
            "notif",
            Route::Stream,
            Fault::ResetMidStream { after_events: 1 },
        )
        .unwrap();
    server
        .set_fault("notif", Route::Subscribe, Fault::RefuseConnection)
        .unwrap();
    let config = ExtensionConfig::default()
        .with_resubscribe(ResubscribePolicy::new(2, Duration::from_millis(10)));
    let sender = sender(&server, &["notif"], config).await;
    let (sub, _seen) = open_recorded(&sender, "notif", notif_content("hang"));
    let err = sub.completion().await.unwrap_err();
    assert_eq!(err.details["resubscribeAttempts"], json!(2));
    assert_eq!(count(&server, "notif", Route::Subscribe), 2);
    assert_eq!(sub.resubscribes(), 0);
    assert_eq!(sender.live_subscriptions(), 0);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn acknowledgement_failure_is_an_error_the_host_must_handle() {
    let server = server().await;
    let sender = sender(&server, &["notif"], ExtensionConfig::default()).await;
    let (sub, _seen) = open_recorded(&sender, "notif", notif_content("reject"));
    let err = sub.acknowledgement().await.unwrap_err();
    assert_eq!(err.code, "a2a.task_rejected");
    assert_eq!(err.message, "Notification-T acknowledgement is REJECTED");
    let ended = sub.completion().await.unwrap();
    assert_eq!(
        ended,
        Ended::RemoteEnded {
            final_state: Some(TaskState::Rejected)
        }
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn s_ext_17_transport_failure_is_never_a_synthesized_success() {
    let server = server().await;
    server
        .set_fault("notif", Route::Stream, Fault::ServerError { status: 502 })
        .unwrap();
    let sender = sender(&server, &["notif"], ExtensionConfig::default()).await;
    let (sub, seen) = open_recorded(&sender, "notif", notif_content("hang"));
    let err = sub.acknowledgement().await.unwrap_err();
    assert_eq!(err.code, "a2a.http_status");
    assert_eq!(sub.completion().await.unwrap_err().code, "a2a.http_status");
    assert!(seen.lock().unwrap().is_empty());
    assert_eq!(sender.live_subscriptions(), 0);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn s_ext_09_acknowledgement_deadline() {
    let server = server().await;
    server
        .set_fault("notif", Route::Stream, Fault::NeverAnswer)
        .unwrap();
    let config = ExtensionConfig::default().with_acknowledgement_timeout(Duration::from_millis(50));
    let sender = sender(&server, &["notif"], config).await;
    let (sub, _seen) = open_recorded(&sender, "notif", notif_content("hang"));
    let err = sub.acknowledgement().await.unwrap_err();
    assert_eq!(err.code, "a2a.timeout");
    assert!(
        err.message.contains("acknowledgement timed out"),
        "{}",
        err.message
    );
    assert_eq!(sub.completion().await.unwrap_err().code, "a2a.timeout");
    assert!(!sub.is_active());
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn s_ext_10_the_acknowledgement_deadline_does_not_bound_the_stream_after_it() {
    let server = server().await;
    let config = ExtensionConfig::default().with_acknowledgement_timeout(Duration::from_millis(50));
    let sender = sender(&server, &["notif"], config).await;
    let (sub, _seen) = open_recorded(&sender, "notif", notif_content("hang"));
    sub.acknowledgement().await.unwrap();
    // Well past the acknowledgement deadline the subscription is still open.
    let done = tokio::time::timeout(Duration::from_millis(200), sub.completion()).await;
    assert!(done.is_err(), "completion resolved: {done:?}");
    assert!(sub.is_active());
    sub.close();
    assert_eq!(sub.completion().await.unwrap(), Ended::Closed);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn card_without_the_extension_or_plain_content_is_refused_before_any_io() {
    let server = server().await;
    let sender = sender(&server, &["notif", "plain"], ExtensionConfig::default()).await;
    let (_seen, listener) = recorder();
    let err = sender
        .open_notification("plain", notif_content("hang"), listener)
        .unwrap_err();
    assert_eq!(err.code, "a2a.extension_not_supported");
    let (_seen, listener) = recorder();
    let err = sender
        .open_notification("notif", MessageContent::text("plain"), listener)
        .unwrap_err();
    assert_eq!(err.code, "config.invalid");
    assert_eq!(sender.live_subscriptions(), 0);
    let sent = server
        .requests()
        .into_iter()
        .filter(|r| r.route.is_some_and(|r| r != Route::Card))
        .count();
    assert_eq!(sent, 0);
    server.shutdown().await.unwrap();
}
