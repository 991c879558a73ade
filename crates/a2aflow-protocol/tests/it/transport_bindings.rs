//! The transports against the testkit agent, on both bindings: every operation, the headers on
//! the wire, the agent's error envelopes mapped to codes, and connections closed on drop.

// Test code: a failed unwrap is a failed test.

use crate::support::msg;
use a2aflow_testkit::list_in_context;
use std::sync::Arc;
use std::time::Duration;

use a2aflow_model::a2a::{
    CancelTaskRequest, GetTaskRequest, SendMessageConfiguration, SendMessageRequest,
    SendMessageResponse, StreamResponse, SubscribeToTaskRequest, TaskState,
};
use a2aflow_protocol::{Binding, CallOptions, HttpClient, Transport, TransportError, connect};
use a2aflow_testkit::{AgentSpec, Route, TestServer};
use futures_util::StreamExt;

const BINDINGS: [Binding; 2] = [Binding::JsonRpc, Binding::HttpJson];

fn immediately(text: &str) -> SendMessageRequest {
    let mut r = msg(text);
    r.configuration = Some(SendMessageConfiguration {
        accepted_output_modes: None,
        task_push_notification_config: None,
        history_length: None,
        return_immediately: Some(true),
    });
    r
}

async fn server() -> TestServer {
    TestServer::builder()
        .agent(AgentSpec::new("a"))
        .ping_interval(Duration::from_millis(100))
        .spawn()
        .await
        .unwrap()
}

async fn transport(server: &TestServer, binding: Binding) -> (HttpClient, Arc<dyn Transport>) {
    let client = HttpClient::new().unwrap();
    let card = client
        .fetch_agent_card(&server.card_url("a"), &CallOptions::default())
        .await
        .unwrap();
    let t = connect(&card, &client, &[binding]).unwrap();
    assert_eq!(t.binding(), binding);
    (client, t)
}

/// Waits (bounded) until the server has no open connection.
async fn no_open_connections(server: &TestServer) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while server.open_connections() > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} connections still open",
            server.open_connections()
        );
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn message_and_task_answers_on_both_bindings() {
    let server = server().await;
    for b in BINDINGS {
        let (_c, t) = transport(&server, b).await;
        let opts = CallOptions::default();
        match t.send_message(&msg("echo hello"), &opts).await.unwrap() {
            SendMessageResponse::Message(m) => assert_eq!(m.text(), Some("echo hello"), "{b}"),
            other => panic!("{b}: {other:?}"),
        }
        match t.send_message(&msg("task x"), &opts).await.unwrap() {
            SendMessageResponse::Task(task) => {
                assert_eq!(task.status.state, TaskState::Completed, "{b}");
                assert_eq!(task.artifacts.as_ref().map(Vec::len), Some(1), "{b}");
            }
            other => panic!("{b}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn return_immediately_get_list_and_cancel_on_both_bindings() {
    let server = server().await;
    for b in BINDINGS {
        let (_c, t) = transport(&server, b).await;
        let opts = CallOptions::default();
        let task = match t.send_message(&immediately("hang"), &opts).await.unwrap() {
            SendMessageResponse::Task(task) => task,
            other => panic!("{b}: {other:?}"),
        };
        assert!(!task.status.state.is_terminal(), "{b}");
        let got = t
            .get_task(
                &GetTaskRequest {
                    id: task.id.clone(),
                    history_length: Some(0),
                    tenant: None,
                },
                &opts,
            )
            .await
            .unwrap();
        assert_eq!(got.id, task.id, "{b}");
        let listed = t
            .list_tasks(&list_in_context(&task.context_id), &opts)
            .await
            .unwrap();
        assert_eq!(listed.tasks.len(), 1, "{b}");
        assert_eq!(listed.tasks[0].id, task.id, "{b}");
        let cancel = CancelTaskRequest {
            id: task.id.clone(),
            metadata: None,
            tenant: None,
        };
        let canceled = t.cancel_task(&cancel, &opts).await.unwrap();
        assert_eq!(canceled.status.state, TaskState::Canceled, "{b}");
        let again = t.cancel_task(&cancel, &opts).await.unwrap_err();
        assert_eq!(again.code_str(), "a2a.task_not_cancelable", "{b}");
        let missing = t
            .get_task(
                &GetTaskRequest {
                    id: "no-such-task".into(),
                    history_length: None,
                    tenant: None,
                },
                &opts,
            )
            .await
            .unwrap_err();
        assert_eq!(missing.code_str(), "a2a.task_not_found", "{b}");
        let f = missing.to_failure();
        assert_eq!(f.details["reason"], "TASK_NOT_FOUND", "{b}");
    }
}

#[tokio::test]
async fn streaming_and_subscribe_on_both_bindings() {
    let server = server().await;
    for b in BINDINGS {
        let (_c, t) = transport(&server, b).await;
        let opts = CallOptions::default();
        let events: Vec<StreamResponse> = t
            .send_streaming_message(&msg("stream x"), &opts)
            .await
            .unwrap()
            .map(|r| r.unwrap())
            .collect()
            .await;
        assert!(
            matches!(events.first(), Some(StreamResponse::Task(_))),
            "{b}"
        );
        let chunks = events
            .iter()
            .filter(|e| matches!(e, StreamResponse::ArtifactUpdate(_)))
            .count();
        assert_eq!(chunks, 3, "{b}");
        match events.last() {
            Some(StreamResponse::StatusUpdate(u)) => {
                assert_eq!(u.status.state, TaskState::Completed, "{b}")
            }
            Some(StreamResponse::Task(t)) => assert_eq!(t.status.state, TaskState::Completed),
            other => panic!("{b}: {other:?}"),
        }

        // Subscribe to a live task, cancel it from the side, see the stream end canceled.
        let task = match t.send_message(&immediately("hang"), &opts).await.unwrap() {
            SendMessageResponse::Task(task) => task,
            other => panic!("{b}: {other:?}"),
        };
        let mut sub = t
            .subscribe_to_task(
                &SubscribeToTaskRequest {
                    id: task.id.clone(),
                    tenant: None,
                },
                &opts,
            )
            .await
            .unwrap();
        match sub.next().await {
            Some(Ok(StreamResponse::Task(first))) => assert_eq!(first.id, task.id, "{b}"),
            other => panic!("{b}: {other:?}"),
        }
        t.cancel_task(
            &CancelTaskRequest {
                id: task.id.clone(),
                metadata: None,
                tenant: None,
            },
            &opts,
        )
        .await
        .unwrap();
        let rest: Vec<StreamResponse> = sub.map(|r| r.unwrap()).collect().await;
        let last_state = rest.iter().rev().find_map(|e| match e {
            StreamResponse::StatusUpdate(u) => Some(u.status.state.clone()),
            StreamResponse::Task(t) => Some(t.status.state.clone()),
            _ => None,
        });
        assert_eq!(last_state, Some(TaskState::Canceled), "{b}");

        // Subscribing to a terminal task: a plain JSON error instead of a stream.
        let err = match t
            .subscribe_to_task(
                &SubscribeToTaskRequest {
                    id: task.id.clone(),
                    tenant: None,
                },
                &opts,
            )
            .await
        {
            Ok(_) => panic!("{b}: subscribed to a terminal task"),
            Err(e) => e,
        };
        assert_eq!(err.code_str(), "a2a.unsupported_operation", "{b}");
    }
}

#[tokio::test]
async fn every_request_carries_version_and_extension_headers() {
    let server = server().await;
    for b in BINDINGS {
        server.clear_requests();
        let (_c, t) = transport(&server, b).await;
        let opts =
            CallOptions::default().with_extensions(["https://example.org/ext/a/v1", "urn:b"]);
        t.send_message(&msg("echo hi"), &opts).await.unwrap();
        let _ = t
            .send_streaming_message(&msg("echo hi"), &opts)
            .await
            .unwrap()
            .collect::<Vec<_>>()
            .await;
        let reqs = server.requests();
        assert_eq!(reqs.len(), 3, "{b}: card, send, stream");
        assert_eq!(reqs[0].route, Some(Route::Card));
        for r in &reqs {
            assert_eq!(r.header("a2a-version"), Some("1.0"), "{b} {:?}", r.route);
        }
        for r in &reqs[1..] {
            assert_eq!(
                r.header("a2a-extensions"),
                Some("https://example.org/ext/a/v1, urn:b"),
                "{b}"
            );
            assert_eq!(r.header("content-type"), Some("application/json"), "{b}");
        }
        assert_eq!(reqs[2].header("accept"), Some("text/event-stream"), "{b}");
        assert_eq!(reqs[1].header("accept"), Some("application/json"), "{b}");
    }
}

#[tokio::test]
async fn a_missing_version_header_is_version_not_supported() {
    let server = server().await;
    for b in BINDINGS {
        let probe = HttpClient::new().unwrap();
        let card = probe
            .fetch_agent_card(&server.card_url("a"), &CallOptions::default())
            .await
            .unwrap();
        let client = HttpClient::builder()
            .send_version_header(false)
            .build()
            .unwrap();
        let t = connect(&card, &client, &[b]).unwrap();
        let e = t
            .send_message(&msg("echo hi"), &CallOptions::default())
            .await
            .unwrap_err();
        assert_eq!(e.code_str(), "a2a.version_not_supported", "{b}");
    }
}

#[tokio::test]
async fn bad_params_are_invalid_params() {
    let server = server().await;
    for b in BINDINGS {
        let (_c, t) = transport(&server, b).await;
        let mut bad = msg("echo");
        bad.message.parts.clear();
        let e = t
            .send_message(&bad, &CallOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(e, TransportError::Remote(_)), "{b}: {e:?}");
        assert_eq!(e.code_str(), "a2a.invalid_params", "{b}");
    }
}

#[tokio::test]
async fn dropping_the_transport_closes_its_connections() {
    let server = server().await;
    for b in BINDINGS {
        let (client, t) = transport(&server, b).await;
        t.send_message(&msg("echo a"), &CallOptions::default())
            .await
            .unwrap();
        // A stream dropped half-way closes its request too.
        let mut s = t
            .send_streaming_message(&msg("stream y"), &CallOptions::default())
            .await
            .unwrap();
        assert!(s.next().await.is_some());
        drop(s);
        assert!(
            server.open_connections() >= 1,
            "{b}: pooled connection expected"
        );
        drop(t);
        drop(client);
        no_open_connections(&server).await;
    }
}

#[tokio::test]
async fn the_extended_card_is_unsupported_when_not_declared() {
    let server = server().await;
    for b in BINDINGS {
        let (_c, t) = transport(&server, b).await;
        let e = t
            .get_extended_agent_card(&CallOptions::default())
            .await
            .unwrap_err();
        assert_eq!(e.code_str(), "a2a.unsupported_operation", "{b}");
    }
}

/// Regression: a stream whose call options carry only a deadline (no timeout) is bounded by that
/// deadline, not cut off at once.
#[tokio::test]
async fn a_deadline_only_stream_runs_to_its_end() {
    let server = server().await;
    for b in BINDINGS {
        let (_c, t) = transport(&server, b).await;
        let opts = CallOptions::default()
            .with_deadline(tokio::time::Instant::now() + Duration::from_secs(30));
        let events: Vec<Result<StreamResponse, TransportError>> = t
            .send_streaming_message(&msg("stream z"), &opts)
            .await
            .unwrap()
            .collect()
            .await;
        assert!(events.iter().all(Result::is_ok), "{b}: {events:?}");
        assert!(
            matches!(events.last(), Some(Ok(StreamResponse::StatusUpdate(u))) if u.status.state == TaskState::Completed),
            "{b}: {events:?}"
        );
    }
}

#[tokio::test]
async fn the_card_is_found_from_a_base_url_with_a_path_prefix() {
    let server = server().await;
    let client = HttpClient::new().unwrap();
    let by_base = client
        .fetch_agent_card(&server.agent_url("a"), &CallOptions::default())
        .await
        .unwrap();
    let by_card = client
        .fetch_agent_card(&server.card_url("a"), &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(by_base.name, "a");
    assert_eq!(by_base, by_card);
    let slash = format!("{}/", server.agent_url("a"));
    let by_slash = client
        .fetch_agent_card(&slash, &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(by_slash, by_card);
    server.shutdown().await.unwrap();
}

/// Cards whose security schemes use the older shapes real agents publish.
#[tokio::test]
async fn a_card_with_legacy_security_schemes_is_normalised_to_a2a_1_0() {
    use a2aflow_model::a2a::SecurityScheme;
    let legacy = serde_json::json!({
        "bare": {"scheme": "bearer"},
        "openapi": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
        "key": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
    });
    let server = TestServer::builder()
        .agent(AgentSpec::new("a").card_patch(move |card| {
            card["securitySchemes"] = legacy.clone();
            card["security"] = serde_json::json!([{"openapi": []}]);
        }))
        .agent(AgentSpec::new("odd").card_patch(|card| {
            card["securitySchemes"] = serde_json::json!({"sig": {"type": "httpSignature"}});
        }))
        .spawn()
        .await
        .unwrap();
    let client = HttpClient::new().unwrap();
    let card = client
        .fetch_agent_card(&server.card_url("a"), &CallOptions::default())
        .await
        .unwrap();
    let schemes = card.security_schemes.clone().unwrap();
    assert!(matches!(&schemes["bare"], SecurityScheme::HttpAuth(h) if h.scheme == "bearer"));
    assert!(
        matches!(&schemes["openapi"], SecurityScheme::HttpAuth(h) if h.bearer_format.as_deref() == Some("JWT"))
    );
    assert!(
        matches!(&schemes["key"], SecurityScheme::ApiKey(k) if k.location == "header" && k.name == "X-API-Key")
    );
    let requirements = card.security_requirements.clone().unwrap();
    assert!(requirements[0].contains_key("openapi"));

    let e = client
        .fetch_agent_card(&server.card_url("odd"), &CallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(e.code_str(), "a2a.invalid_response");
    let message = e.to_failure().message;
    assert!(
        message.contains(
            "security scheme `sig` has type `httpSignature`, which has no A2A 1.0 equivalent"
        ),
        "{message}"
    );
    server.shutdown().await.unwrap();
}
