//! The refusal vocabulary: why a delegation (or a read of an execution) was declined.

use super::error::DelegationError;

macro_rules! refusal_reasons {
    ($( $variant:ident => $name:literal, $meaning:literal; )*) => {
        /// Why the delegation policy declined a call, exactly as the seed lists them.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum RefusalReason {
            $( #[doc = $meaning] $variant, )*
        }

        impl RefusalReason {
            /// Every reason, in the seed's order.
            pub const ALL: &'static [RefusalReason] = &[ $( RefusalReason::$variant, )* ];

            /// The stable string carried in `a2aflow/refusalReason` (`depth_exceeded`).
            pub const fn as_str(self) -> &'static str {
                match self { $( RefusalReason::$variant => $name, )* }
            }

            /// What the reason means, for documentation.
            pub const fn meaning(self) -> &'static str {
                match self { $( RefusalReason::$variant => $meaning, )* }
            }

            /// Parses a reason string; `None` outside the vocabulary.
            pub fn parse(reason: &str) -> Option<RefusalReason> {
                match reason { $( $name => Some(RefusalReason::$variant), )* _ => None }
            }
        }
    };
}

refusal_reasons! {
    FlowNotFound => "flow_not_found",
        "No workflow with that id in the caller's catalog.";
    FlowNotCallable => "flow_not_callable",
        "The target workflow does not list the caller in its callable-by allowlist.";
    ToolNotAllowed => "tool_not_allowed",
        "The calling workflow is not allowed to delegate at all.";
    FirewallDenied => "firewall_denied",
        "The tool policy firewall denied this specific call.";
    DepthExceeded => "depth_exceeded",
        "The child would sit deeper than the delegation depth cap.";
    CycleDetected => "cycle_detected",
        "The target already appears in this call's ancestry.";
    FanoutExceeded => "fanout_exceeded",
        "The parent has already started as many children as it may.";
    BudgetExceeded => "budget_exceeded",
        "The remaining budget cannot cover another child.";
    ExecutionNotFound => "execution_not_found",
        "The execution asked for is not the caller's own or one of its descendants; every such read gets these same words, whatever the cause.";
}

impl std::fmt::Display for RefusalReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The one wording of an `execution_not_found` refusal. It names no cause on purpose, so a
/// refusal cannot be used to learn which executions exist.
const EXECUTION_NOT_FOUND_MESSAGE: &str =
    "execution not found: it is not the caller's own execution or one of its descendants";

/// A refusal: the reason and a message a person can act on.
///
/// The message of an [`RefusalReason::ExecutionNotFound`] refusal is always the same words
/// (see [`execution_not_found`]); the constructor enforces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    reason: RefusalReason,
    message: String,
}

impl Refusal {
    /// A refusal for `reason` with `message`. For [`RefusalReason::ExecutionNotFound`] the
    /// message is ignored and replaced by the one fixed wording.
    pub fn new(reason: RefusalReason, message: impl Into<String>) -> Self {
        match reason {
            RefusalReason::ExecutionNotFound => execution_not_found(),
            _ => Refusal {
                reason,
                message: message.into(),
            },
        }
    }

    /// Why the call was declined.
    pub fn reason(&self) -> RefusalReason {
        self.reason
    }

    /// What happened, for a person.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.reason, self.message)
    }
}

impl From<Refusal> for DelegationError {
    fn from(refusal: Refusal) -> Self {
        DelegationError::Refused(refusal)
    }
}

/// The refusal for every read of an execution that is not the caller's own or a descendant:
/// another account's, an unrelated one, one that never existed — all get these identical words.
/// It takes no argument, so no cause can leak into it.
pub fn execution_not_found() -> Refusal {
    Refusal {
        reason: RefusalReason::ExecutionNotFound,
        message: EXECUTION_NOT_FOUND_MESSAGE.to_owned(),
    }
}

/// Decides whether `caller` may read `target`.
///
/// `target_ancestors` is the target execution's ancestry (its parent, grandparent, … up to the
/// root) as the caller's own store knows it, or `None` when the store has no such execution.
/// A read is allowed when the target is the caller itself or the caller is one of its
/// ancestors; every other case — whatever the cause — is [`execution_not_found`].
///
/// # Errors
/// The [`execution_not_found`] refusal.
pub fn authorize_read<I, S>(
    caller: &str,
    target: &str,
    target_ancestors: Option<I>,
) -> Result<(), Refusal>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let Some(ancestors) = target_ancestors else {
        return Err(execution_not_found());
    };
    if target == caller || ancestors.into_iter().any(|a| a.as_ref() == caller) {
        Ok(())
    } else {
        Err(execution_not_found())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_round_trip() {
        assert_eq!(RefusalReason::ALL.len(), 9);
        for &r in RefusalReason::ALL {
            assert_eq!(RefusalReason::parse(r.as_str()), Some(r));
            assert!(!r.meaning().is_empty());
        }
        assert_eq!(RefusalReason::parse("Depth_Exceeded"), None);
    }

    #[test]
    fn execution_not_found_wording_cannot_be_overridden() {
        let custom = Refusal::new(RefusalReason::ExecutionNotFound, "exists in account 7");
        assert_eq!(custom, execution_not_found());
        assert_eq!(custom.message(), EXECUTION_NOT_FOUND_MESSAGE);
        let other = Refusal::new(RefusalReason::DepthExceeded, "depth 5 > cap 4");
        assert_eq!(other.message(), "depth 5 > cap 4");
    }
}
