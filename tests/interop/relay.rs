//! A TCP relay between a host and the Python peer that forwards every byte the host sends but,
//! on a connection that carried a SendMessage or SendStreamingMessage request, withholds what
//! the peer answers: the peer creates the task, the host never learns its id.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// What marks a business command on the wire: the JSON-RPC methods and the HTTP+JSON paths.
const SEND_MARKERS: [&str; 4] = [
    "\"SendMessage\"",
    "\"SendStreamingMessage\"",
    "/message:send",
    "/message:stream",
];

/// Everything the host sent through one connection.
type Sent = Arc<Mutex<Vec<u8>>>;

/// A running relay on a loopback port; stops when dropped.
pub struct Relay {
    /// `http://127.0.0.1:PORT`.
    pub base_url: String,
    /// Per connection, everything the host sent through it.
    sent: Arc<Mutex<Vec<Sent>>>,
    accept: JoinHandle<()>,
}

impl Relay {
    /// Listens on a free loopback port and relays each connection to `peer` (`host:port`).
    pub async fn start(peer: String) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the relay");
        let base_url = format!("http://{}", listener.local_addr().expect("relay address"));
        let sent = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&sent);
        let accept = tokio::spawn(async move {
            while let Ok((host, _)) = listener.accept().await {
                let Ok(upstream) = TcpStream::connect(&peer).await else {
                    continue;
                };
                let bytes = Arc::new(Mutex::new(Vec::new()));
                log.lock().unwrap().push(Arc::clone(&bytes));
                tokio::spawn(relay(host, upstream, bytes));
            }
        });
        Relay {
            base_url,
            sent,
            accept,
        }
    }

    /// The SendMessage and SendStreamingMessage requests the host sent through the relay on
    /// connections whose bytes contain `needle` (all of them for `""`): one per request marker.
    pub fn sends_with(&self, needle: &str) -> usize {
        let connections = self.sent.lock().unwrap();
        connections
            .iter()
            .map(|bytes| String::from_utf8_lossy(&bytes.lock().unwrap()).into_owned())
            .filter(|text| text.contains(needle))
            .map(|text| {
                SEND_MARKERS
                    .iter()
                    .map(|m| text.matches(m).count())
                    .sum::<usize>()
            })
            .sum()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Whether a connection's host bytes so far hold a send request.
fn holds_send(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    SEND_MARKERS.iter().any(|m| text.contains(m))
}

/// Forwards one connection until either side closes it. The peer's bytes stop reaching the host
/// once the host's bytes held a send (checked before those bytes are forwarded, so no answer to
/// the send can slip through); they are still read, so the peer is never blocked.
async fn relay(host: TcpStream, upstream: TcpStream, sent: Sent) {
    let (mut host_rx, mut host_tx) = host.into_split();
    let (mut peer_rx, mut peer_tx) = upstream.into_split();
    let withhold = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = Arc::clone(&withhold);
    let up = async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match host_rx.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let send = {
                let mut all = sent.lock().unwrap();
                all.extend_from_slice(&buf[..n]);
                holds_send(&all)
            };
            if send {
                flag.store(true, std::sync::atomic::Ordering::SeqCst);
            }
            if peer_tx.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = peer_tx.shutdown().await;
    };
    let down = async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match peer_rx.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if withhold.load(std::sync::atomic::Ordering::SeqCst) {
                continue;
            }
            if host_tx.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
    };
    // The host's side ending (its process killed) ends the relay of this connection.
    tokio::select! {
        () = up => {}
        () = down => {}
    }
}
