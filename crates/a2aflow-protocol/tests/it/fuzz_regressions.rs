//! Regressions found by the `fuzz/` targets (see `docs/reliability.md`). Each input is the
//! minimised fuzzer input, embedded as bytes.

use a2aflow_protocol::sse::{SseError, SseEvent, SseParser};

/// Parses `chunks` in order with `limit`, returning the events and how the stream ended.
fn parse(limit: usize, chunks: &[&[u8]]) -> (Vec<SseEvent>, Result<(), SseError>) {
    let mut p = SseParser::new(limit);
    let mut events = Vec::new();
    for c in chunks {
        if let Err(e) = p.feed_into(c, &mut events) {
            return (events, Err(e));
        }
    }
    match p.finish() {
        Ok(tail) => {
            events.extend(tail);
            (events, Ok(()))
        }
        Err(e) => (events, Err(e)),
    }
}

/// `sse_parser` target, "chunking-dependent limit": the end-of-chunk size check in
/// `SseParser::feed_into` (crates/a2aflow-protocol/src/sse.rs, `self.event_bytes +
/// self.buf.len() > self.max_event`) counts a pending *comment* line, and a pending lone CR, that
/// `SseParser::line` never counts once the line is complete. So the same bytes pass in one chunk
/// and fail with `EventTooLarge` when a chunk boundary falls inside the comment.
#[test]
fn a_comment_split_across_chunks_does_not_change_the_verdict() {
    let stream: &[u8] = b"data: 0123456789\n: keep-alive\n\n";
    let whole = parse(20, &[stream]);
    assert_eq!(
        whole,
        (
            vec![SseEvent {
                data: "0123456789".into(),
                ..SseEvent::default()
            }],
            Ok(())
        )
    );
    let (head, tail) = stream.split_at(22); // inside ": keep-alive"
    assert_eq!(parse(20, &[head, tail]), whole);
}

/// The same check with a CRLF blank line split between its CR and LF, on an event of exactly
/// the limit: the pending CR is counted as one byte over.
#[test]
fn an_event_of_exactly_the_limit_passes_whatever_the_split() {
    let stream: &[u8] = b"data: 0123456789\r\n\r\n";
    let limit = "data: 0123456789".len() + 1;
    let whole = parse(limit, &[stream]);
    assert_eq!(whole.1, Ok(()));
    let (head, tail) = stream.split_at(stream.len() - 1); // between the last CR and LF
    assert_eq!(parse(limit, &[head, tail]), whole);
}

/// What holds today and must keep holding: with room to spare, the split does not matter.
#[test]
fn comments_split_across_chunks_are_fine_below_the_limit() {
    let stream: &[u8] = b"data: 0123456789\n: keep-alive\n\n";
    let whole = parse(64, &[stream]);
    for at in 0..=stream.len() {
        let (head, tail) = stream.split_at(at);
        assert_eq!(parse(64, &[head, tail]), whole, "split at {at}");
    }
}
