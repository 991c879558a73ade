//! Wake-ups for idle workers: `LISTEN` on one connection of its own, and the `NOTIFY` that a
//! submit, a journaled gate answer or a released lease sends.

use crate::error;
use crate::tls::RustlsConnector;
use a2aflow_kernel::journal::StoreError;
use a2aflow_model::ErrorCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_postgres::AsyncMessage;

/// The channel every store of a database notifies on (its payload is the execution id).
pub const CHANNEL: &str = "a2aflow_runs";

/// A worker's wake-up signal: notified when a run may have become claimable. A lapsed lease
/// sends nothing, so a worker also looks again after a bounded wait ([`WorkSignal::wait`]).
/// Dropping it closes its connection.
pub struct WorkSignal {
    notify: Arc<Notify>,
    _client: tokio_postgres::Client,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for WorkSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkSignal").finish_non_exhaustive()
    }
}

impl Drop for WorkSignal {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl WorkSignal {
    /// Waits for a notification (one that came since the last wait counts) or for `at_most`;
    /// true when notified. A signal whose connection broke only times out: the caller's poll
    /// goes on.
    pub async fn wait(&self, at_most: Duration) -> bool {
        tokio::time::timeout(at_most, self.notify.notified())
            .await
            .is_ok()
    }

    /// Opens a connection of its own with `config` and listens on [`CHANNEL`].
    pub(crate) async fn listen(
        config: &tokio_postgres::Config,
        tls: RustlsConnector,
        target: &str,
        deadline: Duration,
    ) -> Result<Self, StoreError> {
        let connecting = tokio::time::timeout(deadline, config.connect(tls)).await;
        let (client, mut connection) = match connecting {
            Ok(Ok(pair)) => pair,
            Ok(Err(e)) => return Err(error::postgres(target, "listening for runs", &e)),
            Err(_) => return Err(error::timed_out(target, "listening for runs")),
        };
        let notify = Arc::new(Notify::new());
        let wake = notify.clone();
        let owner = target.to_owned();
        let task = tokio::spawn(async move {
            loop {
                match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                    Some(Ok(AsyncMessage::Notification(_))) => wake.notify_one(),
                    Some(Ok(_)) => {}
                    Some(Err(e)) => {
                        tracing::warn!(store = %owner, error = %e, "the run store's wake-up connection broke; idle workers poll");
                        return;
                    }
                    None => return,
                }
            }
        });
        let listening =
            tokio::time::timeout(deadline, client.batch_execute(&format!("LISTEN {CHANNEL}")))
                .await;
        match listening {
            Ok(Ok(())) => Ok(WorkSignal {
                notify,
                _client: client,
                task,
            }),
            Ok(Err(e)) => {
                task.abort();
                Err(error::postgres(target, "listening for runs", &e))
            }
            Err(_) => {
                task.abort();
                Err(StoreError::new(
                    ErrorCode::StoreUnavailable,
                    format!("run store {target}: LISTEN did not answer within {deadline:?}"),
                ))
            }
        }
    }
}
