//! The inbound request decoder as one pure function, for the fuzz target
//! (`fuzz/fuzz_targets/inbound_request.rs`). Not a stable API: hidden from the docs.
//!
//! It runs what a JSON-RPC request meets before anything starts or is looked up: the envelope's
//! checks in the SDK's order, the method's name, and the decoding of its params (SendMessage's
//! message, its run input, a follow-up's answer and the delegation metadata; a task id; a
//! ListTasks query; `historyLength`).

use crate::delegated;
use crate::gates::answer_content;
use crate::input::run_input;
use crate::jsonrpc::{envelope, known};
use crate::params::{checked_history_length, list_query, send_request, task_id};
use crate::wire_error::A2aError;
use serde_json::Value;

/// What a request body decodes to: the method it names, or the JSON-RPC error response and the
/// HTTP+JSON status and body the same error would be answered with.
#[derive(Debug)]
pub enum Decoded {
    /// The request passed every check; the method it names.
    Accepted(String),
    /// The request was refused.
    Refused {
        /// The JSON-RPC error response.
        jsonrpc: Value,
        /// The HTTP+JSON status of the same error.
        rest_status: u16,
        /// Its `google.rpc.Status` body.
        rest_body: Value,
    },
}

/// Decodes one JSON-RPC request body.
pub fn decode_jsonrpc(bytes: &[u8]) -> Decoded {
    let call = match envelope(bytes) {
        Ok(call) => call,
        Err(refused) => {
            let (id, e) = *refused;
            return refused_with(&id, &e);
        }
    };
    if !known(&call.method) {
        return refused_with(&call.id, &A2aError::method_not_found());
    }
    match params(&call.method, &call.params) {
        Ok(()) => Decoded::Accepted(call.method),
        Err(e) => refused_with(&call.id, &e),
    }
}

fn params(method: &str, params: &Value) -> Result<(), A2aError> {
    match method {
        "SendMessage" | "SendStreamingMessage" => {
            let request = send_request(params)?;
            if request.message.task_id.is_some() {
                answer_content(&request.message)?;
            } else {
                run_input(&request.message)?;
                delegated::lineage(&request.message)?;
            }
            Ok(())
        }
        "GetTask" => {
            task_id(params)?;
            checked_history_length(params)
        }
        "CancelTask" | "SubscribeToTask" => task_id(params).map(|_| ()),
        "ListTasks" => list_query(params).map(|_| ()),
        _ => Ok(()),
    }
}

fn refused_with(id: &Value, e: &A2aError) -> Decoded {
    let (rest_status, rest_body) = e.rest_response();
    Decoded::Refused {
        jsonrpc: e.jsonrpc_response(id),
        rest_status,
        rest_body,
    }
}
