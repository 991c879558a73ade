//! `a2aflow serve --workflow FILE… | --workflows DIR --agent NAME=URL…`: publish workflows as
//! A2A 1.0 agents, each run driven by the built-in declarative ControlPoint.
//!
//! Prints one line `NAME CARD_URL` per workflow once it listens, then serves until SIGINT or
//! SIGTERM: it stops accepting, lets open streams end, cancels what still runs, and exits 0.
//!
//! The `--agent`s are discovered after the server listens, in the background until each answers
//! its card request: two servers whose workflows call each other can both start. A run that
//! starts before its agents answered waits for them (`Limits::discovery_wait`), then fails with
//! the discovery's failure.
//!
//! Without `--auth` the server is open (one anonymous caller) and listens on loopback only;
//! a non-loopback `--listen` then needs `--allow-unauthenticated`.

use crate::declarative::{DeclarativeControlPoint, NegotiationPolicy, RoutePolicy};
use crate::demo::negotiating_agents;
use crate::run_cmd::{named_agents, runtime};
use crate::signals::Interrupts;
use crate::terminal::block;
use a2aflow::kernel::ControlPoint;
use a2aflow::kernel::DelegationPolicy;
use a2aflow::model::a2a::AgentCard;
use a2aflow::model::{ErrorCode, Failure, LoadOptions, Workflow, validate};
use a2aflow::protocol::auth::Environment;
use a2aflow::{EngineConfig, StoreLocation};
use a2aflow_server::{Callers, Server, ServerHandle};
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Everything `serve` takes from the command line.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// A workflow file (JSON) to publish as the agent named after the workflow; repeatable.
    #[arg(
        long = "workflow",
        value_name = "FILE",
        required_unless_present = "workflows_dir"
    )]
    pub workflows: Vec<PathBuf>,
    /// A directory whose `*.json` files are all published.
    #[arg(long = "workflows", value_name = "DIR")]
    pub workflows_dir: Option<PathBuf>,
    /// An agent the workflows call, as NAME=URL (card URL or agent base URL); repeatable.
    #[arg(long = "agent", value_name = "NAME=URL")]
    pub agents: Vec<String>,
    /// Journal every served run in this run store (`sqlite:PATH` or a path; created on first
    /// use); the served-task index is kept beside it in `PATH.served.jsonl`. A restarted server
    /// with the same store still answers for the earlier runs.
    #[arg(long, value_name = "PATH")]
    pub store: Option<String>,
    /// The address to listen on (loopback by default; any other address needs `--auth` or
    /// `--allow-unauthenticated`).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// The callers file (JSON, or TOML by its `.toml` extension): `{"callers": [{"name": …,
    /// "bearer": …} | {"name": …, "apiKey": {"header": …, "value": …}}]}`, values literal,
    /// `env:NAME` or `enc:…` as in the credentials file. Only these callers are served, and
    /// each sees only its own runs.
    #[arg(long, value_name = "FILE")]
    pub auth: Option<PathBuf>,
    /// The deepest a delegated run may sit in its tree (the root is 0): an inbound request
    /// whose `a2aflow/depth` is larger is refused (`TASK_STATE_REJECTED`, `depth_exceeded`)
    /// before anything runs. Default 4.
    #[arg(long, value_name = "N")]
    pub max_depth: Option<u32>,
    /// Serve without authentication on a non-loopback `--listen` address.
    #[arg(long)]
    pub allow_unauthenticated: bool,
    /// Credentials file for the agents the workflows call.
    #[arg(long, value_name = "FILE")]
    pub credentials: Option<PathBuf>,
    /// Engine configuration file (.toml or .json; every key in docs/guide/configuration.md).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Route policy: allow-all, deny-all, or a JSON file of {"source->target": bool}.
    #[arg(long, default_value = "allow-all")]
    pub routes: String,
    /// How Negotiation-T proposals are answered.
    #[arg(long, value_enum, default_value_t = NegotiationPolicy::Accept)]
    pub negotiation: NegotiationPolicy,
}

fn report(message: impl std::fmt::Display) {
    eprintln!("a2aflow serve: {}", block(&message.to_string(), "  "));
}

fn usage(message: impl std::fmt::Display) -> u8 {
    report(message);
    2
}

/// The workflow files to publish: `--workflow` ones, then the directory's `*.json`, sorted.
fn workflow_paths(args: &ServeArgs) -> Result<Vec<PathBuf>, String> {
    let mut paths = args.workflows.clone();
    if let Some(dir) = &args.workflows_dir {
        let entries =
            std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        let mut listed: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        listed.sort();
        if listed.is_empty() {
            return Err(format!("{} holds no *.json workflow", dir.display()));
        }
        paths.extend(listed);
    }
    Ok(paths)
}

/// Reads and validates one workflow; `Err` is the exit code, already reported.
fn load(path: &Path) -> Result<Workflow, u8> {
    let workflow = crate::workflow_file::read(path, &LoadOptions::LENIENT)
        .map_err(|e| {
            report(&e);
            e.exit_code()
        })?
        .workflow;
    validate(&workflow).map_err(|e| {
        report(format!("{}: {e}", path.display()));
        1
    })?;
    Ok(workflow)
}

/// The configuration with the command line's credentials file.
fn config(args: &ServeArgs) -> Result<EngineConfig, String> {
    let mut config = crate::load_config(args.config.as_deref()).map_err(|f| f.to_string())?;
    if let Some(c) = &args.credentials {
        config.credentials_file = Some(c.clone());
    }
    config.validate().map_err(|f| f.to_string())?;
    Ok(config)
}

/// The callers of `--auth FILE` (none without it), their values resolved in the process
/// environment and the configuration's `env_file`.
fn callers(args: &ServeArgs, config: &EngineConfig) -> Result<Callers, Failure> {
    let Some(path) = &args.auth else {
        return Ok(Callers::new());
    };
    let mut env = Environment::from_process();
    if let Some(env_file) = &config.env_file {
        env = env.with_env_file(env_file)?;
    }
    Callers::from_file(path, &env)
}

/// Runs the subcommand; returns the exit code (0 after a graceful stop, 1 for a workflow that
/// does not validate, 2 on a usage or setup error).
pub fn run(args: ServeArgs) -> u8 {
    let paths = match workflow_paths(&args) {
        Ok(p) => p,
        Err(e) => return usage(e),
    };
    let mut workflows = Vec::with_capacity(paths.len());
    for path in &paths {
        match load(path) {
            Ok(w) => workflows.push(w),
            Err(code) => return code,
        }
    }
    let config = match config(&args) {
        Ok(c) => c,
        Err(e) => return usage(e),
    };
    let callers = match callers(&args, &config) {
        Ok(c) => c,
        Err(f) => return usage(f),
    };
    let (routes, named) = match (RoutePolicy::parse(&args.routes), named_agents(&args.agents)) {
        (Ok(r), Ok(n)) => (r, n),
        (Err(e), _) | (_, Err(e)) => return usage(e),
    };
    let runtime = match runtime() {
        Ok(rt) => rt,
        Err(e) => return usage(e),
    };
    runtime.block_on(async move {
        let interrupts = match Interrupts::listen("serve") {
            Ok(i) => i,
            Err(e) => return usage(format!("cannot listen for signals: {e}")),
        };
        // The agents are discovered after the server listens (retried until they answer), so
        // servers whose workflows call each other can all start; the declarative ControlPoint is
        // made from their cards then.
        let negotiation = args.negotiation;
        let host = move |cards: &[AgentCard]| -> Arc<dyn ControlPoint> {
            Arc::new(DeclarativeControlPoint::new(
                routes,
                negotiation,
                negotiating_agents(cards),
            ))
        };
        // The served runs' leases last as the configuration says (`store_lease_secs`).
        let store_options = match config.store_options() {
            Ok(o) => o,
            Err(f) => return usage(f),
        };
        let mut builder = Server::builder()
            .discover_agents(named, host)
            .config(config)
            .listen(args.listen)
            .callers(callers);
        if args.allow_unauthenticated {
            builder = builder.allow_unauthenticated();
        }
        if let Some(max_depth) = args.max_depth {
            builder = builder.delegation(DelegationPolicy {
                max_depth,
                ..DelegationPolicy::default()
            });
        }
        for workflow in workflows {
            builder = builder.workflow(workflow);
        }
        if let Some(store) = &args.store {
            let location = match StoreLocation::parse(store) {
                Ok(l) => l,
                Err(f) => return usage(f),
            };
            // The served-task index lives beside the store's file.
            let Some(path) = location.path() else {
                return usage(Failure::new(
                    ErrorCode::ConfigInvalid,
                    format!(
                        "`serve --store {location}`: serving keeps its task index beside a SQLite \
                         store file; a Postgres store is not supported by `serve` yet: give \
                         `sqlite:PATH`"
                    ),
                ));
            };
            let opened = match location.open_with(store_options).await {
                Ok(s) => s,
                Err(f) => return usage(f),
            };
            let mut index = path.as_os_str().to_owned();
            index.push(".served.jsonl");
            builder = builder.store(opened, PathBuf::from(index));
        }
        let server = match builder.start().await {
            Ok(s) => s,
            Err(f) => return usage(f),
        };
        interrupts.arm();
        if announce(&server).is_err() {
            server.shutdown().await;
            return 1;
        }
        interrupts.first().await;
        server.shutdown().await;
        0
    })
}

/// One line `NAME CARD_URL` per served workflow, flushed.
fn announce(server: &ServerHandle) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    for name in server.agent_names() {
        let url = server.card_url(name).unwrap_or_default();
        writeln!(out, "{name} {url}")?;
    }
    out.flush()
}
