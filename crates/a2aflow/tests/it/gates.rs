//! Gates through `execute_workflow` against testkit agents (`input …`: INPUT_REQUIRED, any
//! follow-up on the task completes it): a parked branch while another completes, the host's
//! answer as a follow-up carrying both ids, the stored run's view of its open gates, answers to
//! tasks without an open gate refused, a decline, and an AUTH_REQUIRED gate answered after the
//! host refreshed the credentials its `AuthProvider` supplies, or, with configured OAuth2
//! credentials, with a token fetched after the answer.

use a2aflow::kernel::{
    CallbackError, ControlPoint, GateBoard, GatePolicy, MemoryStore, RunInput, RunOptions,
};
use a2aflow::model::a2a::AgentCard;
use a2aflow::model::{
    ErrorCode, ExecutionResult, Failure, Gate, LoadOptions, MessageContent, OpenGate, TaskRequest,
    Workflow, load_workflow_str,
};
use a2aflow::protocol::auth::{AuthProvider, AuthRequest};
use a2aflow::{
    EngineConfig, GateDelivery, HostHooks, RunState, answer_gate, discover_agents,
    execute_workflow, fetch_agent_cards, get_execution,
};
use a2aflow_testkit::{AgentSpec, Route, TestServer, TokenEndpoint};
use http::HeaderMap;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

const HANG: Duration = Duration::from_secs(30);

/// Sends each subtask's description as it is.
struct Verbatim;

#[async_trait::async_trait]
impl ControlPoint for Verbatim {
    async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(MessageContent::text(request.description))
    }
}

const BRANCHES: &str = r#"{"id": "gates", "steps": [
  {"name": "ask", "subtasks": [{"agent": "alpha", "description": "input which city"}]},
  {"name": "other", "subtasks": [{"agent": "alpha", "description": "hello there"}]}
]}"#;

fn workflow() -> Workflow {
    load_workflow_str(BRANCHES, LoadOptions::STRICT)
        .unwrap()
        .workflow
}

async fn started() -> (TestServer, Vec<AgentCard>) {
    let server = TestServer::single(AgentSpec::new("alpha")).await.unwrap();
    let cards = fetch_agent_cards(&[server.card_url("alpha")], &EngineConfig::default())
        .await
        .unwrap();
    (server, cards)
}

fn parking(board: &GateBoard, store: Option<Arc<MemoryStore>>) -> HostHooks {
    HostHooks {
        run_options: RunOptions {
            execution_id: Some("gated".into()),
            gate_policy: GatePolicy::Park,
            gate_board: Some(board.clone()),
            store: store.map(|s| s as _),
            ..RunOptions::default()
        },
        ..HostHooks::default()
    }
}

fn spawn_run(cards: Vec<AgentCard>, hooks: HostHooks) -> tokio::task::JoinHandle<ExecutionResult> {
    tokio::spawn(async move {
        execute_workflow(
            workflow(),
            &cards,
            Arc::new(Verbatim),
            &EngineConfig::default(),
            RunInput::default(),
            hooks,
        )
        .await
        .unwrap()
    })
}

async fn open_gate(board: &GateBoard) -> OpenGate {
    let wait = async {
        loop {
            if let Some(g) = board.open_gates("gated").into_iter().next() {
                return g;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(HANG, wait)
        .await
        .expect("the gate opens")
}

/// The messages the agent received, in order.
fn sent_messages(server: &TestServer) -> Vec<Value> {
    server
        .requests()
        .iter()
        .filter(|r| matches!(r.route, Some(Route::Send | Route::Stream)))
        .filter_map(|r| {
            let body = r.body.as_ref()?;
            body.get("params")
                .and_then(|p| p.get("message"))
                .or_else(|| body.get("message"))
                .cloned()
        })
        .collect()
}

#[tokio::test]
async fn a_parked_task_is_answered_by_a_follow_up_carrying_both_ids_and_completes() {
    let (server, cards) = started().await;
    let board = GateBoard::new();
    let run = spawn_run(cards, parking(&board, None));
    let gate = open_gate(&board).await;
    assert_eq!(gate.gate, Gate::InputRequired);
    let (context_id, remote) = (
        gate.context_id.clone().unwrap(),
        gate.remote_task_id.clone().unwrap(),
    );
    board
        .answer("gated", &gate.local_task_id, MessageContent::text("Paris"))
        .unwrap();
    let r = tokio::time::timeout(HANG, run).await.unwrap().unwrap();
    assert!(r.success, "{:#?}", r.failure);
    // The other branch ran while the gate was open; the follow-up continued the gated task.
    let sent = sent_messages(&server);
    assert_eq!(sent.len(), 3, "{sent:#?}");
    let follow_up = sent.last().unwrap();
    assert_eq!(follow_up["taskId"], Value::from(remote.clone()));
    assert_eq!(follow_up["contextId"], Value::from(context_id));
    let ask = r.steps.iter().find(|s| s.step_name == "ask").unwrap();
    assert_eq!(
        ask.task_results[0].remote_task_id.as_deref(),
        Some(&*remote)
    );
}

#[tokio::test]
async fn a_stored_run_shows_its_open_gate_as_waiting_and_takes_the_answer() {
    let (server, cards) = started().await;
    let board = GateBoard::new();
    let store = Arc::new(MemoryStore::new());
    let run = spawn_run(cards, parking(&board, Some(store.clone())));
    let gate = open_gate(&board).await;
    let view = get_execution(&*store, "gated").await.unwrap();
    assert_eq!(view.state, RunState::Waiting);
    assert_eq!(view.open_gates, std::slice::from_ref(&gate));
    let json = serde_json::to_value(&view).unwrap();
    assert_eq!(
        json["openGates"][0]["localTaskId"],
        Value::from(gate.local_task_id.clone())
    );

    let wrong = answer_gate(
        &*store,
        Some(&board),
        "gated",
        "gated:nope:0",
        MessageContent::text("x"),
    )
    .await
    .unwrap_err();
    assert!(wrong.is(ErrorCode::WorkflowGateNotOpen), "{wrong:?}");
    // Without the board of the process that drives the run, the journal is not the way in.
    let driven = answer_gate(
        &*store,
        None,
        "gated",
        &gate.local_task_id,
        MessageContent::text("Paris"),
    )
    .await
    .unwrap_err();
    assert!(driven.is(ErrorCode::StoreLocked), "{driven:?}");
    let delivered = answer_gate(
        &*store,
        Some(&board),
        "gated",
        &gate.local_task_id,
        MessageContent::text("Paris"),
    )
    .await
    .unwrap();
    assert_eq!(delivered, GateDelivery::Delivered);
    let r = tokio::time::timeout(HANG, run).await.unwrap().unwrap();
    assert!(r.success, "{:#?}", r.failure);
    let view = get_execution(&*store, "gated").await.unwrap();
    assert!(view.open_gates.is_empty());
    assert_eq!(view.state, RunState::Succeeded);
    assert!(
        serde_json::to_value(&view)
            .unwrap()
            .get("openGates")
            .is_none()
    );
    // Answered once: a second answer is refused, through the board and through the store.
    let again = answer_gate(
        &*store,
        Some(&board),
        "gated",
        &gate.local_task_id,
        MessageContent::text("again"),
    )
    .await
    .unwrap_err();
    assert!(again.is(ErrorCode::WorkflowGateNotOpen), "{again:?}");
    assert_eq!(sent_messages(&server).len(), 3);
}

#[tokio::test]
async fn a_declined_gate_fails_with_the_hosts_code_and_sends_a_cancel_task() {
    let (server, cards) = started().await;
    let board = GateBoard::new();
    let run = spawn_run(cards, parking(&board, None));
    let gate = open_gate(&board).await;
    board
        .decline(
            "gated",
            &gate.local_task_id,
            "biz.no_city",
            "we do not know",
        )
        .unwrap();
    let r = tokio::time::timeout(HANG, run).await.unwrap().unwrap();
    assert!(!r.success);
    let ask = r.steps.iter().find(|s| s.step_name == "ask").unwrap();
    assert_eq!(
        ask.task_results[0].error_code.as_deref(),
        Some("biz.no_city")
    );
    let cancels: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.route == Some(Route::Cancel))
        .collect();
    assert_eq!(cancels.len(), 1, "one CancelTask");
    let body = serde_json::to_string(&cancels[0].body).unwrap();
    assert!(
        body.contains(gate.remote_task_id.as_deref().unwrap()),
        "{body}"
    );
}

/// A host credential source whose token the host replaces while the run waits; it counts the
/// times it was told the agent wants fresh credentials.
struct RefreshableToken(std::sync::Mutex<String>, std::sync::atomic::AtomicUsize);

#[async_trait::async_trait]
impl AuthProvider for RefreshableToken {
    async fn headers(&self, _request: AuthRequest<'_>) -> Result<HeaderMap, Failure> {
        let token = self.0.lock().unwrap().clone();
        let mut headers = HeaderMap::new();
        headers.insert("authorization", format!("Bearer {token}").parse().unwrap());
        Ok(headers)
    }

    async fn on_unauthorized(&self, _agent: &str) -> bool {
        self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        true
    }
}

#[tokio::test]
async fn an_auth_gate_is_answered_with_the_hosts_refreshed_credentials() {
    let (server, cards) = started().await;
    let board = GateBoard::new();
    let token = Arc::new(RefreshableToken(
        std::sync::Mutex::new("old".into()),
        std::sync::atomic::AtomicUsize::new(0),
    ));
    let mut hooks = parking(&board, None);
    hooks.auth_provider = Some(token.clone());
    let workflow = load_workflow_str(
        r#"{"id": "auth", "steps": [{"name": "ask", "subtasks": [{"agent": "alpha", "description": "auth please"}]}]}"#,
        LoadOptions::STRICT,
    )
    .unwrap()
    .workflow;
    let run = tokio::spawn(async move {
        execute_workflow(
            workflow,
            &cards,
            Arc::new(Verbatim),
            &EngineConfig::default(),
            RunInput::default(),
            hooks,
        )
        .await
        .unwrap()
    });
    let gate = open_gate(&board).await;
    assert_eq!(gate.gate, Gate::AuthRequired);
    *token.0.lock().unwrap() = "fresh".into();
    board
        .answer(
            "gated",
            &gate.local_task_id,
            MessageContent::text("signed in"),
        )
        .unwrap();
    let r = tokio::time::timeout(HANG, run).await.unwrap().unwrap();
    assert!(r.success, "{:#?}", r.failure);
    let sends: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| matches!(r.route, Some(Route::Send | Route::Stream)))
        .collect();
    assert_eq!(sends.len(), 2);
    assert_eq!(sends[0].header("authorization"), Some("Bearer old"));
    assert_eq!(sends[1].header("authorization"), Some("Bearer fresh"));
    // The provider was told once, before the follow-up, that the agent asked for credentials.
    assert_eq!(token.1.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// An agent whose card asks for OAuth2 client credentials, the credentials file that configures
/// them for it, and the token endpoint (`tok-1`, `tok-2`, … one per token request).
async fn oauth_agent(dir: &std::path::Path) -> (TestServer, TokenEndpoint, EngineConfig) {
    let idp = TokenEndpoint::spawn("gate-client", "gate-secret", 3600)
        .await
        .unwrap();
    let spec = AgentSpec::new("alpha")
        .security_scheme(
            "oauth",
            json!({"oauth2SecurityScheme": {"flows": {"clientCredentials": {
                "tokenUrl": idp.token_url(), "scopes": {"tasks": "t"}}}}}),
        )
        .security_requirement(json!({"schemes": {"oauth": {}}}));
    let server = TestServer::single(spec).await.unwrap();
    let creds = dir.join("credentials.json");
    std::fs::write(
        &creds,
        json!({"alpha": {"oauth": {
            "client_id": "gate-client", "client_secret": "gate-secret", "scopes": ["tasks"],
            "token_url": idp.token_url()}}})
        .to_string(),
    )
    .unwrap();
    let config = EngineConfig {
        credentials_file: Some(creds),
        ..EngineConfig::default()
    };
    (server, idp, config)
}

#[tokio::test]
async fn an_answered_auth_gate_drops_the_cached_token_and_the_follow_up_carries_a_fresh_one() {
    let dir = tempfile::tempdir().unwrap();
    let (server, idp, config) = oauth_agent(dir.path()).await;
    let agents = discover_agents(&[("alpha", server.card_url("alpha"))], &config)
        .await
        .unwrap();
    let board = GateBoard::new();
    let hooks = parking(&board, None);
    let workflow = load_workflow_str(
        r#"{"id": "auth", "steps": [{"name": "ask", "subtasks": [{"agent": "alpha", "description": "auth please"}]}]}"#,
        LoadOptions::STRICT,
    )
    .unwrap()
    .workflow;
    let run = tokio::spawn(async move {
        execute_workflow(
            workflow,
            &agents,
            Arc::new(Verbatim),
            &config,
            RunInput::default(),
            hooks,
        )
        .await
        .unwrap()
    });
    let gate = open_gate(&board).await;
    assert_eq!(gate.gate, Gate::AuthRequired);
    assert_eq!(idp.issued(), 1);
    board
        .answer(
            "gated",
            &gate.local_task_id,
            MessageContent::text("signed in"),
        )
        .unwrap();
    let r = tokio::time::timeout(HANG, run).await.unwrap().unwrap();
    assert!(r.success, "{:#?}", r.failure);
    let tokens: Vec<String> = server
        .requests()
        .into_iter()
        .filter(|r| matches!(r.route, Some(Route::Send | Route::Stream)))
        .map(|r| r.header("authorization").unwrap_or_default().to_owned())
        .collect();
    // The token the agent asked to be replaced is not sent again: the answer's follow-up went
    // with a token fetched after the gate was answered.
    assert_eq!(
        tokens,
        [
            format!("Bearer {}", idp.token(1)),
            format!("Bearer {}", idp.token(2))
        ]
    );
    assert_eq!(idp.issued(), 2);
}

#[tokio::test]
async fn an_input_gate_keeps_the_cached_token() {
    let dir = tempfile::tempdir().unwrap();
    let (server, idp, config) = oauth_agent(dir.path()).await;
    let agents = discover_agents(&[("alpha", server.card_url("alpha"))], &config)
        .await
        .unwrap();
    let board = GateBoard::new();
    let hooks = parking(&board, None);
    let run = tokio::spawn(async move {
        execute_workflow(
            workflow(),
            &agents,
            Arc::new(Verbatim),
            &config,
            RunInput::default(),
            hooks,
        )
        .await
        .unwrap()
    });
    let gate = open_gate(&board).await;
    assert_eq!(gate.gate, Gate::InputRequired);
    board
        .answer("gated", &gate.local_task_id, MessageContent::text("Paris"))
        .unwrap();
    let r = tokio::time::timeout(HANG, run).await.unwrap().unwrap();
    assert!(r.success, "{:#?}", r.failure);
    assert_eq!(
        idp.issued(),
        1,
        "only an AUTH_REQUIRED gate refreshes credentials"
    );
}

#[tokio::test]
async fn a_gate_nobody_answers_ends_at_the_run_deadline_with_its_own_code() {
    let (_server, cards) = started().await;
    let board = GateBoard::new();
    let hooks = parking(&board, None);
    let config = EngineConfig::from_toml_str("[timeouts]\nrun_secs = 1\n").unwrap();
    let r = tokio::time::timeout(
        HANG,
        execute_workflow(
            workflow(),
            &cards,
            Arc::new(Verbatim),
            &config,
            RunInput::default(),
            hooks,
        ),
    )
    .await
    .expect("the deadline ends the run")
    .unwrap();
    assert!(!r.success);
    let task = |step: &str| {
        r.steps
            .iter()
            .find(|s| s.step_name == step)
            .map(|s| s.task_results[0].clone())
            .unwrap()
    };
    let ask = task("ask");
    assert_eq!(
        ask.error_code.as_deref(),
        Some("a2a.input_required"),
        "{ask:?}"
    );
    assert!(ask.remote_task_id.is_some(), "{ask:?}");
    assert_eq!(ask.error_details["localTaskId"], ask.task_id.as_str());
    // The other branch finished meanwhile.
    assert!(task("other").error_code.is_none(), "{:?}", task("other"));
    assert!(board.open_gates("gated").is_empty());
}
