//! Arbitrary JSON through the delegation-record validators (`schema` feature):
//! `a2aflow_model::delegation::validate_delegation_request` and `validate_delegation_task`.
//!
//! Checks: no panic; a rejection is `delegation.invalid_record` with at least one violation,
//! each violation path is empty or a JSON pointer, and the failure converts; validation is
//! deterministic (a second call gives the same verdict).
#![no_main]

use a2aflow_model::ErrorCode;
use a2aflow_model::delegation::{
    DelegationError, validate_delegation_request, validate_delegation_task,
};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn check(result: &Result<(), DelegationError>) {
    if let Err(e) = result {
        assert_eq!(e.code(), ErrorCode::DelegationInvalidRecord);
        assert!(!e.violations().is_empty(), "a rejection without violations");
        for v in e.violations() {
            assert!(
                v.instance_path.is_empty() || v.instance_path.starts_with('/'),
                "violation path {:?} is not a JSON pointer",
                v.instance_path
            );
        }
        let failure = e.to_failure();
        assert_eq!(failure.code, "delegation.invalid_record");
        let _ = e.to_string();
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(record) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let request = validate_delegation_request(&record);
    let task = validate_delegation_task(&record);
    check(&request);
    check(&task);
    assert_eq!(validate_delegation_request(&record), request);
    assert_eq!(validate_delegation_task(&record), task);
});
