//! Arbitrary JSON through the A2A-T `NegotiationContext` readers: `from_json`, `from_metadata`
//! and `find_negotiation_context`, plus the exchange helpers on what parses.
//!
//! The bytes are parsed as JSON (non-JSON inputs are skipped). The value itself goes to
//! `from_json`; an object goes to `from_metadata`; an array of objects is read as the layers of
//! a response (status message, task, then artifacts) for `find_negotiation_context`.
//!
//! Checks: no panic; every parsed context round-trips (`to_json` then `from_json` gives an equal
//! context, and `to_json` is stable); `from_metadata` agrees with `from_json` on the key's value;
//! a found context equals the first layer's; `reply_context` keeps id, round and maxRounds.
#![no_main]

use a2at::{
    NEGOTIATION_CONTEXT_KEY, NegotiationContext, Performative, check_progression,
    check_reply_context, check_rules, find_negotiation_context, reply_context,
};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};

fn exercise(ctx: &NegotiationContext) {
    let wire = ctx.to_json();
    let back = NegotiationContext::from_json(&wire).expect("to_json output parses");
    assert_eq!(
        &back, ctx,
        "to_json/from_json round trip changed the context"
    );
    assert_eq!(back.to_json(), wire, "to_json is not stable");
    let text = serde_json::to_vec(&wire).expect("a Value serialises");
    let reparsed: Value = serde_json::from_slice(&text).expect("serialised JSON parses");
    assert_eq!(NegotiationContext::from_json(&reparsed).as_ref(), Ok(ctx));

    let _ = check_rules(ctx);
    let _ = ctx.is_exhausted();
    if let Ok(next) = ctx.next_round() {
        assert_eq!(next.round(), ctx.round() + 1);
        assert!(check_progression(Some(ctx), &next).is_ok());
    }
    for p in [
        Performative::Accept,
        Performative::Reject,
        Performative::Abort,
        Performative::Propose,
    ] {
        if let Ok(reply) = reply_context(ctx, p) {
            assert_eq!(
                (reply.id(), reply.round(), reply.max_rounds()),
                (ctx.id(), ctx.round(), ctx.max_rounds())
            );
            assert!(check_reply_context(ctx, &reply).is_ok());
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    if let Ok(ctx) = NegotiationContext::from_json(&value) {
        exercise(&ctx);
    }
    if let Value::Object(map) = &value {
        let via_metadata = NegotiationContext::from_metadata(map);
        if let Some(inner) = map.get(NEGOTIATION_CONTEXT_KEY) {
            assert_eq!(via_metadata, NegotiationContext::from_json(inner));
        } else {
            assert!(via_metadata.is_err());
        }
        if let Ok(ctx) = &via_metadata {
            exercise(ctx);
        }
    }
    if let Value::Array(items) = &value {
        let layers: Vec<&Map<String, Value>> = items.iter().filter_map(Value::as_object).collect();
        let status = layers.first().copied();
        let task = layers.get(1).copied();
        let artifacts = layers.iter().skip(2).copied();
        let found = find_negotiation_context(status, task, artifacts);
        if let Ok(ctx) = &found {
            let first = layers
                .iter()
                .find_map(|m| m.get(NEGOTIATION_CONTEXT_KEY))
                .expect("a found context came from some layer");
            assert_eq!(NegotiationContext::from_json(first).as_ref(), Ok(ctx));
            exercise(ctx);
        }
    }
});
