//! `a2aflow ui --store PATH [--listen 127.0.0.1:PORT] [--allow-remote]`: the run page over a
//! run store, until SIGINT or SIGTERM (then exit 0).
//!
//! It prints the URL to open, with the page's access token, on stdout. A store that does not
//! exist is `store.unavailable` (nothing is created), a listen address that is not loopback
//! without `--allow-remote` is `config.invalid`; both exit 2.

use crate::terminal::block;
use a2aflow::StoreLocation;
use a2aflow::model::Failure;
use std::net::SocketAddr;

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
    let location = match StoreLocation::parse(&args.store) {
        Ok(l) => l,
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
        let store = match location.open_existing().await {
            Ok(s) => s,
            Err(f) => return refuse(f),
        };
        let ui = match a2aflow_ui::Ui::builder(store)
            .listen(args.listen)
            .allow_remote(args.allow_remote)
            .bind()
            .await
        {
            Ok(ui) => ui,
            Err(e) => return refuse(e),
        };
        println!("a2aflow ui: open {}", ui.url());
        println!(
            "a2aflow ui: serving the runs of {}; Ctrl-C stops",
            args.store
        );
        stop.await;
        eprintln!("a2aflow ui: stopping");
        ui.shutdown().await;
        0
    })
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
