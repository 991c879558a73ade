//! How the transport's calls are made and their answers read: tonic's `Grpc` client on the
//! shared channel with a prost codec whose buffers start small ([`Prost`]), and the answers of
//! a caller that reads no task history decoded without it ([`TaskWithoutHistory`],
//! [`SendMessageAnswer`], [`StreamAnswer`]).
//!
//! The request's bytes are those of the generated `A2aServiceClient` (the same prost messages,
//! the same method paths); what differs is only what the client keeps of an answer.

use std::marker::PhantomData;

use a2a_pb::proto;
use http::uri::PathAndQuery;
use tonic::Status;
use tonic::client::Grpc;
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder, EncodeBuf, Encoder, Streaming};
use tonic::transport::Channel;

use super::status::Marked;

/// The paths of the methods called through [`Conn`].
pub(super) const SEND_MESSAGE: &str = "/lf.a2a.v1.A2AService/SendMessage";
pub(super) const SEND_STREAMING_MESSAGE: &str = "/lf.a2a.v1.A2AService/SendStreamingMessage";
pub(super) const GET_TASK: &str = "/lf.a2a.v1.A2AService/GetTask";
pub(super) const SUBSCRIBE_TO_TASK: &str = "/lf.a2a.v1.A2AService/SubscribeToTask";

/// Where the first bytes of a message are encoded and of an answer decoded: 1 KiB, which
/// glibc's allocator serves from its thread cache (up to 1,032 B). tonic's default is 8 KiB per
/// buffer, two per call, each through the allocator's slower path for large blocks. A larger
/// message grows its buffer as before.
const BUFFER: usize = 1024;

/// `lf.a2a.v1.Task` without its `history` (field 5): prost skips the field's bytes instead of
/// decoding the messages in it (each id, part and map allocated, then dropped unread). The
/// other fields and their tags are the generated `Task`'s.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct TaskWithoutHistory {
    #[prost(string, tag = "1")]
    pub(super) id: String,
    #[prost(string, tag = "2")]
    pub(super) context_id: String,
    #[prost(message, optional, tag = "3")]
    pub(super) status: Option<proto::TaskStatus>,
    #[prost(message, repeated, tag = "4")]
    pub(super) artifacts: Vec<proto::Artifact>,
    #[prost(message, optional, tag = "6")]
    pub(super) metadata: Option<prost_types::Struct>,
}

impl TaskWithoutHistory {
    /// The generated `Task`, its history empty (its fields move).
    pub(super) fn into_task(self) -> proto::Task {
        proto::Task {
            id: self.id,
            context_id: self.context_id,
            status: self.status,
            artifacts: self.artifacts,
            history: Vec::new(),
            metadata: self.metadata,
        }
    }
}

/// `lf.a2a.v1.SendMessageResponse` with its task read as [`TaskWithoutHistory`].
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct SendMessageAnswer {
    #[prost(oneof = "AnswerPayload", tags = "1, 2")]
    pub(super) payload: Option<AnswerPayload>,
}

/// The payload of a [`SendMessageAnswer`] (the generated response's tags).
#[derive(Clone, PartialEq, prost::Oneof)]
pub(super) enum AnswerPayload {
    #[prost(message, tag = "1")]
    Task(TaskWithoutHistory),
    #[prost(message, tag = "2")]
    Message(proto::Message),
}

impl SendMessageAnswer {
    /// The generated response, a task's history empty (its fields move).
    pub(super) fn into_response(self) -> proto::SendMessageResponse {
        use proto::send_message_response::Payload;
        proto::SendMessageResponse {
            payload: self.payload.map(|p| match p {
                AnswerPayload::Task(t) => Payload::Task(t.into_task()),
                AnswerPayload::Message(m) => Payload::Message(m),
            }),
        }
    }
}

/// `lf.a2a.v1.StreamResponse` with a task read as [`TaskWithoutHistory`].
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct StreamAnswer {
    #[prost(oneof = "StreamPayload", tags = "1, 2, 3, 4")]
    pub(super) payload: Option<StreamPayload>,
}

/// The payload of a [`StreamAnswer`] (the generated response's tags).
#[derive(Clone, PartialEq, prost::Oneof)]
pub(super) enum StreamPayload {
    #[prost(message, tag = "1")]
    Task(TaskWithoutHistory),
    #[prost(message, tag = "2")]
    Message(proto::Message),
    #[prost(message, tag = "3")]
    StatusUpdate(proto::TaskStatusUpdateEvent),
    #[prost(message, tag = "4")]
    ArtifactUpdate(proto::TaskArtifactUpdateEvent),
}

/// A stream message as it is decoded: the generated `StreamResponse`, or [`StreamAnswer`]
/// for a caller that reads no history.
pub(super) trait StreamMessage: prost::Message + Default + Send + Sync + 'static {
    /// The generated message (a task's history empty when it was not read).
    fn into_response(self) -> proto::StreamResponse;
}

impl StreamMessage for proto::StreamResponse {
    fn into_response(self) -> proto::StreamResponse {
        self
    }
}

impl StreamMessage for StreamAnswer {
    fn into_response(self) -> proto::StreamResponse {
        use proto::stream_response::Payload;
        proto::StreamResponse {
            payload: self.payload.map(|p| match p {
                StreamPayload::Task(t) => Payload::Task(t.into_task()),
                StreamPayload::Message(m) => Payload::Message(m),
                StreamPayload::StatusUpdate(u) => Payload::StatusUpdate(u),
                StreamPayload::ArtifactUpdate(u) => Payload::ArtifactUpdate(u),
            }),
        }
    }
}

/// tonic-prost's codec (the same encoding, the same decode error), with [`BUFFER`]-sized
/// buffers.
pub(super) struct Prost<Q, R>(PhantomData<fn(Q) -> R>);

impl<Q, R> Default for Prost<Q, R> {
    fn default() -> Self {
        Prost(PhantomData)
    }
}

/// tonic's default yield threshold (32 KiB), kept.
const YIELD_THRESHOLD: usize = 32 * 1024;

fn settings() -> BufferSettings {
    BufferSettings::new(BUFFER, YIELD_THRESHOLD)
}

impl<Q, R> Codec for Prost<Q, R>
where
    Q: prost::Message + Send + 'static,
    R: prost::Message + Default + Send + 'static,
{
    type Encode = Q;
    type Decode = R;
    type Encoder = ProstEncoder<Q>;
    type Decoder = ProstDecoder<R>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstEncoder(PhantomData)
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstDecoder(PhantomData)
    }
}

/// Encodes a prost message (see [`Prost`]).
pub(super) struct ProstEncoder<Q>(PhantomData<fn(Q)>);

impl<Q: prost::Message> Encoder for ProstEncoder<Q> {
    type Item = Q;
    type Error = Status;

    fn encode(&mut self, item: Q, buf: &mut EncodeBuf<'_>) -> Result<(), Status> {
        // `EncodeBuf` grows as it is written (its remaining room is unbounded), so encoding
        // cannot run out of room: the only error prost's `encode` returns.
        item.encode(buf)
            .map_err(|e| Status::internal(format!("encoding the request: {e}")))
    }

    fn buffer_settings(&self) -> BufferSettings {
        settings()
    }
}

/// Decodes a prost message (see [`Prost`]); an unreadable one is `INTERNAL` with prost's words,
/// as tonic-prost makes it.
pub(super) struct ProstDecoder<R>(PhantomData<fn() -> R>);

impl<R: prost::Message + Default> Decoder for ProstDecoder<R> {
    type Item = R;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<R>, Status> {
        R::decode(buf)
            .map(Some)
            .map_err(|e| Status::internal(e.to_string()))
    }

    fn buffer_settings(&self) -> BufferSettings {
        settings()
    }
}

/// One call's way to the agent: the shared channel, and the largest answer message read.
pub(super) struct Conn {
    pub(super) channel: Marked<Channel>,
    pub(super) limit: usize,
}

impl Conn {
    /// The generated client, for the methods not called through [`unary`](Self::unary).
    pub(super) fn client(self) -> a2a_pb::a2a_service_client::A2aServiceClient<Marked<Channel>> {
        a2a_pb::a2a_service_client::A2aServiceClient::new(self.channel)
            .max_decoding_message_size(self.limit)
    }

    /// tonic's client, ready for a call (what the generated client's methods do first).
    async fn ready(self) -> Result<Grpc<Marked<Channel>>, Status> {
        let mut grpc = Grpc::new(self.channel).max_decoding_message_size(self.limit);
        grpc.ready().await.map_err(|e| {
            let e: tonic::codegen::StdError = e.into();
            Status::unknown(format!("Service was not ready: {e}"))
        })?;
        Ok(grpc)
    }

    /// A unary call of the method at `path`, its answer read as `R`.
    pub(super) async fn unary<Q, R>(
        self,
        request: tonic::Request<Q>,
        path: &'static str,
    ) -> Result<tonic::Response<R>, Status>
    where
        Q: prost::Message + Send + Sync + 'static,
        R: prost::Message + Default + Send + Sync + 'static,
    {
        let mut grpc = self.ready().await?;
        let codec = Prost::<Q, R>::default();
        grpc.unary(request, PathAndQuery::from_static(path), codec)
            .await
    }

    /// A server-streaming call of the method at `path`, its messages read as `M`.
    pub(super) async fn server_streaming<Q, M>(
        self,
        request: tonic::Request<Q>,
        path: &'static str,
    ) -> Result<tonic::Response<Streaming<M>>, Status>
    where
        Q: prost::Message + Send + Sync + 'static,
        M: StreamMessage,
    {
        let mut grpc = self.ready().await?;
        let codec = Prost::<Q, M>::default();
        grpc.server_streaming(request, PathAndQuery::from_static(path), codec)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message as _;

    fn message(id: &str) -> proto::Message {
        proto::Message {
            message_id: id.into(),
            context_id: "ctx".into(),
            task_id: "t-1".into(),
            role: proto::Role::User as i32,
            parts: vec![proto::Part {
                content: Some(proto::part::Content::Text(format!("text of {id}"))),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    /// A task with every field the history-less reading keeps, and a history.
    fn task() -> proto::Task {
        let mut fields = std::collections::BTreeMap::new();
        fields.insert(
            "echo".to_owned(),
            prost_types::Value {
                kind: Some(prost_types::value::Kind::StringValue("x".into())),
            },
        );
        proto::Task {
            id: "t-1".into(),
            context_id: "ctx".into(),
            status: Some(proto::TaskStatus {
                state: proto::TaskState::Completed as i32,
                message: Some(message("m-status")),
                timestamp: Some(prost_types::Timestamp {
                    seconds: 1_800_000_000,
                    nanos: 5,
                }),
            }),
            artifacts: vec![proto::Artifact {
                artifact_id: "result".into(),
                name: "out".into(),
                parts: vec![proto::Part {
                    content: Some(proto::part::Content::Data(prost_types::Value {
                        kind: Some(prost_types::value::Kind::StructValue(prost_types::Struct {
                            fields: fields.clone(),
                        })),
                    })),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            history: vec![message("m-1"), message("m-2")],
            metadata: Some(prost_types::Struct { fields }),
        }
    }

    /// The bytes of a task, and of each SendMessage answer, read without history give the
    /// generated message less its history; fields after the history (metadata) are still read.
    #[test]
    fn a_task_read_without_history_is_the_task_less_its_history() {
        let full = task();
        let mut less = full.clone();
        less.history.clear();
        let bytes = full.encode_to_vec();
        assert_eq!(
            TaskWithoutHistory::decode(bytes.as_slice())
                .unwrap()
                .into_task(),
            less
        );
        use proto::send_message_response::Payload;
        for (sent, read) in [
            (Payload::Task(full), Payload::Task(less)),
            (
                Payload::Message(message("m-3")),
                Payload::Message(message("m-3")),
            ),
        ] {
            let bytes = proto::SendMessageResponse {
                payload: Some(sent),
            }
            .encode_to_vec();
            let answer = SendMessageAnswer::decode(bytes.as_slice()).unwrap();
            assert_eq!(
                answer.into_response(),
                proto::SendMessageResponse {
                    payload: Some(read)
                }
            );
        }
        use proto::stream_response::Payload as Event;
        let update = proto::TaskStatusUpdateEvent {
            task_id: "t-1".into(),
            context_id: "ctx".into(),
            status: task().status,
            metadata: task().metadata,
        };
        let chunk = proto::TaskArtifactUpdateEvent {
            task_id: "t-1".into(),
            context_id: "ctx".into(),
            artifact: task().artifacts.pop(),
            append: true,
            last_chunk: true,
            metadata: None,
        };
        let mut less = task();
        less.history.clear();
        for (sent, read) in [
            (Event::Task(task()), Event::Task(less)),
            (
                Event::Message(message("m-4")),
                Event::Message(message("m-4")),
            ),
            (
                Event::StatusUpdate(update.clone()),
                Event::StatusUpdate(update),
            ),
            (
                Event::ArtifactUpdate(chunk.clone()),
                Event::ArtifactUpdate(chunk),
            ),
        ] {
            let bytes = proto::StreamResponse {
                payload: Some(sent),
            }
            .encode_to_vec();
            let read = proto::StreamResponse {
                payload: Some(read),
            };
            let full = proto::StreamResponse::decode(bytes.as_slice()).unwrap();
            let answer = StreamAnswer::decode(bytes.as_slice()).unwrap();
            assert_eq!(answer.into_response(), read);
            // The generated message passes through as it was decoded.
            assert_eq!(full.clone().into_response(), full);
        }
        let empty = SendMessageAnswer::decode(&[][..]).unwrap();
        assert_eq!(empty.into_response(), proto::SendMessageResponse::default());
    }
}
