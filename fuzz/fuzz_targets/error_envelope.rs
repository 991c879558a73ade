//! Arbitrary error bodies with an arbitrary HTTP status through the protocol crate's envelope
//! mapping (`envelope::classify_error_body`, `envelope::remote_error`, `TransportError::to_failure`)
//! and through `a2aflow_model::ErrorEnvelope` (the `google.rpc.Status` shape).
//!
//! Input layout: bytes 0..2 are the HTTP status (little-endian u16, any value), the rest is the
//! body.
//!
//! Checks: no panic; a classified error's code string is the `Failure` code and is one of the
//! `a2a.*`/`auth.*` codes; the kept agent message and the excerpt stay bounded; the HTTP status
//! is carried into the failure details; a 2xx without an envelope is not an error; and an
//! `ErrorEnvelope` that parses survives a serialise/parse round trip unchanged.
#![no_main]

use a2aflow_model::ErrorEnvelope;
use a2aflow_protocol::TransportError;
use a2aflow_protocol::envelope::{classify_error_body, remote_error};
use a2aflow_protocol::error::EXCERPT_LIMIT;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let status = u16::from_le_bytes([data[0], data[1]]);
    let body = &data[2..];

    let parsed = serde_json::from_slice::<Value>(body).ok();
    let envelope = parsed.as_ref().and_then(|v| remote_error(v, Some(status)));

    match classify_error_body(status, body) {
        None => {
            assert!(
                (200..=299).contains(&status),
                "status {status} not classified"
            );
            assert!(envelope.is_none());
        }
        Some(err) => {
            let code = String::from(err.code_str());
            assert!(
                code.starts_with("a2a.") || code.starts_with("auth."),
                "unexpected code {code}"
            );
            let failure = err.to_failure();
            assert_eq!(failure.code, code);
            match &err {
                TransportError::Remote(r) => {
                    assert_eq!(Some(r), envelope.as_ref());
                    assert_eq!(r.http_status, Some(status));
                    // MESSAGE_LIMIT (512) or an excerpt (EXCERPT_LIMIT plus the ellipsis).
                    assert!(
                        r.message.len() <= 512,
                        "message of {} bytes",
                        r.message.len()
                    );
                    assert_eq!(failure.details["httpStatus"], status);
                }
                TransportError::HttpStatus { status: s, excerpt } => {
                    assert_eq!(*s, status);
                    assert!(envelope.is_none());
                    assert!(
                        excerpt.len() <= EXCERPT_LIMIT + '…'.len_utf8(),
                        "excerpt of {} bytes",
                        excerpt.len()
                    );
                    assert!(!excerpt.contains('\n') && !excerpt.contains('\r'));
                }
                TransportError::AuthRejected { status: s } => {
                    assert_eq!(*s, status);
                    assert!(envelope.is_none());
                }
                other => panic!("unexpected classification {other:?}"),
            }
        }
    }

    if let Ok(env) = serde_json::from_slice::<ErrorEnvelope>(body) {
        let _ = env.error.reason();
        let text = serde_json::to_vec(&env).expect("an ErrorEnvelope always serialises");
        let back: ErrorEnvelope =
            serde_json::from_slice(&text).expect("a serialised ErrorEnvelope parses back");
        assert_eq!(back, env, "ErrorEnvelope round trip changed the value");
    }
});
