//! One streaming client: its own HTTP/1.1 connection (a bare hyper client, kept alive between
//! requests), SendStreamingMessage requests as the official Python SDK client sends them over
//! JSON-RPC, and each stream read to its end.

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use serde_json::json;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpStream;

/// How long one exchange (connect, or a whole stream) may take before it counts as failed.
pub const EXCHANGE_LIMIT: Duration = Duration::from_secs(120);
/// The same for a held stream: it waits for all the others to open first, which a slow server
/// under 1,000 clients on a loaded machine may take minutes to do.
pub const HOLD_LIMIT: Duration = Duration::from_secs(600);

/// Where a client sends: the server's address and its JSON-RPC path.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub addr: SocketAddr,
    pub path: String,
}

/// A client on one connection (reconnected after a failure).
pub struct Client {
    endpoint: Endpoint,
    sender: Option<SendRequest<Full<Bytes>>>,
    next_id: u64,
    limit: Duration,
}

/// What one stream carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Streamed {
    /// `data:` events read.
    pub events: usize,
}

impl Client {
    pub fn new(endpoint: Endpoint) -> Client {
        Client {
            endpoint,
            sender: None,
            next_id: 0,
            limit: EXCHANGE_LIMIT,
        }
    }

    /// A client whose streams may take up to `limit` (a held stream).
    pub fn with_limit(endpoint: Endpoint, limit: Duration) -> Client {
        Client {
            limit,
            ..Client::new(endpoint)
        }
    }

    /// Opens the connection now (otherwise the first request does).
    pub async fn connect(&mut self) -> Result<(), String> {
        if self.sender.is_none() {
            let stream =
                tokio::time::timeout(EXCHANGE_LIMIT, TcpStream::connect(self.endpoint.addr))
                    .await
                    .map_err(|_| "connect timed out".to_owned())?
                    .map_err(|e| format!("connect: {e}"))?;
            let _ = stream.set_nodelay(true);
            let (sender, conn) = http1::handshake(TokioIo::new(stream))
                .await
                .map_err(|e| format!("handshake: {e}"))?;
            // The connection task ends when the sender is dropped or the peer closes.
            tokio::spawn(conn);
            self.sender = Some(sender);
        }
        Ok(())
    }

    /// Sends `text` as a SendStreamingMessage and reads the stream to its end; `on_first` runs
    /// once the first event has arrived. The stream must end with the task COMPLETED.
    pub async fn stream(
        &mut self,
        text: &str,
        on_first: impl FnOnce(),
    ) -> Result<Streamed, String> {
        let result = tokio::time::timeout(self.limit, self.exchange(text, on_first))
            .await
            .unwrap_or_else(|_| Err("the stream did not end in time".to_owned()));
        if result.is_err() {
            // A half-read response leaves the connection unusable: start over on a new one.
            self.sender = None;
        }
        result
    }

    async fn exchange(&mut self, text: &str, on_first: impl FnOnce()) -> Result<Streamed, String> {
        self.connect().await?;
        self.next_id += 1;
        let request = self.request(text)?;
        let sender = self.sender.as_mut().ok_or("no connection")?;
        sender
            .ready()
            .await
            .map_err(|e| format!("connection: {e}"))?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| format!("send: {e}"))?;
        if response.status() != StatusCode::OK {
            return Err(format!("HTTP {}", response.status()));
        }
        let mut body = response.into_body();
        let mut seen = Vec::new();
        let mut on_first = Some(on_first);
        let mut events = 0;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| format!("body: {e}"))?;
            if let Some(data) = frame.data_ref() {
                seen.extend_from_slice(data);
                let now = data_events(&seen);
                if now > 0
                    && let Some(first) = on_first.take()
                {
                    first();
                }
                events = now;
            }
        }
        let last = last_event(&seen).ok_or("the stream carried no event")?;
        if !last.contains("TASK_STATE_COMPLETED") {
            return Err(format!("the stream did not end COMPLETED: {last}"));
        }
        Ok(Streamed { events })
    }

    /// The request the Python SDK client sends (JSON-RPC binding): A2A-Version 1.0, a JSON body
    /// with a fresh messageId, `Accept: text/event-stream`.
    fn request(&self, text: &str) -> Result<Request<Full<Bytes>>, String> {
        let body = json!({
            "jsonrpc": "2.0",
            "id": self.next_id,
            "method": "SendStreamingMessage",
            "params": { "message": {
                "messageId": uuid::Uuid::new_v4().to_string(),
                "role": "ROLE_USER",
                "parts": [{ "text": text }],
            }},
        });
        Request::post(self.endpoint.path.as_str())
            .header(http::header::HOST, self.endpoint.addr.to_string())
            .header("A2A-Version", "1.0")
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "text/event-stream")
            .header(http::header::CACHE_CONTROL, "no-store")
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| format!("request: {e}"))
    }
}

/// The `data:` lines in `bytes` (each SSE event the servers send is one `data:` line).
fn data_events(bytes: &[u8]) -> usize {
    lines(bytes).filter(|l| l.starts_with(b"data:")).count()
}

/// The payload of the last `data:` line.
fn last_event(bytes: &[u8]) -> Option<String> {
    lines(bytes)
        .filter_map(|l| l.strip_prefix(b"data:"))
        .last()
        .map(|d| String::from_utf8_lossy(d).trim().to_owned())
}

/// Complete lines (ending in `\n`; a trailing `\r` stays, which the callers ignore).
fn lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let complete = bytes
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(&bytes[..0], |end| &bytes[..end]);
    complete.split(|&b| b == b'\n')
}

/// The SSE reading counts events and finds the last one, whatever the line ends (run before
/// the bench).
pub fn self_check() {
    let crlf =
        b"data: {\"a\":1}\r\n\r\n: ping\r\n\r\ndata: {\"b\":\"TASK_STATE_COMPLETED\"}\r\n\r\n";
    assert_eq!(data_events(crlf), 2);
    assert_eq!(
        last_event(crlf).as_deref(),
        Some("{\"b\":\"TASK_STATE_COMPLETED\"}")
    );
    let partial = b"data: {\"a\":1}\n\ndata: {\"b\"";
    assert_eq!(data_events(partial), 1);
    assert_eq!(last_event(b""), None);
}
