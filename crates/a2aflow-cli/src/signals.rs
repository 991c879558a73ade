//! Ctrl-C (SIGINT) and SIGTERM while a command talks to agents.
//!
//! Before [`Interrupts::arm`] a signal ends the process at once (nothing remote has been started).
//! Once armed, the first signal is reported through [`Interrupts::first`] so the command can
//! cancel its remote work (best-effort CancelTask), print its result and flush its files; a
//! second signal ends the process at once. The exit status is 128 + the signal number: 130 for
//! SIGINT, 143 for SIGTERM.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use tokio::sync::Notify;

/// The exit status after SIGINT.
pub const SIGINT_EXIT: u8 = 130;
/// The exit status after SIGTERM.
pub const SIGTERM_EXIT: u8 = 143;

#[derive(Default)]
struct Shared {
    armed: AtomicBool,
    /// The exit status of the first signal received (0: none yet).
    first: AtomicU8,
    notify: Notify,
}

/// Listens for SIGINT and SIGTERM for as long as the runtime runs.
#[derive(Clone)]
pub struct Interrupts {
    shared: Arc<Shared>,
}

impl Interrupts {
    /// Installs the handlers (inside a tokio runtime). `command` names the command in messages.
    pub fn listen(command: &'static str) -> std::io::Result<Self> {
        let shared = Arc::new(Shared::default());
        spawn_listener(shared.clone(), command)?;
        Ok(Interrupts { shared })
    }

    /// From now on the first signal asks for cancellation instead of ending the process.
    pub fn arm(&self) {
        self.shared.armed.store(true, Ordering::SeqCst);
    }

    /// Resolves once the first signal arrived (after [`Interrupts::arm`]).
    pub async fn first(&self) {
        loop {
            let notified = self.shared.notify.notified();
            if self.exit_status().is_some() {
                return;
            }
            notified.await;
        }
    }

    /// The exit status the first signal calls for, when one arrived.
    pub fn exit_status(&self) -> Option<u8> {
        match self.shared.first.load(Ordering::SeqCst) {
            0 => None,
            code => Some(code),
        }
    }
}

/// One signal arrived: the first one (armed) is reported, any other ends the process.
fn on_signal(shared: &Shared, command: &str, status: u8) {
    let first = shared
        .first
        .compare_exchange(0, status, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok();
    if first && shared.armed.load(Ordering::SeqCst) {
        eprintln!(
            "a2aflow {command}: interrupted; cancelling the remote tasks (interrupt again to exit at once)"
        );
        shared.notify.notify_waiters();
    } else {
        std::process::exit(i32::from(status));
    }
}

#[cfg(unix)]
fn spawn_listener(shared: Arc<Shared>, command: &'static str) -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    tokio::spawn(async move {
        loop {
            let status = tokio::select! {
                Some(()) = interrupt.recv() => SIGINT_EXIT,
                Some(()) = terminate.recv() => SIGTERM_EXIT,
                else => return,
            };
            on_signal(&shared, command, status);
        }
    });
    Ok(())
}

#[cfg(not(unix))]
fn spawn_listener(shared: Arc<Shared>, command: &'static str) -> std::io::Result<()> {
    tokio::spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            on_signal(&shared, command, SIGINT_EXIT);
        }
    });
    Ok(())
}
