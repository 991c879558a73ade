//! `store = "postgres://…"`: a run is journaled in the Postgres store and read back through the
//! facade, in a schema of its own on the server `A2AFLOW_PG_URL` names (the password from
//! `PGPASSWORD` or `A2AFLOW_PG_PASSWORD`, as every host gets it). Without the URL the test
//! fails and says how to get a server.

use crate::support::execute;
use a2aflow::model::{LoadOptions, load_workflow_str};
use a2aflow::{
    EngineConfig, RunFilter, RunState, StoreLocation, fetch_agent_cards, get_execution,
    list_executions,
};
use a2aflow_testkit::{AgentSpec, TestServer};

const WORKFLOW: &str = r#"{"id": "wf", "name": "shared", "steps": [
  {"name": "ask", "subtasks": [{"agent": "alpha", "description": "one"}]}
]}"#;

fn server_url() -> String {
    std::env::var("A2AFLOW_PG_URL").unwrap_or_else(|_| {
        panic!(
            "A2AFLOW_PG_URL is not set: this test needs a PostgreSQL server. Run `cargo xtask \
             postgres start` and the two `export` lines it prints (docs/guide/postgres.md)"
        )
    })
}

/// A new schema on the test server, and the server's admin connection (to drop it).
async fn scratch_schema() -> (String, tokio_postgres::Client) {
    let mut config: tokio_postgres::Config = server_url().parse().unwrap();
    if let Some(p) = a2aflow_store_postgres_password() {
        config.password(p);
    }
    let (client, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let name = format!("t_{}", uuid::Uuid::new_v4().simple());
    client
        .batch_execute(&format!("CREATE SCHEMA {name}"))
        .await
        .unwrap();
    (name, client)
}

fn a2aflow_store_postgres_password() -> Option<String> {
    ["A2AFLOW_PG_PASSWORD", "PGPASSWORD"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
}

#[tokio::test]
async fn a_run_is_journaled_in_the_postgres_store_the_config_names() {
    let (schema, admin) = scratch_schema().await;
    let url = format!("{}?options=-csearch_path%3D{schema}", server_url());
    let config =
        EngineConfig::from_json_str(&serde_json::json!({ "store": url }).to_string()).unwrap();
    assert!(matches!(config.store, Some(StoreLocation::Postgres(_))));
    let server = TestServer::single(AgentSpec::new("alpha")).await.unwrap();
    let cards = fetch_agent_cards(&[server.card_url("alpha")], &EngineConfig::default())
        .await
        .unwrap();
    let workflow = load_workflow_str(WORKFLOW, LoadOptions::STRICT)
        .unwrap()
        .workflow;
    let result = execute(workflow, &cards, &config).await.unwrap();
    assert!(result.success, "{:#?}", result.failure);

    let store = config.open_store().await.unwrap().unwrap();
    let runs = list_executions(&*store, RunFilter::default())
        .await
        .unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].execution_id, result.execution_id);
    assert_eq!(runs[0].state, RunState::Succeeded);
    let shown = get_execution(&*store, &result.execution_id).await.unwrap();
    assert_eq!(shown.state, RunState::Succeeded);
    let existing = config
        .store
        .as_ref()
        .unwrap()
        .open_existing()
        .await
        .unwrap();
    assert_eq!(existing.list(RunFilter::default()).await.unwrap().len(), 1);

    admin
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
}
