//! The Negotiation-T exchange rules an engine applies between a received Propose and its reply:
//! where to find the context in a response, which Propose may be answered, how rounds may
//! progress, and what a valid ending reply looks like.
//!
//! An ending reply (ACCEPT, REJECT, ABORT) keeps the exact `id`, `round` and `maxRounds` of the
//! Propose it answers; only the proposing side advances rounds ([`NegotiationContext::next_round`]).

use serde_json::{Map, Value};

use crate::activation::ContentExtensions;
use crate::context::{ContextError, NegotiationContext, Performative};
use crate::uri::{NEGOTIATION_CONTEXT_KEY, NEGOTIATION_T_EXTENSION_URI};

/// Why a Negotiation-T exchange step is refused. `Display` gives the reference SDKs' reason text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExchangeError {
    /// The received context is not an answerable Propose (not PROPOSE, or `round > maxRounds`).
    #[error("Expected a valid Negotiation-T Propose")]
    NotAPropose,
    /// Within one negotiation id the round went down or `maxRounds` changed.
    #[error("Negotiation round regressed or maxRounds changed")]
    Regressed,
    /// The reply changes id, round or maxRounds, or is itself a Propose.
    #[error("Reply does not match the received negotiation context/round")]
    ReplyMismatch,
    /// The reply content does not both activate and carry Negotiation-T.
    #[error("Negotiation reply must carry and activate Negotiation-T")]
    NotActivated,
    /// The reply's context could not be read.
    #[error(transparent)]
    Context(#[from] ContextError),
}

/// Finds the one negotiation context of a received response, looking at the status (or direct)
/// message metadata, then the task metadata, then each artifact's metadata, in that order.
/// Layers without the `negotiationContext` key are skipped; the first unreadable one fails.
///
/// Errors: [`ContextError::Missing`] if no layer has the key, [`ContextError::Conflicting`] if two
/// layers disagree, or the parse error of the first malformed layer.
pub fn find_negotiation_context<'a>(
    status_message_metadata: Option<&'a Map<String, Value>>,
    task_metadata: Option<&'a Map<String, Value>>,
    artifact_metadatas: impl IntoIterator<Item = &'a Map<String, Value>>,
) -> Result<NegotiationContext, ContextError> {
    let layers = status_message_metadata
        .into_iter()
        .chain(task_metadata)
        .chain(artifact_metadatas);
    let mut found: Option<NegotiationContext> = None;
    for metadata in layers {
        let Some(value) = metadata.get(NEGOTIATION_CONTEXT_KEY) else {
            continue;
        };
        let candidate = NegotiationContext::from_json(value)?;
        match &found {
            Some(existing) if *existing != candidate => return Err(ContextError::Conflicting),
            Some(_) => {}
            None => found = Some(candidate),
        }
    }
    found.ok_or(ContextError::Missing)
}

/// Checks that a received context is a Propose the engine may answer: performative PROPOSE and
/// not exhausted (a Propose at `round == maxRounds` is still answerable).
pub fn check_incoming_propose(received: &NegotiationContext) -> Result<(), ExchangeError> {
    if received.performative() == Performative::Propose && !received.is_exhausted() {
        Ok(())
    } else {
        Err(ExchangeError::NotAPropose)
    }
}

/// Checks progression within one negotiation id: `current.round` must not be below
/// `previous.round` and `maxRounds` must not change. An equal round is allowed (a repeated
/// Propose, to be deduplicated by the caller). Pass the previous context of the *same* id; ids
/// are not compared here.
pub fn check_progression(
    previous: Option<&NegotiationContext>,
    current: &NegotiationContext,
) -> Result<(), ExchangeError> {
    match previous {
        Some(prev)
            if current.round() < prev.round() || current.max_rounds() != prev.max_rounds() =>
        {
            Err(ExchangeError::Regressed)
        }
        _ => Ok(()),
    }
}

/// Builds the context of an ending reply to `received`: same id, round and maxRounds, the given
/// performative. Fails with [`ExchangeError::NotAPropose`] if `received` is not answerable and
/// with [`ExchangeError::ReplyMismatch`] if `performative` is PROPOSE (no counter-proposals).
pub fn reply_context(
    received: &NegotiationContext,
    performative: Performative,
) -> Result<NegotiationContext, ExchangeError> {
    check_incoming_propose(received)?;
    if !performative.is_terminal() {
        return Err(ExchangeError::ReplyMismatch);
    }
    Ok(received.with_performative(performative))
}

/// Checks a reply context against the received Propose: same id, round and maxRounds, and an
/// ending performative.
pub fn check_reply_context(
    received: &NegotiationContext,
    reply: &NegotiationContext,
) -> Result<(), ExchangeError> {
    let same = reply.id() == received.id()
        && reply.round() == received.round()
        && reply.max_rounds() == received.max_rounds();
    if same && reply.performative().is_terminal() {
        Ok(())
    } else {
        Err(ExchangeError::ReplyMismatch)
    }
}

/// Checks a whole reply content (its `extensions` and metadata) against the received Propose:
/// it must activate and carry Negotiation-T, hold a readable context, and that context must pass
/// [`check_reply_context`]. Returns the reply's context.
pub fn check_reply(
    received: &NegotiationContext,
    reply_extensions: &[String],
    reply_metadata: Option<&Map<String, Value>>,
) -> Result<NegotiationContext, ExchangeError> {
    let content = ContentExtensions::new(reply_extensions, reply_metadata);
    let Some(metadata) = reply_metadata.filter(|_| content.uses(NEGOTIATION_T_EXTENSION_URI))
    else {
        return Err(ExchangeError::NotActivated);
    };
    let reply = NegotiationContext::from_metadata(metadata)?;
    check_reply_context(received, &reply)?;
    Ok(reply)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::uri::{NEGOTIATION_T_EXTENSION_URI_NL, TASK_T_EXTENSION_URI};
    use serde_json::json;

    const U: &str = "3f2b8c1e-9a4d-4e6b-8f1a-2c3d4e5f6a7b";
    const V: &str = "17d6eef6-065d-4358-84ea-ff945d814187";

    fn ctx(id: &str, round: i64, max: i64, p: Performative) -> NegotiationContext {
        NegotiationContext::new(id, round, max, p).expect("valid test context")
    }

    fn layer(c: &NegotiationContext) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert(NEGOTIATION_CONTEXT_KEY.to_owned(), c.to_json());
        m
    }

    #[test]
    fn lookup_scans_every_layer_in_order() {
        let a = ctx(U, 1, 5, Performative::Propose);
        let b = ctx(V, 1, 5, Performative::Propose);
        let empty = Map::new();
        assert_eq!(
            find_negotiation_context(None, None, []),
            Err(ContextError::Missing)
        );
        assert_eq!(
            find_negotiation_context(Some(&empty), Some(&empty), [&empty]),
            Err(ContextError::Missing)
        );
        // Found only on an artifact.
        assert_eq!(
            find_negotiation_context(Some(&empty), None, [&empty, &layer(&a)]),
            Ok(a.clone())
        );
        // Equal copies on several layers are one context.
        assert_eq!(
            find_negotiation_context(Some(&layer(&a)), Some(&layer(&a)), [&layer(&a)]),
            Ok(a.clone())
        );
        assert_eq!(
            find_negotiation_context(Some(&layer(&a)), Some(&layer(&b)), []),
            Err(ContextError::Conflicting)
        );
        // A malformed layer fails even when an earlier layer was fine.
        let mut bad = Map::new();
        bad.insert(NEGOTIATION_CONTEXT_KEY.to_owned(), json!("x"));
        assert_eq!(
            find_negotiation_context(Some(&layer(&a)), Some(&bad), []).map_err(|e| e.to_string()),
            Err("Invalid negotiationContext".to_owned())
        );
    }

    #[test]
    fn only_an_unexhausted_propose_is_answerable() {
        assert_eq!(
            check_incoming_propose(&ctx(U, 5, 5, Performative::Propose)),
            Ok(())
        );
        assert_eq!(
            check_incoming_propose(&ctx(U, 6, 5, Performative::Propose)),
            Err(ExchangeError::NotAPropose)
        );
        assert_eq!(
            check_incoming_propose(&ctx(U, 2, 5, Performative::Accept)),
            Err(ExchangeError::NotAPropose)
        );
    }

    #[test]
    fn reply_context_keeps_identity_and_refuses_counter_proposals() {
        let received = ctx(U, 5, 5, Performative::Propose);
        for p in [
            Performative::Accept,
            Performative::Reject,
            Performative::Abort,
        ] {
            let reply = reply_context(&received, p).expect("ending reply");
            assert_eq!(
                (
                    reply.id(),
                    reply.round(),
                    reply.max_rounds(),
                    reply.performative()
                ),
                (U, 5, 5, p)
            );
            assert_eq!(check_reply_context(&received, &reply), Ok(()));
        }
        assert_eq!(
            reply_context(&received, Performative::Propose),
            Err(ExchangeError::ReplyMismatch)
        );
        assert_eq!(
            reply_context(&ctx(U, 2, 5, Performative::Reject), Performative::Accept),
            Err(ExchangeError::NotAPropose)
        );
    }

    #[test]
    fn check_reply_needs_activation_and_metadata() {
        let received = ctx(U, 2, 5, Performative::Propose);
        let reply = ctx(U, 2, 5, Performative::Accept);
        let mut md = layer(&reply);
        md.insert(
            NEGOTIATION_T_EXTENSION_URI.to_owned(),
            json!("## Result\nAccept"),
        );
        let neg = vec![NEGOTIATION_T_EXTENSION_URI.to_owned()];
        assert_eq!(check_reply(&received, &neg, Some(&md)), Ok(reply.clone()));
        // The NL alias is accepted on read.
        let nl = vec![NEGOTIATION_T_EXTENSION_URI_NL.to_owned()];
        assert_eq!(check_reply(&received, &nl, Some(&md)), Ok(reply.clone()));
        let task = vec![TASK_T_EXTENSION_URI.to_owned()];
        assert_eq!(
            check_reply(&received, &task, Some(&md)),
            Err(ExchangeError::NotActivated)
        );
        assert_eq!(
            check_reply(&received, &neg, None),
            Err(ExchangeError::NotActivated)
        );
        let carried_only = layer(&reply);
        assert_eq!(
            check_reply(&received, &neg, Some(&carried_only)),
            Err(ExchangeError::NotActivated)
        );
        let mut no_ctx = Map::new();
        no_ctx.insert(NEGOTIATION_T_EXTENSION_URI.to_owned(), Value::Null);
        assert_eq!(
            check_reply(&received, &neg, Some(&no_ctx)).map_err(|e| e.to_string()),
            Err("Invalid negotiationContext".to_owned())
        );
        let mut counter = layer(&received.next_round().expect("round 3"));
        counter.insert(NEGOTIATION_T_EXTENSION_URI.to_owned(), Value::Null);
        assert_eq!(
            check_reply(&received, &neg, Some(&counter)),
            Err(ExchangeError::ReplyMismatch)
        );
    }
}
