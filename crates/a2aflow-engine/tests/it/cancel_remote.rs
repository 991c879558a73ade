//! `RemoteClient::cancel_remote`: a cancel journaled before a restart is sent by a fresh client
//! as CancelTask on the agent's transport, bounded by the deadline; failures are typed.

use crate::journal_support::{LONG, WIRES, client_for, count, crash_once_known, serve};
use a2aflow_kernel::RemoteClient;
use a2aflow_model::ErrorCode;
use a2aflow_testkit::{Fault, Route};
use std::time::Duration;
use tokio::time::Instant;

#[tokio::test]
async fn a_journaled_cancel_reaches_the_agent_and_cancels_its_task() {
    for wire in WIRES {
        let server = serve(wire, |a| a).await;
        let crashed = crash_once_known(&server, wire, "slow 30 to cancel").await;
        let task_id = crashed.known()[0].clone();
        let fresh = client_for(&server, wire).await;
        fresh
            .cancel_remote("a", &task_id, Instant::now() + LONG)
            .await
            .unwrap_or_else(|f| panic!("{wire:?}: {f}"));
        assert_eq!(count(&server, Route::Cancel), 1, "{wire:?}: one CancelTask");
        let task = server.task("a", &task_id).unwrap();
        assert_eq!(
            task["status"]["state"], "TASK_STATE_CANCELED",
            "{wire:?}: {task}"
        );
        server.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn a_task_the_agent_does_not_know_is_its_typed_refusal() {
    for wire in WIRES {
        let server = serve(wire, |a| a).await;
        let fresh = client_for(&server, wire).await;
        let f = fresh
            .cancel_remote("a", "no-such-task", Instant::now() + LONG)
            .await
            .unwrap_err();
        assert!(f.is(ErrorCode::A2aTaskNotFound), "{wire:?}: {f}");
        assert_eq!(f.details["remoteTaskId"], "no-such-task", "{wire:?}");
        assert_eq!(f.details["agent"], "a", "{wire:?}");
        server.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn an_unknown_agent_sends_nothing() {
    let wire = WIRES[0];
    let server = serve(wire, |a| a).await;
    let fresh = client_for(&server, wire).await;
    let f = fresh
        .cancel_remote("b", "t1", Instant::now() + LONG)
        .await
        .unwrap_err();
    assert!(f.is(ErrorCode::WorkflowUnknownAgent), "{f}");
    assert_eq!(count(&server, Route::Cancel), 0);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_agent_that_never_answers_is_bounded_by_the_deadline() {
    let wire = WIRES[0];
    let server = serve(wire, |a| a).await;
    server
        .set_fault("a", Route::Cancel, Fault::NeverAnswer)
        .unwrap();
    let fresh = client_for(&server, wire).await;
    let guard = tokio::time::timeout(
        LONG,
        fresh.cancel_remote("a", "t1", Instant::now() + Duration::from_millis(200)),
    );
    let f = guard.await.expect("cancel_remote hung").unwrap_err();
    assert!(
        f.is(ErrorCode::A2aTimeout) || f.is(ErrorCode::WorkflowTimeout),
        "{f}"
    );
    server.shutdown().await.unwrap();
}
