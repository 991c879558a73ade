//! `a2aflow run FILE --agent NAME=URL…`: run a workflow with the declarative ControlPoint.
//!
//! The workflow may come from an orchestration centre instead (`--orchestrator URL
//! --workflow-id ID`) and the agent cards from a registry (`--registry URL`); their access tokens
//! are read from the environment (`A2AFLOW_ORCHESTRATOR_TOKEN`, `A2AFLOW_REGISTRY_TOKEN`) and sent
//! only in the `Authorization` header.

use crate::OutputFormat;
use crate::declarative::{DeclarativeControlPoint, NegotiationPolicy, RoutePolicy};
use crate::demo::negotiating_agents;
use crate::progress::{LiveProgress, Stream};
use crate::signals::Interrupts;
use crate::terminal::{block, inline};
use a2aflow::config::BindingName;
use a2aflow::kernel::{EventStream, RunInput};
use a2aflow::model::ErrorCode;
use a2aflow::model::a2a::AgentCard;
use a2aflow::model::{Failure, LoadOptions, Workflow, validate};
use a2aflow::protocol::HttpClient;
use a2aflow::protocol::wirelog::{RedactionPolicy, WireLog};
use a2aflow::services::registry::{OrchestratorClient, RegistryClient, service_client};
use a2aflow::{
    AgentEndpoint, EngineConfig, HostHooks, RunStore, StoreLocation, check_agents, discover_agents,
    execute_workflow_stream,
};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Everything `run` takes from the command line.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Workflow file (JSON); or load it with --orchestrator and --workflow-id.
    #[arg(required_unless_present = "workflow_id")]
    pub file: Option<PathBuf>,
    /// An orchestration centre to load the workflow from (token: env A2AFLOW_ORCHESTRATOR_TOKEN).
    #[arg(long, value_name = "URL", requires = "workflow_id")]
    pub orchestrator: Option<String>,
    /// The id of the workflow to load from the orchestration centre.
    #[arg(
        long,
        value_name = "ID",
        requires = "orchestrator",
        conflicts_with = "file"
    )]
    pub workflow_id: Option<String>,
    /// An agent registry to fetch the agent cards from (token: env A2AFLOW_REGISTRY_TOKEN).
    #[arg(long, value_name = "URL")]
    pub registry: Option<String>,
    /// An agent the workflow names, as NAME=URL (card URL or agent base URL); repeatable.
    #[arg(long = "agent", value_name = "NAME=URL")]
    pub agents: Vec<String>,
    /// A directory of agent card JSON files (each card's `name` is the agent's name).
    #[arg(long, value_name = "DIR")]
    pub agents_dir: Option<PathBuf>,
    /// The run's runtime intent, passed to every callback.
    #[arg(long)]
    pub intent: Option<String>,
    /// Route policy: allow-all, deny-all, or a JSON file of {"source->target": bool}.
    #[arg(long, default_value = "allow-all")]
    pub routes: String,
    /// How Negotiation-T proposals are answered.
    #[arg(long, value_enum, default_value_t = NegotiationPolicy::Accept)]
    pub negotiation: NegotiationPolicy,
    /// Only this binding (default: JSON-RPC, then HTTP+JSON, then gRPC, as the card offers).
    #[arg(long, value_parser = BindingName::CLI_NAMES)]
    pub binding: Option<String>,
    /// The run's one deadline budget in seconds, counted from the start: discovery (loading the
    /// workflow from --orchestrator, the --registry listing, every --agent card) and the run
    /// share it. Default: the config's timeouts.run_secs (600).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// Credentials file (values from the environment, never the command line).
    #[arg(long, value_name = "FILE")]
    pub credentials: Option<PathBuf>,
    /// Engine configuration file (.toml or .json; every key in docs/guide/configuration.md);
    /// flags override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Write every event as one JSON line to this file.
    #[arg(long, value_name = "EVENTS.jsonl")]
    pub events: Option<PathBuf>,
    /// Journal the run in this run store (`sqlite:PATH` or a path; created on first use), so
    /// that `a2aflow runs resume ID --store PATH` can continue it after a crash. With
    /// `--format json` the first line on stdout is `{"executionId": "…"}`.
    #[arg(long, value_name = "PATH")]
    pub store: Option<String>,
    /// What a task stopped at INPUT_REQUIRED (nothing to negotiate) or AUTH_REQUIRED does:
    /// `fail` it, or `park` it (needs --store): the run then stops at its open gates with exit
    /// 3, to be answered with `a2aflow runs answer ID --task LOCAL_TASK_ID --text TEXT`.
    #[arg(long, value_enum, default_value_t = GatesArg::Fail)]
    pub gates: GatesArg,
    /// Output format of the result.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
    /// Serve the run page for this run (loopback, with a token; its URL on stderr before the
    /// run starts). Without --store the run is journaled in a temporary store, deleted when the
    /// command ends. The page stops when the run ends (see --ui-linger); with --gates park the
    /// run waits at its gates for answers from the page.
    #[arg(long)]
    pub ui: bool,
    /// With --ui: keep serving the page after the run ended, until Ctrl-C (the exit code stays
    /// the run's).
    #[arg(long, requires = "ui")]
    pub ui_linger: bool,
}

/// What a gate does, as `--gates` takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GatesArg {
    /// The task fails at its gate.
    Fail,
    /// The task parks at its gate; the run stops there (exit 3) to be answered and resumed.
    Park,
}

/// Exit status of a run parked at its open gates.
pub(crate) const PARKED: u8 = 3;

/// Parks gates in `options`: a command-line run suspends at its open gates (nobody can answer
/// them while it runs).
pub(crate) fn park_gates(options: &mut a2aflow::kernel::RunOptions) {
    options.gate_policy = a2aflow::kernel::GatePolicy::Park;
    options.suspend_when_parked = true;
}

/// Prints an error on stderr, escaped: it may carry peer-controlled text.
fn report(message: impl std::fmt::Display) {
    eprintln!("a2aflow run: {}", block(&message.to_string(), "  "));
}

fn usage(message: impl std::fmt::Display) -> u8 {
    report(message);
    2
}

fn cards_from_dir(dir: &Path) -> Result<Vec<AgentCard>, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p)
                .map_err(|e| format!("cannot read {}: {e}", p.display()))?;
            // The same legacy security-scheme normalisation as a fetched card.
            serde_json::from_str(&text)
                .map_err(|e| e.to_string())
                .and_then(a2aflow::protocol::card_compat::agent_card_from_value)
                .map_err(|e| format!("{} is not an agent card: {e}", p.display()))
        })
        .collect()
}

/// The access token in environment variable `var`, when set and not blank.
fn token_from_env(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|t| !t.trim().is_empty())
}

/// An HTTP client for a registry or orchestration centre: the configuration's TLS and limits,
/// plus the bearer token from `token_var` when set.
pub(crate) fn service_http(
    config: &EngineConfig,
    base_url: &str,
    token_var: &str,
) -> Result<HttpClient, Failure> {
    let mut builder = HttpClient::builder()
        .limits(config.limits()?)
        .tls(config.tls_config().client_config()?);
    if config.wire_log {
        builder = builder.wire_log(WireLog::enabled(RedactionPolicy::new()), base_url);
    }
    service_client(builder, base_url, token_from_env(token_var).as_deref())
}

/// Loads workflow `id` from the orchestration centre at `url`.
async fn workflow_from_orchestrator(
    url: &str,
    id: &str,
    config: &EngineConfig,
) -> Result<Workflow, Failure> {
    let http = service_http(config, url, "A2AFLOW_ORCHESTRATOR_TOKEN")?;
    let center = OrchestratorClient::new(url, http)?;
    Ok(center
        .load_workflow(id, LoadOptions::LENIENT)
        .await?
        .workflow)
}

/// Every card the registry at `url` lists.
async fn cards_from_registry(url: &str, config: &EngineConfig) -> Result<Vec<AgentCard>, Failure> {
    let http = service_http(config, url, "A2AFLOW_REGISTRY_TOKEN")?;
    RegistryClient::new(url, http)?.fetch_agent_cards().await
}

/// `discovery` bounded by the run's deadline: past it, a `workflow.timeout` failure.
async fn within<T>(
    deadline: tokio::time::Instant,
    budget: std::time::Duration,
    discovery: impl std::future::Future<Output = Result<T, Failure>>,
) -> Result<T, Failure> {
    match tokio::time::timeout_at(deadline, discovery).await {
        Ok(r) => r,
        Err(_) => Err(Failure::new(
            ErrorCode::WorkflowTimeout,
            format!(
                "discovery (workflow, registry, agent cards) did not finish within the run's \
                 timeout of {}s; nothing was run",
                budget.as_secs_f64()
            ),
        )
        .with_detail("timeoutMs", budget.as_millis() as u64)),
    }
}

/// The `--agent NAME=URL` values as `(name, url)` pairs.
/// What `run` and `runs resume` both take from their command line before anything is sent: the
/// route policy, the `NAME=URL` agents, and the `--events` file (created now, so a bad path costs
/// no remote work).
pub(crate) struct RunInputs {
    pub(crate) routes: RoutePolicy,
    pub(crate) named: Vec<(String, String)>,
    pub(crate) events_file: Option<std::io::BufWriter<std::fs::File>>,
}

impl RunInputs {
    /// Parses the routes and agents and creates the events file; an `Err` is a usage error.
    pub(crate) fn parse(
        routes: &str,
        agents: &[String],
        events: Option<&Path>,
    ) -> Result<Self, String> {
        let routes = RoutePolicy::parse(routes)?;
        let named = named_agents(agents)?;
        let events_file = match events {
            Some(path) => Some(std::io::BufWriter::new(
                std::fs::File::create(path)
                    .map_err(|e| format!("cannot create {}: {e}", path.display()))?,
            )),
            None => None,
        };
        Ok(RunInputs {
            routes,
            named,
            events_file,
        })
    }
}

/// The multi-thread runtime a command's run is driven on.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

pub(crate) fn named_agents(specs: &[String]) -> Result<Vec<(String, String)>, String> {
    specs
        .iter()
        .map(|spec| match spec.split_once('=') {
            Some((name, url)) if !name.trim().is_empty() && !url.trim().is_empty() => {
                Ok((name.trim().to_owned(), url.trim().to_owned()))
            }
            _ => Err(format!("--agent takes NAME=URL, got `{spec}`")),
        })
        .collect()
}

/// The engine configuration `run` (and `submit`) use: the `--config` file with the command
/// line's `--binding`, `--timeout`, `--credentials` and `--store` over it, validated.
pub(crate) fn engine_config(args: &RunArgs) -> Result<EngineConfig, Failure> {
    let mut config = crate::load_config(args.config.as_deref())?;
    if let Some(b) = &args.binding {
        // clap admitted only BindingName::CLI_NAMES.
        config.bindings = BindingName::parse(b).into_iter().collect();
    }
    if let Some(t) = args.timeout {
        config.timeouts.run_secs = t;
    }
    if let Some(c) = &args.credentials {
        config.credentials_file = Some(c.clone());
    }
    if let Some(store) = &args.store {
        config.store = Some(StoreLocation::parse(store)?);
    }
    config.validate()?;
    Ok(config)
}

/// Runs the subcommand; returns the exit code (0 success, 1 failure, 2 usage or setup error,
/// 130/143 after SIGINT/SIGTERM).
pub fn run(args: RunArgs) -> u8 {
    let from_file = match &args.file {
        Some(file) => match crate::workflow_file::read(file, &LoadOptions::LENIENT) {
            Ok(l) => Some(l.workflow),
            Err(e) => {
                report(&e);
                return e.exit_code();
            }
        },
        None => None,
    };
    if let Some(w) = &from_file
        && let Err(e) = validate(w)
    {
        report(e);
        return 1;
    }
    let mut config = match engine_config(&args) {
        Ok(c) => c,
        Err(f) => return usage(f),
    };
    // `--ui` without `--store`: a temporary store, deleted when the command ends.
    let temp_store = if args.ui && config.store.is_none() {
        match crate::run_ui::TempStore::create(&mut config) {
            Ok(t) => Some(t),
            Err(f) => return usage(f),
        }
    } else {
        None
    };
    if let Err(f) = config.validate() {
        return usage(f);
    }
    if args.gates == GatesArg::Park && config.store.is_none() {
        return usage(
            "--gates park needs --store PATH: a parked run stops at its gates and is answered \
             later with `a2aflow runs answer`",
        );
    }
    let RunInputs {
        routes,
        named,
        events_file,
    } = match RunInputs::parse(&args.routes, &args.agents, args.events.as_deref()) {
        Ok(i) => i,
        Err(e) => return usage(e),
    };
    let budget = match config.run_timeout() {
        Ok(b) => b,
        Err(f) => return usage(f),
    };
    let runtime = match runtime() {
        Ok(rt) => rt,
        Err(e) => return usage(e),
    };
    runtime.block_on(async move {
        let interrupts = match Interrupts::listen("run") {
            Ok(i) => i,
            Err(e) => return usage(format!("cannot listen for signals: {e}")),
        };
        let deadline = tokio::time::Instant::now() + budget;
        // The store is opened before anything is sent: a store that cannot be opened is a
        // setup error.
        let journal = match journal_of(&config).await {
            Ok(j) => j,
            Err(f) => return usage(f),
        };
        let workflow = match (from_file, &args.orchestrator, &args.workflow_id) {
            (Some(w), _, _) => w,
            (None, Some(url), Some(id)) => {
                match within(
                    deadline,
                    budget,
                    workflow_from_orchestrator(url, id, &config),
                )
                .await
                {
                    Ok(w) => match validate(&w) {
                        Ok(()) => w,
                        Err(e) => {
                            report(e);
                            return 1;
                        }
                    },
                    Err(f) => {
                        report(f);
                        return 1;
                    }
                }
            }
            _ => return usage("give a workflow FILE or --orchestrator URL --workflow-id ID"),
        };
        let mut cards = match &args.agents_dir {
            Some(dir) => match cards_from_dir(dir) {
                Ok(c) => c,
                Err(e) => return usage(e),
            },
            None => Vec::new(),
        };
        if let Some(url) = &args.registry {
            match within(deadline, budget, cards_from_registry(url, &config)).await {
                Ok(listed) => cards.extend(listed),
                Err(f) => {
                    report(f);
                    return 1;
                }
            }
        }
        // Cards from --agents-dir and --registry carry no configured origin (their credentials go
        // only to allowed_origins); --agent NAME=URL binds NAME's credentials to URL's origin.
        let mut agents: Vec<AgentEndpoint> =
            cards.iter().cloned().map(AgentEndpoint::from).collect();
        match within(deadline, budget, discover_agents(&named, &config)).await {
            Ok(discovered) => {
                cards.extend(discovered.iter().map(|a| a.card().clone()));
                agents.extend(discovered);
            }
            Err(f) => {
                report(f);
                return 1;
            }
        }
        if let Err(f) = check_agents(&workflow, cards.iter().map(|c| c.name.as_str())) {
            return usage(f);
        }
        // The run gets what discovery left of the budget.
        config.timeouts.run_secs = deadline
            .saturating_duration_since(tokio::time::Instant::now())
            .as_secs_f64()
            .max(0.001);
        // Tasks to workflows served by a2aflow carry this run's lineage (it is the root).
        let host = a2aflow_server::DelegatingControlPoint::new(
            Arc::new(DeclarativeControlPoint::new(
                routes,
                args.negotiation,
                negotiating_agents(&cards),
            )),
            &cards,
        );
        let input = RunInput {
            runtime_intent: args.intent.clone(),
        };
        let mut hooks = HostHooks::default();
        let mut page = None;
        if let Some(journal) = journal {
            // A temporary store is the page's business: stdout stays the result alone.
            if temp_store.is_none()
                && let Err(code) = announce(&journal.execution_id, args.format, &config)
            {
                return code;
            }
            hooks.run_options.execution_id = Some(journal.execution_id.clone());
            hooks.run_options.store = Some(journal.store.clone());
            if args.gates == GatesArg::Park {
                park_gates(&mut hooks.run_options);
            }
            if args.ui {
                let options = &mut hooks.run_options;
                match crate::run_ui::RunPage::start(
                    journal.store,
                    &journal.execution_id,
                    options,
                    args.gates,
                )
                .await
                {
                    Ok(p) => page = Some(p),
                    Err(f) => return usage(f),
                }
            }
        }
        let stream =
            match execute_workflow_stream(workflow, &agents, Arc::new(host), &config, input, hooks)
            {
                Ok(s) => s,
                Err(f) => {
                    report(f);
                    return 1;
                }
            };
        let signals = interrupts.clone();
        let code = follow(stream, interrupts, events_file, args.format).await;
        if let Some(page) = page {
            page.finish(args.ui_linger, &signals).await;
        }
        code
    })
}

/// The store a journaled run goes to, with the execution id minted for it.
struct Journal {
    execution_id: String,
    store: Arc<dyn RunStore>,
}

/// Opens the configured store (creating it on first use) and mints the run's execution id;
/// `None` without a store.
async fn journal_of(config: &EngineConfig) -> Result<Option<Journal>, Failure> {
    Ok(config.open_store().await?.map(|store| Journal {
        execution_id: format!("run-{}", a2aflow::model::a2a::new_context_id()),
        store,
    }))
}

/// Tells the user the id of a journaled run before it starts: with `--format json` the first
/// line on stdout (`{"executionId": "…"}`, flushed), else a note on stderr.
fn announce(execution_id: &str, format: OutputFormat, config: &EngineConfig) -> Result<(), u8> {
    match format {
        OutputFormat::Json => {
            let line = serde_json::json!({ "executionId": execution_id }).to_string();
            let mut out = std::io::stdout().lock();
            writeln!(out, "{}", crate::terminal::json(&line))
                .and_then(|()| out.flush())
                .map_err(|_| 1)
        }
        OutputFormat::Text => {
            let path = config
                .store
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default();
            eprintln!(
                "a2aflow run: journaling run {} in {}",
                inline(execution_id),
                inline(&path)
            );
            Ok(())
        }
    }
}

/// Follows a run's events to its end (progress on stderr in text mode, `--events` lines, a
/// first SIGINT/SIGTERM cancels it), prints its result as `format` says and returns the exit
/// code (0 success, 1 failure, 3 parked at its open gates, 130/143 after a signal).
pub(crate) async fn follow(
    mut stream: EventStream,
    interrupts: Interrupts,
    mut events_file: Option<std::io::BufWriter<std::fs::File>>,
    format: OutputFormat,
) -> u8 {
    let mut progress = (format == OutputFormat::Text).then(|| LiveProgress::on(Stream::Stderr));
    interrupts.arm();
    let mut cancelled = false;
    loop {
        let event = tokio::select! {
            event = stream.next() => event,
            () = interrupts.first(), if !cancelled => {
                // Best-effort CancelTask for every non-final task, bounded by the engine's
                // cancel_timeout_secs; the run then ends with workflow.cancelled.
                stream.cancel();
                cancelled = true;
                continue;
            }
        };
        let Some(event) = event else { break };
        if let Some(out) = events_file.as_mut()
            && let Ok(line) = serde_json::to_string(&event)
        {
            let _ = writeln!(out, "{line}");
        }
        if let Some(progress) = progress.as_mut() {
            progress.event(&event);
        }
    }
    if let Some(progress) = progress {
        progress.finish();
    }
    if let Some(mut out) = events_file {
        let _ = out.flush();
    }
    let result = stream.result().await;
    let parked = parked_gates(&result);
    match format {
        OutputFormat::Json => match serde_json::to_string_pretty(&result) {
            Ok(json) => println!("{}", crate::terminal::json(&json)),
            Err(e) => return usage(format!("cannot render the result: {e}")),
        },
        OutputFormat::Text if parked.is_some() => {
            println!(
                "run {} parked at its open gates",
                inline(&result.execution_id)
            );
            print!("{}", gates_text(parked.unwrap_or_default()));
        }
        OutputFormat::Text => {
            let verdict = if result.success {
                "succeeded"
            } else {
                "failed"
            };
            println!("run {} {verdict}", inline(&result.execution_id));
            if let Some(f) = &result.failure {
                print!("{}", crate::failure_text::describe(f, "  "));
            }
        }
    }
    match interrupts.exit_status() {
        Some(status) => status,
        None if result.success => 0,
        None if parked.is_some() => PARKED,
        None => 1,
    }
}

/// The open gates of a run that parked (`workflow.parked`), `None` for any other result.
fn parked_gates(result: &a2aflow::model::ExecutionResult) -> Option<&[serde_json::Value]> {
    let f = result.failure.as_ref()?;
    if !f.is(a2aflow::model::ErrorCode::WorkflowParked) {
        return None;
    }
    Some(
        f.details
            .get("openGates")?
            .as_array()
            .map_or(&[], Vec::as_slice),
    )
}

/// The open gates as lines (local task id, gate, agent, the agent's text), everything escaped.
pub(crate) fn gates_text(gates: &[serde_json::Value]) -> String {
    let mut out = String::from("gates\n");
    let field = |g: &serde_json::Value, k: &str| inline(g[k].as_str().unwrap_or("-"));
    for g in gates {
        out.push_str(&format!(
            "  {}  {}  {}  {}\n",
            field(g, "localTaskId"),
            field(g, "gate"),
            field(g, "agent"),
            field(g, "text"),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap

    use super::*;

    #[test]
    fn a_card_file_with_a_legacy_security_scheme_loads_like_a_fetched_card() {
        let dir = tempfile::tempdir().unwrap();
        let card = serde_json::json!({
            "name": "legacy", "description": "d", "version": "1",
            "supportedInterfaces": [{"url": "https://h/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {}, "defaultInputModes": [], "defaultOutputModes": [], "skills": [],
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        });
        std::fs::write(dir.path().join("legacy.json"), card.to_string()).unwrap();
        let cards = cards_from_dir(dir.path()).unwrap();
        let schemes = cards[0].security_schemes.clone().unwrap_or_default();
        assert!(schemes.contains_key("bearer"), "{schemes:?}");
    }

    #[test]
    fn a_card_file_whose_scheme_cannot_be_mapped_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("odd.json"),
            r#"{"name":"odd","securitySchemes":{"s":{"type":"carrier-pigeon"}}}"#,
        )
        .unwrap();
        let e = cards_from_dir(dir.path()).unwrap_err();
        assert!(e.contains("odd.json is not an agent card"), "{e}");
    }
}
