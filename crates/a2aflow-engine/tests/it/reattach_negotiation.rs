//! `RemoteClient::reattach` of a task the host was killed in the middle of negotiating: found
//! again in INPUT_REQUIRED with its Negotiation-T proposal, it is negotiated on from the
//! journaled submission and finishes.

use crate::journal_support::{LONG, Recorder, WIRES, client_for, serve, task_request};
use a2aflow_kernel::{AttachRequest, DispatchRequest, EventEmitter, NegotiationHook, RemoteClient};
use a2aflow_model::a2a::Part;
use a2aflow_model::{Failure, MessageContent, NegotiationReply, NegotiationRequest};
use a2aflow_testkit::NEGOTIATION_T_URI;
use async_trait::async_trait;
use serde_json::{Map, json};
use std::sync::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The submission that activates Negotiation-T, as the host's `on_task` journaled it.
fn activated() -> MessageContent {
    let mut content = MessageContent::text("negotiate the price");
    content.extensions = vec![NEGOTIATION_T_URI.to_owned()];
    content
}

/// A host that accepts every proposal (`accept`) or is killed while it thinks (never answers,
/// tells `asked`).
struct Host {
    accept: bool,
    asked: Notify,
    rounds: Mutex<Vec<i64>>,
}

impl Host {
    fn new(accept: bool) -> Self {
        Host {
            accept,
            asked: Notify::new(),
            rounds: Mutex::default(),
        }
    }
}

#[async_trait]
impl NegotiationHook for Host {
    async fn negotiate(&self, request: NegotiationRequest) -> Result<NegotiationReply, Failure> {
        let mut context = request.negotiation_context.clone();
        self.rounds
            .lock()
            .unwrap()
            .push(context["round"].as_i64().unwrap_or_default());
        self.asked.notify_one();
        if !self.accept {
            return std::future::pending().await;
        }
        context["performative"] = json!("ACCEPT");
        let mut metadata = Map::new();
        metadata.insert(
            NEGOTIATION_T_URI.to_owned(),
            json!("## Information Negotiation Result\nACCEPT"),
        );
        metadata.insert("negotiationContext".to_owned(), context);
        Ok(NegotiationReply::Send {
            content: MessageContent {
                parts: vec![Part::text("ACCEPT")],
                metadata: Some(metadata),
                extensions: vec![NEGOTIATION_T_URI.to_owned()],
                context_id: None,
            },
        })
    }
}

fn request<'a>(
    task: &'a a2aflow_model::TaskRequest,
    host: &'a Host,
    journal: &'a Recorder,
) -> DispatchRequest<'a> {
    DispatchRequest {
        execution_id: "exec",
        local_task_id: "local",
        agent: "a",
        skill: "",
        content: activated(),
        context_id: None,
        continues: None,
        reference_task_ids: &[],
        task,
        deadline: Instant::now() + LONG,
        cancel: CancellationToken::new(),
        negotiation: host,
        events: EventEmitter::disabled(),
        journal,
    }
}

#[tokio::test]
async fn a_task_killed_mid_negotiation_is_negotiated_on_and_finishes() {
    for wire in WIRES {
        let server = serve(wire, |a| a.extension(NEGOTIATION_T_URI, false)).await;
        let client = client_for(&server, wire).await;
        let task = task_request();
        // The first host gets the proposal and is killed before it answers.
        let journal = Recorder::new(&server);
        let killed = Host::new(false);
        {
            let dispatch = client.dispatch(request(&task, &killed, &journal));
            tokio::pin!(dispatch);
            tokio::select! {
                r = &mut dispatch => panic!("{wire:?}: ended before the proposal: {r:?}"),
                () = killed.asked.notified() => {}
            }
        }
        let remote = journal
            .known()
            .into_iter()
            .next()
            .expect("the remote task id");
        let (context_id, message_id) = journal.sends().into_iter().next().unwrap();

        // A fresh host process finds it again by its journaled id.
        let host = Host::new(true);
        let out = client
            .reattach(AttachRequest {
                dispatch: request(&task, &host, &Recorder::new(&server)),
                context_id: &context_id,
                message_id: &message_id,
                remote_task_id: Some(remote.as_str()),
                resend: false,
            })
            .await
            .unwrap_or_else(|e| panic!("{wire:?}: {:?}", e.failure));
        assert_eq!(
            out.remote_task_id.as_deref(),
            Some(remote.as_str()),
            "{wire:?}"
        );
        assert!(
            !out.outputs.is_empty(),
            "{wire:?}: the accepted negotiation's output"
        );
        assert_eq!(
            *host.rounds.lock().unwrap(),
            vec![1],
            "{wire:?}: asked once"
        );
        server.shutdown().await.unwrap();
    }
}
