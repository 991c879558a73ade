//! # a2aflow — the command line
//!
//! **What it is.** The `a2aflow` binary: `validate`, `graph`, `card`, `send`, `run`, `submit`, `worker`, `runs`, `search`, `serve`, `ui` and `demo`.
//!
//! **What it owns.** Argument parsing, progress output and exit codes; everything else comes from
//! the `a2aflow` facade. Nothing depends on it.

mod answer_cmd;
mod card_cmd;
mod declarative;
mod demo;
mod failure_text;
mod graph;
mod logging;
mod progress;
mod resume_cmd;
mod resume_host;
mod run_cmd;
mod run_ui;
mod runs_cmd;
mod search_cmd;
mod send_cmd;
mod serve_cmd;
mod signals;
mod submit_cmd;
mod terminal;
mod ui_cmd;
mod validate_cmd;
mod worker_cmd;
mod workflow_file;

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

/// Run and inspect A2A workflows.
#[derive(Debug, Parser)]
#[command(
    name = "a2aflow",
    version,
    about,
    after_help = "The --config file (TOML or JSON: bindings, timeouts, limits, TLS, credentials, \
                  wire log) is documented key by key in docs/guide/configuration.md."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// More diagnostics on stderr: -v info, -vv debug, -vvv trace (RUST_LOG overrides the level).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    /// Log every request and response (secrets redacted) on stderr, target a2aflow::wire.
    #[arg(long, global = true)]
    wire_log: bool,
}

/// Text for people, JSON for programs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Human-readable lines.
    Text,
    /// One JSON document.
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check workflow files: every problem with its code, JSON path, line and column.
    /// Exit 0 when all are valid, 1 when one is invalid, 2 on a usage or I/O error.
    Validate {
        /// Workflow files (JSON).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Treat unknown keys as errors instead of warnings.
        #[arg(long)]
        strict: bool,
        /// Output format.
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
    },
    /// Print a workflow's DAG (step types on nodes, conditions on edges).
    Graph {
        /// Workflow file (JSON).
        file: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = graph::GraphFormat::Mermaid)]
        format: graph::GraphFormat,
    },
    /// Fetch an agent card and show its bindings, extensions and security schemes.
    Card {
        /// Card URL or agent base URL.
        url: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
        /// Engine configuration file (.toml or .json; every key in docs/guide/configuration.md).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Send one message to one agent; print the Message or the final Task (artifacts assembled).
    /// Exit 0 when the task completed (or the answer is a Message), 1 on any other end state or
    /// error (its stable code printed), 2 on a usage error.
    Send(Box<send_cmd::SendArgs>),
    /// Run a workflow against A2A agents with the built-in declarative ControlPoint.
    /// Exit 0 on success, 1 on failure, 2 on a usage or setup error.
    Run(Box<run_cmd::RunArgs>),
    /// Journal a run in a run store without driving it, for `a2aflow worker` (or `runs
    /// resume`); takes `run`'s arguments and prints the execution id.
    /// Exit 0 when journaled, 1 for an invalid workflow, 2 on a usage or store error.
    Submit(Box<run_cmd::RunArgs>),
    /// Claim and drive the runs of a Postgres run store until SIGTERM/SIGINT (then release
    /// them and exit 0). Exit 2 on a usage or store error (the SQLite store hands no runs out).
    Worker(Box<worker_cmd::WorkerArgs>),
    /// Inspect the runs a run store holds, ask one to stop, continue one or answer its gate:
    /// `list`, `show`, `events`, `cancel`, `resume`, `answer`. Exit 0 when done (`resume` and
    /// `answer`: `run`'s codes, 3 when the run parks at a gate), 2 on a store or usage error (an
    /// unknown id, a file that is not an a2aflow store, a newer schema, a damaged file, a task
    /// with no open gate), the file left unchanged.
    Runs(Box<runs_cmd::RunsArgs>),
    /// Search an orchestration centre's workflows by intent.
    /// Exit 0 when the centre answered (even with no result), 1 when it could not be asked or
    /// answered an error, 2 on a usage error.
    Search(Box<search_cmd::SearchArgs>),
    /// Serve the run page (runs, graphs, events, cancel, gate answers) over a run store.
    Ui(Box<ui_cmd::UiArgs>),
    /// Serve workflows as A2A 1.0 agents; prints `NAME CARD_URL` per workflow, exits 0 on SIGTERM.
    Serve(Box<serve_cmd::ServeArgs>),
    /// Run the demo workflow against embedded agents on loopback.
    Demo,
}

/// The engine configuration from `path` (`.toml` or `.json`), or the defaults.
pub(crate) fn load_config(
    path: Option<&std::path::Path>,
) -> Result<a2aflow::EngineConfig, a2aflow::model::Failure> {
    let mut config = match path {
        Some(p) => a2aflow::EngineConfig::from_file(p)?,
        None => a2aflow::EngineConfig::default(),
    };
    config.wire_log |= logging::wire_log_on();
    if config.tls.insecure_skip_verify {
        logging::warn_insecure_tls();
    }
    Ok(config)
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            // clap's own exit codes: 0 for --help/--version, 2 for usage errors.
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    logging::init(cli.verbose, cli.wire_log);
    let code = match cli.command {
        Command::Validate {
            files,
            strict,
            format,
        } => validate_cmd::run(&files, strict, format),
        Command::Graph { file, format } => graph::run(&file, format),
        Command::Card {
            url,
            format,
            config,
        } => card_cmd::run(&url, format, config.as_deref()),
        Command::Send(args) => send_cmd::run(*args),
        Command::Run(args) => run_cmd::run(*args),
        Command::Submit(args) => submit_cmd::run(*args),
        Command::Worker(args) => worker_cmd::run(*args),
        Command::Runs(args) => runs_cmd::run(*args),
        Command::Search(args) => search_cmd::run(*args),
        Command::Ui(args) => ui_cmd::run(*args),
        Command::Serve(args) => serve_cmd::run(*args),
        Command::Demo => demo::run(),
    };
    ExitCode::from(code)
}
