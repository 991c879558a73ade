//! Credentials through the real transport against the testkit agent: the card's scheme is met
//! from a credentials file, the server accepts the header, a wrong credential is `auth.rejected`,
//! and the wire log of the whole exchange holds no secret.

use crate::support::{Capture, msg};
use std::sync::Arc;

use a2aflow_model::a2a::SendMessageResponse;
use a2aflow_protocol::auth::{AgentAuth, Credentials, Environment};
use a2aflow_protocol::wirelog::{RedactionPolicy, WireLog};
use a2aflow_protocol::{Binding, CallOptions, HttpClient, TransportError, connect};
use a2aflow_testkit::{AgentSpec, Credential, TestServer};
use serde_json::{Value, json};

const BEARER: &str = "E2E-BEARER-SECRET-5150";
const API_KEY: &str = "E2E-APIKEY-SECRET-8086";

/// Fetches the card anonymously, builds `AgentAuth` from `credentials`, and returns a client
/// that sends those headers and logs the wire.
async fn authed_client(
    server: &TestServer,
    agent: &str,
    credentials: serde_json::Value,
    env: &Environment,
) -> (HttpClient, Arc<a2aflow_model::a2a::AgentCard>) {
    let anonymous = HttpClient::new().unwrap();
    let card = Arc::new(
        anonymous
            .fetch_agent_card(&server.card_url(agent), &CallOptions::default())
            .await
            .unwrap(),
    );
    let creds = Credentials::from_value(&credentials, env).unwrap();
    let interface = card.supported_interfaces[0].url.clone();
    let auth = AgentAuth::builder(card.clone(), interface)
        .credentials(&creds)
        .build()
        .unwrap();
    let policy = RedactionPolicy::new().with_headers(
        auth.sensitive_header_names()
            .iter()
            .map(|n| n.as_str().to_owned()),
    );
    let client = HttpClient::builder()
        .request_headers(Arc::new(auth))
        .wire_log(WireLog::enabled(policy), agent)
        .build()
        .unwrap();
    (client, card)
}

/// Sends `text` to `agent` on `binding` through [`authed_client`] with `credentials`.
async fn send_authed(
    server: &TestServer,
    agent: &str,
    credentials: Value,
    env: &Environment,
    binding: Binding,
    text: &str,
) -> Result<SendMessageResponse, TransportError> {
    let (client, card) = authed_client(server, agent, credentials, env).await;
    let t = connect(&card, &client, &[binding]).unwrap();
    t.send_message(&msg(text), &CallOptions::default()).await
}

#[tokio::test]
async fn bearer_and_api_key_from_credentials_reach_the_agent_and_never_the_log() {
    let capture = Capture::default();
    let _guard = capture.trace_default();

    let server = TestServer::builder()
        .agent(AgentSpec::new("bearer-agent").require_auth(Credential::Bearer(BEARER.into())))
        .agent(
            AgentSpec::new("key-agent").require_auth(Credential::ApiKey {
                header: "X-Corp-Key".into(),
                value: API_KEY.into(),
            }),
        )
        .spawn()
        .await
        .unwrap();
    let env = Environment::from_pairs([("E2E_BEARER", BEARER), ("E2E_KEY", API_KEY)]);

    // (agent, its credentials entry, the message sent with them)
    let configured = [
        (
            "bearer-agent",
            json!({"bearer-agent": {"bearer": {"token": "env:E2E_BEARER"}}}),
            "hello with bearer",
        ),
        (
            "key-agent",
            json!({"key-agent": {"apiKey": {"api_key": "env:E2E_KEY"}}}),
            "hello with key",
        ),
    ];
    for binding in [Binding::JsonRpc, Binding::HttpJson] {
        for (agent, credentials, text) in &configured {
            send_authed(&server, agent, credentials.clone(), &env, binding, text)
                .await
                .unwrap_or_else(|e| panic!("{agent} on {binding}: {e}"));
        }
    }

    // A wrong credential is rejected by the agent.
    let err = send_authed(
        &server,
        "bearer-agent",
        json!({"bearer-agent": {"bearer": {"token": "E2E-WRONG-SECRET-1234"}}}),
        &env,
        Binding::JsonRpc,
        "hello",
    )
    .await
    .unwrap_err();
    assert_eq!(err.code_str(), "auth.rejected", "{err}");

    let text = capture.text();
    assert!(text.contains("a2aflow::wire"), "the wire log ran:\n{text}");
    assert!(text.contains("hello with bearer"), "{text}");
    for secret in [BEARER, API_KEY, "E2E-WRONG-SECRET-1234"] {
        assert!(!text.contains(secret), "{secret} leaked:\n{text}");
    }
}

#[tokio::test]
async fn an_agent_card_requirement_without_credentials_fails_before_any_send() {
    let server = TestServer::builder()
        .agent(AgentSpec::new("locked").require_auth(Credential::Bearer(BEARER.into())))
        .spawn()
        .await
        .unwrap();
    let client = HttpClient::new().unwrap();
    let card = Arc::new(
        client
            .fetch_agent_card(&server.card_url("locked"), &CallOptions::default())
            .await
            .unwrap(),
    );
    server.clear_requests();
    let err = AgentAuth::builder(card.clone(), card.supported_interfaces[0].url.clone())
        .credentials(&Credentials::default())
        .build()
        .unwrap_err();
    assert_eq!(err.code, "auth.requirement_unsatisfied");
    assert!(
        err.message.contains("none are configured"),
        "{}",
        err.message
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn credentials_bound_to_one_agent_are_refused_for_another_origin() {
    let server = TestServer::builder()
        .agent(AgentSpec::new("a").require_auth(Credential::Bearer(BEARER.into())))
        .spawn()
        .await
        .unwrap();
    let other = TestServer::builder()
        .agent(AgentSpec::new("a").require_auth(Credential::Bearer(BEARER.into())))
        .spawn()
        .await
        .unwrap();
    let env = Environment::from_pairs([("E2E_BEARER", BEARER)]);
    // Built for `server`, but the card we connect with points at `other` (a different port).
    let (client, _card) = authed_client(
        &server,
        "a",
        json!({"a": {"bearer": {"token": "env:E2E_BEARER"}}}),
        &env,
    )
    .await;
    let other_card = client
        .fetch_agent_card(&other.card_url("a"), &CallOptions::default())
        .await;
    // The card fetch itself carries the hook: it is refused before anything is sent.
    let err = other_card.unwrap_err();
    assert_eq!(err.code_str(), "auth.host_mismatch", "{err}");
    assert!(
        other.requests().is_empty(),
        "nothing reached the other origin"
    );
}
