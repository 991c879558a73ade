//! A scripted `lf.a2a.v1.A2AService` server on tonic for the gRPC transport's tests: it records
//! each call's metadata and tenant, and answers as its [`Mode`] says.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_pb::a2a_service_server::{A2aService, A2aServiceServer};
use a2a_pb::{
    AgentCard, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    ListTasksRequest, ListTasksResponse, SendMessageRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskPushNotificationConfig,
};
use futures_util::Stream;
use tonic::{Request, Response, Status};

/// Longest a hanging answer holds (a hang guard: the tests' limits are far shorter).
const HOLD: Duration = Duration::from_secs(60);

/// How the peer answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every operation answers at once.
    Answer,
    /// Unary calls never answer; streams send their first message, then nothing.
    Hang,
    /// SendMessage answers a task whose artifact holds this many bytes of text.
    Oversized(usize),
    /// The first call is refused `UNAUTHENTICATED`, later ones are answered.
    UnauthenticatedOnce,
}

/// One call as the peer saw it.
#[derive(Debug, Clone)]
pub struct Call {
    pub method: &'static str,
    pub metadata: http::HeaderMap,
    pub tenant: String,
    /// The request of a SendMessage, as the peer decoded it.
    pub sent: Option<SendMessageRequest>,
}

#[derive(Clone)]
pub struct GrpcPeer {
    calls: Arc<Mutex<Vec<Call>>>,
    mode: Arc<Mutex<Mode>>,
}

/// A running peer on `127.0.0.1`; stopped when dropped.
pub struct Running {
    pub peer: GrpcPeer,
    pub addr: std::net::SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Running {
    /// `127.0.0.1:PORT`, the form the SDKs publish.
    pub fn host_port(&self) -> String {
        self.addr.to_string()
    }
}

impl GrpcPeer {
    pub async fn spawn(mode: Mode) -> Running {
        Self::spawn_limited(mode, 4 * 1024 * 1024).await
    }

    /// [`GrpcPeer::spawn`] refusing a request message over `max_request` bytes (tonic's own
    /// refusal: `OUT_OF_RANGE`, "decoded message length too large").
    pub async fn spawn_limited(mode: Mode, max_request: usize) -> Running {
        let peer = GrpcPeer {
            calls: Arc::default(),
            mode: Arc::new(Mutex::new(mode)),
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let incoming = tonic::transport::server::TcpIncoming::from(listener);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let service = A2aServiceServer::new(peer.clone())
            .max_encoding_message_size(usize::MAX)
            .max_decoding_message_size(max_request);
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming_shutdown(incoming, async {
                    let _ = stopped.await;
                }),
        );
        Running {
            peer,
            addr,
            stop: Some(stop),
        }
    }

    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    fn mode(&self) -> Mode {
        *self.mode.lock().unwrap()
    }

    /// Records the call; the peer's answer to it when that is a refusal or a hang.
    async fn enter(
        &self,
        method: &'static str,
        metadata: &tonic::metadata::MetadataMap,
        tenant: &str,
        unary: bool,
    ) -> Result<(), Status> {
        self.enter_with(method, metadata, tenant, unary, None).await
    }

    /// [`enter`](Self::enter), keeping the request of a SendMessage.
    async fn enter_with(
        &self,
        method: &'static str,
        metadata: &tonic::metadata::MetadataMap,
        tenant: &str,
        unary: bool,
        sent: Option<SendMessageRequest>,
    ) -> Result<(), Status> {
        let first = {
            let mut calls = self.calls.lock().unwrap();
            calls.push(Call {
                method,
                metadata: metadata.clone().into_headers(),
                tenant: tenant.to_owned(),
                sent,
            });
            calls.len() == 1
        };
        match self.mode() {
            Mode::UnauthenticatedOnce if first => Err(Status::unauthenticated("token expired")),
            Mode::Hang if unary => {
                tokio::time::sleep(HOLD).await;
                Err(Status::internal("held too long"))
            }
            _ => Ok(()),
        }
    }
}

fn task(id: &str, context: &str, state: i32, text: Option<String>) -> Task {
    Task {
        id: id.into(),
        context_id: context.into(),
        status: Some(a2a_pb::TaskStatus {
            state,
            message: None,
            timestamp: None,
        }),
        artifacts: text
            .map(|t| {
                vec![a2a_pb::Artifact {
                    artifact_id: "out".into(),
                    name: "out".into(),
                    description: String::new(),
                    parts: vec![a2a_pb::Part {
                        content: Some(a2a_pb::part::Content::Text(t)),
                        metadata: None,
                        filename: String::new(),
                        media_type: String::new(),
                    }],
                    metadata: None,
                    extensions: vec![],
                }]
            })
            .unwrap_or_default(),
        history: vec![],
        metadata: None,
    }
}

const WORKING: i32 = a2a_pb::TaskState::Working as i32;
const COMPLETED: i32 = a2a_pb::TaskState::Completed as i32;
const CANCELED: i32 = a2a_pb::TaskState::Canceled as i32;

fn text_of(req: &SendMessageRequest) -> String {
    req.message
        .as_ref()
        .and_then(|m| m.parts.first())
        .and_then(|p| match &p.content {
            Some(a2a_pb::part::Content::Text(t)) => Some(t.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

fn context_of(req: &SendMessageRequest) -> String {
    req.message
        .as_ref()
        .map(|m| m.context_id.clone())
        .unwrap_or_default()
}

type Events = Pin<Box<dyn Stream<Item = Result<StreamResponse, Status>> + Send>>;

/// A stream's events: the task in WORKING (its history `history`), then (unless the peer
/// hangs) its completion.
fn events(context: String, hang: bool, history: Vec<a2a_pb::Message>) -> Events {
    let mut first = task("t-s", &context, WORKING, None);
    first.history = history;
    let first = StreamResponse {
        payload: Some(a2a_pb::stream_response::Payload::Task(first)),
    };
    let done = StreamResponse {
        payload: Some(a2a_pb::stream_response::Payload::StatusUpdate(
            a2a_pb::TaskStatusUpdateEvent {
                task_id: "t-s".into(),
                context_id: context,
                status: Some(a2a_pb::TaskStatus {
                    state: COMPLETED,
                    message: None,
                    timestamp: None,
                }),
                metadata: None,
            },
        )),
    };
    let head = futures_util::stream::iter([Ok(first)]);
    if hang {
        let held = futures_util::stream::once(async {
            tokio::time::sleep(HOLD).await;
            Err(Status::internal("held too long"))
        });
        Box::pin(futures_util::StreamExt::chain(head, held))
    } else {
        Box::pin(futures_util::StreamExt::chain(
            head,
            futures_util::stream::iter([Ok(done)]),
        ))
    }
}

#[tonic::async_trait]
impl A2aService for GrpcPeer {
    async fn send_message(
        &self,
        request: Request<SendMessageRequest>,
    ) -> Result<Response<SendMessageResponse>, Status> {
        let r = request.get_ref();
        self.enter_with(
            "SendMessage",
            request.metadata(),
            &r.tenant,
            true,
            Some(r.clone()),
        )
        .await?;
        let text = match self.mode() {
            Mode::Oversized(n) => "x".repeat(n),
            _ => text_of(r),
        };
        let mut answer = task("t-1", &context_of(r), COMPLETED, Some(text));
        // The task's history holds the message, as the SDKs' servers answer.
        answer.history = r.message.iter().cloned().collect();
        Ok(Response::new(SendMessageResponse {
            payload: Some(a2a_pb::send_message_response::Payload::Task(answer)),
        }))
    }

    type SendStreamingMessageStream = Events;

    async fn send_streaming_message(
        &self,
        request: Request<SendMessageRequest>,
    ) -> Result<Response<Events>, Status> {
        let r = request.get_ref();
        self.enter("SendStreamingMessage", request.metadata(), &r.tenant, false)
            .await?;
        // The task's history holds the message, as in `send_message`.
        Ok(Response::new(events(
            context_of(r),
            self.mode() == Mode::Hang,
            r.message.iter().cloned().collect(),
        )))
    }

    async fn get_task(&self, request: Request<GetTaskRequest>) -> Result<Response<Task>, Status> {
        let r = request.get_ref();
        self.enter("GetTask", request.metadata(), &r.tenant, true)
            .await?;
        let mut answer = task(&r.id, "c", COMPLETED, Some("polled".into()));
        answer.history = vec![a2a_pb::Message {
            message_id: "m-h".into(),
            context_id: "c".into(),
            task_id: r.id.clone(),
            role: a2a_pb::Role::User as i32,
            parts: vec![a2a_pb::Part {
                content: Some(a2a_pb::part::Content::Text("asked".into())),
                ..Default::default()
            }],
            ..Default::default()
        }];
        Ok(Response::new(answer))
    }

    async fn list_tasks(
        &self,
        request: Request<ListTasksRequest>,
    ) -> Result<Response<ListTasksResponse>, Status> {
        let r = request.get_ref();
        self.enter("ListTasks", request.metadata(), &r.tenant, true)
            .await?;
        Ok(Response::new(ListTasksResponse {
            tasks: vec![task("t-1", &r.context_id, COMPLETED, None)],
            next_page_token: String::new(),
            page_size: 1,
            total_size: 1,
        }))
    }

    async fn cancel_task(
        &self,
        request: Request<CancelTaskRequest>,
    ) -> Result<Response<Task>, Status> {
        let r = request.get_ref();
        self.enter("CancelTask", request.metadata(), &r.tenant, true)
            .await?;
        Ok(Response::new(task(&r.id, "c", CANCELED, None)))
    }

    type SubscribeToTaskStream = Events;

    async fn subscribe_to_task(
        &self,
        request: Request<SubscribeToTaskRequest>,
    ) -> Result<Response<Events>, Status> {
        let r = request.get_ref();
        self.enter("SubscribeToTask", request.metadata(), &r.tenant, false)
            .await?;
        Ok(Response::new(events(
            "c".into(),
            self.mode() == Mode::Hang,
            Vec::new(),
        )))
    }

    async fn create_task_push_notification_config(
        &self,
        _: Request<TaskPushNotificationConfig>,
    ) -> Result<Response<TaskPushNotificationConfig>, Status> {
        Err(Status::unimplemented("no push"))
    }

    async fn get_task_push_notification_config(
        &self,
        _: Request<GetTaskPushNotificationConfigRequest>,
    ) -> Result<Response<TaskPushNotificationConfig>, Status> {
        Err(Status::unimplemented("no push"))
    }

    async fn list_task_push_notification_configs(
        &self,
        _: Request<ListTaskPushNotificationConfigsRequest>,
    ) -> Result<Response<ListTaskPushNotificationConfigsResponse>, Status> {
        Err(Status::unimplemented("no push"))
    }

    async fn get_extended_agent_card(
        &self,
        request: Request<GetExtendedAgentCardRequest>,
    ) -> Result<Response<AgentCard>, Status> {
        let r = request.get_ref();
        self.enter("GetExtendedAgentCard", request.metadata(), &r.tenant, true)
            .await?;
        Ok(Response::new(AgentCard {
            name: "grpc-peer".into(),
            description: "scripted".into(),
            version: "1".into(),
            ..AgentCard::default()
        }))
    }

    async fn delete_task_push_notification_config(
        &self,
        _: Request<DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<Response<()>, Status> {
        Err(Status::unimplemented("no push"))
    }
}
