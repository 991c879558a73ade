//! Runs in flight per caller: a count per caller name, taken when a run starts and given back
//! when its driver ends.

use crate::auth::Who;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// The runs each caller has in flight, against one limit for every caller.
#[derive(Debug)]
pub(crate) struct CallerQuota {
    limit: usize,
    counts: Arc<Mutex<HashMap<Who, usize>>>,
}

impl CallerQuota {
    /// At most `limit` runs in flight per caller.
    pub(crate) fn new(limit: usize) -> Self {
        CallerQuota {
            limit,
            counts: Arc::default(),
        }
    }

    /// The limit.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// A slot for one more run of `who`, `None` when it already has `limit` in flight.
    pub(crate) fn take(&self, who: &Who) -> Option<QuotaSlot> {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        let count = counts.entry(who.clone()).or_insert(0);
        if *count >= self.limit {
            return None;
        }
        *count += 1;
        Some(QuotaSlot {
            who: who.clone(),
            counts: self.counts.clone(),
        })
    }
}

/// One run of a caller in flight, counted until dropped.
#[derive(Debug)]
pub(crate) struct QuotaSlot {
    who: Who,
    counts: Arc<Mutex<HashMap<Who, usize>>>,
}

impl Drop for QuotaSlot {
    fn drop(&mut self) {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = counts.get_mut(&self.who) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                counts.remove(&self.who);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_caller_has_its_own_count_and_a_dropped_slot_frees_one() {
        let quota = CallerQuota::new(1);
        let alice = Who(Some("alice".into()));
        let bob = Who(Some("bob".into()));
        let first = quota.take(&alice);
        assert!(first.is_some());
        assert!(quota.take(&alice).is_none());
        assert!(quota.take(&bob).is_some());
        drop(first);
        assert!(quota.take(&alice).is_some());
    }
}
