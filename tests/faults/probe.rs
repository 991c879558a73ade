//! Running one cell: servers, configuration, the run or the protocol call, and the checks.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use a2aflow::a2at::Performative;
use a2aflow::config::{BindingName, Timeouts};
use a2aflow::engine::A2aEngineClient;
use a2aflow::kernel::{
    CallbackError, ControlPoint, GateBoard, GatePolicy, RunInput, RunOptions, run,
};
use a2aflow::model::a2a::{
    self, AgentCard, CancelTaskRequest, Message, Part, Role, SendMessageConfiguration,
    SendMessageRequest, SendMessageResponse, SubscribeToTaskRequest,
};
use a2aflow::model::{
    Backoff, ExecutionResult, Failure, LoadOptions, MessageContent, NegotiationReply,
    NegotiationRequest, RetryPolicy, StepStatus, TaskOutcomeStatus, TaskRequest, TaskResult,
    load_workflow_str,
};
use a2aflow::protocol::auth::{AgentAuth, AuthProvider, AuthRequest};
use a2aflow::protocol::{Binding as WireBinding, CallOptions, HttpClient, Transport};
use a2aflow::testkit::{
    AgentSpec, Binding, Fault, NEGOTIATION_T_URI, SilentServer, TestServer, TlsOptions,
};
use a2aflow::{EngineConfig, HostHooks, execute_workflow, fetch_agent_cards};
use futures_util::StreamExt;

use crate::cells::{Cell, Expect, Place, Trouble, Wire};
use crate::hostile;

/// The run deadline every cell is configured with.
const RUN: Duration = Duration::from_secs(5);
/// How far past its deadline a cell may end.
const BOUND: Duration = Duration::from_secs(3);
/// How long connections and tasks get to wind down after a cell.
const SETTLE: Duration = Duration::from_secs(3);
/// Response size limits configured (the oversize faults send far more).
const LIMIT: usize = 64 * 1024;
/// The artifact cap configured (a flood's chunks pass it after a few).
const ARTIFACT_CAP: usize = 4 * LIMIT;
/// The deadline of a probed SubscribeToTask stream.
const SUBSCRIBE_DEADLINE: Duration = Duration::from_secs(3);

/// Runs one cell on a runtime of its own; panics become failures.
pub fn run_cell(index: usize, cell: &Cell) -> Result<(), String> {
    let body = std::panic::AssertUnwindSafe(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("runtime: {e}"))?;
        let verdict = rt.block_on(async {
            match tokio::time::timeout(RUN * 4, cell_body(index, cell)).await {
                Ok(v) => v,
                Err(_) => Err("the cell hung past four times its deadline".to_owned()),
            }
        });
        drop(rt);
        verdict
    });
    std::panic::catch_unwind(body).unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        Err(format!("panicked: {msg}"))
    })
}

/// Shows that the detectors the cells rely on can fail: a task left pending is counted as
/// alive, and a connection left open is counted by the server.
pub fn self_check() -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    rt.block_on(async {
        let server = TestServer::single(AgentSpec::new("probe"))
            .await
            .map_err(|e| e.to_string())?;
        let socket = tokio::net::TcpStream::connect(server.addr())
            .await
            .map_err(|e| e.to_string())?;
        if !wait_until(|| server.open_connections() == 1).await {
            return Err("an open connection was not counted".to_owned());
        }
        drop(socket);
        if !wait_until(|| server.open_connections() == 0).await {
            return Err("a closed connection was still counted".to_owned());
        }
        server.shutdown().await.map_err(|e| e.to_string())?;
        drop(server);
        let metrics = tokio::runtime::Handle::current().metrics();
        if !wait_until(|| metrics.num_alive_tasks() == 0).await {
            return Err("tasks alive after the server shut down".to_owned());
        }
        let leaked = tokio::spawn(std::future::pending::<()>());
        if metrics.num_alive_tasks() != 1 {
            return Err("a pending task was not counted as alive".to_owned());
        }
        leaked.abort();
        Ok(())
    })
}

fn wire_of(cell: &Cell) -> Option<Binding> {
    match cell.wire {
        Wire::Any => None,
        Wire::JsonRpc => Some(Binding::JsonRpc),
        Wire::Rest => Some(Binding::HttpJson),
        Wire::Grpc => Some(Binding::Grpc),
    }
}

fn faulty_spec(cell: &Cell) -> AgentSpec {
    let streaming = matches!(
        cell.place,
        Place::Stream | Place::Subscribe | Place::Cancel | Place::EngineCancel
    );
    let mut spec = AgentSpec::new("faulty").streaming(streaming);
    if let Some(b) = wire_of(cell) {
        spec = spec.bindings(&[b]);
    }
    if cell.place == Place::NegotiationReply {
        spec = spec.extension(NEGOTIATION_T_URI, false);
    }
    if hostile::is_hostile(cell) {
        spec = spec.require_auth(a2aflow::testkit::Credential::Bearer(hostile::TOKEN.into()));
    }
    spec
}

fn config(cell: &Cell, ca_bundle: Option<std::path::PathBuf>) -> EngineConfig {
    let mut config = EngineConfig::default();
    match cell.wire {
        Wire::Any => {}
        Wire::JsonRpc => config.bindings = vec![BindingName::JsonRpc],
        Wire::Rest => config.bindings = vec![BindingName::Rest],
        // The faulty agent serves gRPC only; the healthy one is reached on JSON-RPC.
        Wire::Grpc => config.bindings = vec![BindingName::Grpc, BindingName::JsonRpc],
    }
    config.timeouts = Timeouts {
        connect_secs: 1.0,
        request_secs: 1.0,
        idle_stream_secs: 1.0,
        run_secs: RUN.as_secs_f64(),
    };
    if cell.trouble == Trouble::SilentTls {
        // Far apart, so the phase of the timeout says which one fired.
        config.timeouts.connect_secs = 0.3;
        config.timeouts.request_secs = 4.0;
    }
    config.limits.max_response_body_bytes = LIMIT;
    config.limits.max_sse_event_bytes = LIMIT;
    config.limits.max_artifact_bytes = ARTIFACT_CAP;
    config.poll_interval_ms = 100;
    config.negotiation.max_exchanges = 2;
    // The best-effort CancelTask after the deadline is bounded by this; the cells' time bound
    // (deadline + 3 s) leaves room for it.
    config.cancel_timeout_secs = 1.0;
    config.tls.ca_bundle = ca_bundle;
    if cell.trouble == Trouble::FailsTwiceThenSucceeds {
        config.retry = Some(RetryPolicy {
            attempts: 3,
            backoff: Backoff {
                initial: Duration::from_millis(50),
                ..Backoff::default()
            },
            on: vec!["a2a.task_failed".into()],
        });
    }
    config
}

/// The sends of a retried task: three, in one context, each naming the earlier attempts' tasks
/// in `referenceTaskIds` (none for the first).
fn check_retried(faulty: &TestServer) -> Result<(), String> {
    let sent: Vec<serde_json::Value> = faulty
        .requests()
        .into_iter()
        .filter(|r| {
            matches!(
                r.route,
                Some(a2aflow::testkit::Route::Send | a2aflow::testkit::Route::Stream)
            )
        })
        .filter_map(|r| {
            let body = r.body?;
            body.get("params")
                .and_then(|p| p.get("message"))
                .or_else(|| body.get("message"))
                .cloned()
        })
        .collect();
    if sent.len() != 3 {
        return Err(format!("expected 3 attempts, the agent got {}", sent.len()));
    }
    let context = &sent[0]["contextId"];
    let mut earlier: Vec<serde_json::Value> = Vec::new();
    for (n, m) in sent.iter().enumerate() {
        if &m["contextId"] != context || !context.is_string() {
            return Err(format!("attempt {} went in another context: {m}", n + 1));
        }
        let refs = match m.get("referenceTaskIds") {
            None => Vec::new(),
            Some(v) => v.as_array().cloned().unwrap_or_default(),
        };
        // Attempt n+1 names the n earlier tasks: the previous attempt's list, and one more.
        if refs.len() != n || !refs.starts_with(&earlier) || !refs.iter().all(|r| r.is_string()) {
            return Err(format!(
                "attempt {} references {refs:?}, expected the {n} earlier attempts' tasks",
                n + 1
            ));
        }
        earlier = refs;
    }
    Ok(())
}

/// Sends a wrong bearer token on every request.
struct WrongToken;

#[async_trait::async_trait]
impl AuthProvider for WrongToken {
    async fn headers(&self, _request: AuthRequest<'_>) -> Result<http::HeaderMap, Failure> {
        let mut h = http::HeaderMap::new();
        h.insert(
            http::header::AUTHORIZATION,
            http::HeaderValue::from_static("Bearer wrong-token"),
        );
        Ok(h)
    }
}

/// The host: sends the description as text (activating Negotiation-T for the negotiating
/// agent), rejects every proposal, and arms the reply fault when the first proposal arrives.
struct Host {
    negotiating: bool,
    server: Option<Arc<TestServer>>,
    reply_fault: Option<Fault>,
    armed: AtomicBool,
}

#[async_trait::async_trait]
impl ControlPoint for Host {
    async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
        if self.negotiating && request.agent == "faulty" {
            return Ok(a2aflow_tests::negotiation_activating(
                request.description.into(),
            ));
        }
        Ok(MessageContent::text(request.description))
    }

    async fn on_self_task(&self, _request: TaskRequest) -> Result<TaskResult, CallbackError> {
        Err(CallbackError::Other("no SELF_LOOP steps here".into()))
    }

    async fn on_negotiation(
        &self,
        request: NegotiationRequest,
    ) -> Result<NegotiationReply, CallbackError> {
        if let (Some(fault), Some(server)) = (&self.reply_fault, &self.server)
            && !self.armed.swap(true, Ordering::SeqCst)
        {
            server
                .set_fault("faulty", a2aflow::testkit::Route::Send, fault.clone())
                .map_err(|e| CallbackError::Other(e.to_string()))?;
        }
        a2aflow_tests::negotiation_reply(&request, Performative::Reject, "REJECT")
    }
}

pub(crate) fn workflow(with_faulty: Option<&str>) -> a2aflow::model::Workflow {
    let healthy =
        r#"{"name": "healthy", "subtasks": [{"agent": "healthy", "description": "task fine"}]}"#;
    let steps = match with_faulty {
        Some(text) => format!(
            r#"{{"name": "faulty", "subtasks": [{{"agent": "faulty", "description": "{text}"}}]}}, {healthy}"#
        ),
        None => healthy.to_owned(),
    };
    let doc = format!(r#"{{"id": "faults", "steps": [{steps}]}}"#);
    load_workflow_str(&doc, LoadOptions::STRICT)
        .expect("the matrix workflow is valid")
        .workflow
}

fn step_status(result: &ExecutionResult, name: &str) -> Option<StepStatus> {
    result
        .steps
        .iter()
        .find(|s| s.step_name == name)
        .map(|s| s.status)
}

/// The healthy branch must have completed.
fn healthy_completed(result: &ExecutionResult) -> Result<(), String> {
    match step_status(result, "healthy") {
        Some(StepStatus::Completed) => Ok(()),
        other => Err(format!("healthy branch ended {other:?}, not Completed")),
    }
}

pub(crate) fn check_code(expect: Expect, got: Option<&str>, what: &str) -> Result<(), String> {
    match expect {
        Expect::Code(code) if got == Some(code) => Ok(()),
        Expect::Recovers if got.is_none() => Ok(()),
        _ => Err(format!("expected {expect:?}, {what} gave {got:?}")),
    }
}

/// [`check_code`], and for [`Expect::Timeout`] the timeout's `phase` detail too.
fn check_failure(
    expect: Expect,
    code: Option<&str>,
    details: Option<&serde_json::Map<String, serde_json::Value>>,
    what: &str,
) -> Result<(), String> {
    let Expect::Timeout(phase) = expect else {
        return check_code(expect, code, what);
    };
    let got_phase = details
        .and_then(|d| d.get("phase"))
        .and_then(|p| p.as_str());
    if code == Some("a2a.timeout") && got_phase == Some(phase) {
        Ok(())
    } else {
        Err(format!(
            "expected {expect:?}, {what} gave {code:?} with phase {got_phase:?}"
        ))
    }
}

/// Points every interface of `card` at the silent server.
fn point_at(card: &mut AgentCard, silent: &SilentServer) {
    for (i, interface) in card.supported_interfaces.iter_mut().enumerate() {
        interface.url = silent.https_url(&format!("/agents/faulty/{i}"));
    }
}

async fn wait_until(mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + SETTLE;
    while Instant::now() < until {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    done()
}

async fn cell_body(index: usize, cell: &Cell) -> Result<(), String> {
    let tls = cell.trouble == Trouble::WrongCertificate;
    let faulty = Arc::new(
        TestServer::builder()
            .agent(faulty_spec(cell))
            .bind_tls(tls.then(|| TlsOptions::new().wrong_host(true)))
            .spawn()
            .await
            .map_err(|e| format!("faulty server: {e}"))?,
    );
    let healthy = TestServer::single(AgentSpec::new("healthy").streaming(false))
        .await
        .map_err(|e| format!("healthy server: {e}"))?;
    let ca_dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let ca_bundle = match faulty.ca_pem() {
        Some(pem) => {
            let path = ca_dir.path().join(format!("ca-{index}.pem"));
            std::fs::write(&path, pem).map_err(|e| e.to_string())?;
            Some(path)
        }
        None => None,
    };
    let config = config(cell, ca_bundle);
    let silent = match cell.trouble {
        Trouble::SilentTls => Some(
            SilentServer::spawn()
                .await
                .map_err(|e| format!("silent server: {e}"))?,
        ),
        _ => None,
    };

    let started = Instant::now();
    let verdict = exercise(cell, &faulty, &healthy, silent.as_ref(), &config).await;
    let elapsed = started.elapsed();

    let mut problems: Vec<String> = verdict.err().into_iter().collect();
    if elapsed > RUN + BOUND {
        problems.push(format!(
            "took {elapsed:?}, past the {RUN:?} deadline plus {BOUND:?}"
        ));
    }
    if !wait_until(|| faulty.open_connections() == 0 && healthy.open_connections() == 0).await {
        problems.push(format!(
            "connections left open: faulty {}, healthy {}",
            faulty.open_connections(),
            healthy.open_connections()
        ));
    }
    if let Some(silent) = &silent {
        if silent.total_connections() == 0 {
            problems.push("nothing connected to the silent server".to_owned());
        }
        if !wait_until(|| silent.open_connections() == 0).await {
            problems.push(format!(
                "connections left open on the silent server: {}",
                silent.open_connections()
            ));
        }
        silent.shutdown().await.map_err(|e| e.to_string())?;
    }
    drop(silent);
    faulty.shutdown().await.map_err(|e| e.to_string())?;
    healthy.shutdown().await.map_err(|e| e.to_string())?;
    drop(faulty);
    drop(healthy);
    let metrics = tokio::runtime::Handle::current().metrics();
    if !wait_until(|| metrics.num_alive_tasks() == 0).await {
        problems.push(format!(
            "{} tokio tasks still alive after the cell",
            metrics.num_alive_tasks()
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

async fn exercise(
    cell: &Cell,
    faulty: &Arc<TestServer>,
    healthy: &TestServer,
    silent: Option<&SilentServer>,
    config: &EngineConfig,
) -> Result<(), String> {
    let healthy_cards = fetch_agent_cards(&[healthy.card_url("healthy")], config)
        .await
        .map_err(|f| format!("healthy card fetch failed: {f}"))?;
    let tls = cell.trouble == Trouble::WrongCertificate;
    if hostile::is_hostile(cell) {
        let (hostile, run) = tokio::join!(
            hostile::exercise(cell, faulty, &healthy_cards, config),
            run_healthy(&healthy_cards, config),
        );
        hostile?;
        return run;
    }
    match cell.place {
        Place::Card => {
            if let Trouble::Inject(fault) = &cell.trouble {
                faulty
                    .set_fault("faulty", cell.route(), fault.clone())
                    .map_err(|e| e.to_string())?;
            }
            let urls = [match silent {
                Some(s) => s.https_url("/agents/faulty/.well-known/agent-card.json"),
                None => faulty.card_url("faulty"),
            }];
            let (fetched, run) = tokio::join!(
                fetch_agent_cards(&urls, config),
                run_healthy(&healthy_cards, config),
            );
            let err = fetched.err();
            check_failure(
                cell.expect,
                err.as_ref().map(|f| f.code.as_str()),
                err.as_ref().map(|f| &f.details),
                "the card fetch",
            )?;
            run
        }
        Place::Subscribe | Place::Cancel
            if !matches!(cell.trouble, Trouble::ResubscribeFault(_)) =>
        {
            let card = fetch_agent_cards(&[faulty.card_url("faulty")], config)
                .await
                .map_err(|f| format!("faulty card fetch failed: {f}"))?
                .remove(0);
            let (probed, run) = tokio::join!(
                probe_protocol(cell, faulty, &card, config),
                run_healthy(&healthy_cards, config),
            );
            check_code(cell.expect, probed?.as_deref(), "the protocol call")?;
            run
        }
        Place::Send
        | Place::Poll
        | Place::Stream
        | Place::Subscribe
        | Place::Cancel
        | Place::NegotiationReply
        | Place::EngineCancel
        | Place::GateAnswer => {
            let mut faulty_card = if tls {
                let mut insecure = config.clone();
                insecure.tls.insecure_skip_verify = true;
                insecure.tls.ca_bundle = None;
                fetch_agent_cards(&[faulty.card_url("faulty")], &insecure).await
            } else {
                fetch_agent_cards(&[faulty.card_url("faulty")], config).await
            }
            .map_err(|f| format!("faulty card fetch failed: {f}"))?
            .remove(0);
            if let Some(silent) = silent {
                point_at(&mut faulty_card, silent);
            }
            let mut reply_fault = None;
            if let Trouble::ResubscribeFault(fault) = &cell.trouble {
                faulty
                    .set_fault_times(
                        "faulty",
                        a2aflow::testkit::Route::Stream,
                        Fault::ResetMidStream { after_events: 1 },
                        1,
                    )
                    .map_err(|e| e.to_string())?;
                faulty
                    .set_fault("faulty", cell.route(), fault.clone())
                    .map_err(|e| e.to_string())?;
            }
            let mut gate_fault = None;
            if let Trouble::Inject(fault) = &cell.trouble {
                if cell.place == Place::NegotiationReply {
                    reply_fault = Some(fault.clone());
                } else if cell.place == Place::GateAnswer {
                    gate_fault = Some(fault.clone());
                } else {
                    faulty
                        .set_fault("faulty", cell.route(), fault.clone())
                        .map_err(|e| e.to_string())?;
                }
            }
            let text = match (&cell.trouble, cell.place) {
                (Trouble::AuthRequiredTask, _) => "auth please",
                (Trouble::FailsTwiceThenSucceeds, _) => "flaky 2 retried",
                (_, Place::NegotiationReply) => "negotiate terms",
                (_, Place::Stream | Place::Subscribe) => "stream three chunks",
                (_, Place::Poll) => "slow 0.3 polled",
                (_, Place::EngineCancel) => "hang past the deadline",
                (_, Place::GateAnswer) => "input which city",
                _ => "task sent",
            };
            let host = Host {
                negotiating: cell.place == Place::NegotiationReply,
                server: Some(Arc::clone(faulty)),
                reply_fault,
                armed: AtomicBool::new(false),
            };
            let cards = vec![faulty_card, healthy_cards[0].clone()];
            let mut hooks = HostHooks {
                auth_provider: Some(Arc::new(WrongToken)),
                ..HostHooks::default()
            };
            let answering = (cell.place == Place::GateAnswer).then(|| {
                let board = GateBoard::new();
                hooks.run_options.gate_policy = GatePolicy::Park;
                hooks.run_options.gate_board = Some(board.clone());
                hooks.run_options.execution_id = Some(GATED_RUN.into());
                tokio::spawn(answer_the_gate(board, Arc::clone(faulty), gate_fault))
            });
            let result = if cell.place == Place::Poll {
                run_polling(workflow(Some(text)), &cards, Arc::new(host), config).await?
            } else {
                execute_workflow(
                    workflow(Some(text)),
                    &cards,
                    Arc::new(host),
                    config,
                    RunInput::default(),
                    hooks,
                )
                .await
                .map_err(|f| format!("construction failed: {f}"))?
            };
            if let Some(answering) = answering {
                answering.abort();
                if matches!(answering.await, Ok(false)) {
                    return Err("the gate never opened".into());
                }
            }
            healthy_completed(&result)?;
            if cell.trouble == Trouble::FailsTwiceThenSucceeds {
                check_retried(faulty)?;
            }
            let step = result
                .steps
                .iter()
                .find(|s| s.step_name == "faulty")
                .ok_or("no faulty step in the result")?;
            let task = step.task_results.first().ok_or("faulty step has no task")?;
            let keeps_alive = matches!(
                cell.trouble,
                Trouble::Inject(Fault::KeepAliveForever { .. })
            );
            if (cell.place == Place::EngineCancel || keeps_alive)
                && !faulty
                    .requests()
                    .iter()
                    .any(|r| r.route == Some(a2aflow::testkit::Route::Cancel))
            {
                return Err("the engine sent no CancelTask at the deadline".into());
            }
            if matches!(cell.trouble, Trouble::ResubscribeFault(_)) {
                let requests = faulty.requests();
                // A recovered branch fell back to polling; a failed one met its fault on the
                // resubscribed stream (and must not have polled past it).
                let polled = cell.expect == Expect::Recovers;
                for (route, wanted) in [
                    (a2aflow::testkit::Route::Subscribe, true),
                    (a2aflow::testkit::Route::Get, polled),
                ] {
                    if requests.iter().any(|r| r.route == Some(route)) != wanted {
                        let what = if wanted { "never reached" } else { "reached" };
                        return Err(format!("the engine {what} {route:?}"));
                    }
                }
            }
            match cell.expect {
                Expect::Recovers if task.status == TaskOutcomeStatus::Completed => Ok(()),
                _ => check_failure(
                    cell.expect,
                    task.error_code.as_deref(),
                    Some(&task.error_details),
                    "the faulty branch",
                )
                .map_err(|e| format!("{e} (status {:?}: {:?})", task.status, task.error)),
            }
        }
    }
}

/// The execution id of a run whose gate the probe answers.
const GATED_RUN: &str = "faults-gated";

/// Waits for the faulty task's gate, arms `fault` on the faulty agent's send route, then answers
/// the gate; true once it answered (bounded by the run's own deadline: aborted after the run).
async fn answer_the_gate(board: GateBoard, faulty: Arc<TestServer>, fault: Option<Fault>) -> bool {
    loop {
        if let Some(gate) = board.open_gates(GATED_RUN).into_iter().next() {
            if let Some(fault) = fault
                && faulty
                    .set_fault("faulty", a2aflow::testkit::Route::Send, fault)
                    .is_err()
            {
                return false;
            }
            let answer = MessageContent::text("Paris");
            return board.answer(GATED_RUN, &gate.local_task_id, answer).is_ok();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The facade always blocks on non-streaming sends, so GetTask polling is reached through the
/// lower-level path: the engine client with `returnImmediately` on, run by the kernel.
async fn run_polling(
    workflow: a2aflow::model::Workflow,
    cards: &[AgentCard],
    host: Arc<Host>,
    config: &EngineConfig,
) -> Result<ExecutionResult, String> {
    let preference = config.binding_preference();
    let client_config = config
        .client_config()
        .map_err(|f| f.to_string())?
        .with_return_immediately(true);
    let mut client = A2aEngineClient::new(client_config).map_err(|f| f.to_string())?;
    for card in cards {
        let transport = wrong_token_transport(card, config, &preference)?;
        client
            .add_agent(card, transport)
            .map_err(|f| f.to_string())?;
    }
    let options = RunOptions {
        timeout: config.run_timeout().map_err(|f| f.to_string())?,
        ..RunOptions::default()
    };
    Ok(run(
        workflow,
        RunInput::default(),
        host,
        Arc::new(client),
        options,
    )
    .await)
}

/// A transport to `card` on the preferred binding, with the configured limits and the
/// `WrongToken` credential provider, on an HTTP client of its own.
fn wrong_token_transport(
    card: &AgentCard,
    config: &EngineConfig,
    preference: &[WireBinding],
) -> Result<Arc<dyn Transport>, String> {
    let (_, interface) =
        a2aflow::protocol::select_interface(card, preference).map_err(|e| e.to_string())?;
    let auth = AgentAuth::builder(Arc::new(card.clone()), interface.url.clone())
        .provider(Arc::new(WrongToken))
        .build()
        .map_err(|e| e.to_string())?;
    let http = HttpClient::builder()
        .limits(config.limits().map_err(|e| e.to_string())?)
        .request_headers(Arc::new(auth))
        .build()
        .map_err(|e| e.to_string())?;
    a2aflow::protocol::connect(card, &http, preference).map_err(|e| e.to_string())
}

async fn run_healthy(cards: &[AgentCard], config: &EngineConfig) -> Result<(), String> {
    let host = Host {
        negotiating: false,
        server: None,
        reply_fault: None,
        armed: AtomicBool::new(false),
    };
    let result = execute_workflow(
        workflow(None),
        cards,
        Arc::new(host),
        config,
        RunInput::default(),
        HostHooks::default(),
    )
    .await
    .map_err(|f| format!("healthy run construction failed: {f}"))?;
    healthy_completed(&result)
}

/// Starts a `hang` task over the protocol layer, injects the fault, and makes the call the cell
/// is about. Returns the stable code of the first error, or `None` if there was none.
async fn probe_protocol(
    cell: &Cell,
    faulty: &TestServer,
    card: &AgentCard,
    config: &EngineConfig,
) -> Result<Option<String>, String> {
    let preference: Vec<WireBinding> = config.binding_preference();
    let transport = wrong_token_transport(card, config, &preference)?;
    let request = SendMessageRequest {
        message: Message {
            message_id: a2a::new_message_id(),
            context_id: None,
            task_id: None,
            role: Role::User,
            parts: vec![Part::text("hang here")],
            metadata: None,
            extensions: None,
            reference_task_ids: None,
        },
        configuration: Some(SendMessageConfiguration {
            accepted_output_modes: None,
            task_push_notification_config: None,
            history_length: None,
            return_immediately: Some(true),
        }),
        metadata: None,
        tenant: None,
    };
    let options = CallOptions::default();
    let task_id = match transport
        .send_message(&request, &options)
        .await
        .map_err(|e| format!("starting the hang task failed: {e}"))?
    {
        SendMessageResponse::Task(t) => t.id,
        SendMessageResponse::Message(_) => return Err("hang answered with a message".into()),
    };
    if let Trouble::Inject(fault) = &cell.trouble {
        faulty
            .set_fault("faulty", cell.route(), fault.clone())
            .map_err(|e| e.to_string())?;
    }
    let code = match cell.place {
        Place::Cancel => transport
            .cancel_task(
                &CancelTaskRequest {
                    id: task_id.clone(),
                    metadata: None,
                    tenant: None,
                },
                &options,
            )
            .await
            .err()
            .map(|e| String::from(e.to_failure().code)),
        _ => subscribe_error(transport.as_ref(), &task_id, &options).await,
    };
    // The hang task is stopped cleanly so the server has nothing running.
    faulty.clear_faults("faulty").map_err(|e| e.to_string())?;
    let _ = transport
        .cancel_task(
            &CancelTaskRequest {
                id: task_id,
                metadata: None,
                tenant: None,
            },
            &options,
        )
        .await;
    Ok(code)
}

/// Subscribes and reads the stream until its first error (bounded by the run deadline).
async fn subscribe_error(
    transport: &dyn Transport,
    task_id: &str,
    options: &CallOptions,
) -> Option<String> {
    let request = SubscribeToTaskRequest {
        id: task_id.to_owned(),
        tenant: None,
    };
    // As the engine does, the stream is bounded by a deadline: idle time alone does not end a
    // stream whose bytes keep trickling in.
    let options = options
        .clone()
        .with_deadline(tokio::time::Instant::now() + SUBSCRIBE_DEADLINE);
    let mut stream = match transport.subscribe_to_task(&request, &options).await {
        Ok(s) => s,
        Err(e) => return Some(e.to_failure().code.into()),
    };
    let read = async {
        while let Some(item) = stream.next().await {
            if let Err(e) = item {
                return Some(e.to_failure().code.into());
            }
        }
        Some("(stream ended cleanly)".to_owned())
    };
    tokio::time::timeout(RUN, read)
        .await
        .unwrap_or(Some("(no error before the run deadline)".to_owned()))
}
