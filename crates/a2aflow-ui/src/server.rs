//! The listener: one HTTP/1.1 connection task per client on the host's runtime, and the
//! graceful shutdown that stops accepting, ends the event streams and waits (bounded) for the
//! connections to finish their answers.

use crate::api::State;
use crate::routes::handle;
use crate::token::AccessToken;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// How long a shutdown waits for open connections to finish.
pub(crate) const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The most connections served at once; more wait in the listen backlog.
const MAX_CONNECTIONS: usize = 256;

/// A request's head must arrive within this time.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Accepts and serves until `shutdown` is cancelled, then drains the connections.
pub(crate) async fn serve(
    listener: TcpListener,
    state: Arc<State>,
    token: Arc<AccessToken>,
    shutdown: CancellationToken,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept(), if connections.len() < MAX_CONNECTIONS => {
                let Ok((stream, _peer)) = accepted else {
                    // A failed accept (out of descriptors): wait a moment instead of spinning.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let (state, token, shutdown) = (state.clone(), token.clone(), shutdown.clone());
                connections.spawn(connection(stream, state, token, shutdown));
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    let drain = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(SHUTDOWN_GRACE, drain).await.is_err() {
        connections.abort_all();
    }
}

async fn connection(
    stream: tokio::net::TcpStream,
    state: Arc<State>,
    token: Arc<AccessToken>,
    shutdown: CancellationToken,
) {
    let service = service_fn(move |req| handle(state.clone(), token.clone(), req));
    let mut builder = http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT);
    let conn = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    tokio::select! {
        result = conn.as_mut() => {
            if let Err(e) = result {
                tracing::debug!(error = %e, "ui connection ended with an error");
            }
        }
        () = shutdown.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, conn).await;
        }
    }
}
