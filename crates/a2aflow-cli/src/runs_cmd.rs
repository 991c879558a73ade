//! `a2aflow runs list|show|events|cancel --store PATH`: the runs a run store holds
//! (`runs resume` lives in [`crate::resume_cmd`]).
//!
//! The store must exist (nothing is created) and is only read, except by `cancel`, which appends
//! one run-level `cancelRequested` record. Every store problem (an unknown id, a file that is
//! not an a2aflow store, a newer schema, a damaged file, a missing directory) is reported with
//! its `store.*` code and exit 2, and the file is left as it was. Everything the store holds
//! came from the network or the host: text output escapes it ([`crate::terminal`]).

use crate::OutputFormat;
use crate::signals::Interrupts;
use crate::terminal::{block, inline, json};
use a2aflow::executions::{ExecutionView, Progress, TaskView};
use a2aflow::model::{Event, EventKind, EventTime, Failure};
use a2aflow::{
    CancelRequest, RunFilter, RunState, RunStore, RunSummary, execution_events, get_execution,
    list_executions, request_cancel,
};
use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

/// `a2aflow runs …`.
#[derive(Debug, clap::Args)]
pub struct RunsArgs {
    #[command(subcommand)]
    command: RunsCommand,
}

/// The store every `runs` command reads: `sqlite:PATH`, a path or a `postgres://` URL.
#[derive(Debug, clap::Args)]
struct StoreArg {
    /// The run store (`sqlite:PATH`, the path of the store file, or a `postgres://` URL
    /// without a password); it must exist.
    #[arg(long, value_name = "PATH|URL")]
    store: String,
    /// Credentials file holding the Postgres store's password (its `a2aflow-store` entry);
    /// without it the password comes from A2AFLOW_PG_PASSWORD or PGPASSWORD.
    #[arg(long, value_name = "FILE")]
    credentials: Option<std::path::PathBuf>,
}

/// A run state, as `--state` takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum StateArg {
    Running,
    Waiting,
    Succeeded,
    Failed,
    Cancelled,
}

impl From<StateArg> for RunState {
    fn from(s: StateArg) -> Self {
        match s {
            StateArg::Running => RunState::Running,
            StateArg::Waiting => RunState::Waiting,
            StateArg::Succeeded => RunState::Succeeded,
            StateArg::Failed => RunState::Failed,
            StateArg::Cancelled => RunState::Cancelled,
        }
    }
}

#[derive(Debug, clap::Subcommand)]
enum RunsCommand {
    #[command(flatten)]
    Inspect(InspectCommand),
    /// Continue a run whose host stopped or died: finished steps and tasks keep their results,
    /// sent tasks are found again (never resent unless --resend). Output and exit codes as
    /// `run`'s.
    Resume(Box<crate::resume_cmd::ResumeArgs>),
    /// Answer an open gate of a parked run (`run --gates park`), then continue the run as
    /// `resume` does. Exit 2 when the task has no open gate.
    Answer(Box<crate::answer_cmd::AnswerArgs>),
}

/// The commands that read (or, `cancel`, append to) an existing store.
#[derive(Debug, clap::Subcommand)]
enum InspectCommand {
    /// The runs in the store, newest first: execution id, state, start time, workflow name.
    List {
        #[command(flatten)]
        store: StoreArg,
        /// Only runs in this state.
        #[arg(long, value_enum)]
        state: Option<StateArg>,
        /// At most this many runs.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        limit: u32,
        /// Skip this many runs first (paging).
        #[arg(long, default_value_t = 0)]
        offset: u32,
        /// Output format.
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
    },
    /// One run: its state, steps and tasks (local task id, contextId, remote task id, remote
    /// state, error codes).
    Show {
        /// The run's execution id.
        id: String,
        #[command(flatten)]
        store: StoreArg,
        /// Output format.
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
    },
    /// A run's events as JSON lines, the shapes `run --events` writes.
    Events {
        /// The run's execution id.
        id: String,
        #[command(flatten)]
        store: StoreArg,
        /// Keep polling for new events until the run finished (Ctrl-C stops).
        #[arg(long)]
        follow: bool,
    },
    /// Ask a run to stop: its driver, or the next resume, cancels it. A finished run is refused.
    Cancel {
        /// The run's execution id.
        id: String,
        #[command(flatten)]
        store: StoreArg,
    },
}

/// Exit status of a store or usage problem.
const SETUP_ERROR: u8 = 2;
/// Events read per store query.
const EVENT_PAGE: usize = 500;
/// How often `--follow` asks the store for new events.
const FOLLOW_POLL: Duration = Duration::from_millis(200);
/// How often `--follow`, while no event arrives, reads whether the run finished.
const FINISH_CHECK: Duration = Duration::from_secs(1);
/// How long past a run's deadline `--follow` keeps waiting for it to finish (its driver needs
/// the cleanup grace to end it); after that nobody is driving it.
const FOLLOW_GRACE_MS: u64 = 60_000;

/// Prints an error on stderr, escaped: store text came from the network.
fn report(message: impl std::fmt::Display) {
    eprintln!("a2aflow runs: {}", block(&message.to_string(), "  "));
}

fn fail(f: Failure) -> u8 {
    report(f);
    SETUP_ERROR
}

/// Runs the subcommand; returns the exit code (0 done, 1 a follow that ended unfinished, 2 a
/// store or usage error, 130/143 after SIGINT/SIGTERM while following).
pub fn run(args: RunsArgs) -> u8 {
    let command = match args.command {
        RunsCommand::Resume(resume) => return crate::resume_cmd::run(*resume),
        RunsCommand::Answer(answer) => return crate::answer_cmd::run(*answer),
        RunsCommand::Inspect(command) => command,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            report(format!("cannot start the async runtime: {e}"));
            return SETUP_ERROR;
        }
    };
    runtime.block_on(run_async(command))
}

async fn open(store: &StoreArg) -> Result<Arc<dyn RunStore>, Failure> {
    crate::resume_host::resume_config(None, &store.store, store.credentials.as_deref())?
        .open_existing_store()
        .await
}

async fn run_async(command: InspectCommand) -> u8 {
    let store_arg = match &command {
        InspectCommand::List { store, .. }
        | InspectCommand::Show { store, .. }
        | InspectCommand::Events { store, .. }
        | InspectCommand::Cancel { store, .. } => store,
    };
    let store = match open(store_arg).await {
        Ok(s) => s,
        Err(f) => return fail(f),
    };
    let store = &*store;
    let outcome = match command {
        InspectCommand::List {
            state,
            limit,
            offset,
            format,
            ..
        } => {
            let filter = RunFilter {
                state: state.map(RunState::from),
                offset: offset as usize,
                limit: limit as usize,
            };
            list(store, filter, format).await
        }
        InspectCommand::Show { id, format, .. } => show(store, &id, format).await,
        InspectCommand::Events { id, follow, .. } => events(store, &id, follow).await,
        InspectCommand::Cancel { id, .. } => cancel(store, &id).await,
    };
    outcome.unwrap_or_else(fail)
}

/// Writes `text` on stdout; a closed stdout (a pager quit) is exit 1, never a panic.
fn emit(text: &str) -> Result<(), u8> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|_| 1)
}

fn pretty<T: serde::Serialize>(value: &T) -> Result<String, Failure> {
    serde_json::to_string_pretty(value)
        .map(|text| format!("{}\n", json(&text)))
        .map_err(|e| {
            Failure::new(
                a2aflow::model::ErrorCode::StoreCorrupt,
                format!("cannot render the store's answer as JSON: {e}"),
            )
        })
}

async fn list(
    store: &dyn RunStore,
    filter: RunFilter,
    format: OutputFormat,
) -> Result<u8, Failure> {
    let runs = list_executions(store, filter).await?;
    let text = match format {
        OutputFormat::Json => pretty(&serde_json::json!({ "runs": runs }))?,
        OutputFormat::Text => list_text(&runs),
    };
    Ok(emit(&text).err().unwrap_or(0))
}

/// How long a finished run took (`1.25s`, `3m04s`, `2h05m`); `-` while it runs or when the
/// store did not keep its end.
fn duration_text(run: &RunSummary) -> String {
    let Some(ms) = run
        .finished_at_ms
        .map(|f| f.saturating_sub(run.started_at_ms))
    else {
        return "-".to_owned();
    };
    let secs = ms / 1000;
    match secs {
        0..60 => format!("{}.{:02}s", secs, (ms % 1000) / 10),
        60..3600 => format!("{}m{:02}s", secs / 60, secs % 60),
        _ => format!("{}h{:02}m", secs / 3600, (secs % 3600) / 60),
    }
}

/// The runs as a table: execution id, state, start time (UTC), duration, workflow name.
fn list_text(runs: &[RunSummary]) -> String {
    if runs.is_empty() {
        return "no runs\n".to_owned();
    }
    let ids: Vec<String> = runs.iter().map(|r| inline(&r.execution_id)).collect();
    let width = ids
        .iter()
        .map(|i| i.chars().count())
        .max()
        .unwrap_or(0)
        .max("EXECUTION ID".len());
    let mut out = format!(
        "{:<width$}  {:<9}  {:<24}  {:<8}  WORKFLOW\n",
        "EXECUTION ID", "STATE", "STARTED (UTC)", "DURATION"
    );
    for (run, id) in runs.iter().zip(ids) {
        out.push_str(&format!(
            "{id:<width$}  {:<9}  {:<24}  {:<8}  {}\n",
            run.state.as_str(),
            utc_text(run.started_at_ms),
            duration_text(run),
            inline(&run.workflow_name)
        ));
    }
    out
}

async fn show(store: &dyn RunStore, id: &str, format: OutputFormat) -> Result<u8, Failure> {
    let view = get_execution(store, id).await?;
    let text = match format {
        OutputFormat::Json => pretty(&view)?,
        OutputFormat::Text => show_text(&view),
    };
    Ok(emit(&text).err().unwrap_or(0))
}

/// One run for people, everything from the store escaped.
fn show_text(view: &ExecutionView) -> String {
    let mut out = format!(
        "run {} {}\n",
        inline(&view.execution_id),
        view.state.as_str()
    );
    out.push_str(&format!(
        "  workflow  {} (id {})\n",
        inline(&view.workflow_name),
        inline(&view.workflow_id)
    ));
    if let Some(intent) = &view.runtime_intent {
        out.push_str(&format!("  intent    {}\n", inline(intent)));
    }
    out.push_str(&format!("  started   {}\n", utc_text(view.started_at_ms)));
    out.push_str(&format!("  deadline  {}\n", utc_text(view.deadline_ms)));
    if view.cancel_requested {
        out.push_str("  cancel    requested\n");
    }
    if let Some(f) = &view.failure {
        out.push_str(&crate::failure_text::describe(f, "  "));
    }
    out.push_str("steps\n");
    for step in &view.steps {
        out.push_str(&format!(
            "  {}  {}{}\n",
            inline(&step.name),
            step.status.as_str(),
            code_suffix(step.error_code.as_deref())
        ));
    }
    if !view.skipped_steps.is_empty() {
        let skipped: Vec<String> = view.skipped_steps.iter().map(|s| inline(s)).collect();
        out.push_str(&format!("skipped   {}\n", skipped.join(", ")));
    }
    out.push_str("tasks\n");
    for task in &view.tasks {
        task_text(&mut out, task);
    }
    if !view.open_gates.is_empty() {
        let gates: Vec<serde_json::Value> = view
            .open_gates
            .iter()
            .filter_map(|g| serde_json::to_value(g).ok())
            .collect();
        out.push_str(&crate::run_cmd::gates_text(&gates));
    }
    out
}

fn code_suffix(code: Option<&str>) -> String {
    code.map(|c| format!(" [{}]", inline(c)))
        .unwrap_or_default()
}

fn task_text(out: &mut String, task: &TaskView) {
    let who = if task.agent.is_empty() {
        "local".to_owned()
    } else {
        format!("{}/{}", inline(&task.agent), inline(&task.skill))
    };
    out.push_str(&format!(
        "  {}  {}  {who}  attempt {}{}\n",
        inline(&task.local_task_id),
        task.status.as_str(),
        task.attempt,
        if task.cancel_requested {
            "  cancel requested"
        } else {
            ""
        }
    ));
    let remote_state = task
        .remote_state
        .as_ref()
        .and_then(|s| serde_json::to_value(s).ok())
        .and_then(|v| v.as_str().map(str::to_owned));
    for (label, value) in [
        ("contextId", task.context_id.as_deref()),
        ("remoteTaskId", task.remote_task_id.as_deref()),
        ("remoteState", remote_state.as_deref()),
    ] {
        if let Some(value) = value {
            out.push_str(&format!("    {label:<13} {}\n", inline(value)));
        }
    }
    if task.status != Progress::Completed && (task.error_code.is_some() || task.error.is_some()) {
        out.push_str(&format!(
            "    error        {}{}\n",
            task.error_code
                .as_deref()
                .map(|c| format!("[{}] ", inline(c)))
                .unwrap_or_default(),
            inline(task.error.as_deref().unwrap_or_default())
        ));
    }
}

/// Whether `event` is the last event of run `id` itself (not of a child run).
fn closes(event: &Event, id: &str) -> bool {
    event.kind == EventKind::Close && event.depth == 0 && event.execution_id == id
}

/// Prints every event after `after` as JSON lines; returns the last seq printed and whether
/// the run's own `close` event was among them.
async fn drain(
    store: &dyn RunStore,
    id: &str,
    after: &mut Option<u64>,
) -> Result<Result<bool, u8>, Failure> {
    let mut closed = false;
    loop {
        let page = execution_events(store, id, *after, EVENT_PAGE).await?;
        let mut text = String::new();
        for event in &page {
            let line = serde_json::to_string(event).map_err(|e| {
                Failure::new(
                    a2aflow::model::ErrorCode::StoreCorrupt,
                    format!("event {} cannot be rendered as JSON: {e}", event.seq),
                )
            })?;
            text.push_str(&json(&line));
            text.push('\n');
            *after = Some(event.seq);
            closed |= closes(event, id);
        }
        if let Err(status) = emit(&text) {
            return Ok(Err(status));
        }
        if page.len() < EVENT_PAGE {
            return Ok(Ok(closed));
        }
    }
}

async fn events(store: &dyn RunStore, id: &str, follow: bool) -> Result<u8, Failure> {
    let mut after = None;
    if !follow {
        return Ok(drain(store, id, &mut after).await?.err().unwrap_or(0));
    }
    // The id is checked (and the deadline read) before anything is printed.
    let deadline_ms = store.load(id).await?.started()?.deadline_ms;
    let interrupts = match Interrupts::listen("runs events") {
        Ok(i) => i,
        Err(e) => {
            report(format!("cannot listen for signals: {e}"));
            return Ok(SETUP_ERROR);
        }
    };
    interrupts.arm();
    let mut last_check = tokio::time::Instant::now();
    loop {
        match drain(store, id, &mut after).await? {
            Err(status) => return Ok(status),
            Ok(true) => return Ok(0),
            Ok(false) => {}
        }
        if last_check.elapsed() >= FINISH_CHECK {
            last_check = tokio::time::Instant::now();
            let journal = store.load(id).await?;
            if journal.finished().is_some() {
                // Events recorded after the last page: one more drain, then done.
                return Ok(drain(store, id, &mut after).await?.err().unwrap_or(0));
            }
            if a2aflow::kernel::journal::wall_clock_ms()
                > deadline_ms.saturating_add(FOLLOW_GRACE_MS)
            {
                report(format!(
                    "run {} has not finished although its deadline passed; nobody is driving \
                     it (resume it to end it)",
                    inline(id)
                ));
                return Ok(1);
            }
        }
        tokio::select! {
            () = tokio::time::sleep(FOLLOW_POLL) => {}
            () = interrupts.first() => {
                return Ok(interrupts.exit_status().unwrap_or(crate::signals::SIGINT_EXIT));
            }
        }
    }
}

async fn cancel(store: &dyn RunStore, id: &str) -> Result<u8, Failure> {
    let text = match request_cancel(store, id).await? {
        CancelRequest::Requested => format!(
            "cancel requested for run {}: its driver stops it, or the next resume does\n",
            inline(id)
        ),
        _ => format!(
            "a cancel was already requested for run {}; nothing was added\n",
            inline(id)
        ),
    };
    Ok(emit(&text).err().unwrap_or(0))
}

/// Milliseconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC), as events write
/// their times.
fn utc_text(ms: u64) -> String {
    EventTime::from_unix_ms(ms).to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap

    use super::*;

    #[test]
    fn start_times_are_shown_as_utc() {
        assert_eq!(utc_text(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(utc_text(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(utc_text(1_735_689_599_999), "2024-12-31T23:59:59.999Z");
        assert_eq!(utc_text(4_107_542_400_000), "2100-03-01T00:00:00.000Z");
    }

    #[test]
    fn a_duration_is_shown_for_finished_runs_only() {
        let run = |finished_at_ms| RunSummary {
            execution_id: "e".into(),
            state: RunState::Succeeded,
            workflow_name: "w".into(),
            started_at_ms: 1_000,
            finished_at_ms,
        };
        assert_eq!(duration_text(&run(None)), "-");
        assert_eq!(duration_text(&run(Some(2_250))), "1.25s");
        assert_eq!(duration_text(&run(Some(1_000 + 184_000))), "3m04s");
        assert_eq!(duration_text(&run(Some(1_000 + 7_500_000))), "2h05m");
        assert_eq!(
            duration_text(&run(Some(0))),
            "0.00s",
            "a clock that went back"
        );
    }

    #[test]
    fn listed_text_is_escaped() {
        let runs = vec![RunSummary {
            execution_id: "e\u{1b}[2J".into(),
            state: RunState::Waiting,
            workflow_name: "w\u{202e}x".into(),
            started_at_ms: 0,
            finished_at_ms: None,
        }];
        let text = list_text(&runs);
        assert!(text.contains("e\\x1b[2J"), "{text}");
        assert!(text.contains("w\\u{202e}x"), "{text}");
        assert!(!text.contains('\u{1b}'), "{text}");
    }
}
