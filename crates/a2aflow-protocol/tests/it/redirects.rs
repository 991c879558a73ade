//! A redirect is refused, never followed, and the refusal names its target — escaped, since the
//! agent chose it — for the card fetch and for a call of a binding.

use a2aflow_protocol::{Binding, CallOptions, HttpClient, connect};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

/// A server that answers every request with `302 Found` to `location`; returns its base URL.
async fn redirecting(location: &'static [u8]) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                let _ = socket.read(&mut buf).await;
                let mut answer = b"HTTP/1.1 302 Found\r\nLocation: ".to_vec();
                answer.extend_from_slice(location);
                answer.extend_from_slice(
                    b"\r\nContent-Type: text/html\r\nContent-Length: 5\r\nConnection: close\r\n\r\nmoved",
                );
                let _ = socket.write_all(&answer).await;
            });
        }
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn a_card_fetch_that_is_redirected_names_the_target_and_does_not_follow() {
    // "https://evil.example/" + U+202E (RIGHT-TO-LEFT OVERRIDE) + "card".
    let base = redirecting("https://evil.example/\u{202e}card".as_bytes()).await;
    let http = HttpClient::new().unwrap();
    let e = http
        .fetch_agent_card(&base, &CallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(e.code_str(), "a2a.http_status");
    let text = e.to_string();
    assert!(
        text.starts_with("HTTP 302: redirect to https://evil.example/"),
        "{text}"
    );
    assert!(text.contains("not followed"), "{text}");
    assert!(!text.contains('\u{202e}'), "unescaped bidi control: {text}");
}

#[tokio::test]
async fn a_redirected_call_names_the_target_on_both_bindings() {
    let base = redirecting(b"https://elsewhere.example/a2a").await;
    let card = serde_json::from_value(serde_json::json!({
        "name": "r", "description": "redirects", "version": "1.0.0",
        "supportedInterfaces": [
            {"url": format!("{base}/rpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": format!("{base}/api"), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
        ],
        "capabilities": {}, "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"], "skills": []
    }))
    .unwrap();
    let http = HttpClient::new().unwrap();
    for binding in [Binding::JsonRpc, Binding::HttpJson] {
        let t = connect(&card, &http, &[binding]).unwrap();
        let e = t
            .send_message(&crate::support::msg("hi"), &CallOptions::default())
            .await
            .unwrap_err();
        assert_eq!(e.code_str(), "a2a.http_status", "{binding:?}");
        assert!(
            e.to_string()
                .starts_with("HTTP 302: redirect to https://elsewhere.example/a2a not followed"),
            "{binding:?}: {e}"
        );
    }
}
