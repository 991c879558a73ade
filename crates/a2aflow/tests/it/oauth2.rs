//! OAuth2 client credentials through `EngineConfig`: a credentials file with a
//! client-credentials entry is enough for `execute_workflow` to fetch a token from the token
//! endpoint, send it to the agent, reuse it, and fetch a new one when the agent answers 401
//! (one engine client, built by `build_engine_client`, for several runs).

use a2aflow::kernel::{CallbackError, ControlPoint, RunInput, RunOptions};
use a2aflow::model::{
    LoadOptions, MessageContent, TaskOutcomeStatus, TaskRequest, TaskResult, load_workflow_str,
};
use a2aflow::protocol::client::A2aEngineClient;
use a2aflow::{EngineConfig, build_engine_client, discover_agents};
use a2aflow_testkit::{AgentSpec, Credential, Fault, Route, TestServer, TokenEndpoint};
use serde_json::json;
use std::sync::Arc;

struct Host;

#[async_trait::async_trait]
impl ControlPoint for Host {
    async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(MessageContent::text(request.description))
    }
    async fn on_self_task(&self, _request: TaskRequest) -> Result<TaskResult, CallbackError> {
        Err(CallbackError::Other("no SELF_LOOP steps here".into()))
    }
}

const WORKFLOW: &str = r#"{"id": "wf", "steps": [
  {"name": "ask", "subtasks": [{"agent": "secured", "description": "task one"}]}
]}"#;

async fn run(client: &Arc<A2aEngineClient>) -> TaskOutcomeStatus {
    let workflow = load_workflow_str(WORKFLOW, LoadOptions::STRICT)
        .unwrap()
        .workflow;
    let result = a2aflow::kernel::run(
        workflow,
        RunInput::default(),
        Arc::new(Host),
        client.clone(),
        RunOptions::default(),
    )
    .await;
    let task = &result.steps[0].task_results[0];
    assert_eq!(task.error, None, "{:?}", task.error_code);
    task.status
}

#[tokio::test]
async fn a_client_credentials_entry_works_through_engine_config() {
    let idp = TokenEndpoint::spawn("engine-client", "engine-secret", 3600)
        .await
        .unwrap();
    let spec = AgentSpec::new("secured")
        .streaming(false)
        .security_scheme(
            "oauth",
            json!({"oauth2SecurityScheme": {"flows": {"clientCredentials": {
                "tokenUrl": idp.token_url(), "scopes": {"tasks": "t"}}}}}),
        )
        .security_requirement(json!({"schemes": {"oauth": {}}}));
    let server = TestServer::single(spec).await.unwrap();
    server
        .set_fault(
            "secured",
            Route::Send,
            Fault::RequireAuth(Credential::Bearer(idp.token(1))),
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let creds = dir.path().join("credentials.json");
    std::fs::write(
        &creds,
        // The token endpoint is at another origin than the agent: the user names it here (a
        // token URL only the card names is refused, see tests/credentials.rs).
        json!({"secured": {"oauth": {
            "client_id": "engine-client", "client_secret": "engine-secret", "scopes": ["tasks"],
            "token_url": idp.token_url()}}})
        .to_string(),
    )
    .unwrap();
    let config = EngineConfig {
        credentials_file: Some(creds),
        ..EngineConfig::default()
    };
    let cards = discover_agents(&[("secured", server.card_url("secured"))], &config)
        .await
        .unwrap();
    let client = Arc::new(
        build_engine_client(&cards, &config, None)
            .expect("construction succeeds: a token fetcher is configured"),
    );

    assert_eq!(run(&client).await, TaskOutcomeStatus::Completed);
    assert_eq!(run(&client).await, TaskOutcomeStatus::Completed);
    assert_eq!(idp.issued(), 1, "the token is reused until it expires");
    let asked = &idp.requests()[0];
    assert_eq!(asked.grant_type.as_deref(), Some("client_credentials"));
    assert_eq!(asked.scope.as_deref(), Some("tasks"));
    assert!(!asked.a2a_version, "a token request is not an A2A call");

    // The agent now wants the next token: the 401 drops the old one and the send is retried
    // once with a fresh token.
    server
        .set_fault(
            "secured",
            Route::Send,
            Fault::RequireAuth(Credential::Bearer(idp.token(2))),
        )
        .unwrap();
    assert_eq!(run(&client).await, TaskOutcomeStatus::Completed);
    assert_eq!(idp.issued(), 2);
    let sent: Vec<String> = server
        .requests()
        .iter()
        .filter(|r| r.route == Some(Route::Send))
        .map(|r| {
            r.headers["authorization"]
                .to_str()
                .unwrap()
                .trim_start_matches("Bearer ")
                .to_owned()
        })
        .collect();
    // The third run's first send was refused (old token), and retried once with the new one.
    assert_eq!(sent, ["tok-1", "tok-1", "tok-1", "tok-2"]);
}
