//! Serde mirrors of `a2a-lf`'s response types (`#[serde(remote)]`): the same fields with the same
//! attributes, built straight into `a2a-lf`'s own structs, except for two members whose decoding
//! `a2a-lf` routes through detours:
//!
//! - a [`Part`] is read with a field visitor instead of into a `HashMap<String, Value>` whose
//!   entries are then cloned (SipHash, a map and a copy of every part's content);
//! - a status timestamp takes [`super::timestamp`]'s fast path before chrono's parser.
//!
//! The values produced are `a2a-lf`'s, and so is what is accepted, with one deliberate narrowing:
//! a `raw` (base64) part is declined here, so the caller decodes that payload on the checked
//! path with `a2a-lf`'s own base64 engine. Any error here only means "take the checked path"
//! (see [`super`]); `tests` compare the two decodings on generated parts and on every event of
//! the Python SDK transcripts.

use super::timestamp;
use a2aflow_model::a2a::{
    Artifact, Message, Part, PartContent, Role, Task, TaskArtifactUpdateEvent, TaskId, TaskState,
    TaskStatus, TaskStatusUpdateEvent,
};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;

/// A [`Message`] decoded through the mirror.
#[derive(Debug, Deserialize)]
pub(crate) struct LeanMessage(#[serde(with = "MessageDef")] pub(crate) Message);

/// A [`Task`] decoded through the mirror.
#[derive(Debug, Deserialize)]
pub(crate) struct LeanTask(#[serde(with = "TaskDef")] pub(crate) Task);

/// A [`TaskStatusUpdateEvent`] decoded through the mirror.
#[derive(Debug, Deserialize)]
pub(crate) struct LeanStatusUpdate(
    #[serde(with = "TaskStatusUpdateEventDef")] pub(crate) TaskStatusUpdateEvent,
);

/// A [`TaskArtifactUpdateEvent`] decoded through the mirror.
#[derive(Debug, Deserialize)]
pub(crate) struct LeanArtifactUpdate(
    #[serde(with = "TaskArtifactUpdateEventDef")] pub(crate) TaskArtifactUpdateEvent,
);

#[derive(Deserialize)]
struct LeanArtifact(#[serde(with = "ArtifactDef")] Artifact);

#[derive(Deserialize)]
#[serde(remote = "Message", rename_all = "camelCase")]
struct MessageDef {
    message_id: String,
    #[serde(default)]
    context_id: Option<String>,
    #[serde(default)]
    task_id: Option<TaskId>,
    role: Role,
    #[serde(deserialize_with = "parts")]
    parts: Vec<Part>,
    #[serde(default)]
    metadata: Option<HashMap<String, Value>>,
    #[serde(default)]
    extensions: Option<Vec<String>>,
    #[serde(default)]
    reference_task_ids: Option<Vec<TaskId>>,
}

#[derive(Deserialize)]
#[serde(remote = "TaskStatus", rename_all = "camelCase")]
struct TaskStatusDef {
    state: TaskState,
    #[serde(default, deserialize_with = "message")]
    message: Option<Message>,
    #[serde(default, deserialize_with = "timestamp::optional")]
    timestamp: Option<DateTime<Utc>>,
}

#[derive(Deserialize)]
#[serde(remote = "Task", rename_all = "camelCase")]
struct TaskDef {
    id: TaskId,
    context_id: String,
    #[serde(with = "TaskStatusDef")]
    status: TaskStatus,
    #[serde(default, deserialize_with = "artifacts")]
    artifacts: Option<Vec<Artifact>>,
    #[serde(default, deserialize_with = "history")]
    history: Option<Vec<Message>>,
    #[serde(default)]
    metadata: Option<HashMap<String, Value>>,
}

#[derive(Deserialize)]
#[serde(remote = "Artifact", rename_all = "camelCase")]
struct ArtifactDef {
    artifact_id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(deserialize_with = "parts")]
    parts: Vec<Part>,
    #[serde(default)]
    metadata: Option<HashMap<String, Value>>,
    #[serde(default)]
    extensions: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(remote = "TaskStatusUpdateEvent", rename_all = "camelCase")]
struct TaskStatusUpdateEventDef {
    task_id: TaskId,
    context_id: String,
    #[serde(with = "TaskStatusDef")]
    status: TaskStatus,
    #[serde(default)]
    metadata: Option<HashMap<String, Value>>,
}

#[derive(Deserialize)]
#[serde(remote = "TaskArtifactUpdateEvent", rename_all = "camelCase")]
struct TaskArtifactUpdateEventDef {
    task_id: TaskId,
    context_id: String,
    #[serde(with = "ArtifactDef")]
    artifact: Artifact,
    #[serde(default)]
    append: Option<bool>,
    #[serde(default)]
    last_chunk: Option<bool>,
    #[serde(default)]
    metadata: Option<HashMap<String, Value>>,
}

fn message<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Message>, D::Error> {
    Ok(Option::<LeanMessage>::deserialize(d)?.map(|m| m.0))
}

fn history<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Message>>, D::Error> {
    let lean = Option::<Vec<LeanMessage>>::deserialize(d)?;
    Ok(lean.map(|v| v.into_iter().map(|m| m.0).collect()))
}

fn artifacts<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Artifact>>, D::Error> {
    let lean = Option::<Vec<LeanArtifact>>::deserialize(d)?;
    Ok(lean.map(|v| v.into_iter().map(|a| a.0).collect()))
}

fn parts<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Part>, D::Error> {
    Ok(Vec::<LeanPart>::deserialize(d)?
        .into_iter()
        .map(|p| p.0)
        .collect())
}

/// A [`Part`] read member by member, choosing its content like `a2a-lf` (first of `text`,
/// `raw`, `url` that is a string, else `data` whatever its value; a later duplicate key wins).
struct LeanPart(Part);

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum PartField {
    Text,
    Raw,
    Url,
    Data,
    Filename,
    MediaType,
    Metadata,
    #[serde(other)]
    Other,
}

impl<'de> Deserialize<'de> for LeanPart {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(PartVisitor)
    }
}

struct PartVisitor;

impl<'de> Visitor<'de> for PartVisitor {
    type Value = LeanPart;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Part object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LeanPart, A::Error> {
        let mut text = None;
        let mut raw = None;
        let mut url = None;
        let mut data = None;
        let mut filename = None;
        let mut media_type = None;
        let mut metadata = None;
        while let Some(field) = map.next_key::<PartField>()? {
            let slot = match field {
                PartField::Text => &mut text,
                PartField::Raw => &mut raw,
                PartField::Url => &mut url,
                PartField::Data => &mut data,
                PartField::Filename => &mut filename,
                PartField::MediaType => &mut media_type,
                PartField::Metadata => &mut metadata,
                PartField::Other => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            *slot = Some(map.next_value::<Value>()?);
        }
        let content = match (text, raw, url, data) {
            (Some(Value::String(t)), ..) => PartContent::Text(t),
            (_, Some(Value::String(_)), ..) => {
                return Err(de::Error::custom(
                    "a raw part is decoded on the checked path",
                ));
            }
            (_, _, Some(Value::String(u)), _) => PartContent::Url(u),
            (_, _, _, Some(d)) => PartContent::Data(d),
            _ => {
                return Err(de::Error::custom(
                    "Part must have one of: text, raw, url, data",
                ));
            }
        };
        Ok(LeanPart(Part {
            content,
            filename: string(filename),
            media_type: string(media_type),
            metadata: match metadata {
                Some(Value::Object(m)) => Some(m.into_iter().collect()),
                _ => None,
            },
        }))
    }
}

/// A member kept only when it is a string, as `a2a-lf` keeps `filename` and `mediaType`.
fn string(v: Option<Value>) -> Option<String> {
    match v {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2aflow_model::a2a::StreamResponse;
    use proptest::prelude::*;

    /// `a2a-lf`'s decoding of a part, and the mirror's (`None` where either declines).
    fn both(json: &str) -> (Option<Part>, Option<Part>) {
        (
            serde_json::from_str::<Part>(json).ok(),
            serde_json::from_str::<LeanPart>(json).ok().map(|p| p.0),
        )
    }

    #[test]
    fn parts_decode_like_a2a_lf() {
        for json in [
            r#"{"text": "hi"}"#,
            r#"{"text": "hi", "data": {"k": 1}, "metadata": {"m": [1]}}"#,
            r#"{"text": 7, "data": null}"#,
            r#"{"url": "https://x/y", "filename": "y.txt", "mediaType": "text/plain"}"#,
            r#"{"url": 1, "data": [1, 2], "filename": 3, "mediaType": null}"#,
            r#"{"data": {"echo": "task 1"}, "metadata": "not an object"}"#,
            r#"{"text": "first", "text": "second"}"#,
            r#"{"te\u0078t": "escaped key", "other": {"deep": [null]}}"#,
            r#"{"metadata": {}}"#,
            r#"{}"#,
            r#"[]"#,
            r#""text""#,
        ] {
            let (reference, lean) = both(json);
            assert_eq!(lean, reference, "{json}");
        }
    }

    #[test]
    fn raw_parts_are_left_to_the_checked_path() {
        let (reference, lean) = both(r#"{"raw": "aGk=", "filename": "a.bin"}"#);
        assert!(reference.is_some());
        assert_eq!(lean, None);
    }

    fn member() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(Value::from),
            "[a-z]{0,4}".prop_map(Value::String),
            proptest::collection::vec("[a-z]{0,3}", 0..3).prop_map(Value::from),
            proptest::collection::btree_map("[a-z]{1,3}", "[a-z]{0,3}", 0..3)
                .prop_map(|m| serde_json::to_value(m).unwrap_or_default()),
        ]
    }

    proptest! {
        /// Any object over the part's member names (and others, duplicated or not, in any
        /// order): the mirror declines (raw parts, or where `a2a-lf` fails too) or decodes the
        /// same part.
        #[test]
        fn generated_parts_decode_like_a2a_lf(
            members in proptest::collection::vec(
                (prop_oneof![
                    Just("text"), Just("url"), Just("data"), Just("filename"),
                    Just("mediaType"), Just("metadata"), Just("x"),
                ], member()),
                0..6,
            )
        ) {
            let body: Vec<String> = members
                .iter()
                .map(|(k, v)| format!("{}: {}", Value::from(*k), v))
                .collect();
            let json = format!("{{{}}}", body.join(", "));
            let (reference, lean) = both(&json);
            prop_assert_eq!(lean, reference, "{}", json);
        }
    }

    /// Every SSE event of the official Python SDK transcripts: the mirror's payload equals
    /// `a2a-lf`'s decoding of the same `result`.
    #[test]
    fn transcripts_decode_like_a2a_lf() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/a2a-python-sdk-1.3.0");
        let mut events = 0;
        for dir in ["jsonrpc", "rest", "extheader"] {
            let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
                panic!("fixture directory {dir} is missing");
            };
            for entry in entries.flatten() {
                let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
                for data in text.lines().filter_map(|l| l.strip_prefix("data: ")) {
                    let Ok(v) = serde_json::from_str::<Value>(data) else {
                        continue; // a transcript cut mid-event
                    };
                    let payload = v.get("result").unwrap_or(&v);
                    let Ok(reference) = serde_json::from_value::<StreamResponse>(payload.clone())
                    else {
                        continue;
                    };
                    let lean = super::super::stream_response(data, v.get("result").is_some());
                    assert_eq!(lean, Some(reference), "{}: {data}", entry.path().display());
                    events += 1;
                }
            }
        }
        assert!(events >= 20, "only {events} events in the transcripts");
    }
}
