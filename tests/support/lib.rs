//! Shared support for a2aflow's cross-crate tests: fixture paths and helpers used by the test
//! binaries declared in `tests/Cargo.toml` (`interop`, `faults`, `e2e`, …).

use std::path::PathBuf;

/// The directory holding the wire fixtures copied from the official SDK transcripts.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// Waits until `done` holds, checking every 10 ms, for at most `limit`; returns whether it held.
/// For conditions the tests cannot be told about (a server counting its connections, a runtime's
/// alive tasks); never as a stand-in for a signal the code under test could give.
pub async fn wait_until(limit: std::time::Duration, mut done: impl FnMut() -> bool) -> bool {
    let until = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < until {
        if done() {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    done()
}

/// The host's content for a task that activates Negotiation-T: `text` as a text part, the
/// Negotiation-T extension URI and its (empty) metadata content.
pub fn negotiation_activating(text: String) -> a2aflow::model::MessageContent {
    use a2aflow::a2at::{MetadataContent, NEGOTIATION_T_EXTENSION_URI};
    let mut content = a2aflow::model::MessageContent::text(text);
    content
        .extensions
        .push(NEGOTIATION_T_EXTENSION_URI.to_owned());
    let mut metadata = serde_json::Map::new();
    MetadataContent::new(NEGOTIATION_T_EXTENSION_URI).write_into(&mut metadata);
    content.metadata = Some(metadata);
    content
}

/// The host's reply to a Negotiation-T proposal with `performative` (e.g. ACCEPT, REJECT): the
/// proposal's context answered by `a2at::reply_context`, the performative's name as text.
pub fn negotiation_reply(
    request: &a2aflow::model::NegotiationRequest,
    performative: a2aflow::a2at::Performative,
    name: &str,
) -> Result<a2aflow::model::NegotiationReply, a2aflow::kernel::CallbackError> {
    use a2aflow::a2at::{self, MetadataContent, NEGOTIATION_T_EXTENSION_URI, NegotiationContext};
    use a2aflow::kernel::CallbackError;
    let received = NegotiationContext::from_json(&request.negotiation_context)
        .map_err(|e| CallbackError::Other(format!("unreadable proposal: {e}")))?;
    let reply = a2at::reply_context(&received, performative)
        .map_err(|e| CallbackError::Other(format!("cannot answer: {e}")))?;
    let mut metadata = serde_json::Map::new();
    let mut a2at_content = MetadataContent::new(NEGOTIATION_T_EXTENSION_URI);
    a2at_content.prompt_text = Some(name.to_owned());
    a2at_content.negotiation_context = Some(reply);
    a2at_content.write_into(&mut metadata);
    Ok(a2aflow::model::NegotiationReply::Send {
        content: a2aflow::model::MessageContent {
            parts: vec![a2aflow::model::a2a::Part::text(name)],
            metadata: Some(metadata),
            extensions: vec![NEGOTIATION_T_EXTENSION_URI.to_owned()],
            context_id: None,
        },
    })
}
