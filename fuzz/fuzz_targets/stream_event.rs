//! Differential: one SSE event's data through both decodings of the protocol crate
//! (`a2aflow_protocol::stream::decode_both_ways`): the one-pass path (`payload`, serde mirrors
//! of `a2a-lf`'s types) and the checked path (a `Value`, error envelopes, `a2a-lf`'s own
//! decode).
//!
//! Input layout: byte 0 picks the framing (even: a JSON-RPC response whose `result` is the
//! event; odd: the bare HTTP+JSON object), the rest is the event's data (lossy UTF-8).
//!
//! Checks: no panic; whatever the one-pass path accepts, the checked path accepts too and decodes
//! to the same value (the one-pass path is a shortcut, never a different reading: on anything
//! but a plain success it must decline, and the engine then takes the checked path).
#![no_main]

use a2aflow_protocol::stream::decode_both_ways;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&framing, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let (fast, checked) = decode_both_ways(&text, framing % 2 == 0);
    if let Some(fast) = fast {
        match checked {
            Ok(Some(reference)) => assert_eq!(fast, reference, "the two decodings differ"),
            other => panic!("the one-pass path accepted what the checked path gives as {other:?}"),
        }
    }
});
