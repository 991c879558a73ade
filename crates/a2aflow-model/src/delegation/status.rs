//! The seed's status table: every execution status a2aflow writes, and the A2A task state it
//! maps to. An unmapped status is an error, never a default: a new status is a decision.

use super::error::DelegationError;
use a2a::TaskState;

macro_rules! status_table {
    ($( $(#[doc = $doc:literal])* $variant:ident => $name:literal => $state:ident; )*) => {
        /// An execution status as the executor writes it (`SUCCEEDED`, `WAITING_FOR_HUMAN`, …).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum ExecutionStatus {
            $( $(#[doc = $doc])* $variant, )*
        }

        impl ExecutionStatus {
            /// Every status of the table, in the seed's order.
            pub const ALL: &'static [ExecutionStatus] = &[ $( ExecutionStatus::$variant, )* ];

            /// The status string (`TIMED_OUT`).
            pub const fn as_str(self) -> &'static str {
                match self { $( ExecutionStatus::$variant => $name, )* }
            }

            /// Parses an exact status string; `None` for anything outside the table.
            pub fn parse(status: &str) -> Option<ExecutionStatus> {
                match status { $( $name => Some(ExecutionStatus::$variant), )* _ => None }
            }

            /// The A2A task state this status maps to: the table itself.
            pub fn task_state(self) -> TaskState {
                match self { $( ExecutionStatus::$variant => TaskState::$state, )* }
            }
        }
    };
}

status_table! {
    /// Accepted, queued, nothing running.
    Pending => "PENDING" => Submitted;
    /// Container coming up; no model turn has run.
    Initializing => "INITIALIZING" => Submitted;
    /// Runtime coming up; no model turn has run.
    Starting => "STARTING" => Submitted;
    /// The workflow is working.
    Running => "RUNNING" => Working;
    /// A parked run being restarted is working again.
    Resuming => "RESUMING" => Working;
    /// Alive, waiting for an answer from a person. Interrupted, not terminal.
    WaitingForHuman => "WAITING_FOR_HUMAN" => InputRequired;
    /// Alive, waiting for the workflows it started. Nobody outside has to act.
    WaitingForChildren => "WAITING_FOR_CHILDREN" => Working;
    /// Terminal, the work was done.
    Succeeded => "SUCCEEDED" => Completed;
    /// Terminal, the work was attempted and ended badly.
    Failed => "FAILED" => Failed;
    /// Nobody asked for the clock to run out.
    Timeout => "TIMEOUT" => Failed;
    /// Same case, the other spelling.
    TimedOut => "TIMED_OUT" => Failed;
    /// Infrastructure killed it; no one requested that.
    Aborted => "ABORTED" => Failed;
    /// Someone asked for the stop.
    Stopped => "STOPPED" => Canceled;
    /// Same case, the double-l spelling.
    Cancelled => "CANCELLED" => Canceled;
    /// Same case, the single-l spelling.
    Canceled => "CANCELED" => Canceled;
    /// Policy declined the call; no child was created (never stored on an execution).
    Refused => "REFUSED" => Rejected;
}

impl std::fmt::Display for ExecutionStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Maps an execution status string to its A2A task state, exactly as the seed's table says.
///
/// # Errors
/// [`DelegationError::UnmappedStatus`] (`delegation.unmapped_status`) for any string outside the
/// table — including other casings and surrounding whitespace. There is no default.
pub fn map_status(status: &str) -> Result<TaskState, DelegationError> {
    ExecutionStatus::parse(status)
        .map(ExecutionStatus::task_state)
        .ok_or_else(|| DelegationError::UnmappedStatus {
            status: status.to_owned(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    #[test]
    fn every_status_round_trips_and_maps() {
        assert_eq!(ExecutionStatus::ALL.len(), 16);
        for &status in ExecutionStatus::ALL {
            assert_eq!(ExecutionStatus::parse(status.as_str()), Some(status));
            assert_eq!(map_status(status.as_str()).ok(), Some(status.task_state()));
        }
    }

    #[test]
    fn near_misses_are_unmapped() {
        for bad in [
            "succeeded",
            " SUCCEEDED",
            "DONE",
            "",
            "TASK_STATE_COMPLETED",
        ] {
            let err = map_status(bad).err();
            assert_eq!(
                err.as_ref().map(DelegationError::code),
                Some(ErrorCode::DelegationUnmappedStatus),
                "{bad:?}"
            );
        }
    }
}
