//! A task's binding (the protocol its requests went on) reaches the run's task facts: the
//! default preference takes JSON-RPC, a configuration that allows only HTTP+JSON takes that.

use crate::cdp::HANG;
use crate::support::{Fixture, http_get};
use a2aflow::EngineConfig;
use a2aflow::config::BindingName;
use serde_json::Value;

const ONE: &str = r#"{"id": "one", "name": "One step", "steps": [
  {"name": "only", "subtasks": [{"agent": "alpha", "description": "task hello"}]}
]}"#;

async fn binding_of(f: &Fixture, id: &str) -> Value {
    let auth = format!("Bearer {}", f.token());
    let (status, body) = http_get(
        &f.addr(),
        &format!("/api/runs/{id}"),
        &[("Authorization", &auth)],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let run: Value = serde_json::from_str(&body).unwrap();
    let task = run["tasks"][0]["localTaskId"].as_str().unwrap().to_owned();
    run["taskFacts"][task]["binding"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_task_facts_name_the_binding_each_run_went_on() {
    let f = Fixture::start().await;
    let default = f.start_run("by-default", ONE);
    assert!(
        tokio::time::timeout(HANG, default)
            .await
            .unwrap()
            .unwrap()
            .success
    );
    let rest_only = EngineConfig {
        bindings: vec![BindingName::Rest],
        ..EngineConfig::default()
    };
    let rest = f.start_run_with("rest-only", ONE, rest_only);
    assert!(
        tokio::time::timeout(HANG, rest)
            .await
            .unwrap()
            .unwrap()
            .success
    );
    assert_eq!(binding_of(&f, "by-default").await, "JSONRPC");
    assert_eq!(binding_of(&f, "rest-only").await, "HTTP+JSON");
}
