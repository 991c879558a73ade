//! `a2aflow submit FILE --store URL [--agent NAME=URL …]`: journal a run without driving it, for
//! `a2aflow worker` to claim (or `runs resume` to drive). It takes `run`'s arguments; the ones
//! that only a driver uses (`--events`, `--registry`, `--agents-dir`, a `--routes` or
//! `--negotiation` policy) are refused, and the `--agent` names, when given, must cover the
//! workflow's agents (nothing is fetched: the worker reaches the agents).
//!
//! Prints the execution id (`{"executionId": "…"}` with `--format json`). Exit 0 when the run
//! was journaled, 1 for an invalid workflow, 2 for a usage or store problem.

use crate::OutputFormat;
use crate::declarative::NegotiationPolicy;
use crate::run_cmd::{GatesArg, RunArgs, engine_config, named_agents, runtime};
use crate::terminal::{block, inline};
use a2aflow::kernel::RunInput;
use a2aflow::model::{LoadOptions, validate};
use a2aflow::{HostHooks, check_agents, submit_workflow};

/// Exit status of a usage or store problem.
const SETUP_ERROR: u8 = 2;

fn report(message: impl std::fmt::Display) {
    eprintln!("a2aflow submit: {}", block(&message.to_string(), "  "));
}

fn usage(message: impl std::fmt::Display) -> u8 {
    report(message);
    SETUP_ERROR
}

/// What `run` takes that a run journaled for another driver cannot use.
fn driver_only(args: &RunArgs) -> Option<&'static str> {
    if args.events.is_some() {
        Some("--events: the events are the driver's (`a2aflow runs events ID` reads them)")
    } else if args.registry.is_some() || args.agents_dir.is_some() {
        Some("--registry / --agents-dir: the worker that drives the run fetches the cards")
    } else if args.routes != "allow-all" || args.negotiation != NegotiationPolicy::Accept {
        Some("--routes / --negotiation: the policies are the driver's")
    } else if args.ui || args.ui_linger {
        Some("--ui: the run page is the driver's (`a2aflow ui --store …` shows the run)")
    } else if args.orchestrator.is_some() {
        Some("--orchestrator: submit a workflow FILE")
    } else {
        None
    }
}

/// Runs the subcommand; returns the exit code.
pub fn run(args: RunArgs) -> u8 {
    if let Some(what) = driver_only(&args) {
        return usage(format!("submit does not drive the run; {what}"));
    }
    if args.store.is_none() {
        return usage("submit needs --store (a postgres:// URL for workers, or a SQLite path)");
    }
    let Some(file) = &args.file else {
        return usage("submit takes a workflow FILE");
    };
    let workflow = match crate::workflow_file::read(file, &LoadOptions::LENIENT) {
        Ok(l) => l.workflow,
        Err(e) => {
            report(&e);
            return e.exit_code();
        }
    };
    if let Err(e) = validate(&workflow) {
        report(e);
        return 1;
    }
    let config = match engine_config(&args) {
        Ok(c) => c,
        Err(f) => return usage(f),
    };
    let named = match named_agents(&args.agents) {
        Ok(n) => n,
        Err(e) => return usage(e),
    };
    if !named.is_empty()
        && let Err(f) = check_agents(&workflow, named.iter().map(|(name, _)| name.as_str()))
    {
        return usage(f);
    }
    let mut hooks = HostHooks::default();
    if args.gates == GatesArg::Park {
        crate::run_cmd::park_gates(&mut hooks.run_options);
    }
    let input = RunInput {
        runtime_intent: args.intent.clone(),
    };
    let runtime = match runtime() {
        Ok(rt) => rt,
        Err(e) => return usage(e),
    };
    let submitted = runtime.block_on(submit_workflow(&workflow, &config, input, hooks));
    match submitted {
        Ok(id) => {
            match args.format {
                OutputFormat::Json => {
                    let line = serde_json::json!({ "executionId": id }).to_string();
                    println!("{}", crate::terminal::json(&line));
                }
                OutputFormat::Text => println!("{}", inline(&id)),
            }
            0
        }
        Err(f) => usage(f),
    }
}
