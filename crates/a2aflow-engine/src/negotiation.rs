//! The Negotiation-T state machine of one logical task, free of I/O.
//!
//! It decides whether a received object enters negotiation, deduplicates repeated proposals by
//! (remote task id, negotiation id, round), checks round progression per negotiation id, keeps the
//! exchange budget, and validates the host's reply before anything is sent.

use super::neg_context::Levels;
use a2aflow_kernel::EventEmitter;
use a2aflow_model::event_data::ClientNegotiationFailedData;
use a2aflow_model::{
    ErrorCode, Failure, FailureCode, MessageContent, NegotiationExchange, ReceivedMessage,
};
use a2at::{
    ContentExtensions, ExchangeError, NEGOTIATION_T_EXTENSION_URI, NegotiationContext, Performative,
};
use std::collections::{HashMap, HashSet};

/// A proposal the host must answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Proposal {
    /// The parsed context.
    pub context: NegotiationContext,
    /// The remote task id (absent in pre-task mode).
    pub remote_task_id: Option<String>,
    /// The evidence that carried it.
    pub evidence: ReceivedMessage,
}

/// What to do with a received negotiation candidate.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Entry {
    /// Call the host with this proposal.
    Ask(Box<Proposal>),
    /// The same proposal was answered already: keep observing, never call or resend.
    Repeat,
}

/// How the host's validated reply ends the exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReplyKind {
    /// ACCEPT or REJECT: the agent continues.
    Continue,
    /// ABORT: whatever the agent answers next is a failure.
    Abort,
}

fn invalid_context(reason: impl std::fmt::Display) -> Failure {
    Failure::new(ErrorCode::NegotiationInvalidContext, reason.to_string())
}

/// A proposal for a task whose submission did not activate Negotiation-T.
pub(crate) fn not_activated() -> Failure {
    Failure::new(
        ErrorCode::NegotiationNotActivated,
        "Remote requested Negotiation-T although it was not activated by the host",
    )
}

fn exchange_failure(e: &ExchangeError, context: &NegotiationContext) -> Failure {
    invalid_context(e).with_detail("negotiationContext", context.to_json())
}

/// Negotiation state of one logical task.
#[derive(Debug, Clone)]
pub(crate) struct NegotiationLoop {
    activated: bool,
    max_exchanges: u32,
    exchanges: Vec<NegotiationExchange>,
    answered: HashSet<(Option<String>, String, u32)>,
    progression: HashMap<String, NegotiationContext>,
    aborted: bool,
}

impl NegotiationLoop {
    /// `original` is the host's first content: only its own activation allows negotiation.
    pub fn new(original: &MessageContent, max_exchanges: u32) -> Self {
        let content = ContentExtensions::new(&original.extensions, original.metadata.as_ref());
        NegotiationLoop {
            activated: content.activates(NEGOTIATION_T_EXTENSION_URI),
            max_exchanges,
            exchanges: Vec::new(),
            answered: HashSet::new(),
            progression: HashMap::new(),
            aborted: false,
        }
    }

    /// True when the host's own submission activated Negotiation-T.
    pub fn activated(&self) -> bool {
        self.activated
    }

    /// True once the host sent ABORT.
    pub fn aborted(&self) -> bool {
        self.aborted
    }

    /// Completed exchanges, oldest first.
    pub fn exchanges(&self) -> &[NegotiationExchange] {
        &self.exchanges
    }

    /// Replies the budget still allows, the next one included.
    pub fn remaining_budget(&self) -> u32 {
        self.max_exchanges
            .saturating_sub(u32::try_from(self.exchanges.len()).unwrap_or(u32::MAX))
    }

    /// An INPUT_REQUIRED task, or a taskless message (`remote_task_id == None`, pre-task mode).
    /// For a taskless message `Ok(None)` means it carries no Negotiation-T at all: a plain answer.
    pub fn on_candidate(
        &mut self,
        levels: &Levels,
        remote_task_id: Option<&str>,
        evidence: ReceivedMessage,
    ) -> Result<Option<Entry>, Failure> {
        let taskless = remote_task_id.is_none();
        if !levels.mentions_negotiation() {
            if taskless {
                return Ok(None);
            }
            return Err(Failure::new(
                ErrorCode::NegotiationNotNegotiable,
                "Unsupported INPUT_REQUIRED interaction: no Negotiation-T proposal",
            ));
        }
        if !self.activated {
            return Err(not_activated());
        }
        let context = levels.context().map_err(invalid_context)?;
        a2at::check_incoming_propose(&context).map_err(|e| exchange_failure(&e, &context))?;
        let key = (
            remote_task_id.map(str::to_owned),
            context.id().to_owned(),
            context.round(),
        );
        if self.answered.contains(&key) {
            if taskless {
                return Err(invalid_context(format!(
                    "Remote repeated a taskless negotiation round (round={})",
                    context.round()
                )));
            }
            return Ok(Some(Entry::Repeat));
        }
        a2at::check_progression(self.progression.get(context.id()), &context)
            .map_err(|e| exchange_failure(&e, &context))?;
        if self.remaining_budget() == 0 {
            return Err(Failure::new(
                ErrorCode::NegotiationBudgetExhausted,
                "Negotiation exchange budget exhausted; no Abort generated",
            )
            .with_detail("maxNegotiationExchanges", self.max_exchanges));
        }
        Ok(Some(Entry::Ask(Box::new(Proposal {
            context,
            remote_task_id: remote_task_id.map(str::to_owned),
            evidence,
        }))))
    }

    /// Checks the host's Send content against the proposal; nothing is sent when this fails.
    pub fn check_reply(
        &self,
        proposal: &Proposal,
        reply: &MessageContent,
    ) -> Result<ReplyKind, Failure> {
        let ctx = a2at::check_reply(
            &proposal.context,
            &reply.extensions,
            reply.metadata.as_ref(),
        )
        .map_err(invalid_context)?;
        Ok(if ctx.performative() == Performative::Abort {
            ReplyKind::Abort
        } else {
            ReplyKind::Continue
        })
    }

    /// Records a reply that was sent.
    pub fn record(&mut self, proposal: Proposal, reply: MessageContent, kind: ReplyKind) {
        self.answered.insert((
            proposal.remote_task_id.clone(),
            proposal.context.id().to_owned(),
            proposal.context.round(),
        ));
        self.progression
            .insert(proposal.context.id().to_owned(), proposal.context.clone());
        if kind == ReplyKind::Abort {
            self.aborted = true;
        }
        self.exchanges.push(NegotiationExchange {
            proposal: proposal.evidence,
            reply,
        });
    }
}

/// The failure a host Stop becomes: the host's own code and reason (blank ones fall back to
/// `negotiation.stopped`).
pub(crate) fn stop_failure(code: &str, reason: &str) -> Failure {
    let code = code.trim();
    let reason = reason.trim();
    let code: FailureCode = if code.is_empty() {
        ErrorCode::NegotiationStopped.into()
    } else {
        code.into()
    };
    let message = if reason.is_empty() {
        "Negotiation stopped by the host"
    } else {
        reason
    };
    Failure::coded(code, message)
}

/// Where a negotiation the client ended happened, for its `negotiation_failed` event.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FailedAt<'a> {
    /// The agent's name.
    pub agent: &'a str,
    /// The logical task's context id.
    pub context_id: &'a str,
    /// The remote task id, when known (absent in pre-task mode).
    pub remote_task_id: Option<&'a str>,
    /// Exchanges completed before the failure.
    pub exchanges: usize,
}

/// Emits `negotiation_failed` for a negotiation the client itself ended: a proposal that is
/// invalid or not activated, an exhausted budget, a host reply failing the checks, the host's
/// Stop, an ABORT. A failing host hook is reported by the kernel, which sees it first.
pub(crate) async fn emit_failed(events: &EventEmitter, at: FailedAt<'_>, failure: &Failure) {
    if !events.is_enabled() {
        return;
    }
    crate::engine::emit_boxed(
        events,
        ClientNegotiationFailedData {
            agent: at.agent.to_owned(),
            context_id: at.context_id.to_owned(),
            remote_task_id: at.remote_task_id.map(str::to_owned),
            exchange: u32::try_from(at.exchanges).unwrap_or(u32::MAX),
            error: failure.message.clone(),
            error_code: failure.code.clone(),
            negotiation_context: failure.details.get("negotiationContext").cloned(),
        }
        .into(),
    )
    .await;
}

/// The failure after a host ABORT, whatever the agent answered.
pub(crate) fn aborted_failure() -> Failure {
    Failure::new(
        ErrorCode::NegotiationAborted,
        "Business sent Abort; task was not completed successfully",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2aflow_model::ReceivedKind;
    use a2aflow_model::a2a::{Message, Role};
    use a2at::NEGOTIATION_CONTEXT_KEY as CONTEXT_KEY;
    use a2at::NEGOTIATION_T_EXTENSION_URI as NEGOTIATION_T_URI;
    use serde_json::{Map, Value, json};
    use std::collections::HashMap as StdMap;

    fn activated() -> MessageContent {
        let mut c = MessageContent::text("do it");
        c.extensions = vec![NEGOTIATION_T_URI.to_owned()];
        c
    }

    fn propose_msg(id: &str, round: i64, max: i64, perf: &str) -> Message {
        let mut m = Message::new(Role::Agent, vec![]);
        m.metadata = Some(StdMap::from([
            (
                NEGOTIATION_T_URI.to_owned(),
                json!("## Information Negotiation"),
            ),
            (
                CONTEXT_KEY.to_owned(),
                json!({"id": id, "round": round, "maxRounds": max, "performative": perf}),
            ),
        ]));
        m
    }

    fn evidence() -> ReceivedMessage {
        ReceivedMessage {
            kind: ReceivedKind::Task,
            task_id: Some("t".into()),
            context_id: Some("c".into()),
            state: None,
            message: None,
            task_metadata: None,
            artifacts: vec![],
        }
    }

    fn candidate(
        l: &mut NegotiationLoop,
        m: &Message,
        task: Option<&str>,
    ) -> Result<Option<Entry>, Failure> {
        let levels = Levels::new(Some(m), None, &[]);
        l.on_candidate(&levels, task, evidence())
    }

    fn reply(id: &str, round: i64, max: i64, perf: &str) -> MessageContent {
        let mut meta = Map::new();
        meta.insert(
            NEGOTIATION_T_URI.to_owned(),
            Value::from("## Result\nAccept"),
        );
        meta.insert(
            CONTEXT_KEY.to_owned(),
            json!({"id": id, "round": round, "maxRounds": max, "performative": perf}),
        );
        MessageContent {
            parts: vec![],
            metadata: Some(meta),
            extensions: vec![NEGOTIATION_T_URI.to_owned()],
            context_id: None,
        }
    }

    fn ask(e: Option<Entry>) -> Proposal {
        match e {
            Some(Entry::Ask(p)) => *p,
            other => panic!("expected Ask, got {other:?}"),
        }
    }

    #[test]
    fn s_neg_11_plain_input_required_is_not_negotiable() {
        let mut l = NegotiationLoop::new(&activated(), 3);
        let m = Message::new(
            Role::Agent,
            vec![a2aflow_model::a2a::Part::text("question")],
        );
        let e = candidate(&mut l, &m, Some("t")).unwrap_err();
        assert!(e.is(ErrorCode::NegotiationNotNegotiable));
        // A taskless plain message is just an answer (S-TASK-05).
        assert_eq!(candidate(&mut l, &m, None).unwrap(), None);
    }

    #[test]
    fn s_neg_25_propose_without_host_activation_fails() {
        let mut l = NegotiationLoop::new(&MessageContent::text("plain"), 3);
        let e = candidate(&mut l, &propose_msg("n", 1, 5, "PROPOSE"), Some("t")).unwrap_err();
        assert!(e.is(ErrorCode::NegotiationNotActivated));
    }

    #[test]
    fn s_neg_16_non_propose_or_exhausted_context_is_invalid() {
        let mut l = NegotiationLoop::new(&activated(), 3);
        let e = candidate(&mut l, &propose_msg("n", 1, 5, "ACCEPT"), None).unwrap_err();
        assert!(e.is(ErrorCode::NegotiationInvalidContext));
        assert_eq!(e.message, "Expected a valid Negotiation-T Propose");
        let e = candidate(&mut l, &propose_msg("n", 6, 5, "PROPOSE"), Some("t")).unwrap_err();
        assert_eq!(e.message, "Expected a valid Negotiation-T Propose");
        // The last allowed round is still answerable.
        ask(candidate(&mut l, &propose_msg("n", 5, 5, "PROPOSE"), Some("t")).unwrap());
    }

    #[test]
    fn s_neg_02_repeated_proposal_is_not_asked_again() {
        let mut l = NegotiationLoop::new(&activated(), 3);
        let p = ask(candidate(&mut l, &propose_msg("n", 1, 5, "PROPOSE"), Some("t")).unwrap());
        let r = reply("n", 1, 5, "ACCEPT");
        let kind = l.check_reply(&p, &r).unwrap();
        l.record(p, r, kind);
        let again = candidate(&mut l, &propose_msg("n", 1, 5, "PROPOSE"), Some("t")).unwrap();
        assert_eq!(again, Some(Entry::Repeat));
        assert_eq!(l.exchanges().len(), 1);
        // Pre-task mode has nothing to poll: a repeat is an error.
        let mut pre = NegotiationLoop::new(&activated(), 3);
        let p = ask(candidate(&mut pre, &propose_msg("n", 1, 5, "PROPOSE"), None).unwrap());
        let r = reply("n", 1, 5, "ACCEPT");
        pre.record(p, r, ReplyKind::Continue);
        let e = candidate(&mut pre, &propose_msg("n", 1, 5, "PROPOSE"), None).unwrap_err();
        assert!(e.message.contains("taskless"));
    }

    #[test]
    fn s_neg_22_budget_exhausted_after_one_exchange() {
        let mut l = NegotiationLoop::new(&activated(), 1);
        assert_eq!(l.remaining_budget(), 1);
        let p = ask(candidate(&mut l, &propose_msg("n", 1, 5, "PROPOSE"), Some("t")).unwrap());
        l.record(p, reply("n", 1, 5, "ACCEPT"), ReplyKind::Continue);
        let e = candidate(&mut l, &propose_msg("n", 2, 5, "PROPOSE"), Some("t")).unwrap_err();
        assert!(e.is(ErrorCode::NegotiationBudgetExhausted));
        assert_eq!(
            e.message,
            "Negotiation exchange budget exhausted; no Abort generated"
        );
    }

    #[test]
    fn s_neg_23_regression_or_changed_max_rounds_fails() {
        for (round, max) in [(1, 5), (3, 6)] {
            let mut l = NegotiationLoop::new(&activated(), 3);
            let p = ask(candidate(&mut l, &propose_msg("n", 2, 5, "PROPOSE"), Some("t")).unwrap());
            l.record(p, reply("n", 2, 5, "ACCEPT"), ReplyKind::Continue);
            let e =
                candidate(&mut l, &propose_msg("n", round, max, "PROPOSE"), Some("t")).unwrap_err();
            assert_eq!(
                e.message,
                "Negotiation round regressed or maxRounds changed"
            );
        }
        let mut l = NegotiationLoop::new(&activated(), 3);
        let p = ask(candidate(&mut l, &propose_msg("n", 2, 5, "PROPOSE"), Some("t")).unwrap());
        l.record(p, reply("n", 2, 5, "ACCEPT"), ReplyKind::Continue);
        let p = ask(candidate(&mut l, &propose_msg("n", 3, 5, "PROPOSE"), Some("t")).unwrap());
        assert_eq!(p.context.round(), 3);
        assert_eq!(l.remaining_budget(), 2);
    }

    #[test]
    fn s_neg_07_reply_checks() {
        let mut l = NegotiationLoop::new(&activated(), 3);
        let p = ask(candidate(&mut l, &propose_msg("n", 2, 5, "PROPOSE"), Some("t")).unwrap());
        let e = l.check_reply(&p, &MessageContent::text("ok")).unwrap_err();
        assert_eq!(
            e.message,
            "Negotiation reply must carry and activate Negotiation-T"
        );
        for bad in [
            reply("other", 2, 5, "ACCEPT"),
            reply("n", 3, 5, "ACCEPT"),
            reply("n", 2, 6, "ACCEPT"),
            reply("n", 2, 5, "PROPOSE"),
        ] {
            let e = l.check_reply(&p, &bad).unwrap_err();
            assert_eq!(
                e.message,
                "Reply does not match the received negotiation context/round"
            );
        }
        assert_eq!(
            l.check_reply(&p, &reply("n", 2, 5, "REJECT")).unwrap(),
            ReplyKind::Continue
        );
        assert_eq!(
            l.check_reply(&p, &reply("n", 2, 5, "ABORT")).unwrap(),
            ReplyKind::Abort
        );
        l.record(p, reply("n", 2, 5, "ABORT"), ReplyKind::Abort);
        assert!(l.aborted());
    }

    #[test]
    fn a2at_rule_codes_are_registered() {
        for (code, want) in [
            (
                a2at::INVALID_CONTEXT_ID_CODE,
                ErrorCode::NegotiationInvalidContextId,
            ),
            (
                a2at::ROUND_EXCEEDED_CODE,
                ErrorCode::NegotiationRoundExceeded,
            ),
            (
                a2at::RULE_VIOLATION_CODE,
                ErrorCode::NegotiationRuleViolation,
            ),
        ] {
            assert_eq!(ErrorCode::parse(code), Some(want), "{code}");
        }
    }

    #[test]
    fn stop_keeps_host_code_and_blank_falls_back() {
        let f = stop_failure("biz.no_budget", "too expensive");
        assert_eq!(
            (f.code.as_str(), f.message.as_str()),
            ("biz.no_budget", "too expensive")
        );
        assert_eq!(stop_failure(" ", "").code, "negotiation.stopped");
        assert!(aborted_failure().is(ErrorCode::NegotiationAborted));
    }
}
