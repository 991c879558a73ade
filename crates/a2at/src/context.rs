//! `NegotiationContext`: the Negotiation-T session state carried in `metadata.negotiationContext`,
//! its performatives, and the canonical wire parser.
//!
//! Wire form: `{"id": str, "round": int, "maxRounds": int, "performative": "PROPOSE"|"ACCEPT"|"REJECT"|"ABORT"}`.
//! Because metadata travels through protobuf `Struct`, `round` and `maxRounds` often arrive as
//! doubles (`2.0`); integral doubles are accepted, anything else that is not an integral number
//! (`1.5`, `true`, `"1"`, absent, out of the 32-bit range) is rejected. Emission always writes
//! JSON integers and always includes `performative`. Unknown keys are ignored.

use std::fmt;

use serde::de::Error as _;
use serde::ser::SerializeMap as _;
use serde_json::{Map, Value};

use crate::uri::NEGOTIATION_CONTEXT_KEY;

/// The round budget used by [`NegotiationContext::of`].
pub const DEFAULT_MAX_ROUNDS: u32 = 5;

/// The largest round or maxRounds accepted (Java `int` parity).
const MAX_WIRE_INT: i64 = i32::MAX as i64;

/// What a Negotiation-T message does. Wire values are exact upper-case names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Performative {
    /// `"PROPOSE"`: a proposal awaiting an answer (the only non-terminal performative).
    Propose,
    /// `"ACCEPT"`: the proposal is accepted.
    Accept,
    /// `"REJECT"`: the proposal is rejected.
    Reject,
    /// `"ABORT"`: the negotiation is abandoned.
    Abort,
}

impl Performative {
    /// All four performatives.
    pub const ALL: [Performative; 4] = [
        Performative::Propose,
        Performative::Accept,
        Performative::Reject,
        Performative::Abort,
    ];

    /// The wire string.
    pub const fn as_str(self) -> &'static str {
        match self {
            Performative::Propose => "PROPOSE",
            Performative::Accept => "ACCEPT",
            Performative::Reject => "REJECT",
            Performative::Abort => "ABORT",
        }
    }

    /// Exact match on the wire string: `"propose"` and `" ACCEPT"` are `None`.
    pub fn try_parse(s: &str) -> Option<Self> {
        match s {
            "PROPOSE" => Some(Performative::Propose),
            "ACCEPT" => Some(Performative::Accept),
            "REJECT" => Some(Performative::Reject),
            "ABORT" => Some(Performative::Abort),
            _ => None,
        }
    }

    /// `true` for ACCEPT, REJECT and ABORT (the ending replies).
    pub const fn is_terminal(self) -> bool {
        !matches!(self, Performative::Propose)
    }

    /// The template-URI segment that addresses this performative
    /// (`propose`, `accept-reject`, `abort`).
    pub const fn template_segment(self) -> &'static str {
        match self {
            Performative::Propose => "propose",
            Performative::Accept | Performative::Reject => "accept-reject",
            Performative::Abort => "abort",
        }
    }
}

impl fmt::Display for Performative {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Performative {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Performative {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Performative::try_parse(&s)
            .ok_or_else(|| D::Error::custom(ContextError::InvalidPerformative))
    }
}

/// Which shape rule made a `negotiationContext` value unreadable ([`ContextError::Invalid`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ShapeRule {
    /// The `negotiationContext` key is absent.
    Absent,
    /// The value is not a JSON object.
    NotAnObject,
    /// `id` is absent or not a string.
    IdNotText,
    /// `performative` is absent or not a string.
    PerformativeNotText,
}

/// Why a Negotiation-T context could not be read or built. `Display` gives the reason text,
/// byte-identical to the reference SDKs (engines report it under `negotiation.invalid_context`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ContextError {
    /// The value is not an object with string `id` and `performative` (includes the legacy
    /// `{negotiationId, status}` shape and the 3-field shape without `performative`).
    #[error("Invalid negotiationContext")]
    Invalid {
        /// The shape rule that failed.
        rule: ShapeRule,
    },
    /// `performative` is a string but not one of the four exact names.
    #[error("Invalid negotiation performative")]
    InvalidPerformative,
    /// `round` or `maxRounds` is not an integral number within the 32-bit range.
    #[error("Negotiation round must be an integer")]
    NotAnInteger {
        /// The wire field: `"round"` or `"maxRounds"`.
        field: &'static str,
    },
    /// `id` is empty or whitespace.
    #[error("Negotiation context id must not be blank.")]
    BlankId,
    /// `round` is below 1.
    #[error("Negotiation context round must be a positive integer but was {round}.")]
    RoundNotPositive {
        /// The value received.
        round: i64,
    },
    /// `maxRounds` is below 1.
    #[error("Negotiation context maxRounds must be a positive integer but was {max_rounds}.")]
    MaxRoundsNotPositive {
        /// The value received.
        max_rounds: i64,
    },
    /// No metadata layer of a response carries a context.
    #[error("Missing negotiationContext")]
    Missing,
    /// Two metadata layers of one response carry different contexts.
    #[error("Conflicting negotiation contexts in response")]
    Conflicting,
}

/// A validated Negotiation-T context: non-blank `id`, `1 <= round`, `1 <= max_rounds`, both at
/// most `i32::MAX`. `round > max_rounds` is representable (it is a rule violation, not a shape
/// error; see [`NegotiationContext::is_exhausted`] and [`crate::check_rules`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NegotiationContext {
    id: String,
    round: u32,
    max_rounds: u32,
    performative: Performative,
}

/// Narrows a validated count to `u32`; `value` is already known to be in `1..=i32::MAX`.
fn positive_u32(value: i64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

impl NegotiationContext {
    /// Builds a context, checking in order: blank id, round range, maxRounds range.
    pub fn new(
        id: impl Into<String>,
        round: i64,
        max_rounds: i64,
        performative: Performative,
    ) -> Result<Self, ContextError> {
        let id = id.into();
        if id.trim().is_empty() {
            return Err(ContextError::BlankId);
        }
        if round > MAX_WIRE_INT {
            return Err(ContextError::NotAnInteger { field: "round" });
        }
        if max_rounds > MAX_WIRE_INT {
            return Err(ContextError::NotAnInteger { field: "maxRounds" });
        }
        if round < 1 {
            return Err(ContextError::RoundNotPositive { round });
        }
        if max_rounds < 1 {
            return Err(ContextError::MaxRoundsNotPositive { max_rounds });
        }
        Ok(NegotiationContext {
            id,
            round: positive_u32(round),
            max_rounds: positive_u32(max_rounds),
            performative,
        })
    }

    /// Builds a context with the default budget of [`DEFAULT_MAX_ROUNDS`].
    pub fn of(
        id: impl Into<String>,
        round: i64,
        performative: Performative,
    ) -> Result<Self, ContextError> {
        Self::new(id, round, i64::from(DEFAULT_MAX_ROUNDS), performative)
    }

    /// The negotiation id (a UUID by convention; see [`crate::check_rules`]).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The 1-based round.
    pub fn round(&self) -> u32 {
        self.round
    }

    /// The round budget (`maxRounds` on the wire).
    pub fn max_rounds(&self) -> u32 {
        self.max_rounds
    }

    /// The performative.
    pub fn performative(&self) -> Performative {
        self.performative
    }

    /// `round > max_rounds`. A context whose round equals its budget is not exhausted: the last
    /// round can still be answered.
    pub fn is_exhausted(&self) -> bool {
        self.round > self.max_rounds
    }

    /// The context of the proposing side's next Propose round: `round + 1`, same id, budget and
    /// performative (restamp with [`with_performative`](Self::with_performative) as needed).
    /// Never use it for an ending reply (see [`crate::reply_context`]). Fails with
    /// [`ContextError::NotAnInteger`] past `i32::MAX`. The result may be exhausted; check
    /// [`is_exhausted`](Self::is_exhausted) before sending it.
    pub fn next_round(&self) -> Result<Self, ContextError> {
        if i64::from(self.round) >= MAX_WIRE_INT {
            return Err(ContextError::NotAnInteger { field: "round" });
        }
        Ok(NegotiationContext {
            id: self.id.clone(),
            round: self.round + 1,
            max_rounds: self.max_rounds,
            performative: self.performative,
        })
    }

    /// A copy with another performative.
    pub fn with_performative(&self, performative: Performative) -> Self {
        NegotiationContext {
            performative,
            ..self.clone()
        }
    }

    /// Parses a `negotiationContext` value. Checks, in order: object, string `id` and
    /// `performative`, exact performative, integral `round` then `maxRounds`, then the
    /// [`new`](Self::new) checks. Unknown keys are ignored.
    pub fn from_json(value: &Value) -> Result<Self, ContextError> {
        let Value::Object(raw) = value else {
            return Err(ContextError::Invalid {
                rule: ShapeRule::NotAnObject,
            });
        };
        let Some(Value::String(id)) = raw.get("id") else {
            return Err(ContextError::Invalid {
                rule: ShapeRule::IdNotText,
            });
        };
        let Some(Value::String(performative)) = raw.get("performative") else {
            return Err(ContextError::Invalid {
                rule: ShapeRule::PerformativeNotText,
            });
        };
        let performative =
            Performative::try_parse(performative).ok_or(ContextError::InvalidPerformative)?;
        let round = wire_int(raw.get("round"), "round")?;
        let max_rounds = wire_int(raw.get("maxRounds"), "maxRounds")?;
        Self::new(id.as_str(), round, max_rounds, performative)
    }

    /// Parses `metadata["negotiationContext"]`; an absent key is
    /// [`ContextError::Invalid`] with [`ShapeRule::Absent`]. Use
    /// [`find_negotiation_context`](crate::find_negotiation_context) to search a whole response.
    pub fn from_metadata(metadata: &Map<String, Value>) -> Result<Self, ContextError> {
        match metadata.get(NEGOTIATION_CONTEXT_KEY) {
            Some(value) => Self::from_json(value),
            None => Err(ContextError::Invalid {
                rule: ShapeRule::Absent,
            }),
        }
    }

    /// The wire object, with JSON integers and all four keys in wire order.
    pub fn to_json(&self) -> Value {
        let mut map = Map::with_capacity(4);
        map.insert("id".to_owned(), Value::String(self.id.clone()));
        map.insert("round".to_owned(), Value::from(self.round));
        map.insert("maxRounds".to_owned(), Value::from(self.max_rounds));
        map.insert(
            "performative".to_owned(),
            Value::String(self.performative.as_str().to_owned()),
        );
        Value::Object(map)
    }
}

/// Reads a wire integer: a JSON number with an integral value within `i32` (an integral double
/// such as `2.0` counts). Booleans, strings, absence, fractions and out-of-range values fail.
fn wire_int(value: Option<&Value>, field: &'static str) -> Result<i64, ContextError> {
    let err = ContextError::NotAnInteger { field };
    let Some(Value::Number(n)) = value else {
        return Err(err);
    };
    let int = if let Some(i) = n.as_i64() {
        i
    } else if n.is_u64() {
        return Err(err);
    } else {
        let f = n.as_f64().ok_or(err.clone())?;
        // Exactly integral and inside the i32 range, so the cast below is exact.
        if f.fract() != 0.0 || !(f64::from(i32::MIN)..=f64::from(i32::MAX)).contains(&f) {
            return Err(err);
        }
        f as i64
    };
    if !(i64::from(i32::MIN)..=MAX_WIRE_INT).contains(&int) {
        return Err(err);
    }
    Ok(int)
}

impl serde::Serialize for NegotiationContext {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(4))?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("round", &self.round)?;
        map.serialize_entry("maxRounds", &self.max_rounds)?;
        map.serialize_entry("performative", &self.performative)?;
        map.end()
    }
}

/// Deserialisation applies exactly the wire rules of [`NegotiationContext::from_json`].
impl<'de> serde::Deserialize<'de> for NegotiationContext {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        NegotiationContext::from_json(&value).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const U: &str = "3f2b8c1e-9a4d-4e6b-8f1a-2c3d4e5f6a7b";

    fn parse(v: Value) -> Result<NegotiationContext, ContextError> {
        NegotiationContext::from_json(&v)
    }

    #[test]
    fn performatives_are_exact() {
        for p in Performative::ALL {
            assert_eq!(Performative::try_parse(p.as_str()), Some(p));
            assert_eq!(Performative::try_parse(&p.as_str().to_lowercase()), None);
        }
        assert_eq!(Performative::try_parse(" ACCEPT"), None);
        assert!(!Performative::Propose.is_terminal());
        assert!(Performative::Abort.is_terminal());
        assert_eq!(Performative::Reject.template_segment(), "accept-reject");
        assert!(serde_json::from_str::<Performative>("\"propose\"").is_err());
        assert_eq!(
            serde_json::from_str::<Performative>("\"ABORT\"").ok(),
            Some(Performative::Abort)
        );
    }

    #[test]
    fn integral_doubles_pass_and_everything_else_fails() {
        let ok = parse(json!({"id": U, "round": 3.0, "maxRounds": 5, "performative": "PROPOSE"}));
        assert_eq!(ok.map(|c| (c.round(), c.max_rounds())), Ok((3, 5)));
        for bad in [
            json!(1.5),
            json!(true),
            json!("1"),
            json!(null),
            json!(2147483648i64),
            json!(1e300),
            json!(u64::MAX),
        ] {
            assert_eq!(
                parse(json!({"id": U, "round": 1, "maxRounds": bad, "performative": "PROPOSE"})),
                Err(ContextError::NotAnInteger { field: "maxRounds" }),
                "{bad}"
            );
        }
        assert_eq!(
            parse(json!({"id": U, "round": 2147483647.0, "maxRounds": 2147483647, "performative": "ABORT"}))
                .map(|c| c.round()),
            Ok(2_147_483_647)
        );
    }

    #[test]
    fn checks_run_in_wire_order() {
        // A non-integer round is reported before a blank id (conversion precedes construction).
        assert_eq!(
            parse(json!({"id": " ", "round": "1", "maxRounds": 5, "performative": "PROPOSE"})),
            Err(ContextError::NotAnInteger { field: "round" })
        );
        // Performative is checked before numbers.
        assert_eq!(
            parse(json!({"id": U, "round": true, "maxRounds": 5, "performative": "X"})),
            Err(ContextError::InvalidPerformative)
        );
        assert_eq!(
            parse(json!({"id": U, "round": 0, "maxRounds": 0, "performative": "ACCEPT"})),
            Err(ContextError::RoundNotPositive { round: 0 })
        );
        assert_eq!(
            parse(json!({"id": 7, "round": 1, "maxRounds": 1, "performative": "ACCEPT"})),
            Err(ContextError::Invalid {
                rule: ShapeRule::IdNotText
            })
        );
        assert_eq!(
            NegotiationContext::from_metadata(&Map::new()).map_err(|e| e.to_string()),
            Err("Invalid negotiationContext".to_owned())
        );
    }

    #[test]
    fn next_round_keeps_everything_but_the_round() -> Result<(), ContextError> {
        let c = NegotiationContext::of(U, 5, Performative::Propose)?;
        assert!(!c.is_exhausted());
        let n = c.next_round()?;
        assert_eq!(
            (n.id(), n.round(), n.max_rounds(), n.performative()),
            (U, 6, 5, Performative::Propose)
        );
        assert!(n.is_exhausted());
        let top = NegotiationContext::new(U, i64::from(i32::MAX), 1, Performative::Propose)?;
        assert_eq!(
            top.next_round(),
            Err(ContextError::NotAnInteger { field: "round" })
        );
        Ok(())
    }

    #[test]
    fn serde_matches_the_wire_form() -> Result<(), Box<dyn std::error::Error>> {
        let c = NegotiationContext::new(U, 2, 5, Performative::Accept)?;
        let text = serde_json::to_string(&c)?;
        assert_eq!(
            text,
            format!(r#"{{"id":"{U}","round":2,"maxRounds":5,"performative":"ACCEPT"}}"#)
        );
        assert_eq!(serde_json::to_value(&c)?, c.to_json());
        assert_eq!(serde_json::from_str::<NegotiationContext>(&text)?, c);
        let err = serde_json::from_str::<NegotiationContext>(
            r#"{"id":"x","round":1.5,"maxRounds":5,"performative":"ACCEPT"}"#,
        );
        assert!(err.is_err_and(|e| {
            e.to_string()
                .contains("Negotiation round must be an integer")
        }));
        Ok(())
    }
}
