//! Gates that park: with `GatePolicy::Park` a task stopped at INPUT_REQUIRED or AUTH_REQUIRED
//! waits for the host's answer through the `GateBoard` while other branches run; an answer is a
//! follow-up on the same remote task and context; a decline fails the task with the host's code
//! and cancels the remote task; the deadline ends the gate with its own code.

use crate::support::{Host, Recorder, go_with, step, wf};
use a2aflow_kernel::{
    AgentScript, GateBoard, GatePolicy, InMemoryClient, RunOptions, ScriptedReply,
};
use a2aflow_model::event_data::TaskGatedData;
use a2aflow_model::{
    ErrorCode, EventKind, EventPayload, ExecutionResult, Gate, MessageContent, OpenGate,
    TaskResultView, Workflow,
};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A hang guard, never an expectation about timing.
const HANG: Duration = Duration::from_secs(20);

fn gated(gate: Gate, then: ScriptedReply) -> AgentScript {
    AgentScript::reply(ScriptedReply::Gate {
        gate,
        then: Box::new(then),
    })
}

/// `ask` (agent `gated`) and `other` (agent `plain`, echo) are roots; `join` joins them.
fn branches() -> Workflow {
    wf(vec![
        step("ask", &["gated"], &["join"]),
        step("other", &["plain"], &["join"]),
        step("join", &["plain"], &[]),
    ])
}

struct Parked {
    run: JoinHandle<ExecutionResult>,
    board: GateBoard,
    client: Arc<InMemoryClient>,
    rec: Recorder,
    cancel: CancellationToken,
}

fn park(w: Workflow, script: AgentScript, timeout: Duration) -> Parked {
    let client = Arc::new(InMemoryClient::new().agent("gated", script));
    let board = GateBoard::new();
    let rec = Recorder::default();
    let cancel = CancellationToken::new();
    let options = RunOptions {
        cancel: cancel.clone(),
        gate_policy: GatePolicy::Park,
        gate_board: Some(board.clone()),
        timeout,
        ..rec.options()
    };
    let host = Arc::new(Host::default());
    let run = tokio::spawn({
        let client = client.clone();
        async move { go_with(w, &host, &client, options).await }
    });
    Parked {
        run,
        board,
        client,
        rec,
        cancel,
    }
}

/// The open gates of run `exec` once there are `n` of them.
async fn open_gates(board: &GateBoard, n: usize) -> Vec<OpenGate> {
    let wait = async {
        loop {
            let open = board.open_gates("exec");
            if open.len() == n {
                return open;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(HANG, wait)
        .await
        .expect("the gate opens")
}

async fn result(p: Parked) -> ExecutionResult {
    tokio::time::timeout(HANG, p.run)
        .await
        .expect("the run ends")
        .unwrap()
}

fn task_of<'a>(r: &'a ExecutionResult, step: &str) -> &'a TaskResultView {
    let s = r.steps.iter().find(|s| s.step_name == step).unwrap();
    &s.task_results[0]
}

fn gated_events(rec: &Recorder) -> Vec<TaskGatedData> {
    rec.events()
        .iter()
        .filter(|e| e.kind == EventKind::TaskGated)
        .map(|e| match e.payload().unwrap() {
            EventPayload::TaskGated(d) => d,
            other => panic!("{other:?}"),
        })
        .collect()
}

#[tokio::test]
async fn a_parked_branch_waits_while_another_completes_and_an_answer_completes_it() {
    let p = park(
        branches(),
        gated(Gate::InputRequired, ScriptedReply::Echo),
        Duration::from_secs(60),
    );
    let open = open_gates(&p.board, 1).await;
    let gate = &open[0];
    assert_eq!(gate.gate, Gate::InputRequired);
    assert_eq!(gate.step, "ask");
    assert_eq!(gate.agent, "gated");
    assert_eq!(gate.text.as_deref(), Some("need more input"));
    let (context_id, remote) = (gate.context_id.clone(), gate.remote_task_id.clone());
    assert!(context_id.is_some() && remote.is_some(), "{gate:?}");
    // The other branch is not held up by the gate.
    let other_done = async {
        while p.rec.pos(EventKind::StepComplete, Some("other")).is_none() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(HANG, other_done).await.unwrap();
    assert!(p.rec.pos(EventKind::StepStart, Some("join")).is_none());
    // The event carries what the board shows.
    assert_eq!(gated_events(&p.rec), open);

    p.board
        .answer("exec", &gate.local_task_id, MessageContent::text("Paris"))
        .unwrap();
    let (client, local) = (p.client.clone(), gate.local_task_id.clone());
    let r = result(p).await;
    assert!(r.success, "{:?}", r.failure);
    let follow_ups = client.follow_ups();
    assert_eq!(follow_ups.len(), 1);
    assert_eq!(follow_ups[0].local_task_id, local);
    assert_eq!(follow_ups[0].context_id, context_id);
    assert_eq!(Some(follow_ups[0].continues.clone()), remote);
    assert_eq!(follow_ups[0].content, MessageContent::text("Paris"));
    // The result keeps the gate's evidence and the answer's.
    let view = task_of(&r, "ask");
    assert_eq!(view.received_messages.len(), 2, "{view:?}");
    assert_eq!(view.remote_task_id, remote);
}

#[tokio::test]
async fn an_answer_may_meet_another_gate_which_parks_again() {
    let script = gated(
        Gate::InputRequired,
        ScriptedReply::Gate {
            gate: Gate::AuthRequired,
            then: Box::new(ScriptedReply::Echo),
        },
    );
    let p = park(
        wf(vec![step("ask", &["gated"], &[])]),
        script,
        Duration::from_secs(60),
    );
    let first = open_gates(&p.board, 1).await.remove(0);
    p.board
        .answer("exec", &first.local_task_id, MessageContent::text("one"))
        .unwrap();
    let second = async {
        loop {
            let open = p.board.open_gates("exec");
            if open.first().is_some_and(|g| g.gate == Gate::AuthRequired) {
                return open;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    let second = tokio::time::timeout(HANG, second).await.unwrap().remove(0);
    assert_eq!(second.context_id, first.context_id);
    p.board
        .answer("exec", &second.local_task_id, MessageContent::text("two"))
        .unwrap();
    let client = p.client.clone();
    let rec = p.rec.clone();
    let r = result(p).await;
    assert!(r.success, "{:?}", r.failure);
    assert_eq!(client.follow_ups().len(), 2);
    assert_eq!(rec.count(EventKind::TaskGated), 2);
}

#[tokio::test]
async fn a_decline_fails_the_task_with_the_hosts_code_and_cancels_the_remote_task() {
    let p = park(
        branches(),
        gated(Gate::InputRequired, ScriptedReply::Echo),
        Duration::from_secs(60),
    );
    let gate = open_gates(&p.board, 1).await.remove(0);
    p.board
        .decline("exec", &gate.local_task_id, "biz.no_answer", "nobody knows")
        .unwrap();
    let client = p.client.clone();
    let r = result(p).await;
    assert!(!r.success);
    let view = task_of(&r, "ask");
    assert_eq!(view.error_code.as_deref(), Some("biz.no_answer"));
    assert_eq!(view.error.as_deref(), Some("nobody knows"));
    assert_eq!(
        client.remote_cancels(),
        [("gated".to_owned(), gate.remote_task_id.clone().unwrap())]
    );
    assert!(client.follow_ups().is_empty());
}

#[tokio::test]
async fn a_gate_still_open_at_the_deadline_ends_with_its_own_code() {
    for (gate, code) in [
        (Gate::InputRequired, ErrorCode::A2aInputRequired),
        (Gate::AuthRequired, ErrorCode::A2aAuthRequired),
    ] {
        let p = park(
            wf(vec![step("ask", &["gated"], &[])]),
            gated(gate, ScriptedReply::Echo),
            Duration::from_millis(300),
        );
        let client = p.client.clone();
        let board = p.board.clone();
        let r = result(p).await;
        assert!(!r.success);
        let view = task_of(&r, "ask");
        assert_eq!(view.error_code.as_deref(), Some(code.as_str()), "{view:?}");
        assert!(board.open_gates("exec").is_empty(), "the gate closed");
        assert!(client.follow_ups().is_empty());
    }
}

#[tokio::test]
async fn an_answer_to_a_task_without_an_open_gate_is_refused() {
    let p = park(
        wf(vec![step("ask", &["gated"], &[])]),
        gated(Gate::InputRequired, ScriptedReply::Echo),
        Duration::from_secs(60),
    );
    let gate = open_gates(&p.board, 1).await.remove(0);
    let text = || MessageContent::text("x");
    for (exec, task) in [
        ("exec", "exec:nope:0"),
        ("another-run", gate.local_task_id.as_str()),
    ] {
        let refused = p.board.answer(exec, task, text()).unwrap_err();
        assert!(refused.is(ErrorCode::WorkflowGateNotOpen), "{refused:?}");
        assert_eq!(refused.details["executionId"], exec);
        assert_eq!(refused.details["localTaskId"], task);
        let refused = p.board.decline(exec, task, "biz.x", "y").unwrap_err();
        assert!(refused.is(ErrorCode::WorkflowGateNotOpen), "{refused:?}");
    }
    p.board.answer("exec", &gate.local_task_id, text()).unwrap();
    let again = p
        .board
        .answer("exec", &gate.local_task_id, text())
        .unwrap_err();
    assert!(again.is(ErrorCode::WorkflowGateNotOpen), "{again:?}");
    let client = p.client.clone();
    let r = result(p).await;
    assert!(r.success, "{:?}", r.failure);
    assert_eq!(client.follow_ups().len(), 1, "one answer went out");
}

#[tokio::test]
async fn a_cancelled_run_cancels_its_parked_task() {
    let p = park(
        wf(vec![step("ask", &["gated"], &[])]),
        gated(Gate::AuthRequired, ScriptedReply::Echo),
        Duration::from_secs(60),
    );
    let gate = open_gates(&p.board, 1).await.remove(0);
    p.cancel.cancel();
    let (client, board) = (p.client.clone(), p.board.clone());
    let r = result(p).await;
    assert!(
        r.failure.as_ref().unwrap().is(ErrorCode::WorkflowCancelled),
        "{:?}",
        r.failure
    );
    assert!(board.open_gates("exec").is_empty());
    assert_eq!(
        client.remote_cancels(),
        [("gated".to_owned(), gate.remote_task_id.unwrap())]
    );
}

#[tokio::test]
async fn with_the_default_policy_a_gate_fails_its_task_as_before() {
    let client = Arc::new(
        InMemoryClient::new().agent("gated", gated(Gate::InputRequired, ScriptedReply::Echo)),
    );
    let rec = Recorder::default();
    let host = Arc::new(Host::default());
    let r = go_with(
        wf(vec![step("ask", &["gated"], &[])]),
        &host,
        &client,
        rec.options(),
    )
    .await;
    assert!(!r.success);
    let view = task_of(&r, "ask");
    assert_eq!(
        view.error_code.as_deref(),
        Some(ErrorCode::NegotiationNotNegotiable.as_str())
    );
    assert_eq!(rec.count(EventKind::TaskGated), 0);
    assert!(client.follow_ups().is_empty());
}
