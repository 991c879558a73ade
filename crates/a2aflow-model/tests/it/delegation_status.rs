//! The seed's status table row by row, the unmapped-status error, the refusal vocabulary and
//! the `execution_not_found` rule.

use a2aflow_model::ErrorCode;
use a2aflow_model::a2a::TaskState;
use a2aflow_model::delegation::{
    DelegationError, ExecutionStatus, Refusal, RefusalReason, authorize_read, execution_not_found,
    map_status,
};

/// The seed's table, written out independently of the code under test.
const TABLE: &[(&str, TaskState)] = &[
    ("PENDING", TaskState::Submitted),
    ("INITIALIZING", TaskState::Submitted),
    ("STARTING", TaskState::Submitted),
    ("RUNNING", TaskState::Working),
    ("RESUMING", TaskState::Working),
    ("WAITING_FOR_HUMAN", TaskState::InputRequired),
    ("WAITING_FOR_CHILDREN", TaskState::Working),
    ("SUCCEEDED", TaskState::Completed),
    ("FAILED", TaskState::Failed),
    ("TIMEOUT", TaskState::Failed),
    ("TIMED_OUT", TaskState::Failed),
    ("ABORTED", TaskState::Failed),
    ("STOPPED", TaskState::Canceled),
    ("CANCELLED", TaskState::Canceled),
    ("CANCELED", TaskState::Canceled),
    ("REFUSED", TaskState::Rejected),
];

#[test]
fn every_row_of_the_table_maps() {
    for (status, state) in TABLE {
        assert_eq!(map_status(status).as_ref(), Ok(state), "{status}");
    }
    let listed: Vec<&str> = ExecutionStatus::ALL.iter().map(|s| s.as_str()).collect();
    let expected: Vec<&str> = TABLE.iter().map(|(s, _)| *s).collect();
    assert_eq!(
        listed, expected,
        "the code has exactly the seed's rows, in order"
    );
}

#[test]
fn an_unmapped_status_is_an_error_never_a_default() {
    for status in [
        "QUEUED",
        "succeeded",
        "Running",
        "REFUSED ",
        "",
        "TASK_STATE_WORKING",
    ] {
        let err = map_status(status).unwrap_err();
        assert_eq!(err.code(), ErrorCode::DelegationUnmappedStatus);
        assert_eq!(
            err,
            DelegationError::UnmappedStatus {
                status: status.to_owned()
            }
        );
        let failure = err.to_failure();
        assert_eq!(failure.code, "delegation.unmapped_status");
        assert_eq!(failure.details["status"], status);
    }
}

#[test]
fn refusal_reasons_are_exactly_the_seeds() {
    let reasons: Vec<&str> = RefusalReason::ALL.iter().map(|r| r.as_str()).collect();
    assert_eq!(
        reasons,
        [
            "flow_not_found",
            "flow_not_callable",
            "tool_not_allowed",
            "firewall_denied",
            "depth_exceeded",
            "cycle_detected",
            "fanout_exceeded",
            "budget_exceeded",
            "execution_not_found",
        ]
    );
    let refused: DelegationError = Refusal::new(
        RefusalReason::CycleDetected,
        "flow a is already an ancestor",
    )
    .into();
    assert_eq!(refused.code(), ErrorCode::DelegationRefused);
    let failure = refused.to_failure();
    assert_eq!(failure.code, "delegation.refused");
    assert_eq!(failure.details["refusalReason"], "cycle_detected");
    assert_eq!(failure.details["message"], "flow a is already an ancestor");
}

#[test]
fn execution_not_found_has_one_wording_whatever_the_cause() {
    let caller = "exec-parent";
    let allowed_own = authorize_read(caller, caller, Some(["root"]));
    let allowed_child = authorize_read(caller, "exec-child", Some(["exec-parent", "root"]));
    let allowed_grandchild = authorize_read(caller, "exec-g", Some(["exec-child", "exec-parent"]));
    assert_eq!(allowed_own, Ok(()));
    assert_eq!(allowed_child, Ok(()));
    assert_eq!(allowed_grandchild, Ok(()));

    let never_existed = authorize_read(caller, "no-such-exec", None::<[&str; 0]>);
    let other_account = authorize_read(caller, "exec-of-account-7", None::<Vec<String>>);
    let unrelated_sibling = authorize_read(caller, "exec-sibling", Some(vec!["root".to_owned()]));
    let own_ancestor = authorize_read(caller, "root", Some(Vec::<String>::new()));
    let refusals = [
        never_existed,
        other_account,
        unrelated_sibling,
        own_ancestor,
    ]
    .map(|r| r.unwrap_err());
    for refusal in &refusals {
        assert_eq!(refusal, &execution_not_found());
        assert_eq!(refusal.reason(), RefusalReason::ExecutionNotFound);
    }
    let message = execution_not_found().message().to_owned();
    for cause in ["account", "sibling", "never", "no-such", "exec-"] {
        assert!(
            !message.contains(cause),
            "the wording names a cause: {message}"
        );
    }
    assert_eq!(
        Refusal::new(RefusalReason::ExecutionNotFound, "it is in account 7").message(),
        message
    );
}
