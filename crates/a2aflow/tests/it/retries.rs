//! Retries: the default policy of `[retry]`, and through `execute_workflow` against the testkit
//! (its `flaky N` behaviour fails until N earlier attempts are referenced), every attempt in the
//! same context, `referenceTaskIds` chaining them, attempts bounded by the policy and the
//! deadline.

use a2aflow::EngineConfig;
use std::time::Duration;

#[test]
fn the_default_policy_comes_from_toml_and_json_with_the_workflow_shape() {
    let toml = EngineConfig::from_toml_str(
        "[retry]\nattempts = 3\non = [\"a2a.task_failed\"]\n[retry.backoff]\ninitial = 0.2\nmax = 1\n",
    )
    .unwrap();
    let json = EngineConfig::from_json_str(
        r#"{"retry": {"attempts": 3, "on": ["a2a.task_failed"], "backoff": {"initial": 0.2, "max": 1}}}"#,
    )
    .unwrap();
    let policy = toml.retry_policy().unwrap().unwrap();
    assert_eq!(json.retry_policy().unwrap(), Some(policy.clone()));
    assert_eq!(policy.attempts, 3);
    assert_eq!(policy.backoff.initial, Duration::from_millis(200));
    assert_eq!(policy.backoff.max, Duration::from_secs(1));
    assert_eq!(policy.backoff.multiplier, 2.0);
    assert_eq!(EngineConfig::default().retry_policy().unwrap(), None);
}

#[test]
fn a_default_policy_naming_a_code_no_attempt_can_change_is_config_invalid() {
    let err = EngineConfig::from_toml_str("[retry]\nattempts = 2\non = [\"a2a.task_rejected\"]\n")
        .unwrap_err();
    assert_eq!(err.code, "config.invalid", "{err}");
    assert!(err.message.contains("retry.on.0"), "{err}");
    assert!(err.message.contains("a2a.task_rejected"), "{err}");
    let err = EngineConfig::from_toml_str("[retry]\nattempts = 2\nfactor = 2\n").unwrap_err();
    assert_eq!(err.code, "config.invalid", "{err}");
}
