//! One-pass typed decoding of A2A response payloads.
//!
//! `a2a-lf` decodes a `StreamResponse` or `SendMessageResponse` through a
//! `HashMap<String, Value>` and then clones the chosen member into the typed value, so an event
//! read as `&str → Value → HashMap → Value clone → type` is parsed three times. The structs here
//! decode the same members straight from the bytes into the typed values, through the serde
//! mirrors of [`mirror`] (which also skip `a2a-lf`'s detours for parts and timestamps). They are
//! a fast path only: whenever the input is not a plain success (an `error` member, no member or
//! several, a JSON-RPC frame that is not `2.0`, a raw part, anything that fails to parse), the
//! caller falls back to the checked `Value` path, so error mapping and messages stay exactly
//! what they were.

mod mirror;
mod timestamp;

use a2aflow_model::a2a::{SendMessageResponse, StreamResponse};
use mirror::{LeanArtifactUpdate, LeanMessage, LeanStatusUpdate, LeanTask};
use serde::Deserialize;
use serde::de::IgnoredAny;

/// The members of a `StreamResponse` / `SendMessageResponse` object, each decoded directly.
///
/// Each member is boxed: inline, the four members made this struct about 1.2 KB, and serde moves
/// it by value through every layer of the decode (measured: a fifth of an event's decoding
/// instructions were `memcpy`).
///
/// A member that is present must hold a value: `a2a-lf` takes the first present member as the
/// answer, so a `null` one fails its decode, and here it declines the one pass ([`present`]).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Payload {
    #[serde(default, deserialize_with = "present")]
    message: Option<Box<LeanMessage>>,
    #[serde(default, deserialize_with = "present")]
    task: Option<Box<LeanTask>>,
    #[serde(default, deserialize_with = "present")]
    status_update: Option<Box<LeanStatusUpdate>>,
    #[serde(default, deserialize_with = "present")]
    artifact_update: Option<Box<LeanArtifactUpdate>>,
    /// An `error` member, even `null`, makes a bare object an error envelope (HTTP+JSON framing).
    #[serde(default, deserialize_with = "present")]
    error: Option<IgnoredAny>,
}

/// A member read as present whatever it holds: `null` is not read as "absent" (as `Option`
/// would), so it reaches `T`, which decides (a struct fails on it, [`IgnoredAny`] takes it).
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

impl Payload {
    /// The `StreamResponse`, choosing like `a2a-lf` when several members are present (message,
    /// task, status update, artifact update); `None` when there is none.
    pub(crate) fn into_stream_response(self) -> Option<StreamResponse> {
        if let Some(m) = self.message {
            return Some(StreamResponse::Message(m.0));
        }
        if let Some(t) = self.task {
            return Some(StreamResponse::Task(t.0));
        }
        if let Some(s) = self.status_update {
            return Some(StreamResponse::StatusUpdate(s.0));
        }
        self.artifact_update
            .map(|a| StreamResponse::ArtifactUpdate(a.0))
    }

    /// The `SendMessageResponse`, choosing like `a2a-lf` (task before message); `None` when
    /// neither is present.
    pub(crate) fn into_send_response(self) -> Option<SendMessageResponse> {
        match (self.task, self.message) {
            (Some(t), _) => Some(SendMessageResponse::Task(t.0)),
            (None, Some(m)) => Some(SendMessageResponse::Message(m.0)),
            (None, None) => None,
        }
    }
}

/// A `SendMessageResponse` decoded in one pass (the `result` type of JSON-RPC `SendMessage`).
#[derive(Debug)]
pub(crate) struct SendResult(pub(crate) SendMessageResponse);

impl<'de> Deserialize<'de> for SendResult {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Payload::deserialize(deserializer)?
            .into_send_response()
            .map(SendResult)
            .ok_or_else(|| {
                serde::de::Error::custom("SendMessageResponse must have 'task' or 'message'")
            })
    }
}

/// The `SendMessageResponse` of an HTTP+JSON body (a bare object), in one pass; `None` means
/// "use the checked path" (an `error` member, neither member, or anything that fails to parse).
pub(crate) fn bare_send_response(body: &[u8]) -> Option<SendMessageResponse> {
    let payload = serde_json::from_slice::<Payload>(body).ok()?;
    // A bare object with an `error` member is an error envelope, never a payload.
    if payload.error.is_some() {
        return None;
    }
    payload.into_send_response()
}

/// A JSON-RPC 2.0 response frame whose `result` is decoded as `R` in the same pass.
#[derive(Debug, Deserialize)]
pub(crate) struct RpcFrame<'a, R> {
    /// Borrowed from the input: serde reads an `Option<Cow<str>>` into an owned `String` (one
    /// allocation per frame). A version written with escapes cannot be borrowed; the one pass
    /// then declines and the checked path reads it.
    jsonrpc: Option<&'a str>,
    id: Option<serde_json::Value>,
    result: Option<R>,
    /// Present, even `null`: not a plain success.
    #[serde(default, deserialize_with = "present")]
    error: Option<IgnoredAny>,
}

impl<R> RpcFrame<'_, R> {
    /// The result of a `2.0` frame without an `error` member.
    pub(crate) fn into_result(self) -> Option<R> {
        if self.jsonrpc != Some("2.0") || self.error.is_some() {
            return None;
        }
        self.result
    }

    /// Like [`RpcFrame::into_result`], and the frame answers request `id`.
    pub(crate) fn into_result_for(self, id: i64) -> Option<R> {
        if self.id.as_ref().and_then(serde_json::Value::as_i64) != Some(id) {
            return None;
        }
        self.into_result()
    }
}

/// The `StreamResponse` of one SSE event's data, in one pass; `None` means "use the checked path".
pub(crate) fn stream_response(data: &str, json_rpc: bool) -> Option<StreamResponse> {
    if json_rpc {
        serde_json::from_str::<RpcFrame<'_, Payload>>(data)
            .ok()?
            .into_result()?
            .into_stream_response()
    } else {
        let payload = serde_json::from_str::<Payload>(data).ok()?;
        // A bare object with an `error` member is an error envelope, never a payload.
        if payload.error.is_some() {
            return None;
        }
        payload.into_stream_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_member_decodes_to_its_variant() {
        let cases = [
            (
                r#"{"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}}"#,
                "task",
            ),
            (
                r#"{"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}}"#,
                "message",
            ),
            (
                r#"{"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}}"#,
                "status",
            ),
            (
                r#"{"artifactUpdate": {"taskId": "t", "contextId": "c", "artifact": {"artifactId": "a", "parts": [{"text": "x"}]}, "append": true, "lastChunk": true}}"#,
                "artifact",
            ),
        ];
        for (json, want) in cases {
            let got = match stream_response(json, false) {
                Some(StreamResponse::Task(t)) => {
                    assert_eq!(t.id, "t");
                    "task"
                }
                Some(StreamResponse::Message(m)) => {
                    assert_eq!(m.message_id, "m");
                    "message"
                }
                Some(StreamResponse::StatusUpdate(s)) => {
                    assert_eq!(s.task_id, "t");
                    "status"
                }
                Some(StreamResponse::ArtifactUpdate(a)) => {
                    assert_eq!(a.append, Some(true));
                    "artifact"
                }
                None => "none",
            };
            assert_eq!(got, want, "{json}");
        }
    }

    #[test]
    fn an_escaped_version_is_left_to_the_checked_path() {
        let plain = r#"{"jsonrpc": "2.0", "id": 1, "result": {"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}}}"#;
        let escaped = plain.replace(r#""2.0""#, r#""2\u002e0""#);
        assert!(stream_response(plain, true).is_some());
        // The version cannot be borrowed from the input: the one pass declines, never misreads.
        assert_eq!(stream_response(&escaped, true), None);
        let (fast, checked) = crate::stream::decode_both_ways(&escaped, true);
        assert_eq!(fast, None);
        assert_eq!(checked.unwrap(), stream_response(plain, true));
    }

    #[test]
    fn the_one_pass_decode_equals_the_a2a_lf_decode() {
        let rpc = r#"{"jsonrpc": "2.0", "id": "s1", "result": {"artifactUpdate": {"taskId": "t", "contextId": "c", "artifact": {"artifactId": "a", "name": "n", "parts": [{"text": "x"}, {"data": {"k": [1, 2]}}], "metadata": {"m": 1}}, "lastChunk": true, "metadata": {"z": {"y": null}}}}}"#;
        let v: serde_json::Value = serde_json::from_str(rpc).unwrap();
        let reference: StreamResponse = serde_json::from_value(v["result"].clone()).unwrap();
        assert_eq!(stream_response(rpc, true), Some(reference));
    }

    #[test]
    fn anything_but_a_plain_success_falls_back() {
        for (json, rpc) in [
            (
                r#"{"jsonrpc": "1.0", "result": {"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}}}"#,
                true,
            ),
            (
                r#"{"jsonrpc": "2.0", "error": {"code": -32603, "message": "x"}}"#,
                true,
            ),
            (
                r#"{"jsonrpc": "2.0", "result": {"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}}, "error": {}}"#,
                true,
            ),
            (r#"{"jsonrpc": "2.0", "result": {}}"#, true),
            (
                r#"{"result": {"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}}}"#,
                true,
            ),
            (
                r#"{"error": {"code": 500, "status": "INTERNAL", "message": "x"}}"#,
                false,
            ),
            (r#"{"task": {"id": "t"}}"#, false),
            ("{not json", false),
        ] {
            assert_eq!(stream_response(json, rpc), None, "{json}");
        }
    }

    #[test]
    fn several_members_choose_like_a2a_lf() {
        let both = r#"{"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}, "message": {"messageId": "m", "role": "ROLE_AGENT", "parts": []}}"#;
        let reference: StreamResponse = serde_json::from_str(both).unwrap();
        assert!(matches!(reference, StreamResponse::Message(_)));
        assert_eq!(stream_response(both, false), Some(reference));
        let send: SendMessageResponse = serde_json::from_str(both).unwrap();
        assert!(matches!(send, SendMessageResponse::Task(_)));
        assert_eq!(serde_json::from_str::<SendResult>(both).unwrap().0, send);
        let e = serde_json::from_str::<SendResult>("{}").unwrap_err();
        assert!(
            e.to_string().contains("must have 'task' or 'message'"),
            "{e}"
        );
    }

    #[test]
    fn unary_frames_check_the_request_id() {
        let body = r#"{"jsonrpc": "2.0", "id": 7, "result": {"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": []}}}"#;
        fn frame(b: &str) -> RpcFrame<'_, Payload> {
            serde_json::from_str(b).unwrap()
        }
        assert!(matches!(
            frame(body)
                .into_result_for(7)
                .and_then(Payload::into_send_response),
            Some(SendMessageResponse::Message(_))
        ));
        assert!(frame(body).into_result_for(8).is_none());
        let update = r#"{"jsonrpc": "2.0", "id": 7, "result": {"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}}}"#;
        assert!(
            frame(update)
                .into_result_for(7)
                .and_then(Payload::into_send_response)
                .is_none()
        );
    }
}
