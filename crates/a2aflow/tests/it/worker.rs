//! `Worker` on the Postgres store (a schema of its own on `A2AFLOW_PG_URL`): an idle worker
//! whose poll is far longer than the test's guard is woken by the submit's notification, and a
//! worker stopped through its shutdown token releases the lease of the run it drives, which
//! another owner can claim at once.

use a2aflow::kernel::journal::{
    EncodedEvent, Heartbeat, JournalRecord, Lease, RunJournal, RunStarted, StoreError,
};
use a2aflow::kernel::{CallbackError, ControlPoint, RunInput};
use a2aflow::model::Event;
use a2aflow::model::{LoadOptions, MessageContent, TaskRequest, TaskResult, load_workflow_str};
use a2aflow::{
    EngineConfig, HostHooks, RunFilter, RunStore, RunSummary, StoreLocation, Worker, WorkerOptions,
    discover_agents, submit_workflow,
};
use a2aflow_testkit::{AgentSpec, Route, TestServer};
use std::ops::Range;
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

/// The lease of the test below, and how late each heartbeat comes: later than the lease lasts.
const LEASE: Duration = Duration::from_millis(300);
const LATE: Duration = Duration::from_millis(700);

/// A store whose heartbeats come [`LATE`]: a driver alive and at work whose lease lapses.
struct LateHeartbeats {
    inner: Arc<dyn RunStore>,
}

#[async_trait::async_trait]
impl RunStore for LateHeartbeats {
    async fn create_run(&self, run: RunStarted) -> Result<(), StoreError> {
        self.inner.create_run(run).await
    }

    async fn append_batch(
        &self,
        execution_id: &str,
        records: Vec<JournalRecord>,
    ) -> Result<Range<u64>, StoreError> {
        self.inner.append_batch(execution_id, records).await
    }

    async fn append_driven(
        &self,
        lease: &Lease,
        records: Vec<JournalRecord>,
    ) -> Result<Range<u64>, StoreError> {
        self.inner.append_driven(lease, records).await
    }

    async fn record_driven_events(
        &self,
        lease: &Lease,
        events: Vec<Event>,
    ) -> Result<(), StoreError> {
        self.inner.record_driven_events(lease, events).await
    }

    async fn record_driven_encoded_events(
        &self,
        lease: &Lease,
        events: Vec<EncodedEvent>,
    ) -> Result<(), StoreError> {
        self.inner.record_driven_encoded_events(lease, events).await
    }

    async fn load(&self, execution_id: &str) -> Result<RunJournal, StoreError> {
        self.inner.load(execution_id).await
    }

    async fn lease(&self, execution_id: &str) -> Result<Option<Lease>, StoreError> {
        self.inner.lease(execution_id).await
    }

    async fn list(&self, filter: RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        self.inner.list(filter).await
    }

    async fn record_events(
        &self,
        execution_id: &str,
        events: Vec<Event>,
    ) -> Result<(), StoreError> {
        self.inner.record_events(execution_id, events).await
    }

    async fn events(
        &self,
        execution_id: &str,
        after_seq: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        self.inner.events(execution_id, after_seq, limit).await
    }

    async fn acquire(&self, execution_id: &str, owner: &str) -> Result<Lease, StoreError> {
        self.inner.acquire(execution_id, owner).await
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, StoreError> {
        self.inner.renew(lease).await
    }

    async fn heartbeat(&self, lease: &Lease) -> Result<Heartbeat, StoreError> {
        // Late by more than the lease: the lease lapses while its driver is alive.
        tokio::time::sleep(LATE).await;
        self.inner.heartbeat(lease).await
    }

    async fn release(&self, lease: Lease) -> Result<(), StoreError> {
        self.inner.release(lease).await
    }

    async fn claim(&self, owner: &str) -> Result<Option<Lease>, StoreError> {
        self.inner.claim(owner).await
    }

    async fn create_run_leased(&self, run: RunStarted, owner: &str) -> Result<Lease, StoreError> {
        self.inner.create_run_leased(run, owner).await
    }

    async fn release_suspended(&self, lease: Lease, seen: u64) -> Result<(), StoreError> {
        self.inner.release_suspended(lease, seen).await
    }

    async fn notify_claimable(&self, execution_id: &str) -> Result<(), StoreError> {
        self.inner.notify_claimable(execution_id).await
    }
}

/// A run whose lease lapsed while this worker's own driver still drives it is claimable again,
/// and the claim hands it back to the same owner with the same fencing token: the worker must
/// not start a second driver (both would pass the fence: two sends of one task, two
/// `runFinished`). The task takes a second; every heartbeat comes after the lease lapsed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_lease_lapsed_under_its_own_driver_is_not_driven_twice() {
    let server = TestServer::single(AgentSpec::new("alpha")).await.unwrap();
    let config = EngineConfig {
        store: Some(StoreLocation::parse(&scratch_url().await).unwrap()),
        store_lease_secs: LEASE.as_secs_f64(),
        ..EngineConfig::default()
    };
    let agents = discover_agents(&[("alpha", server.card_url("alpha"))], &config)
        .await
        .unwrap();
    let store: Arc<dyn RunStore> = Arc::new(LateHeartbeats {
        inner: config.open_store().await.unwrap().unwrap(),
    });
    let options = WorkerOptions::new("worker-late")
        .with_poll(Duration::from_millis(50))
        .with_concurrency(2);
    let worker = Worker::with_store(store.clone(), options);
    let workflow = load_workflow_str(
        r#"{"id": "wf", "name": "w", "steps": [{"name": "s", "subtasks": [{"agent": "alpha", "description": "slow 1.5 once"}]}]}"#,
        LoadOptions::STRICT,
    )
    .unwrap()
    .workflow;
    let id = submit_workflow(
        &workflow,
        &config,
        RunInput::default(),
        HostHooks::default(),
    )
    .await
    .unwrap();
    let shutdown = tokio_util::sync::CancellationToken::new();
    let stop = shutdown.clone();
    let worker_config = config.clone();
    let running = tokio::spawn(async move {
        worker
            .run(agents, Arc::new(Plain), &worker_config, stop)
            .await
    });
    let journal = tokio::time::timeout(GUARD, async {
        loop {
            let journal = store.load(&id).await.unwrap();
            if journal.finished().is_some() {
                break journal;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the run finished");
    // A second driver, had there been one, would be at most a heartbeat behind.
    tokio::time::sleep(LATE * 2).await;
    shutdown.cancel();
    let report = tokio::time::timeout(GUARD, running)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let kinds: Vec<&str> = journal.entries.iter().map(|e| e.record.kind()).collect();
    let journal = store.load(&id).await.unwrap();
    let count = |kind: &str| {
        journal
            .entries
            .iter()
            .filter(|e| e.record.kind() == kind)
            .count()
    };
    assert_eq!(
        (count("taskIntent"), count("runFinished")),
        (1, 1),
        "{kinds:?}"
    );
    let sends = server
        .requests()
        .iter()
        .filter(|r| matches!(r.route, Some(Route::Send | Route::Stream)))
        .count();
    assert_eq!(sends, 1, "the task was sent once");
    assert_eq!(report.claimed, 1, "{report:?}");
    assert!(journal.finished().unwrap().success);
}

/// A host that sends each task's description as it is.
struct Plain;

#[async_trait::async_trait]
impl ControlPoint for Plain {
    async fn on_task(&self, request: TaskRequest) -> Result<MessageContent, CallbackError> {
        Ok(MessageContent::text(request.description))
    }
    async fn on_self_task(&self, _request: TaskRequest) -> Result<TaskResult, CallbackError> {
        Ok(TaskResult::default())
    }
}
