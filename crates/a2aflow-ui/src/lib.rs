//! # a2aflow-ui — the run page
//!
//! **What it is.** A small local web server over a run store: one self-contained page (HTML,
//! CSS and script compiled into the binary; nothing is fetched from anywhere else) showing the
//! runs, a run's graph coloured by live state, its subtask timeline, its events, and buttons to
//! cancel a run, to answer or decline its open gates and (with a host's [`Resumer`]) to resume
//! a run whose driver is gone; and the JSON API behind it (`/api/runs`,
//! `/api/runs/{id}`, `/api/runs/{id}/events` as Server-Sent Events), documented in
//! docs/guide/ui.md.
//!
//! **What it owns.** The HTTP server (hyper 1, HTTP/1.1), the access token (every request needs
//! it: 256 random bits, in the printed URL, then a cookie; a missing or wrong one is 401 with no
//! data), and the page. The runs themselves come from the facade's queries
//! ([`a2aflow::get_execution`] and friends); the server keeps (bounded) each run's drawing and a
//! finished run's answer, which cannot change, and reads a running run's view afresh.
//!
//! **What it must never do.** Build a runtime (it runs on the host's), listen beyond loopback
//! unless the host allowed it, or put text from a run into the page as markup.
//!
//! ```no_run
//! # async fn host(store: std::sync::Arc<dyn a2aflow::RunStore>) -> Result<(), a2aflow_ui::UiError> {
//! let ui = a2aflow_ui::Ui::builder(store).bind().await?;
//! println!("open {}", ui.url());
//! // … later:
//! ui.shutdown().await;
//! # Ok(()) }
//! ```

mod api;
mod detail;
mod error;
mod layout;
mod live;
mod resume;
mod routes;
mod server;
mod sse;
mod token;
mod views;

pub use api::DECLINED;
pub use error::UiError;
pub use layout::{GraphEdge, Layout, Node, layout};
pub use live::LiveRuns;
pub use resume::{ResumeFuture, Resumer};

use a2aflow::RunStore;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The default listen address: loopback, a port the system picks.
pub const DEFAULT_LISTEN: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 0);

/// How often an event stream polls the store by default.
pub const DEFAULT_POLL: Duration = Duration::from_millis(250);

/// The shortest poll interval taken (a bound on the store reads one stream makes).
const MIN_POLL: Duration = Duration::from_millis(20);

/// The longest poll interval taken.
const MAX_POLL: Duration = Duration::from_secs(10);

/// The page's server, before it listens.
pub struct Ui;

impl Ui {
    /// A builder for the page over `store`.
    pub fn builder(store: Arc<dyn RunStore>) -> UiBuilder {
        UiBuilder {
            store,
            listen: DEFAULT_LISTEN,
            allow_remote: false,
            live: LiveRuns::new(),
            poll: DEFAULT_POLL,
            resumer: None,
        }
    }
}

/// How the page listens and what it reaches.
pub struct UiBuilder {
    store: Arc<dyn RunStore>,
    listen: SocketAddr,
    allow_remote: bool,
    live: LiveRuns,
    poll: Duration,
    resumer: Option<Arc<dyn Resumer>>,
}

impl std::fmt::Debug for UiBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UiBuilder")
            .field("listen", &self.listen)
            .field("allow_remote", &self.allow_remote)
            .field("poll", &self.poll)
            .field("resumer", &self.resumer.is_some())
            .finish_non_exhaustive()
    }
}

impl UiBuilder {
    /// The address to listen on (default [`DEFAULT_LISTEN`]; port 0 picks a free one).
    pub fn listen(mut self, addr: SocketAddr) -> Self {
        self.listen = addr;
        self
    }

    /// Allows a listen address that is not loopback. Without it such an address is refused
    /// with [`UiError::NotLoopback`]: the page can cancel runs, and the token is then all that
    /// guards it, over plain HTTP.
    pub fn allow_remote(mut self, allow: bool) -> Self {
        self.allow_remote = allow;
        self
    }

    /// The runs this process drives, so the page's cancel and gate answers reach them live.
    pub fn live_runs(mut self, live: LiveRuns) -> Self {
        self.live = live;
        self
    }

    /// Lets the page resume runs whose driver is gone (a button, and `POST
    /// /api/runs/{id}/resume`), driving them in this process with the host's agents. Without
    /// it the page offers no resume and the endpoint says why.
    pub fn resumer(mut self, resumer: Arc<dyn Resumer>) -> Self {
        self.resumer = Some(resumer);
        self
    }

    /// How often event streams poll the store for news (clamped to 20 ms … 10 s).
    pub fn poll_interval(mut self, every: Duration) -> Self {
        self.poll = every.clamp(MIN_POLL, MAX_POLL);
        self
    }

    /// Binds the address and starts serving on the current tokio runtime.
    pub async fn bind(self) -> Result<UiHandle, UiError> {
        if !self.listen.ip().is_loopback() && !self.allow_remote {
            return Err(UiError::NotLoopback { addr: self.listen });
        }
        let listener = tokio::net::TcpListener::bind(self.listen)
            .await
            .map_err(|e| UiError::Bind {
                addr: self.listen,
                reason: e.to_string(),
            })?;
        let addr = listener.local_addr().map_err(|e| UiError::Bind {
            addr: self.listen,
            reason: e.to_string(),
        })?;
        let token = Arc::new(token::AccessToken::generate(addr.port())?);
        let shutdown = CancellationToken::new();
        let state = Arc::new(api::State {
            store: self.store,
            live: self.live,
            poll: self.poll,
            shutdown: shutdown.clone(),
            resumer: self.resumer,
            views: Arc::new(views::Views::new()),
        });
        let url = format!("http://{addr}/?token={}", token.as_str());
        let task = tokio::spawn(server::serve(listener, state, token, shutdown.clone()));
        Ok(UiHandle {
            addr,
            url,
            shutdown,
            task,
        })
    }
}

/// A serving page.
#[derive(Debug)]
pub struct UiHandle {
    addr: SocketAddr,
    url: String,
    shutdown: CancellationToken,
    task: JoinHandle<()>,
}

impl UiHandle {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL to open, with the access token (treat it as a secret).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A handle that stops the server from anywhere (cancel it); [`UiHandle::shutdown`] waits.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// Stops accepting, ends the event streams and waits (at most a few seconds) for the
    /// connections to finish their answers.
    pub async fn shutdown(self) {
        self.shutdown.cancel();
        let _ = self.task.await;
    }

    /// Serves until the shutdown token is cancelled, then drains as [`UiHandle::shutdown`].
    pub async fn serve_until_shutdown(self) {
        let _ = self.task.await;
    }
}

/// The README (the crate's page on crates.io), whose example is compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
