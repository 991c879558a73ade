//! The engine client against a scripted in-process [`Transport`]: identity, waiting, end states,
//! the Negotiation-T loop, cancellation and attach, with tokio's paused clock where time matters.
//! Tests are named after the scenario IDs of engine_scenarios.md where one applies.

use a2aflow_engine::{A2aEngineClient, ClientConfig};
use a2aflow_kernel::{
    DispatchRequest, EventEmitter, NegotiationHook, RemoteClient, TaskFailure, TaskOutcome,
};
use a2aflow_model::a2a::{
    AgentCard, Artifact, CancelTaskRequest, GetTaskRequest, ListTasksRequest, ListTasksResponse,
    Message, Part, Role, SendMessageRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent,
};
use a2aflow_model::{
    ErrorCode, Failure, MessageContent, NegotiationReply, NegotiationRequest, StepType, TaskInput,
    TaskRequest, WorkflowInput,
};
use a2aflow_protocol::{
    Binding, CallOptions, HttpClient, RemoteError, StreamResponseStream, Transport, TransportError,
    connect,
};
use a2aflow_testkit::{AgentSpec, Fault, Route, TestServer};
use async_trait::async_trait;
use futures_util::StreamExt;
use serde_json::{Map, Value, json};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const NEG: &str =
    "https://projects.tmforum.org/a2aproject/telecommunication/extensions/Negotiation-T/v1";
const TASK_T: &str =
    "https://projects.tmforum.org/a2aproject/telecommunication/extensions/Task-T/v1";
const NEG_ID: &str = "3f2b8c1e-9a4d-4e6b-8f1a-2c3d4e5f6a7b";

// ---------------------------------------------------------------- scripted transport

/// What one send answers.
enum Reply {
    /// A blocking answer.
    Answer(SendMessageResponse),
    /// A stream of events (an `Err` item drops the stream there).
    Stream(Vec<Result<StreamResponse, TransportError>>),
    /// An error before any task exists.
    Fail(TransportError),
    /// Answers after `Duration` (a late identity).
    Late(Duration, SendMessageResponse),
    /// A stream that opens at once but whose first item comes only after `Duration` (`None`:
    /// never); the fake signals when its head is first read and when the stream is dropped.
    LateStream(
        Option<Duration>,
        Vec<Result<StreamResponse, TransportError>>,
    ),
}

/// Builds replies from the request (so the script can echo the context id).
type ReplyFn = Box<dyn Fn(&SendMessageRequest) -> Reply + Send + Sync>;

/// Builds a SubscribeToTask answer from the context id.
type SubscribeFn =
    Box<dyn Fn(&str) -> Result<Vec<Result<StreamResponse, TransportError>>, TransportError> + Send>;

#[derive(Default)]
struct Log {
    sent: Vec<SendMessageRequest>,
    sent_extensions: Vec<Vec<String>>,
    gets: Vec<Instant>,
    cancels: Vec<String>,
    subscribes: usize,
}

#[derive(Default)]
struct Script {
    sends: VecDeque<ReplyFn>,
    /// GetTask answers; the last one repeats.
    gets: VecDeque<Task>,
    /// SubscribeToTask answers, built from the context id of the last send.
    subscribes: VecDeque<SubscribeFn>,
    listed: Vec<Task>,
    cancel_fails: bool,
    /// The first this-many GetTask calls fail with a connection error.
    get_errors: u32,
}

#[derive(Default)]
struct Fake {
    script: Mutex<Script>,
    log: Mutex<Log>,
    cancelled: Notify,
    /// A permit once the head of a [`Reply::LateStream`] is being waited for.
    late_stream_read: Arc<Notify>,
    /// A permit once a [`Reply::LateStream`] is dropped.
    late_stream_dropped: Arc<Notify>,
}

/// Stores a permit in its `Notify` when dropped.
struct DropSignal(Arc<Notify>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

impl std::fmt::Debug for Fake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Fake")
    }
}

fn stream_of(items: Vec<Result<StreamResponse, TransportError>>) -> StreamResponseStream {
    Box::pin(futures_util::stream::iter(items))
}

#[async_trait]
impl Transport for Fake {
    fn binding(&self) -> Binding {
        Binding::JsonRpc
    }
    fn url(&self) -> &str {
        "http://fake"
    }
    async fn send_message(
        &self,
        request: &SendMessageRequest,
        options: &CallOptions,
    ) -> Result<SendMessageResponse, TransportError> {
        let reply = self.next_reply(request, options);
        match reply {
            Reply::Answer(r) => Ok(r),
            Reply::Fail(e) => Err(e),
            Reply::Late(d, r) => {
                tokio::time::sleep(d).await;
                Ok(r)
            }
            Reply::Stream(_) | Reply::LateStream(..) => {
                panic!("script gave a stream to a blocking send")
            }
        }
    }
    async fn send_streaming_message(
        &self,
        request: &SendMessageRequest,
        options: &CallOptions,
    ) -> Result<StreamResponseStream, TransportError> {
        match self.next_reply(request, options) {
            Reply::Stream(items) => Ok(stream_of(items)),
            Reply::Answer(SendMessageResponse::Task(t)) => {
                Ok(stream_of(vec![Ok(StreamResponse::Task(t))]))
            }
            Reply::Answer(SendMessageResponse::Message(m)) => {
                Ok(stream_of(vec![Ok(StreamResponse::Message(m))]))
            }
            Reply::Fail(e) => Err(e),
            Reply::LateStream(delay, items) => {
                let read = Arc::clone(&self.late_stream_read);
                let head = futures_util::stream::once(async move {
                    read.notify_one();
                    match delay {
                        Some(d) => tokio::time::sleep(d).await,
                        None => std::future::pending().await,
                    }
                })
                .filter_map(|()| async { None });
                let dropped = DropSignal(Arc::clone(&self.late_stream_dropped));
                Ok(Box::pin(head.chain(futures_util::stream::iter(items)).map(
                    move |item| {
                        let _alive = &dropped;
                        item
                    },
                )))
            }
            Reply::Late(..) => panic!("late replies are for blocking sends"),
        }
    }
    async fn get_task(
        &self,
        request: &GetTaskRequest,
        _options: &CallOptions,
    ) -> Result<Task, TransportError> {
        self.log.lock().unwrap().gets.push(Instant::now());
        let mut s = self.script.lock().unwrap();
        if s.get_errors > 0 {
            s.get_errors -= 1;
            return Err(TransportError::Connection("connection reset".into()));
        }
        let t = if s.gets.len() > 1 {
            s.gets.pop_front()
        } else {
            s.gets.front().cloned()
        };
        let mut t = t.expect("script has a GetTask answer");
        assert_eq!(t.id, request.id, "GetTask asks for the known remote task");
        t.id = request.id.clone();
        Ok(t)
    }
    async fn list_tasks(
        &self,
        request: &ListTasksRequest,
        _options: &CallOptions,
    ) -> Result<ListTasksResponse, TransportError> {
        let s = self.script.lock().unwrap();
        let tasks: Vec<Task> = s
            .listed
            .iter()
            .filter(|t| Some(&t.context_id) == request.context_id.as_ref())
            .cloned()
            .collect();
        Ok(ListTasksResponse {
            total_size: tasks.len() as i32,
            page_size: tasks.len() as i32,
            next_page_token: String::new(),
            tasks,
        })
    }
    async fn cancel_task(
        &self,
        request: &CancelTaskRequest,
        _options: &CallOptions,
    ) -> Result<Task, TransportError> {
        self.log.lock().unwrap().cancels.push(request.id.clone());
        self.cancelled.notify_waiters();
        if self.script.lock().unwrap().cancel_fails {
            return Err(TransportError::Connection("cancel refused".into()));
        }
        Ok(task(&request.id, "any", TaskState::Canceled))
    }
    async fn subscribe_to_task(
        &self,
        _request: &SubscribeToTaskRequest,
        _options: &CallOptions,
    ) -> Result<StreamResponseStream, TransportError> {
        let ctx = {
            let mut log = self.log.lock().unwrap();
            log.subscribes += 1;
            log.sent.last().map(ctx_of).unwrap_or_default()
        };
        let next = self.script.lock().unwrap().subscribes.pop_front();
        match next.map(|f| f(&ctx)) {
            Some(Ok(items)) => Ok(stream_of(items)),
            Some(Err(e)) => Err(e),
            None => Err(unsupported()),
        }
    }
    async fn get_extended_agent_card(
        &self,
        _options: &CallOptions,
    ) -> Result<AgentCard, TransportError> {
        Err(unsupported())
    }
}

impl Fake {
    fn next_reply(&self, request: &SendMessageRequest, options: &CallOptions) -> Reply {
        {
            let mut log = self.log.lock().unwrap();
            log.sent.push(request.clone());
            log.sent_extensions.push(options.extensions.clone());
        }
        let mut s = self.script.lock().unwrap();
        let f = if s.sends.len() > 1 {
            s.sends.pop_front()
        } else {
            None
        };
        match f {
            Some(f) => f(request),
            None => (s.sends.front().expect("script has a send answer"))(request),
        }
    }
    fn sends(&self) -> usize {
        self.log.lock().unwrap().sent.len()
    }
    fn sent(&self, i: usize) -> SendMessageRequest {
        self.log.lock().unwrap().sent[i].clone()
    }
    fn cancels(&self) -> Vec<String> {
        self.log.lock().unwrap().cancels.clone()
    }
    fn gets(&self) -> Vec<Instant> {
        self.log.lock().unwrap().gets.clone()
    }
    fn subscribes(&self) -> usize {
        self.log.lock().unwrap().subscribes
    }
}

fn unsupported() -> TransportError {
    TransportError::Remote(RemoteError {
        code: ErrorCode::A2aUnsupportedOperation,
        message: "not supported".into(),
        numeric_code: Some(-32004),
        status: None,
        reason: Some("UNSUPPORTED_OPERATION".into()),
        http_status: None,
        info: Default::default(),
    })
}

// ---------------------------------------------------------------- builders

fn task(id: &str, ctx: &str, state: TaskState) -> Task {
    Task {
        id: id.into(),
        context_id: ctx.into(),
        status: TaskStatus {
            state,
            message: None,
            timestamp: None,
        },
        artifacts: None,
        history: None,
        metadata: None,
    }
}

fn agent_msg(text: &str) -> Message {
    Message::new(Role::Agent, vec![Part::text(text)])
}

fn ctx_of(r: &SendMessageRequest) -> String {
    r.message
        .context_id
        .clone()
        .expect("every send has a context id")
}

/// A send answer: a task in `state` for the request's context.
fn answer(id: &'static str, state: TaskState) -> ReplyFn {
    Box::new(move |r| {
        Reply::Answer(SendMessageResponse::Task(task(
            id,
            &ctx_of(r),
            state.clone(),
        )))
    })
}

fn answer_with(f: impl Fn(&str) -> Task + Send + Sync + 'static) -> ReplyFn {
    Box::new(move |r| Reply::Answer(SendMessageResponse::Task(f(&ctx_of(r)))))
}

fn propose_meta(round: i64, max: i64, perf: &str) -> HashMap<String, Value> {
    HashMap::from([
        (
            NEG.to_owned(),
            json!("## Information Negotiation\nPlease supplement"),
        ),
        (
            "negotiationContext".to_owned(),
            json!({"id": NEG_ID, "round": round, "maxRounds": max, "performative": perf}),
        ),
    ])
}

/// INPUT_REQUIRED with a Propose in the status message.
fn input_required(id: &str, ctx: &str, round: i64, max: i64) -> Task {
    let mut t = task(id, ctx, TaskState::InputRequired);
    let mut m = agent_msg("which area?");
    m.metadata = Some(propose_meta(round, max, "PROPOSE"));
    t.status.message = Some(m);
    t
}

fn card(streaming: bool, extensions: Value) -> AgentCard {
    serde_json::from_value(json!({
        "name": "agent", "description": "d", "version": "1",
        "supportedInterfaces": [{"url": "http://fake", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": streaming, "extensions": extensions},
        "defaultInputModes": [], "defaultOutputModes": [], "skills": []
    }))
    .unwrap()
}

fn neg_card(streaming: bool) -> AgentCard {
    card(streaming, json!([{"uri": NEG}, {"uri": TASK_T}]))
}

fn client(fake: &Arc<Fake>, card: &AgentCard, config: ClientConfig) -> A2aEngineClient {
    A2aEngineClient::new(config)
        .unwrap()
        .with_agent(card, fake.clone() as Arc<dyn Transport>)
        .unwrap()
}

/// A client for `fake` with a non-streaming card and the default configuration.
fn plain_client(fake: &Arc<Fake>) -> A2aEngineClient {
    client(fake, &card(false, json!([])), ClientConfig::default())
}

/// Dispatches `x` through [`plain_client`] and returns the failure it must end in.
async fn plain_failure(fake: &Arc<Fake>) -> TaskFailure {
    dispatch(
        &plain_client(fake),
        MessageContent::text("x"),
        &Hook::default(),
    )
    .await
    .unwrap_err()
}

fn fake(sends: Vec<ReplyFn>) -> Arc<Fake> {
    let f = Fake::default();
    f.script.lock().unwrap().sends = sends.into();
    Arc::new(f)
}

fn task_request() -> TaskRequest {
    TaskRequest {
        execution_id: "exec-1".into(),
        workflow_id: "wf".into(),
        step_name: "s1".into(),
        step_type: StepType::AllSuccess,
        subtask_index: 0,
        local_task_id: "local-1".into(),
        agent: "agent".into(),
        skill: "skill".into(),
        description: "do it".into(),
        input: TaskInput::default(),
        workflow_input: WorkflowInput::default(),
        remaining_ms: 0,
    }
}

fn activated(text: &str) -> MessageContent {
    let mut c = MessageContent::text(text);
    c.extensions = vec![TASK_T.to_owned(), NEG.to_owned()];
    let mut meta = Map::new();
    meta.insert(TASK_T.to_owned(), json!("## Task"));
    c.metadata = Some(meta);
    c
}

fn reply(round: i64, max: i64, perf: &str) -> MessageContent {
    let mut meta = Map::new();
    meta.insert(
        NEG.to_owned(),
        json!("## Information Negotiation Result\nAccept"),
    );
    meta.insert(
        "negotiationContext".to_owned(),
        json!({"id": NEG_ID, "round": round, "maxRounds": max, "performative": perf}),
    );
    MessageContent {
        parts: vec![Part::text("area: Songshanhu")],
        metadata: Some(meta),
        extensions: vec![NEG.to_owned()],
        context_id: None,
    }
}

/// A negotiation hook answering from a script; `Pending` never answers.
#[derive(Default)]
struct Hook {
    replies: Mutex<VecDeque<Option<NegotiationReply>>>,
    calls: Mutex<Vec<NegotiationRequest>>,
}

impl Hook {
    fn answering(replies: Vec<Option<NegotiationReply>>) -> Self {
        Hook {
            replies: Mutex::new(replies.into()),
            calls: Mutex::default(),
        }
    }
    fn calls(&self) -> Vec<NegotiationRequest> {
        self.calls.lock().unwrap().clone()
    }
}

#[async_trait]
impl NegotiationHook for Hook {
    async fn negotiate(&self, request: NegotiationRequest) -> Result<NegotiationReply, Failure> {
        self.calls.lock().unwrap().push(request);
        let next = self.replies.lock().unwrap().pop_front();
        match next {
            Some(Some(r)) => Ok(r),
            Some(None) => std::future::pending().await,
            None => Err(Failure::new(
                ErrorCode::WorkflowCallbackMissing,
                "on_negotiation handler is required",
            )),
        }
    }
}

fn send_reply(round: i64, max: i64, perf: &str) -> Option<NegotiationReply> {
    Some(NegotiationReply::Send {
        content: reply(round, max, perf),
    })
}

async fn dispatch_with(
    client: &A2aEngineClient,
    content: MessageContent,
    hook: &Hook,
    deadline: Duration,
    cancel: CancellationToken,
) -> Result<TaskOutcome, TaskFailure> {
    let tr = task_request();
    client
        .dispatch(DispatchRequest {
            execution_id: "exec-1",
            local_task_id: "local-1",
            agent: "agent",
            skill: "skill",
            content,
            context_id: None,
            continues: None,
            reference_task_ids: &[],
            task: &tr,
            deadline: Instant::now() + deadline,
            cancel,
            negotiation: hook,
            events: EventEmitter::disabled(),
            journal: &a2aflow_kernel::NoJournal,
        })
        .await
}

async fn dispatch(
    client: &A2aEngineClient,
    content: MessageContent,
    hook: &Hook,
) -> Result<TaskOutcome, TaskFailure> {
    dispatch_with(
        client,
        content,
        hook,
        Duration::from_secs(60),
        CancellationToken::new(),
    )
    .await
}

fn texts(outcome: &TaskOutcome) -> Vec<String> {
    outcome
        .outputs
        .iter()
        .flat_map(|o| {
            o.parts
                .iter()
                .filter_map(|p| p.as_text().map(str::to_owned))
        })
        .collect()
}

// ---------------------------------------------------------------- TASK

#[tokio::test(start_paused = true)]
async fn s_task_02_fresh_context_per_task_and_first_send_has_no_task_id() {
    let f = fake(vec![answer_with(|c| {
        let mut t = task("t1", c, TaskState::Completed);
        t.status.message = Some(agent_msg("done"));
        t
    })]);
    let c = plain_client(&f);
    let hook = Hook::default();
    let a = dispatch(&c, MessageContent::text("first"), &hook)
        .await
        .unwrap();
    let b = dispatch(&c, MessageContent::text("second"), &hook)
        .await
        .unwrap();
    assert_eq!(f.sends(), 2);
    let (s0, s1) = (f.sent(0), f.sent(1));
    assert_ne!(s0.message.context_id, s1.message.context_id);
    assert_ne!(s0.message.message_id, s1.message.message_id);
    assert_eq!(s0.message.task_id, None);
    assert_eq!(s0.message.role, Role::User);
    assert_eq!(s0.message.parts, vec![Part::text("first")]);
    assert_eq!(a.context_id, s0.message.context_id);
    assert_eq!(b.remote_task_id.as_deref(), Some("t1"));
    assert_eq!(texts(&a), ["done"]);
}

#[tokio::test(start_paused = true)]
async fn s_task_24_acknowledgements_are_polled_with_backoff_never_resent() {
    let f = fake(vec![answer("t1", TaskState::Submitted)]);
    {
        let mut s = f.script.lock().unwrap();
        s.gets = VecDeque::from([
            task("t1", "placeholder", TaskState::Working),
            task("t1", "placeholder", TaskState::Completed),
        ]);
    }
    // GetTask answers must carry our context: patch them once the context is known.
    let c = plain_client(&f);
    let hook = Hook::default();
    let ctx_fix = f.clone();
    let started = Instant::now();
    let fut = dispatch(&c, MessageContent::text("go"), &hook);
    let fix = async move {
        loop {
            if ctx_fix.sends() == 1 {
                let ctx = ctx_of(&ctx_fix.sent(0));
                for t in ctx_fix.script.lock().unwrap().gets.iter_mut() {
                    t.context_id = ctx.clone();
                }
                break;
            }
            tokio::task::yield_now().await;
        }
    };
    let (out, ()) = tokio::join!(fut, fix);
    let out = out.unwrap();
    assert_eq!(f.sends(), 1);
    let gets = f.gets();
    assert_eq!(gets.len(), 2);
    assert_eq!(gets[0] - started, Duration::from_millis(250));
    assert_eq!(
        gets[1] - gets[0],
        Duration::from_millis(500),
        "the backoff doubles"
    );
    assert_eq!(out.remote_task_id.as_deref(), Some("t1"));
}

#[tokio::test(start_paused = true)]
async fn s_task_05_direct_message_is_a_final_answer() {
    let f = fake(vec![Box::new(|r| {
        let mut m = agent_msg("here you go");
        m.context_id = Some(ctx_of(r));
        Reply::Answer(SendMessageResponse::Message(m))
    })]);
    let c = plain_client(&f);
    let hook = Hook::default();
    let out = dispatch(&c, activated("x"), &hook).await;
    // Task-T is activated but the card does not declare it: refused before sending.
    let e = out.unwrap_err();
    assert!(e.failure.is(ErrorCode::A2aExtensionNotSupported), "{e:?}");
    assert_eq!(f.sends(), 0);
    let out = dispatch(&c, MessageContent::text("x"), &hook)
        .await
        .unwrap();
    assert_eq!(texts(&out), ["here you go"]);
    assert_eq!(out.remote_task_id, None);
    assert!(hook.calls().is_empty());
}

#[tokio::test(start_paused = true)]
async fn s_task_13_required_extension_not_activated_fails_before_sending() {
    let f = fake(vec![answer("t1", TaskState::Completed)]);
    let c = client(
        &f,
        &card(
            false,
            json!([{"uri": "urn:example:required", "required": true}]),
        ),
        ClientConfig::default(),
    );
    let e = dispatch(&c, MessageContent::text("plain"), &Hook::default())
        .await
        .unwrap_err();
    assert!(e.failure.is(ErrorCode::A2aExtensionSupportRequired));
    assert_eq!(
        e.failure.message,
        "Required extension not activated: urn:example:required"
    );
    assert_eq!(f.sends(), 0);
}

#[tokio::test(start_paused = true)]
async fn s_neg_26_activation_goes_to_message_and_header_without_inventing_metadata() {
    let f = fake(vec![answer("t1", TaskState::Completed)]);
    let c = client(&f, &neg_card(false), ClientConfig::default());
    dispatch(&c, activated("go"), &Hook::default())
        .await
        .unwrap();
    let sent = f.sent(0);
    assert_eq!(
        sent.message.extensions,
        Some(vec![TASK_T.to_owned(), NEG.to_owned()])
    );
    let meta = sent.message.metadata.unwrap();
    assert!(!meta.contains_key("negotiationContext"));
    let mut header = f.log.lock().unwrap().sent_extensions[0].clone();
    header.sort();
    let mut expected = vec![NEG.to_owned(), TASK_T.to_owned()];
    expected.sort();
    assert_eq!(header, expected);
}

#[tokio::test(start_paused = true)]
async fn s_task_15_changed_context_identity_fails() {
    let f = fake(vec![answer_with(|_| {
        task("t1", "someone-else", TaskState::Completed)
    })]);
    let e = plain_failure(&f).await;
    assert!(e.failure.is(ErrorCode::A2aInvalidResponse));
    assert_eq!(e.failure.message, "Remote task/context identity changed");
}

#[tokio::test(start_paused = true)]
async fn s_err_15_rejected_keeps_status_message_as_evidence_only() {
    let f = fake(vec![answer_with(|c| {
        let mut t = task("t1", c, TaskState::Rejected);
        t.status.message = Some(agent_msg("not allowed"));
        t
    })]);
    let e = plain_failure(&f).await;
    assert_eq!(e.failure.code, "a2a.task_rejected");
    assert_eq!(e.failure.message, "not allowed");
    assert_eq!(e.remote_task_id.as_deref(), Some("t1"));
    let last = e.received_messages.last().unwrap();
    assert_eq!(last.state, Some(TaskState::Rejected));
    assert_eq!(
        last.message.as_ref().and_then(Message::text),
        Some("not allowed")
    );
    assert!(
        f.cancels().is_empty(),
        "S-CANCEL-10: a terminal task is never cancelled"
    );
}

#[tokio::test(start_paused = true)]
async fn s_task_03_auth_required_is_a_gate_with_evidence() {
    let f = fake(vec![answer_with(|c| {
        let mut t = task("remote-auth", c, TaskState::AuthRequired);
        t.status.message = Some(agent_msg("sign in at https://idp"));
        t
    })]);
    let e = plain_failure(&f).await;
    assert!(e.failure.is(ErrorCode::A2aAuthRequired));
    assert_eq!(e.failure.gate(), Some(a2aflow_model::Gate::AuthRequired));
    assert_eq!(e.failure.details["remoteTaskId"], json!("remote-auth"));
    assert_eq!(
        e.failure.details["state"],
        json!("TASK_STATE_AUTH_REQUIRED")
    );
    assert_eq!(
        e.failure.details["contextId"],
        json!(e.context_id.clone().unwrap())
    );
    assert!(f.cancels().is_empty(), "a gate stays open for attach");
    // The host may choose to cancel gated tasks instead.
    let c = client(
        &f,
        &card(false, json!([])),
        ClientConfig::default().with_cancel_gated_tasks(true),
    );
    let e = dispatch(&c, MessageContent::text("x"), &Hook::default())
        .await
        .unwrap_err();
    assert!(e.failure.is(ErrorCode::A2aAuthRequired));
    assert_eq!(f.cancels(), ["remote-auth"]);
}

#[tokio::test(start_paused = true)]
async fn s_cancel_03_error_before_task_creation_is_kept_without_cancel() {
    let f = fake(vec![Box::new(|_| {
        Reply::Fail(TransportError::Remote(RemoteError {
            code: ErrorCode::A2aRemoteError,
            message: "Remote agent rejected the request".into(),
            numeric_code: Some(429),
            status: Some("RESOURCE_EXHAUSTED".into()),
            reason: Some("TASK_LIMIT_REACHED".into()),
            http_status: Some(429),
            info: Default::default(),
        }))
    })]);
    let e = plain_failure(&f).await;
    assert_eq!(e.failure.details["httpStatus"], json!(429));
    assert_eq!(e.failure.details["reason"], json!("TASK_LIMIT_REACHED"));
    assert_eq!(e.remote_task_id, None);
    assert!(f.cancels().is_empty());
    assert_eq!(f.sends(), 1, "never retried");
}

#[tokio::test(start_paused = true)]
async fn unknown_agent_fails_without_sending() {
    let f = fake(vec![answer("t1", TaskState::Completed)]);
    let c = plain_client(&f);
    let tr = task_request();
    let hook = Hook::default();
    let e = c
        .dispatch(DispatchRequest {
            execution_id: "e",
            local_task_id: "l",
            agent: "nobody",
            skill: "",
            content: MessageContent::text("x"),
            context_id: None,
            continues: None,
            reference_task_ids: &[],
            task: &tr,
            deadline: Instant::now() + Duration::from_secs(5),
            cancel: CancellationToken::new(),
            negotiation: &hook,
            events: EventEmitter::disabled(),
            journal: &a2aflow_kernel::NoJournal,
        })
        .await
        .unwrap_err();
    assert!(e.failure.is(ErrorCode::WorkflowUnknownAgent));
    assert_eq!(f.sends(), 0);
}

// ---------------------------------------------------------------- streaming

fn status(ctx: &str, state: TaskState) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: "t1".into(),
        context_id: ctx.into(),
        status: TaskStatus {
            state,
            message: None,
            timestamp: None,
        },
        metadata: None,
    })
}

fn chunk(ctx: &str, text: &str, append: bool, last: bool) -> StreamResponse {
    StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
        task_id: "t1".into(),
        context_id: ctx.into(),
        artifact: Artifact {
            artifact_id: "a1".into(),
            name: Some("result".into()),
            description: None,
            parts: vec![Part::text(text)],
            metadata: None,
            extensions: None,
        },
        append: Some(append),
        last_chunk: Some(last),
        metadata: None,
    })
}

#[tokio::test(start_paused = true)]
async fn streamed_artifact_chunks_are_assembled_in_order() {
    let f = fake(vec![Box::new(|r| {
        let c = ctx_of(r);
        Reply::Stream(vec![
            Ok(StreamResponse::Task(task("t1", &c, TaskState::Submitted))),
            Ok(status(&c, TaskState::Working)),
            Ok(chunk(&c, "one ", false, false)),
            Ok(chunk(&c, "two", true, true)),
            Ok(status(&c, TaskState::Completed)),
        ])
    })]);
    let c = client(&f, &card(true, json!([])), ClientConfig::default());
    let out = dispatch(&c, MessageContent::text("x"), &Hook::default())
        .await
        .unwrap();
    assert_eq!(texts(&out), ["one ", "two"]);
    assert_eq!(out.outputs.len(), 1);
    assert_eq!(out.outputs[0].artifact_id.as_deref(), Some("a1"));
    assert!(f.gets().is_empty() && f.subscribes() == 0);
}

#[tokio::test(start_paused = true)]
async fn dropped_stream_is_resubscribed_and_the_first_event_is_the_task() {
    let f = fake(vec![Box::new(|r| {
        let c = ctx_of(r);
        Reply::Stream(vec![
            Ok(StreamResponse::Task(task("t1", &c, TaskState::Working))),
            Err(TransportError::Connection("reset mid-stream".into())),
        ])
    })]);
    let c = client(&f, &card(true, json!([])), ClientConfig::default());
    f.script
        .lock()
        .unwrap()
        .subscribes
        .push_back(Box::new(|ctx| {
            let mut done = task("t1", ctx, TaskState::Completed);
            done.status.message = Some(agent_msg("finished"));
            Ok(vec![
                Ok(StreamResponse::Task(task("t1", ctx, TaskState::Working))),
                Ok(StreamResponse::Task(done)),
            ])
        }));
    let hook = Hook::default();
    let out = dispatch(&c, MessageContent::text("x"), &hook)
        .await
        .unwrap();
    assert_eq!(texts(&out), ["finished"]);
    assert_eq!((f.sends(), f.subscribes()), (1, 1));
    assert!(f.gets().is_empty());
}

#[tokio::test(start_paused = true)]
async fn unsupported_subscribe_falls_back_to_polling() {
    let f = fake(vec![Box::new(|r| {
        let c = ctx_of(r);
        Reply::Stream(vec![Ok(StreamResponse::Task(task(
            "t1",
            &c,
            TaskState::Working,
        )))])
    })]);
    let c = client(&f, &card(true, json!([])), ClientConfig::default());
    let poll = f.clone();
    let fix = async move {
        loop {
            if poll.sends() == 1 {
                let ctx = ctx_of(&poll.sent(0));
                poll.script
                    .lock()
                    .unwrap()
                    .gets
                    .push_back(task("t1", &ctx, TaskState::Completed));
                break;
            }
            tokio::task::yield_now().await;
        }
    };
    let hook = Hook::default();
    let (out, ()) = tokio::join!(dispatch(&c, MessageContent::text("x"), &hook), fix);
    out.unwrap();
    assert_eq!((f.subscribes(), f.gets().len()), (1, 1));
}

#[tokio::test(start_paused = true)]
async fn empty_stream_is_an_invalid_response() {
    let f = fake(vec![Box::new(|_| Reply::Stream(vec![]))]);
    let c = client(&f, &card(true, json!([])), ClientConfig::default());
    let e = dispatch(&c, MessageContent::text("x"), &Hook::default())
        .await
        .unwrap_err();
    assert!(e.failure.is(ErrorCode::A2aInvalidResponse));
    assert_eq!(
        e.failure.message,
        "A2A response stream ended without an event"
    );
}

// ---------------------------------------------------------------- NEG

#[tokio::test(start_paused = true)]
async fn s_neg_13_reply_keeps_both_ids_and_the_context() {
    let f = fake(vec![
        answer_with(|c| input_required("t1", c, 1, 5)),
        answer("t1", TaskState::Completed),
    ]);
    let c = client(&f, &neg_card(false), ClientConfig::default());
    let hook = Hook::answering(vec![send_reply(1, 5, "ACCEPT")]);
    let out = dispatch(&c, activated("go"), &hook).await.unwrap();
    assert_eq!(f.sends(), 2);
    let (first, second) = (f.sent(0), f.sent(1));
    assert_eq!(first.message.context_id, second.message.context_id);
    assert_eq!(second.message.task_id.as_deref(), Some("t1"));
    assert_ne!(first.message.message_id, second.message.message_id);
    assert_eq!(second.message.role, Role::User);
    assert_eq!(second.message.parts, vec![Part::text("area: Songshanhu")]);
    let calls = hook.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].remote_task_id.as_deref(), Some("t1"));
    assert_eq!(calls[0].remaining_budget, 3);
    assert_eq!(calls[0].original, activated("go"));
    assert_eq!(calls[0].negotiation_context["round"], json!(1));
    assert_eq!(calls[0].evidence.state, Some(TaskState::InputRequired));
    assert_eq!(out.remote_task_id.as_deref(), Some("t1"));
}

#[tokio::test(start_paused = true)]
async fn negotiation_across_rounds_passes_previous_exchanges_and_last_round_is_answerable() {
    let f = fake(vec![
        answer_with(|c| input_required("t1", c, 1, 2)),
        answer_with(|c| input_required("t1", c, 2, 2)),
        answer("t1", TaskState::Completed),
    ]);
    let c = client(&f, &neg_card(false), ClientConfig::default());
    let hook = Hook::answering(vec![send_reply(1, 2, "REJECT"), send_reply(2, 2, "ACCEPT")]);
    dispatch(&c, activated("go"), &hook).await.unwrap();
    let calls = hook.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].previous_exchanges.len(), 1);
    assert_eq!(calls[1].previous_exchanges[0].reply, reply(1, 2, "REJECT"));
    assert_eq!(calls[1].remaining_budget, 2);
    assert_eq!(f.sends(), 3);
}

#[tokio::test(start_paused = true)]
async fn s_neg_02_repeated_proposal_is_observed_not_resent() {
    let f = fake(vec![answer_with(|c| input_required("t1", c, 1, 5))]);
    let c = client(&f, &neg_card(false), ClientConfig::default());
    let poll = f.clone();
    // Scripts the polls once the first send went out (the reply may already have followed it:
    // the client polls only after its poll interval).
    let fix = async move {
        loop {
            if poll.sends() >= 1 {
                let ctx = ctx_of(&poll.sent(0));
                poll.script.lock().unwrap().gets = VecDeque::from([
                    task("t1", &ctx, TaskState::Working),
                    task("t1", &ctx, TaskState::Completed),
                ]);
                break;
            }
            tokio::task::yield_now().await;
        }
    };
    let hook = Hook::answering(vec![send_reply(1, 5, "ACCEPT")]);
    let (out, ()) = tokio::join!(dispatch(&c, activated("go"), &hook), fix);
    out.unwrap();
    assert_eq!(f.sends(), 2, "the repeated proposal is not answered again");
    assert_eq!(f.gets().len(), 2);
    assert_eq!(hook.calls().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn s_neg_07_reply_without_activation_is_not_sent_and_the_task_is_cancelled() {
    let f = fake(vec![answer_with(|c| input_required("t1", c, 1, 5))]);
    let c = client(&f, &neg_card(false), ClientConfig::default());
    let hook = Hook::answering(vec![Some(NegotiationReply::Send {
        content: MessageContent::text("plain"),
    })]);
    let e = dispatch(&c, activated("go"), &hook).await.unwrap_err();
    assert!(e.failure.is(ErrorCode::NegotiationInvalidContext));
    assert_eq!(
        e.failure.message,
        "Negotiation reply must carry and activate Negotiation-T"
    );
    assert_eq!(f.sends(), 1);
    assert_eq!(f.cancels(), ["t1"]);
}

#[tokio::test(start_paused = true)]
async fn s_neg_09_host_abort_is_never_success() {
    let f = fake(vec![
        answer_with(|c| input_required("t1", c, 1, 5)),
        answer_with(|c| {
            let mut t = task("t1", c, TaskState::Completed);
            t.artifacts = Some(vec![Artifact {
                artifact_id: "a".into(),
                name: None,
                description: None,
                parts: vec![Part::text("should not count")],
                metadata: None,
                extensions: None,
            }]);
            t
        }),
    ]);
    let c = client(&f, &neg_card(false), ClientConfig::default());
    let hook = Hook::answering(vec![send_reply(1, 5, "ABORT")]);
    let e = dispatch(&c, activated("go"), &hook).await.unwrap_err();
    assert!(e.failure.is(ErrorCode::NegotiationAborted));
    assert_eq!(e.failure.details["state"], json!("TASK_STATE_COMPLETED"));
    assert_eq!(f.sends(), 2);
    assert!(f.cancels().is_empty(), "the task is terminal");
}

#[tokio::test(start_paused = true)]
async fn s_neg_10_terminal_state_never_starts_negotiation() {
    let f = fake(vec![answer_with(|c| {
        let mut t = input_required("t1", c, 1, 5);
        t.status.state = TaskState::Completed;
        t
    })]);
    let c = client(&f, &neg_card(false), ClientConfig::default());
    let hook = Hook::default();
    dispatch(&c, activated("go"), &hook).await.unwrap();
    assert!(hook.calls().is_empty());
}

#[tokio::test(start_paused = true)]
async fn s_neg_11_plain_input_required_is_a_not_negotiable_gate() {
    let f = fake(vec![answer_with(|c| {
        let mut t = task("t1", c, TaskState::InputRequired);
        t.status.message = Some(agent_msg("question"));
        t
    })]);
    let c = client(&f, &neg_card(false), ClientConfig::default());
    let hook = Hook::default();
    let e = dispatch(&c, activated("go"), &hook).await.unwrap_err();
    assert!(e.failure.is(ErrorCode::NegotiationNotNegotiable));
    assert_eq!(e.failure.gate(), Some(a2aflow_model::Gate::InputRequired));
    assert!(hook.calls().is_empty());
    assert_eq!(
        e.received_messages
            .last()
            .unwrap()
            .message
            .as_ref()
            .and_then(Message::text),
        Some("question")
    );
}

#[tokio::test(start_paused = true)]
async fn s_neg_14_stop_keeps_the_host_code_and_cancels_the_task() {
    let f = fake(vec![answer_with(|c| {
        input_required("remote-task", c, 1, 5)
    })]);
    let c = client(&f, &neg_card(false), ClientConfig::default());
    let hook = Hook::answering(vec![Some(NegotiationReply::Stop {
        code: "biz.too_expensive".into(),
        reason: "over budget".into(),
    })]);
    let e = dispatch(&c, activated("go"), &hook).await.unwrap_err();
    assert_eq!(
        (e.failure.code.as_str(), e.failure.message.as_str()),
        ("biz.too_expensive", "over budget")
    );
    assert_eq!(f.cancels(), ["remote-task"]);
    assert_eq!(f.sends(), 1, "no Abort is synthesised");
}

#[tokio::test(start_paused = true)]
async fn s_cancel_05_failed_cleanup_keeps_the_original_failure() {
    let f = fake(vec![answer_with(|c| input_required("t1", c, 1, 5))]);
    f.script.lock().unwrap().cancel_fails = true;
    let c = client(&f, &neg_card(false), ClientConfig::default());
    let hook = Hook::answering(vec![Some(NegotiationReply::Stop {
        code: "biz.no".into(),
        reason: "no".into(),
    })]);
    let e = dispatch(&c, activated("go"), &hook).await.unwrap_err();
    assert_eq!(e.failure.code, "biz.no");
    assert_eq!(f.cancels(), ["t1"]);
}

#[tokio::test(start_paused = true)]
async fn s_neg_15_pre_task_mode_follow_ups_carry_no_task_id() {
    let f = fake(vec![
        Box::new(|r| {
            let mut m = agent_msg("proposal");
            m.context_id = Some(ctx_of(r));
            m.metadata = Some(propose_meta(1, 5, "PROPOSE"));
            Reply::Answer(SendMessageResponse::Message(m))
        }),
        answer("t9", TaskState::Completed),
    ]);
    let c = client(&f, &neg_card(false), ClientConfig::default());
    let hook = Hook::answering(vec![send_reply(1, 5, "ACCEPT")]);
    let out = dispatch(&c, activated("go"), &hook).await.unwrap();
    assert_eq!(hook.calls().len(), 1);
    assert_eq!(hook.calls()[0].remote_task_id, None);
    assert_eq!(f.sends(), 2);
    assert_eq!(f.sent(0).message.task_id, None);
    assert_eq!(f.sent(1).message.task_id, None);
    assert_eq!(f.sent(0).message.context_id, f.sent(1).message.context_id);
    assert_eq!(out.remote_task_id.as_deref(), Some("t9"));
    assert!(
        out.outputs.is_empty(),
        "the proposal is evidence, never output"
    );
    assert_eq!(out.received_messages.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn s_neg_16_invalid_context_on_a_bare_message_fails_loudly() {
    let f = fake(vec![Box::new(|r| {
        let mut m = agent_msg("not a proposal");
        m.context_id = Some(ctx_of(r));
        m.metadata = Some(propose_meta(1, 5, "ACCEPT"));
        Reply::Answer(SendMessageResponse::Message(m))
    })]);
    let c = client(&f, &neg_card(false), ClientConfig::default());
    let hook = Hook::default();
    let e = dispatch(&c, activated("go"), &hook).await.unwrap_err();
    assert!(e.failure.is(ErrorCode::NegotiationInvalidContext));
    assert_eq!(e.failure.message, "Expected a valid Negotiation-T Propose");
    assert!(hook.calls().is_empty());
}

#[tokio::test(start_paused = true)]
async fn s_neg_22_budget_exhausted_fails_and_cancels() {
    let f = fake(vec![
        answer_with(|c| input_required("t1", c, 1, 5)),
        answer_with(|c| input_required("t1", c, 2, 5)),
    ]);
    let c = client(
        &f,
        &neg_card(false),
        ClientConfig::default().with_max_negotiation_exchanges(1),
    );
    let hook = Hook::answering(vec![send_reply(1, 5, "ACCEPT")]);
    let e = dispatch(&c, activated("go"), &hook).await.unwrap_err();
    assert!(e.failure.is(ErrorCode::NegotiationBudgetExhausted));
    assert_eq!(hook.calls().len(), 1);
    assert_eq!(f.sends(), 2);
    assert_eq!(f.cancels(), ["t1"]);
}

#[tokio::test(start_paused = true)]
async fn s_neg_23_regressed_round_fails_and_cancels() {
    let f = fake(vec![
        answer_with(|c| input_required("t1", c, 2, 5)),
        answer_with(|c| input_required("t1", c, 1, 5)),
    ]);
    let c = client(&f, &neg_card(false), ClientConfig::default());
    let hook = Hook::answering(vec![send_reply(2, 5, "ACCEPT")]);
    let e = dispatch(&c, activated("go"), &hook).await.unwrap_err();
    assert_eq!(
        e.failure.message,
        "Negotiation round regressed or maxRounds changed"
    );
    assert_eq!(f.cancels(), ["t1"]);
}

#[tokio::test(start_paused = true)]
async fn s_neg_25_proposal_without_host_activation_fails() {
    let f = fake(vec![answer_with(|c| input_required("t1", c, 1, 5))]);
    let c = client(&f, &neg_card(false), ClientConfig::default());
    let hook = Hook::default();
    let e = dispatch(&c, MessageContent::text("plain"), &hook)
        .await
        .unwrap_err();
    assert!(e.failure.is(ErrorCode::NegotiationNotActivated));
    assert!(hook.calls().is_empty());
    assert_eq!(f.cancels(), ["t1"]);
}

#[tokio::test(start_paused = true)]
async fn identity_change_mid_negotiation_is_reported_as_such() {
    let f = fake(vec![
        answer_with(|c| input_required("t1", c, 1, 5)),
        answer("t2", TaskState::Completed),
    ]);
    let c = client(&f, &neg_card(false), ClientConfig::default());
    let hook = Hook::answering(vec![send_reply(1, 5, "ACCEPT")]);
    let e = dispatch(&c, activated("go"), &hook).await.unwrap_err();
    assert!(e.failure.is(ErrorCode::NegotiationIdentityChanged));
    assert_eq!(
        e.remote_task_id.as_deref(),
        Some("t1"),
        "the first remote id is kept"
    );
    assert_eq!(f.cancels(), ["t1"]);
}

// ---------------------------------------------------------------- CANCEL / deadline

#[tokio::test(start_paused = true)]
async fn s_neg_12_deadline_mid_negotiation_never_sends_a_late_reply() {
    let f = fake(vec![answer_with(|c| input_required("t1", c, 1, 5))]);
    let c = client(&f, &neg_card(false), ClientConfig::default());
    let hook = Hook::answering(vec![None]);
    let e = dispatch_with(
        &c,
        activated("go"),
        &hook,
        Duration::from_secs(1),
        CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert!(e.failure.is(ErrorCode::WorkflowTimeout));
    assert_eq!(f.sends(), 1);
    assert_eq!(f.cancels(), ["t1"]);
}

#[tokio::test(start_paused = true)]
async fn s_neg_12_cancellation_mid_negotiation_cancels_the_remote_task() {
    let f = fake(vec![answer_with(|c| input_required("t1", c, 1, 5))]);
    let c = client(&f, &neg_card(false), ClientConfig::default());
    let hook = Hook::answering(vec![None]);
    let token = CancellationToken::new();
    let trigger = token.clone();
    let hook_ref = &hook;
    let fire = async move {
        while hook_ref.calls().is_empty() {
            tokio::task::yield_now().await;
        }
        trigger.cancel();
    };
    let (r, ()) = tokio::join!(
        dispatch_with(&c, activated("go"), &hook, Duration::from_secs(60), token),
        fire
    );
    let e = r.unwrap_err();
    assert!(e.failure.is(ErrorCode::WorkflowCancelled));
    assert_eq!(f.sends(), 1);
    assert_eq!(f.cancels(), ["t1"]);
}

#[tokio::test(start_paused = true)]
async fn s_cancel_02_late_remote_identity_is_cancelled_after_a_local_timeout() {
    let f = fake(vec![Box::new(|r| {
        Reply::Late(
            Duration::from_millis(1200),
            SendMessageResponse::Task(input_required("late-t", &ctx_of(r), 1, 5)),
        )
    })]);
    let c = client(&f, &neg_card(false), ClientConfig::default());
    let cancelled = f.cancelled.notified();
    tokio::pin!(cancelled);
    cancelled.as_mut().enable();
    let e = dispatch_with(
        &c,
        activated("go"),
        &Hook::default(),
        Duration::from_secs(1),
        CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert!(e.failure.is(ErrorCode::WorkflowTimeout));
    tokio::time::timeout(Duration::from_secs(3), cancelled)
        .await
        .expect("late identity cancelled");
    assert_eq!(f.cancels(), ["late-t"]);
}

/// A streaming fake whose only send opens a stream that delivers `items` after `delay`.
fn late_stream(delay: Option<Duration>, items: Vec<StreamResponse>) -> Arc<Fake> {
    fake(vec![Box::new(move |_| {
        Reply::LateStream(delay, items.iter().cloned().map(Ok).collect())
    })])
}

/// Dispatches to `f` (streaming) with `budget`, cancelling once the open stream's head is being
/// waited for — before the first event — unless the deadline is meant to end it.
async fn interrupt_before_the_first_event(
    f: &Arc<Fake>,
    budget: Duration,
    cancel: bool,
) -> TaskFailure {
    let c = client(f, &card(true, json!([])), ClientConfig::default());
    let token = CancellationToken::new();
    let trigger = token.clone();
    let read = f.late_stream_read.notified();
    let fire = async move {
        read.await;
        if cancel {
            trigger.cancel();
        }
    };
    let hook = Hook::default();
    let (r, ()) = tokio::join!(
        dispatch_with(&c, MessageContent::text("x"), &hook, budget, token),
        fire
    );
    let e = r.unwrap_err();
    assert_eq!(e.remote_task_id, None, "interrupted before any task id");
    e
}

/// Waits (bounded) for `n`, which must come.
async fn within(bound: Duration, n: impl Future<Output = ()>, what: &str) {
    tokio::time::timeout(bound, n)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen within {bound:?}"));
}

/// Cancels `f`'s dispatch before the first stream event (`workflow.cancelled`), then requires the
/// late stream to be dropped within `by` and no CancelTask to follow.
async fn late_stream_is_dropped_without_cancel(f: &Arc<Fake>, by: Duration, what: &str) {
    let dropped = f.late_stream_dropped.notified();
    let e = interrupt_before_the_first_event(f, Duration::from_secs(60), true).await;
    assert!(
        e.failure.is(ErrorCode::WorkflowCancelled),
        "{:?}",
        e.failure
    );
    within(by, dropped, what).await;
    no_cancel_within(f, Duration::from_secs(10)).await;
}

/// Asserts that no CancelTask is sent within `bound` (paused clock: the wait ends only once
/// everything else is idle).
async fn no_cancel_within(f: &Fake, bound: Duration) {
    let cancelled = f.cancelled.notified();
    tokio::pin!(cancelled);
    cancelled.as_mut().enable();
    if f.cancels().is_empty() {
        assert!(
            tokio::time::timeout(bound, cancelled).await.is_err(),
            "a CancelTask was sent: {:?}",
            f.cancels()
        );
    }
    assert_eq!(f.cancels(), Vec::<String>::new());
}

fn ctx_less_status(task_id: &str, state: TaskState) -> StreamResponse {
    let mut s = status("any", state);
    if let StreamResponse::StatusUpdate(u) = &mut s {
        u.task_id = task_id.into();
    }
    s
}

#[tokio::test(start_paused = true)]
async fn s_cancel_late_stream_identity_after_open_is_cancelled() {
    // The first event names the task as a Task, a status update or an artifact update.
    let mut artifact = chunk("any", "x", false, false);
    if let StreamResponse::ArtifactUpdate(a) = &mut artifact {
        a.task_id = "late-a".into();
    }
    let firsts = [
        (
            "late-t",
            StreamResponse::Task(task("late-t", "any", TaskState::Submitted)),
        ),
        ("late-s", ctx_less_status("late-s", TaskState::Working)),
        ("late-a", artifact),
    ];
    for (id, first) in firsts {
        let f = late_stream(Some(Duration::from_secs(2)), vec![first]);
        let cancelled = f.cancelled.notified();
        tokio::pin!(cancelled);
        cancelled.as_mut().enable();
        let e = interrupt_before_the_first_event(&f, Duration::from_secs(60), true).await;
        assert!(
            e.failure.is(ErrorCode::WorkflowCancelled),
            "{:?}",
            e.failure
        );
        assert!(
            f.cancels().is_empty(),
            "nothing to cancel before the late event"
        );
        within(Duration::from_secs(3), cancelled, "the late CancelTask").await;
        assert_eq!(f.cancels(), [id]);
    }
}

#[tokio::test(start_paused = true)]
async fn s_cancel_late_stream_identity_after_a_local_timeout_is_cancelled() {
    let f = late_stream(
        Some(Duration::from_secs(2)),
        vec![StreamResponse::Task(task(
            "late-t",
            "any",
            TaskState::Working,
        ))],
    );
    let cancelled = f.cancelled.notified();
    tokio::pin!(cancelled);
    cancelled.as_mut().enable();
    let e = interrupt_before_the_first_event(&f, Duration::from_secs(1), false).await;
    assert!(e.failure.is(ErrorCode::WorkflowTimeout), "{:?}", e.failure);
    within(Duration::from_secs(3), cancelled, "the late CancelTask").await;
    assert_eq!(f.cancels(), ["late-t"]);
}

#[tokio::test(start_paused = true)]
async fn s_cancel_late_stream_identity_already_terminal_is_not_cancelled() {
    let firsts = [
        StreamResponse::Task(task("done-t", "any", TaskState::Completed)),
        ctx_less_status("done-s", TaskState::Failed),
    ];
    for first in firsts {
        let f = late_stream(Some(Duration::from_secs(2)), vec![first]);
        late_stream_is_dropped_without_cancel(
            &f,
            Duration::from_millis(2100),
            "reading the late event",
        )
        .await;
    }
}

#[tokio::test(start_paused = true)]
async fn s_cancel_late_stream_without_task_sends_nothing_and_ends() {
    // The stream ends, fails, or answers with a bare message: nothing names a task.
    let endings: [Vec<Result<StreamResponse, TransportError>>; 3] = [
        vec![],
        vec![Err(TransportError::Connection("reset".into()))],
        vec![Ok(StreamResponse::Message(agent_msg("no task")))],
    ];
    for items in endings {
        let f = fake(vec![Box::new(move |_| {
            let items = items
                .iter()
                .map(|i| match i {
                    Ok(e) => Ok(e.clone()),
                    Err(_) => Err(TransportError::Connection("reset".into())),
                })
                .collect();
            Reply::LateStream(Some(Duration::from_secs(2)), items)
        })]);
        // Read to its end as soon as it ends, not held until the cancel bound.
        late_stream_is_dropped_without_cancel(
            &f,
            Duration::from_millis(2100),
            "the late stream ending",
        )
        .await;
    }
}

#[tokio::test(start_paused = true)]
async fn s_cancel_late_stream_that_never_answers_is_dropped_at_the_cancel_bound() {
    let f = late_stream(None, vec![]);
    let bound = ClientConfig::default().cancel_timeout;
    late_stream_is_dropped_without_cancel(
        &f,
        bound + Duration::from_millis(10),
        "dropping the silent stream",
    )
    .await;
}

// ---------------------------------------------------------------- CANCEL: late identity, testkit

/// The engine client for the testkit agent "agent" (JSON-RPC first).
async fn testkit_client(server: &TestServer) -> A2aEngineClient {
    let http = HttpClient::new().unwrap();
    let card = http
        .fetch_agent_card(&server.card_url("agent"), &CallOptions::default())
        .await
        .unwrap();
    let transport = connect(&card, &http, Binding::DEFAULT_PREFERENCE).unwrap();
    A2aEngineClient::new(ClientConfig::default())
        .unwrap()
        .with_agent(&card, transport)
        .unwrap()
}

/// Polls `probe` (every 10 ms, at most 10 s) until it gives a value.
async fn eventually<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(Instant::now() < give_up, "gave up waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The task ids of the CancelTask requests the testkit agent received (JSON-RPC).
fn cancelled_ids(server: &TestServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .filter(|r| r.route == Some(Route::Cancel))
        .filter_map(|r| r.body.as_ref()?["params"]["id"].as_str().map(str::to_owned))
        .collect()
}

/// Dispatches "slow 30" to an agent whose streaming answer is held for `hold` (the request is
/// read, the task not yet created), cancelling once the request arrived when `cancel` is set.
async fn interrupt_while_the_stream_opens(
    budget: Duration,
    hold: Duration,
    cancel: bool,
) -> (TestServer, TaskFailure) {
    let server = TestServer::builder()
        .agent(AgentSpec::new("agent"))
        .spawn()
        .await
        .unwrap();
    server
        .set_fault("agent", Route::Stream, Fault::Delay(hold))
        .unwrap();
    let c = testkit_client(&server).await;
    let token = CancellationToken::new();
    let trigger = token.clone();
    let server_ref = &server;
    let fire = async move {
        eventually("the streaming request", || {
            server_ref
                .requests()
                .iter()
                .any(|r| r.route == Some(Route::Stream))
                .then_some(())
        })
        .await;
        if cancel {
            trigger.cancel();
        }
    };
    let hook = Hook::default();
    let (r, ()) = tokio::join!(
        dispatch_with(&c, MessageContent::text("slow 30"), &hook, budget, token),
        fire
    );
    let e = r.unwrap_err();
    assert_eq!(
        e.remote_task_id, None,
        "interrupted before the task existed"
    );
    assert_eq!(server.task_count("agent"), 0, "the answer is still held");
    (server, e)
}

/// The held answer creates the task; the client cancels it: one CancelTask, task CANCELED, in
/// the dispatch's context.
async fn assert_late_task_cancelled(server: &TestServer, e: &TaskFailure) {
    let id = eventually("the late CancelTask", || {
        cancelled_ids(server).into_iter().next()
    })
    .await;
    assert_eq!(cancelled_ids(server), std::slice::from_ref(&id));
    assert_eq!(server.task_count("agent"), 1);
    let task = server
        .task("agent", &id)
        .expect("the cancelled task exists");
    assert_eq!(
        task["contextId"].as_str(),
        e.context_id.as_deref(),
        "the task of this dispatch"
    );
    eventually("the task CANCELED", || {
        let state = server.task("agent", &id)?["status"]["state"].clone();
        (state == "TASK_STATE_CANCELED").then_some(())
    })
    .await;
}

#[tokio::test]
async fn s_cancel_late_stream_identity_cancelled_while_the_stream_opens() {
    let (server, e) =
        interrupt_while_the_stream_opens(Duration::from_secs(20), Duration::from_millis(500), true)
            .await;
    assert!(
        e.failure.is(ErrorCode::WorkflowCancelled),
        "{:?}",
        e.failure
    );
    assert_late_task_cancelled(&server, &e).await;
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn s_cancel_late_stream_identity_deadline_while_the_stream_opens() {
    let (server, e) = interrupt_while_the_stream_opens(
        Duration::from_millis(300),
        Duration::from_millis(800),
        false,
    )
    .await;
    assert!(e.failure.is(ErrorCode::WorkflowTimeout), "{:?}", e.failure);
    assert_late_task_cancelled(&server, &e).await;
    server.shutdown().await.unwrap();
}

// ---------------------------------------------------------------- attach

#[tokio::test(start_paused = true)]
async fn attach_after_restart_finds_the_live_task_by_context_and_sends_nothing() {
    let f = fake(vec![answer("never", TaskState::Completed)]);
    {
        let mut s = f.script.lock().unwrap();
        s.listed = vec![
            task("old", "ctx-7", TaskState::Failed),
            task("live", "ctx-7", TaskState::Working),
            task("other", "ctx-8", TaskState::Working),
        ];
        let mut done = task("live", "ctx-7", TaskState::Completed);
        done.status.message = Some(agent_msg("resumed result"));
        s.gets = VecDeque::from([done]);
    }
    let c = plain_client(&f);
    let out = c
        .attach(
            "agent",
            "ctx-7",
            Instant::now() + Duration::from_secs(30),
            CancellationToken::new(),
            EventEmitter::disabled(),
        )
        .await
        .unwrap();
    assert_eq!(out.remote_task_id.as_deref(), Some("live"));
    assert_eq!(out.context_id.as_deref(), Some("ctx-7"));
    assert_eq!(texts(&out), ["resumed result"]);
    assert_eq!(f.sends(), 0);
    let e = c
        .attach(
            "agent",
            "ctx-none",
            Instant::now() + Duration::from_secs(30),
            CancellationToken::new(),
            EventEmitter::disabled(),
        )
        .await
        .unwrap_err();
    assert!(e.failure.is(ErrorCode::A2aTaskNotFound));
}

#[tokio::test(start_paused = true)]
async fn config_out_of_bounds_is_refused() {
    let e = A2aEngineClient::new(ClientConfig::default().with_max_negotiation_exchanges(0))
        .unwrap_err();
    assert!(e.is(ErrorCode::ConfigInvalid));
    let mut c = A2aEngineClient::new(ClientConfig::default()).unwrap();
    let f: Arc<dyn Transport> = Arc::new(Fake::default());
    c.add_agent(&card(false, json!([])), f.clone()).unwrap();
    assert!(
        c.add_agent(&card(false, json!([])), f)
            .unwrap_err()
            .message
            .contains("Duplicate")
    );
}

#[tokio::test(start_paused = true)]
async fn transient_poll_failures_are_retried_within_a_bound() {
    for (errors, ok) in [(2, true), (3, false)] {
        let f = fake(vec![answer("t1", TaskState::Working)]);
        f.script.lock().unwrap().get_errors = errors;
        let c = plain_client(&f);
        let poll = f.clone();
        let fix = async move {
            while poll.sends() == 0 {
                tokio::task::yield_now().await;
            }
            let ctx = ctx_of(&poll.sent(0));
            poll.script.lock().unwrap().gets =
                VecDeque::from([task("t1", &ctx, TaskState::Completed)]);
        };
        let hook = Hook::default();
        let (r, ()) = tokio::join!(dispatch(&c, MessageContent::text("x"), &hook), fix);
        assert_eq!(r.is_ok(), ok, "{errors} failed polls");
        if let Err(e) = r {
            assert!(e.failure.is(ErrorCode::A2aConnection));
            assert_eq!(f.cancels(), ["t1"], "the known task is cancelled");
        }
        assert_eq!(f.sends(), 1, "the command is never resent");
    }
}

#[tokio::test(start_paused = true)]
async fn nothing_is_sent_after_the_deadline() {
    let f = fake(vec![answer("t1", TaskState::Completed)]);
    let c = plain_client(&f);
    let e = dispatch_with(
        &c,
        MessageContent::text("x"),
        &Hook::default(),
        Duration::ZERO,
        CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert!(e.failure.is(ErrorCode::WorkflowTimeout));
    assert_eq!(f.sends(), 0);
}

/// A dropped stream whose agent resubscribes at once; `policy` says how the client waits first.
async fn resubscribed_after(policy: a2aflow_protocol::ResubscribePolicy) -> Duration {
    let f = fake(vec![Box::new(|r| {
        let c = ctx_of(r);
        Reply::Stream(vec![
            Ok(StreamResponse::Task(task("t1", &c, TaskState::Working))),
            Err(TransportError::Connection("reset mid-stream".into())),
        ])
    })]);
    let config = ClientConfig::default().with_resubscribe(policy);
    let c = client(&f, &card(true, json!([])), config);
    f.script
        .lock()
        .unwrap()
        .subscribes
        .push_back(Box::new(|ctx| {
            Ok(vec![Ok(StreamResponse::Task(task(
                "t1",
                ctx,
                TaskState::Completed,
            )))])
        }));
    let start = Instant::now();
    dispatch(&c, MessageContent::text("x"), &Hook::default())
        .await
        .unwrap();
    assert_eq!(f.subscribes(), 1);
    start.elapsed()
}

#[tokio::test(start_paused = true)]
async fn the_resubscribe_policy_backoff_is_waited_before_resubscribing() {
    use a2aflow_protocol::ResubscribePolicy;
    // The paused clock only moves when the client sleeps.
    let backoff = Duration::from_secs(2);
    assert!(resubscribed_after(ResubscribePolicy::new(1, backoff)).await >= backoff);
    assert!(resubscribed_after(ResubscribePolicy::immediate(1)).await < backoff);
}
