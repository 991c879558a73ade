//! `RemoteClient::reattach`: a resumed run finds journaled work again by remote task id
//! (GetTask) or by context id (ListTasks) and waits on it; it sends nothing unless the host
//! allowed a resend of the journaled message.

use crate::journal_support::{
    Journaled, Recorder, WIRES, Wire, client_for, client_with, count, crash_once_known,
    data_outputs, dispatch, listed, reattach, sent_messages, serve, transport_for,
};
use a2aflow_engine::ClientConfig;
use a2aflow_kernel::{TaskFailure, TaskOutcome};
use a2aflow_model::a2a::{Message, Part, Role, SendMessageRequest, SendMessageResponse};
use a2aflow_model::{ErrorCode, Gate};
use a2aflow_protocol::CallOptions;
use a2aflow_testkit::{ListTasks, Route, TestServer};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// The context and message id of the first send the journal recorded.
fn first_send(journal: &Recorder) -> (String, String) {
    journal.sends().into_iter().next().unwrap()
}

#[tokio::test]
async fn by_remote_task_id_a_finished_task_gives_its_result_and_nothing_is_sent() {
    for wire in WIRES {
        let server = serve(wire, |a| a).await;
        let journal = Recorder::new(&server);
        let first = dispatch(&client_for(&server, wire).await, "task done", &journal)
            .await
            .unwrap();
        let (context_id, message_id) = first_send(&journal);
        let task_id = first.remote_task_id.clone().unwrap();
        let gets = count(&server, Route::Get);
        let again = Recorder::new(&server);
        let out = reattach(
            &client_for(&server, wire).await,
            Journaled {
                text: "task done",
                context_id: &context_id,
                message_id: &message_id,
                remote_task_id: Some(&task_id),
                resend: true,
            },
            &again,
        )
        .await
        .unwrap();
        assert_eq!(
            out.outputs, first.outputs,
            "{wire:?}: outputs as the live task's"
        );
        assert_eq!(out.remote_task_id.as_deref(), Some(task_id.as_str()));
        assert_eq!(out.context_id.as_deref(), Some(context_id.as_str()));
        assert_eq!(sent_messages(&server).len(), 1, "{wire:?}: nothing resent");
        assert_eq!(
            count(&server, Route::Get),
            gets + 1,
            "{wire:?}: one GetTask"
        );
        assert!(
            again.known().is_empty(),
            "{wire:?}: the journal knew the task"
        );
        assert_eq!(
            again.states(),
            [a2aflow_model::a2a::TaskState::Completed],
            "{wire:?}"
        );
        server.shutdown().await.unwrap();
    }
}

/// Crashes a `slow` dispatch once its task is known, then re-attaches with (`by_id`) or without
/// the journaled remote task id; the task finishes and stays the only one of its context.
async fn a_running_task_is_waited_on_to_its_end(wire: Wire, by_id: bool) {
    let server = serve(wire, |a| a).await;
    let crashed = crash_once_known(&server, wire, "slow 0.5 resumed").await;
    let (context_id, message_id) = first_send(&crashed);
    let task_id = crashed.known()[0].clone();
    let again = Recorder::new(&server);
    let out = reattach(
        &client_for(&server, wire).await,
        Journaled {
            text: "slow 0.5 resumed",
            context_id: &context_id,
            message_id: &message_id,
            remote_task_id: by_id.then_some(task_id.as_str()),
            resend: true,
        },
        &again,
    )
    .await
    .unwrap();
    let case = format!("{wire:?} by_id={by_id}");
    assert_eq!(data_outputs(&out)[0]["sleptSeconds"], json!(0.5), "{case}");
    assert_eq!(
        out.remote_task_id.as_deref(),
        Some(task_id.as_str()),
        "{case}"
    );
    assert_eq!(sent_messages(&server).len(), 1, "{case}: nothing resent");
    assert_eq!(
        listed(&server, wire, &context_id).await,
        std::slice::from_ref(&task_id),
        "{case}"
    );
    let waited = if wire.streaming {
        Route::Subscribe
    } else {
        Route::Get
    };
    assert!(
        count(&server, waited) >= 1,
        "{case}: waited on as a live task"
    );
    assert_eq!(
        count(&server, Route::List) > 1,
        !by_id,
        "{case}: ListTasks only by context"
    );
    // Found by context, the task id is news to the journal; by id it is not.
    let told: Vec<String> = if by_id { vec![] } else { vec![task_id] };
    assert_eq!(again.known(), told, "{case}");
    assert_eq!(
        again.states().last(),
        Some(&a2aflow_model::a2a::TaskState::Completed),
        "{case}"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn by_remote_task_id_a_running_task_is_waited_on_to_its_end() {
    for wire in WIRES {
        a_running_task_is_waited_on_to_its_end(wire, true).await;
    }
}

#[tokio::test]
async fn by_context_id_only_a_running_task_is_found_and_waited_on() {
    for wire in WIRES {
        a_running_task_is_waited_on_to_its_end(wire, false).await;
    }
}

type Reattached = Result<TaskOutcome, TaskFailure>;

/// Re-attaches by context id to a context the agent never saw (the host crashed between the
/// write-ahead record and the send).
async fn never_sent(server: &Arc<TestServer>, wire: Wire, resend: bool) -> (Recorder, Reattached) {
    let journal = Recorder::new(server);
    let result = reattach(
        &client_for(server, wire).await,
        Journaled {
            text: "task lost in the crash",
            context_id: "ctx-journaled",
            message_id: "msg-journaled",
            remote_task_id: None,
            resend,
        },
        &journal,
    )
    .await;
    (journal, result)
}

fn assert_outcome_unknown(result: Reattached, case: &str) {
    let e = result.unwrap_err();
    assert!(
        e.failure.is(ErrorCode::WorkflowOutcomeUnknown),
        "{case}: {e:?}"
    );
    assert_eq!(
        e.failure.details["contextId"],
        json!("ctx-journaled"),
        "{case}"
    );
    assert_eq!(e.failure.details["agent"], json!("a"), "{case}");
    assert_eq!(e.failure.details["localTaskId"], json!("local"), "{case}");
    assert_eq!(e.context_id.as_deref(), Some("ctx-journaled"), "{case}");
}

#[tokio::test]
async fn none_found_is_outcome_unknown_and_nothing_is_sent() {
    for wire in WIRES {
        let server = serve(wire, |a| a).await;
        let (journal, result) = never_sent(&server, wire, false).await;
        assert_outcome_unknown(result, &format!("{wire:?}"));
        assert_eq!(count(&server, Route::List), 1, "{wire:?}");
        assert!(sent_messages(&server).is_empty(), "{wire:?}");
        assert!(journal.records().is_empty(), "{wire:?}");
        server.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn none_found_with_resend_sends_the_journaled_message_once_with_its_ids() {
    for wire in WIRES {
        let server = serve(wire, |a| a).await;
        let (journal, result) = never_sent(&server, wire, true).await;
        let out = result.unwrap();
        assert_eq!(
            data_outputs(&out)[0]["echo"],
            json!("task lost in the crash")
        );
        let sent = sent_messages(&server);
        assert_eq!(sent.len(), 1, "{wire:?}: exactly one send");
        assert_eq!(sent[0]["messageId"], json!("msg-journaled"), "{wire:?}");
        assert_eq!(sent[0]["contextId"], json!("ctx-journaled"), "{wire:?}");
        assert_eq!(
            journal.sends(),
            [("ctx-journaled".to_owned(), "msg-journaled".to_owned())],
            "{wire:?}: the resend is journaled again"
        );
        assert_eq!(journal.known(), [out.remote_task_id.unwrap()], "{wire:?}");
        server.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn an_agent_that_cannot_list_tasks_is_outcome_unknown_unless_a_resend_is_allowed() {
    for wire in WIRES {
        for support in [ListTasks::Unsupported, ListTasks::Absent] {
            let case = format!("{wire:?} {support:?}");
            let server = serve(wire, |a| a.list_tasks(support)).await;
            let (_, result) = never_sent(&server, wire, false).await;
            assert_outcome_unknown(result, &case);
            assert_eq!(count(&server, Route::List), 1, "{case}");
            assert!(
                sent_messages(&server).is_empty(),
                "{case}: never a silent resend"
            );
            let (_, result) = never_sent(&server, wire, true).await;
            assert!(result.is_ok(), "{case}: {result:?}");
            assert_eq!(
                sent_messages(&server).len(),
                1,
                "{case}: the allowed resend"
            );
            server.shutdown().await.unwrap();
        }
    }
}

#[tokio::test]
async fn a_task_the_agent_no_longer_knows_is_outcome_unknown_even_with_resend() {
    for wire in WIRES {
        let server = serve(wire, |a| a).await;
        let journal = Recorder::new(&server);
        let result = reattach(
            &client_for(&server, wire).await,
            Journaled {
                text: "task gone",
                context_id: "ctx-journaled",
                message_id: "msg-journaled",
                remote_task_id: Some("task-evicted"),
                resend: true,
            },
            &journal,
        )
        .await;
        assert_outcome_unknown(result, &format!("{wire:?}"));
        assert!(
            sent_messages(&server).is_empty(),
            "{wire:?}: the task existed"
        );
        server.shutdown().await.unwrap();
    }
}

/// Sends `text` as message `message_id` in `context_id` straight through the transport.
async fn send_raw(server: &TestServer, wire: Wire, context_id: &str, message_id: &str, text: &str) {
    let (_, transport) = transport_for(server, wire).await;
    let request = SendMessageRequest {
        message: Message {
            message_id: message_id.to_owned(),
            context_id: Some(context_id.to_owned()),
            task_id: None,
            role: Role::User,
            parts: vec![Part::text(text)],
            metadata: None,
            extensions: None,
            reference_task_ids: None,
        },
        configuration: None,
        metadata: None,
        tenant: None,
    };
    let answer = transport
        .send_message(&request, &CallOptions::default())
        .await
        .unwrap();
    assert!(matches!(answer, SendMessageResponse::Task(_)));
}

#[tokio::test]
async fn of_several_tasks_in_the_context_the_one_holding_the_message_else_the_newest() {
    let wire = Wire {
        rest: false,
        streaming: false,
    };
    for wire in [wire, WIRES[1]] {
        let server = serve(wire, |a| a).await;
        send_raw(&server, wire, "ctx-journaled", "msg-older", "task older").await;
        send_raw(&server, wire, "ctx-journaled", "msg-newer", "task newer").await;
        // (journaled message id, the echo of the task found)
        for (message_id, found) in [
            ("msg-older", "task older"),
            ("msg-newer", "task newer"),
            ("msg-not-in-any-history", "task newer"),
        ] {
            let journal = Recorder::new(&server);
            let out = reattach(
                &client_for(&server, wire).await,
                Journaled {
                    text: "task older",
                    context_id: "ctx-journaled",
                    message_id,
                    remote_task_id: None,
                    resend: false,
                },
                &journal,
            )
            .await
            .unwrap();
            assert_eq!(
                data_outputs(&out)[0]["echo"],
                json!(found),
                "{wire:?} {message_id}"
            );
        }
        assert_eq!(sent_messages(&server).len(), 2, "{wire:?}");
        server.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn an_input_required_task_found_again_is_the_not_negotiable_gate() {
    for wire in WIRES {
        let server = serve(wire, |a| a).await;
        let journal = Recorder::new(&server);
        let first = dispatch(&client_for(&server, wire).await, "input later", &journal)
            .await
            .unwrap_err();
        let (context_id, message_id) = first_send(&journal);
        let task_id = first.remote_task_id.clone().unwrap();
        for by_id in [true, false] {
            let e = reattach(
                &client_for(&server, wire).await,
                Journaled {
                    text: "input later",
                    context_id: &context_id,
                    message_id: &message_id,
                    remote_task_id: by_id.then_some(task_id.as_str()),
                    resend: true,
                },
                &Recorder::new(&server),
            )
            .await
            .unwrap_err();
            assert!(
                e.failure.is(ErrorCode::NegotiationNotNegotiable),
                "{wire:?}: {e:?}"
            );
            assert_eq!(e.failure.gate(), Some(Gate::InputRequired), "{wire:?}");
            assert_eq!(e.remote_task_id.as_deref(), Some(task_id.as_str()));
        }
        assert_eq!(sent_messages(&server).len(), 1, "{wire:?}: nothing sent");
        assert_eq!(
            count(&server, Route::Cancel),
            0,
            "{wire:?}: a gate stays open"
        );
        server.shutdown().await.unwrap();
    }
}

/// A send the agent does not list at the first look may still be on its way in (its driver
/// stopped just after writing it): with a resend allowed, the agent is asked once more after the
/// grace, and the send that arrived meanwhile is the task waited on — nothing is resent.
#[tokio::test]
async fn a_send_that_arrives_within_the_grace_is_found_and_not_resent() {
    for wire in WIRES {
        let server = serve(wire, |a| a).await;
        let config = ClientConfig::default().with_resend_grace(Duration::from_millis(600));
        let client = client_with(&server, wire, config).await;
        let journal = Recorder::new(&server);
        let journaled = Journaled {
            text: "task late",
            context_id: "ctx-journaled",
            message_id: "msg-journaled",
            remote_task_id: None,
            resend: true,
        };
        let resumed = reattach(&client, journaled, &journal);
        let late = async {
            // The first look found nothing; the old driver's send arrives now.
            while count(&server, Route::List) == 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            send_raw(&server, wire, "ctx-journaled", "msg-journaled", "task late").await;
        };
        let (result, ()) = tokio::join!(resumed, late);
        let out = result.unwrap();
        assert_eq!(sent_messages(&server).len(), 1, "{wire:?}: nothing resent");
        assert_eq!(count(&server, Route::List), 2, "{wire:?}: looked twice");
        assert!(journal.sends().is_empty(), "{wire:?}: no send journaled");
        assert!(out.remote_task_id.is_some(), "{wire:?}");
        server.shutdown().await.unwrap();
    }
}
