//! The fast peer's gRPC door: `lf.a2a.v1.A2AService` on tonic's server with the official
//! `a2a-pb` stubs, on a listener of its own. `SendMessage` answers the same canned COMPLETED
//! task as the other bindings (the request's context id, a fresh task id); every other
//! operation is `UNIMPLEMENTED`. Like the rest of the fast peer it keeps nothing per request.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use a2a_pb::a2a_service_server::{A2aService, A2aServiceServer};
use a2a_pb::send_message_response::Payload;
use a2a_pb::{
    AgentCard, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    ListTasksRequest, ListTasksResponse, SendMessageRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskPushNotificationConfig,
};
use futures_util::stream::{self, BoxStream};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tonic::{Request, Response, Status};

use crate::fast::{Shared, canned_task, ids};

/// The service: the canned task (ids empty) and the peer's counters.
struct FastGrpc {
    task: Task,
    shared: Arc<Shared>,
}

type Answer<T> = Result<Response<T>, Status>;

fn unimplemented<T>(op: &str) -> Answer<T> {
    Err(Status::unimplemented(format!(
        "the fast peer answers SendMessage only, not {op}"
    )))
}

#[tonic::async_trait]
impl A2aService for FastGrpc {
    async fn send_message(
        &self,
        request: Request<SendMessageRequest>,
    ) -> Answer<SendMessageResponse> {
        let Some(message) = request.into_inner().message else {
            return Err(Status::invalid_argument(
                "a SendMessageRequest names a message",
            ));
        };
        let context = (!message.context_id.is_empty()).then_some(message.context_id.into());
        let (task_id, context_id) = ids(&self.shared, context);
        let mut task = self.task.clone();
        task.id = format!("fast-{task_id}");
        task.context_id = context_id.into_owned();
        Ok(Response::new(SendMessageResponse {
            payload: Some(Payload::Task(task)),
        }))
    }

    type SendStreamingMessageStream = BoxStream<'static, Result<StreamResponse, Status>>;

    async fn send_streaming_message(
        &self,
        _: Request<SendMessageRequest>,
    ) -> Answer<Self::SendStreamingMessageStream> {
        unimplemented("SendStreamingMessage")
    }

    async fn get_task(&self, _: Request<GetTaskRequest>) -> Answer<Task> {
        unimplemented("GetTask")
    }

    async fn list_tasks(&self, _: Request<ListTasksRequest>) -> Answer<ListTasksResponse> {
        unimplemented("ListTasks")
    }

    async fn cancel_task(&self, _: Request<CancelTaskRequest>) -> Answer<Task> {
        unimplemented("CancelTask")
    }

    type SubscribeToTaskStream = BoxStream<'static, Result<StreamResponse, Status>>;

    async fn subscribe_to_task(
        &self,
        _: Request<SubscribeToTaskRequest>,
    ) -> Answer<Self::SubscribeToTaskStream> {
        unimplemented("SubscribeToTask")
    }

    async fn create_task_push_notification_config(
        &self,
        _: Request<TaskPushNotificationConfig>,
    ) -> Answer<TaskPushNotificationConfig> {
        unimplemented("CreateTaskPushNotificationConfig")
    }

    async fn get_task_push_notification_config(
        &self,
        _: Request<GetTaskPushNotificationConfigRequest>,
    ) -> Answer<TaskPushNotificationConfig> {
        unimplemented("GetTaskPushNotificationConfig")
    }

    async fn list_task_push_notification_configs(
        &self,
        _: Request<ListTaskPushNotificationConfigsRequest>,
    ) -> Answer<ListTaskPushNotificationConfigsResponse> {
        unimplemented("ListTaskPushNotificationConfigs")
    }

    async fn get_extended_agent_card(
        &self,
        _: Request<GetExtendedAgentCardRequest>,
    ) -> Answer<AgentCard> {
        unimplemented("GetExtendedAgentCard")
    }

    async fn delete_task_push_notification_config(
        &self,
        _: Request<DeleteTaskPushNotificationConfigRequest>,
    ) -> Answer<()> {
        unimplemented("DeleteTaskPushNotificationConfig")
    }
}

/// Serves the gRPC door on `listener` (tracked by `conns`, stopped by `token`).
pub(crate) fn serve(
    listener: TcpListener,
    shared: Arc<Shared>,
    token: CancellationToken,
    conns: &TaskTracker,
) {
    let service = FastGrpc {
        task: a2a_pb::pbconv::to_proto_task(&canned_task()),
        shared: shared.clone(),
    };
    let incoming = accepted(listener, shared);
    let server = tonic::transport::Server::builder()
        .add_service(A2aServiceServer::new(service))
        .serve_with_incoming_shutdown(incoming, token.clone().cancelled_owned());
    conns.spawn(async move {
        tokio::pin!(server);
        tokio::select! {
            _ = server.as_mut() => {}
            // Stopping: the server winds down its connections, within the shutdown bound.
            () = token.cancelled() => {
                let _ = tokio::time::timeout(crate::SHUTDOWN_TIMEOUT, server).await;
            }
        }
    });
}

/// The accepted connections (no Nagle delay), each counted in the peer's connections; a failed
/// accept is retried after a pause, as on the peer's HTTP listener.
fn accepted(
    listener: TcpListener,
    shared: Arc<Shared>,
) -> impl futures_util::Stream<Item = std::io::Result<TcpStream>> + Send + 'static {
    stream::unfold((listener, shared), |(listener, shared)| async move {
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    shared.connections.fetch_add(1, Ordering::Relaxed);
                    return Some((Ok(stream), (listener, shared)));
                }
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
            }
        }
    })
}
