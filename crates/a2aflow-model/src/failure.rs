//! The [`Failure`] value: a stable code, a message, safe details, and the typed control-flow
//! facts the engine reads — the [`Gate`] a task stopped at, the [`FailureCause`] behind it, and
//! whether retrying may succeed ([`Failure::is_retryable`]).
//!
//! # JSON form
//!
//! `{"code", "message", "details"}`: the typed facts serialise *into* `details`, so results,
//! events and CLI output have one failure shape. In `details`, `"gate": true` comes first,
//! then the free-form details in insertion order, then `"cause"` (the cause failure's own JSON
//! object, or the bare code string), then `"retryable"` (only when explicitly overridden).
//!
//! Reading the JSON back (and [`Failure::with_detail`] with one of those keys) fills the typed
//! facts: `"gate": true` becomes the [`Gate`] of the failure's code; `"cause"` becomes a
//! [`FailureCause`] (a string is a code, an object a whole failure); a boolean `"retryable"` is
//! the override. A value that does not fit (a gate flag on a code that is no gate, a cause of
//! another shape) stays in `details` unchanged, so nothing is lost either way.

use crate::error_code::{ErrorCode, FailureCode};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The `details` key the gate flag is written under.
const GATE_KEY: &str = "gate";
/// The `details` key the cause is written under.
const CAUSE_KEY: &str = "cause";
/// The `details` key an explicit retry override is written under.
const RETRYABLE_KEY: &str = "retryable";

/// Where a remote task stopped without failing for good: the interaction ends, the remote task
/// may be resumed later (it is not cancelled unless the client is configured to).
///
/// Serialised as `"AUTH_REQUIRED"` / `"INPUT_REQUIRED"` (events, journals, run views).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum Gate {
    /// `TASK_STATE_AUTH_REQUIRED` (code `a2a.auth_required`).
    AuthRequired,
    /// `TASK_STATE_INPUT_REQUIRED` with nothing to negotiate (code `negotiation.not_negotiable`).
    InputRequired,
}

impl Gate {
    /// The gate a failure code stands for, if it is a gate code.
    pub fn for_code(code: &FailureCode) -> Option<Gate> {
        match code.error_code()? {
            ErrorCode::A2aAuthRequired => Some(Gate::AuthRequired),
            ErrorCode::NegotiationNotNegotiable => Some(Gate::InputRequired),
            _ => None,
        }
    }

    /// The engine code a failure at this gate carries.
    pub const fn code(self) -> ErrorCode {
        match self {
            Gate::AuthRequired => ErrorCode::A2aAuthRequired,
            Gate::InputRequired => ErrorCode::NegotiationNotNegotiable,
        }
    }

    /// The code a task parked at this gate ends with when the run's deadline passes before the
    /// host answered: `a2a.auth_required` or `a2a.input_required`.
    pub const fn expired_code(self) -> ErrorCode {
        match self {
            Gate::AuthRequired => ErrorCode::A2aAuthRequired,
            Gate::InputRequired => ErrorCode::A2aInputRequired,
        }
    }
}

/// What a failure came from.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum FailureCause {
    /// The whole failure behind this one (e.g. the host error behind a failed route).
    Failure(Failure),
    /// Only the code the failure started from (e.g. the code a failed child workflow's task
    /// started from, looked through nested delegations).
    Code(FailureCode),
}

impl FailureCause {
    /// The cause's code.
    pub fn code(&self) -> &FailureCode {
        match self {
            FailureCause::Failure(f) => &f.code,
            FailureCause::Code(code) => code,
        }
    }

    /// The whole cause failure, when one is kept.
    pub fn failure(&self) -> Option<&Failure> {
        match self {
            FailureCause::Failure(f) => Some(f),
            FailureCause::Code(_) => None,
        }
    }

    /// The JSON form: the cause failure's object, or the bare code string.
    fn to_json(&self) -> Value {
        match self {
            FailureCause::Failure(f) => f.to_json(),
            FailureCause::Code(code) => Value::String(code.as_str().to_owned()),
        }
    }

    /// Reads a cause from its JSON form; `None` when the value is of neither shape.
    fn from_json(value: &Value) -> Option<FailureCause> {
        match value {
            Value::String(code) => Some(FailureCause::Code(FailureCode::parse(code.clone()))),
            Value::Object(_) => Failure::deserialize(value).ok().map(FailureCause::Failure),
            _ => None,
        }
    }
}

impl From<Failure> for FailureCause {
    fn from(f: Failure) -> Self {
        FailureCause::Failure(f)
    }
}

impl From<FailureCode> for FailureCause {
    fn from(code: FailureCode) -> Self {
        FailureCause::Code(code)
    }
}

impl From<ErrorCode> for FailureCause {
    fn from(code: ErrorCode) -> Self {
        FailureCause::Code(code.into())
    }
}

impl Serialize for FailureCause {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

/// True when an engine code names a condition that may clear by itself: the connection could
/// not be made or was lost, a connect/request/idle timeout expired, or a non-JSON HTTP error
/// (such as a gateway's 502) said "later" — status 429, 502, 503 or 504.
fn transient(code: ErrorCode, details: &Map<String, Value>) -> bool {
    match code {
        ErrorCode::A2aConnection | ErrorCode::A2aTimeout => true,
        ErrorCode::A2aHttpStatus => details
            .get("httpStatus")
            .and_then(Value::as_u64)
            .is_some_and(|s| matches!(s, 429 | 502 | 503 | 504)),
        _ => false,
    }
}

/// A failure as the engine reports it: a stable code, a message a person can act on, safe
/// details (never secrets), and the typed facts the engine's control flow reads. The code is
/// typed ([`FailureCode`]) but serialises as the plain string, so host BusinessFailure codes
/// travel unchanged; see the [module docs](self) for the JSON form.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// The stable code: one of [`ErrorCode`] or a host's business code.
    pub code: FailureCode,
    /// What went wrong, for a person.
    pub message: String,
    /// Safe structured facts (status, reason, names involved, …), without the typed facts.
    pub details: Map<String, Value>,
    /// The typed facts: read them with [`Failure::gate`], [`Failure::cause`] and
    /// [`Failure::is_retryable`], set them with the `with_*` methods.
    pub facts: FailureFacts,
}

/// The typed control-flow facts of a [`Failure`]: the gate, the cause and the retry override.
///
/// Kept in one allocation that only a failure carrying a fact pays for: failures travel in many
/// `Result`s, and their size is every such `Result`'s.
#[derive(Debug, Clone, Default)]
pub struct FailureFacts(Option<Box<Facts>>);

#[derive(Debug, Clone, Default)]
struct Facts {
    gate: Option<Gate>,
    cause: Option<FailureCause>,
    retryable: Option<bool>,
}

impl FailureFacts {
    /// The gate the remote task stopped at, when the failure is a gate.
    pub fn gate(&self) -> Option<Gate> {
        self.0.as_ref().and_then(|f| f.gate)
    }

    /// What the failure came from, when it wraps another.
    pub fn cause(&self) -> Option<&FailureCause> {
        self.0.as_ref().and_then(|f| f.cause.as_ref())
    }

    /// The explicit answer to "may retrying succeed?", when one was given.
    pub fn retryable(&self) -> Option<bool> {
        self.0.as_ref().and_then(|f| f.retryable)
    }

    /// True when no fact is set.
    pub fn is_empty(&self) -> bool {
        self.gate().is_none() && self.cause().is_none() && self.retryable().is_none()
    }

    fn edit(&mut self) -> &mut Facts {
        self.0.get_or_insert_with(Box::default)
    }
}

impl PartialEq for FailureFacts {
    fn eq(&self, other: &Self) -> bool {
        self.gate() == other.gate()
            && self.cause() == other.cause()
            && self.retryable() == other.retryable()
    }
}

impl Failure {
    /// A failure with one of the engine's own codes.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Failure::coded(code, message)
    }

    /// A failure with any code (an engine code or a host's business code).
    pub fn coded(code: impl Into<FailureCode>, message: impl Into<String>) -> Self {
        Failure {
            code: code.into(),
            message: message.into(),
            details: Map::new(),
            facts: FailureFacts::default(),
        }
    }

    /// A failure from its JSON parts: the details' `gate`, `cause` and `retryable` entries fill
    /// the typed facts as reading the JSON form does.
    pub fn from_parts(
        code: impl Into<FailureCode>,
        message: impl Into<String>,
        details: Map<String, Value>,
    ) -> Self {
        let mut f = Failure::coded(code, message);
        for (key, value) in details {
            f = f.with_detail(key, value);
        }
        f
    }

    /// Adds one detail. The keys `gate`, `cause` and `retryable` set the typed facts instead
    /// when the value fits them (see the [module docs](self)); prefer [`Failure::with_gate`],
    /// [`Failure::with_cause`] and [`Failure::with_retryable`].
    pub fn with_detail(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        let key = key.into();
        let value = value.into();
        if !self.absorb(&key, &value) {
            self.details.insert(key, value);
        }
        self
    }

    /// Marks the failure as a stop at `gate`.
    pub fn with_gate(mut self, gate: Gate) -> Self {
        self.facts.edit().gate = Some(gate);
        self
    }

    /// Records what the failure came from.
    pub fn with_cause(mut self, cause: impl Into<FailureCause>) -> Self {
        self.facts.edit().cause = Some(cause.into());
        self
    }

    /// Overrides the retry rule of [`Failure::is_retryable`].
    pub fn with_retryable(mut self, retryable: bool) -> Self {
        self.facts.edit().retryable = Some(retryable);
        self
    }

    /// The gate the remote task stopped at, when the failure is a gate.
    pub fn gate(&self) -> Option<Gate> {
        self.facts.gate()
    }

    /// What this failure came from, when it wraps another.
    pub fn cause(&self) -> Option<&FailureCause> {
        self.facts.cause()
    }

    /// Whether retrying the task in the same context may succeed.
    ///
    /// The explicit override ([`Failure::with_retryable`]) when set; otherwise true only for
    /// conditions that may clear by themselves: `a2a.connection`, `a2a.timeout`, and
    /// `a2a.http_status` with HTTP status 429, 502, 503 or 504. Everything else is false: a gate
    /// is resumed, not retried; a remote task's end state, a negotiation outcome, a host's
    /// business code, a refusal, a configuration or validation error, and the run's own deadline
    /// or cancellation do not change by asking again.
    pub fn is_retryable(&self) -> bool {
        self.facts.retryable().unwrap_or_else(|| {
            self.code
                .error_code()
                .is_some_and(|code| transient(code, &self.details))
        })
    }

    /// The engine code, when this failure carries one (host business codes give `None`).
    pub fn error_code(&self) -> Option<ErrorCode> {
        self.code.error_code()
    }

    /// True when the code is exactly `code`.
    pub fn is(&self, code: ErrorCode) -> bool {
        self.code.is(code)
    }

    /// The code, the message and the details as the JSON form writes them (the typed facts
    /// merged in), for carriers that keep a failure as separate fields.
    pub fn into_parts(self) -> (FailureCode, String, Map<String, Value>) {
        let details = self.json_details();
        (self.code, self.message, details)
    }

    /// The JSON form as a value.
    fn to_json(&self) -> Value {
        let mut out = Map::new();
        out.insert("code".into(), Value::String(self.code.as_str().to_owned()));
        out.insert("message".into(), Value::String(self.message.clone()));
        let details = self.json_details();
        if !details.is_empty() {
            out.insert("details".into(), Value::Object(details));
        }
        Value::Object(out)
    }

    /// The `details` object of the JSON form: gate, free-form details, cause, retryable.
    fn json_details(&self) -> Map<String, Value> {
        let facts = &self.facts;
        let owned = |key: &str| match key {
            GATE_KEY => facts.gate().is_some(),
            CAUSE_KEY => facts.cause().is_some(),
            RETRYABLE_KEY => facts.retryable().is_some(),
            _ => false,
        };
        let mut out = Map::new();
        if facts.gate().is_some() {
            out.insert(GATE_KEY.into(), Value::Bool(true));
        }
        for (key, value) in self.details.iter().filter(|(k, _)| !owned(k)) {
            out.insert(key.clone(), value.clone());
        }
        if let Some(cause) = facts.cause() {
            out.insert(CAUSE_KEY.into(), cause.to_json());
        }
        if let Some(retryable) = facts.retryable() {
            out.insert(RETRYABLE_KEY.into(), Value::Bool(retryable));
        }
        out
    }

    /// Sets the typed fact `key` stands for from `value`; false when `value` does not fit.
    fn absorb(&mut self, key: &str, value: &Value) -> bool {
        match key {
            GATE_KEY if value == &Value::Bool(true) => match Gate::for_code(&self.code) {
                Some(gate) => self.facts.edit().gate = Some(gate),
                None => return false,
            },
            CAUSE_KEY => match FailureCause::from_json(value) {
                Some(cause) => self.facts.edit().cause = Some(cause),
                None => return false,
            },
            RETRYABLE_KEY => match value.as_bool() {
                Some(b) => self.facts.edit().retryable = Some(b),
                None => return false,
            },
            _ => return false,
        }
        true
    }
}

impl Serialize for Failure {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

/// The JSON form as read, before the typed facts are taken out of `details`.
#[derive(Deserialize)]
struct FailureJson {
    code: FailureCode,
    message: String,
    #[serde(default)]
    details: Map<String, Value>,
}

impl<'de> Deserialize<'de> for Failure {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let json = FailureJson::deserialize(d)?;
        Ok(Failure::from_parts(json.code, json.message, json.details))
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] {}", self.code, self.message)
    }
}

impl std::error::Error for Failure {}
