//! An event written from its typed payload ([`EventView`]) is, byte for byte, the JSON text of
//! the same event with the payload's `Value` data: a durable run stores the former, readers
//! expect the latter.

use super::events_schema::samples;
use a2aflow_model::event::EventView;
use a2aflow_model::{Event, EventTime};

#[test]
fn every_sample_writes_the_bytes_of_its_value_event() {
    for (i, payload) in samples().into_iter().enumerate() {
        let mut event = Event::from_payload(7 + i as u64, "exec-1", payload.clone()).unwrap();
        event.depth = 2;
        event.time = (i % 3 != 0).then(|| EventTime::from_unix_ms(1_796_008_065_744 + i as u64));
        event.step = Some("s".into());
        event.task_id = (i % 2 == 0).then(|| format!("s:{i}"));
        let view = EventView {
            seq: event.seq,
            kind: payload.kind(),
            time: event.time,
            execution_id: &event.execution_id,
            depth: event.depth,
            step: event.step.as_deref(),
            task_id: event.task_id.as_deref(),
            data: &payload,
        };
        assert_eq!(
            view.to_json().unwrap(),
            serde_json::to_string(&event).unwrap(),
            "{} differs",
            event.kind
        );
        // The text finished from the tail (seq and time written last) is what serde writes
        // of the whole view, for any place and time.
        // So is the text placed in the tail's own buffer, whatever the buffer's first size.
        let tail = view.tail().unwrap();
        let sized = view.tail_sized(4096).unwrap();
        for (seq, time) in [
            (0, None),
            (u64::MAX, Some(EventTime::from_unix_ms(0))),
            (9, Some(EventTime::from_unix_ms(1_796_008_065_744))),
            // After 9999 the year has five digits: the text is written afresh.
            (10, Some(EventTime::from_unix_ms(253_402_300_800_000))),
        ] {
            let placed = EventView { seq, time, ..view };
            let expected = serde_json::to_string(&placed).unwrap();
            assert_eq!(tail.finish(seq, time), expected);
            if let Some(time) = time {
                assert_eq!(tail.clone().place(seq, time).as_str(), expected);
                assert_eq!(sized.clone().place(seq, time).into_string(), expected);
            }
        }
    }
}
