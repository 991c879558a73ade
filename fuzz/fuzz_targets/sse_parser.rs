//! Arbitrary bytes in arbitrary chunk splits through `a2aflow_protocol::sse::SseParser`.
//!
//! Input layout: byte 0 picks the event limit (< 0x80: a small limit `1 + 4*b`, which makes
//! `EventTooLarge` reachable; otherwise the 4 MiB default), bytes 1..3 seed the chunk splitter
//! (chunks of 0..=16 bytes, empty chunks included), the rest is the stream.
//!
//! Checks: no panic; after an error the parser stays failed with the same error; no event's data
//! exceeds 3x the limit (the limit counts wire bytes, lossy UTF-8 decoding can triple them); the
//! events of the split run are a prefix of the events of the one-chunk run; and both runs end
//! identically (same events, same final result) — the size limit no longer depends on where
//! chunks split (docs/reliability.md, "chunking-dependent limit", fixed).
#![no_main]

use a2aflow_protocol::limits::Limits;
use a2aflow_protocol::sse::{SseError, SseEvent, SseParser};
use libfuzzer_sys::fuzz_target;

/// The outcome of one run: the events in order, and the error that ended it (if any).
struct Run {
    events: Vec<SseEvent>,
    end: Result<(), SseError>,
}

fn run<'a>(limit: usize, chunks: impl Iterator<Item = &'a [u8]>) -> Run {
    let mut p = SseParser::new(limit);
    let mut events = Vec::new();
    for c in chunks {
        if let Err(e) = p.feed_into(c, &mut events) {
            // Sticky failure: every later chunk (even empty) gives the same error.
            assert_eq!(p.feed(b"data: x\n\n").unwrap_err(), e);
            assert_eq!(p.finish().unwrap_err(), e);
            return Run {
                events,
                end: Err(e),
            };
        }
    }
    let end = match p.finish() {
        Ok(tail) => {
            events.extend(tail);
            Ok(())
        }
        Err(e) => Err(e),
    };
    Run { events, end }
}

/// Chunk lengths 0..=16 from a xorshift16 seeded by the input.
fn split(body: &[u8], mut seed: u16) -> Vec<&[u8]> {
    if seed == 0 {
        seed = 0xACE1;
    }
    let mut out = Vec::new();
    let mut at = 0;
    while at < body.len() {
        seed ^= seed << 7;
        seed ^= seed >> 9;
        seed ^= seed << 8;
        let n = usize::from(seed % 17).min(body.len() - at);
        out.push(&body[at..at + n]);
        at += n;
    }
    out
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let limit = if data[0] < 0x80 {
        1 + 4 * usize::from(data[0])
    } else {
        Limits::DEFAULT_MAX_SSE_EVENT
    };
    let seed = u16::from_le_bytes([data[1], data[2]]);
    let body = &data[3..];

    let whole = run(limit, std::iter::once(body));
    let split = run(limit, split(body, seed).into_iter());

    for ev in whole.events.iter().chain(&split.events) {
        assert!(
            ev.data.len() <= limit.saturating_mul(3),
            "event data of {} bytes with limit {limit}",
            ev.data.len()
        );
    }
    assert!(
        whole.events.starts_with(&split.events),
        "split run produced events the one-chunk run did not"
    );
    assert_eq!(
        whole.end, split.end,
        "split and one-chunk runs ended differently"
    );
    assert_eq!(
        whole.events, split.events,
        "split and one-chunk runs disagree"
    );
});
