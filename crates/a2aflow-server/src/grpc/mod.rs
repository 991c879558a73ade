//! The gRPC binding: `lf.a2a.v1.A2AService` (the official `a2a-pb` stubs on tonic's server),
//! served on the server's one listener: a request whose content type is `application/grpc…`
//! goes to the service, anything else to the HTTP doors (see `docs/decisions/0014`). gRPC paths
//! name no agent, so a call names its workflow by the request's `tenant`, as the card's `GRPC`
//! interface says (a call without a tenant on a server publishing one workflow means that one).
//!
//! Every method maps its request to the ProtoJSON parameters the other bindings hand to the
//! same operations ([`crate::ops`]), and the answers back to the stubs' messages; the same
//! checks come first, in the same order: the agent, the caller's credentials (gRPC metadata:
//! `authorization: Bearer …` or the API key header), the `a2a-version` metadata. Errors are
//! statuses with the `google.rpc.Status` details of [`status`].

mod status;

use crate::app::{App, unauthenticated_error};
use crate::auth::Who;
use crate::body::{Body, BodyError};
use crate::events::{Event, TaskEvents};
use crate::ops::{self, Answer, Unsupported};
use crate::params::list_query;
use crate::version::check_version;
use crate::wire_error::{A2aError, ErrorKind};
use a2a_pb::a2a_service_server::{A2aService, A2aServiceServer};
use a2a_pb::pbconv;
use bytes::Bytes;
use futures_util::stream::{self, BoxStream};
use http::{HeaderValue, header};
use http_body_util::{BodyExt, LengthLimitError};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::sync::Arc;
use tonic::metadata::MetadataMap;
use tonic::{Request, Response, Status};
use tower::{BoxError, ServiceExt};

pub(crate) use status::status;

/// The service tonic serves (the stubs' server around [`Served`]) and the message limit.
#[derive(Clone)]
pub(crate) struct Door {
    server: A2aServiceServer<Served>,
    limit: usize,
}

/// The A2A service over the server's runs.
pub(crate) struct Served {
    app: Arc<App>,
}

/// The gRPC door of `app`: request messages up to the body limit.
pub(crate) fn door(app: Arc<App>) -> Door {
    let limit = app.limits.max_body_bytes;
    Door {
        server: A2aServiceServer::new(Served { app }).max_decoding_message_size(limit),
        limit,
    }
}

/// Whether `request` is a gRPC call (`content-type: application/grpc`, `application/grpc+proto`).
pub(crate) fn is_grpc<B>(request: &http::Request<B>) -> bool {
    request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/grpc"))
}

/// Serves one gRPC call. A request message past the body limit is refused with the typed
/// `INVALID_ARGUMENT` status the HTTP doors give an oversized body (tonic's own words for it
/// would read, to a client, like a limit of its own).
pub(crate) async fn call<B>(door: Door, request: http::Request<B>) -> http::Response<Body>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let limit = door.limit;
    let request = request.map(|b| b.map_err(limited(limit)));
    let response = match door.server.oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    if refused_as_too_long(&response) {
        return status(&too_large(limit)).into_http();
    }
    response.map(|b| b.map_err(body_error).boxed_unsync())
}

/// A request body's error, the body limit's as the typed status tonic answers with (tonic takes
/// a `Status` it finds as the error as the call's status).
fn limited<E: Into<BoxError>>(limit: usize) -> impl FnMut(E) -> BoxError + Clone {
    move |e: E| {
        let e: BoxError = e.into();
        if e.is::<LengthLimitError>() {
            let refused: BoxError = Box::new(status(&too_large(limit)));
            refused
        } else {
            e
        }
    }
}

fn body_error(status: Status) -> BodyError {
    Box::new(status)
}

fn too_large(limit: usize) -> A2aError {
    A2aError::new(
        ErrorKind::InvalidRequest,
        format!("the request message is larger than {limit} bytes, the server's limit"),
    )
}

/// Whether tonic refused the request message for its length (a trailers-only answer).
fn refused_as_too_long(response: &http::Response<tonic::body::Body>) -> bool {
    let h = response.headers();
    h.get("grpc-status") == Some(&HeaderValue::from_static("11"))
        && h.get("grpc-message")
            .and_then(|m| m.to_str().ok())
            .is_some_and(|m| m.starts_with("Error, decoded message length too large"))
}

type Answered<T> = Result<Response<T>, Status>;
type Events = BoxStream<'static, Result<a2a_pb::StreamResponse, Status>>;

impl Served {
    /// The workflow a call names and who sent it, after the checks every call passes.
    fn admit(&self, metadata: &MetadataMap, tenant: &str) -> Result<(String, Who), Status> {
        let workflow = self.workflow(tenant)?;
        let headers = metadata.clone().into_headers();
        let who = self
            .app
            .callers
            .identify(&headers)
            .ok_or_else(|| status(&unauthenticated_error()))?;
        check_version(&headers).map_err(|e| status(&e))?;
        Ok((workflow, who))
    }

    /// The served workflow named by `tenant` (empty: the only one, if one is served).
    fn workflow(&self, tenant: &str) -> Result<String, Status> {
        let cards = &self.app.cards;
        if tenant.is_empty() && cards.len() == 1 {
            return Ok(cards.keys().next().cloned().unwrap_or_default());
        }
        if cards.contains_key(tenant) {
            return Ok(tenant.to_owned());
        }
        let shown: String = tenant.chars().take(64).collect();
        Err(status(&A2aError::new(
            ErrorKind::MethodNotFound,
            format!(
                "no agent is served under the tenant {shown:?}: name the workflow in the \
                 request's tenant, as the agent card's GRPC interface does"
            ),
        )))
    }

    /// A task stream as the stubs' stream (no idle pings: gRPC has no comments).
    fn events(&self, answer: Answer) -> Answered<Events> {
        let events: Events = match answer {
            Answer::Stream(watch, first, opening) => {
                let events = TaskEvents::new(watch, first, opening, self.app.limits.ping);
                Box::pin(stream::unfold(events, |mut events| async move {
                    loop {
                        match events.next().await? {
                            Event::Update(e) => {
                                return Some((Ok(pbconv::to_proto_stream_response(&e)), events));
                            }
                            Event::Idle => {}
                        }
                    }
                }))
            }
            Answer::StreamOnce(task) => Box::pin(stream::iter([Ok(
                pbconv::to_proto_stream_response(&a2a::StreamResponse::Task(task)),
            )])),
            Answer::Json(_) => {
                return Err(status(&A2aError::internal("a stream answered one message")));
            }
        };
        Ok(Response::new(events))
    }
}

/// A request as the ProtoJSON parameters of the operations.
fn params<T: serde::Serialize>(request: &T) -> Result<Value, Status> {
    serde_json::to_value(request)
        .map_err(|e| status(&A2aError::new(ErrorKind::InvalidParams, e.to_string())))
}

/// A one-message answer as the stubs' message.
fn unary<T: DeserializeOwned, P>(
    answer: Result<Answer, A2aError>,
    to_proto: impl FnOnce(&T) -> P,
) -> Answered<P> {
    match answer.map_err(|e| status(&e))? {
        Answer::Json(value) => serde_json::from_value::<T>(value)
            .map(|t| Response::new(to_proto(&t)))
            .map_err(|e| {
                status(&A2aError::internal(format!(
                    "cannot encode the answer: {e}"
                )))
            }),
        _ => Err(status(&A2aError::internal(
            "a stream answered a one-message call",
        ))),
    }
}

fn unsupported<T>(kind: Unsupported) -> Answered<T> {
    Err(status(&ops::unsupported(kind)))
}

#[tonic::async_trait]
impl A2aService for Served {
    async fn send_message(
        &self,
        request: Request<a2a_pb::SendMessageRequest>,
    ) -> Answered<a2a_pb::SendMessageResponse> {
        let (metadata, _, r) = request.into_parts();
        let (workflow, who) = self.admit(&metadata, &r.tenant)?;
        let p = params(&pbconv::from_proto_send_message_request(&r))?;
        let wait = self.app.limits.send_wait;
        let answer = ops::send(&self.app.runs, &workflow, &who, &p, false, wait).await;
        unary(answer, pbconv::to_proto_send_message_response)
    }

    type SendStreamingMessageStream = Events;

    async fn send_streaming_message(
        &self,
        request: Request<a2a_pb::SendMessageRequest>,
    ) -> Answered<Events> {
        let (metadata, _, r) = request.into_parts();
        let (workflow, who) = self.admit(&metadata, &r.tenant)?;
        let p = params(&pbconv::from_proto_send_message_request(&r))?;
        let wait = self.app.limits.send_wait;
        let answer = ops::send(&self.app.runs, &workflow, &who, &p, true, wait)
            .await
            .map_err(|e| status(&e))?;
        self.events(answer)
    }

    async fn get_task(&self, request: Request<a2a_pb::GetTaskRequest>) -> Answered<a2a_pb::Task> {
        let (metadata, _, r) = request.into_parts();
        let (workflow, who) = self.admit(&metadata, &r.tenant)?;
        let p = params(&pbconv::from_proto_get_task_request(&r))?;
        let answer = ops::get(&self.app.runs, &workflow, &who, &p).await;
        unary(answer, pbconv::to_proto_task)
    }

    async fn list_tasks(
        &self,
        request: Request<a2a_pb::ListTasksRequest>,
    ) -> Answered<a2a_pb::ListTasksResponse> {
        let (metadata, _, r) = request.into_parts();
        let (workflow, who) = self.admit(&metadata, &r.tenant)?;
        let p = params(&pbconv::from_proto_list_tasks_request(&r))?;
        let query = list_query(&p).map_err(|e| status(&e))?;
        let answer = ops::list(&self.app.runs, &workflow, &who, query).await;
        unary(answer, pbconv::to_proto_list_tasks_response)
    }

    async fn cancel_task(
        &self,
        request: Request<a2a_pb::CancelTaskRequest>,
    ) -> Answered<a2a_pb::Task> {
        let (metadata, _, r) = request.into_parts();
        let (workflow, who) = self.admit(&metadata, &r.tenant)?;
        let p = params(&pbconv::from_proto_cancel_task_request(&r))?;
        let answer = ops::cancel(&self.app.runs, &workflow, &who, &p).await;
        unary(answer, pbconv::to_proto_task)
    }

    type SubscribeToTaskStream = Events;

    async fn subscribe_to_task(
        &self,
        request: Request<a2a_pb::SubscribeToTaskRequest>,
    ) -> Answered<Events> {
        let (metadata, _, r) = request.into_parts();
        let (workflow, who) = self.admit(&metadata, &r.tenant)?;
        let p = params(&pbconv::from_proto_subscribe_to_task_request(&r))?;
        let answer = ops::subscribe(&self.app.runs, &workflow, &who, &p)
            .await
            .map_err(|e| status(&e))?;
        self.events(answer)
    }

    async fn create_task_push_notification_config(
        &self,
        request: Request<a2a_pb::TaskPushNotificationConfig>,
    ) -> Answered<a2a_pb::TaskPushNotificationConfig> {
        self.admit(request.metadata(), &request.get_ref().tenant)?;
        unsupported(Unsupported::PushNotifications)
    }

    async fn get_task_push_notification_config(
        &self,
        request: Request<a2a_pb::GetTaskPushNotificationConfigRequest>,
    ) -> Answered<a2a_pb::TaskPushNotificationConfig> {
        self.admit(request.metadata(), &request.get_ref().tenant)?;
        unsupported(Unsupported::PushNotifications)
    }

    async fn list_task_push_notification_configs(
        &self,
        request: Request<a2a_pb::ListTaskPushNotificationConfigsRequest>,
    ) -> Answered<a2a_pb::ListTaskPushNotificationConfigsResponse> {
        self.admit(request.metadata(), &request.get_ref().tenant)?;
        unsupported(Unsupported::PushNotifications)
    }

    async fn get_extended_agent_card(
        &self,
        request: Request<a2a_pb::GetExtendedAgentCardRequest>,
    ) -> Answered<a2a_pb::AgentCard> {
        self.admit(request.metadata(), &request.get_ref().tenant)?;
        unsupported(Unsupported::ExtendedCard)
    }

    async fn delete_task_push_notification_config(
        &self,
        request: Request<a2a_pb::DeleteTaskPushNotificationConfigRequest>,
    ) -> Answered<()> {
        self.admit(request.metadata(), &request.get_ref().tenant)?;
        unsupported(Unsupported::PushNotifications)
    }
}
