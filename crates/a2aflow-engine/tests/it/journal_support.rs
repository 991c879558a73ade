//! Shared set-up of the journal and re-attach tests: testkit agents over a chosen binding, a
//! recording [`DispatchJournal`], and requests built the way the kernel builds them.

use a2aflow_engine::{A2aEngineClient, ClientConfig};
use a2aflow_kernel::{
    AttachRequest, DispatchJournal, DispatchRequest, EventEmitter, NegotiationHook, RemoteClient,
    SendCheck, SendIntent, TaskFailure, TaskOutcome,
};
use a2aflow_model::a2a::{AgentCard, PartContent, TaskState};
use a2aflow_model::{
    Failure, MessageContent, NegotiationReply, NegotiationRequest, StepType, TaskInput,
    TaskRequest, WorkflowInput,
};
use a2aflow_protocol::{Binding, CallOptions, HttpClient, Transport, connect};
use a2aflow_testkit::list_in_context;
use a2aflow_testkit::{AgentSpec, RecordedRequest, Route, TestServer};
use async_trait::async_trait;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// A hang guard, never a timing assertion.
pub const LONG: Duration = Duration::from_secs(20);

/// One way of reaching an agent: the binding and whether the card streams.
#[derive(Debug, Clone, Copy)]
pub struct Wire {
    pub rest: bool,
    pub streaming: bool,
}

/// JSON-RPC blocking and HTTP+JSON streaming: both bindings, both ways of waiting.
pub const WIRES: [Wire; 2] = [
    Wire {
        rest: false,
        streaming: false,
    },
    Wire {
        rest: true,
        streaming: true,
    },
];

/// Every binding with every way of waiting.
pub const ALL_WIRES: [Wire; 4] = [
    WIRES[0],
    WIRES[1],
    Wire {
        rest: false,
        streaming: true,
    },
    Wire {
        rest: true,
        streaming: false,
    },
];

/// A server with agent `a` (built-in behaviours) streaming as `wire` says, edited by `edit`.
pub async fn serve(wire: Wire, edit: impl FnOnce(AgentSpec) -> AgentSpec) -> Arc<TestServer> {
    let spec = edit(AgentSpec::new("a").streaming(wire.streaming));
    Arc::new(TestServer::builder().agent(spec).spawn().await.unwrap())
}

pub async fn transport_for(server: &TestServer, wire: Wire) -> (AgentCard, Arc<dyn Transport>) {
    let http = HttpClient::new().unwrap();
    let card = http
        .fetch_agent_card(&server.card_url("a"), &CallOptions::default())
        .await
        .unwrap();
    let preference: &[Binding] = if wire.rest {
        &[Binding::HttpJson]
    } else {
        &[Binding::JsonRpc]
    };
    let transport = connect(&card, &http, preference).unwrap();
    (card, transport)
}

/// A fresh client (as after a host restart) for agent `a`.
pub async fn client_for(server: &TestServer, wire: Wire) -> A2aEngineClient {
    client_with(server, wire, ClientConfig::default()).await
}

pub async fn client_with(server: &TestServer, wire: Wire, config: ClientConfig) -> A2aEngineClient {
    let (card, transport) = transport_for(server, wire).await;
    A2aEngineClient::new(config)
        .unwrap()
        .with_agent(&card, transport)
        .unwrap()
}

/// What the journal was told, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    Send {
        context_id: String,
        message_id: String,
        remote_task_id: Option<String>,
        /// SendMessage requests the server had logged when the journal was told.
        logged_sends: usize,
    },
    Known {
        context_id: String,
        remote_task_id: String,
    },
    State {
        remote_task_id: String,
        state: TaskState,
    },
}

/// A journal that records everything, optionally refusing every send, optionally with a last
/// check before each send is written.
pub struct Recorder {
    server: Arc<TestServer>,
    records: Mutex<Vec<Record>>,
    refuse: Option<Failure>,
    check: Option<SendCheck>,
}

impl Recorder {
    pub fn new(server: &Arc<TestServer>) -> Self {
        Recorder {
            server: Arc::clone(server),
            records: Mutex::default(),
            refuse: None,
            check: None,
        }
    }

    /// A journal whose last check before each send is `check`.
    pub fn checking(server: &Arc<TestServer>, check: SendCheck) -> Self {
        Recorder {
            check: Some(check),
            ..Recorder::new(server)
        }
    }

    /// A journal whose `before_send` fails with `failure`.
    pub fn refusing(server: &Arc<TestServer>, failure: Failure) -> Self {
        Recorder {
            refuse: Some(failure),
            ..Recorder::new(server)
        }
    }

    pub fn records(&self) -> Vec<Record> {
        self.records.lock().unwrap().clone()
    }

    /// The remote task ids the journal was told, in order.
    pub fn known(&self) -> Vec<String> {
        self.records()
            .into_iter()
            .filter_map(|r| match r {
                Record::Known { remote_task_id, .. } => Some(remote_task_id),
                _ => None,
            })
            .collect()
    }

    /// The message ids of the sends the journal was told of, in order.
    pub fn sends(&self) -> Vec<(String, String)> {
        self.records()
            .into_iter()
            .filter_map(|r| match r {
                Record::Send {
                    context_id,
                    message_id,
                    ..
                } => Some((context_id, message_id)),
                _ => None,
            })
            .collect()
    }

    pub fn states(&self) -> Vec<TaskState> {
        self.records()
            .into_iter()
            .filter_map(|r| match r {
                Record::State { state, .. } => Some(state),
                _ => None,
            })
            .collect()
    }
}

#[async_trait]
impl DispatchJournal for Recorder {
    fn is_enabled(&self) -> bool {
        true
    }
    async fn before_send(&self, send: SendIntent<'_>) -> Result<(), Failure> {
        let logged_sends = sent_messages(&self.server).len();
        self.records.lock().unwrap().push(Record::Send {
            context_id: send.context_id.to_owned(),
            message_id: send.message_id.to_owned(),
            remote_task_id: send.remote_task_id.map(str::to_owned),
            logged_sends,
        });
        match &self.refuse {
            Some(f) => Err(f.clone()),
            None => Ok(()),
        }
    }
    fn send_check(&self) -> Option<SendCheck> {
        self.check.clone()
    }
    async fn remote_task_known(&self, context_id: &str, remote_task_id: &str) {
        self.records.lock().unwrap().push(Record::Known {
            context_id: context_id.to_owned(),
            remote_task_id: remote_task_id.to_owned(),
        });
    }
    async fn remote_state(&self, remote_task_id: &str, state: TaskState) {
        self.records.lock().unwrap().push(Record::State {
            remote_task_id: remote_task_id.to_owned(),
            state,
        });
    }
}

/// A host that never answers a negotiation (the tests here do not negotiate).
pub struct NoAnswer;

#[async_trait]
impl NegotiationHook for NoAnswer {
    async fn negotiate(&self, _: NegotiationRequest) -> Result<NegotiationReply, Failure> {
        std::future::pending().await
    }
}

pub fn task_request() -> TaskRequest {
    TaskRequest {
        execution_id: "exec".into(),
        workflow_id: "wf".into(),
        step_name: "s".into(),
        step_type: StepType::AllSuccess,
        subtask_index: 0,
        local_task_id: "local".into(),
        agent: "a".into(),
        skill: Default::default(),
        description: "d".into(),
        input: TaskInput::default(),
        workflow_input: WorkflowInput::default(),
        remaining_ms: 0,
    }
}

/// The dispatch of `text` to agent `a`, told to `journal`.
pub fn request<'a>(
    text: &str,
    task: &'a TaskRequest,
    journal: &'a dyn DispatchJournal,
) -> DispatchRequest<'a> {
    DispatchRequest {
        execution_id: "exec",
        local_task_id: "local",
        agent: "a",
        skill: "",
        content: MessageContent::text(text),
        context_id: None,
        continues: None,
        reference_task_ids: &[],
        task,
        deadline: Instant::now() + LONG,
        cancel: CancellationToken::new(),
        negotiation: &NoAnswer,
        events: EventEmitter::disabled(),
        journal,
    }
}

pub async fn dispatch(
    client: &A2aEngineClient,
    text: &str,
    journal: &dyn DispatchJournal,
) -> Result<TaskOutcome, TaskFailure> {
    let task = task_request();
    client.dispatch(request(text, &task, journal)).await
}

/// The journaled facts a resumed run re-attaches with.
pub struct Journaled<'a> {
    pub text: &'a str,
    pub context_id: &'a str,
    pub message_id: &'a str,
    pub remote_task_id: Option<&'a str>,
    pub resend: bool,
}

pub async fn reattach(
    client: &A2aEngineClient,
    journaled: Journaled<'_>,
    journal: &dyn DispatchJournal,
) -> Result<TaskOutcome, TaskFailure> {
    let task = task_request();
    client
        .reattach(AttachRequest {
            dispatch: request(journaled.text, &task, journal),
            context_id: journaled.context_id,
            message_id: journaled.message_id,
            remote_task_id: journaled.remote_task_id,
            resend: journaled.resend,
        })
        .await
}

/// Starts `text` on agent `a` and "crashes" the host (drops the dispatch) as soon as the journal
/// knows the remote task id (a blocking send returns at once for that); returns what the journal
/// holds then.
pub async fn crash_once_known(server: &Arc<TestServer>, wire: Wire, text: &str) -> Recorder {
    let config = ClientConfig::default().with_return_immediately(true);
    let client = client_with(server, wire, config).await;
    let journal = Recorder::new(server);
    {
        let sending = dispatch(&client, text, &journal);
        tokio::pin!(sending);
        let guard = Instant::now() + LONG;
        while journal.known().is_empty() {
            assert!(Instant::now() < guard, "the agent never named the task");
            tokio::select! {
                r = &mut sending => panic!("finished before the crash: {r:?}"),
                () = tokio::time::sleep(Duration::from_millis(10)) => {}
            }
        }
    }
    journal
}

/// The message of a logged SendMessage / SendStreamingMessage (either binding).
fn message_of(r: &RecordedRequest) -> Option<Value> {
    let body = r.body.as_ref()?;
    body.get("params")
        .and_then(|p| p.get("message"))
        .or_else(|| body.get("message"))
        .cloned()
}

/// The messages agent `a` received in SendMessage / SendStreamingMessage requests, in order.
pub fn sent_messages(server: &TestServer) -> Vec<Value> {
    server
        .requests()
        .iter()
        .filter(|r| matches!(r.route, Some(Route::Send | Route::Stream)))
        .filter_map(message_of)
        .collect()
}

pub fn count(server: &TestServer, route: Route) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.route == Some(route))
        .count()
}

/// The ids of the tasks agent `a` lists for `context_id`.
pub async fn listed(server: &TestServer, wire: Wire, context_id: &str) -> Vec<String> {
    let (_, transport) = transport_for(server, wire).await;
    let request = list_in_context(context_id);
    transport
        .list_tasks(&request, &CallOptions::default())
        .await
        .unwrap()
        .tasks
        .into_iter()
        .map(|t| t.id)
        .collect()
}

/// The data parts of an outcome's outputs.
pub fn data_outputs(o: &TaskOutcome) -> Vec<Value> {
    o.outputs
        .iter()
        .flat_map(|out| out.parts.iter())
        .filter_map(|p| match &p.content {
            PartContent::Data(v) => Some(v.clone()),
            _ => None,
        })
        .collect()
}
