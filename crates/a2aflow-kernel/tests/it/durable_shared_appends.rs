//! Which records of a durable run's task share an append: the host's `on_task` answer goes in
//! the append of the send's `taskIntent` (still before the send), and a remote task the agent
//! names already finished goes in the append of the task's end; a task named while it still
//! works is journaled at once, as before, and so is an answer that has to wait for a slot of the
//! limiter (one that finds a free slot goes with its send). Answers that wait for their append
//! together share one.

use crate::support::*;
use a2aflow_kernel::journal::{CallbackAnswered, JournalRecord, Lease, RunJournal};
use a2aflow_kernel::{
    DispatchRequest, MemoryStore, RemoteClient, RunInput, RunOptions, RunStore, SendIntent,
    StoreError, TaskFailure, TaskOutcome,
};
use a2aflow_model::a2a::TaskState;
use async_trait::async_trait;
use std::ops::Range;
use std::sync::{Arc, Mutex};

const EXEC: &str = "exec";

/// A [`MemoryStore`] that keeps what each of the driver's appends held, as (kind, local task).
#[derive(Default)]
struct Appends {
    inner: MemoryStore,
    appends: Mutex<Vec<Vec<(&'static str, String)>>>,
    /// How long each of the driver's appends takes.
    slow: Option<std::time::Duration>,
}

/// The local task a record is about, when it names one.
fn task_of(record: &JournalRecord) -> String {
    match record {
        JournalRecord::CallbackAnswered(CallbackAnswered::OnTask { key, .. }) => {
            key.local_task_id.clone()
        }
        JournalRecord::TaskIntent(i) => i.local_task_id.clone(),
        JournalRecord::RemoteTaskKnown { local_task_id, .. }
        | JournalRecord::RemoteState { local_task_id, .. }
        | JournalRecord::TaskFinished { local_task_id, .. } => local_task_id.clone(),
        _ => String::new(),
    }
}

impl Appends {
    /// The appends that hold a record about `local`, each as its kinds for that task.
    fn of(&self, local: &str) -> Vec<Vec<&'static str>> {
        self.appends
            .lock()
            .unwrap()
            .iter()
            .map(|a| {
                a.iter()
                    .filter(|(_, t)| t == local)
                    .map(|(k, _)| *k)
                    .collect::<Vec<_>>()
            })
            .filter(|a| !a.is_empty())
            .collect()
    }
}

#[async_trait]
impl StoreHooks for Appends {
    fn store(&self) -> &dyn RunStore {
        &self.inner
    }
    async fn append_driven(
        &self,
        lease: &Lease,
        records: Vec<JournalRecord>,
    ) -> Result<Range<u64>, StoreError> {
        let kinds = records.iter().map(|r| (r.kind(), task_of(r))).collect();
        self.appends.lock().unwrap().push(kinds);
        if let Some(slow) = self.slow {
            tokio::time::sleep(slow).await;
        }
        self.inner.append_driven(lease, records).await
    }
}

/// Sends (journaled), then names its remote task in `named` (a streamed task goes on to
/// `Completed` after it), then answers.
struct Naming {
    named: TaskState,
}

#[async_trait]
impl RemoteClient for Naming {
    async fn dispatch(&self, request: DispatchRequest<'_>) -> Result<TaskOutcome, TaskFailure> {
        let message_id = format!("{}-m", request.local_task_id);
        let remote = format!("{}-r", request.local_task_id);
        let intent = SendIntent {
            context_id: "ctx",
            message_id: &message_id,
            remote_task_id: None,
            content: &request.content,
        };
        let journal = request.journal;
        journal
            .before_send(intent)
            .await
            .map_err(TaskFailure::new)?;
        journal
            .remote_task_named("ctx", &remote, Some(self.named.clone()))
            .await;
        if self.named != TaskState::Completed {
            journal.remote_state(&remote, TaskState::Completed).await;
        }
        Ok(TaskOutcome::default())
    }
}

/// Runs a step of two subtasks against `client`; the store's appends and the journal.
async fn run_two(client: Naming, limit: Option<usize>) -> (Arc<Hooked<Appends>>, RunJournal) {
    let store = Arc::new(Hooked(Appends::default()));
    run_step(&store, &["x", "y"], client, limit).await;
    let journal = store.load(EXEC).await.unwrap();
    (store, journal)
}

/// Runs one step of `subtasks` against `client`, journaled in `store`; it must succeed.
async fn run_step(
    store: &Arc<Hooked<Appends>>,
    subtasks: &[&str],
    client: Naming,
    limit: Option<usize>,
) {
    let options = RunOptions {
        store: Some(store.clone()),
        execution_id: Some(EXEC.into()),
        max_concurrent_remote_tasks: limit,
        ..Default::default()
    };
    let w = wf(vec![step("a", subtasks, &[])]);
    let r = a2aflow_kernel::run(
        w,
        RunInput::default(),
        Arc::new(Host::default()),
        Arc::new(client),
        options,
    )
    .await;
    assert!(r.success, "{:?}", r.failure);
}

const TASKS: [&str; 2] = ["exec:a:0", "exec:a:1"];

#[tokio::test]
async fn a_task_named_finished_costs_two_appends_its_send_and_its_end() {
    let (store, journal) = run_two(
        Naming {
            named: TaskState::Completed,
        },
        None,
    )
    .await;
    for local in TASKS {
        assert_eq!(
            store.of(local),
            vec![
                vec!["callbackAnswered", "taskIntent"],
                vec!["remoteTaskKnown", "remoteState", "taskFinished"],
            ],
            "{local}"
        );
    }
    // The journal reads as before: a resume finds the answer, the send and the remote task id.
    let remote_ids = journal
        .entries
        .iter()
        .filter(|e| matches!(&e.record, JournalRecord::RemoteTaskKnown { remote_task_id, .. } if remote_task_id.ends_with("-r")))
        .count();
    assert_eq!(remote_ids, 2);
}

#[tokio::test]
async fn a_task_named_while_it_works_is_journaled_at_once() {
    let (store, _) = run_two(
        Naming {
            named: TaskState::Working,
        },
        None,
    )
    .await;
    for local in TASKS {
        assert_eq!(
            store.of(local),
            vec![
                vec!["callbackAnswered", "taskIntent"],
                vec!["remoteTaskKnown"],
                vec!["remoteState", "taskFinished"],
            ],
            "{local}"
        );
    }
}

/// Sends (journaled) only once the store holds the `on_task` answer of another task of the run,
/// then answers: with a limit of one, the first task holds the only slot until the second one's
/// answer was journaled.
struct WaitsForTheOther {
    store: Arc<Hooked<Appends>>,
}

impl WaitsForTheOther {
    fn other_answered(&self, local: &str) -> bool {
        self.store
            .appends
            .lock()
            .unwrap()
            .iter()
            .flatten()
            .any(|(kind, task)| *kind == "callbackAnswered" && !task.is_empty() && task != local)
    }
}

#[async_trait]
impl RemoteClient for WaitsForTheOther {
    async fn dispatch(&self, request: DispatchRequest<'_>) -> Result<TaskOutcome, TaskFailure> {
        let message_id = format!("{}-m", request.local_task_id);
        let intent = SendIntent {
            context_id: "ctx",
            message_id: &message_id,
            remote_task_id: None,
            content: &request.content,
        };
        request
            .journal
            .before_send(intent)
            .await
            .map_err(TaskFailure::new)?;
        let waited = tokio::time::timeout(std::time::Duration::from_secs(10), async {
            while !self.other_answered(request.local_task_id) {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        })
        .await;
        assert!(
            waited.is_ok(),
            "the other task's answer was never journaled"
        );
        Ok(TaskOutcome::default())
    }
}

#[tokio::test]
async fn an_answer_that_waits_for_the_limiter_is_journaled_before_the_wait() {
    let store = Arc::new(Hooked(Appends::default()));
    let options = RunOptions {
        store: Some(store.clone()),
        execution_id: Some(EXEC.into()),
        max_concurrent_remote_tasks: Some(1),
        ..Default::default()
    };
    let client = WaitsForTheOther {
        store: store.clone(),
    };
    let w = wf(vec![step("a", &["x", "y"], &[])]);
    let r = a2aflow_kernel::run(
        w,
        RunInput::default(),
        Arc::new(Host::default()),
        Arc::new(client),
        options,
    )
    .await;
    assert!(r.success, "{:?}", r.failure);
    let mut shapes: Vec<_> = TASKS.iter().map(|t| store.of(t)).collect();
    shapes.sort();
    // The task that found the slot free sends its answer in its send's append; the one that
    // waited for the slot journaled its answer before the wait.
    assert_eq!(shapes[0][0], vec!["callbackAnswered"], "{shapes:?}");
    assert_eq!(shapes[0][1], vec!["taskIntent"], "{shapes:?}");
    assert_eq!(
        shapes[1][0],
        vec!["callbackAnswered", "taskIntent"],
        "{shapes:?}"
    );
}

/// With a limit of one, every task but the first answers before a wait for the slot, and each
/// answer is journaled before that wait; the answers given while one such append is under way
/// go together in the next one instead of one append each. Each answer is journaled once, and
/// before its task's `taskIntent`.
#[tokio::test(start_paused = true)]
async fn answers_given_while_an_append_is_under_way_share_the_next_one() {
    const N: usize = 8;
    let store = Arc::new(Hooked(Appends {
        slow: Some(std::time::Duration::from_millis(5)),
        ..Default::default()
    }));
    let subtasks: Vec<String> = (0..N).map(|n| format!("t{n}")).collect();
    let subtasks: Vec<&str> = subtasks.iter().map(String::as_str).collect();
    let client = Naming {
        named: TaskState::Completed,
    };
    run_step(&store, &subtasks, client, Some(1)).await;
    let appends = store.appends.lock().unwrap().clone();
    let answer_appends: Vec<_> = appends
        .iter()
        .filter(|a| !a.is_empty() && a.iter().all(|(k, _)| *k == "callbackAnswered"))
        .collect();
    let waited: usize = answer_appends.iter().map(|a| a.len()).sum();
    assert_eq!(
        waited,
        N - 1,
        "every task but the first waited: {appends:?}"
    );
    assert!(
        answer_appends.len() < N - 1,
        "{} answers that waited took {} appends: {appends:?}",
        N - 1,
        answer_appends.len()
    );
    let journal = store.load(EXEC).await.unwrap();
    for n in 0..N {
        let local = format!("exec:a:{n}");
        let at = |kind: &str| -> Vec<u64> {
            journal
                .entries
                .iter()
                .filter(|e| e.record.kind() == kind && task_of(&e.record) == local)
                .map(|e| e.seq)
                .collect()
        };
        let (answers, intents) = (at("callbackAnswered"), at("taskIntent"));
        assert_eq!((answers.len(), intents.len()), (1, 1), "{local}");
        assert!(answers[0] < intents[0], "{local}: {answers:?} {intents:?}");
    }
}
