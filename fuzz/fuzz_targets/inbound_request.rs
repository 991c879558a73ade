//! Arbitrary bytes as a JSON-RPC request body through the server's inbound decoder
//! (`a2aflow_server::fuzzing::decode_jsonrpc`: the envelope checks in the official SDK's order,
//! the method name, and each method's params: the message and its run input, a follow-up's
//! answer, the delegation metadata, task ids, ListTasks queries).
//!
//! Checks: no panic; a refusal is a JSON-RPC 2.0 error response whose `id` is null, a string or
//! an integer and whose code is one of the A2A / JSON-RPC codes the server answers with, and the
//! same error on HTTP+JSON is a `google.rpc.Status` body whose `code` is its HTTP status (400,
//! 404 or 500); decoding is deterministic.
#![no_main]

use a2aflow_server::fuzzing::{Decoded, decode_jsonrpc};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const CODES: &[i64] = &[
    -32700, -32600, -32601, -32602, -32603, -32001, -32002, -32003, -32004, -32009,
];

fn verdict(d: &Decoded) -> String {
    match d {
        Decoded::Accepted(method) => format!("ok {method}"),
        Decoded::Refused { jsonrpc, .. } => jsonrpc.to_string(),
    }
}

fuzz_target!(|data: &[u8]| {
    let decoded = decode_jsonrpc(data);
    match &decoded {
        Decoded::Accepted(method) => assert!(!method.is_empty()),
        Decoded::Refused {
            jsonrpc,
            rest_status,
            rest_body,
        } => {
            assert_eq!(jsonrpc["jsonrpc"], "2.0");
            assert!(
                matches!(jsonrpc["id"], Value::Null | Value::String(_))
                    || jsonrpc["id"].is_i64()
                    || jsonrpc["id"].is_u64(),
                "id {}",
                jsonrpc["id"]
            );
            let code = jsonrpc["error"]["code"].as_i64().expect("an integer code");
            assert!(CODES.contains(&code), "unexpected code {code}");
            assert!(jsonrpc["error"]["message"].is_string());
            assert!(matches!(rest_status, 400 | 404 | 500), "status {rest_status}");
            assert_eq!(rest_body["error"]["code"], *rest_status);
        }
    }
    assert_eq!(verdict(&decoded), verdict(&decode_jsonrpc(data)));
});
