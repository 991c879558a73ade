//! [`SilentServer`]: a hostile peer that accepts TCP connections and never answers — a TLS
//! ClientHello (or an HTTP request) sent to it stays unanswered until the client gives up.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::error::TestkitError;
use crate::lifecycle::Lifecycle;

/// The longest a silent connection is held open when the client never closes it.
pub const SILENT_HOLD: Duration = Duration::from_secs(60);

/// A loopback listener that accepts every connection, reads and discards what the client sends,
/// and never writes a byte: a TLS handshake to it never completes. A connection closes when the
/// client closes it, after [`SILENT_HOLD`], or at shutdown. Dropping it stops it.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use a2aflow_testkit::SilentServer;
/// let silent = SilentServer::spawn().await?;
/// assert!(silent.https_url("/agents/x").starts_with("https://127.0.0.1:"));
/// silent.shutdown().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct SilentServer {
    addr: SocketAddr,
    counts: Arc<Counts>,
    tasks: Lifecycle,
}

#[derive(Debug, Default)]
struct Counts {
    open: AtomicUsize,
    total: AtomicUsize,
}

impl SilentServer {
    /// Binds `127.0.0.1:0` and starts accepting.
    pub async fn spawn() -> Result<SilentServer, TestkitError> {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(TestkitError::Bind)?;
        let addr = listener.local_addr().map_err(TestkitError::Bind)?;
        let counts = Arc::new(Counts::default());
        let for_loop = counts.clone();
        let tasks =
            Lifecycle::start(move |token, conns| accept_loop(listener, token, conns, for_loop));
        Ok(SilentServer {
            addr,
            counts,
            tasks,
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `https://127.0.0.1:PORT{path}`.
    pub fn https_url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }

    /// Connections open right now.
    pub fn open_connections(&self) -> usize {
        self.counts.open.load(Ordering::SeqCst)
    }

    /// Connections accepted since start.
    pub fn total_connections(&self) -> usize {
        self.counts.total.load(Ordering::SeqCst)
    }

    /// Stops accepting, closes every held connection and waits (at most
    /// [`SHUTDOWN_TIMEOUT`](crate::SHUTDOWN_TIMEOUT)).
    pub async fn shutdown(&self) -> Result<(), TestkitError> {
        self.tasks.shutdown().await
    }
}

async fn accept_loop(
    listener: TcpListener,
    token: CancellationToken,
    conns: TaskTracker,
    counts: Arc<Counts>,
) {
    loop {
        let stream = tokio::select! {
            r = listener.accept() => match r {
                Ok((s, _)) => s,
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
            () = token.cancelled() => return,
        };
        counts.open.fetch_add(1, Ordering::SeqCst);
        counts.total.fetch_add(1, Ordering::SeqCst);
        let (token, counts) = (token.clone(), counts.clone());
        conns.spawn(async move {
            tokio::select! {
                _ = tokio::time::timeout(SILENT_HOLD, discard(stream)) => {}
                () = token.cancelled() => {}
            }
            counts.open.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

/// Reads until the client closes (or the socket fails), answering nothing.
async fn discard(mut stream: TcpStream) {
    let mut buf = [0u8; 4096];
    while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
}
