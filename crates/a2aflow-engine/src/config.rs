//! Settings of the engine client, validated at construction.

use a2aflow_model::{ErrorCode, Failure};
use a2aflow_protocol::{Limits, ResubscribePolicy};
use std::time::Duration;

/// The smallest allowed poll interval.
pub const MIN_POLL_INTERVAL: Duration = Duration::from_millis(100);

/// How the engine client waits, negotiates and cleans up.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientConfig {
    /// Replies the host may send per logical task (independent of `maxRounds`). Default 3, ≥ 1.
    pub max_negotiation_exchanges: u32,
    /// First GetTask poll delay; doubles per unchanged poll. Default 250 ms, ≥ 100 ms.
    pub poll_interval: Duration,
    /// Upper bound of the poll backoff. Default 5 s, ≥ `poll_interval`.
    pub max_poll_interval: Duration,
    /// Bound of one best-effort CancelTask. Default 3 s (below the kernel's cleanup grace).
    pub cancel_timeout: Duration,
    /// How a dropped stream is re-opened (SubscribeToTask) before falling back to polling.
    /// Default: 3 attempts, no wait ([`ResubscribePolicy::immediate`]).
    pub resubscribe: ResubscribePolicy,
    /// Non-streaming sends ask the agent to return at once (`returnImmediately`) and then poll;
    /// the default (false) blocks until the task is final or interrupted.
    pub return_immediately: bool,
    /// Cancel the remote task when a gate ends the interaction (AUTH_REQUIRED, INPUT_REQUIRED
    /// without Negotiation-T). Default false: the task stays open so the host can resolve the
    /// gate and [`attach`](crate::A2aEngineClient::attach) again by context id.
    pub cancel_gated_tasks: bool,
    /// Largest assembled artifact of one task ([`Limits::max_artifact`]); past it the
    /// interaction fails with `a2a.response_too_large`. Default 32 MiB, ≥ 1.
    pub max_artifact_bytes: usize,
    /// Largest evidence of one task ([`Limits::max_task_evidence`]); past it the interaction
    /// fails with `a2a.response_too_large`. Default 64 MiB, ≥ 1.
    pub max_task_evidence_bytes: usize,
    /// On re-attach, how long to wait before the agent is asked once more for a journaled send
    /// it does not list, when that send may be resent: a driver that stopped just after writing
    /// it (its lease about to lapse) may have left it on its way in, not yet handled by the
    /// agent. Default 1 s; zero resends after the first look.
    pub resend_grace: Duration,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            max_negotiation_exchanges: 3,
            poll_interval: Duration::from_millis(250),
            max_poll_interval: Duration::from_secs(5),
            cancel_timeout: Duration::from_secs(3),
            resubscribe: ResubscribePolicy::immediate(3),
            return_immediately: false,
            cancel_gated_tasks: false,
            max_artifact_bytes: Limits::DEFAULT_MAX_ARTIFACT,
            max_task_evidence_bytes: Limits::DEFAULT_MAX_TASK_EVIDENCE,
            resend_grace: Duration::from_secs(1),
        }
    }
}

fn invalid(message: &str) -> Failure {
    Failure::new(ErrorCode::ConfigInvalid, message)
}

impl ClientConfig {
    /// Checks every bound; the first violation is a `config.invalid` failure.
    pub fn validate(&self) -> Result<(), Failure> {
        if self.max_negotiation_exchanges == 0 {
            return Err(invalid("Negotiation exchange budget must be positive"));
        }
        if self.poll_interval < MIN_POLL_INTERVAL {
            return Err(invalid("Task poll interval must be at least 100 ms"));
        }
        if self.max_poll_interval < self.poll_interval {
            return Err(invalid(
                "Maximum poll interval must not be below the poll interval",
            ));
        }
        if self.cancel_timeout.is_zero() {
            return Err(invalid("Cancel timeout must be positive"));
        }
        if self.resubscribe.max_backoff < self.resubscribe.backoff {
            return Err(invalid(
                "Resubscribe max_backoff must not be below its backoff",
            ));
        }
        if self.max_artifact_bytes == 0 || self.max_task_evidence_bytes == 0 {
            return Err(invalid(
                "Artifact and task evidence size limits must be positive",
            ));
        }
        Ok(())
    }

    /// With another negotiation exchange budget.
    pub fn with_max_negotiation_exchanges(mut self, n: u32) -> Self {
        self.max_negotiation_exchanges = n;
        self
    }

    /// With another first poll interval (the maximum is raised to it when below).
    pub fn with_poll_interval(mut self, d: Duration) -> Self {
        self.poll_interval = d;
        self.max_poll_interval = self.max_poll_interval.max(d);
        self
    }

    /// With another poll backoff bound.
    pub fn with_max_poll_interval(mut self, d: Duration) -> Self {
        self.max_poll_interval = d;
        self
    }

    /// With another CancelTask bound.
    pub fn with_cancel_timeout(mut self, d: Duration) -> Self {
        self.cancel_timeout = d;
        self
    }

    /// With another resubscribe budget (the policy's `max_attempts`).
    pub fn with_max_resubscribes(mut self, n: u32) -> Self {
        self.resubscribe.max_attempts = n;
        self
    }

    /// With another resubscribe policy.
    pub fn with_resubscribe(mut self, policy: ResubscribePolicy) -> Self {
        self.resubscribe = policy;
        self
    }

    /// With another wait before a journaled send the agent does not list is looked for once
    /// more and then resent ([`ClientConfig::resend_grace`]).
    pub fn with_resend_grace(mut self, d: Duration) -> Self {
        self.resend_grace = d;
        self
    }

    /// Non-streaming sends return at once and are polled.
    pub fn with_return_immediately(mut self, on: bool) -> Self {
        self.return_immediately = on;
        self
    }

    /// With the assembly caps of `limits` (`max_artifact`, `max_task_evidence`); its transport
    /// limits are the transport's business and are not read here.
    pub fn with_limits(mut self, limits: &Limits) -> Self {
        self.max_artifact_bytes = limits.max_artifact;
        self.max_task_evidence_bytes = limits.max_task_evidence;
        self
    }

    /// Cancel remote tasks that end in a gate.
    pub fn with_cancel_gated_tasks(mut self, on: bool) -> Self {
        self.cancel_gated_tasks = on;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s_task_10_bounds_are_validated() {
        assert!(ClientConfig::default().validate().is_ok());
        let too_fast = ClientConfig::default().with_poll_interval(Duration::from_millis(99));
        let e = too_fast.validate().unwrap_err();
        assert!(e.is(ErrorCode::ConfigInvalid));
        assert!(e.message.contains("100 ms"));
        let ok = ClientConfig::default().with_poll_interval(Duration::from_millis(100));
        assert!(ok.validate().is_ok());
        let e = ClientConfig::default()
            .with_max_negotiation_exchanges(0)
            .validate()
            .unwrap_err();
        assert_eq!(e.message, "Negotiation exchange budget must be positive");
        assert!(
            ClientConfig::default()
                .with_cancel_timeout(Duration::ZERO)
                .validate()
                .is_err()
        );
        let raised = ClientConfig::default().with_poll_interval(Duration::from_secs(9));
        assert_eq!(raised.max_poll_interval, Duration::from_secs(9));
    }
}
