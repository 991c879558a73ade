//! `TlsConfig` against the testkit's HTTPS server: default trust refuses its private CA, the CA
//! bundle makes it work, and `insecure_skip_verify` accepts even a certificate for another host.
#![allow(clippy::expect_used, clippy::unwrap_used)] // test helpers outside #[test] fns

use std::path::PathBuf;

use a2aflow_model::a2a::{Message, Part, Role, SendMessageRequest};
use a2aflow_protocol::tls::TlsConfig;
use a2aflow_protocol::{Binding, CallOptions, HttpClient, connect};
use a2aflow_testkit::{AgentSpec, TestServer, TlsOptions};

fn msg(text: &str) -> SendMessageRequest {
    SendMessageRequest {
        message: Message::new(Role::User, vec![Part::text(text)]),
        configuration: None,
        metadata: None,
        tenant: None,
    }
}

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

    let ca = CaFile::new(server.ca_pem().unwrap());
    let c = client(&TlsConfig::new().with_ca_bundle(&ca.0));
    let card = c
        .fetch_agent_card(&server.card_url("a"), &CallOptions::default())
        .await
        .unwrap();
    for b in [Binding::JsonRpc, Binding::HttpJson] {
        connect(&card, &c, &[b])
            .unwrap()
            .send_message(&msg("over tls"), &CallOptions::default())
            .await
            .unwrap();
    }
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
