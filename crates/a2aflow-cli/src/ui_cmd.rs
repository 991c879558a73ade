//! `a2aflow ui --store PATH [--listen 127.0.0.1:PORT] [--allow-remote] [--agent NAME=URL …]
//! [--credentials FILE]`: the run page over a run store, until SIGINT or SIGTERM (then exit 0).
//! With agents it resumes runs whose driver is gone, in this process, with the pieces `runs
//! resume` uses ([`crate::resume_host`]); stopping the page leaves such a run to the next
//! resume.
//!
//! It prints the URL to open, with the page's access token, on stdout. A store that does not
//! exist is `store.unavailable` (nothing is created), a listen address that is not loopback
//! without `--allow-remote` is `config.invalid`; both exit 2. An agent whose card cannot be fetched
//! is exit 1, as for `runs resume`.

use crate::declarative::{NegotiationPolicy, RoutePolicy};
use crate::resume_host::{ResumeHost, resume_config};
use crate::terminal::block;
use a2aflow::kernel::RunOptions;
use a2aflow::model::Failure;
use a2aflow::{EngineConfig, RunStore};
use a2aflow_ui::{ResumeFuture, Resumer};
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// Everything `ui` takes from the command line.
#[derive(Debug, clap::Args)]
pub struct UiArgs {
    /// The run store to show (`sqlite:PATH` or a path); it must exist.
    #[arg(long, value_name = "PATH")]
    pub store: String,
    /// Where to listen (default: loopback, a free port).
    #[arg(long, value_name = "ADDR:PORT", default_value_t = a2aflow_ui::DEFAULT_LISTEN)]
    pub listen: SocketAddr,
    /// Allow a --listen address that is not loopback (the token is then all that guards the
    /// page, over plain HTTP).
    #[arg(long)]
    pub allow_remote: bool,
    /// An agent the runs' workflows name, as NAME=URL (card URL or agent base URL); repeatable.
    /// With agents the page offers "Resume run" for a run whose driver is gone, and resumes it
    /// in this process as `a2aflow runs resume` does.
    #[arg(long = "agent", value_name = "NAME=URL")]
    pub agents: Vec<String>,
    /// Credentials file (values from the environment, never the command line): the Postgres
    /// store's password (its `a2aflow-store` entry) and the agents' credentials.
    #[arg(long, value_name = "FILE")]
    pub credentials: Option<PathBuf>,
    /// Engine configuration file (.toml or .json) for resumed runs; its `store` is replaced by
    /// --store.
    #[arg(long, value_name = "FILE", requires = "agents")]
    pub config: Option<PathBuf>,
    /// Route policy of a resumed run's routing decisions not yet journaled: allow-all,
    /// deny-all, or a JSON file.
    #[arg(long, default_value = "allow-all")]
    pub routes: String,
    /// How a resumed run's Negotiation-T proposals not yet answered are answered.
    #[arg(long, value_enum, default_value_t = NegotiationPolicy::Accept)]
    pub negotiation: NegotiationPolicy,
    /// Resend a resumed run's journaled message whose task cannot be found again (as `runs
    /// resume --resend`).
    #[arg(long, requires = "agents")]
    pub resend: bool,
}

/// Exit status of a store, usage or setup problem.
const SETUP_ERROR: u8 = 2;

fn refuse(f: impl Into<Failure>) -> u8 {
    let f = f.into();
    eprintln!("a2aflow ui: {}", block(&f.to_string(), "  "));
    SETUP_ERROR
}

/// Runs the subcommand; returns the exit code.
pub fn run(args: UiArgs) -> u8 {
    // The store and its password (`--credentials`), and the resumed runs' settings.
    let config = match resume_config(
        args.config.as_deref(),
        &args.store,
        args.credentials.as_deref(),
    ) {
        Ok(c) => c,
        Err(f) => return refuse(f),
    };
    let runtime = match crate::run_cmd::runtime() {
        Ok(rt) => rt,
        Err(e) => return refuse(Failure::new(a2aflow::model::ErrorCode::ConfigInvalid, e)),
    };
    runtime.block_on(async move {
        let stop = match stop_signal() {
            Ok(s) => s,
            Err(e) => {
                return refuse(Failure::new(
                    a2aflow::model::ErrorCode::ConfigInvalid,
                    format!("cannot listen for signals: {e}"),
                ));
            }
        };
        let store = match config.open_existing_store().await {
            Ok(s) => s,
            Err(f) => return refuse(f),
        };
        let mut builder = a2aflow_ui::Ui::builder(store.clone())
            .listen(args.listen)
            .allow_remote(args.allow_remote);
        match resumer(&args, config, store).await {
            Ok(Some(r)) => builder = builder.resumer(r),
            Ok(None) => {}
            Err(code) => return code,
        }
        let ui = match builder.bind().await {
            Ok(ui) => ui,
            Err(e) => return refuse(e),
        };
        // A reader that went away (a closed pipe) does not stop the page.
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "a2aflow ui: open {}", ui.url());
        let _ = writeln!(
            out,
            "a2aflow ui: serving the runs of {}; Ctrl-C stops",
            crate::terminal::inline(&args.store)
        );
        let _ = out.flush();
        drop(out);
        stop.await;
        eprintln!("a2aflow ui: stopping");
        ui.shutdown().await;
        0
    })
}

/// The page's resumer when agents were given (`None` without): the agents' cards fetched now.
/// An `Err` is the exit code (2 for a usage problem, 1 for a card that cannot be fetched).
async fn resumer(
    args: &UiArgs,
    config: EngineConfig,
    store: Arc<dyn RunStore>,
) -> Result<Option<Arc<dyn Resumer>>, u8> {
    if args.agents.is_empty() {
        return Ok(None);
    }
    let routes = RoutePolicy::parse(&args.routes).map_err(|e| refuse(config_invalid(e)))?;
    let named =
        crate::run_cmd::named_agents(&args.agents).map_err(|e| refuse(config_invalid(e)))?;
    let host = ResumeHost::discover(config, &named, routes, args.negotiation, args.resend)
        .await
        .map_err(|f| {
            refuse(f);
            1
        })?;
    let host = Arc::new(host);
    Ok(Some(Arc::new(
        move |id: String, mut options: RunOptions| -> ResumeFuture {
            let host = host.clone();
            // The page's store, not a second handle on the same file.
            options.store = Some(store.clone());
            Box::pin(async move { host.resume_stream(&id, options).await })
        },
    )))
}

fn config_invalid(message: String) -> Failure {
    Failure::new(a2aflow::model::ErrorCode::ConfigInvalid, message)
}

/// Resolves at the first SIGINT or SIGTERM.
#[cfg(unix)]
fn stop_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}

/// Resolves at the first Ctrl-C.
#[cfg(not(unix))]
fn stop_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
    })
}
