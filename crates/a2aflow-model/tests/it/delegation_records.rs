//! The builders: they reproduce the seed's three records, never emit `history`, an empty
//! artifact or an execution id at request time, report bad input as a typed error, and every
//! record they return validates against the schemas.

use a2aflow_model::ErrorCode;
use a2aflow_model::a2a::{Role, TaskState};
use a2aflow_model::delegation::{
    ChildExecution, DelegationError, DelegationRequest, ExecutionStatus, FlowRef, KeyScope,
    Lineage, MetadataKey, REFUSED_TASK_REQUIRED, REQUEST_REQUIRED, RefusalReason,
    RefusedDelegation, TASK_REQUIRED, result_artifact, result_data,
};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

const ROOT: &str = "3f1a2b3c-4d5e-6f70-8192-a3b4c5d6e7f8";
const CHILD: &str = "5c6d7e8f-9a0b-4c1d-8e2f-3a4b5c6d7e8f";
const FLOW: &str = "9a8b7c6d-5e4f-4031-9283-1a2b3c4d5e6f";
/// 2026-09-15T10:04:11Z, the seed's timestamp.
const SEED_SECONDS: u64 = 1_789_466_651;

fn seed_time() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(SEED_SECONDS)
}

fn flow(name: Option<&str>) -> FlowRef {
    FlowRef {
        flow_id: FLOW.into(),
        flow_name: name.map(str::to_owned),
    }
}

fn seed_lineage(depth: u32) -> Lineage {
    Lineage {
        parent_execution_id: ROOT.into(),
        root_execution_id: Some(ROOT.into()),
        depth,
    }
}

fn seed_request() -> DelegationRequest {
    DelegationRequest {
        flow: flow(Some("Repository review")),
        lineage: seed_lineage(1),
        instruction: Some("Review the repository and report findings.".into()),
        inputs: Some(json!({"repository": "example/widget", "since": "2026-09-01"})),
        console_url: None,
    }
}

fn seed_child() -> ChildExecution {
    ChildExecution {
        execution_id: CHILD.into(),
        flow: flow(Some("Repository review")),
        lineage: seed_lineage(1),
        status: ExecutionStatus::Succeeded,
        timestamp: seed_time(),
        result: Some(json!({"verdict": "pass", "findings": []})),
        cost: Some(0.42),
        tokens: Some(18422),
        console_url: Some(format!("/console/flows/executions/{CHILD}")),
    }
}

fn seed_refusal() -> RefusedDelegation {
    RefusedDelegation {
        flow: flow(None),
        lineage: seed_lineage(2),
        reason: RefusalReason::DepthExceeded,
        timestamp: seed_time(),
    }
}

fn metadata_keys(record: &Value) -> BTreeSet<String> {
    record["metadata"]
        .as_object()
        .expect("metadata")
        .keys()
        .cloned()
        .collect()
}

#[cfg(feature = "schema")]
fn assert_valid_request(record: &Value) {
    assert_eq!(
        a2aflow_model::delegation::validate_delegation_request(record),
        Ok(()),
        "{record:#}"
    );
}

#[cfg(feature = "schema")]
fn assert_valid_task(record: &Value) {
    assert_eq!(
        a2aflow_model::delegation::validate_delegation_task(record),
        Ok(()),
        "{record:#}"
    );
}

#[cfg(not(feature = "schema"))]
fn assert_valid_request(_: &Value) {}

#[cfg(not(feature = "schema"))]
fn assert_valid_task(_: &Value) {}

#[test]
fn the_request_is_the_seed_request() {
    let message = seed_request().to_message().unwrap();
    assert_eq!(message.role, Role::User);
    assert_eq!(message.task_id, None, "no task exists at request time");
    let record = serde_json::to_value(&message).unwrap();
    let message_id = record["messageId"].as_str().unwrap().to_owned();
    assert!(!message_id.is_empty());
    let expected = json!({
      "messageId": message_id,
      "contextId": ROOT,
      "role": "ROLE_USER",
      "parts": [
        {"text": "Review the repository and report findings."},
        {"data": {"repository": "example/widget", "since": "2026-09-01"}, "mediaType": "application/json"}
      ],
      "metadata": {
        "a2aflow/kind": "delegation_request",
        "a2aflow/parentExecutionId": ROOT,
        "a2aflow/rootExecutionId": ROOT,
        "a2aflow/flowId": FLOW,
        "a2aflow/flowName": "Repository review",
        "a2aflow/depth": 1
      }
    });
    assert_eq!(record, expected);
    assert_valid_request(&record);
    // Two requests never share a message id.
    assert_ne!(seed_request().to_message().unwrap().message_id, message_id);
}

#[test]
fn the_task_is_the_seed_task() {
    let task = seed_child().to_task().unwrap();
    assert_eq!(task.history, None);
    let record = serde_json::to_value(&task).unwrap();
    let expected = json!({
      "id": CHILD,
      "contextId": ROOT,
      "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-09-15T10:04:11Z"},
      "artifacts": [
        {
          "artifactId": format!("{CHILD}/result"),
          "name": "result",
          "parts": [{"data": {"verdict": "pass", "findings": []}, "mediaType": "application/json"}]
        }
      ],
      "metadata": {
        "a2aflow/kind": "delegation_task",
        "a2aflow/executionId": CHILD,
        "a2aflow/parentExecutionId": ROOT,
        "a2aflow/rootExecutionId": ROOT,
        "a2aflow/flowId": FLOW,
        "a2aflow/flowName": "Repository review",
        "a2aflow/depth": 1,
        "a2aflow/status": "SUCCEEDED",
        "a2aflow/cost": 0.42,
        "a2aflow/tokens": 18422,
        "a2aflow/consoleUrl": format!("/console/flows/executions/{CHILD}")
      }
    });
    assert_eq!(record, expected);
    assert_valid_task(&record);
    assert_eq!(
        result_data(&task),
        Some(&json!({"verdict": "pass", "findings": []}))
    );
}

#[test]
fn the_refused_task_is_the_seed_refusal_with_a_fresh_id() {
    let task = seed_refusal().to_task().unwrap();
    let record = serde_json::to_value(&task).unwrap();
    let id = record["id"].as_str().unwrap().to_owned();
    assert!(!id.is_empty());
    assert_ne!(id, ROOT, "a refusal never borrows an execution id");
    let expected = json!({
      "id": id,
      "contextId": ROOT,
      "status": {"state": "TASK_STATE_REJECTED", "timestamp": "2026-09-15T10:04:11Z"},
      "metadata": {
        "a2aflow/kind": "delegation_task",
        "a2aflow/parentExecutionId": ROOT,
        "a2aflow/rootExecutionId": ROOT,
        "a2aflow/flowId": FLOW,
        "a2aflow/depth": 2,
        "a2aflow/status": "REFUSED",
        "a2aflow/refusalReason": "depth_exceeded"
      }
    });
    assert_eq!(record, expected);
    assert_valid_task(&record);
    assert_eq!(result_data(&task), None);
    assert_ne!(
        seed_refusal().to_task().unwrap().id,
        id,
        "one fresh id per refusal"
    );
}

#[test]
fn every_refusal_reason_builds_a_valid_rejected_record() {
    for &reason in RefusalReason::ALL {
        let task = RefusedDelegation {
            reason,
            ..seed_refusal()
        }
        .to_task()
        .unwrap();
        assert_eq!(task.status.state, TaskState::Rejected);
        assert_eq!(task.artifacts, None);
        let record = serde_json::to_value(&task).unwrap();
        assert_eq!(record["metadata"]["a2aflow/refusalReason"], reason.as_str());
        assert_eq!(
            metadata_keys(&record),
            REFUSED_TASK_REQUIRED
                .iter()
                .chain([
                    &MetadataKey::ParentExecutionId,
                    &MetadataKey::RootExecutionId
                ])
                .map(|k| k.as_str().to_owned())
                .collect()
        );
        assert_valid_task(&record);
    }
}

#[test]
fn every_status_but_refused_builds_a_valid_task() {
    for &status in ExecutionStatus::ALL {
        let result = ChildExecution {
            status,
            ..seed_child()
        }
        .to_task();
        if status == ExecutionStatus::Refused {
            let err = result.unwrap_err();
            assert_eq!(err.code(), ErrorCode::DelegationInvalidRecord);
            assert_eq!(
                err.violations()[0].instance_path,
                "/metadata/a2aflow~1status"
            );
            continue;
        }
        let task = result.unwrap();
        assert_eq!(task.status.state, status.task_state(), "{status}");
        let record = serde_json::to_value(&task).unwrap();
        assert_eq!(record["metadata"]["a2aflow/status"], status.as_str());
        assert_valid_task(&record);
    }
}

#[test]
fn fully_populated_records_carry_exactly_their_scoped_keys() {
    let request = serde_json::to_value(
        DelegationRequest {
            console_url: Some("/console/x".into()),
            ..seed_request()
        }
        .to_message()
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        metadata_keys(&request),
        MetadataKey::ALL
            .iter()
            .filter(|k| k.scope() == KeyScope::Both)
            .map(|k| k.as_str().to_owned())
            .collect()
    );
    assert!(
        REQUEST_REQUIRED
            .iter()
            .all(|k| metadata_keys(&request).contains(k.as_str()))
    );
    let task = serde_json::to_value(seed_child().to_task().unwrap()).unwrap();
    let all_but_reason: BTreeSet<String> = MetadataKey::ALL
        .iter()
        .filter(|k| **k != MetadataKey::RefusalReason)
        .map(|k| k.as_str().to_owned())
        .collect();
    assert_eq!(metadata_keys(&task), all_but_reason);
    assert!(
        TASK_REQUIRED
            .iter()
            .all(|k| all_but_reason.contains(k.as_str()))
    );
}

#[test]
fn minimal_records_and_a_root_caller() {
    // Caller is the root: rootExecutionId is null and the context is the caller.
    let lineage = Lineage::child_of("root-exec", None, 0);
    let message = DelegationRequest {
        flow: flow(None),
        lineage: lineage.clone(),
        instruction: None,
        inputs: Some(json!(["a", 1])),
        console_url: None,
    }
    .to_message()
    .unwrap();
    let record = serde_json::to_value(&message).unwrap();
    assert_eq!(record["contextId"], "root-exec");
    assert_eq!(record["metadata"]["a2aflow/rootExecutionId"], Value::Null);
    assert_eq!(record["metadata"]["a2aflow/depth"], 1);
    assert_eq!(
        record["parts"],
        json!([{"data": ["a", 1], "mediaType": "application/json"}])
    );
    assert_valid_request(&record);

    let text_only = DelegationRequest {
        inputs: None,
        instruction: Some("go".into()),
        ..seed_request()
    }
    .to_message()
    .unwrap();
    assert_eq!(
        serde_json::to_value(&text_only.parts).unwrap(),
        json!([{"text": "go"}])
    );

    let task = ChildExecution {
        execution_id: "c1".into(),
        flow: flow(None),
        lineage,
        status: ExecutionStatus::Running,
        timestamp: SystemTime::UNIX_EPOCH + Duration::from_millis(1_500),
        result: None,
        cost: None,
        tokens: None,
        console_url: None,
    }
    .to_task()
    .unwrap();
    assert_eq!(task.artifacts, None, "no result, no artifact");
    let record = serde_json::to_value(&task).unwrap();
    assert_eq!(record["status"]["timestamp"], "1970-01-01T00:00:01.500Z");
    assert_valid_task(&record);
}

#[test]
fn no_result_means_no_artifact_never_an_empty_one() {
    assert_eq!(result_artifact(CHILD, &Value::Null), None);
    let child = ChildExecution {
        result: Some(Value::Null),
        ..seed_child()
    };
    assert_eq!(child.to_task().unwrap().artifacts, None);
    // An empty object is a result document and is carried unchanged.
    let artifact = result_artifact(CHILD, &json!({})).unwrap();
    assert_eq!(
        serde_json::to_value(&artifact).unwrap(),
        json!({"artifactId": format!("{CHILD}/result"), "name": "result",
               "parts": [{"data": {}, "mediaType": "application/json"}]})
    );
}

#[test]
fn bad_builder_input_is_a_typed_error_listing_every_problem() {
    let err = DelegationRequest {
        instruction: None,
        inputs: None,
        ..seed_request()
    }
    .to_message()
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::DelegationInvalidRecord);
    assert_eq!(err.violations().len(), 1);
    assert_eq!(err.violations()[0].instance_path, "/parts");

    let err = DelegationRequest {
        instruction: Some(String::new()),
        console_url: Some(String::new()),
        lineage: Lineage {
            root_execution_id: Some(String::new()),
            ..seed_lineage(1)
        },
        ..seed_request()
    }
    .to_message()
    .unwrap_err();
    assert_eq!(
        violation_paths(&err),
        [
            "/metadata/a2aflow~1rootExecutionId",
            "/metadata/a2aflow~1consoleUrl",
            "/parts/0/text"
        ]
    );

    let err = ChildExecution {
        execution_id: String::new(),
        cost: Some(f64::NAN),
        lineage: seed_lineage(0),
        ..seed_child()
    }
    .to_task()
    .unwrap_err();
    assert_eq!(
        violation_paths(&err),
        [
            "/metadata/a2aflow~1depth",
            "/metadata/a2aflow~1executionId",
            "/metadata/a2aflow~1cost"
        ]
    );
    assert_eq!(err.to_failure().code, "delegation.invalid_record");

    let far_future = SystemTime::UNIX_EPOCH + Duration::from_secs(300_000_000_000);
    let err = RefusedDelegation {
        timestamp: far_future,
        ..seed_refusal()
    }
    .to_task()
    .unwrap_err();
    assert_eq!(err.violations()[0].instance_path, "/status/timestamp");
}

#[cfg(feature = "schema")]
mod generated {
    //! Whatever the builders are given, they return either a typed error or a valid record.
    use super::*;
    use proptest::prelude::*;

    fn id() -> impl Strategy<Value = String> {
        prop_oneof![Just(String::new()), "[a-z0-9/~ -]{1,12}", ".{1,8}"]
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            ".{0,6}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::btree_map("[a-z]{1,4}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn lineage() -> impl Strategy<Value = Lineage> {
        (id(), prop::option::of(id()), 0u32..6).prop_map(|(parent, root, depth)| Lineage {
            parent_execution_id: parent,
            root_execution_id: root,
            depth,
        })
    }

    fn flow_ref() -> impl Strategy<Value = FlowRef> {
        (id(), prop::option::of(".{0,8}"))
            .prop_map(|(flow_id, flow_name)| FlowRef { flow_id, flow_name })
    }

    fn time() -> impl Strategy<Value = SystemTime> {
        (0u64..400_000_000_000, 0u32..1_000_000_000)
            .prop_map(|(s, n)| SystemTime::UNIX_EPOCH + Duration::new(s, n))
    }

    proptest! {
        #[test]
        fn requests_are_valid_or_typed_errors(
            flow in flow_ref(),
            lineage in lineage(),
            instruction in prop::option::of(".{0,8}"),
            inputs in prop::option::of(json_value()),
            console_url in prop::option::of(".{0,8}"),
        ) {
            let request = DelegationRequest { flow, lineage, instruction, inputs, console_url };
            match request.to_message() {
                Ok(message) => assert_valid_request(&serde_json::to_value(&message).unwrap()),
                Err(err) => {
                    prop_assert_eq!(err.code(), ErrorCode::DelegationInvalidRecord);
                    prop_assert!(!err.violations().is_empty());
                }
            }
        }

        #[test]
        fn tasks_are_valid_or_typed_errors(
            execution_id in id(),
            flow in flow_ref(),
            lineage in lineage(),
            status in prop::sample::select(ExecutionStatus::ALL),
            timestamp in time(),
            result in prop::option::of(json_value()),
            cost in prop::option::of(prop_oneof![-1.0f64..1e6, Just(f64::INFINITY)]),
            tokens in prop::option::of(any::<u64>()),
            console_url in prop::option::of(".{0,8}"),
            reason in prop::sample::select(RefusalReason::ALL),
        ) {
            let child = ChildExecution {
                execution_id, flow: flow.clone(), lineage: lineage.clone(), status, timestamp,
                result, cost, tokens, console_url,
            };
            match child.to_task() {
                Ok(task) => assert_valid_task(&serde_json::to_value(&task).unwrap()),
                Err(err) => prop_assert_eq!(err.code(), ErrorCode::DelegationInvalidRecord),
            }
            match (RefusedDelegation { flow, lineage, reason, timestamp }).to_task() {
                Ok(task) => assert_valid_task(&serde_json::to_value(&task).unwrap()),
                Err(err) => prop_assert_eq!(err.code(), ErrorCode::DelegationInvalidRecord),
            }
        }
    }
}

/// The instance paths of a record error's violations, in order.
fn violation_paths(err: &DelegationError) -> Vec<&str> {
    err.violations()
        .iter()
        .map(|v| v.instance_path.as_str())
        .collect()
}
