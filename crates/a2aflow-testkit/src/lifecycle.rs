//! [`Lifecycle`]: the accept task, connection tasks and stop signal of a small loopback peer
//! ([`crate::SilentServer`], [`crate::TokenEndpoint`]), and the bounded shutdown they share.

use std::future::Future;
use std::sync::Mutex;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::error::TestkitError;
use crate::server::SHUTDOWN_TIMEOUT;

/// What a running peer must stop: its accept loop, the connections it spawned on `conns`, and
/// the token both watch. Dropping it cancels the token (the tasks then end on their own).
#[derive(Debug)]
pub(crate) struct Lifecycle {
    token: CancellationToken,
    conns: TaskTracker,
    accept: Mutex<Option<JoinHandle<()>>>,
}

impl Lifecycle {
    /// Spawns the accept loop that `accept` builds from the stop token and the connection
    /// tracker.
    pub(crate) fn start<F, Fut>(accept: F) -> Lifecycle
    where
        F: FnOnce(CancellationToken, TaskTracker) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let token = CancellationToken::new();
        let conns = TaskTracker::new();
        let handle = tokio::spawn(accept(token.clone(), conns.clone()));
        Lifecycle {
            token,
            conns,
            accept: Mutex::new(Some(handle)),
        }
    }

    /// Stops accepting, tells every connection to stop and waits (at most
    /// [`SHUTDOWN_TIMEOUT`]) until they have. Idempotent.
    pub(crate) async fn shutdown(&self) -> Result<(), TestkitError> {
        self.token.cancel();
        let accept = self.accept.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(accept) = accept {
            let _ = accept.await;
        }
        self.conns.close();
        tokio::time::timeout(SHUTDOWN_TIMEOUT, self.conns.wait())
            .await
            .map_err(|_| TestkitError::ShutdownTimeout(SHUTDOWN_TIMEOUT))
    }
}

impl Drop for Lifecycle {
    fn drop(&mut self) {
        self.token.cancel();
    }
}
