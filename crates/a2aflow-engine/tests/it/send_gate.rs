//! The journal's last check before a send is written (`DispatchJournal::send_check`, asked on
//! the connection as the request's bytes would go): closed, the message is withheld on every
//! binding and nothing reaches the agent; open, it goes, and the check was asked once per send.

use crate::journal_support::{ALL_WIRES, Recorder, client_for, dispatch, sent_messages, serve};
use a2aflow_engine::{A2aEngineClient, ClientConfig};
use a2aflow_kernel::SendCheck;
use a2aflow_model::ErrorCode;
use a2aflow_protocol::{Binding, CallOptions, HttpClient, connect};
use a2aflow_testkit::{AgentSpec, TestServer};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A check that answers `open` and counts how often it was asked.
fn counted(open: bool) -> (SendCheck, Arc<AtomicUsize>) {
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&asked);
    let check: SendCheck = Arc::new(move || {
        counter.fetch_add(1, Ordering::SeqCst);
        open
    });
    (check, asked)
}

/// Dispatches one task through `client` with a check answering `open`; what the check was
/// asked, the failure code when the dispatch failed, and the tasks agent `a` holds afterwards.
async fn dispatch_checked(
    server: &Arc<TestServer>,
    client: &A2aEngineClient,
    open: bool,
) -> (usize, Option<ErrorCode>, usize) {
    let (check, asked) = counted(open);
    let journal = Recorder::checking(server, check);
    let code = match dispatch(client, "task checked", &journal).await {
        Ok(_) => None,
        Err(e) => Some(e.failure.error_code().expect("a known code")),
    };
    assert_eq!(journal.sends().len(), 1, "the send was journaled first");
    (asked.load(Ordering::SeqCst), code, server.task_count("a"))
}

#[tokio::test]
async fn a_closed_check_withholds_the_message_and_an_open_one_lets_it_go() {
    for wire in ALL_WIRES {
        let server = serve(wire, |a| a).await;
        let client = client_for(&server, wire).await;
        let withheld = dispatch_checked(&server, &client, false).await;
        assert_eq!(
            withheld,
            (1, Some(ErrorCode::WorkflowCancelled), 0),
            "{wire:?}: asked once, withheld, no task"
        );
        assert!(sent_messages(&server).is_empty(), "{wire:?}");
        // The same client (its pooled connection) sends the next one.
        let sent = dispatch_checked(&server, &client, true).await;
        assert_eq!(sent, (1, None, 1), "{wire:?}");
        assert_eq!(sent_messages(&server).len(), 1, "{wire:?}");
        server.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn over_grpc_a_closed_check_withholds_the_message_too() {
    let spec = AgentSpec::new("a").bindings(&[a2aflow_testkit::Binding::Grpc]);
    let server = Arc::new(TestServer::builder().agent(spec).spawn().await.unwrap());
    let http = HttpClient::new().unwrap();
    let card = http
        .fetch_agent_card(&server.card_url("a"), &CallOptions::default())
        .await
        .unwrap();
    let transport = connect(&card, &http, &[Binding::Grpc]).unwrap();
    assert_eq!(transport.binding(), Binding::Grpc);
    let client = A2aEngineClient::new(ClientConfig::default())
        .unwrap()
        .with_agent(&card, transport)
        .unwrap();
    let withheld = dispatch_checked(&server, &client, false).await;
    assert_eq!(withheld, (1, Some(ErrorCode::WorkflowCancelled), 0));
    let sent = dispatch_checked(&server, &client, true).await;
    assert_eq!(sent, (1, None, 1));
    server.shutdown().await.unwrap();
}
