//! A tiny raw HTTP/1.1 client for the testkit's own tests (hyper client conn, no pooling).

use std::time::Duration;

use a2aflow_testkit::TestServer;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

pub const DEADLINE: Duration = Duration::from_secs(10);

/// A response head plus its body stream.
pub struct Resp {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Incoming,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The whole body, or the transport error that cut it short.
    pub async fn bytes(self) -> Result<Bytes, String> {
        tokio::time::timeout(DEADLINE, self.body.collect())
            .await
            .map_err(|_| "body deadline".to_string())?
            .map(|c| c.to_bytes())
            .map_err(|e| e.to_string())
    }

    pub async fn json(self) -> Value {
        let b = self.bytes().await.expect("body");
        serde_json::from_slice(&b)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&b)))
    }

    /// Body frames as they arrive, with the terminal error if any.
    pub async fn frames(mut self) -> (Vec<Bytes>, Option<String>) {
        let mut out = Vec::new();
        loop {
            match tokio::time::timeout(DEADLINE, self.body.frame()).await {
                Err(_) => return (out, Some("frame deadline".into())),
                Ok(None) => return (out, None),
                Ok(Some(Err(e))) => return (out, Some(e.to_string())),
                Ok(Some(Ok(f))) => {
                    if let Ok(d) = f.into_data() {
                        out.push(d);
                    }
                }
            }
        }
    }
}

/// Sends one request on a fresh connection to `server`.
pub async fn call(
    server: &TestServer,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Result<Resp, String> {
    let tcp = tokio::net::TcpStream::connect(server.addr())
        .await
        .map_err(|e| e.to_string())?;
    send_on(TokioIo::new(tcp), server, method, path, headers, body).await
}

pub async fn send_on<I>(
    io: I,
    server: &TestServer,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Result<Resp, String>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("host", server.addr().to_string());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let bytes = body
        .map(|b| Bytes::from(serde_json::to_vec(b).unwrap()))
        .unwrap_or_default();
    if body.is_some() {
        req = req.header("content-type", "application/json");
    }
    let req = req.body(Full::new(bytes)).unwrap();
    let resp = tokio::time::timeout(DEADLINE, sender.send_request(req))
        .await
        .map_err(|_| "response deadline".to_string())?
        .map_err(|e| e.to_string())?;
    let (parts, body) = resp.into_parts();
    Ok(Resp {
        status: parts.status.as_u16(),
        headers: parts.headers,
        body,
    })
}

pub const V1: (&str, &str) = ("A2A-Version", "1.0");

/// Path of `url` (the part after the authority).
pub fn path_of(url: &str) -> String {
    let after = url.split_once("://").map_or(url, |(_, r)| r);
    after
        .find('/')
        .map_or("/".into(), |i| after[i..].to_owned())
}

/// GETs `path` with `A2A-Version: 1.0` and returns the response head (whatever its status);
/// panics only when no response head arrives.
pub async fn get_v1(server: &TestServer, path: &str) -> Resp {
    call(server, "GET", path, &[V1], None)
        .await
        .expect("a response head")
}

/// A JSON-RPC request body: `method` with `params`, id 1.
pub fn rpc_body(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

/// POSTs `body` to `agent`'s JSON-RPC endpoint with `A2A-Version: 1.0` and returns the response
/// head (whatever its status); panics only when no response head arrives.
pub async fn post_rpc(server: &TestServer, agent: &str, body: &Value) -> Resp {
    call(
        server,
        "POST",
        &path_of(&server.jsonrpc_url(agent)),
        &[V1],
        Some(body),
    )
    .await
    .expect("a response head")
}

/// A JSON-RPC call with `A2A-Version: 1.0`; returns the whole response JSON.
pub async fn rpc(server: &TestServer, agent: &str, method: &str, params: Value) -> Value {
    let resp = post_rpc(server, agent, &rpc_body(method, params)).await;
    assert_eq!(resp.status, 200);
    resp.json().await
}

pub fn user_message(text: &str) -> Value {
    json!({"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER", "parts": [{"text": text}]})
}

/// Splits an SSE body into (event name, data) pairs; comments are returned as ("comment", text).
pub fn sse_events(body: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(body);
    text.split("\r\n\r\n")
        .filter(|b| !b.is_empty())
        .map(|block| {
            let mut event = "message".to_string();
            let mut data = String::new();
            for line in block.split("\r\n") {
                if let Some(c) = line.strip_prefix(':') {
                    return ("comment".to_string(), c.trim().to_string());
                } else if let Some(e) = line.strip_prefix("event: ") {
                    event = e.to_string();
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data.push_str(d);
                }
            }
            (event, data)
        })
        .collect()
}
