//! Runs shared by several processes: [`submit_workflow`] journals a run without driving it, and
//! a [`Worker`] claims journaled runs from a shared store ([`RunStore::claim`]) and drives each
//! as [`crate::resume`] does (journaled answers reused, remote tasks re-attached), up to its
//! concurrency at once. The driver's lease renewal is the worker's heartbeat: a worker that
//! dies stops renewing, and its runs become claimable once their leases lapse.
//!
//! A run whose only work left is open gates (`--gates park`) is not held: its driver suspends
//! it (`workflow.parked`, lease given up, state `waiting`), and the store hands it out again
//! when a gate answer, a decline or a cancel is journaled for it (`runs answer`, the run page)
//! or its deadline passed.
//!
//! Idle workers of the Postgres store wake on its notifications (a submit, a journaled gate
//! answer, a released lease) and look again after [`WorkerOptions::poll`] in any case (a lapsed
//! lease notifies nobody). The embedded SQLite store hands no runs out to workers: a worker on
//! it is refused with `store.unavailable`.

use crate::execute::{AgentEndpoint, HostHooks, resume};
use crate::{EngineConfig, StoreLocation};
use a2aflow_kernel::journal::{RunStarted, RunStore, StoreError, wall_clock_ms};
use a2aflow_kernel::{ControlPoint, RunInput, RunOptions};
use a2aflow_model::{ErrorCode, ExecutionResult, Failure, Workflow};
use a2aflow_store_postgres::{PostgresStore, WorkSignal};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Journals a run of `workflow` in the configured store (or `hooks.run_options.store`) without
/// driving it, and returns its execution id (`hooks.run_options.execution_id` when the host
/// chose one): a worker claims it, or `runs resume` drives it. The run keeps the configuration's
/// timeout (its deadline counts from now), retry policy and limits, and the gate policy of
/// `hooks.run_options`, as a run started by [`crate::execute_workflow`] would.
///
/// Errors before anything is written: an invalid workflow (its validation codes), no store
/// (`config.invalid`), the store's `store.*` codes (`store.duplicate_execution` for an id
/// taken).
pub async fn submit_workflow(
    workflow: &Workflow,
    config: &EngineConfig,
    input: RunInput,
    hooks: HostHooks,
) -> Result<String, Failure> {
    a2aflow_model::validate(workflow).map_err(|e| e.to_failure())?;
    let mut options = hooks.run_options;
    options.timeout = config.run_timeout()?;
    options.max_concurrent_remote_tasks = config.remote_task_limit();
    if options.retry.is_none() {
        options.retry = config.retry_policy()?;
    }
    let store = match options.store.take() {
        Some(store) => store,
        None => config.open_store().await?.ok_or_else(|| {
            Failure::new(
                ErrorCode::ConfigInvalid,
                "a submitted run needs a run store: configure `store` (a postgres:// URL for \
                 workers) or set the host's run_options.store",
            )
        })?,
    };
    let execution_id = options
        .execution_id
        .clone()
        .unwrap_or_else(|| format!("run-{}", a2aflow_model::a2a::new_context_id()));
    let started = RunStarted::new(
        execution_id.clone(),
        workflow,
        input.runtime_intent,
        &options,
        wall_clock_ms(),
    )?;
    store.create_run(started).await?;
    // A hint only: idle workers look again after their poll interval.
    let _ = store.notify_claimable(&execution_id).await;
    Ok(execution_id)
}

/// What a [`Worker`] tells the host at each run's end: the execution id and the result.
pub type RunEndHook = Arc<dyn Fn(&str, &ExecutionResult) + Send + Sync>;

/// What one driver of a worker returns: the run's id and its result.
type Driven = (String, Result<ExecutionResult, Failure>);

/// How a [`Worker`] works.
#[derive(Clone)]
#[non_exhaustive]
pub struct WorkerOptions {
    /// The lease owner its runs are driven as (unique per worker process).
    pub owner: String,
    /// How many runs it drives at once (at least 1).
    pub concurrency: usize,
    /// How long an idle worker waits for a wake-up before it looks for work again.
    pub poll: Duration,
    /// Told the result of each run it drove to its end (or to a lost lease).
    pub on_run_end: Option<RunEndHook>,
}

impl std::fmt::Debug for WorkerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerOptions")
            .field("owner", &self.owner)
            .field("concurrency", &self.concurrency)
            .field("poll", &self.poll)
            .finish_non_exhaustive()
    }
}

impl WorkerOptions {
    /// One run at a time, a poll of one second, as `owner`.
    pub fn new(owner: impl Into<String>) -> Self {
        WorkerOptions {
            owner: owner.into(),
            concurrency: 1,
            poll: Duration::from_secs(1),
            on_run_end: None,
        }
    }

    /// These options driving up to `n` runs at once.
    pub fn with_concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// These options looking for work at least every `poll`.
    pub fn with_poll(mut self, poll: Duration) -> Self {
        self.poll = poll;
        self
    }

    /// These options telling `f` each run's end.
    pub fn on_run_end(
        mut self,
        f: impl Fn(&str, &ExecutionResult) + Send + Sync + 'static,
    ) -> Self {
        self.on_run_end = Some(Arc::new(f));
        self
    }
}

/// What a worker did until it stopped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerReport {
    /// Runs it claimed.
    pub claimed: u64,
    /// Runs it drove to their end (journaled result).
    pub finished: u64,
    /// Runs it stopped driving because its lease was lost (its writes were refused by the
    /// store's fence: `store.lease_lost`).
    pub lease_lost: u64,
    /// Leases it gave back when it was stopped (those runs are claimable at once).
    pub released: u64,
    /// Runs it stopped driving because only open gates were left (`workflow.parked`): their
    /// leases were given up, and a worker claims them again once a gate is answered.
    pub parked: u64,
}

/// A claim loop over a shared run store.
pub struct Worker {
    store: Arc<dyn RunStore>,
    signal: Option<WorkSignal>,
    options: WorkerOptions,
}

impl Worker {
    /// A worker on the configured store, which must be the Postgres store (created on first
    /// use) and wakes it on its notifications. The SQLite store is refused with
    /// `store.unavailable`: it hands no runs out to workers.
    pub async fn open(config: &EngineConfig, options: WorkerOptions) -> Result<Self, Failure> {
        let url = match &config.store {
            Some(StoreLocation::Postgres(url)) => url,
            Some(other) => {
                return Err(StoreError::new(
                    ErrorCode::StoreUnavailable,
                    format!(
                        "workers need the Postgres store (--store postgres://…); the SQLite \
                         store at {other} is driven by one host at a time (`runs resume`)"
                    ),
                )
                .into());
            }
            None => {
                return Err(Failure::new(
                    ErrorCode::ConfigInvalid,
                    "a worker needs a run store: configure `store` as a postgres:// URL",
                ));
            }
        };
        let store_options = config.store_options()?;
        let password = config.store_password()?;
        let store = PostgresStore::open_with(
            url.as_str(),
            password.as_deref(),
            a2aflow_store_postgres::StoreOptions::default().with_lease_ttl(store_options.lease_ttl),
        )
        .await?;
        let signal = store.listen().await?;
        Ok(Worker {
            store: Arc::new(store),
            signal: Some(signal),
            options,
        })
    }

    /// A worker on a store the host opened; it polls (no wake-ups). A store that cannot hand
    /// runs out refuses the first claim, and [`Worker::run`] returns that error.
    pub fn with_store(store: Arc<dyn RunStore>, options: WorkerOptions) -> Self {
        Worker {
            store,
            signal: None,
            options,
        }
    }

    /// Claims and drives runs until `shutdown` is cancelled, then stops claiming (a claim under
    /// way finishes), stops its drivers and releases their leases, so their runs are claimable
    /// at once. Each run is driven with `agents` and `control_point` as [`crate::resume`]
    /// drives it; a run whose workflow names an agent not in `agents` is left to its lease
    /// (reported through [`WorkerOptions::on_run_end`] with its failure).
    ///
    /// The first claim's error is returned (`store.unavailable` from a store that hands no
    /// runs out); a later one waits a poll interval and tries again.
    pub async fn run(
        self,
        agents: Vec<AgentEndpoint>,
        control_point: Arc<dyn ControlPoint>,
        config: &EngineConfig,
        shutdown: CancellationToken,
    ) -> Result<WorkerReport, Failure> {
        let agents: Arc<[AgentEndpoint]> = agents.into();
        let mut report = WorkerReport::default();
        let mut drivers: JoinSet<Driven> = JoinSet::new();
        let mut driving: HashMap<tokio::task::Id, String> = HashMap::new();
        let mut claimed_once = false;
        loop {
            if shutdown.is_cancelled() {
                break;
            }
            if drivers.len() < self.options.concurrency {
                match self.store.claim(&self.options.owner).await {
                    Ok(Some(lease)) => {
                        claimed_once = true;
                        let id = lease.execution_id;
                        if driving.values().any(|driven| *driven == id) {
                            // This worker's own driver of the run is still at work: its lease
                            // lapsed (a heartbeat came late) and the claim handed it back to
                            // the same owner with the same fencing token. A second driver would
                            // pass the same fence and send what the first one sends; the
                            // running driver keeps the run (the claim renewed its lease).
                            continue;
                        }
                        report.claimed += 1;
                        let drive = self.drive(&id, agents.clone(), control_point.clone(), config);
                        let handle = drivers.spawn(drive);
                        driving.insert(handle.id(), id);
                        continue;
                    }
                    Ok(None) => claimed_once = true,
                    Err(e) if !claimed_once => return Err(e.into()),
                    Err(_) => {}
                }
            }
            let idle = drivers.len() < self.options.concurrency;
            tokio::select! {
                () = shutdown.cancelled() => break,
                Some(done) = drivers.join_next_with_id(), if !drivers.is_empty() => {
                    self.ended(done, &mut driving, &mut report);
                }
                _ = self.wait_for_work(), if idle => {}
            }
        }
        // Stop every driver before its lease is given back: no write of theirs races the
        // release.
        drivers.abort_all();
        while let Some(done) = drivers.join_next_with_id().await {
            self.ended(done, &mut driving, &mut report);
        }
        for id in driving.into_values() {
            if let Ok(Some(lease)) = self.store.lease(&id).await
                && lease.owner == self.options.owner
                && self.store.release(lease).await.is_ok()
            {
                report.released += 1;
            }
        }
        Ok(report)
    }

    /// The future that drives claimed run `id` as `runs resume` does.
    fn drive(
        &self,
        id: &str,
        agents: Arc<[AgentEndpoint]>,
        control_point: Arc<dyn ControlPoint>,
        config: &EngineConfig,
    ) -> impl Future<Output = Driven> + Send + 'static {
        let id = id.to_owned();
        let config = config.clone();
        let hooks = HostHooks {
            run_options: RunOptions {
                store: Some(self.store.clone()),
                lease_owner: Some(self.options.owner.clone()),
                // A run whose only work left is open gates gives its lease up and waits
                // (`workflow.parked`) instead of holding this worker: the store hands it out
                // again once an answer, a decline or a cancel is journaled.
                suspend_when_parked: true,
                ..RunOptions::default()
            },
            ..HostHooks::default()
        };
        async move {
            let result = resume(&id, &agents, control_point, &config, hooks).await;
            (id, result)
        }
    }

    /// A driver ended: counted, reported, and no longer one to release.
    fn ended(
        &self,
        done: Result<(tokio::task::Id, Driven), tokio::task::JoinError>,
        driving: &mut HashMap<tokio::task::Id, String>,
        report: &mut WorkerReport,
    ) {
        let Ok((task, (id, result))) = done else {
            // Aborted at shutdown (its lease is released after) or panicked (its lease lapses).
            return;
        };
        driving.remove(&task);
        let result = match result {
            Ok(result) => result,
            Err(failure) => not_driven(&id, failure),
        };
        match &result.failure {
            Some(f) if f.is(ErrorCode::StoreLeaseLost) => report.lease_lost += 1,
            Some(f) if f.is(ErrorCode::StoreLocked) => {}
            Some(f) if f.is(ErrorCode::WorkflowParked) => report.parked += 1,
            _ => report.finished += 1,
        }
        if let Some(tell) = &self.options.on_run_end {
            tell(&id, &result);
        }
    }

    /// Waits for a wake-up, or the poll interval.
    async fn wait_for_work(&self) {
        match &self.signal {
            Some(signal) => {
                signal.wait(self.options.poll).await;
            }
            None => tokio::time::sleep(self.options.poll).await,
        }
    }
}

/// The result shape of a claimed run the worker could not drive (it refused before anything
/// was sent: an agent missing, the store failing).
fn not_driven(id: &str, failure: Failure) -> ExecutionResult {
    ExecutionResult {
        execution_id: id.to_owned(),
        workflow_id: String::new(),
        success: false,
        failure: Some(failure),
        steps: Vec::new(),
        skipped_steps: Vec::new(),
    }
}
