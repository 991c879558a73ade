//! Every fault actually happens on the wire, and shutdown leaves nothing behind.

use std::sync::Arc;
use std::time::Duration;

use crate::support::*;
use a2aflow_testkit::{AgentSpec, Credential, Fault, Route, TestServer, TlsOptions};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn server() -> TestServer {
    TestServer::builder()
        .agent(AgentSpec::new("f"))
        .spawn()
        .await
        .unwrap()
}

fn send_body(text: &str) -> Value {
    rpc_body("SendMessage", json!({"message": user_message(text)}))
}

fn stream_body(text: &str) -> Value {
    rpc_body(
        "SendStreamingMessage",
        json!({"message": user_message(text)}),
    )
}

/// A GetTask for a task the server never made.
fn get_body() -> Value {
    rpc_body("GetTask", json!({"id": "x"}))
}

#[tokio::test]
async fn refuse_connection_closes_without_a_response() {
    let s = server().await;
    s.set_fault("f", Route::Card, Fault::RefuseConnection)
        .unwrap();
    let mut tcp = tokio::net::TcpStream::connect(s.addr()).await.unwrap();
    let req = format!(
        "GET {} HTTP/1.1\r\nhost: x\r\nA2A-Version: 1.0\r\n\r\n",
        path_of(&s.card_url("f"))
    );
    tcp.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let n = tokio::time::timeout(DEADLINE, tcp.read_to_end(&mut buf))
        .await
        .unwrap();
    assert!(
        n.is_err() || buf.is_empty(),
        "got a response: {}",
        String::from_utf8_lossy(&buf)
    );
    let err = call(&s, "GET", &path_of(&s.card_url("f")), &[V1], None)
        .await
        .err()
        .unwrap();
    assert!(!err.is_empty());
}

#[tokio::test]
async fn reset_mid_body_cuts_a_length_delimited_body() {
    let s = server().await;
    s.set_fault("f", Route::Send, Fault::ResetMidBody).unwrap();
    let r = post_rpc(&s, "f", &send_body("echo hello there")).await;
    assert_eq!(r.status, 200);
    let declared: usize = r.header("content-length").unwrap().parse().unwrap();
    assert!(declared > 20);
    let err = r.bytes().await.unwrap_err();
    assert!(!err.is_empty());
}

#[tokio::test]
async fn reset_mid_stream_after_n_events_is_an_early_eof() {
    let s = server().await;
    s.set_fault(
        "f",
        Route::Stream,
        Fault::ResetMidStream { after_events: 2 },
    )
    .unwrap();
    let r = post_rpc(&s, "f", &stream_body("stream x")).await;
    let (frames, err) = r.frames().await;
    assert!(err.is_some(), "stream must end in a transport error");
    let joined: Vec<u8> = frames.concat();
    let events = sse_events(&joined);
    assert_eq!(events.len(), 2, "{events:?}");
}

#[tokio::test]
async fn server_error_has_an_html_body() {
    let s = server().await;
    s.set_fault("f", Route::Get, Fault::ServerError { status: 502 })
        .unwrap();
    let body = get_body();
    let r = post_rpc(&s, "f", &body).await;
    assert_eq!(r.status, 502);
    assert_eq!(r.header("content-type"), Some("text/html"));
    assert!(r.bytes().await.unwrap().starts_with(b"<html>"));
}

#[tokio::test]
async fn malformed_and_wrongly_typed_json() {
    let s = server().await;
    s.set_fault("f", Route::Send, Fault::MalformedJson).unwrap();
    let r = post_rpc(&s, "f", &send_body("echo")).await;
    assert_eq!(r.status, 200);
    let b = r.bytes().await.unwrap();
    assert!(serde_json::from_slice::<Value>(&b).is_err());

    s.set_fault("f", Route::Send, Fault::WrongTypes).unwrap();
    let r = post_rpc(&s, "f", &send_body("echo")).await;
    let v = r.json().await;
    assert!(v["result"]["task"]["id"].is_number());
    assert!(v["result"]["task"]["status"].is_string());

    s.set_fault("f", Route::Get, Fault::WrongTypes).unwrap();
    let get = get_body();
    let r = post_rpc(&s, "f", &get).await;
    assert!(
        r.json().await["result"]["id"].is_number(),
        "GetTask result is a bare task"
    );

    s.set_fault("f", Route::Card, Fault::WrongTypes).unwrap();
    let r = get_v1(&s, &path_of(&s.card_url("f"))).await;
    let card = r.json().await;
    assert!(card["name"].is_number());
    assert!(card["supportedInterfaces"].is_string());
}

#[tokio::test]
async fn truncated_sse_ends_cleanly_mid_event() {
    let s = server().await;
    s.set_fault("f", Route::Stream, Fault::TruncatedSse { after_events: 1 })
        .unwrap();
    let r = post_rpc(&s, "f", &stream_body("stream x")).await;
    let body = r.bytes().await.expect("clean end of body");
    let text = String::from_utf8_lossy(&body);
    assert_eq!(text.matches("\r\n\r\n").count(), 1, "one whole event");
    assert!(!text.ends_with("\r\n\r\n"), "then half an event");
}

#[tokio::test]
async fn oversized_body_and_sse_event() {
    let s = server().await;
    s.set_fault("f", Route::Send, Fault::OversizedBody { bytes: 3_000_000 })
        .unwrap();
    let r = post_rpc(&s, "f", &send_body("echo")).await;
    assert_eq!(r.header("content-length"), Some("3000000"));
    let b = r.bytes().await.unwrap();
    assert_eq!(b.len(), 3_000_000);
    let v: Value = serde_json::from_slice(&b).unwrap();
    assert_eq!(v["result"]["message"]["messageId"], "big");

    s.set_fault(
        "f",
        Route::Stream,
        Fault::OversizedSseEvent { bytes: 1_000_000 },
    )
    .unwrap();
    let r = post_rpc(&s, "f", &stream_body("echo")).await;
    let events = sse_events(&r.bytes().await.unwrap());
    assert!(events[0].1.len() > 1_000_000);
    assert_eq!(
        events.len(),
        2,
        "the oversized event, then the normal reply"
    );
}

#[tokio::test]
async fn sse_error_event_mid_stream() {
    let s = server().await;
    s.set_fault("f", Route::Stream, Fault::SseErrorEvent { after_events: 1 })
        .unwrap();
    let r = post_rpc(&s, "f", &stream_body("task x")).await;
    let events = sse_events(&r.bytes().await.unwrap());
    assert_eq!(events.len(), 2);
    assert_eq!(events[1].0, "error");
    let e: Value = serde_json::from_str(&events[1].1).unwrap();
    assert_eq!(e["error"]["code"], json!(-32603));
}

#[tokio::test]
async fn byte_drip_delivers_one_byte_per_frame() {
    let s = server().await;
    s.set_fault(
        "f",
        Route::Get,
        Fault::ByteDrip {
            interval: Duration::from_millis(1),
        },
    )
    .unwrap();
    let body = get_body();
    let r = post_rpc(&s, "f", &body).await;
    let (frames, err) = r.frames().await;
    assert!(err.is_none());
    assert!(frames.len() > 50);
    assert!(frames.iter().all(|f| f.len() == 1));
    let v: Value = serde_json::from_slice(&frames.concat()).unwrap();
    assert_eq!(v["error"]["code"], json!(-32001));
}

/// Sends a JSON-RPC GetTask on its own connection and returns the pending outcome.
async fn held_get(s: &TestServer) -> tokio::task::JoinHandle<Result<u16, String>> {
    let tcp = tokio::net::TcpStream::connect(s.addr()).await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
            .await
            .unwrap();
    tokio::spawn(conn);
    let body = get_body();
    let req = http::Request::post(path_of(&s.jsonrpc_url("f")))
        .header("host", "x")
        .header("A2A-Version", "1.0")
        .body(http_body_util::Full::new(bytes::Bytes::from(
            body.to_string(),
        )))
        .unwrap();
    tokio::spawn(async move {
        sender
            .send_request(req)
            .await
            .map(|r| r.status().as_u16())
            .map_err(|e| e.to_string())
    })
}

/// Waits (bounded) until `cond` holds.
async fn until(cond: impl Fn() -> bool) {
    for _ in 0..2000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("condition not reached");
}

#[tokio::test]
async fn never_answer_holds_until_shutdown() {
    let s = server().await;
    s.set_fault("f", Route::Get, Fault::NeverAnswer).unwrap();
    let pending = held_get(&s).await;
    until(|| s.requests().len() == 1).await;
    assert!(!pending.is_finished());
    s.shutdown().await.unwrap();
    let outcome = tokio::time::timeout(DEADLINE, pending)
        .await
        .unwrap()
        .unwrap();
    assert!(outcome.is_err(), "no response may ever arrive: {outcome:?}");
    assert_eq!(s.open_connections(), 0);
}

#[tokio::test]
async fn limited_faults_expire_and_auth_fault_rejects_bad_credentials() {
    let s = server().await;
    s.set_fault_times("f", Route::Card, Fault::ServerError { status: 503 }, 1)
        .unwrap();
    let card = path_of(&s.card_url("f"));
    assert_eq!(get_v1(&s, &card).await.status, 503);
    assert_eq!(get_v1(&s, &card).await.status, 200);

    s.set_fault(
        "f",
        Route::Get,
        Fault::RequireAuth(Credential::Bearer("tok".into())),
    )
    .unwrap();
    let body = get_body();
    let rpc_path = path_of(&s.jsonrpc_url("f"));
    let r = call(
        &s,
        "POST",
        &rpc_path,
        &[V1, ("Authorization", "Bearer nope")],
        Some(&body),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 401);
    assert!(r.header("www-authenticate").unwrap().starts_with("Bearer"));
    let r = call(
        &s,
        "POST",
        &rpc_path,
        &[V1, ("Authorization", "Bearer tok")],
        Some(&body),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200);
    let logged = s.requests();
    assert_eq!(
        logged.last().unwrap().header("authorization"),
        Some("Bearer tok")
    );
    s.clear_faults("f").unwrap();
    assert_eq!(
        call(&s, "POST", &rpc_path, &[V1], Some(&body))
            .await
            .unwrap()
            .status,
        200
    );
}

fn tls_client(ca_pem: &str) -> tokio_rustls::TlsConnector {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

#[tokio::test]
async fn tls_serves_with_the_generated_ca_and_can_present_a_wrong_host() {
    let s = TestServer::builder()
        .agent(AgentSpec::new("f"))
        .bind_tls(Some(TlsOptions::new()))
        .spawn()
        .await
        .unwrap();
    assert!(s.base_url().starts_with("https://127.0.0.1:"));
    let ca = s.ca_pem().unwrap().to_owned();
    assert!(s.cert_pem().unwrap().contains("BEGIN CERTIFICATE"));
    let tcp = tokio::net::TcpStream::connect(s.addr()).await.unwrap();
    let name = rustls::pki_types::ServerName::IpAddress(s.addr().ip().into());
    let tls = tls_client(&ca).connect(name.clone(), tcp).await.unwrap();
    let r = send_on(
        hyper_util::rt::TokioIo::new(tls),
        &s,
        "GET",
        &path_of(&s.card_url("f")),
        &[V1],
        None,
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200);
    let card = r.json().await;
    assert!(
        card["supportedInterfaces"][0]["url"]
            .as_str()
            .unwrap()
            .starts_with("https://")
    );

    let wrong = TestServer::builder()
        .agent(AgentSpec::new("f"))
        .bind_tls(Some(TlsOptions::new().wrong_host(true)))
        .spawn()
        .await
        .unwrap();
    let tcp = tokio::net::TcpStream::connect(wrong.addr()).await.unwrap();
    let err = tls_client(wrong.ca_pem().unwrap())
        .connect(name, tcp)
        .await
        .unwrap_err();
    assert!(
        err.to_string().to_lowercase().contains("certificate"),
        "{err}"
    );
    // And an untrusted CA is refused too.
    let tcp = tokio::net::TcpStream::connect(s.addr()).await.unwrap();
    let name = rustls::pki_types::ServerName::IpAddress(s.addr().ip().into());
    assert!(
        tls_client(wrong.ca_pem().unwrap())
            .connect(name, tcp)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn shutdown_ends_streams_held_requests_and_scripts() {
    let s = server().await;
    s.set_fault("f", Route::Get, Fault::NeverAnswer).unwrap();
    let rpc_path = path_of(&s.jsonrpc_url("f"));
    // A hanging task streamed to a client, and a request that is never answered.
    let stream = call(&s, "POST", &rpc_path, &[V1], Some(&stream_body("hang")))
        .await
        .unwrap();
    let held = held_get(&s).await;
    until(|| s.requests().len() == 2 && s.running_scripts() == 1).await;
    assert_eq!(s.open_connections(), 2);
    let stream_task = tokio::spawn(stream.frames());
    s.shutdown().await.unwrap();
    let (frames, _) = tokio::time::timeout(DEADLINE, stream_task)
        .await
        .unwrap()
        .unwrap();
    assert!(!frames.is_empty(), "the stream had started");
    let held = tokio::time::timeout(DEADLINE, held).await.unwrap().unwrap();
    assert!(held.is_err(), "the held request never gets an answer");
    assert_eq!(s.open_connections(), 0);
    assert_eq!(s.running_scripts(), 0);
    assert_eq!(s.total_connections(), 2);
    // Nothing accepts any more.
    assert!(call(&s, "GET", "/", &[], None).await.is_err());
}

#[tokio::test]
async fn a_client_giving_up_on_a_held_request_frees_the_connection() {
    let s = server().await;
    s.set_fault("f", Route::Get, Fault::NeverAnswer).unwrap();
    let pending = held_get(&s).await;
    until(|| s.requests().len() == 1).await;
    assert_eq!(s.open_connections(), 1);
    pending.abort(); // drops the client connection
    until(|| s.open_connections() == 0).await;
}

#[tokio::test]
async fn a_client_dropping_a_stream_frees_the_connection() {
    let s = server().await;
    let rpc_path = path_of(&s.jsonrpc_url("f"));
    let stream = call(&s, "POST", &rpc_path, &[V1], Some(&stream_body("hang")))
        .await
        .unwrap();
    assert_eq!(s.open_connections(), 1);
    drop(stream);
    until(|| s.open_connections() == 0).await;
    assert_eq!(
        s.running_scripts(),
        1,
        "the task itself keeps running until cancelled"
    );
}
