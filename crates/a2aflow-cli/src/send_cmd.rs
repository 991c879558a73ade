//! `a2aflow send URL TEXT`: one message to one agent; prints the direct Message or the final Task
//! with its artifacts assembled from the stream.

use crate::OutputFormat;
use crate::terminal::{block, inline, json};
use a2aflow::config::BindingName;
use a2aflow::model::a2a::{
    CancelTaskRequest, Message, Part, PartContent, Role, SendMessageRequest, SendMessageResponse,
    StreamResponse, Task, TaskState, TaskStatus,
};
use a2aflow::model::{ErrorCode, Failure};
use a2aflow::protocol::ResponseReducer;
use a2aflow::protocol::{CallOptions, Transport};
use a2aflow::{AgentEndpoint, EngineConfig, fetch_agent_cards};
use std::path::PathBuf;
use std::sync::Arc;

/// Everything `send` takes from the command line.
#[derive(Debug, clap::Args)]
pub struct SendArgs {
    /// Card URL or agent base URL.
    pub url: String,
    /// The message text (sent as a text part).
    pub text: String,
    /// Only this binding (default: JSON-RPC, then HTTP+JSON, then gRPC, as the card offers).
    #[arg(long, value_parser = BindingName::CLI_NAMES)]
    pub binding: Option<String>,
    /// Use SendStreamingMessage and assemble the streamed artifacts.
    #[arg(long)]
    pub stream: bool,
    /// A JSON value sent as a data part after the text.
    #[arg(long, value_name = "JSON")]
    pub data: Option<String>,
    /// The context id to continue.
    #[arg(long, value_name = "ID")]
    pub context_id: Option<String>,
    /// The task id to continue (a follow-up on an interrupted task).
    #[arg(long, value_name = "ID")]
    pub task_id: Option<String>,
    /// Credentials file (values from the environment, never the command line).
    #[arg(long, value_name = "FILE", requires = "agent_name")]
    pub credentials: Option<PathBuf>,
    /// Engine configuration file (.toml or .json; every key in docs/guide/configuration.md);
    /// flags override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The whole exchange's deadline in seconds (card fetch, send, stream); past it the task is
    /// cancelled (best effort). Default: the config's timeouts.run_secs (600).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// The agent's name in the credentials file (never taken from the card); its credentials go
    /// only to URL's origin, or to the entry's allowed_origins.
    #[arg(long, value_name = "NAME")]
    pub agent_name: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
}

/// How a send ended.
#[derive(Debug)]
enum Outcome {
    /// A direct (taskless) answer.
    Message(Message),
    /// The last view of the task.
    Task(Task),
}

fn usage(message: impl std::fmt::Display) -> u8 {
    eprintln!("a2aflow send: {message}");
    2
}

/// A message id unique enough for one process: wall-clock nanoseconds and the process id.
fn message_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("a2aflow-send-{}-{nanos}", std::process::id())
}

fn request(args: &SendArgs, data: Option<serde_json::Value>) -> SendMessageRequest {
    let mut parts = vec![Part::text(args.text.clone())];
    if let Some(d) = data {
        parts.push(Part::data(d));
    }
    SendMessageRequest {
        message: Message {
            message_id: message_id(),
            context_id: args.context_id.clone(),
            task_id: args.task_id.clone(),
            role: Role::User,
            parts,
            metadata: None,
            extensions: None,
            reference_task_ids: None,
        },
        configuration: None,
        metadata: None,
        tenant: None,
    }
}

/// The transport for the agent at `url`, with the configured binding preference, TLS, limits and
/// credentials (checked against the card's security requirements, as the facade's engine client
/// does).
async fn transport(
    url: &str,
    name: Option<&str>,
    config: &EngineConfig,
) -> Result<Arc<dyn Transport>, Failure> {
    let card = fetch_agent_cards(&[url.to_owned()], config)
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| Failure::new(ErrorCode::A2aInvalidResponse, "no agent card"))?;
    // Credentials are selected by the user's name (required whenever credentials are
    // configured, checked in `run`), never the card's; without credentials the name is only a
    // label.
    let name = name.map_or_else(|| card.name.clone(), str::to_owned);
    config
        .channel_factory(None)?
        .connect_agent(&AgentEndpoint::new(name, url, card))
}

/// Folds answers into a reducer created from the first object's context id.
struct Fold {
    reducer: Option<ResponseReducer>,
}

impl Fold {
    fn apply(&mut self, event: StreamResponse) -> Result<(), Failure> {
        let context = match &event {
            StreamResponse::Task(t) => t.context_id.clone(),
            StreamResponse::Message(m) => m.context_id.clone().unwrap_or_default(),
            StreamResponse::StatusUpdate(s) => s.context_id.clone(),
            StreamResponse::ArtifactUpdate(a) => a.context_id.clone(),
        };
        let reducer = self
            .reducer
            .get_or_insert_with(|| ResponseReducer::new(context));
        // `fold`, not `apply`: nothing here reads the per-event evidence, and building it copies
        // the assembled artifact on every chunk.
        reducer.fold(event).map(|_| ())
    }

    /// The remote task id seen so far.
    fn task_id(&self) -> Option<String> {
        self.reducer.as_ref().and_then(|r| r.view().task_id.clone())
    }

    fn outcome(self) -> Result<Outcome, Failure> {
        let Some(reducer) = self.reducer else {
            return Err(Failure::new(
                ErrorCode::A2aInvalidResponse,
                "the agent answered nothing",
            ));
        };
        let view = reducer.view();
        if let Some(m) = &view.direct_message {
            return Ok(Outcome::Message(m.clone()));
        }
        let (Some(id), Some(state)) = (view.task_id.clone(), view.state.clone()) else {
            return Err(Failure::new(
                ErrorCode::A2aInvalidResponse,
                "the agent answered no task state",
            ));
        };
        Ok(Outcome::Task(Task {
            id,
            context_id: reducer.context_id().to_owned(),
            status: TaskStatus {
                state,
                message: view.status_message.clone(),
                timestamp: None,
            },
            artifacts: Some(view.artifacts.clone()),
            history: None,
            metadata: view.task_metadata.clone().map(|m| m.into_iter().collect()),
        }))
    }
}

/// Connects (into `slot`, so a deadline can still cancel the task) and folds the answer into
/// `fold`.
async fn exchange(
    args: &SendArgs,
    config: &EngineConfig,
    req: SendMessageRequest,
    fold: &mut Fold,
    slot: &mut Option<Arc<dyn Transport>>,
) -> Result<(), Failure> {
    use futures_util::StreamExt as _;
    let transport = slot
        .insert(transport(&args.url, args.agent_name.as_deref(), config).await?)
        .clone();
    let opts = CallOptions::default();
    if args.stream {
        let mut stream = transport.send_streaming_message(&req, &opts).await?;
        while let Some(event) = stream.next().await {
            fold.apply(event?)?;
        }
    } else {
        match transport.send_message(&req, &opts).await? {
            SendMessageResponse::Task(t) => fold.apply(StreamResponse::Task(t))?,
            SendMessageResponse::Message(m) => fold.apply(StreamResponse::Message(m))?,
        }
    }
    Ok(())
}

/// [`exchange`] within the configured deadline. Past it, a best-effort CancelTask (bounded by
/// `cancel_timeout_secs`) and an `a2a.timeout` failure; a stream that closes before a terminal
/// (or interrupted) state is an `a2a.connection` failure that says so.
async fn exchange_within(
    args: &SendArgs,
    config: &EngineConfig,
    req: SendMessageRequest,
) -> Result<Outcome, Failure> {
    let deadline = config.run_timeout()?;
    let mut fold = Fold { reducer: None };
    let mut slot = None;
    let finished =
        tokio::time::timeout(deadline, exchange(args, config, req, &mut fold, &mut slot)).await;
    match finished {
        Ok(Ok(())) => {}
        Ok(Err(f)) => return Err(f),
        Err(_) => {
            let task = fold.task_id();
            if let (Some(transport), Some(id)) = (&slot, &task) {
                cancel_best_effort(transport.as_ref(), id, config).await;
            }
            return Err(Failure::new(
                ErrorCode::A2aTimeout,
                format!(
                    "no answer within the deadline of {}s{}",
                    deadline.as_secs_f64(),
                    match &task {
                        Some(id) => format!("; CancelTask was sent for task {id}"),
                        None => String::new(),
                    }
                ),
            ));
        }
    }
    let outcome = fold.outcome()?;
    if let Outcome::Task(t) = &outcome
        && args.stream
        && !ends_the_exchange(&t.status.state)
    {
        return Err(Failure::new(
            ErrorCode::A2aConnection,
            format!(
                "the stream closed before task {} reached a terminal state (last state {})",
                t.id,
                state_name(&t.status.state)
            ),
        ));
    }
    Ok(outcome)
}

/// Terminal states and the interrupted ones (input or auth required) end an exchange.
fn ends_the_exchange(state: &TaskState) -> bool {
    state.is_terminal() || matches!(state, TaskState::InputRequired | TaskState::AuthRequired)
}

/// One CancelTask, bounded by the configured cancel timeout; its outcome only reported.
async fn cancel_best_effort(transport: &dyn Transport, id: &str, config: &EngineConfig) {
    let bound = config
        .client_config()
        .map(|c| c.cancel_timeout)
        .unwrap_or(std::time::Duration::from_secs(5));
    let request = CancelTaskRequest {
        id: id.to_owned(),
        metadata: None,
        tenant: None,
    };
    let opts = CallOptions::default();
    match tokio::time::timeout(bound, transport.cancel_task(&request, &opts)).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => eprintln!(
            "a2aflow send: CancelTask failed: {}",
            inline(&e.to_string())
        ),
        Err(_) => eprintln!("a2aflow send: CancelTask timed out"),
    }
}

/// The stable code of a task's end state; `None` for COMPLETED.
fn state_code(state: &TaskState) -> Option<ErrorCode> {
    match state {
        TaskState::Completed => None,
        TaskState::Failed => Some(ErrorCode::A2aTaskFailed),
        TaskState::Rejected => Some(ErrorCode::A2aTaskRejected),
        TaskState::Canceled => Some(ErrorCode::A2aTaskCanceled),
        TaskState::AuthRequired => Some(ErrorCode::A2aAuthRequired),
        TaskState::InputRequired => Some(ErrorCode::NegotiationNotNegotiable),
        _ => Some(ErrorCode::A2aInvalidResponse),
    }
}

/// Why `send` exits 1 for a task that did not complete, in words: a gate says what the agent
/// asks for and how to answer it on the same task.
fn end_text(t: &Task) -> String {
    let state = inline(&state_name(&t.status.state));
    let follow_up = format!(
        "answer on the same task with `a2aflow send URL TEXT --task-id {} --context-id {}`",
        inline(&t.id),
        inline(&t.context_id)
    );
    match t.status.state {
        TaskState::InputRequired => {
            format!("the agent asks for more input (the task is in {state}); {follow_up}")
        }
        TaskState::AuthRequired => format!(
            "the agent asks for authorization (the task is in {state}); once it is given, \
             {follow_up}"
        ),
        ref s if ends_the_exchange(s) => format!("the task ended in {state}"),
        _ => format!("the agent answered before a terminal state; the task is still in {state}"),
    }
}

fn state_name(state: &TaskState) -> String {
    serde_json::to_value(state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{state:?}"))
}

fn parts_text(parts: &[Part], indent: &str) -> String {
    let mut out = String::new();
    for p in parts {
        let line = match &p.content {
            PartContent::Text(t) => block(t, indent),
            PartContent::Data(d) => inline(&d.to_string()),
            PartContent::Url(u) => format!("<{}>", inline(u)),
            PartContent::Raw(b) => format!("<{} bytes>", b.len()),
        };
        out.push_str(&format!("{indent}{line}\n"));
    }
    out
}

fn render_text(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Message(m) => format!(
            "message {}\n{}",
            inline(&m.message_id),
            parts_text(&m.parts, "  ")
        ),
        Outcome::Task(t) => {
            let mut out = format!(
                "task {} {}\n",
                inline(&t.id),
                inline(&state_name(&t.status.state))
            );
            if let Some(m) = &t.status.message {
                out.push_str("  status:\n");
                out.push_str(&parts_text(&m.parts, "    "));
            }
            for a in t.artifacts.iter().flatten() {
                out.push_str(&format!(
                    "  artifact {}:\n",
                    inline(a.name.as_deref().unwrap_or(&a.artifact_id))
                ));
                out.push_str(&parts_text(&a.parts, "    "));
            }
            out
        }
    }
}

/// Runs the subcommand; returns the exit code (0 completed or a direct Message, 1 any other end
/// state or error, 2 usage).
pub fn run(args: SendArgs) -> u8 {
    let data = match &args.data {
        Some(text) => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(v) => Some(v),
            Err(e) => return usage(format!("--data is not JSON: {e}")),
        },
        None => None,
    };
    let mut config = match crate::load_config(args.config.as_deref()) {
        Ok(c) => c,
        Err(f) => return usage(f),
    };
    if let Some(t) = args.timeout {
        config.timeouts.run_secs = t;
    }
    if let Some(b) = &args.binding {
        // clap admitted only BindingName::CLI_NAMES.
        config.bindings = BindingName::parse(b).into_iter().collect();
    }
    if let Some(c) = &args.credentials {
        config.credentials_file = Some(c.clone());
    }
    if config.credentials_file.is_some() && args.agent_name.is_none() {
        // The card's own name must never pick an entry: any agent could claim another's.
        return usage(
            "credentials are configured: name the agent's entry with --agent-name NAME \
             (the card's own name is never used to pick credentials)",
        );
    }
    if let Err(f) = config.validate() {
        return usage(f);
    }
    let req = request(&args, data);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return usage(format!("cannot start the async runtime: {e}")),
    };
    let outcome = match runtime.block_on(exchange_within(&args, &config, req)) {
        Ok(o) => o,
        Err(f) => {
            eprintln!("a2aflow send: {}", inline(&f.to_string()));
            return 1;
        }
    };
    let rendered = match args.format {
        OutputFormat::Json => {
            let value = match &outcome {
                Outcome::Message(m) => serde_json::to_string_pretty(m),
                Outcome::Task(t) => serde_json::to_string_pretty(t),
            };
            match value {
                Ok(v) => format!("{}\n", json(&v)),
                Err(e) => {
                    eprintln!("a2aflow send: cannot render the answer: {e}");
                    return 1;
                }
            }
        }
        OutputFormat::Text => render_text(&outcome),
    };
    print!("{rendered}");
    match &outcome {
        Outcome::Message(_) => 0,
        Outcome::Task(t) => match state_code(&t.status.state) {
            None => 0,
            Some(code) => {
                eprintln!("a2aflow send: [{code}] {}", end_text(t));
                1
            }
        },
    }
}
