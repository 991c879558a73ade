//! `a2aflow runs resume ID --store PATH [--agent NAME=URL …]`: continue a journaled run after
//! its host stopped or died, with the built-in declarative ControlPoint.
//!
//! A resumed run keeps the gate policy it was started with (the journal holds it): a run started
//! with `run --gates park` parks a task stopped at a gate, and the resume stops at its open gates
//! with exit 3, to be answered with `runs answer`. `--gates park` applies only to runs journaled
//! before the policy was (they read as `fail`).
//!
//! The output and exit codes are `run`'s (0 success, 1 failure, 3 parked, 130/143 after a
//! signal); a store problem (no such file, not an a2aflow store, a newer schema, a damaged file, an unknown
//! id, a run another process is driving) is exit 2 with its `store.*` code, the file unchanged.

use crate::OutputFormat;
use crate::declarative::NegotiationPolicy;
use crate::resume_host::{ResumeHost, resume_config};
use crate::run_cmd::{GatesArg, RunInputs, follow, runtime};
use crate::signals::Interrupts;
use crate::terminal::block;
use a2aflow::kernel::RunOptions;
use a2aflow::model::{ErrorCode, Failure};
use std::path::PathBuf;

/// Everything `runs resume` takes from the command line.
#[derive(Debug, clap::Args)]
pub struct ResumeArgs {
    /// The run's execution id (as `run --store … --format json` printed it first).
    pub id: String,
    /// The run store the run was journaled in (`sqlite:PATH` or a path); it must exist.
    #[arg(long, value_name = "PATH")]
    pub store: String,
    /// An agent the workflow names, as NAME=URL (card URL or agent base URL); repeatable.
    #[arg(long = "agent", value_name = "NAME=URL")]
    pub agents: Vec<String>,
    /// Resend a journaled message whose task cannot be found again (same message id and context
    /// id), for every agent. Without it such a task ends `workflow.outcome_unknown` and nothing
    /// is sent; the config's `[resume]` section can choose per agent.
    #[arg(long)]
    pub resend: bool,
    /// Route policy for routing decisions not yet journaled: allow-all, deny-all, or a JSON file.
    #[arg(long, default_value = "allow-all")]
    pub routes: String,
    /// How Negotiation-T proposals not yet answered are answered.
    #[arg(long, value_enum, default_value_t = NegotiationPolicy::Accept)]
    pub negotiation: NegotiationPolicy,
    /// Engine configuration file (.toml or .json); its `store` is replaced by --store.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Credentials file (values from the environment, never the command line).
    #[arg(long, value_name = "FILE")]
    pub credentials: Option<PathBuf>,
    /// Write every event of the resumed run as one JSON line to this file.
    #[arg(long, value_name = "EVENTS.jsonl")]
    pub events: Option<PathBuf>,
    /// What a task stopped at a gate does in a run journaled without a gate policy: `fail` it,
    /// or `park` it (the run stops at its open gates with exit 3). A run keeps the policy it
    /// was started with.
    #[arg(long, value_enum, default_value_t = GatesArg::Fail)]
    pub gates: GatesArg,
    /// Output format of the result.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
}

/// Exit status of a store, usage or setup problem.
const SETUP_ERROR: u8 = 2;

fn report(message: impl std::fmt::Display) {
    eprintln!("a2aflow runs resume: {}", block(&message.to_string(), "  "));
}

fn usage(message: impl std::fmt::Display) -> u8 {
    report(message);
    SETUP_ERROR
}

/// Runs the subcommand; returns the exit code.
pub fn run(args: ResumeArgs) -> u8 {
    let config = match resume_config(
        args.config.as_deref(),
        &args.store,
        args.credentials.as_deref(),
    ) {
        Ok(c) => c,
        Err(f) => return usage(f),
    };
    let RunInputs {
        routes,
        named,
        events_file,
    } = match RunInputs::parse(&args.routes, &args.agents, args.events.as_deref()) {
        Ok(i) => i,
        Err(e) => return usage(e),
    };
    let runtime = match runtime() {
        Ok(rt) => rt,
        Err(e) => return usage(e),
    };
    runtime.block_on(async move {
        let interrupts = match Interrupts::listen("runs resume") {
            Ok(i) => i,
            Err(e) => return usage(format!("cannot listen for signals: {e}")),
        };
        let host = match ResumeHost::discover(config, &named, routes, args.negotiation, args.resend)
            .await
        {
            Ok(h) => h,
            Err(f) => {
                report(f);
                return 1;
            }
        };
        let mut options = RunOptions::default();
        if args.gates == GatesArg::Park {
            crate::run_cmd::park_gates(&mut options);
        }
        // Nobody answers a gate inside this process: a run that parks (its journaled policy
        // says so) stops at its open gates with exit 3 instead of waiting for its deadline.
        options.suspend_when_parked = true;
        let stream = match host.resume_stream(&args.id, options).await {
            Ok(s) => s,
            Err(f) => return refused(f),
        };
        follow(stream, interrupts, events_file, args.format).await
    })
}

/// A resume refused before anything was sent: a store or configuration problem, or an agent of
/// the workflow not given, is exit 2; a construction problem of the engine client (an unusable
/// card) exit 1, as `run` does.
fn refused(f: Failure) -> u8 {
    let code = f.code.to_string();
    let setup = code.starts_with("store.")
        || code.starts_with("config.")
        || f.is(ErrorCode::WorkflowUnknownAgent);
    report(f);
    if setup { SETUP_ERROR } else { 1 }
}
