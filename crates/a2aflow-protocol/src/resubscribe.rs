//! How a dropped stream is re-opened: the one policy the engine client and the extension sender
//! share.

use std::time::Duration;

/// How a dropped stream is re-opened with `SubscribeToTask`: by the extension sender's
/// notification subscriptions and by the engine client (which falls back to polling when the
/// attempts are spent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResubscribePolicy {
    /// Attempts in a row before the subscription fails (0: never resubscribe). The count starts
    /// again after a resubscribed stream delivers an event. Default 3.
    pub max_attempts: u32,
    /// Wait before the first attempt; doubles per failed attempt. Default 200 ms.
    pub backoff: Duration,
    /// Upper bound of the wait. Default 5 s.
    pub max_backoff: Duration,
}

impl Default for ResubscribePolicy {
    fn default() -> Self {
        ResubscribePolicy {
            max_attempts: 3,
            backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(5),
        }
    }
}

impl ResubscribePolicy {
    /// A policy of `max_attempts` attempts starting at `backoff`.
    pub fn new(max_attempts: u32, backoff: Duration) -> Self {
        ResubscribePolicy {
            max_attempts,
            backoff,
            max_backoff: Duration::from_secs(5).max(backoff),
        }
    }

    /// `max_attempts` attempts without waiting (the engine client's default: 3).
    pub fn immediate(max_attempts: u32) -> Self {
        ResubscribePolicy {
            max_attempts,
            backoff: Duration::ZERO,
            max_backoff: Duration::ZERO,
        }
    }

    /// The wait before attempt `attempt` (1-based).
    pub fn delay(&self, attempt: u32) -> Duration {
        let factor = 1u32 << attempt.saturating_sub(1).min(16);
        self.backoff.saturating_mul(factor).min(self.max_backoff)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resubscribe_backoff_doubles_up_to_its_bound() {
        let p = ResubscribePolicy::new(5, Duration::from_millis(100));
        assert_eq!(p.delay(1), Duration::from_millis(100));
        assert_eq!(p.delay(2), Duration::from_millis(200));
        assert_eq!(p.delay(3), Duration::from_millis(400));
        assert_eq!(p.delay(40), Duration::from_secs(5));
    }

    #[test]
    fn an_immediate_policy_never_waits() {
        let p = ResubscribePolicy::immediate(3);
        assert_eq!(
            (p.max_attempts, p.delay(1), p.delay(3)),
            (3, Duration::ZERO, Duration::ZERO)
        );
    }
}
