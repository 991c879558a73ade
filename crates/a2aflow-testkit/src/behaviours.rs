//! Ready-made behaviours chosen by the first word of the message text, mirroring the Python
//! reference peer so tests and the demo can be quick.
//!
//! | first word | result |
//! |---|---|
//! | `echo …` (or any unknown word) | a single `Message` echoing the text, no task |
//! | `task …` | SUBMITTED → WORKING → artifact `result` `{"echo": text}` → COMPLETED |
//! | `slow N …` | WORKING ("working for Ns") for N seconds (cancellable), then artifact, COMPLETED |
//! | `fail …` | WORKING → FAILED with a status message |
//! | `reject …` | REJECTED with a status message |
//! | `input …` | WORKING → INPUT_REQUIRED; any follow-up on the task completes it |
//! | `auth …` | WORKING → AUTH_REQUIRED; any follow-up on the task completes it |
//! | `stream …` | WORKING, three chunks of artifact `stream-result` ([`STREAM_CHUNK_DELAY`] apart), COMPLETED |
//! | `negotiate …` | INPUT_REQUIRED with a Negotiation-T PROPOSE (round 1 of 3); ACCEPT completes, REJECT proposes the next round (FAILED after the last), ABORT or an invalid reply fails |
//! | `hang …` | WORKING until cancelled |
//! | `crash …` | WORKING, then the agent "raises" ([`crate::Step::Crash`]) |
//! | `flaky N …` | WORKING → FAILED ("attempt k of N+1 fails") while the message names fewer than N `referenceTaskIds` (earlier attempts); then artifact `result` `{"echo": text, "attempt": k}`, COMPLETED |

use std::time::Duration;

use a2a::Part;
use serde_json::{Value, json};

use crate::message::{AgentMessage, IncomingMessage, Proposal};
use crate::script::{ArtifactChunk, Script, TaskScript};

/// Delay between the chunks of the `stream` behaviour.
pub const STREAM_CHUNK_DELAY: Duration = Duration::from_millis(20);

/// The round budget of the `negotiate` behaviour.
pub const NEGOTIATE_MAX_ROUNDS: u32 = 3;

/// The built-in script: dispatches on [`IncomingMessage::first_word`].
///
/// ```
/// use a2aflow_testkit::{IncomingMessage, Script, behaviours};
/// let m = IncomingMessage::from_json(serde_json::json!({
///     "messageId": "m", "role": "ROLE_USER", "parts": [{"text": "echo hi"}]}));
/// assert!(matches!(behaviours::builtin(&m), Script::Reply(_)));
/// ```
pub fn builtin(msg: &IncomingMessage) -> Script {
    let text = msg.text().to_owned();
    match msg.first_word().as_str() {
        "task" => TaskScript::new()
            .working()
            .artifact_data("result", json!({ "echo": text }))
            .complete()
            .into(),
        "slow" => {
            let secs = text
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse::<f64>().ok())
                .filter(|s| s.is_finite() && *s >= 0.0)
                .unwrap_or(5.0);
            TaskScript::new()
                .working_with(format!("working for {secs}s"))
                .delay(Duration::from_secs_f64(secs))
                .artifact_data("result", json!({ "echo": text, "sleptSeconds": secs }))
                .complete()
                .into()
        }
        "fail" => TaskScript::new()
            .working()
            .fail(format!("failed as asked: {text}"))
            .into(),
        "reject" => TaskScript::new().reject("rejected as asked").into(),
        "input" => TaskScript::new()
            .working()
            .input_required(
                AgentMessage::text("need more input: send a follow-up message on this task"),
                complete_follow_up("input"),
            )
            .into(),
        "auth" => TaskScript::new()
            .working()
            .auth_required(
                AgentMessage::text("authorization required: send a follow-up message on this task"),
                complete_follow_up("auth"),
            )
            .into(),
        "stream" => stream(&text).into(),
        "negotiate" => negotiate(Proposal::information(
            1,
            NEGOTIATE_MAX_ROUNDS,
            "Energy saving area information: e.g., Songshanhu",
        ))
        .into(),
        "hang" => TaskScript::new()
            .working_with("hanging until cancelled")
            .hang()
            .into(),
        "flaky" => flaky(msg, &text).into(),
        "crash" => TaskScript::new()
            .working()
            .crash(format!("agent crashed on purpose: {text}"))
            .into(),
        _ => Script::reply(
            AgentMessage::text(text)
                .with_metadata("requestedExtensions", json!(msg.requested_extensions())),
        ),
    }
}

/// `flaky N …`: attempt k (one more than the earlier attempts the message references) fails
/// while k ≤ N, and completes after that.
fn flaky(msg: &IncomingMessage, text: &str) -> TaskScript {
    let failures = text
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(1);
    let attempt = msg.reference_task_ids().len() + 1;
    if attempt <= failures {
        return TaskScript::new().working().fail(format!(
            "attempt {attempt} of {} fails as asked",
            failures + 1
        ));
    }
    TaskScript::new()
        .working()
        .artifact_data("result", json!({ "echo": text, "attempt": attempt }))
        .complete()
}

fn complete_follow_up(
    kind: &'static str,
) -> impl Fn(&IncomingMessage) -> Script + Send + Sync + 'static {
    move |follow: &IncomingMessage| {
        let text = follow.text().to_owned();
        TaskScript::new()
            .working()
            .artifact_data("result", json!({ "echo": text, "followUpTo": kind }))
            .complete_with(format!("thanks, got: {text}"))
            .into()
    }
}

fn stream(text: &str) -> TaskScript {
    let id = uuid::Uuid::new_v4().to_string();
    let chunks = ["chunk-1 ", "chunk-2 ", "chunk-3"];
    let mut script = TaskScript::new().working_with("stream: starting");
    for (i, chunk) in chunks.iter().enumerate() {
        script = script
            .delay(STREAM_CHUNK_DELAY)
            .artifact(
                ArtifactChunk::new(id.clone(), [Part::text(*chunk)])
                    .name("stream-result")
                    .append(i > 0)
                    .last_chunk(i == chunks.len() - 1),
            )
            .working_with(format!("stream: sent chunk {}/{}", i + 1, chunks.len()));
    }
    script.complete_with(format!("stream done: {text}"))
}

/// A task that proposes `proposal` and reacts to the reply (see the module table).
fn negotiate(proposal: Proposal) -> TaskScript {
    TaskScript::new()
        .working()
        .propose(&proposal.clone(), move |reply| {
            let expected = &proposal.context;
            let Some(ctx) = reply.negotiation() else {
                return TaskScript::new()
                    .fail("invalid negotiation reply: no negotiationContext")
                    .into();
            };
            if ctx.id != expected.id
                || ctx.round != expected.round
                || ctx.max_rounds != expected.max_rounds
            {
                return TaskScript::new()
                    .fail("invalid negotiation reply: context does not match the proposal")
                    .into();
            }
            match ctx.performative.as_str() {
            "ACCEPT" => TaskScript::new()
                .working()
                .artifact_data(
                    "result",
                    json!({ "negotiation": "accepted", "round": ctx.round, "reply": reply.text() }),
                )
                .complete_with("negotiation accepted")
                .into(),
            "REJECT" if ctx.round < ctx.max_rounds => negotiate(proposal.next_round()).into(),
            "REJECT" => TaskScript::new().fail("negotiation rejected in the last round").into(),
            "ABORT" => TaskScript::new().fail("negotiation aborted by the requester").into(),
            other => TaskScript::new()
                .fail(format!("invalid negotiation reply: performative {other}"))
                .into(),
        }
        })
}

/// The metadata value a reply to `proposal` must carry (for tests that play the engine).
pub fn reply_metadata(proposal: &crate::NegotiationContext, performative: &str) -> Value {
    let mut ctx = proposal.clone();
    ctx.performative = performative.to_owned();
    json!({
        crate::NEGOTIATION_T_URI: format!("## Information Negotiation Result\n{performative}"),
        crate::message::TEMPLATE_URI_KEY: "Negotiation-T/information-negotiation/accept-reject/v1",
        crate::message::NEGOTIATION_CONTEXT_KEY: ctx.to_json(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::Step;

    fn msg(text: &str) -> IncomingMessage {
        IncomingMessage::from_json(
            json!({"messageId":"m","role":"ROLE_USER","parts":[{"text": text}]}),
        )
    }

    #[test]
    fn slow_parses_seconds() {
        let Script::Task(t) = builtin(&msg("slow 0.5 x")) else {
            panic!()
        };
        assert!(
            t.steps()
                .iter()
                .any(|s| matches!(s, Step::Delay(d) if *d == Duration::from_millis(500)))
        );
    }

    #[test]
    fn flaky_fails_until_enough_earlier_attempts_are_referenced() {
        let attempt = |refs: Value| {
            let m = IncomingMessage::from_json(json!({"messageId": "m", "role": "ROLE_USER",
                "parts": [{"text": "flaky 2 x"}], "referenceTaskIds": refs}));
            let Script::Task(t) = builtin(&m) else {
                panic!()
            };
            match t.steps().last() {
                Some(Step::Status { state, .. }) => state.clone(),
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(attempt(json!([])), a2a::TaskState::Failed);
        assert_eq!(attempt(json!(["t1"])), a2a::TaskState::Failed);
        assert_eq!(attempt(json!(["t1", "t2"])), a2a::TaskState::Completed);
    }

    #[test]
    fn unknown_word_echoes_a_message() {
        assert!(matches!(builtin(&msg("whatever")), Script::Reply(_)));
    }

    #[test]
    fn negotiate_accept_completes_and_mismatch_fails() {
        let Script::Task(t) = builtin(&msg("negotiate now")) else {
            panic!()
        };
        let Some(Step::Interrupt { message, then, .. }) = t.steps().get(1) else {
            panic!()
        };
        let wire = message.as_ref().unwrap().to_wire("c", Some("t"));
        let md = wire["metadata"].as_object().unwrap();
        let proposal = crate::NegotiationContext::from_metadata(md).unwrap();
        assert_eq!(proposal.performative, "PROPOSE");
        let accept = IncomingMessage::from_json(json!({"messageId":"r","role":"ROLE_USER",
            "parts":[{"text":"ok"}], "metadata": reply_metadata(&proposal, "ACCEPT")}));
        let Script::Task(next) = then(&accept) else {
            panic!()
        };
        assert!(matches!(
            next.steps().last(),
            Some(Step::Status {
                state: a2a::TaskState::Completed,
                ..
            })
        ));
        let mut wrong = proposal.clone();
        wrong.round = 2;
        let bad = IncomingMessage::from_json(json!({"messageId":"r","role":"ROLE_USER",
            "parts":[{"text":"ok"}], "metadata": reply_metadata(&wrong, "ACCEPT")}));
        let Script::Task(next) = then(&bad) else {
            panic!()
        };
        assert!(matches!(
            next.steps().last(),
            Some(Step::Status {
                state: a2a::TaskState::Failed,
                ..
            })
        ));
    }
}
