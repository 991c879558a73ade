//! The one registry of stable error codes, and the [`Failure`] value that carries one.
//!
//! Codes are part of the public contract: hosts match on the strings. `docs/error-codes.md` is
//! checked against [`ErrorCode::ALL`] by a test, so the two never drift.

pub use crate::failure::Failure;
use serde::{Deserialize, Serialize};

macro_rules! error_codes {
    ($( $(#[doc = $doc:literal])* $variant:ident => $code:literal, )*) => {
        /// Every stable error code a2aflow itself produces.
        ///
        /// Host callbacks may fail with codes of their own through
        /// [`crate::BusinessFailure`]; those are carried as [`FailureCode::Business`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $( $(#[doc = $doc])* $variant, )*
        }

        impl ErrorCode {
            /// All codes, in registry order.
            pub const ALL: &'static [ErrorCode] = &[ $( ErrorCode::$variant, )* ];

            /// The stable string, e.g. `"a2a.task_failed"`.
            pub const fn as_str(self) -> &'static str {
                match self { $( ErrorCode::$variant => $code, )* }
            }

            /// What the code means, for documentation and `--help` output.
            pub const fn description(self) -> &'static str {
                match self { $( ErrorCode::$variant => concat!($($doc),*), )* }
            }

            /// Parses a stable string back to its code.
            pub fn parse(code: &str) -> Option<ErrorCode> {
                match code { $( $code => Some(ErrorCode::$variant), )* _ => None }
            }
        }
    };
}

error_codes! {
    // ---- workflow.* : definitions, validation, scheduling, callbacks ----
    /// The workflow document is not valid JSON or has a value of the wrong type.
    WorkflowInvalidDocument => "workflow.invalid_document",
    /// A key the workflow format does not know (a warning unless strict mode is on).
    WorkflowUnknownKey => "workflow.unknown_key",
    /// A warning: a key appears more than once in one object of the document text; only the
    /// last one counts.
    WorkflowDuplicateKey => "workflow.duplicate_key",
    /// A warning: two spellings of one key (`stepType`, `step_type`, `type`; `subtasks`,
    /// `tasks`; …) are given with different values; the first in precedence order counts.
    WorkflowShadowedAlias => "workflow.shadowed_alias",
    /// An enum value (such as a step type) the workflow format does not know.
    WorkflowUnknownEnumValue => "workflow.unknown_enum_value",
    /// The workflow document is larger than a load limit: more bytes than
    /// `LoadOptions::max_document_bytes` or more steps than `LoadOptions::max_steps`.
    WorkflowTooLarge => "workflow.too_large",
    /// The workflow document is not UTF-8, or starts with a byte order mark (only JSON in UTF-8
    /// without a BOM is accepted).
    WorkflowInvalidEncoding => "workflow.invalid_encoding",
    /// The workflow has no steps.
    WorkflowNoSteps => "workflow.no_steps",
    /// A step name is empty or whitespace.
    WorkflowBlankStepName => "workflow.blank_step_name",
    /// Two steps share a name.
    WorkflowDuplicateStep => "workflow.duplicate_step",
    /// A step uses a name reserved for a terminal route (`end`, `retry`, `endNode`).
    WorkflowReservedStepName => "workflow.reserved_step_name",
    /// A name or id (workflow id or name, step name, subtask agent or child workflow, `next`
    /// target, `contextFrom` entry) contains a control character (C0, DEL or C1, such as a
    /// newline or an escape).
    WorkflowInvalidName => "workflow.invalid_name",
    /// A name or id contains an invisible character (zero-width, BOM, word joiner or a bidi
    /// control): a warning, since it makes two names look alike.
    WorkflowInvisibleCharacter => "workflow.invisible_character",
    /// A `next` entry has a blank target.
    WorkflowBlankTarget => "workflow.blank_target",
    /// A `next` entry names a step that does not exist.
    WorkflowUnknownTarget => "workflow.unknown_target",
    /// A step lists the same `next` target twice.
    WorkflowDuplicateTarget => "workflow.duplicate_target",
    /// The steps form a cycle (the path is reported).
    WorkflowCycle => "workflow.cycle",
    /// No step is a root (every step has an incoming edge).
    WorkflowNoRoot => "workflow.no_root",
    /// `contextFrom` names a step that does not exist.
    WorkflowUnknownContextStep => "workflow.unknown_context_step",
    /// `contextFrom` names a step that is not an ancestor of the step.
    WorkflowContextNotUpstream => "workflow.context_not_upstream",
    /// `contextFrom` mixes `"*"` with step names.
    WorkflowContextWildcardMixed => "workflow.context_wildcard_mixed",
    /// A step that is not SELF_LOOP has no subtasks.
    WorkflowEmptySubtasks => "workflow.empty_subtasks",
    /// A subtask has a blank agent name.
    WorkflowBlankAgent => "workflow.blank_agent",
    /// A subtask names both an agent and a child workflow, or neither.
    WorkflowSubtaskTarget => "workflow.subtask_target",
    /// A subtask names an agent for which no agent card or client was configured.
    WorkflowUnknownAgent => "workflow.unknown_agent",
    /// The host did not implement a callback the workflow needs.
    WorkflowCallbackMissing => "workflow.callback_missing",
    /// A host callback panicked; its step failed, the scheduler did not.
    WorkflowCallbackPanicked => "workflow.callback_panicked",
    /// A host callback failed with an error that is not a BusinessFailure.
    WorkflowExecutionFailed => "workflow.execution_failed",
    /// The host's `MessageContent` cannot be sent as given (a blank extension URI); nothing was
    /// sent.
    WorkflowInvalidContent => "workflow.invalid_content",
    /// A route callback failed, timed out or gave no decision; successors were suppressed.
    WorkflowRouteFailed => "workflow.route_failed",
    /// A step failed (ALL_SUCCESS with a failed subtask, or ANY_SUCCESS with no success).
    WorkflowStepFailed => "workflow.step_failed",
    /// The run's deadline passed.
    WorkflowTimeout => "workflow.timeout",
    /// The run was cancelled by the host or because its event consumer went away. Also a
    /// transport call whose send gate closed at the last moment (`TransportError::Withheld`):
    /// nothing of the request reached the agent.
    WorkflowCancelled => "workflow.cancelled",
    /// On resume, a task's send was journaled but its outcome cannot be found again (the agent
    /// has no task for the journaled context id, or cannot list tasks); nothing was resent. The
    /// details name the agent, the local task id and the context id, for the host to decide.
    WorkflowOutcomeUnknown => "workflow.outcome_unknown",
    /// An answer or decline names a task that has no open gate in that run (not gated, already
    /// answered or declined, unknown, or of another run); nothing was sent. The details name the
    /// execution id and the local task id.
    WorkflowGateNotOpen => "workflow.gate_not_open",
    /// The run suspended at its open gates (`RunOptions::suspend_when_parked`): nothing else was
    /// left to do, so the driver stopped and released the lease; the run stays unfinished in its
    /// store. The details list the open gates (`openGates`); answer them, then resume the run.
    WorkflowParked => "workflow.parked",
    /// A retry policy cannot work: no attempt at all, a first wait longer than the longest, a
    /// multiplier below 1, a jitter outside 0 to 1, or a subtask that is never sent (SELF_LOOP,
    /// delegating).
    WorkflowInvalidRetry => "workflow.invalid_retry",
    /// A retry policy's `on` names a code no new attempt can change (a `workflow.*`,
    /// `negotiation.*`, `config.*`, `store.*` or `delegation.*` code, `a2a.task_rejected`, the
    /// `a2a.auth_required` gate) or a code a2aflow does not know.
    WorkflowRetryCodeRefused => "workflow.retry_code_refused",
    /// A step's or subtask's `timeout` is not a positive number of seconds.
    WorkflowInvalidTimeout => "workflow.invalid_timeout",

    // ---- a2a.* : remote agents and the wire ----
    /// The remote task ended in TASK_STATE_FAILED.
    A2aTaskFailed => "a2a.task_failed",
    /// The remote task ended in TASK_STATE_REJECTED.
    A2aTaskRejected => "a2a.task_rejected",
    /// The remote task ended in TASK_STATE_CANCELED.
    A2aTaskCanceled => "a2a.task_canceled",
    /// The remote task needs authorization (TASK_STATE_AUTH_REQUIRED): a gate, never success.
    A2aAuthRequired => "a2a.auth_required",
    /// The agent does not know the task (TaskNotFoundError).
    A2aTaskNotFound => "a2a.task_not_found",
    /// The task cannot be cancelled (TaskNotCancelableError).
    A2aTaskNotCancelable => "a2a.task_not_cancelable",
    /// The agent does not support push notifications.
    A2aPushNotificationNotSupported => "a2a.push_notification_not_supported",
    /// The agent does not support the operation.
    A2aUnsupportedOperation => "a2a.unsupported_operation",
    /// The agent does not accept the content type.
    A2aContentTypeNotSupported => "a2a.content_type_not_supported",
    /// The agent reported an invalid agent response.
    A2aInvalidAgentResponse => "a2a.invalid_agent_response",
    /// The agent has no extended agent card configured.
    A2aExtendedCardNotConfigured => "a2a.extended_agent_card_not_configured",
    /// The agent does not support A2A version 1.0.
    A2aVersionNotSupported => "a2a.version_not_supported",
    /// The agent requires an extension the request did not activate.
    A2aExtensionSupportRequired => "a2a.extension_support_required",
    /// The agent's card does not advertise an extension the operation needs.
    A2aExtensionNotSupported => "a2a.extension_not_supported",
    /// JSON-RPC parse error (-32700).
    A2aParseError => "a2a.parse_error",
    /// JSON-RPC invalid request (-32600).
    A2aInvalidRequest => "a2a.invalid_request",
    /// JSON-RPC method not found (-32601).
    A2aMethodNotFound => "a2a.method_not_found",
    /// Invalid parameters (-32602 or INVALID_ARGUMENT).
    A2aInvalidParams => "a2a.invalid_params",
    /// The agent's internal error (-32603 or INTERNAL).
    A2aInternal => "a2a.internal",
    /// A protocol error whose reason a2aflow does not know; the reason is kept in the details.
    A2aRemoteError => "a2a.remote_error",
    /// A non-JSON error body (such as an HTML 502); status and a bounded excerpt are kept.
    A2aHttpStatus => "a2a.http_status",
    /// The card offers no binding a2aflow supports in the host's preference order.
    A2aUnsupportedBinding => "a2a.unsupported_binding",
    /// The connection could not be made or was lost.
    A2aConnection => "a2a.connection",
    /// A connect, request or idle-stream timeout expired, or an Authorization-T operation's
    /// deadline passed.
    A2aTimeout => "a2a.timeout",
    /// TLS handshake or certificate verification failed.
    A2aTls => "a2a.tls",
    /// A response body or SSE event exceeded its configured limit.
    A2aResponseTooLarge => "a2a.response_too_large",
    /// A response could not be parsed as the A2A object it should be.
    A2aInvalidResponse => "a2a.invalid_response",
    /// A task parked at TASK_STATE_INPUT_REQUIRED was still waiting for the host's answer when
    /// the run's deadline passed.
    A2aInputRequired => "a2a.input_required",

    // ---- negotiation.* : Negotiation-T ----
    /// INPUT_REQUIRED without a valid Negotiation-T context: a gate with evidence.
    NegotiationNotNegotiable => "negotiation.not_negotiable",
    /// A Negotiation-T proposal arrived but the host's content did not activate Negotiation-T.
    NegotiationNotActivated => "negotiation.not_activated",
    /// The negotiationContext is malformed; the reason is given.
    NegotiationInvalidContext => "negotiation.invalid_context",
    /// The negotiation exchange budget is exhausted.
    NegotiationBudgetExhausted => "negotiation.budget_exhausted",
    /// The host stopped the negotiation (the host's own code is kept when it gave one).
    NegotiationStopped => "negotiation.stopped",
    /// The host sent ABORT: never success, whatever the agent answers.
    NegotiationAborted => "negotiation.aborted",
    /// The remote side changed task or context identity mid-negotiation.
    NegotiationIdentityChanged => "negotiation.identity_changed",
    /// `a2at::check_rules`: the negotiation context id is not a dashed UUID.
    NegotiationInvalidContextId => "negotiation.invalid_context_id",
    /// `a2at::check_rules`: the round is beyond `maxRounds`.
    NegotiationRoundExceeded => "negotiation.round_exceeded",
    /// `a2at::check_rules` failed as a whole (the message is the first violation's).
    NegotiationRuleViolation => "negotiation.rule_violation",

    // ---- auth.* : credentials on the wire ----
    /// No configured credential or provider satisfies the card's security requirements.
    AuthRequirementUnsatisfied => "auth.requirement_unsatisfied",
    /// Two sources set the same header to different values.
    AuthConflictingHeaders => "auth.conflicting_headers",
    /// Credentials would be sent to a host other than the one they were configured for.
    AuthHostMismatch => "auth.host_mismatch",
    /// Credentials would travel over plain `http` to an interface of a card fetched over `https`.
    AuthInsecureDowngrade => "auth.insecure_downgrade",
    /// The OAuth2 token endpoint refused or failed.
    AuthTokenRequestFailed => "auth.token_request_failed",
    /// The agent rejected the credentials (HTTP 401/403).
    AuthRejected => "auth.rejected",

    // ---- config.* : construction-time configuration ----
    /// A configuration file or value is malformed or missing.
    ConfigInvalid => "config.invalid",
    /// The credentials file or one of its profiles is malformed or missing.
    ConfigInvalidCredentials => "config.invalid_credentials",
    /// A TLS CA bundle or client certificate cannot be read or parsed.
    ConfigTls => "config.tls",
    /// An environment variable a configuration names is not set.
    ConfigMissingEnv => "config.missing_env",
    /// An `enc:` secret could not be decrypted (wrong key, tampered value): fails closed.
    ConfigDecrypt => "config.decrypt",

    // ---- delegation.* : flow-to-flow delegation ----
    /// The delegation policy refused to start the child workflow; the refusal reason is given.
    DelegationRefused => "delegation.refused",
    /// An execution status outside the seed's table.
    DelegationUnmappedStatus => "delegation.unmapped_status",
    /// A delegation record violates its JSON Schema.
    DelegationInvalidRecord => "delegation.invalid_record",
    /// A subtask names a child workflow but the run has no workflow catalog to resolve it
    /// (set `RunOptions::workflow_catalog`).
    DelegationNoCatalog => "delegation.no_catalog",
    /// The child workflow ran and failed (or was cancelled or timed out); the details keep the
    /// child's execution id, its own code (`childCode`) and the code it started from (`cause`).
    DelegationChildFailed => "delegation.child_failed",

    // ---- store.* : the run journal and its stores ----
    /// The run store cannot be opened or written where it was configured: its directory does
    /// not exist, is not a directory or is read-only, or the file cannot be created there.
    StoreUnavailable => "store.unavailable",
    /// The file exists but is not an a2aflow run store (another SQLite database, or not SQLite
    /// at all); it is left unchanged.
    StoreNotAStore => "store.not_a_store",
    /// The store was written by a newer a2aflow: its schema version is above the one this build
    /// knows. It is left unchanged; use a newer a2aflow.
    StoreNewerSchema => "store.newer_schema",
    /// The store file is damaged (truncated, torn write, a record that does not decode). It is
    /// left unchanged; restore it from a backup or move it away.
    StoreCorrupt => "store.corrupt",
    /// No run with this execution id is in the store (a typo, or an id from another store).
    StoreUnknownExecution => "store.unknown_execution",
    /// Another driver holds the run's lease; the details name the owner and when the lease
    /// expires (`owner`, `expiresAtMs`).
    StoreLocked => "store.locked",
    /// The run's journaled workflow does not match its recorded SHA-256 hash, or the workflow
    /// given to resume it is not the one it started with.
    StoreWorkflowMismatch => "store.workflow_mismatch",
    /// A run with this execution id is already in the store.
    StoreDuplicateExecution => "store.duplicate_execution",
    /// The journal refuses a record: the run already finished, a second `runStarted`, an event
    /// whose `seq` is not after the last one stored.
    StoreInvalidAppend => "store.invalid_append",
    /// A driver wrote with a lease it no longer holds: the lease lapsed and another driver took
    /// the run over (details: `executionId`, `owner`). Nothing was written; this driver stops.
    /// Also a driver whose lease lapsed, by its own clock, between its last lease check and the
    /// write of a message (details: `executionId`, `expiresAtMs`): nothing was sent, the run
    /// stops and is resumed from its journal.
    StoreLeaseLost => "store.lease_lost",
}

/// The text of `docs/error-codes.md`, generated from [`ErrorCode::ALL`]: one table per namespace,
/// in registry order. A test fails when the file drifts from this text.
pub fn error_codes_markdown() -> String {
    let mut out = String::from(
        "# Error codes\n\n\
         <!-- Generated from `ErrorCode::ALL` in crates/a2aflow-model/src/error_code.rs. Do not edit by hand:\n\
         \x20    A2AFLOW_BLESS=1 cargo test -p a2aflow-model --test it error_codes_doc -->\n\n\
         Every stable error code a2aflow produces. Hosts match on these strings; they never change\n\
         meaning. Host callbacks may fail with business codes of their own (`BusinessFailure`);\n\
         those travel unchanged and are not listed here.\n",
    );
    let mut namespace = "";
    for &code in ErrorCode::ALL {
        let ns = code.as_str().split('.').next().unwrap_or_default();
        if ns != namespace {
            namespace = ns;
            out.push_str(&format!("\n## `{ns}.*`\n\n| code | meaning |\n|---|---|\n"));
        }
        out.push_str(&format!(
            "| `{}` | {} |\n",
            code.as_str(),
            code.description().trim().replace('|', "\\|")
        ));
    }
    out
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        ErrorCode::parse(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown error code `{s}`")))
    }
}

/// A host's own failure code, such as `"billing.card_declined"`: any string that is not one of
/// the registry's [`ErrorCode`] strings (those are always [`FailureCode::Engine`], so one string
/// has one representation and a round trip through JSON gives back the same value).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BusinessCode(String);

impl BusinessCode {
    /// The business code `code`, or `None` when `code` is one of the registry's strings (use
    /// [`FailureCode::parse`] to accept both).
    pub fn new(code: impl Into<String>) -> Option<BusinessCode> {
        let code = code.into();
        match ErrorCode::parse(&code) {
            Some(_) => None,
            None => Some(BusinessCode(code)),
        }
    }

    /// The code as the host gave it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for BusinessCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The code a [`Failure`] carries: one of the engine's own [`ErrorCode`]s, or a host's
/// [`BusinessCode`]. It serialises as the plain code string; a registry string deserialises as
/// [`FailureCode::Engine`], any other string as [`FailureCode::Business`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailureCode {
    /// A code from the registry.
    Engine(ErrorCode),
    /// A host's own code (from a `BusinessFailure`).
    Business(BusinessCode),
}

impl FailureCode {
    /// Reads a code string: [`FailureCode::Engine`] when it is a registry string, otherwise
    /// [`FailureCode::Business`].
    pub fn parse(code: impl Into<String>) -> FailureCode {
        let code = code.into();
        match ErrorCode::parse(&code) {
            Some(engine) => FailureCode::Engine(engine),
            None => FailureCode::Business(BusinessCode(code)),
        }
    }

    /// The stable string, e.g. `"a2a.task_failed"` or the host's own code.
    pub fn as_str(&self) -> &str {
        match self {
            FailureCode::Engine(code) => code.as_str(),
            FailureCode::Business(code) => code.as_str(),
        }
    }

    /// The engine code, when this is one (business codes give `None`).
    pub fn error_code(&self) -> Option<ErrorCode> {
        match self {
            FailureCode::Engine(code) => Some(*code),
            FailureCode::Business(_) => None,
        }
    }

    /// True when this is exactly the engine code `code`.
    pub fn is(&self, code: ErrorCode) -> bool {
        self.error_code() == Some(code)
    }
}

impl std::hash::Hash for FailureCode {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl std::fmt::Display for FailureCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl AsRef<str> for FailureCode {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for FailureCode {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl From<ErrorCode> for FailureCode {
    fn from(code: ErrorCode) -> Self {
        FailureCode::Engine(code)
    }
}

impl From<BusinessCode> for FailureCode {
    fn from(code: BusinessCode) -> Self {
        FailureCode::Business(code)
    }
}

impl From<String> for FailureCode {
    fn from(code: String) -> Self {
        FailureCode::parse(code)
    }
}

impl From<&str> for FailureCode {
    fn from(code: &str) -> Self {
        FailureCode::parse(code)
    }
}

impl From<FailureCode> for String {
    fn from(code: FailureCode) -> Self {
        match code {
            FailureCode::Engine(code) => code.as_str().to_owned(),
            FailureCode::Business(code) => code.0,
        }
    }
}

impl PartialEq<ErrorCode> for FailureCode {
    fn eq(&self, other: &ErrorCode) -> bool {
        self.is(*other)
    }
}

impl PartialEq<str> for FailureCode {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for FailureCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for FailureCode {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<FailureCode> for str {
    fn eq(&self, other: &FailureCode) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<FailureCode> for &str {
    fn eq(&self, other: &FailureCode) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<FailureCode> for String {
    fn eq(&self, other: &FailureCode) -> bool {
        self == other.as_str()
    }
}

impl Serialize for FailureCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FailureCode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(FailureCode::parse)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_namespaced_and_round_trip() {
        let mut seen = std::collections::HashSet::new();
        for &code in ErrorCode::ALL {
            let s = code.as_str();
            assert!(seen.insert(s), "duplicate code {s}");
            let ns = s.split('.').next().unwrap_or_default();
            assert!(
                [
                    "workflow",
                    "a2a",
                    "negotiation",
                    "auth",
                    "config",
                    "delegation",
                    "store"
                ]
                .contains(&ns),
                "{s} has no known namespace"
            );
            assert_eq!(ErrorCode::parse(s), Some(code));
            assert!(!code.description().is_empty(), "{s} has no description");
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(serde_json::from_str::<ErrorCode>(&json).unwrap(), code);
        }
        assert!(ErrorCode::parse("a2a.no_such_code").is_none());
    }
}
