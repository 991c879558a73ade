//! `a2aflow worker --store postgres://… [--agent NAME=URL …] [--concurrency N]`: claims the
//! store's runs and drives each as `runs resume` does, with the built-in declarative
//! ControlPoint (routes allowed, proposals accepted), until SIGTERM or SIGINT: then it stops
//! claiming, stops its drivers, releases their leases (the runs are claimable at once) and
//! exits 0.
//!
//! One line on stderr per run it drove: `run ID succeeded|failed CODE|parked (waits for a gate
//! answer)|lease lost (refused)`;
//! the last line counts them. Exit 2 for a usage or store problem (the SQLite store hands no
//! runs out: `store.unavailable`), 1 when the agents cannot be reached.

use crate::declarative::{DeclarativeControlPoint, NegotiationPolicy, RoutePolicy};
use crate::demo::negotiating_agents;
use crate::run_cmd::{named_agents, runtime};
use crate::terminal::{block, inline};
use a2aflow::model::{ErrorCode, ExecutionResult};
use a2aflow::{StoreLocation, Worker, WorkerOptions, discover_agents};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Everything `worker` takes from the command line.
#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    /// The shared run store (`postgres://ROLE@HOST:PORT/DATABASE`; the password from
    /// A2AFLOW_PG_PASSWORD or PGPASSWORD).
    #[arg(long, value_name = "URL")]
    pub store: String,
    /// An agent the workflows name, as NAME=URL (card URL or agent base URL); repeatable.
    #[arg(long = "agent", value_name = "NAME=URL")]
    pub agents: Vec<String>,
    /// How many runs it drives at once.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrency: u16,
    /// How long an idle worker waits for a wake-up before it looks for work again (a lapsed
    /// lease sends none), seconds.
    #[arg(long, value_name = "SECS", default_value_t = 1.0)]
    pub poll: f64,
    /// Engine configuration file (.toml or .json); its `store` is replaced by --store, its
    /// `store_lease_secs` is the heartbeat's lease.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Credentials file (values from the environment, never the command line).
    #[arg(long, value_name = "FILE")]
    pub credentials: Option<PathBuf>,
}

/// Exit status of a usage or store problem.
const SETUP_ERROR: u8 = 2;

fn report(message: impl std::fmt::Display) {
    eprintln!("a2aflow worker: {}", block(&message.to_string(), "  "));
}

fn usage(message: impl std::fmt::Display) -> u8 {
    report(message);
    SETUP_ERROR
}

/// The line for one run's end.
fn run_line(id: &str, result: &ExecutionResult) -> String {
    let verdict = match &result.failure {
        None if result.success => "succeeded".to_owned(),
        Some(f) if f.is(ErrorCode::StoreLeaseLost) => "lease lost (refused)".to_owned(),
        Some(f) if f.is(ErrorCode::WorkflowParked) => "parked (waits for a gate answer)".to_owned(),
        Some(f) => format!("failed {}", inline(f.code.as_ref())),
        None => "failed".to_owned(),
    };
    format!("run {} {verdict}", inline(id))
}

/// Runs the subcommand; returns the exit code.
pub fn run(args: WorkerArgs) -> u8 {
    let mut config = match crate::load_config(args.config.as_deref()) {
        Ok(c) => c,
        Err(f) => return usage(f),
    };
    match StoreLocation::parse(&args.store) {
        Ok(location) => config.store = Some(location),
        Err(f) => return usage(f),
    }
    if let Some(c) = &args.credentials {
        config.credentials_file = Some(c.clone());
    }
    if let Err(f) = config.validate() {
        return usage(f);
    }
    let poll = match Duration::try_from_secs_f64(args.poll) {
        Ok(p) if !p.is_zero() => p,
        _ => {
            return usage(format!(
                "--poll takes a positive number of seconds, got {}",
                args.poll
            ));
        }
    };
    let named = match named_agents(&args.agents) {
        Ok(n) => n,
        Err(e) => return usage(e),
    };
    let runtime = match runtime() {
        Ok(rt) => rt,
        Err(e) => return usage(e),
    };
    runtime.block_on(async move {
        let shutdown = tokio_util::sync::CancellationToken::new();
        if let Err(e) = stop_on_signals(shutdown.clone()) {
            return usage(format!("cannot listen for signals: {e}"));
        }
        let owner = format!(
            "worker-{}-{}",
            std::process::id(),
            a2aflow::model::a2a::new_context_id()
        );
        let options = WorkerOptions::new(owner)
            .with_concurrency(usize::from(args.concurrency))
            .with_poll(poll)
            .on_run_end(|id, result| eprintln!("a2aflow worker: {}", run_line(id, result)));
        let worker = match Worker::open(&config, options).await {
            Ok(w) => w,
            Err(f) => return usage(f),
        };
        let agents = match discover_agents(&named, &config).await {
            Ok(a) => a,
            Err(f) => {
                report(f);
                return 1;
            }
        };
        let cards: Vec<_> = agents.iter().map(|a| a.card().clone()).collect();
        // As `run` does: tasks to workflows served by a2aflow carry the run's lineage.
        let host = a2aflow_server::DelegatingControlPoint::new(
            Arc::new(DeclarativeControlPoint::new(
                RoutePolicy::AllowAll,
                NegotiationPolicy::Accept,
                negotiating_agents(&cards),
            )),
            &cards,
        );
        eprintln!("a2aflow worker: claiming runs of {}", inline(&args.store));
        match worker.run(agents, Arc::new(host), &config, shutdown).await {
            Ok(r) => {
                eprintln!(
                    "a2aflow worker: stopped: claimed {} finished {} parked {} lease-lost {} \
                     released {}",
                    r.claimed, r.finished, r.parked, r.lease_lost, r.released
                );
                0
            }
            Err(f) => usage(f),
        }
    })
}

/// Cancels `shutdown` on the first SIGINT or SIGTERM; a second one ends the process at once.
fn stop_on_signals(shutdown: tokio_util::sync::CancellationToken) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        tokio::spawn(async move {
            loop {
                let status = tokio::select! {
                    Some(()) = interrupt.recv() => crate::signals::SIGINT_EXIT,
                    Some(()) = terminate.recv() => crate::signals::SIGTERM_EXIT,
                    else => return,
                };
                if shutdown.is_cancelled() {
                    std::process::exit(i32::from(status));
                }
                eprintln!(
                    "a2aflow worker: stopping: no new claims, leases released (again to exit at once)"
                );
                shutdown.cancel();
            }
        });
    }
    #[cfg(not(unix))]
    tokio::spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            if shutdown.is_cancelled() {
                std::process::exit(i32::from(crate::signals::SIGINT_EXIT));
            }
            shutdown.cancel();
        }
    });
    Ok(())
}
