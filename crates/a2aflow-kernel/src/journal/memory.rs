//! [`MemoryStore`]: the whole [`RunStore`] contract in memory, for tests.

use super::{
    Heartbeat, JournalEntry, JournalRecord, Lease, RunFilter, RunJournal, RunStarted, RunState,
    RunStore, RunSummary, StoreError, check_append, check_event_order, check_fence, grant_lease,
    is_run_cancel, released_lease, renew_lease, wall_clock_ms,
};
use a2aflow_model::{ErrorCode, Event};
use async_trait::async_trait;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// The default time to live of a lease (a driver renews it well before).
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(30);

/// One run's records, events and lease.
#[derive(Debug)]
struct Run {
    started_at_ms: u64,
    workflow_name: String,
    entries: Vec<JournalEntry>,
    events: Vec<Event>,
    lease: Option<Lease>,
    finished: Option<RunState>,
    finished_at_ms: Option<u64>,
}

/// A [`RunStore`] in memory: nothing survives the process. Leases lapse after the store's time
/// to live ([`MemoryStore::with_lease_ttl`]; [`DEFAULT_LEASE_TTL`] by default).
#[derive(Debug)]
pub struct MemoryStore {
    runs: Mutex<HashMap<String, Run>>,
    lease_ttl: Duration,
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new()
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::with_lease_ttl(DEFAULT_LEASE_TTL)
    }

    /// An empty store whose leases lapse `ttl` after they were granted or renewed.
    pub fn with_lease_ttl(ttl: Duration) -> Self {
        MemoryStore {
            runs: Mutex::new(HashMap::new()),
            lease_ttl: ttl,
        }
    }

    /// A run's records as they were appended, `stepEnded` / `runEnded` included
    /// ([`RunStore::load`] reads those as the full records they stand for).
    pub fn records_as_written(&self, execution_id: &str) -> Result<Vec<JournalRecord>, StoreError> {
        self.with_run(execution_id, |run| {
            Ok(run.entries.iter().map(|e| e.record.clone()).collect())
        })
    }

    fn runs(&self) -> MutexGuard<'_, HashMap<String, Run>> {
        // A panic while the lock was held left whole values behind (every update below is
        // one assignment or push), so a poisoned map is still consistent.
        self.runs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn with_run<T>(
        &self,
        execution_id: &str,
        f: impl FnOnce(&mut Run) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match self.runs().get_mut(execution_id) {
            Some(run) => f(run),
            None => Err(StoreError::unknown_execution(execution_id)),
        }
    }
}

impl Run {
    fn append(
        &mut self,
        execution_id: &str,
        records: Vec<JournalRecord>,
    ) -> Result<Range<u64>, StoreError> {
        check_append(execution_id, self.finished.is_some(), &records)?;
        let start = self.entries.len() as u64;
        for record in records {
            if let Some(state) = record.final_state() {
                self.finished = Some(state);
                self.finished_at_ms = Some(wall_clock_ms());
            }
            let seq = self.entries.len() as u64;
            self.entries.push(JournalEntry { seq, record });
        }
        Ok(start..self.entries.len() as u64)
    }

    fn keep_events(&mut self, execution_id: &str, events: Vec<Event>) -> Result<(), StoreError> {
        check_event_order(execution_id, self.events.last().map(|e| e.seq), &events)?;
        self.events.extend(events);
        Ok(())
    }

    fn state(&self, now_ms: u64) -> RunState {
        self.finished.unwrap_or_else(|| {
            RunState::unfinished(
                self.lease
                    .as_ref()
                    .is_some_and(|l| l.expires_at_ms > now_ms),
            )
        })
    }
}

#[async_trait]
impl RunStore for MemoryStore {
    async fn create_run(&self, run: RunStarted) -> Result<(), StoreError> {
        let mut runs = self.runs();
        if runs.contains_key(&run.execution_id) {
            return Err(StoreError::new(
                ErrorCode::StoreDuplicateExecution,
                format!(
                    "a run with execution id '{}' is already in this store",
                    run.execution_id
                ),
            )
            .with_detail("executionId", run.execution_id.as_str()));
        }
        let id = run.execution_id.clone();
        let entry = Run {
            started_at_ms: run.started_at_ms,
            workflow_name: run.workflow_name.clone(),
            entries: vec![JournalEntry {
                seq: 0,
                record: JournalRecord::RunStarted(run),
            }],
            events: Vec::new(),
            lease: None,
            finished: None,
            finished_at_ms: None,
        };
        runs.insert(id, entry);
        Ok(())
    }

    async fn append_batch(
        &self,
        execution_id: &str,
        records: Vec<JournalRecord>,
    ) -> Result<Range<u64>, StoreError> {
        self.with_run(execution_id, |run| run.append(execution_id, records))
    }

    async fn append_driven(
        &self,
        lease: &Lease,
        records: Vec<JournalRecord>,
    ) -> Result<Range<u64>, StoreError> {
        self.with_run(&lease.execution_id, |run| {
            check_fence(run.lease.as_ref(), lease)?;
            run.append(&lease.execution_id, records)
        })
    }

    async fn record_driven_events(
        &self,
        lease: &Lease,
        events: Vec<Event>,
    ) -> Result<(), StoreError> {
        self.with_run(&lease.execution_id, |run| {
            check_fence(run.lease.as_ref(), lease)?;
            run.keep_events(&lease.execution_id, events)
        })
    }

    async fn load(&self, execution_id: &str) -> Result<RunJournal, StoreError> {
        self.with_run(execution_id, |run| {
            RunJournal {
                execution_id: execution_id.to_owned(),
                entries: run.entries.clone(),
            }
            .expand_named()
        })
    }

    async fn list(&self, filter: RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        let now = wall_clock_ms();
        let runs = self.runs();
        let mut all: Vec<RunSummary> = runs
            .iter()
            .map(|(id, run)| RunSummary {
                execution_id: id.clone(),
                state: run.state(now),
                workflow_name: run.workflow_name.clone(),
                started_at_ms: run.started_at_ms,
                finished_at_ms: run.finished_at_ms,
            })
            .filter(|s| filter.state.is_none_or(|want| s.state == want))
            .collect();
        all.sort_by(|a, b| {
            (b.started_at_ms, &b.execution_id).cmp(&(a.started_at_ms, &a.execution_id))
        });
        Ok(all
            .into_iter()
            .skip(filter.offset)
            .take(filter.limit)
            .collect())
    }

    async fn record_events(
        &self,
        execution_id: &str,
        events: Vec<Event>,
    ) -> Result<(), StoreError> {
        self.with_run(execution_id, |run| run.keep_events(execution_id, events))
    }

    async fn events(
        &self,
        execution_id: &str,
        after_seq: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        self.with_run(execution_id, |run| {
            Ok(run
                .events
                .iter()
                .filter(|e| after_seq.is_none_or(|a| e.seq > a))
                .take(limit)
                .cloned()
                .collect())
        })
    }

    async fn lease(&self, execution_id: &str) -> Result<Option<Lease>, StoreError> {
        self.with_run(execution_id, |run| Ok(run.lease.clone()))
    }

    async fn acquire(&self, execution_id: &str, owner: &str) -> Result<Lease, StoreError> {
        let ttl = self.lease_ttl;
        self.with_run(execution_id, |run| {
            let lease = grant_lease(
                run.lease.as_ref(),
                execution_id,
                owner,
                wall_clock_ms(),
                ttl,
            )?;
            run.lease = Some(lease.clone());
            Ok(lease)
        })
    }

    async fn renew(&self, lease: &Lease) -> Result<Lease, StoreError> {
        let ttl = self.lease_ttl;
        self.with_run(&lease.execution_id, |run| {
            let renewed = renew_lease(run.lease.as_ref(), lease, wall_clock_ms(), ttl)?;
            run.lease = Some(renewed.clone());
            Ok(renewed)
        })
    }

    async fn heartbeat(&self, lease: &Lease) -> Result<Heartbeat, StoreError> {
        let ttl = self.lease_ttl;
        self.with_run(&lease.execution_id, |run| {
            let renewed = renew_lease(run.lease.as_ref(), lease, wall_clock_ms(), ttl)?;
            run.lease = Some(renewed.clone());
            Ok(Heartbeat {
                lease: renewed,
                cancel_requested: run.entries.iter().any(|e| is_run_cancel(&e.record)),
            })
        })
    }

    async fn release(&self, lease: Lease) -> Result<(), StoreError> {
        self.with_run(&lease.execution_id, |run| {
            if let Some(lapsed) = released_lease(run.lease.as_ref(), &lease) {
                run.lease = Some(lapsed);
            }
            Ok(())
        })
    }
}
