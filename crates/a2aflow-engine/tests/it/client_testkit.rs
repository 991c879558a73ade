//! The engine client end to end against the testkit agent server over real loopback HTTP
//! (JSON-RPC and HTTP+JSON, blocking and streaming), and through the kernel runner.

use a2aflow_engine::{A2aEngineClient, ClientConfig};
use a2aflow_kernel::{
    CallbackError, ControlPoint, DispatchRequest, EventEmitter, NegotiationHook, RemoteClient,
    RunInput, RunOptions, TaskFailure, TaskOutcome,
};
use a2aflow_model::a2a::{Part, PartContent, TaskState};
use a2aflow_model::{
    ErrorCode, ExecutionResult, Failure, LoadOptions, MessageContent, NegotiationReply,
    NegotiationRequest, StepType, TaskInput, TaskRequest, WorkflowInput, load_workflow_value,
};
use a2aflow_protocol::{Binding, CallOptions, HttpClient, Transport, connect};
use a2aflow_testkit::list_in_context;
use a2aflow_testkit::{AgentSpec, Fault, Proposal, Reply, Route, Script, TaskScript, TestServer};
use async_trait::async_trait;
use serde_json::{Map, Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const NEG: &str =
    "https://projects.tmforum.org/a2aproject/telecommunication/extensions/Negotiation-T/v1";

async fn transport_for(
    server: &TestServer,
    name: &str,
    rest: bool,
) -> (a2aflow_model::a2a::AgentCard, Arc<dyn Transport>) {
    let http = HttpClient::new().unwrap();
    let card = http
        .fetch_agent_card(&server.card_url(name), &CallOptions::default())
        .await
        .unwrap();
    let preference: &[Binding] = if rest {
        &[Binding::HttpJson]
    } else {
        Binding::DEFAULT_PREFERENCE
    };
    let transport = connect(&card, &http, preference).unwrap();
    (card, transport)
}

async fn client_for(
    server: &TestServer,
    names: &[&str],
    rest: bool,
    config: ClientConfig,
) -> A2aEngineClient {
    let mut client = A2aEngineClient::new(config).unwrap();
    for name in names {
        let (card, transport) = transport_for(server, name, rest).await;
        client.add_agent(&card, transport).unwrap();
    }
    client
}

fn neg_agent(name: &str) -> AgentSpec {
    AgentSpec::new(name).extension(NEG, false)
}

fn activated(text: &str) -> MessageContent {
    let mut c = MessageContent::text(text);
    c.extensions = vec![NEG.to_owned()];
    c
}

/// Serves `spec`, dispatches an activated `go` to it on JSON-RPC through a host that accepts
/// every proposal, and returns the server, the hook and the outcome (which must be a success).
async fn accepted(spec: AgentSpec) -> (TestServer, Hook, TaskOutcome) {
    let agent = spec.name().to_owned();
    let server = serve(spec).await;
    let client = client_for(&server, &[&agent], false, ClientConfig::default()).await;
    let hook = Hook::new(|r| Some(answer(r, "ACCEPT")));
    let out = dispatch(&client, &agent, activated("go"), &hook, LONG)
        .await
        .unwrap();
    (server, hook, out)
}

/// A testkit server with the one agent `spec`.
async fn serve(spec: AgentSpec) -> TestServer {
    TestServer::builder().agent(spec).spawn().await.unwrap()
}

/// The host's ending reply to a proposal: same id, round and maxRounds.
fn answer(request: &NegotiationRequest, performative: &str) -> NegotiationReply {
    let mut ctx = request.negotiation_context.clone();
    ctx["performative"] = json!(performative);
    let mut meta = Map::new();
    meta.insert(
        NEG.to_owned(),
        json!(format!("## Information Negotiation Result\n{performative}")),
    );
    meta.insert("negotiationContext".to_owned(), ctx);
    NegotiationReply::Send {
        content: MessageContent {
            parts: vec![Part::text("area: Songshanhu")],
            metadata: Some(meta),
            extensions: vec![NEG.to_owned()],
            context_id: None,
        },
    }
}

type Decide = Box<dyn Fn(&NegotiationRequest) -> Option<NegotiationReply> + Send + Sync>;

/// A hook deciding with a closure; `None` never answers.
struct Hook {
    decide: Decide,
    calls: Mutex<Vec<NegotiationRequest>>,
}

impl Hook {
    fn new(
        decide: impl Fn(&NegotiationRequest) -> Option<NegotiationReply> + Send + Sync + 'static,
    ) -> Self {
        Hook {
            decide: Box::new(decide),
            calls: Mutex::default(),
        }
    }
    fn rounds(&self) -> Vec<i64> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.negotiation_context["round"].as_i64().unwrap())
            .collect()
    }
}

#[async_trait]
impl NegotiationHook for Hook {
    async fn negotiate(&self, request: NegotiationRequest) -> Result<NegotiationReply, Failure> {
        let decided = (self.decide)(&request);
        self.calls.lock().unwrap().push(request);
        match decided {
            Some(r) => Ok(r),
            None => std::future::pending().await,
        }
    }
}

fn task_request(agent: &str) -> TaskRequest {
    TaskRequest {
        execution_id: "exec".into(),
        workflow_id: "wf".into(),
        step_name: "s".into(),
        step_type: StepType::AllSuccess,
        subtask_index: 0,
        local_task_id: "local".into(),
        agent: agent.into(),
        skill: Default::default(),
        description: "d".into(),
        input: TaskInput::default(),
        workflow_input: WorkflowInput::default(),
        remaining_ms: 0,
    }
}

async fn dispatch(
    client: &A2aEngineClient,
    agent: &str,
    content: MessageContent,
    hook: &Hook,
    budget: Duration,
) -> Result<TaskOutcome, TaskFailure> {
    let tr = task_request(agent);
    client
        .dispatch(DispatchRequest {
            execution_id: "exec",
            local_task_id: "local",
            agent,
            skill: "",
            content,
            context_id: None,
            continues: None,
            reference_task_ids: &[],
            task: &tr,
            deadline: Instant::now() + budget,
            cancel: CancellationToken::new(),
            negotiation: hook,
            events: EventEmitter::disabled(),
            journal: &a2aflow_kernel::NoJournal,
        })
        .await
}

fn count(server: &TestServer, agent: &str, route: Route) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.agent.as_deref() == Some(agent) && r.route == Some(route))
        .count()
}

fn state_of(server: &TestServer, agent: &str, task_id: &str) -> String {
    server.task(agent, task_id).unwrap()["status"]["state"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn data_outputs(o: &TaskOutcome) -> Vec<Value> {
    o.outputs
        .iter()
        .flat_map(|out| out.parts.iter())
        .filter_map(|p| match &p.content {
            PartContent::Data(v) => Some(v.clone()),
            _ => None,
        })
        .collect()
}

const LONG: Duration = Duration::from_secs(20);

/// REJECT in round 1 makes the agent propose round 2; ACCEPT completes.
fn reject_then_accept(r: &NegotiationRequest) -> Option<NegotiationReply> {
    let round = r.negotiation_context["round"].as_i64().unwrap();
    Some(answer(r, if round == 1 { "REJECT" } else { "ACCEPT" }))
}

async fn negotiation_across_rounds(streaming: bool, rest: bool) {
    let server = serve(neg_agent("neg").streaming(streaming)).await;
    let client = client_for(&server, &["neg"], rest, ClientConfig::default()).await;
    let hook = Hook::new(reject_then_accept);
    let out = dispatch(&client, "neg", activated("negotiate area"), &hook, LONG)
        .await
        .unwrap();
    assert_eq!(hook.rounds(), [1, 2]);
    assert_eq!(data_outputs(&out)[0]["negotiation"], json!("accepted"));
    assert_eq!(data_outputs(&out)[0]["round"], json!(2));
    let sends = count(
        &server,
        "neg",
        if streaming {
            Route::Stream
        } else {
            Route::Send
        },
    );
    assert_eq!(sends, 3, "initial send and one reply per round");
    let calls = hook.calls.lock().unwrap().clone();
    assert_eq!(calls[1].previous_exchanges.len(), 1);
    assert_eq!(calls[1].remote_task_id, out.remote_task_id);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn negotiation_across_rounds_jsonrpc_blocking() {
    negotiation_across_rounds(false, false).await;
}

#[tokio::test]
async fn negotiation_across_rounds_rest_streaming() {
    negotiation_across_rounds(true, true).await;
}

#[tokio::test]
async fn s_neg_02_repeated_proposal_is_observed_not_resent() {
    let proposal = Proposal::information(1, 3, "area");
    let again = proposal.clone();
    let spec = neg_agent("dup").streaming(false).script(move |_| {
        let again = again.clone();
        TaskScript::new()
            .propose(&again.clone(), move |_| {
                // The agent shows the same proposal once more before finishing.
                TaskScript::new()
                    .status_with(TaskState::InputRequired, again.to_message())
                    .delay(Duration::from_millis(300))
                    .working()
                    .complete_with("done")
                    .into()
            })
            .into()
    });
    let (server, hook, out) = accepted(spec).await;
    assert_eq!(
        hook.rounds(),
        [1],
        "the repeated proposal does not reach the host again"
    );
    assert_eq!(
        count(&server, "dup", Route::Send),
        2,
        "and is not answered again"
    );
    assert!(
        count(&server, "dup", Route::Get) >= 1,
        "it is observed by polling"
    );
    assert_eq!(
        state_of(&server, "dup", out.remote_task_id.as_deref().unwrap()),
        "TASK_STATE_COMPLETED"
    );
    drop(proposal);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn last_allowed_round_is_still_answerable() {
    let spec = neg_agent("last").script(|_| {
        TaskScript::new()
            .propose(&Proposal::information(3, 3, "area"), |_| {
                TaskScript::new()
                    .complete_with("agreed in the last round")
                    .into()
            })
            .into()
    });
    let (server, hook, _) = accepted(spec).await;
    assert_eq!(hook.rounds(), [3]);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn stop_fails_with_the_host_code_and_cancels_the_remote_task() {
    let server = serve(neg_agent("neg")).await;
    let client = client_for(&server, &["neg"], false, ClientConfig::default()).await;
    let hook = Hook::new(|_| {
        Some(NegotiationReply::Stop {
            code: "biz.area_unknown".into(),
            reason: "no such area".into(),
        })
    });
    let e = dispatch(&client, "neg", activated("negotiate"), &hook, LONG)
        .await
        .unwrap_err();
    assert_eq!(
        (e.failure.code.as_str(), e.failure.message.as_str()),
        ("biz.area_unknown", "no such area")
    );
    assert_eq!(count(&server, "neg", Route::Cancel), 1);
    assert_eq!(
        state_of(&server, "neg", e.remote_task_id.as_deref().unwrap()),
        "TASK_STATE_CANCELED"
    );
    assert_eq!(
        count(&server, "neg", Route::Stream),
        1,
        "no Abort is synthesised"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn s_neg_22_budget_exhaustion_fails_and_cancels() {
    let server = serve(neg_agent("neg")).await;
    let config = ClientConfig::default().with_max_negotiation_exchanges(1);
    let client = client_for(&server, &["neg"], true, config).await;
    let hook = Hook::new(|r| Some(answer(r, "REJECT")));
    let e = dispatch(&client, "neg", activated("negotiate"), &hook, LONG)
        .await
        .unwrap_err();
    assert!(e.failure.is(ErrorCode::NegotiationBudgetExhausted), "{e:?}");
    assert_eq!(hook.rounds(), [1]);
    assert_eq!(count(&server, "neg", Route::Cancel), 1);
    assert_eq!(
        state_of(&server, "neg", e.remote_task_id.as_deref().unwrap()),
        "TASK_STATE_CANCELED"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn s_neg_15_pre_task_mode_replies_without_task_id() {
    let spec = neg_agent("pre").streaming(false).script(|m| {
        if m.task_id().is_some() {
            return Script::reply_text("unexpected task id");
        }
        Reply::propose(&Proposal::information(1, 3, "area"))
            .then(|_| {
                TaskScript::new()
                    .complete_with("agreed before any task")
                    .into()
            })
            .into()
    });
    let (server, hook, out) = accepted(spec).await;
    assert_eq!(hook.rounds(), [1]);
    assert_eq!(hook.calls.lock().unwrap()[0].remote_task_id, None);
    let sends: Vec<Value> = server
        .requests()
        .into_iter()
        .filter(|r| r.route == Some(Route::Send))
        .map(|r| r.body.unwrap()["params"]["message"].clone())
        .collect();
    assert_eq!(sends.len(), 2);
    assert!(sends.iter().all(|m| m.get("taskId").is_none()));
    assert_eq!(sends[0]["contextId"], sends[1]["contextId"]);
    let texts: Vec<String> = out
        .outputs
        .iter()
        .flat_map(|o| o.parts.iter())
        .filter_map(|p| p.as_text().map(str::to_owned))
        .collect();
    assert_eq!(texts, ["agreed before any task"]);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn deadline_mid_negotiation_fails_and_cancels_without_a_late_reply() {
    let server = serve(neg_agent("neg")).await;
    let client = client_for(&server, &["neg"], false, ClientConfig::default()).await;
    let hook = Hook::new(|_| None);
    let e = dispatch(
        &client,
        "neg",
        activated("negotiate"),
        &hook,
        Duration::from_millis(800),
    )
    .await
    .unwrap_err();
    assert!(e.failure.is(ErrorCode::WorkflowTimeout));
    assert_eq!(count(&server, "neg", Route::Stream), 1);
    assert_eq!(count(&server, "neg", Route::Cancel), 1);
    assert_eq!(
        state_of(&server, "neg", e.remote_task_id.as_deref().unwrap()),
        "TASK_STATE_CANCELED"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn dropped_stream_is_resubscribed_and_chunks_assemble() {
    let server = serve(AgentSpec::new("s")).await;
    server
        .set_fault_times(
            "s",
            Route::Stream,
            Fault::ResetMidStream { after_events: 3 },
            1,
        )
        .unwrap();
    let client = client_for(&server, &["s"], false, ClientConfig::default()).await;
    let hook = Hook::new(|_| None);
    let out = dispatch(
        &client,
        "s",
        MessageContent::text("stream please"),
        &hook,
        LONG,
    )
    .await
    .unwrap();
    let text: String = out
        .outputs
        .iter()
        .flat_map(|o| o.parts.iter())
        .filter_map(Part::as_text)
        .collect();
    assert_eq!(text, "chunk-1 chunk-2 chunk-3");
    assert_eq!(
        count(&server, "s", Route::Stream),
        1,
        "the command is never resent"
    );
    assert!(count(&server, "s", Route::Subscribe) >= 1);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn auth_required_is_a_gate_left_open_for_attach() {
    let server = serve(AgentSpec::new("a").streaming(false)).await;
    let client = client_for(&server, &["a"], false, ClientConfig::default()).await;
    let hook = Hook::new(|_| None);
    let e = dispatch(&client, "a", MessageContent::text("auth me"), &hook, LONG)
        .await
        .unwrap_err();
    assert!(e.failure.is(ErrorCode::A2aAuthRequired));
    assert_eq!(e.failure.gate(), Some(a2aflow_model::Gate::AuthRequired));
    assert!(
        e.received_messages.last().unwrap().message.is_some(),
        "the evidence is kept"
    );
    assert_eq!(count(&server, "a", Route::Cancel), 0);
    let task_id = e.remote_task_id.clone().unwrap();
    assert_eq!(state_of(&server, "a", &task_id), "TASK_STATE_AUTH_REQUIRED");
    // Attaching again by context id finds the same gate.
    let again = client
        .attach(
            "a",
            e.context_id.as_deref().unwrap(),
            Instant::now() + LONG,
            CancellationToken::new(),
            EventEmitter::disabled(),
        )
        .await
        .unwrap_err();
    assert!(again.failure.is(ErrorCode::A2aAuthRequired));
    assert_eq!(again.remote_task_id.as_deref(), Some(task_id.as_str()));
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn attach_after_a_simulated_host_restart() {
    let server = serve(AgentSpec::new("w").streaming(false)).await;
    let first = client_for(&server, &["w"], false, ClientConfig::default()).await;
    let hook = Hook::new(|_| None);
    // The host "crashes" once its send reached the agent: the dispatch future is dropped.
    let context_id = {
        let sending = dispatch(
            &first,
            "w",
            MessageContent::text("slow 1 restart"),
            &hook,
            LONG,
        );
        tokio::pin!(sending);
        loop {
            tokio::select! {
                r = &mut sending => panic!("finished before the restart: {r:?}"),
                () = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
            if let Some(req) = server
                .requests()
                .into_iter()
                .find(|r| r.route == Some(Route::Send))
            {
                break req.body.unwrap()["params"]["message"]["contextId"]
                    .as_str()
                    .unwrap()
                    .to_owned();
            }
        }
    };
    drop(first);
    let restarted = client_for(&server, &["w"], false, ClientConfig::default()).await;
    let (_, transport) = transport_for(&server, "w", false).await;
    let list = list_in_context(&context_id);
    while transport
        .list_tasks(&list, &CallOptions::default())
        .await
        .unwrap()
        .tasks
        .is_empty()
    {
        tokio::task::yield_now().await;
    }
    let out = restarted
        .attach(
            "w",
            &context_id,
            Instant::now() + LONG,
            CancellationToken::new(),
            EventEmitter::disabled(),
        )
        .await
        .unwrap();
    assert_eq!(out.context_id.as_deref(), Some(context_id.as_str()));
    assert_eq!(data_outputs(&out)[0]["sleptSeconds"], json!(1.0));
    assert_eq!(count(&server, "w", Route::Send), 1, "attach sends nothing");
    server.shutdown().await.unwrap();
}

struct EchoHost;

#[async_trait]
impl ControlPoint for EchoHost {
    async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(MessageContent::text(request.description))
    }
}

#[tokio::test]
async fn s_cancel_09_any_success_loser_is_cancelled_remotely() {
    let server = TestServer::builder()
        .agent(AgentSpec::new("fast").streaming(false))
        .agent(AgentSpec::new("slow"))
        .spawn()
        .await
        .unwrap();
    let client = client_for(&server, &["fast", "slow"], false, ClientConfig::default()).await;
    let workflow = load_workflow_value(
        &json!({
            "id": "wf", "name": "any",
            "steps": [{"name": "race", "type": "ANY_SUCCESS", "subtasks": [
                {"agent": "slow", "description": "slow 30 loser"},
                {"agent": "fast", "description": "task winner"}
            ]}]
        }),
        LoadOptions::LENIENT,
    )
    .unwrap()
    .workflow;
    let options = RunOptions {
        timeout: Duration::from_secs(20),
        ..RunOptions::default()
    };
    let result = a2aflow_kernel::run(
        workflow,
        RunInput::default(),
        Arc::new(EchoHost),
        Arc::new(client),
        options,
    )
    .await;
    assert!(result.success, "{:?}", result.failure);
    let views = &result.steps[0].task_results;
    let loser = views.iter().find(|v| v.agent_name == "slow").unwrap();
    assert_eq!(loser.error_code.as_deref(), Some("workflow.cancelled"));
    assert_eq!(count(&server, "slow", Route::Cancel), 1);
    let slow_task = server
        .requests()
        .into_iter()
        .find(|r| r.agent.as_deref() == Some("slow") && r.route == Some(Route::Cancel))
        .and_then(|r| r.body)
        .unwrap();
    let id = slow_task["params"]["id"].as_str().unwrap().to_owned();
    assert_eq!(state_of(&server, "slow", &id), "TASK_STATE_CANCELED");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn agent_events_are_emitted_in_causal_order_through_the_runner() {
    let server = serve(neg_agent("neg")).await;
    let (result, events) = record_run(
        &server,
        "neg",
        "negotiate area",
        ClientConfig::default(),
        |r| answer(r, "ACCEPT"),
    )
    .await;
    assert!(result.success, "{:?}", result.failure);
    let names: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    let pos = |name: &str| names.iter().position(|n| *n == name).unwrap();
    let last = |name: &str| names.iter().rposition(|n| *n == name).unwrap();
    assert!(pos("task_request") < pos("agent_request"));
    assert!(pos("agent_request") < pos("agent_status_update"));
    assert!(pos("agent_status_update") < pos("negotiation_request"));
    assert!(pos("negotiation_request") < last("agent_request"));
    assert!(last("agent_request") < pos("agent_artifact_update"));
    assert_eq!(names.iter().filter(|n| **n == "agent_request").count(), 2);
    assert_eq!(names.iter().filter(|n| **n == "agent_response").count(), 1);
    assert!(pos("agent_response") < pos("task_response"));
    let request = &events[pos("agent_request")];
    assert_eq!(request.data["agent"], json!("neg"));
    assert_eq!(
        request.data["content"]["parts"][0]["text"],
        json!("negotiate area")
    );
    let response = &events[pos("agent_response")];
    assert_eq!(response.data["success"], json!(true));
    assert!(
        response.data["receivedMessages"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
    );
    server.shutdown().await.unwrap();
}

/// A host whose content activates Negotiation-T and whose negotiation answer is `reply`.
struct NegotiatingHost {
    reply: fn(&NegotiationRequest) -> NegotiationReply,
}

#[async_trait]
impl ControlPoint for NegotiatingHost {
    async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(activated(&request.description))
    }
    async fn on_negotiation(
        &self,
        request: NegotiationRequest,
    ) -> Result<NegotiationReply, CallbackError> {
        Ok((self.reply)(&request))
    }
}

/// Runs a one-subtask workflow through the kernel runner and returns its result and events.
async fn record_run(
    server: &TestServer,
    agent: &str,
    description: &str,
    config: ClientConfig,
    reply: fn(&NegotiationRequest) -> NegotiationReply,
) -> (ExecutionResult, Vec<a2aflow_model::Event>) {
    let client = client_for(server, &[agent], false, config).await;
    let workflow = load_workflow_value(
        &json!({"id": "wf", "name": "neg", "steps": [{"name": "s", "subtasks": [
            {"agent": agent, "description": description}]}]}),
        LoadOptions::LENIENT,
    )
    .unwrap()
    .workflow;
    let seen: Arc<Mutex<Vec<a2aflow_model::Event>>> = Arc::default();
    let sink = seen.clone();
    let options = RunOptions {
        timeout: Duration::from_secs(20),
        on_event: Some(Arc::new(move |e: &a2aflow_model::Event| {
            sink.lock().unwrap().push(e.clone())
        })),
        ..RunOptions::default()
    };
    let result = a2aflow_kernel::run(
        workflow,
        RunInput::default(),
        Arc::new(NegotiatingHost { reply }),
        Arc::new(client),
        options,
    )
    .await;
    let events = seen.lock().unwrap().clone();
    (result, events)
}

/// [`record_run`] for a run that must fail: its events and the first task's failure code.
async fn run_recorded(
    server: &TestServer,
    agent: &str,
    description: &str,
    config: ClientConfig,
    reply: fn(&NegotiationRequest) -> NegotiationReply,
) -> (Vec<a2aflow_model::Event>, Option<String>) {
    let (result, events) = record_run(server, agent, description, config, reply).await;
    assert!(!result.success);
    let code = result.steps[0].task_results[0].error_code.clone();
    (events, code)
}

/// The `negotiation_failed` events, after checking each follows a `negotiation_request` when
/// `after_request` is set.
fn negotiation_failures(events: &[a2aflow_model::Event], after_request: bool) -> Vec<Value> {
    let names: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    let failed: Vec<usize> = (0..names.len())
        .filter(|i| names[*i] == "negotiation_failed")
        .collect();
    if after_request {
        let request = names
            .iter()
            .position(|n| *n == "negotiation_request")
            .expect("a negotiation_request event");
        assert!(failed.iter().all(|i| *i > request), "{names:?}");
    }
    failed
        .into_iter()
        .map(|i| events[i].data.value().clone())
        .collect()
}

#[tokio::test]
async fn s_neg_08_a_reply_failing_the_checks_emits_negotiation_failed_once() {
    let server = serve(neg_agent("neg")).await;
    let (events, code) = run_recorded(
        &server,
        "neg",
        "negotiate area",
        ClientConfig::default(),
        |_| NegotiationReply::Send {
            content: MessageContent::text("plain text, no Negotiation-T"),
        },
    )
    .await;
    assert_eq!(code.as_deref(), Some("negotiation.invalid_context"));
    let failed = negotiation_failures(&events, true);
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0]["agent"], json!("neg"));
    assert_eq!(failed[0]["errorCode"], json!("negotiation.invalid_context"));
    assert_eq!(
        failed[0]["error"],
        json!("Negotiation reply must carry and activate Negotiation-T")
    );
    assert_eq!(count(&server, "neg", Route::Stream), 1, "no second send");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn stop_emits_negotiation_failed_with_the_host_code() {
    let server = serve(neg_agent("neg")).await;
    let (events, code) = run_recorded(
        &server,
        "neg",
        "negotiate area",
        ClientConfig::default(),
        |_| NegotiationReply::Stop {
            code: "biz.area_unknown".into(),
            reason: "no such area".into(),
        },
    )
    .await;
    assert_eq!(code.as_deref(), Some("biz.area_unknown"));
    let failed = negotiation_failures(&events, true);
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0]["errorCode"], json!("biz.area_unknown"));
    assert_eq!(failed[0]["error"], json!("no such area"));
    assert_eq!(failed[0]["exchange"], json!(0));
    assert!(failed[0]["remoteTaskId"].is_string());
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn budget_exhaustion_emits_negotiation_failed() {
    let server = serve(neg_agent("neg")).await;
    let config = ClientConfig::default().with_max_negotiation_exchanges(1);
    let (events, code) = run_recorded(&server, "neg", "negotiate area", config, |r| {
        answer(r, "REJECT")
    })
    .await;
    assert_eq!(code.as_deref(), Some("negotiation.budget_exhausted"));
    let names: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        names
            .iter()
            .filter(|n| **n == "negotiation_resolved")
            .count(),
        1
    );
    let failed = negotiation_failures(&events, true);
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(
        failed[0]["errorCode"],
        json!("negotiation.budget_exhausted")
    );
    assert_eq!(failed[0]["exchange"], json!(1));
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_invalid_context_emits_negotiation_failed_without_asking_the_host() {
    // Round 4 of 3: not a valid Propose, so the host is never asked.
    let spec = neg_agent("bad")
        .streaming(false)
        .script(|_| Reply::propose(&Proposal::information(4, 3, "area")).into());
    let server = serve(spec).await;
    let (events, code) = run_recorded(&server, "bad", "go", ClientConfig::default(), |_| {
        panic!("the host must not be asked")
    })
    .await;
    assert_eq!(code.as_deref(), Some("negotiation.invalid_context"));
    let names: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert!(!names.contains(&"negotiation_request"), "{names:?}");
    let failed = negotiation_failures(&events, false);
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0]["errorCode"], json!("negotiation.invalid_context"));
    assert_eq!(failed[0]["remoteTaskId"], Value::Null);
    server.shutdown().await.unwrap();
}

/// A structured A2A error once the task is known is the agent's answer: the task fails with its
/// code, nothing is resubscribed or polled. Both bindings, and also on the
/// stream of a resubscribe.
#[tokio::test]
async fn a_structured_error_mid_stream_fails_the_task_with_its_code() {
    for rest in [false, true] {
        let server = serve(AgentSpec::new("s")).await;
        server
            .set_fault("s", Route::Stream, Fault::SseErrorEvent { after_events: 1 })
            .unwrap();
        let client = client_for(&server, &["s"], rest, ClientConfig::default()).await;
        let hook = Hook::new(|_| None);
        let err = dispatch(
            &client,
            "s",
            MessageContent::text("stream please"),
            &hook,
            LONG,
        )
        .await
        .unwrap_err();
        assert_eq!(err.failure.code, "a2a.internal", "rest={rest}: {err:?}");
        assert!(err.remote_task_id.is_some(), "the task was known");
        assert_eq!(count(&server, "s", Route::Subscribe), 0, "rest={rest}");
        assert_eq!(count(&server, "s", Route::Get), 0, "rest={rest}");
        server.shutdown().await.unwrap();

        // The same error on the stream of a resubscribe.
        let server = serve(AgentSpec::new("s")).await;
        server
            .set_fault_times(
                "s",
                Route::Stream,
                Fault::ResetMidStream { after_events: 1 },
                1,
            )
            .unwrap();
        server
            .set_fault(
                "s",
                Route::Subscribe,
                Fault::SseErrorEvent { after_events: 1 },
            )
            .unwrap();
        let client = client_for(&server, &["s"], rest, ClientConfig::default()).await;
        let err = dispatch(
            &client,
            "s",
            MessageContent::text("stream please"),
            &hook,
            LONG,
        )
        .await
        .unwrap_err();
        assert_eq!(err.failure.code, "a2a.internal", "rest={rest}: {err:?}");
        assert_eq!(count(&server, "s", Route::Subscribe), 1, "rest={rest}");
        assert_eq!(count(&server, "s", Route::Get), 0, "rest={rest}");
        server.shutdown().await.unwrap();
    }
}

/// A blank extension URI in the host's content is refused before anything is sent.
#[tokio::test]
async fn a_blank_extension_uri_is_refused_before_sending() {
    let server = serve(AgentSpec::new("s").streaming(false)).await;
    let client = client_for(&server, &["s"], false, ClientConfig::default()).await;
    let hook = Hook::new(|_| None);
    let mut content = MessageContent::text("task please");
    content.extensions = vec!["https://example.com/ext/v1".to_owned(), "  ".to_owned()];
    let err = dispatch(&client, "s", content, &hook, LONG)
        .await
        .unwrap_err();
    assert_eq!(err.failure.code, "workflow.invalid_content", "{err:?}");
    assert_eq!(err.failure.details["index"], json!(1));
    assert_eq!(count(&server, "s", Route::Send), 0, "nothing was sent");
    assert_eq!(count(&server, "s", Route::Stream), 0, "nothing was sent");
    server.shutdown().await.unwrap();
}
