//! `a2aflow runs answer ID --task LOCAL_TASK_ID (--text TEXT | --data JSON) --store PATH
//! [--agent NAME=URL …]`: answers an open gate of a parked run, then drives the run on in this
//! process, as `runs resume` does (its output and exit codes: 0 succeeded, 1 failed, 3 parked
//! again). An answer to a task without an open gate (not gated, already answered, unknown) is
//! exit 2 with `workflow.gate_not_open`, as is any store problem; nothing is written then. The
//! run is resumed as with `runs resume --gates park`: a gate the answer meets parks again.
//! With `--no-resume` the answer is only journaled (exit 0): the workers of a shared store
//! claim the run and drive it on.

use crate::resume_cmd::ResumeArgs;
use crate::terminal::block;
use a2aflow::answer_gate;
use a2aflow::model::a2a::Part;
use a2aflow::model::{ErrorCode, Failure, MessageContent};

/// Everything `runs answer` takes from the command line.
#[derive(Debug, clap::Args)]
pub struct AnswerArgs {
    /// The local task id of the parked task (as `runs show` lists it under `gates`).
    #[arg(long, value_name = "LOCAL_TASK_ID")]
    pub task: String,
    /// The answer as one text part.
    #[arg(
        long,
        value_name = "TEXT",
        conflicts_with = "data",
        required_unless_present = "data"
    )]
    pub text: Option<String>,
    /// The answer as one data part (a JSON value).
    #[arg(long, value_name = "JSON")]
    pub data: Option<String>,
    /// Journal the answer and leave the run to the workers of a shared store (`a2aflow
    /// worker`), or to a later `runs resume`: nothing is driven here, exit 0 once it is
    /// journaled.
    #[arg(long)]
    pub no_resume: bool,
    /// The run to resume, its store and agents, as `runs resume` takes them.
    #[command(flatten)]
    pub resume: ResumeArgs,
}

/// Exit status of a usage, store or state problem.
const SETUP_ERROR: u8 = 2;

fn usage(message: impl std::fmt::Display) -> u8 {
    eprintln!("a2aflow runs answer: {}", block(&message.to_string(), "  "));
    SETUP_ERROR
}

/// The answer's content, from `--text` or `--data`.
fn content(args: &AnswerArgs) -> Result<MessageContent, String> {
    match (&args.text, &args.data) {
        (Some(text), None) => Ok(MessageContent::text(text.clone())),
        (None, Some(data)) => {
            let value =
                serde_json::from_str(data).map_err(|e| format!("--data is not JSON: {e}"))?;
            Ok(MessageContent {
                parts: vec![Part::data(value)],
                ..MessageContent::default()
            })
        }
        _ => Err("give the answer as --text TEXT or --data JSON".to_owned()),
    }
}

/// Runs the subcommand; returns the exit code.
pub fn run(args: AnswerArgs) -> u8 {
    let content = match content(&args) {
        Ok(c) => c,
        Err(e) => return usage(e),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return usage(format!("cannot start the async runtime: {e}")),
    };
    let answered = runtime.block_on(journal_answer(&args, content));
    drop(runtime);
    if let Err(f) = answered {
        return usage(f);
    }
    if args.no_resume {
        let id = &args.resume.id;
        match args.resume.format {
            crate::OutputFormat::Json => println!(
                "{}",
                serde_json::json!({"executionId": id, "localTaskId": args.task, "journaled": true})
            ),
            crate::OutputFormat::Text => eprintln!(
                "a2aflow runs answer: answer journaled for task {} of run {}; a worker or `runs \
                 resume` drives it on",
                crate::terminal::inline(&args.task),
                crate::terminal::inline(id)
            ),
        }
        return 0;
    }
    // The run parked; it parks again at any gate the answer meets.
    let mut resume = args.resume;
    resume.gates = crate::run_cmd::GatesArg::Park;
    crate::resume_cmd::run(resume)
}

/// Appends the answer to the run's journal (`workflow.gate_not_open` when the task has no open
/// gate there).
async fn journal_answer(args: &AnswerArgs, content: MessageContent) -> Result<(), Failure> {
    let resume = &args.resume;
    let store = crate::resume_host::resume_config(
        resume.config.as_deref(),
        &resume.store,
        resume.credentials.as_deref(),
    )?
    .open_existing_store()
    .await?;
    let delivered = answer_gate(&*store, None, &args.resume.id, &args.task, content).await;
    drop(store);
    delivered.map(|_| ()).map_err(|f| {
        if f.is(ErrorCode::WorkflowGateNotOpen) {
            f
        } else {
            f.with_detail("localTaskId", args.task.as_str())
        }
    })
}
