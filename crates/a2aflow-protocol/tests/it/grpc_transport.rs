//! The gRPC transport against a scripted tonic peer and the testkit's TLS servers: every
//! operation, the metadata (version, extensions, credentials, tenant), credentials refreshed once
//! on `UNAUTHENTICATED`, the call budget, the message size limit, the idle stream limit, a
//! refused connection, the plaintext rule of `host:port` and of a card's `http://host:port`, and TLS and mutual TLS (against the
//! testkit's gRPC door) through the one rustls configuration of the other bindings.

use a2aflow_testkit::list_in_context;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2aflow_model::Failure;
use a2aflow_model::a2a::{
    AgentCard, CancelTaskRequest, GetTaskRequest, SendMessageRequest, SendMessageResponse,
    StreamResponse, SubscribeToTaskRequest, TaskState,
};
use a2aflow_protocol::grpc::{GrpcTransport, Schemeless};
use a2aflow_protocol::tls::TlsConfig;
use a2aflow_protocol::{
    AgentSource, Binding, CallOptions, ChannelConfig, ChannelFactory, HttpClient, Limits,
    RequestHeaders, TimeoutPhase, Transport, TransportError,
};
use a2aflow_testkit::{AgentSpec, TestServer, TlsOptions};
use async_trait::async_trait;
use futures_util::StreamExt;
use http::{HeaderMap, HeaderValue, Uri};

use crate::grpc_peer::{GrpcPeer, Mode, Running};
use crate::support::msg;

fn plain(client: HttpClient, peer: &Running, tenant: Option<&str>) -> GrpcTransport {
    GrpcTransport::new(
        client,
        &peer.host_port(),
        tenant.map(str::to_owned),
        Schemeless::Plaintext,
    )
    .unwrap()
}

fn opts() -> CallOptions {
    CallOptions::default().with_timeout(Duration::from_secs(10))
}

#[tokio::test]
async fn every_operation_round_trips_with_version_extensions_and_tenant() {
    let peer = GrpcPeer::spawn(Mode::Answer).await;
    let t = plain(HttpClient::new().unwrap(), &peer, Some("acme"));
    assert_eq!(t.binding(), Binding::Grpc);
    assert_eq!(t.target().to_string(), format!("http://{}/", peer.addr));
    assert_eq!(t.url(), peer.host_port());
    let o = opts().with_extensions(["urn:ext:a", "urn:ext:b"]);

    let mut req = msg("hello over grpc");
    req.message.context_id = Some("ctx-1".into());
    match t.send_message(&req, &o).await.unwrap() {
        SendMessageResponse::Task(task) => {
            assert_eq!(task.status.state, TaskState::Completed);
            assert_eq!(task.context_id, "ctx-1");
            let out = &task.artifacts.as_ref().unwrap()[0];
            assert_eq!(out.parts[0].as_text(), Some("hello over grpc"));
        }
        other => panic!("{other:?}"),
    }
    let events: Vec<StreamResponse> = t
        .send_streaming_message(&req, &o)
        .await
        .unwrap()
        .map(|e| e.unwrap())
        .collect()
        .await;
    assert!(matches!(events[0], StreamResponse::Task(_)), "{events:?}");
    assert!(
        matches!(events[1], StreamResponse::StatusUpdate(_)),
        "{events:?}"
    );
    let got = t
        .get_task(
            &GetTaskRequest {
                id: "t-9".into(),
                history_length: None,
                tenant: None,
            },
            &o,
        )
        .await
        .unwrap();
    assert_eq!(got.id, "t-9");
    let listed = t.list_tasks(&list_in_context("ctx-1"), &o).await.unwrap();
    assert_eq!(listed.tasks[0].context_id, "ctx-1");
    let canceled = t
        .cancel_task(
            &CancelTaskRequest {
                id: "t-9".into(),
                metadata: None,
                tenant: Some("own-tenant".into()),
            },
            &o,
        )
        .await
        .unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    let sub: Vec<_> = t
        .subscribe_to_task(
            &SubscribeToTaskRequest {
                id: "t-s".into(),
                tenant: None,
            },
            &o,
        )
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(sub.len(), 2);
    let card = t.get_extended_agent_card(&o).await.unwrap();
    assert_eq!(card.name, "grpc-peer");

    let calls = peer.peer.calls();
    let methods: Vec<&str> = calls.iter().map(|c| c.method).collect();
    assert_eq!(
        methods,
        [
            "SendMessage",
            "SendStreamingMessage",
            "GetTask",
            "ListTasks",
            "CancelTask",
            "SubscribeToTask",
            "GetExtendedAgentCard"
        ]
    );
    for c in &calls {
        assert_eq!(c.metadata["a2a-version"], "1.0", "{}", c.method);
        assert_eq!(
            c.metadata["a2a-extensions"], "urn:ext:a, urn:ext:b",
            "{}",
            c.method
        );
        let want = if c.method == "CancelTask" {
            "own-tenant"
        } else {
            "acme"
        };
        assert_eq!(c.tenant, want, "{}", c.method);
    }
}

/// A peer that answers, a transport to it for tenant `acme`, a message `text` in context
/// `context`, and options that activate `urn:ext:a`.
async fn answering_acme(
    text: &str,
    context: &str,
) -> (Running, Arc<GrpcTransport>, SendMessageRequest, CallOptions) {
    let peer = GrpcPeer::spawn(Mode::Answer).await;
    let t = Arc::new(plain(HttpClient::new().unwrap(), &peer, Some("acme")));
    let mut req = msg(text);
    req.message.context_id = Some(context.into());
    (peer, t, req, opts().with_extensions(["urn:ext:a"]))
}

/// A caller that reads no task history (`CallOptions::without_history`, the engine's sends and
/// polls) gets the agent's answer less its history and nothing else changed, by every way of
/// sending; the request on the wire is the one the generated client sends (the same message,
/// tenant and metadata), whichever answer is read.
#[tokio::test]
async fn an_answer_read_without_history_differs_only_by_it_and_the_request_not_at_all() {
    let (peer, t, req, o) = answering_acme("the same request", "ctx-h").await;
    let full = t.send_message(&req, &o).await.unwrap();
    let SendMessageResponse::Task(task) = &full else {
        panic!("{full:?}");
    };
    let history = task
        .history
        .as_ref()
        .expect("the peer answers with history");
    assert_eq!(history[0].message_id, req.message.message_id);
    let mut less = task.clone();
    less.history = None;
    let less = SendMessageResponse::Task(less);
    let skip = o.clone().without_history();
    assert_eq!(t.send_message(&req, &skip).await.unwrap(), less);
    let owned = Arc::clone(&t).send_message_owned(req.clone(), skip.clone());
    assert_eq!(owned.await.unwrap(), less);
    let kept = Arc::clone(&t).send_message_owned(req.clone(), o.clone());
    assert_eq!(kept.await.unwrap(), full);

    // Bounded by the request timeout alone (no timeout or deadline of its own).
    let plain_options = CallOptions::default().with_extensions(["urn:ext:a"]);
    let bounded = Arc::clone(&t).send_message_owned(req.clone(), plain_options.without_history());
    assert_eq!(bounded.await.unwrap(), less);

    let want = {
        let mut wire = a2a_pb::pbconv::to_proto_send_message_request(&req);
        wire.tenant = "acme".into();
        wire
    };
    // What tonic's own `set_timeout` writes for the call's budget.
    let told = |budget: Duration| {
        let mut r = tonic::Request::new(());
        r.set_timeout(budget);
        r.metadata()
            .get("grpc-timeout")
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned()
    };
    let calls = peer.peer.calls();
    assert_eq!(calls.len(), 5);
    for (i, c) in calls.iter().enumerate() {
        assert_eq!(c.sent.as_ref(), Some(&want));
        assert_eq!(c.metadata["a2a-version"], "1.0");
        assert_eq!(c.metadata["a2a-extensions"], "urn:ext:a");
        let budget = if i == 4 {
            Limits::default().request_timeout
        } else {
            Duration::from_secs(10)
        };
        assert_eq!(
            c.metadata["grpc-timeout"],
            told(budget).as_str(),
            "call {i}"
        );
    }

    let get = GetTaskRequest {
        id: "t-h".into(),
        history_length: None,
        tenant: None,
    };
    let polled = t.get_task(&get, &o).await.unwrap();
    assert_eq!(polled.history.as_ref().map(Vec::len), Some(1));
    let mut less = polled.clone();
    less.history = None;
    assert_eq!(t.get_task(&get, &skip).await.unwrap(), less);
}

/// A streaming send handed over (`send_streaming_message_owned`, the engine's) is the call a
/// borrowed one makes: the same message, tenant and metadata on the wire, the same events, and
/// without history the first task less its history only.
#[tokio::test]
async fn a_streaming_send_handed_over_is_the_borrowed_call() {
    let (peer, t, req, o) = answering_acme("the same stream", "ctx-o").await;
    let collect = |s: a2aflow_protocol::stream::StreamResponseStream| {
        s.map(|e| e.unwrap()).collect::<Vec<StreamResponse>>()
    };
    let borrowed = collect(t.send_streaming_message(&req, &o).await.unwrap()).await;
    let owned = Arc::clone(&t).send_streaming_message_owned(req.clone(), o.clone());
    let owned = collect(owned.await.unwrap()).await;
    assert_eq!(owned, borrowed);
    let StreamResponse::Task(first) = &borrowed[0] else {
        panic!("{borrowed:?}");
    };
    assert!(first.history.as_ref().is_some_and(|h| !h.is_empty()));
    let skipped =
        Arc::clone(&t).send_streaming_message_owned(req.clone(), o.clone().without_history());
    let skipped = collect(skipped.await.unwrap()).await;
    let mut less = borrowed.clone();
    if let StreamResponse::Task(task) = &mut less[0] {
        task.history = None;
    }
    assert_eq!(skipped, less);

    let calls = peer.peer.calls();
    assert_eq!(calls.len(), 3);
    for c in &calls {
        assert_eq!(c.method, "SendStreamingMessage");
        assert_eq!(c.sent, calls[0].sent);
        assert_eq!(c.tenant, "acme");
        assert_eq!(c.metadata["a2a-version"], "1.0");
        assert_eq!(c.metadata["a2a-extensions"], "urn:ext:a");
        assert_eq!(
            c.metadata["grpc-timeout"],
            calls[0].metadata["grpc-timeout"]
        );
    }
}

/// Credentials for one origin, counting refreshes.
struct Bearer {
    seen: Mutex<Vec<Uri>>,
    refreshes: AtomicUsize,
}

#[async_trait]
impl RequestHeaders for Bearer {
    async fn headers_for(&self, url: &Uri) -> Result<HeaderMap, Failure> {
        self.seen.lock().unwrap().push(url.clone());
        let n = self.refreshes.load(Ordering::SeqCst);
        let mut h = HeaderMap::new();
        h.insert(
            "authorization",
            HeaderValue::from_str(&format!("Bearer token-{n}")).unwrap(),
        );
        Ok(h)
    }

    async fn on_unauthorized(&self, _: &Uri) -> Result<bool, Failure> {
        self.refreshes.fetch_add(1, Ordering::SeqCst);
        Ok(true)
    }
}

#[tokio::test]
async fn credentials_are_metadata_and_are_refreshed_once_on_unauthenticated() {
    let peer = GrpcPeer::spawn(Mode::UnauthenticatedOnce).await;
    let hook = Arc::new(Bearer {
        seen: Mutex::default(),
        refreshes: AtomicUsize::new(0),
    });
    let client = HttpClient::builder()
        .request_headers(hook.clone())
        .build()
        .unwrap();
    let t = plain(client, &peer, None);
    t.send_message(&msg("hi"), &opts()).await.unwrap();
    let calls = peer.peer.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].metadata["authorization"], "Bearer token-0");
    assert_eq!(calls[1].metadata["authorization"], "Bearer token-1");
    let seen = hook.seen.lock().unwrap();
    assert_eq!(
        seen[0].to_string(),
        format!("http://{}/lf.a2a.v1.A2AService/SendMessage", peer.addr)
    );
}

#[tokio::test]
async fn unauthenticated_without_a_refresh_is_auth_rejected() {
    let peer = GrpcPeer::spawn(Mode::UnauthenticatedOnce).await;
    let t = plain(HttpClient::new().unwrap(), &peer, None);
    let e = t.send_message(&msg("hi"), &opts()).await.unwrap_err();
    assert_eq!(e.code_str(), "auth.rejected", "{e}");
    assert_eq!(peer.peer.calls().len(), 1);
}

#[tokio::test]
async fn the_call_budget_ends_a_call_that_never_answers() {
    let peer = GrpcPeer::spawn(Mode::Hang).await;
    let t = plain(HttpClient::new().unwrap(), &peer, None);
    let o = CallOptions::default().with_timeout(Duration::from_millis(300));
    let e = tokio::time::timeout(Duration::from_secs(20), t.send_message(&msg("hi"), &o))
        .await
        .expect("bounded by the call's timeout")
        .unwrap_err();
    match e {
        TransportError::Timeout { phase, after } => {
            assert_eq!(
                (phase, after),
                (TimeoutPhase::Request, Duration::from_millis(300))
            );
        }
        other => panic!("{other}"),
    }
    // The agent was told the budget as the gRPC deadline.
    let told = peer.peer.calls()[0].metadata["grpc-timeout"].clone();
    assert!(told.to_str().unwrap().ends_with('m') || told.to_str().unwrap().ends_with('u'));
}

#[tokio::test]
async fn the_idle_limit_ends_a_silent_stream() {
    let peer = GrpcPeer::spawn(Mode::Hang).await;
    let mut limits = Limits::default();
    limits.idle_stream_timeout = Duration::from_millis(300);
    let client = HttpClient::builder().limits(limits).build().unwrap();
    let t = plain(client, &peer, None);
    let mut s = t.send_streaming_message(&msg("hi"), &opts()).await.unwrap();
    assert!(matches!(s.next().await, Some(Ok(StreamResponse::Task(_)))));
    let e = tokio::time::timeout(Duration::from_secs(20), s.next())
        .await
        .expect("bounded by the idle limit")
        .unwrap()
        .unwrap_err();
    match e {
        TransportError::Timeout { phase, .. } => assert_eq!(phase, TimeoutPhase::IdleStream),
        other => panic!("{other}"),
    }
    assert!(s.next().await.is_none(), "the stream ends after its error");
}

#[tokio::test]
async fn a_message_over_the_limit_is_response_too_large() {
    let peer = GrpcPeer::spawn(Mode::Oversized(64 * 1024)).await;
    let mut limits = Limits::default();
    limits.max_response_body = 16 * 1024;
    let client = HttpClient::builder().limits(limits).build().unwrap();
    let t = plain(client, &peer, None);
    let e = t.send_message(&msg("hi"), &opts()).await.unwrap_err();
    assert_eq!(e.code_str(), "a2a.response_too_large", "{e}");
}

/// A tonic server refusing the request as over its limit says what tonic says of an answer
/// over the client's own limit, with the same limit: it is the agent's refusal, not the
/// client's.
#[tokio::test]
async fn the_agents_refusal_of_a_request_over_its_limit_is_the_agents_answer() {
    let peer = GrpcPeer::spawn_limited(Mode::Answer, 16 * 1024).await;
    let mut limits = Limits::default();
    limits.max_response_body = 16 * 1024;
    let client = HttpClient::builder().limits(limits).build().unwrap();
    let t = plain(client, &peer, None);
    let e = t
        .send_message(&msg(&"x".repeat(64 * 1024)), &opts())
        .await
        .unwrap_err();
    match &e {
        TransportError::Remote(r) => {
            assert_eq!(r.status.as_deref(), Some("OUT_OF_RANGE"), "{e}");
            assert!(
                r.message
                    .starts_with("Error, decoded message length too large"),
                "{e}"
            );
        }
        other => panic!("the agent's refusal, got {other}"),
    }
    assert_eq!(e.code_str(), "a2a.remote_error");
    assert!(peer.peer.calls().is_empty(), "the peer never saw the call");
    // Under its limit the same peer answers.
    t.send_message(&msg("hi"), &opts()).await.unwrap();
}

#[tokio::test]
async fn a_refused_connection_is_a2a_connection() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    let t = GrpcTransport::new(
        HttpClient::new().unwrap(),
        &format!("127.0.0.1:{port}"),
        None,
        Schemeless::Plaintext,
    )
    .unwrap();
    let e = t.send_message(&msg("hi"), &opts()).await.unwrap_err();
    assert_eq!(e.code_str(), "a2a.connection", "{e}");
}

/// An agent as a user configured it: a card with one GRPC interface, and the URL given for it.
struct Configured {
    card: AgentCard,
    url: String,
}

impl AgentSource for Configured {
    fn card(&self) -> &AgentCard {
        &self.card
    }
    fn configured_url(&self) -> Option<&str> {
        Some(&self.url)
    }
}

fn grpc_card(url: &str) -> AgentCard {
    serde_json::from_value(serde_json::json!({
        "name": "g", "description": "d", "version": "1",
        "supportedInterfaces": [{"url": url, "protocolBinding": "GRPC", "protocolVersion": "1.0"}],
        "capabilities": {}, "defaultInputModes": [], "defaultOutputModes": [], "skills": []
    }))
    .unwrap()
}

#[tokio::test]
async fn host_port_is_plaintext_only_for_an_agent_configured_at_http() {
    let peer = GrpcPeer::spawn(Mode::Answer).await;
    let factory = ChannelFactory::new(ChannelConfig::new().unwrap()).unwrap();
    let http = Configured {
        card: grpc_card(&peer.host_port()),
        url: format!("http://{}", peer.addr),
    };
    let channel = factory.channel(&http).unwrap();
    assert_eq!(channel.binding(), Binding::Grpc);
    channel
        .transport
        .send_message(&msg("hi"), &opts())
        .await
        .unwrap();
    // Configured at https (or not at all): the same card is reached over TLS, never in the clear.
    let https = Configured {
        card: grpc_card(&peer.host_port()),
        url: format!("https://{}", peer.addr),
    };
    let e = factory
        .channel(&https)
        .unwrap()
        .transport
        .send_message(&msg("hi"), &opts())
        .await
        .unwrap_err();
    assert_eq!(e.code_str(), "a2a.tls", "{e}");
    let e = factory
        .connect(&grpc_card(&peer.host_port()))
        .unwrap()
        .send_message(&msg("hi"), &opts())
        .await
        .unwrap_err();
    assert_eq!(e.code_str(), "a2a.tls", "{e}");
    assert_eq!(peer.peer.calls().len(), 1, "nothing was sent in the clear");
}

/// A card that says `http://host:port` for its GRPC interface is reached in the clear, even given
/// on its own (a2a-lf's decoder drops the `http://`, which had made it `host:port` and so TLS).
#[tokio::test]
async fn a_card_that_says_http_is_reached_in_the_clear() {
    let peer = GrpcPeer::spawn(Mode::Answer).await;
    let factory = ChannelFactory::new(ChannelConfig::new().unwrap()).unwrap();
    let published = |url: String| {
        a2aflow_protocol::card_compat::decode_agent_card(serde_json::json!({
            "name": "g", "description": "d", "version": "1",
            "supportedInterfaces": [{"url": url, "protocolBinding": "GRPC", "protocolVersion": "1.0"}],
            "capabilities": {}, "defaultInputModes": [], "defaultOutputModes": [], "skills": []
        }))
        .unwrap()
    };
    let card = published(format!("http://{}", peer.addr));
    assert_eq!(
        card.supported_interfaces[0].url,
        format!("http://{}", peer.addr)
    );
    factory
        .connect(&card)
        .unwrap()
        .send_message(&msg("hi"), &opts())
        .await
        .unwrap();
    // The same card saying `host:port` (no word on plaintext) is still reached over TLS.
    let e = factory
        .connect(&published(peer.host_port()))
        .unwrap()
        .send_message(&msg("hi"), &opts())
        .await
        .unwrap_err();
    assert_eq!(e.code_str(), "a2a.tls", "{e}");
    assert_eq!(peer.peer.calls().len(), 1);
}

struct TempFile(PathBuf);

impl TempFile {
    fn new(text: &str) -> Self {
        let p = std::env::temp_dir().join(format!("a2aflow-grpc-{}.pem", uuid::Uuid::new_v4()));
        std::fs::write(&p, text).unwrap();
        TempFile(p)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

async fn tls_server(options: TlsOptions) -> TestServer {
    TestServer::builder()
        .agent(AgentSpec::new("a").bindings(&[a2aflow_testkit::Binding::Grpc]))
        .bind_tls(Some(options))
        .spawn()
        .await
        .unwrap()
}

/// A gRPC call to agent `a` of the testkit's HTTPS server (its gRPC door), `host:port` reached
/// over TLS with `tls`.
async fn grpc_to(
    server: &TestServer,
    tls: &TlsConfig,
) -> Result<SendMessageResponse, TransportError> {
    let client = HttpClient::builder()
        .tls(tls.client_config().unwrap())
        .build()
        .unwrap();
    let t = GrpcTransport::new(
        client,
        &server.addr().to_string(),
        Some("a".into()),
        Schemeless::Tls,
    )
    .unwrap();
    t.send_message(&msg("echo over tls"), &opts()).await
}

#[tokio::test]
async fn tls_goes_through_the_one_rustls_configuration() {
    let server = tls_server(TlsOptions::new()).await;
    let e = grpc_to(&server, &TlsConfig::new()).await.unwrap_err();
    assert_eq!(
        e.code_str(),
        "a2a.tls",
        "default trust refuses the private CA: {e}"
    );
    let ca = TempFile::new(server.ca_pem().unwrap());
    grpc_to(&server, &TlsConfig::new().with_ca_bundle(&ca.0))
        .await
        .unwrap();
    grpc_to(&server, &TlsConfig::new().with_insecure_skip_verify(true))
        .await
        .unwrap();
    let wrong = tls_server(TlsOptions::new().wrong_host(true)).await;
    let ca = TempFile::new(wrong.ca_pem().unwrap());
    let e = grpc_to(&wrong, &TlsConfig::new().with_ca_bundle(&ca.0))
        .await
        .unwrap_err();
    assert_eq!(
        e.code_str(),
        "a2a.tls",
        "the bundle still checks the name: {e}"
    );
}

#[tokio::test]
async fn mutual_tls_presents_the_configured_identity() {
    let server = tls_server(TlsOptions::new().require_client_cert(true)).await;
    let ca = TempFile::new(server.ca_pem().unwrap());
    let e = grpc_to(&server, &TlsConfig::new().with_ca_bundle(&ca.0))
        .await
        .unwrap_err();
    assert_eq!(e.code_str(), "a2a.tls", "no identity: {e}");
    let identity = server.client_identity().unwrap();
    let cert = TempFile::new(&identity.cert_pem);
    let key = TempFile::new(&identity.key_pem);
    let tls = TlsConfig::new()
        .with_ca_bundle(&ca.0)
        .with_client_cert(&cert.0, &key.0);
    grpc_to(&server, &tls).await.unwrap();
}

/// A fixed bearer credential.
struct Secret;

#[async_trait]
impl RequestHeaders for Secret {
    async fn headers_for(&self, _: &Uri) -> Result<HeaderMap, Failure> {
        let mut h = HeaderMap::new();
        h.insert(
            "authorization",
            HeaderValue::from_static("Bearer GRPC-SECRET-z1x2"),
        );
        Ok(h)
    }
}

#[tokio::test]
async fn the_wire_log_shows_grpc_calls_with_credentials_redacted() {
    use a2aflow_protocol::wirelog::{RedactionPolicy, WireLog};
    let peer = GrpcPeer::spawn(Mode::Answer).await;
    let capture = crate::support::Capture::default();
    let _guard = capture.trace_default();
    let client = HttpClient::builder()
        .wire_log(WireLog::enabled(RedactionPolicy::new()), "g")
        .request_headers(Arc::new(Secret))
        .build()
        .unwrap();
    let t = plain(client, &peer, None);
    t.send_message(&msg("logged words"), &opts()).await.unwrap();
    let _ = t
        .get_task(
            &GetTaskRequest {
                id: "missing".into(),
                history_length: None,
                tenant: None,
            },
            &opts(),
        )
        .await;
    let text = capture.text();
    assert!(text.contains("lf.a2a.v1.A2AService/SendMessage"), "{text}");
    assert!(
        text.contains("logged words"),
        "the request and answer bodies: {text}"
    );
    assert!(text.contains("a2a-version"), "{text}");
    assert!(
        text.contains("authorization"),
        "the header is logged, redacted: {text}"
    );
    assert!(
        !text.contains("GRPC-SECRET-z1x2"),
        "a credential reached the log: {text}"
    );
    assert_eq!(
        peer.peer.calls()[0].metadata["authorization"],
        "Bearer GRPC-SECRET-z1x2",
        "the credential itself was sent"
    );
}
