//! An event's `data` kept as its typed payload ([`EventBody`]) reads, compares and writes as the
//! JSON `Value` it stood for before: the same text byte for byte, the same `Value` through
//! `Deref`, equal to the JSON form; and a body changed through `DerefMut` is its JSON from then on.

use super::events_schema::samples;
use a2aflow_model::event_data::{CloseData, StartData};
use a2aflow_model::{Event, EventBody, EventKind, EventPayload};
use serde_json::{Value, json};

/// The event with `data` as given, everything else fixed.
fn event_with(kind: EventKind, data: EventBody) -> Event {
    Event {
        seq: 3,
        kind,
        time: None,
        execution_id: "exec-1".into(),
        depth: 1,
        step: Some("s".into()),
        task_id: Some("s:0".into()),
        data,
    }
}

#[test]
fn a_typed_body_writes_reads_and_compares_as_its_json() {
    for payload in samples() {
        let kind = payload.kind();
        let json = payload.to_data().unwrap();
        let typed = event_with(kind, EventBody::typed(payload.clone()));
        let untyped = event_with(kind, json.clone().into());
        assert!(typed.data.payload().is_some(), "{kind} is not kept typed");
        assert!(
            untyped.data.payload().is_none(),
            "{kind}: JSON is not typed"
        );
        assert_eq!(
            serde_json::to_string(&typed).unwrap(),
            serde_json::to_string(&untyped).unwrap(),
            "{kind}: the typed text differs"
        );
        assert_eq!(*typed.data, json, "{kind}: Deref differs");
        assert_eq!(typed.data, json, "{kind}: body == Value");
        assert_eq!(json, typed.data, "{kind}: Value == body");
        assert_eq!(typed, untyped, "{kind}: typed == JSON form");
        assert_eq!(typed.payload().unwrap(), payload, "{kind}");
        assert_eq!(untyped.payload().unwrap(), payload, "{kind}");
        assert_eq!(format!("{:?}", typed.data), format!("{json:?}"));
    }
}

#[test]
fn an_event_read_back_holds_json_and_equals_the_typed_original() {
    for payload in samples() {
        let typed = Event::from_payload(1, "exec-1", payload.clone()).unwrap();
        let back: Event = serde_json::from_str(&serde_json::to_string(&typed).unwrap()).unwrap();
        assert!(back.data.payload().is_none());
        assert_eq!(back, typed);
        assert_eq!(back.payload().unwrap(), payload);
    }
}

#[test]
fn a_changed_body_is_its_json_from_then_on() {
    let start = StartData {
        workflow: "w".into(),
        workflow_id: "w1".into(),
        steps: 2,
    };
    let mut e = Event::from_payload(0, "exec-1", start).unwrap();
    e.data["steps"] = json!("two");
    assert!(e.data.payload().is_none(), "the stale payload is kept");
    let text = serde_json::to_string(&e).unwrap();
    assert!(text.contains(r#""steps":"two""#), "{text}");
    assert!(
        e.payload().is_err(),
        "the changed data still reads as its payload"
    );
    // A clone shares nothing it could change.
    let mut copy = e.clone();
    copy.data["workflow"] = json!("other");
    assert_eq!(e.data["workflow"], "w");
}

#[test]
fn only_a_body_without_data_is_null_and_left_out() {
    let none = event_with(EventKind::HostEvent, EventBody::default());
    assert!(none.data.is_null());
    let text = serde_json::to_string(&none).unwrap();
    assert!(!text.contains("\"data\""), "{text}");
    let back: Event = serde_json::from_str(&text).unwrap();
    assert!(back.data.is_null());
    let null = event_with(EventKind::HostEvent, Value::Null.into());
    assert_eq!(null, none);
    let close = event_with(
        EventKind::Close,
        EventBody::typed(EventPayload::from(CloseData {})),
    );
    assert!(!close.data.is_null());
    assert!(
        serde_json::to_string(&close)
            .unwrap()
            .ends_with(r#""data":{}}"#)
    );
}
