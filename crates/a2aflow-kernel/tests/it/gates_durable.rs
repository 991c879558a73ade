//! Gates of a durable run: `GateOpened`, `GateAnswered` and `GateDeclined` are journaled; a run
//! resumed with an open gate parks it again without sending anything; a journaled answer that
//! was never sent is sent on resume, as the follow-up on the same remote task and context.

use crate::support::{Host, step, wf};
use a2aflow_kernel::{
    AgentScript, GateBoard, GatePolicy, InMemoryClient, JournalRecord, MemoryStore, RunInput,
    RunOptions, RunStore, ScriptedReply, resume,
};
use a2aflow_model::{ErrorCode, ExecutionResult, Gate, MessageContent, OpenGate};
use std::sync::Arc;
use std::time::Duration;

const HANG: Duration = Duration::from_secs(20);
const EXEC: &str = "gated-run";

fn client() -> Arc<InMemoryClient> {
    Arc::new(InMemoryClient::new().agent(
        "gated",
        AgentScript::reply(ScriptedReply::Gate {
            gate: Gate::InputRequired,
            then: Box::new(ScriptedReply::Echo),
        }),
    ))
}

fn options(store: &Arc<MemoryStore>, board: &GateBoard) -> RunOptions {
    RunOptions {
        store: Some(store.clone()),
        execution_id: Some(EXEC.into()),
        gate_policy: GatePolicy::Park,
        gate_board: Some(board.clone()),
        ..Default::default()
    }
}

async fn open_gate(board: &GateBoard) -> OpenGate {
    let wait = async {
        loop {
            if let Some(g) = board.open_gates(EXEC).into_iter().next() {
                return g;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(HANG, wait)
        .await
        .expect("the gate opens")
}

/// Runs until the task parks, then "crashes" (the run is dropped, its lease left to expire).
async fn parked_then_crashed(store: &Arc<MemoryStore>, client: &Arc<InMemoryClient>) -> OpenGate {
    let board = GateBoard::new();
    let w = wf(vec![step("ask", &["gated"], &[])]);
    let run = tokio::spawn(a2aflow_kernel::run(
        w,
        RunInput::default(),
        Arc::new(Host::default()),
        client.clone(),
        options(store, &board),
    ));
    let gate = open_gate(&board).await;
    run.abort();
    let _ = run.await;
    // The lease lives 100 ms without renewal.
    tokio::time::sleep(Duration::from_millis(300)).await;
    gate
}

fn records(journal: &a2aflow_kernel::RunJournal) -> Vec<&'static str> {
    journal.entries.iter().map(|e| e.record.kind()).collect()
}

async fn resumed(
    store: &Arc<MemoryStore>,
    client: &Arc<InMemoryClient>,
    board: &GateBoard,
) -> tokio::task::JoinHandle<ExecutionResult> {
    let (store, client, options) = (store.clone(), client.clone(), options(store, board));
    tokio::spawn(async move {
        resume(EXEC, store, Arc::new(Host::default()), client, options)
            .await
            .unwrap()
    })
}

#[tokio::test]
async fn a_resumed_run_parks_its_open_gate_again_without_a_send_and_takes_the_answer() {
    let store = Arc::new(MemoryStore::with_lease_ttl(Duration::from_millis(100)));
    let client = client();
    let gate = parked_then_crashed(&store, &client).await;
    let journal = store.load(EXEC).await.unwrap();
    assert!(
        records(&journal).contains(&"gateOpened"),
        "{:?}",
        records(&journal)
    );

    let board = GateBoard::new();
    let run = resumed(&store, &client, &board).await;
    let again = open_gate(&board).await;
    assert_eq!(again, gate, "the same gate, with its evidence");
    assert_eq!(client.dispatches("gated"), 1, "nothing sent on resume");
    assert_eq!(client.reattached(), 0);
    board
        .answer(EXEC, &gate.local_task_id, MessageContent::text("Paris"))
        .unwrap();
    let r = tokio::time::timeout(HANG, run).await.unwrap().unwrap();
    assert!(r.success, "{:?}", r.failure);
    let follow_ups = client.follow_ups();
    assert_eq!(follow_ups.len(), 1);
    assert_eq!(follow_ups[0].context_id, gate.context_id);
    assert_eq!(Some(follow_ups[0].continues.clone()), gate.remote_task_id);
    let kinds = records(&store.load(EXEC).await.unwrap());
    let answered = kinds.iter().position(|k| *k == "gateAnswered").unwrap();
    let intent = kinds.iter().rposition(|k| *k == "taskIntent").unwrap();
    assert!(
        answered < intent,
        "the answer is journaled before its send: {kinds:?}"
    );
}

#[tokio::test]
async fn a_journaled_answer_not_yet_sent_is_sent_on_resume() {
    let store = Arc::new(MemoryStore::with_lease_ttl(Duration::from_millis(100)));
    let client = client();
    let gate = parked_then_crashed(&store, &client).await;
    // The host answered while no driver held the run: the answer is in the journal only.
    store
        .append_batch(
            EXEC,
            vec![JournalRecord::GateAnswered {
                local_task_id: gate.local_task_id.clone(),
                content: MessageContent::text("Lyon"),
            }],
        )
        .await
        .unwrap();
    let board = GateBoard::new();
    let run = resumed(&store, &client, &board).await;
    let r = tokio::time::timeout(HANG, run).await.unwrap().unwrap();
    assert!(r.success, "{:?}", r.failure);
    let follow_ups = client.follow_ups();
    assert_eq!(follow_ups.len(), 1);
    assert_eq!(follow_ups[0].content, MessageContent::text("Lyon"));
    assert_eq!(follow_ups[0].context_id, gate.context_id);
    assert_eq!(Some(follow_ups[0].continues.clone()), gate.remote_task_id);
    assert!(board.open_gates(EXEC).is_empty());
}

#[tokio::test]
async fn a_run_with_only_open_gates_left_suspends_and_resumes_with_the_answer() {
    let store = Arc::new(MemoryStore::new());
    let client = Arc::new(
        InMemoryClient::new()
            .agent(
                "gated",
                AgentScript::reply(ScriptedReply::Gate {
                    gate: Gate::InputRequired,
                    then: Box::new(ScriptedReply::Echo),
                }),
            )
            .agent(
                "slow",
                AgentScript::reply(ScriptedReply::Echo).after(Duration::from_millis(100)),
            ),
    );
    let w = wf(vec![
        step("ask", &["gated"], &["join"]),
        step("other", &["slow"], &["join"]),
        step("join", &["slow"], &[]),
    ]);
    let board = GateBoard::new();
    let suspending = RunOptions {
        suspend_when_parked: true,
        ..options(&store, &board)
    };
    let host = Arc::new(Host::default());
    let first = a2aflow_kernel::run(
        w,
        RunInput::default(),
        host.clone(),
        client.clone(),
        suspending,
    );
    let r = tokio::time::timeout(HANG, first).await.unwrap();
    let failure = r.failure.clone().unwrap();
    assert!(failure.is(ErrorCode::WorkflowParked), "{failure:?}");
    let open = &failure.details["openGates"];
    assert_eq!(open.as_array().unwrap().len(), 1, "{open}");
    let local = open[0]["localTaskId"].as_str().unwrap().to_owned();
    // The slow branch finished before the run suspended; the gated task did not end.
    let journal = store.load(EXEC).await.unwrap();
    assert!(journal.finished().is_none(), "the run stays unfinished");
    let steps: Vec<&str> = journal
        .entries
        .iter()
        .filter_map(|e| match &e.record {
            JournalRecord::StepFinished { result } => Some(result.step_name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(steps, ["other"]);
    assert!(
        client.remote_cancels().is_empty(),
        "suspending cancels nothing"
    );

    store
        .append(
            EXEC,
            JournalRecord::GateAnswered {
                local_task_id: local.clone(),
                content: MessageContent::text("Paris"),
            },
        )
        .await
        .unwrap();
    // The lease was released: a resume right away takes the run.
    let board = GateBoard::new();
    let resumed = RunOptions {
        suspend_when_parked: true,
        ..options(&store, &board)
    };
    let r = tokio::time::timeout(
        HANG,
        resume(EXEC, store.clone(), host, client.clone(), resumed),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(r.success, "{:?}", r.failure);
    let follow_ups = client.follow_ups();
    assert_eq!(follow_ups.len(), 1);
    assert_eq!(follow_ups[0].local_task_id, local);
    assert_eq!(
        client.dispatches("gated"),
        2,
        "the first send and the answer"
    );
}

#[tokio::test]
async fn without_the_option_a_parked_durable_run_keeps_waiting() {
    let store = Arc::new(MemoryStore::new());
    let client = client();
    let board = GateBoard::new();
    let w = wf(vec![step("ask", &["gated"], &[])]);
    let run = tokio::spawn(a2aflow_kernel::run(
        w,
        RunInput::default(),
        Arc::new(Host::default()),
        client.clone(),
        options(&store, &board),
    ));
    let gate = open_gate(&board).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!run.is_finished(), "the run waits at its gate");
    board
        .answer(EXEC, &gate.local_task_id, MessageContent::text("x"))
        .unwrap();
    let r = tokio::time::timeout(HANG, run).await.unwrap().unwrap();
    assert!(r.success, "{:?}", r.failure);
}
