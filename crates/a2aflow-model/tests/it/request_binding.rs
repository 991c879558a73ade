//! An `agent_request` on the wire names the protocol binding it went on: the key is written
//! last, read back, and the schema takes exactly the three binding names.

use a2aflow_model::event_data::{AgentRequestData, EventPayload, RemoteRequestData};
use a2aflow_model::event_schema::check_event_schema;
use a2aflow_model::{Event, MessageContent};

fn request(binding: Option<&str>) -> RemoteRequestData {
    RemoteRequestData {
        agent: "a".into(),
        context_id: "c".into(),
        remote_task_id: None,
        content: MessageContent::text("x"),
        binding: binding.map(Into::into),
    }
}

fn event(data: RemoteRequestData) -> serde_json::Value {
    let payload = EventPayload::from(AgentRequestData::Remote(data));
    serde_json::to_value(Event::from_payload(1, "x", payload).unwrap()).unwrap()
}

#[test]
fn the_binding_is_written_after_the_content_and_reads_back() {
    let data = request(Some("HTTP+JSON"));
    let text = serde_json::to_string(&data).unwrap();
    assert_eq!(
        text,
        r#"{"agent":"a","contextId":"c","remoteTaskId":null,"content":{"parts":[{"text":"x"}]},"binding":"HTTP+JSON"}"#
    );
    let back: AgentRequestData = serde_json::from_str(&text).unwrap();
    assert_eq!(back, AgentRequestData::Remote(data));
}

#[test]
fn the_schema_takes_each_binding_name_and_refuses_another() {
    for name in ["JSONRPC", "HTTP+JSON", "GRPC"] {
        let e = event(request(Some(name)));
        assert!(check_event_schema(&e).is_ok(), "{name} refused: {e}");
    }
    assert!(check_event_schema(&event(request(None))).is_ok());
    assert!(check_event_schema(&event(request(Some("SOAP")))).is_err());
}
