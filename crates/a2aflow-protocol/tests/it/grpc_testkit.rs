//! The gRPC transport against the testkit's gRPC door (same agents, scripts, checks and faults
//! as its other bindings): the card's GRPC interface, every operation on scripted tasks, the
//! agent's errors with their ErrorInfo reasons, the version check, and the answer faults.

use a2aflow_testkit::list_in_context;
use std::time::Duration;

use a2aflow_model::a2a::{
    AgentCard, CancelTaskRequest, GetTaskRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, TaskState,
};
use a2aflow_protocol::{
    AgentSource, Binding, CallOptions, ChannelConfig, ChannelFactory, HttpClient, Limits,
    Transport, connect_interface_with, grpc::Schemeless, select_interface,
};
use a2aflow_testkit::{AgentSpec, Binding as Served, Fault, Route, TestServer};
use futures_util::StreamExt;

use crate::support::msg;

async fn server() -> TestServer {
    TestServer::builder()
        .agent(AgentSpec::new("alpha").bindings(&[Served::Grpc]))
        .spawn()
        .await
        .unwrap()
}

async fn card(server: &TestServer) -> AgentCard {
    HttpClient::new()
        .unwrap()
        .fetch_agent_card(&server.card_url("alpha"), &CallOptions::default())
        .await
        .unwrap()
}

/// The transport as for an agent configured at the server's plain http URL.
fn transport_on(card: &AgentCard, client: &HttpClient) -> std::sync::Arc<dyn Transport> {
    let (b, i) = select_interface(card, &[Binding::Grpc]).unwrap();
    let plain = Schemeless::for_configured_url(Some("http://127.0.0.1"));
    connect_interface_with(b, i, client, plain).unwrap()
}

fn opts() -> CallOptions {
    CallOptions::default().with_timeout(Duration::from_secs(10))
}

fn get(id: &str) -> GetTaskRequest {
    GetTaskRequest {
        id: id.into(),
        history_length: None,
        tenant: None,
    }
}

#[tokio::test]
async fn scripted_tasks_over_the_testkit_grpc_door() {
    let server = server().await;
    let card = card(&server).await;
    let grpc = &card.supported_interfaces[0];
    assert_eq!(grpc.protocol_binding, "GRPC");
    // The URL as the testkit published it (a2a-lf's decoder alone would drop the `http://`).
    assert_eq!(grpc.url, format!("http://{}", server.addr()));
    assert_eq!(grpc.tenant.as_deref(), Some("alpha"));
    let t = transport_on(&card, &HttpClient::new().unwrap());

    match t.send_message(&msg("echo hi"), &opts()).await.unwrap() {
        SendMessageResponse::Message(m) => assert_eq!(m.text(), Some("echo hi")),
        other => panic!("{other:?}"),
    }
    let task = match t.send_message(&msg("task one"), &opts()).await.unwrap() {
        SendMessageResponse::Task(task) => task,
        other => panic!("{other:?}"),
    };
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(
        t.get_task(&get(&task.id), &opts()).await.unwrap().id,
        task.id
    );
    let listed = t
        .list_tasks(&list_in_context(&task.context_id), &opts())
        .await
        .unwrap();
    assert_eq!(listed.tasks.len(), 1);

    let events: Vec<StreamResponse> = t
        .send_streaming_message(&msg("stream a b c"), &opts())
        .await
        .unwrap()
        .map(|e| e.unwrap())
        .collect()
        .await;
    assert!(
        matches!(events.first(), Some(StreamResponse::Task(_))),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, StreamResponse::ArtifactUpdate(_))),
        "{events:?}"
    );

    // A hanging task: subscribed to, cancelled from the side; the subscription ends CANCELED.
    let hang = t
        .send_streaming_message(&msg("hang"), &opts())
        .await
        .unwrap()
        .next()
        .await
        .unwrap()
        .unwrap();
    let StreamResponse::Task(hang) = hang else {
        panic!("{hang:?}")
    };
    let sub = t
        .subscribe_to_task(
            &SubscribeToTaskRequest {
                id: hang.id.clone(),
                tenant: None,
            },
            &opts(),
        )
        .await
        .unwrap();
    let canceled = t
        .cancel_task(
            &CancelTaskRequest {
                id: hang.id.clone(),
                metadata: None,
                tenant: None,
            },
            &opts(),
        )
        .await
        .unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    let rest: Vec<StreamResponse> = tokio::time::timeout(
        Duration::from_secs(20),
        sub.map(|e| e.unwrap()).collect::<Vec<_>>(),
    )
    .await
    .unwrap();
    assert!(
        rest.iter().any(|e| matches!(e, StreamResponse::StatusUpdate(u) if u.status.state == TaskState::Canceled)),
        "{rest:?}"
    );

    // The agent's errors keep their reasons.
    let e = t.get_task(&get("no-such-task"), &opts()).await.unwrap_err();
    assert_eq!(e.code_str(), "a2a.task_not_found", "{e}");
    let e = t
        .cancel_task(
            &CancelTaskRequest {
                id: task.id.clone(),
                metadata: None,
                tenant: None,
            },
            &opts(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code_str(), "a2a.task_not_cancelable", "{e}");

    // Every call named the agent by its tenant and carried the version.
    let logged = server.requests();
    assert!(logged.len() >= 9, "{logged:?}");
    for r in &logged {
        if r.path.starts_with("/lf.a2a.v1.A2AService/") {
            assert_eq!(r.agent.as_deref(), Some("alpha"));
            assert_eq!(r.header("a2a-version"), Some("1.0"), "{}", r.path);
        }
    }
}

#[tokio::test]
async fn without_the_version_the_door_refuses_like_the_other_bindings() {
    let server = server().await;
    let card = card(&server).await;
    let no_version = HttpClient::builder()
        .send_version_header(false)
        .build()
        .unwrap();
    let e = transport_on(&card, &no_version)
        .send_message(&msg("echo hi"), &opts())
        .await
        .unwrap_err();
    assert_eq!(e.code_str(), "a2a.version_not_supported", "{e}");
}

struct Configured(AgentCard, String);

impl AgentSource for Configured {
    fn card(&self) -> &AgentCard {
        &self.0
    }
    fn configured_url(&self) -> Option<&str> {
        Some(&self.1)
    }
}

#[tokio::test]
async fn answer_faults_map_to_their_codes() {
    let server = server().await;
    let card = card(&server).await;
    let mut limits = Limits::default();
    limits.request_timeout = Duration::from_millis(500);
    limits.max_response_body = 64 * 1024;
    let factory = ChannelFactory::new(ChannelConfig::new().unwrap().with_limits(limits)).unwrap();
    let agent = Configured(card, server.base_url().to_owned());
    let t = factory.channel(&agent).unwrap().transport;
    assert_eq!(t.binding(), Binding::Grpc);
    let cases = [
        (Fault::RefuseConnection, "a2a.connection"),
        (Fault::NeverAnswer, "a2a.timeout"),
        (Fault::ServerError { status: 502 }, "a2a.http_status"),
        (Fault::MalformedJson, "a2a.invalid_response"),
        (
            Fault::OversizedBody { bytes: 1 << 20 },
            "a2a.response_too_large",
        ),
    ];
    for (fault, want) in cases {
        server
            .set_fault_times("alpha", Route::Send, fault.clone(), 1)
            .unwrap();
        let e = tokio::time::timeout(
            Duration::from_secs(20),
            t.send_message(&msg("echo hi"), &CallOptions::default()),
        )
        .await
        .expect("bounded")
        .unwrap_err();
        assert_eq!(e.code_str(), want, "{fault:?}: {e}");
        // The next call is served again (the fault was one-shot).
        t.send_message(&msg("echo again"), &opts()).await.unwrap();
    }
}
