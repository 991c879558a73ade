//! The [`Transport`] trait: one async method per A2A operation the engine uses.

use a2aflow_model::Failure;
use a2aflow_model::a2a::{
    AgentCard, CancelTaskRequest, GetTaskRequest, ListTasksRequest, ListTasksResponse,
    SendMessageRequest, SendMessageResponse, SubscribeToTaskRequest, Task,
};
use async_trait::async_trait;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::binding::Binding;
use crate::error::TransportError;
use crate::headers::CallOptions;
use crate::stream::StreamResponseStream;

/// The future of [`Transport::send_message_owned`]: it owns what it needs.
pub type OwnedSend =
    Pin<Box<dyn Future<Output = Result<SendMessageResponse, TransportError>> + Send + 'static>>;

/// The future of [`Transport::send_streaming_message_owned`]: it owns what it needs.
pub type OwnedStreamSend =
    Pin<Box<dyn Future<Output = Result<StreamResponseStream, TransportError>> + Send + 'static>>;

/// An A2A 1.0 client binding to one agent interface. Object-safe: hold it as
/// `Arc<dyn Transport>`.
///
/// No method retries by itself: an error before a task exists is returned as is, and deciding
/// whether to send again is the caller's business. Dropping a returned stream closes its request.
#[async_trait]
pub trait Transport: Send + Sync + std::fmt::Debug {
    /// The binding this transport speaks.
    fn binding(&self) -> Binding;

    /// The interface URL it sends to.
    fn url(&self) -> &str;

    /// `SendMessage`: blocks until the task is terminal or interrupted unless
    /// `configuration.returnImmediately` is set; answers a `Task` or a `Message`.
    async fn send_message(
        &self,
        request: &SendMessageRequest,
        options: &CallOptions,
    ) -> Result<SendMessageResponse, TransportError>;

    /// [`send_message`](Self::send_message) with the request and options handed over: one
    /// boxed future that owns them and the transport, for a caller that keeps the pending send
    /// (to read a late answer) and would otherwise box a future of its own around a borrowing
    /// one. The call and its answer are the same; a transport may move the request's content
    /// into its wire message instead of copying it. The default wraps `send_message`.
    fn send_message_owned(
        self: Arc<Self>,
        request: SendMessageRequest,
        options: CallOptions,
    ) -> OwnedSend
    where
        Self: 'static,
    {
        Box::pin(async move { self.send_message(&request, &options).await })
    }

    /// `SendStreamingMessage`: a stream of events (first a `Task` or the single `Message`).
    async fn send_streaming_message(
        &self,
        request: &SendMessageRequest,
        options: &CallOptions,
    ) -> Result<StreamResponseStream, TransportError>;

    /// [`send_streaming_message`](Self::send_streaming_message) with the request and options
    /// handed over, as [`send_message_owned`](Self::send_message_owned) is to `send_message`:
    /// the same call, opened by one boxed future that owns what it needs. The default wraps
    /// `send_streaming_message`.
    fn send_streaming_message_owned(
        self: Arc<Self>,
        request: SendMessageRequest,
        options: CallOptions,
    ) -> OwnedStreamSend
    where
        Self: 'static,
    {
        Box::pin(async move { self.send_streaming_message(&request, &options).await })
    }

    /// `GetTask`.
    async fn get_task(
        &self,
        request: &GetTaskRequest,
        options: &CallOptions,
    ) -> Result<Task, TransportError>;

    /// `ListTasks`.
    async fn list_tasks(
        &self,
        request: &ListTasksRequest,
        options: &CallOptions,
    ) -> Result<ListTasksResponse, TransportError>;

    /// `CancelTask`: the task as the agent holds it after the request.
    async fn cancel_task(
        &self,
        request: &CancelTaskRequest,
        options: &CallOptions,
    ) -> Result<Task, TransportError>;

    /// `SubscribeToTask`: the current `Task` first, then its updates.
    async fn subscribe_to_task(
        &self,
        request: &SubscribeToTaskRequest,
        options: &CallOptions,
    ) -> Result<StreamResponseStream, TransportError>;

    /// `GetExtendedAgentCard`.
    async fn get_extended_agent_card(
        &self,
        options: &CallOptions,
    ) -> Result<AgentCard, TransportError>;

    /// Refreshes the credentials this transport sends, because the agent asked for
    /// authentication (a task stopped at AUTH_REQUIRED and the host answered it): its request
    /// headers are told as on a 401 ([`crate::RequestHeaders::on_unauthorized`]: a cached token
    /// is dropped, the host's provider is told), so the next request carries fresh ones. `true`
    /// when they may differ. The default has no credentials to refresh: `false`.
    async fn refresh_credentials(&self) -> Result<bool, Failure> {
        Ok(false)
    }
}
