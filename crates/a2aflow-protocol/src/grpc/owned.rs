//! The answers of the per-task calls (SendMessage, each SendStreamingMessage event) converted from
//! the protobuf messages by value: their strings and parts move into a2a-lf's types instead of
//! being copied (`a2a_pb::pbconv` converts from references), and so do the strings and maps of
//! structured values (`Struct`, `Value`: a data part, metadata). The result is the one `pbconv`
//! gives (checked against it in the tests); timestamps, states and roles go through `pbconv`'s
//! own functions. A task's history is converted only when the caller reads it
//! ([`History`]). A request handed over whole (`Transport::send_message_owned`) is converted the
//! other way by value too ([`send_message_request`]).

use a2a_pb::pbconv;
use a2a_pb::proto;
use a2aflow_model::a2a::{
    Artifact, Message, Part, PartContent, SendMessageRequest, SendMessageResponse, StreamResponse,
    Task, TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use serde_json::Value;
use std::collections::HashMap;

/// Whether a task's history is converted: the caller asked for answers without it
/// (`CallOptions::skip_history`) or not. Left out, it is dropped as decoded, never converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum History {
    Keep,
    Skip,
}

impl History {
    pub(super) fn of(options: &crate::headers::CallOptions) -> History {
        if options.skip_history {
            History::Skip
        } else {
            History::Keep
        }
    }
}

/// `pbconv::from_proto_send_message_response`, by value.
pub(super) fn send_message_response(
    r: proto::SendMessageResponse,
    history: History,
) -> Option<SendMessageResponse> {
    use proto::send_message_response::Payload;
    match r.payload? {
        Payload::Task(t) => Some(SendMessageResponse::Task(task(t, history))),
        Payload::Message(m) => Some(SendMessageResponse::Message(message(m))),
    }
}

/// `pbconv::from_proto_stream_response`, by value.
pub(super) fn stream_response(
    r: proto::StreamResponse,
    history: History,
) -> Option<StreamResponse> {
    use proto::stream_response::Payload;
    match r.payload? {
        Payload::Task(t) => Some(StreamResponse::Task(task(t, history))),
        Payload::Message(m) => Some(StreamResponse::Message(message(m))),
        Payload::StatusUpdate(e) => Some(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: e.task_id,
            context_id: e.context_id,
            status: status(e.status),
            metadata: e.metadata.map(object),
        })),
        Payload::ArtifactUpdate(e) => {
            Some(StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: e.task_id,
                context_id: e.context_id,
                artifact: e.artifact.map_or_else(
                    || Artifact {
                        artifact_id: String::new(),
                        name: None,
                        description: None,
                        parts: vec![],
                        metadata: None,
                        extensions: None,
                    },
                    artifact,
                ),
                append: e.append.then_some(true),
                last_chunk: e.last_chunk.then_some(true),
                metadata: e.metadata.map(object),
            }))
        }
    }
}

/// `pbconv::from_proto_task`, by value; without its history when `history` says so.
pub(super) fn task(t: proto::Task, history: History) -> Task {
    Task {
        id: t.id,
        context_id: t.context_id,
        status: status(t.status),
        artifacts: non_empty(t.artifacts).map(|a| a.into_iter().map(artifact).collect()),
        history: match history {
            History::Keep => non_empty(t.history).map(|h| h.into_iter().map(message).collect()),
            History::Skip => None,
        },
        metadata: t.metadata.map(object),
    }
}

fn status(s: Option<proto::TaskStatus>) -> TaskStatus {
    match s {
        Some(s) => TaskStatus {
            state: pbconv::from_proto_task_state(s.state),
            message: s.message.map(message),
            timestamp: s.timestamp.as_ref().and_then(pbconv::from_proto_timestamp),
        },
        None => TaskStatus {
            state: TaskState::Unspecified,
            message: None,
            timestamp: None,
        },
    }
}

fn message(m: proto::Message) -> Message {
    Message {
        message_id: m.message_id,
        context_id: some(m.context_id),
        task_id: some(m.task_id),
        role: pbconv::from_proto_role(m.role),
        parts: m.parts.into_iter().map(part).collect(),
        metadata: m.metadata.map(object),
        extensions: non_empty(m.extensions),
        reference_task_ids: non_empty(m.reference_task_ids),
    }
}

fn artifact(a: proto::Artifact) -> Artifact {
    Artifact {
        artifact_id: a.artifact_id,
        name: some(a.name),
        description: some(a.description),
        parts: a.parts.into_iter().map(part).collect(),
        metadata: a.metadata.map(object),
        extensions: non_empty(a.extensions),
    }
}

fn part(p: proto::Part) -> Part {
    use proto::part::Content;
    let content = match p.content {
        Some(Content::Text(t)) => PartContent::Text(t),
        Some(Content::Raw(r)) => PartContent::Raw(r),
        Some(Content::Url(u)) => PartContent::Url(u),
        Some(Content::Data(d)) => PartContent::Data(json(d)),
        None => PartContent::Text(String::new()),
    };
    Part {
        content,
        filename: some(p.filename),
        media_type: some(p.media_type),
        metadata: p.metadata.map(object),
    }
}

/// `pbconv::from_proto_struct`, by value: the keys and string values move.
fn object(s: prost_types::Struct) -> HashMap<String, Value> {
    s.fields.into_iter().map(|(k, v)| (k, json(v))).collect()
}

/// `pbconv::proto_value_to_json_value`, by value.
fn json(v: prost_types::Value) -> Value {
    use prost_types::value::Kind;
    match v.kind {
        Some(Kind::NullValue(_)) | None => Value::Null,
        Some(Kind::BoolValue(b)) => Value::Bool(b),
        // A non-finite number has no JSON form: null, as pbconv gives.
        Some(Kind::NumberValue(n)) => {
            serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
        }
        Some(Kind::StringValue(s)) => Value::String(s),
        Some(Kind::ListValue(l)) => Value::Array(l.values.into_iter().map(json).collect()),
        Some(Kind::StructValue(s)) => {
            Value::Object(s.fields.into_iter().map(|(k, v)| (k, json(v))).collect())
        }
    }
}

/// `pbconv::to_proto_send_message_request`, by value: the message's ids, parts and lists move
/// into the protobuf message.
pub(super) fn send_message_request(r: SendMessageRequest) -> proto::SendMessageRequest {
    proto::SendMessageRequest {
        tenant: r.tenant.unwrap_or_default(),
        message: Some(proto_message(r.message)),
        configuration: r
            .configuration
            .as_ref()
            .map(pbconv::to_proto_send_message_configuration),
        metadata: r.metadata.map(proto_struct),
    }
}

fn proto_message(m: Message) -> proto::Message {
    proto::Message {
        message_id: m.message_id,
        context_id: m.context_id.unwrap_or_default(),
        task_id: m.task_id.unwrap_or_default(),
        role: pbconv::to_proto_role(&m.role),
        parts: m.parts.into_iter().map(proto_part).collect(),
        metadata: m.metadata.map(proto_struct),
        extensions: m.extensions.unwrap_or_default(),
        reference_task_ids: m.reference_task_ids.unwrap_or_default(),
    }
}

fn proto_part(p: Part) -> proto::Part {
    use proto::part::Content;
    let content = match p.content {
        PartContent::Text(t) => Content::Text(t),
        PartContent::Raw(r) => Content::Raw(r),
        PartContent::Url(u) => Content::Url(u),
        PartContent::Data(d) => Content::Data(proto_value(d)),
    };
    proto::Part {
        content: Some(content),
        filename: p.filename.unwrap_or_default(),
        media_type: p.media_type.unwrap_or_default(),
        metadata: p.metadata.map(proto_struct),
    }
}

/// `pbconv::to_proto_struct`, by value.
fn proto_struct(map: HashMap<String, Value>) -> prost_types::Struct {
    prost_types::Struct {
        fields: map.into_iter().map(|(k, v)| (k, proto_value(v))).collect(),
    }
}

/// `pbconv::json_value_to_proto_value`, by value.
fn proto_value(v: Value) -> prost_types::Value {
    use prost_types::value::Kind;
    let kind = match v {
        Value::Null => Kind::NullValue(0),
        Value::Bool(b) => Kind::BoolValue(b),
        // As pbconv: a number is a double (one beyond f64's range is 0).
        Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(0.0)),
        Value::String(s) => Kind::StringValue(s),
        Value::Array(a) => Kind::ListValue(prost_types::ListValue {
            values: a.into_iter().map(proto_value).collect(),
        }),
        Value::Object(o) => Kind::StructValue(prost_types::Struct {
            fields: o.into_iter().map(|(k, v)| (k, proto_value(v))).collect(),
        }),
    };
    prost_types::Value { kind: Some(kind) }
}

/// An empty protobuf string is an absent field.
fn some(s: String) -> Option<String> {
    (!s.is_empty()).then_some(s)
}

/// An empty repeated field is an absent one.
fn non_empty<T>(v: Vec<T>) -> Option<Vec<T>> {
    (!v.is_empty()).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2aflow_model::a2a::Role;
    use serde_json::json;
    use std::collections::HashMap;

    /// A message with every field set, parts of each kind included.
    fn full_message() -> Message {
        let mut meta = HashMap::new();
        meta.insert("k".to_owned(), json!({"n": 1.5, "list": [true, null, "s"]}));
        Message {
            message_id: "m-1".into(),
            context_id: Some("ctx".into()),
            task_id: Some("t-1".into()),
            role: Role::Agent,
            parts: vec![
                Part {
                    content: PartContent::Text("hello".into()),
                    filename: None,
                    media_type: Some("text/plain".into()),
                    metadata: Some(meta.clone()),
                },
                Part {
                    content: PartContent::Url("https://example.com/f".into()),
                    filename: Some("f.bin".into()),
                    media_type: None,
                    metadata: None,
                },
                Part {
                    content: PartContent::Data(json!({"a": [1.0, 2.0], "b": {"c": "d"}})),
                    filename: None,
                    media_type: None,
                    metadata: None,
                },
            ],
            metadata: Some(meta),
            extensions: Some(vec!["urn:x".into()]),
            reference_task_ids: Some(vec!["t-0".into()]),
        }
    }

    /// [`full_message`] with only its required fields.
    fn bare_message() -> Message {
        Message {
            parts: vec![],
            metadata: None,
            extensions: None,
            reference_task_ids: None,
            context_id: None,
            task_id: None,
            ..full_message()
        }
    }

    fn full_task() -> Task {
        let artifact = Artifact {
            artifact_id: "a-1".into(),
            name: Some("out".into()),
            description: Some("the output".into()),
            parts: full_message().parts,
            metadata: full_message().metadata,
            extensions: Some(vec!["urn:y".into()]),
        };
        Task {
            id: "t-1".into(),
            context_id: "ctx".into(),
            status: TaskStatus {
                state: TaskState::Completed,
                message: Some(full_message()),
                timestamp: Some("2026-12-05T19:00:00.123Z".parse().unwrap()),
            },
            artifacts: Some(vec![artifact]),
            history: Some(vec![full_message(), bare_message()]),
            metadata: full_message().metadata,
        }
    }

    /// Each answer kind, full and nearly empty, converts by value exactly as `pbconv` does by
    /// reference.
    #[test]
    fn the_owned_conversion_gives_what_pbconv_gives() {
        let task = full_task();
        let bare_task = Task {
            id: "t-2".into(),
            context_id: "ctx".into(),
            status: TaskStatus {
                state: TaskState::Working,
                message: None,
                timestamp: None,
            },
            artifacts: None,
            history: None,
            metadata: None,
        };
        let answers = [
            SendMessageResponse::Task(task.clone()),
            SendMessageResponse::Task(bare_task.clone()),
            SendMessageResponse::Message(full_message()),
        ];
        for answer in &answers {
            let wire = pbconv::to_proto_send_message_response(answer);
            let by_ref = pbconv::from_proto_send_message_response(&wire);
            assert!(by_ref.is_some());
            assert_eq!(send_message_response(wire, History::Keep), by_ref);
        }
        let artifact = task.artifacts.clone().unwrap().remove(0);
        let events = [
            StreamResponse::Task(task.clone()),
            StreamResponse::Task(bare_task),
            StreamResponse::Message(full_message()),
            StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id: "t-1".into(),
                context_id: "ctx".into(),
                status: task.status.clone(),
                metadata: task.metadata.clone(),
            }),
            StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: "t-1".into(),
                context_id: "ctx".into(),
                artifact,
                append: Some(true),
                last_chunk: None,
                metadata: None,
            }),
        ];
        for event in &events {
            let wire = pbconv::to_proto_stream_response(event);
            let by_ref = pbconv::from_proto_stream_response(&wire);
            assert!(by_ref.is_some());
            assert_eq!(stream_response(wire, History::Keep), by_ref);
        }
        // No payload, and an update without its status or artifact: as pbconv, too.
        let empty = proto::StreamResponse { payload: None };
        assert_eq!(stream_response(empty.clone(), History::Keep), None);
        assert_eq!(pbconv::from_proto_stream_response(&empty), None);
        let hollow = proto::StreamResponse {
            payload: Some(proto::stream_response::Payload::ArtifactUpdate(
                proto::TaskArtifactUpdateEvent::default(),
            )),
        };
        assert_eq!(
            stream_response(hollow.clone(), History::Keep),
            pbconv::from_proto_stream_response(&hollow)
        );
        let hollow = proto::SendMessageResponse {
            payload: Some(proto::send_message_response::Payload::Task(
                proto::Task::default(),
            )),
        };
        assert_eq!(
            send_message_response(hollow.clone(), History::Keep),
            pbconv::from_proto_send_message_response(&hollow)
        );
    }

    /// A caller that reads no history gets the task without it, and everything else as
    /// `pbconv` gives it; a stream's task the same.
    #[test]
    fn a_skipped_history_is_left_out_and_nothing_else() {
        let task = full_task();
        assert!(task.history.is_some());
        let without = Task {
            history: None,
            ..task.clone()
        };
        let wire = pbconv::to_proto_send_message_response(&SendMessageResponse::Task(task.clone()));
        assert_eq!(
            send_message_response(wire, History::Skip),
            Some(SendMessageResponse::Task(without.clone()))
        );
        let wire = pbconv::to_proto_stream_response(&StreamResponse::Task(task));
        assert_eq!(
            stream_response(wire, History::Skip),
            Some(StreamResponse::Task(without))
        );
        let options = crate::headers::CallOptions::default();
        assert_eq!(History::of(&options), History::Keep);
        assert_eq!(History::of(&options.without_history()), History::Skip);
    }

    /// A request handed over converts by value exactly as `pbconv` converts it by reference:
    /// every field set (parts of each kind, metadata, configuration), and a bare one.
    #[test]
    fn an_owned_request_converts_as_pbconv_does() {
        let mut message = full_message();
        message.parts.push(Part {
            content: PartContent::Raw(vec![0, 1, 255]),
            filename: Some("r.bin".into()),
            media_type: Some("application/octet-stream".into()),
            metadata: None,
        });
        let full = SendMessageRequest {
            message,
            configuration: Some(a2aflow_model::a2a::SendMessageConfiguration {
                accepted_output_modes: Some(vec!["text/plain".into()]),
                task_push_notification_config: None,
                history_length: Some(3),
                return_immediately: Some(true),
            }),
            metadata: full_message().metadata,
            tenant: Some("t".into()),
        };
        let bare = SendMessageRequest {
            message: bare_message(),
            configuration: None,
            metadata: None,
            tenant: None,
        };
        for request in [full, bare] {
            let by_ref = pbconv::to_proto_send_message_request(&request);
            assert_eq!(send_message_request(request), by_ref);
        }
    }
}
