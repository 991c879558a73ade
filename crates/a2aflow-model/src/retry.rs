//! Retry policies: how often a subtask's dispatch may be sent again, how long to wait between
//! attempts, and on which failures.
//!
//! A policy is written per subtask in the workflow document (`retry`) or given as a default in
//! the host's configuration; absent means no retry, because the engine never repeats a business
//! command on its own. Durations are seconds (JSON numbers, fractions allowed), as `timeout` is.
//!
//! ```json
//! {"attempts": 3, "backoff": {"initial": 0.5, "max": 10, "multiplier": 2, "jitter": 0.2},
//!  "on": ["a2a.connection", "a2a.task_failed"]}
//! ```
//!
//! [`RetryPolicy::problems`] checks a policy's values (the validator and the configuration both
//! use it): at least one attempt, `initial` ≤ `max`, `multiplier` ≥ 1, `jitter` within 0..=1, and
//! no code in `on` that retrying can never change ([`retry_can_change`]) or that a2aflow does not
//! know.

use crate::error_code::{ErrorCode, Failure};
use crate::problem::Problem;
use crate::seconds;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How one subtask's dispatch is retried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RetryPolicy {
    /// Attempts in all, the first one included (1 = no retry).
    pub attempts: u32,
    /// The waits between attempts.
    #[serde(default)]
    pub backoff: Backoff,
    /// The failure codes that are retried; empty: the failures [`Failure::is_retryable`] names
    /// (a lost connection, a timeout, HTTP 429/502/503/504).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub on: Vec<String>,
}

/// The waits between attempts: `initial` before the second attempt, multiplied by `multiplier`
/// for each further one, at most `max`; `jitter` takes up to that fraction off each wait at
/// random, so that many tasks failing together do not retry in step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Backoff {
    /// The wait before the second attempt (seconds in JSON). Default 0.5 s.
    #[serde(default = "Backoff::default_initial", with = "seconds")]
    pub initial: Duration,
    /// The longest wait (seconds in JSON). Default 30 s.
    #[serde(default = "Backoff::default_max", with = "seconds")]
    pub max: Duration,
    /// The growth of the wait per attempt (≥ 1). Default 2.
    #[serde(default = "Backoff::default_multiplier")]
    pub multiplier: f64,
    /// The fraction of each wait that may be taken off at random (0 to 1). Default 0.
    #[serde(default)]
    pub jitter: f64,
}

impl Backoff {
    fn default_initial() -> Duration {
        Duration::from_millis(500)
    }
    fn default_max() -> Duration {
        Duration::from_secs(30)
    }
    fn default_multiplier() -> f64 {
        2.0
    }

    /// The wait after failed attempt `attempt` (from 1), before the next one; `unit` is a random
    /// number in `0.0..1.0` that scales the jitter (0 takes nothing off).
    pub fn delay(&self, attempt: u32, unit: f64) -> Duration {
        let exponent = i32::try_from(attempt.saturating_sub(1)).unwrap_or(i32::MAX);
        let grown = self.initial.as_secs_f64() * self.multiplier.powi(exponent);
        let capped = grown.min(self.max.as_secs_f64());
        let jitter = self.jitter.clamp(0.0, 1.0) * unit.clamp(0.0, 1.0);
        Duration::try_from_secs_f64(capped * (1.0 - jitter)).unwrap_or(self.max)
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: Self::default_initial(),
            max: Self::default_max(),
            multiplier: Self::default_multiplier(),
            jitter: 0.0,
        }
    }
}

/// False for the codes no new attempt can change, which a policy may not name in `on`: every
/// `workflow.*` code (the engine's own verdicts: validation, host callbacks, content, the
/// deadline, cancellation), `negotiation.*` (an exchange's outcome), `config.*`, `store.*` and
/// `delegation.*` (configuration, the journal and a policy refusal), `a2a.task_rejected` (the
/// agent refused the work) and `a2a.auth_required` (a gate, answered rather than retried).
pub fn retry_can_change(code: ErrorCode) -> bool {
    let name = code.as_str();
    let never = [
        "workflow.",
        "negotiation.",
        "config.",
        "store.",
        "delegation.",
    ];
    !(never.iter().any(|prefix| name.starts_with(prefix))
        || matches!(
            code,
            ErrorCode::A2aTaskRejected | ErrorCode::A2aAuthRequired
        ))
}

impl RetryPolicy {
    /// Whether a failed attempt is tried again under this policy (the attempt count aside): never
    /// a gate, nor a failure explicitly marked not retryable; otherwise the codes in `on`, or,
    /// when `on` is empty, [`Failure::is_retryable`].
    pub fn retries(&self, failure: &Failure) -> bool {
        if failure.gate().is_some() || failure.facts.retryable() == Some(false) {
            return false;
        }
        if self.on.is_empty() {
            return failure.is_retryable();
        }
        self.on.iter().any(|code| code == failure.code.as_str())
    }

    /// Every problem of the policy's values, each with its path below `path` (the policy's own
    /// JSON pointer): `workflow.invalid_retry` for attempts, waits, multiplier and jitter,
    /// `workflow.retry_code_refused` for a code in `on` that retrying cannot change or that
    /// a2aflow does not know.
    pub fn problems(&self, path: &str) -> Vec<Problem> {
        let mut out = Vec::new();
        let invalid = |at: &str, message: String| {
            Problem::new(
                ErrorCode::WorkflowInvalidRetry,
                format!("{path}{at}"),
                message,
            )
        };
        if self.attempts == 0 {
            out.push(invalid(
                "/attempts",
                "`attempts` is 0; it counts every attempt, the first included, so give at least 1"
                    .into(),
            ));
        }
        let b = &self.backoff;
        if b.initial > b.max {
            out.push(invalid(
                "/backoff/initial",
                format!(
                    "`backoff.initial` ({} s) is longer than `backoff.max` ({} s); make it at most the maximum",
                    b.initial.as_secs_f64(),
                    b.max.as_secs_f64()
                ),
            ));
        }
        if !(b.multiplier >= 1.0 && b.multiplier.is_finite()) {
            out.push(invalid(
                "/backoff/multiplier",
                format!(
                    "`backoff.multiplier` is {}; it must be a finite number of at least 1",
                    b.multiplier
                ),
            ));
        }
        if !(0.0..=1.0).contains(&b.jitter) {
            out.push(invalid(
                "/backoff/jitter",
                format!(
                    "`backoff.jitter` is {}; it is a fraction of the wait, from 0 to 1",
                    b.jitter
                ),
            ));
        }
        for (i, code) in self.on.iter().enumerate() {
            if let Some(p) = refused_code(code, &format!("{path}/on/{i}")) {
                out.push(p);
            }
        }
        out
    }
}

/// A `workflow.retry_code_refused` problem when `code` may not be retried on.
fn refused_code(code: &str, path: &str) -> Option<Problem> {
    let shown = crate::names::visible(code);
    let message = match ErrorCode::parse(code) {
        None => format!(
            "`on` names '{shown}', which is not an a2aflow error code; name codes from the registry (docs/error-codes.md), such as a2a.connection or a2a.task_failed"
        ),
        Some(c) if !retry_can_change(c) => format!(
            "`on` names '{shown}', which no new attempt can change (a validation, configuration, host, deadline or negotiation outcome, a rejection or a gate); remove it"
        ),
        Some(_) => return None,
    };
    Some(Problem::new(
        ErrorCode::WorkflowRetryCodeRefused,
        path,
        message,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backoff(initial_ms: u64, max_ms: u64, multiplier: f64, jitter: f64) -> Backoff {
        Backoff {
            initial: Duration::from_millis(initial_ms),
            max: Duration::from_millis(max_ms),
            multiplier,
            jitter,
        }
    }

    #[test]
    fn waits_grow_by_the_multiplier_up_to_the_maximum_and_jitter_takes_some_off() {
        let b = backoff(100, 350, 2.0, 0.5);
        let waits: Vec<u128> = (1..=4).map(|n| b.delay(n, 0.0).as_millis()).collect();
        assert_eq!(waits, [100, 200, 350, 350]);
        assert_eq!(b.delay(1, 1.0), Duration::from_millis(50));
        assert_eq!(b.delay(u32::MAX, 0.0), Duration::from_millis(350));
    }

    #[test]
    fn codes_that_no_attempt_can_change_are_refused() {
        for code in [
            "workflow.timeout",
            "workflow.invalid_document",
            "negotiation.aborted",
            "a2a.task_rejected",
            "a2a.auth_required",
            "config.invalid",
        ] {
            assert!(!retry_can_change(ErrorCode::parse(code).unwrap()), "{code}");
        }
        for code in ["a2a.connection", "a2a.task_failed", "a2a.http_status"] {
            assert!(retry_can_change(ErrorCode::parse(code).unwrap()), "{code}");
        }
    }

    #[test]
    fn problems_name_each_bad_value_with_its_path() {
        let policy = RetryPolicy {
            attempts: 0,
            backoff: backoff(500, 100, 0.5, 1.5),
            on: vec![
                "a2a.connection".into(),
                "negotiation.stopped".into(),
                "nope".into(),
            ],
        };
        let found: Vec<(ErrorCode, String)> = policy
            .problems("/r")
            .into_iter()
            .map(|p| (p.code, p.path))
            .collect();
        assert_eq!(
            found,
            [
                (ErrorCode::WorkflowInvalidRetry, "/r/attempts".to_owned()),
                (
                    ErrorCode::WorkflowInvalidRetry,
                    "/r/backoff/initial".to_owned()
                ),
                (
                    ErrorCode::WorkflowInvalidRetry,
                    "/r/backoff/multiplier".to_owned()
                ),
                (
                    ErrorCode::WorkflowInvalidRetry,
                    "/r/backoff/jitter".to_owned()
                ),
                (ErrorCode::WorkflowRetryCodeRefused, "/r/on/1".to_owned()),
                (ErrorCode::WorkflowRetryCodeRefused, "/r/on/2".to_owned()),
            ]
        );
    }

    #[test]
    fn a_policy_retries_the_listed_codes_or_else_the_transient_ones_never_a_gate() {
        let listed = RetryPolicy {
            attempts: 3,
            backoff: Backoff::default(),
            on: vec!["a2a.task_failed".into()],
        };
        let failed = Failure::new(ErrorCode::A2aTaskFailed, "x");
        assert!(listed.retries(&failed));
        assert!(!listed.retries(&failed.clone().with_retryable(false)));
        assert!(!listed.retries(&Failure::new(ErrorCode::A2aConnection, "x")));
        let transient = RetryPolicy {
            on: Vec::new(),
            ..listed
        };
        assert!(transient.retries(&Failure::new(ErrorCode::A2aConnection, "x")));
        assert!(!transient.retries(&failed));
        let gate = Failure::new(ErrorCode::A2aAuthRequired, "x").with_retryable(true);
        assert!(!transient.retries(&gate.with_gate(crate::Gate::AuthRequired)));
    }
}
