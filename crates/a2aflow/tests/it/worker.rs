//! `Worker` on the Postgres store (a schema of its own on `A2AFLOW_PG_URL`): an idle worker
//! whose poll is far longer than the test's guard is woken by the submit's notification, and a
//! worker stopped through its shutdown token releases the lease of the run it drives, which
//! another owner can claim at once.

use a2aflow::kernel::{CallbackError, ControlPoint, RunInput};
use a2aflow::model::{LoadOptions, MessageContent, TaskRequest, TaskResult, load_workflow_str};
use a2aflow::{
    EngineConfig, HostHooks, StoreLocation, Worker, WorkerOptions, discover_agents, submit_workflow,
};
use a2aflow_testkit::{AgentSpec, Route, TestServer};
use std::sync::Arc;
use std::time::Duration;

const GUARD: Duration = Duration::from_secs(30);

struct Hanging;

#[async_trait::async_trait]
impl ControlPoint for Hanging {
    async fn on_task(&self, _request: TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(MessageContent::text("hang"))
    }
    async fn on_self_task(&self, _request: TaskRequest) -> Result<TaskResult, CallbackError> {
        Ok(TaskResult::default())
    }
}

async fn scratch_url() -> String {
    let server = std::env::var("A2AFLOW_PG_URL").unwrap_or_else(|_| {
        panic!(
            "A2AFLOW_PG_URL is not set: this test needs a PostgreSQL server. Run `cargo xtask \
             postgres start` and the two `export` lines it prints (docs/guide/postgres.md)"
        )
    });
    let mut config: tokio_postgres::Config = server.parse().unwrap();
    if let Ok(p) = std::env::var("A2AFLOW_PG_PASSWORD").or_else(|_| std::env::var("PGPASSWORD")) {
        config.password(p);
    }
    let (client, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let name = format!("w_{}", uuid::Uuid::new_v4().simple());
    client
        .batch_execute(&format!("CREATE SCHEMA {name}"))
        .await
        .unwrap();
    format!("{server}?options=-csearch_path%3D{name}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_worker_wakes_on_a_submit_and_releases_its_run_when_stopped() {
    let server = TestServer::single(AgentSpec::new("alpha")).await.unwrap();
    let config = EngineConfig {
        store: Some(StoreLocation::parse(&scratch_url().await).unwrap()),
        ..EngineConfig::default()
    };
    let agents = discover_agents(&[("alpha", server.card_url("alpha"))], &config)
        .await
        .unwrap();
    // The poll is far past the guard: only the submit's notification can wake the worker.
    let options = WorkerOptions::new("worker-under-test").with_poll(Duration::from_secs(600));
    let worker = Worker::open(&config, options).await.unwrap();
    let shutdown = tokio_util::sync::CancellationToken::new();
    let stop = shutdown.clone();
    let worker_config = config.clone();
    let running = tokio::spawn(async move {
        worker
            .run(agents, Arc::new(Hanging), &worker_config, stop)
            .await
    });
    let workflow = load_workflow_str(
        r#"{"id": "wf", "name": "w", "steps": [{"name": "s", "subtasks": [{"agent": "alpha", "description": "d"}]}]}"#,
        LoadOptions::STRICT,
    )
    .unwrap()
    .workflow;
    // Let the worker make its first (empty) claim and go idle before the run exists.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let id = submit_workflow(
        &workflow,
        &config,
        RunInput::default(),
        HostHooks::default(),
    )
    .await
    .unwrap();
    tokio::time::timeout(GUARD, async {
        while !server
            .requests()
            .iter()
            .any(|r| matches!(r.route, Some(Route::Send | Route::Stream)))
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the idle worker was woken and drove the run");
    shutdown.cancel();
    let report = tokio::time::timeout(GUARD, running)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!((report.claimed, report.released), (1, 1), "{report:?}");
    let store = config.open_store().await.unwrap().unwrap();
    let next = store
        .claim("next-worker")
        .await
        .unwrap()
        .expect("claimable at once");
    assert_eq!((next.execution_id.as_str(), next.token), (id.as_str(), 2));
}
