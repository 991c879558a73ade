//! `TlsConfig` against the testkit's HTTPS server: default trust refuses its private CA, the CA
//! bundle makes it work, `insecure_skip_verify` accepts even a certificate for another host, and
//! the connect timeout bounds the TLS handshake of a server that never answers it. Mutual TLS
//! against a server that demands a client certificate: the configured identity is handshaken on
//! both bindings and satisfies a card's `mtlsSecurityScheme`; none, or a wrong one, is `a2a.tls`.

use crate::support::msg;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use a2aflow_protocol::auth::AgentAuth;
use a2aflow_protocol::tls::TlsConfig;
use a2aflow_protocol::{Binding, CallOptions, HttpClient, Limits, TransportError, connect};
use a2aflow_testkit::{AgentSpec, ClientIdentity, SilentServer, TestServer, TlsOptions};
use serde_json::json;

async fn tls_server(options: TlsOptions) -> TestServer {
    TestServer::builder()
        .agent(AgentSpec::new("a"))
        .bind_tls(Some(options))
        .spawn()
        .await
        .unwrap()
}

fn client(tls: &TlsConfig) -> HttpClient {
    HttpClient::builder()
        .tls(tls.client_config().unwrap())
        .build()
        .unwrap()
}

/// Fetches agent `a`'s card with `c` and sends `text` on each binding; every call must succeed.
async fn send_on_both_bindings(server: &TestServer, c: &HttpClient, text: &str) {
    let card = c
        .fetch_agent_card(&server.card_url("a"), &CallOptions::default())
        .await
        .unwrap();
    for b in [Binding::JsonRpc, Binding::HttpJson] {
        connect(&card, c, &[b])
            .unwrap()
            .send_message(&msg(text), &CallOptions::default())
            .await
            .unwrap();
    }
}

struct CaFile(PathBuf);

impl CaFile {
    fn new(pem: &str) -> Self {
        let p = std::env::temp_dir().join(format!("a2aflow-ca-{}.pem", uuid::Uuid::new_v4()));
        std::fs::write(&p, pem).unwrap();
        CaFile(p)
    }
}

impl Drop for CaFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[tokio::test]
async fn default_trust_refuses_a_private_ca_and_the_bundle_accepts_it() {
    let server = tls_server(TlsOptions::new()).await;
    let err = client(&TlsConfig::new())
        .fetch_agent_card(&server.card_url("a"), &CallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code_str(), "a2a.tls", "{err}");
    assert!(err.to_string().contains("(unknown issuer)"), "{err}");

    let ca = CaFile::new(server.ca_pem().unwrap());
    let c = client(&TlsConfig::new().with_ca_bundle(&ca.0));
    send_on_both_bindings(&server, &c, "over tls").await;
}

#[tokio::test]
async fn the_bundle_still_checks_the_host_name() {
    let server = tls_server(TlsOptions::new().wrong_host(true)).await;
    let ca = CaFile::new(server.ca_pem().unwrap());
    let err = client(&TlsConfig::new().with_ca_bundle(&ca.0))
        .fetch_agent_card(&server.card_url("a"), &CallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code_str(), "a2a.tls", "{err}");
    assert!(
        err.to_string()
            .contains("not valid for the host name in the URL (wrong name)"),
        "{err}"
    );
}

#[tokio::test]
async fn insecure_skip_verify_is_an_explicit_per_client_opt_out() {
    let server = tls_server(TlsOptions::new().wrong_host(true)).await;
    let insecure = client(&TlsConfig::new().with_insecure_skip_verify(true));
    let card = insecure
        .fetch_agent_card(&server.card_url("a"), &CallOptions::default())
        .await
        .unwrap();
    connect(&card, &insecure, &[Binding::JsonRpc])
        .unwrap()
        .send_message(&msg("insecure"), &CallOptions::default())
        .await
        .unwrap();
    // Another client built afterwards still verifies.
    let err = client(&TlsConfig::new())
        .fetch_agent_card(&server.card_url("a"), &CallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code_str(), "a2a.tls", "{err}");
}

/// A connect timeout far below the request timeout, so the error says which one fired.
fn short_connect() -> Limits {
    let mut limits = Limits::default();
    limits.connect_timeout = Duration::from_millis(300);
    limits.request_timeout = Duration::from_secs(30);
    limits
}

fn assert_connect_timeout(err: &TransportError) {
    let failure = err.to_failure();
    assert_eq!(failure.code, "a2a.timeout", "{err}");
    assert_eq!(
        failure.details.get("phase").and_then(|v| v.as_str()),
        Some("connect"),
        "{err}"
    );
}

#[tokio::test]
async fn the_connect_timeout_bounds_a_tls_handshake_that_never_answers() {
    let silent = SilentServer::spawn().await.unwrap();
    let c = HttpClient::builder()
        .limits(short_connect())
        .build()
        .unwrap();
    let guard = Duration::from_secs(10); // hang guard only: the request timeout is 30 s
    let err = tokio::time::timeout(
        guard,
        c.fetch_agent_card(&silent.https_url("/agents/a"), &CallOptions::default()),
    )
    .await
    .expect("the card fetch hung past its connect timeout")
    .unwrap_err();
    assert_connect_timeout(&err);

    // Both bindings: a real card whose interfaces point at the silent server.
    let server = TestServer::single(AgentSpec::new("a")).await.unwrap();
    let mut card = HttpClient::new()
        .unwrap()
        .fetch_agent_card(&server.card_url("a"), &CallOptions::default())
        .await
        .unwrap();
    for (i, interface) in card.supported_interfaces.iter_mut().enumerate() {
        interface.url = silent.https_url(&format!("/agents/a/{i}"));
    }
    for b in [Binding::JsonRpc, Binding::HttpJson] {
        let transport = connect(&card, &c, &[b]).unwrap();
        let err = tokio::time::timeout(
            guard,
            transport.send_message(&msg("never answered"), &CallOptions::default()),
        )
        .await
        .expect("the send hung past its connect timeout")
        .unwrap_err();
        assert_connect_timeout(&err);
    }
    // The client closed every connection it opened when it gave up.
    assert!(silent.total_connections() >= 3);
    let closed = tokio::time::timeout(guard, async {
        while silent.open_connections() > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(closed.is_ok(), "{} left open", silent.open_connections());
}

/// A TLS server that demands a client certificate, and a CA file trusting its server certificate.
async fn mutual_server(spec: AgentSpec) -> (TestServer, CaFile) {
    let server = TestServer::builder()
        .agent(spec)
        .bind_tls(Some(TlsOptions::new().require_client_cert(true)))
        .spawn()
        .await
        .unwrap();
    let ca = CaFile::new(server.ca_pem().unwrap());
    (server, ca)
}

/// `TlsConfig` trusting `ca` and presenting `identity` (written to files, as a host would).
fn with_identity(ca: &CaFile, identity: &ClientIdentity) -> (TlsConfig, CaFile, CaFile) {
    let cert = CaFile::new(&identity.cert_pem);
    let key = CaFile::new(&identity.key_pem);
    let tls = TlsConfig::new()
        .with_ca_bundle(&ca.0)
        .with_client_cert(&cert.0, &key.0);
    (tls, cert, key)
}

#[tokio::test]
async fn a_mutual_handshake_succeeds_on_both_bindings() {
    let (server, ca) = mutual_server(AgentSpec::new("a")).await;
    let (tls, _cert, _key) = with_identity(&ca, server.client_identity().unwrap());
    let c = client(&tls);
    send_on_both_bindings(&server, &c, "mutual").await;
}

#[tokio::test]
async fn a_missing_or_wrong_client_certificate_is_a2a_tls() {
    let (server, ca) = mutual_server(AgentSpec::new("a")).await;
    let missing = client(&TlsConfig::new().with_ca_bundle(&ca.0));
    let stray = ClientIdentity::untrusted().unwrap();
    let (wrong_tls, _cert, _key) = with_identity(&ca, &stray);
    let wrong = client(&wrong_tls);
    for (what, c) in [("no", &missing), ("a wrong", &wrong)] {
        let err = c
            .fetch_agent_card(&server.card_url("a"), &CallOptions::default())
            .await
            .unwrap_err();
        assert_eq!(
            err.code_str(),
            "a2a.tls",
            "{what} client certificate: {err}"
        );
        let words = if what == "no" {
            "requires a client certificate"
        } else {
            "refused the client certificate"
        };
        assert!(err.to_string().contains(words), "{what}: {err}");
    }
    let (good, _cert, _key) = with_identity(&ca, server.client_identity().unwrap());
    let card = client(&good)
        .fetch_agent_card(&server.card_url("a"), &CallOptions::default())
        .await
        .unwrap();
    server.clear_requests();
    for b in [Binding::JsonRpc, Binding::HttpJson] {
        for (what, c) in [("no", &missing), ("a wrong", &wrong)] {
            let err = connect(&card, c, &[b])
                .unwrap()
                .send_message(&msg("refused"), &CallOptions::default())
                .await
                .unwrap_err();
            assert_eq!(
                err.code_str(),
                "a2a.tls",
                "{b:?}, {what} certificate: {err}"
            );
        }
    }
    // Nothing reached an agent.
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn the_configured_identity_satisfies_an_mtls_security_scheme_on_both_bindings() {
    let spec = AgentSpec::new("a")
        .security_scheme("mtls", json!({"mtlsSecurityScheme": {}}))
        .security_requirement(json!({"schemes": {"mtls": {}}}));
    let (server, ca) = mutual_server(spec).await;
    let (tls, _cert, _key) = with_identity(&ca, server.client_identity().unwrap());
    let card = client(&tls)
        .fetch_agent_card(&server.card_url("a"), &CallOptions::default())
        .await
        .unwrap();
    let card = Arc::new(card);
    for (b, url) in [
        (Binding::JsonRpc, server.jsonrpc_url("a")),
        (Binding::HttpJson, server.rest_url("a")),
    ] {
        let auth = AgentAuth::builder(card.clone(), url.clone())
            .client_identity(tls.presents_client_identity())
            .build()
            .unwrap();
        assert_eq!(
            auth.scheme_names(),
            Vec::<&str>::new(),
            "no header is sent for mTLS"
        );
        let http = HttpClient::builder()
            .tls(tls.client_config().unwrap())
            .request_headers(Arc::new(auth))
            .build()
            .unwrap();
        connect(&card, &http, &[b])
            .unwrap()
            .send_message(&msg("mtls scheme"), &CallOptions::default())
            .await
            .unwrap();
        // Without a configured identity the requirement cannot be met.
        let err = AgentAuth::builder(card.clone(), url)
            .client_identity(TlsConfig::new().presents_client_identity())
            .build()
            .unwrap_err();
        assert_eq!(err.code, "auth.requirement_unsatisfied", "{err}");
    }
}
