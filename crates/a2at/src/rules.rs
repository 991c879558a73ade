//! The receiver-side rule gate over a parsed `NegotiationContext`: the id must be a UUID and the
//! round must be within the budget. Violations are facts, collected in a fixed order (id, then
//! round), each with its stable `negotiation.*` code.

use std::fmt;

use crate::context::NegotiationContext;

/// Stable code of an id that is not a dashed UUID.
pub const INVALID_CONTEXT_ID_CODE: &str = "negotiation.invalid_context_id";
/// Stable code of a round beyond `maxRounds`.
pub const ROUND_EXCEEDED_CODE: &str = "negotiation.round_exceeded";
/// Stable code of a failed rule gate as a whole (its message is the first violation's).
pub const RULE_VIOLATION_CODE: &str = "negotiation.rule_violation";

/// One failed rule of [`check_rules`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RuleViolation {
    /// The id is not `8-4-4-4-12` hex digits with dashes (any case, any version nibble).
    InvalidContextId {
        /// The id received.
        actual: String,
    },
    /// `round > maxRounds`.
    RoundExceeded {
        /// The round received.
        round: u32,
        /// The budget received.
        max_rounds: u32,
    },
}

impl RuleViolation {
    /// The context field the rule is about: `"id"` or `"round"`.
    pub fn slot(&self) -> &'static str {
        match self {
            RuleViolation::InvalidContextId { .. } => "id",
            RuleViolation::RoundExceeded { .. } => "round",
        }
    }

    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            RuleViolation::InvalidContextId { .. } => INVALID_CONTEXT_ID_CODE,
            RuleViolation::RoundExceeded { .. } => ROUND_EXCEEDED_CODE,
        }
    }

    /// The facts as string pairs, with the reference SDK's keys
    /// (`actual`; `round`, `max_rounds`).
    pub fn facts(&self) -> Vec<(&'static str, String)> {
        match self {
            RuleViolation::InvalidContextId { actual } => vec![("actual", actual.clone())],
            RuleViolation::RoundExceeded { round, max_rounds } => vec![
                ("round", round.to_string()),
                ("max_rounds", max_rounds.to_string()),
            ],
        }
    }
}

impl fmt::Display for RuleViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuleViolation::InvalidContextId { actual } => {
                write!(
                    f,
                    "The negotiation context id '{actual}' is not a valid UUID"
                )
            }
            RuleViolation::RoundExceeded { round, max_rounds } => {
                write!(
                    f,
                    "Negotiation round {round} exceeds the maximum of {max_rounds}"
                )
            }
        }
    }
}

/// `true` for a dashed UUID: 36 characters, dashes at 8, 13, 18 and 23, hex digits elsewhere.
pub fn is_uuid(id: &str) -> bool {
    let bytes = id.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

/// Runs the rule gate and returns every violation, id first. Empty means the context passes.
pub fn check_rules(context: &NegotiationContext) -> Vec<RuleViolation> {
    let mut violations = Vec::new();
    if !is_uuid(context.id()) {
        violations.push(RuleViolation::InvalidContextId {
            actual: context.id().to_owned(),
        });
    }
    if context.is_exhausted() {
        violations.push(RuleViolation::RoundExceeded {
            round: context.round(),
            max_rounds: context.max_rounds(),
        });
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Performative;

    #[test]
    fn uuid_shape() {
        assert!(is_uuid("3f2b8c1e-9a4d-4e6b-8f1a-2c3d4e5f6a7b"));
        assert!(is_uuid("3F2B8C1E-9A4D-0E6B-8F1A-2C3D4E5F6A7B"));
        assert!(!is_uuid("3f2b8c1e9a4d4e6b8f1a2c3d4e5f6a7b"));
        assert!(!is_uuid("3f2b8c1e-9a4d-4e6b-8f1a-2c3d4e5f6a7g"));
        assert!(!is_uuid("3f2b8c1e-9a4d-4e6b-8f1a-2c3d4e5f6a7b\n"));
    }

    #[test]
    fn violations_carry_code_facts_and_message() {
        let c = NegotiationContext::new("neg-001", 7, 5, Performative::Propose).expect("valid");
        let v = check_rules(&c);
        assert_eq!(v.len(), 2);
        assert_eq!(
            (v[0].slot(), v[0].code()),
            ("id", "negotiation.invalid_context_id")
        );
        assert_eq!(
            v[0].to_string(),
            "The negotiation context id 'neg-001' is not a valid UUID"
        );
        assert_eq!(
            (v[1].slot(), v[1].code()),
            ("round", "negotiation.round_exceeded")
        );
        assert_eq!(
            v[1].facts(),
            vec![("round", "7".to_owned()), ("max_rounds", "5".to_owned())]
        );
        assert_eq!(
            v[1].to_string(),
            "Negotiation round 7 exceeds the maximum of 5"
        );
    }
}
