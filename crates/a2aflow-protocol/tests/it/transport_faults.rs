//! Every testkit fault, on both bindings: a typed error with the right code, well within its
//! deadline, no panic, and no connection left open once the transport is dropped.

// Test code: a failed unwrap is a failed test.

use crate::support::msg;
use std::sync::Arc;
use std::time::Duration;

use a2aflow_model::a2a::StreamResponse;
use a2aflow_protocol::{
    Binding, CallOptions, HttpClient, Limits, TimeoutPhase, Transport, TransportError, connect,
};
use a2aflow_testkit::{AgentSpec, Credential, Fault, Route, TestServer, TlsOptions};
use futures_util::StreamExt;

const BINDINGS: [Binding; 2] = [Binding::JsonRpc, Binding::HttpJson];

/// Generous bound on how long any faulty call may take with the test limits below.
const CALL_BOUND: Duration = Duration::from_secs(5);

fn limits() -> Limits {
    let mut l = Limits::default();
    l.connect_timeout = Duration::from_secs(1);
    l.request_timeout = Duration::from_millis(800);
    l.idle_stream_timeout = Duration::from_millis(400);
    l.max_response_body = 64 * 1024;
    l.max_sse_event = 16 * 1024;
    l
}

async fn server(ping: Duration) -> TestServer {
    TestServer::builder()
        .agent(AgentSpec::new("a"))
        .ping_interval(ping)
        .spawn()
        .await
        .unwrap()
}

async fn transport(server: &TestServer, b: Binding) -> (HttpClient, Arc<dyn Transport>) {
    let client = HttpClient::builder().limits(limits()).build().unwrap();
    let card = client
        .fetch_agent_card(&server.card_url("a"), &CallOptions::default())
        .await
        .unwrap();
    let t = connect(&card, &client, &[b]).unwrap();
    (client, t)
}

async fn no_open_connections(server: &TestServer, what: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while server.open_connections() > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: {} connections still open",
            server.open_connections()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn bounded<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    match tokio::time::timeout(CALL_BOUND, f).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: no answer within {CALL_BOUND:?}"),
    }
}

#[tokio::test]
async fn unary_faults_give_typed_errors_and_leak_nothing() {
    let cases: Vec<(Fault, &str)> = vec![
        (Fault::RefuseConnection, "a2a.connection"),
        (Fault::ResetMidBody, "a2a.connection"),
        (Fault::ServerError { status: 502 }, "a2a.http_status"),
        (Fault::MalformedJson, "a2a.invalid_response"),
        (Fault::WrongTypes, "a2a.invalid_response"),
        (
            Fault::OversizedBody { bytes: 1 << 20 },
            "a2a.response_too_large",
        ),
        (
            Fault::ByteDrip {
                interval: Duration::from_millis(20),
            },
            "a2a.timeout",
        ),
        (Fault::Delay(Duration::from_secs(30)), "a2a.timeout"),
        (Fault::NeverAnswer, "a2a.timeout"),
        (
            Fault::RequireAuth(Credential::Bearer("right".into())),
            "auth.rejected",
        ),
    ];
    let server = server(Duration::from_secs(15)).await;
    for b in BINDINGS {
        for (fault, want) in &cases {
            let what = format!("{b} {fault:?}");
            let (client, t) = transport(&server, b).await;
            server.set_fault("a", Route::Send, fault.clone()).unwrap();
            let err = bounded(
                &what,
                t.send_message(&msg("task x"), &CallOptions::default()),
            )
            .await
            .unwrap_err();
            assert_eq!(err.code_str(), *want, "{what}: {err}");
            let f = err.to_failure();
            if *want == "a2a.http_status" {
                assert_eq!(f.details["httpStatus"], 502, "{what}");
                assert!(f.details["excerpt"].as_str().is_some_and(|e| !e.is_empty()));
            }
            if *want == "a2a.timeout" {
                assert_eq!(f.details["phase"], "request", "{what}");
            }
            server.clear_fault("a", Route::Send).unwrap();
            drop(t);
            drop(client);
            no_open_connections(&server, &what).await;
        }
    }
}

/// Collects a stream: the items before the error, and the error.
async fn drain(
    what: &str,
    mut s: a2aflow_protocol::StreamResponseStream,
) -> (Vec<StreamResponse>, Option<TransportError>) {
    let mut ok = Vec::new();
    loop {
        match bounded(what, s.next()).await {
            Some(Ok(item)) => ok.push(item),
            Some(Err(e)) => {
                assert!(s.next().await.is_none(), "{what}: items after an error");
                return (ok, Some(e));
            }
            None => return (ok, None),
        }
    }
}

#[tokio::test]
async fn stream_faults_give_typed_errors_and_leak_nothing() {
    // (fault, events expected before the error, code)
    let cases: Vec<(Fault, usize, &str)> = vec![
        (
            Fault::ResetMidStream { after_events: 1 },
            1,
            "a2a.connection",
        ),
        (
            Fault::TruncatedSse { after_events: 1 },
            1,
            "a2a.invalid_response",
        ),
        (
            Fault::OversizedSseEvent { bytes: 64 * 1024 },
            0,
            "a2a.response_too_large",
        ),
        (Fault::SseErrorEvent { after_events: 1 }, 1, "a2a.internal"),
        (Fault::MalformedJson, 0, "a2a.invalid_response"),
    ];
    let server = server(Duration::from_secs(15)).await;
    for b in BINDINGS {
        for (fault, before, want) in &cases {
            let what = format!("{b} {fault:?}");
            let (client, t) = transport(&server, b).await;
            server.set_fault("a", Route::Stream, fault.clone()).unwrap();
            let res = bounded(
                &what,
                t.send_streaming_message(&msg("stream x"), &CallOptions::default()),
            )
            .await;
            let err = match res {
                Err(e) => {
                    assert_eq!(*before, 0, "{what}: failed before the stream opened");
                    e
                }
                Ok(s) => {
                    let (items, err) = drain(&what, s).await;
                    assert_eq!(items.len(), *before, "{what}");
                    err.unwrap_or_else(|| panic!("{what}: the stream ended without an error"))
                }
            };
            assert_eq!(err.code_str(), *want, "{what}: {err}");
            server.clear_fault("a", Route::Stream).unwrap();
            drop(t);
            drop(client);
            no_open_connections(&server, &what).await;
        }
    }
}

#[tokio::test]
async fn stream_head_faults_are_typed() {
    let server = server(Duration::from_secs(15)).await;
    for b in BINDINGS {
        for (fault, want) in [
            (Fault::NeverAnswer, "a2a.timeout"),
            (Fault::ServerError { status: 503 }, "a2a.http_status"),
            (Fault::RefuseConnection, "a2a.connection"),
        ] {
            let what = format!("{b} {fault:?}");
            let (client, t) = transport(&server, b).await;
            server.set_fault("a", Route::Stream, fault).unwrap();
            let err = match bounded(
                &what,
                t.send_streaming_message(&msg("stream x"), &CallOptions::default()),
            )
            .await
            {
                Err(e) => e,
                Ok(s) => drain(&what, s).await.1.expect("an error"),
            };
            assert_eq!(err.code_str(), want, "{what}: {err}");
            server.clear_fault("a", Route::Stream).unwrap();
            drop(t);
            drop(client);
            no_open_connections(&server, &what).await;
        }
    }
}

#[tokio::test]
async fn a_silent_stream_hits_the_idle_timeout() {
    // Pings far apart: a hanging task sends nothing after its first events.
    let server = server(Duration::from_secs(30)).await;
    for b in BINDINGS {
        let (client, t) = transport(&server, b).await;
        let s = t
            .send_streaming_message(&msg("hang"), &CallOptions::default())
            .await
            .unwrap();
        let (items, err) = drain(&format!("{b} idle"), s).await;
        assert!(!items.is_empty(), "{b}: the task event comes first");
        match err {
            Some(TransportError::Timeout { phase, after }) => {
                assert_eq!(phase, TimeoutPhase::IdleStream, "{b}");
                assert_eq!(after, limits().idle_stream_timeout);
            }
            other => panic!("{b}: {other:?}"),
        }
        drop(t);
        drop(client);
        no_open_connections(&server, "idle").await;
    }
}

#[tokio::test]
async fn keep_alive_comments_reset_the_idle_timeout() {
    // Pings every 50 ms keep a 1.2 s task alive through a 400 ms idle timeout.
    let server = server(Duration::from_millis(50)).await;
    for b in BINDINGS {
        let (_client, t) = transport(&server, b).await;
        let s = t
            .send_streaming_message(&msg("slow 1.2"), &CallOptions::default())
            .await
            .unwrap();
        let (items, err) = drain(&format!("{b} keep-alive"), s).await;
        assert!(err.is_none(), "{b}: {err:?}");
        let completed = items.iter().any(|e| match e {
            StreamResponse::StatusUpdate(u) => u.status.state.is_terminal(),
            StreamResponse::Task(t) => t.status.state.is_terminal(),
            _ => false,
        });
        assert!(completed, "{b}: the stream reached the terminal state");
    }
}

#[tokio::test]
async fn a_call_deadline_bounds_a_dripping_stream() {
    let server = server(Duration::from_secs(15)).await;
    for b in BINDINGS {
        let (_client, t) = transport(&server, b).await;
        server
            .set_fault(
                "a",
                Route::Stream,
                Fault::ByteDrip {
                    interval: Duration::from_millis(10),
                },
            )
            .unwrap();
        let opts = CallOptions::default().with_timeout(Duration::from_millis(700));
        let err = match bounded("drip", t.send_streaming_message(&msg("stream x"), &opts)).await {
            Err(e) => e,
            Ok(s) => drain("drip", s).await.1.expect("an error"),
        };
        assert_eq!(err.code_str(), "a2a.timeout", "{b}: {err}");
        server.clear_fault("a", Route::Stream).unwrap();
    }
}

#[tokio::test]
async fn errors_before_a_task_exists_are_not_retried() {
    let server = server(Duration::from_secs(15)).await;
    for b in BINDINGS {
        let (_client, t) = transport(&server, b).await;
        server
            .set_fault("a", Route::Send, Fault::ServerError { status: 500 })
            .unwrap();
        server.clear_requests();
        let _ = t
            .send_message(&msg("task x"), &CallOptions::default())
            .await
            .unwrap_err();
        let sends = server
            .requests()
            .iter()
            .filter(|r| r.route == Some(Route::Send))
            .count();
        assert_eq!(sends, 1, "{b}: exactly one attempt");
        server.clear_fault("a", Route::Send).unwrap();
    }
}

#[tokio::test]
async fn tls_is_verified_by_default_and_works_with_the_right_root() {
    let server = TestServer::builder()
        .agent(AgentSpec::new("a"))
        .bind_tls(Some(TlsOptions::new()))
        .spawn()
        .await
        .unwrap();
    // Default roots: the self-signed testkit CA is not trusted.
    let client = HttpClient::new().unwrap();
    let err = client
        .fetch_agent_card(&server.card_url("a"), &CallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code_str(), "a2a.tls", "{err}");

    // Trusting the testkit's CA: both bindings work over TLS.
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(server.ca_pem().unwrap().as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let client = HttpClient::builder().tls(Arc::new(config)).build().unwrap();
    let card = client
        .fetch_agent_card(&server.card_url("a"), &CallOptions::default())
        .await
        .unwrap();
    for b in BINDINGS {
        let t = connect(&card, &client, &[b]).unwrap();
        t.send_message(&msg("echo over tls"), &CallOptions::default())
            .await
            .unwrap();
    }
}

/// The agent's ErrorInfo domain and metadata reach the failure on both bindings: a host can tell
/// which task the agent did not find.
#[tokio::test]
async fn remote_error_info_reaches_the_failure_details() {
    let server = server(Duration::from_secs(15)).await;
    for b in [Binding::JsonRpc, Binding::HttpJson] {
        let (_http, t) = transport(&server, b).await;
        let request = a2aflow_model::a2a::GetTaskRequest {
            id: "no-such-task".into(),
            history_length: None,
            tenant: None,
        };
        let e = t
            .get_task(&request, &CallOptions::default())
            .await
            .unwrap_err();
        let f = e.to_failure();
        assert_eq!(f.code, "a2a.task_not_found", "{b:?}");
        assert_eq!(f.details["domain"], "a2a-protocol.org", "{b:?}: {f:?}");
        assert_eq!(f.details["reason"], "TASK_NOT_FOUND", "{b:?}");
    }
    server.shutdown().await.unwrap();
}
