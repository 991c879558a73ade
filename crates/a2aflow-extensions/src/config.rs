//! Settings of the extension sender: how long its operations may wait ([`ExtensionConfig`],
//! [`ResubscribePolicy`]). Its channels come from the wire crate's door
//! ([`a2aflow_protocol::ChannelFactory`]).

use std::time::Duration;

use a2aflow_model::{ErrorCode, Failure};

pub use a2aflow_protocol::ResubscribePolicy;

/// Bounds of the sender's operations, validated at construction.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExtensionConfig {
    /// Deadline of one Authorization-T operation, send to final result. Default 60 s.
    pub authorization_timeout: Duration,
    /// GetTask poll interval while an authorization is SUBMITTED/WORKING (at most 250 ms, at
    /// least 10 ms). Default 250 ms.
    pub poll_interval: Duration,
    /// Deadline of a notification's first protocol result. Default 300 s.
    pub acknowledgement_timeout: Duration,
    /// Bound of the best-effort CancelTask on close. Default 3 s.
    pub cancel_timeout: Duration,
    /// How dropped notification streams are re-opened.
    pub resubscribe: ResubscribePolicy,
}

impl Default for ExtensionConfig {
    fn default() -> Self {
        ExtensionConfig {
            authorization_timeout: Duration::from_secs(60),
            poll_interval: Duration::from_millis(250),
            acknowledgement_timeout: Duration::from_secs(300),
            cancel_timeout: Duration::from_secs(3),
            resubscribe: ResubscribePolicy::default(),
        }
    }
}

fn invalid(message: &str) -> Failure {
    Failure::new(ErrorCode::ConfigInvalid, message)
}

impl ExtensionConfig {
    /// Checks every bound; the first violation is a `config.invalid` failure.
    pub fn validate(&self) -> Result<(), Failure> {
        if self.authorization_timeout.is_zero() {
            return Err(invalid("authorization_timeout must be positive"));
        }
        if self.poll_interval < Duration::from_millis(10)
            || self.poll_interval > Duration::from_millis(250)
        {
            return Err(invalid("poll_interval must be between 10 ms and 250 ms"));
        }
        if self.acknowledgement_timeout.is_zero() {
            return Err(invalid("acknowledgement_timeout must be positive"));
        }
        if self.cancel_timeout.is_zero() {
            return Err(invalid("cancel_timeout must be positive"));
        }
        if self.resubscribe.max_backoff < self.resubscribe.backoff {
            return Err(invalid("resubscribe max_backoff must not be below backoff"));
        }
        Ok(())
    }

    /// With another authorization deadline.
    pub fn with_authorization_timeout(mut self, d: Duration) -> Self {
        self.authorization_timeout = d;
        self
    }

    /// With another poll interval.
    pub fn with_poll_interval(mut self, d: Duration) -> Self {
        self.poll_interval = d;
        self
    }

    /// With another acknowledgement deadline.
    pub fn with_acknowledgement_timeout(mut self, d: Duration) -> Self {
        self.acknowledgement_timeout = d;
        self
    }

    /// With another CancelTask bound.
    pub fn with_cancel_timeout(mut self, d: Duration) -> Self {
        self.cancel_timeout = d;
        self
    }

    /// With another resubscribe policy.
    pub fn with_resubscribe(mut self, policy: ResubscribePolicy) -> Self {
        self.resubscribe = policy;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_validated() {
        assert!(ExtensionConfig::default().validate().is_ok());
        let e = ExtensionConfig::default()
            .with_acknowledgement_timeout(Duration::ZERO)
            .validate()
            .unwrap_err();
        assert_eq!(e.code, "config.invalid");
        assert_eq!(e.message, "acknowledgement_timeout must be positive");
        assert!(
            ExtensionConfig::default()
                .with_poll_interval(Duration::from_millis(251))
                .validate()
                .is_err()
        );
        assert!(
            ExtensionConfig::default()
                .with_authorization_timeout(Duration::ZERO)
                .validate()
                .is_err()
        );
    }
}
