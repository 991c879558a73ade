//! The closed delegation schemas: the seed's three examples (in a2aflow's namespace) validate,
//! every removed required member, added unknown member and wrong type fails with a violation at
//! the right place, and the schemas, the key constants, the status table and the guide agree.

use a2aflow_model::ErrorCode;
use a2aflow_model::delegation::{
    DelegationError, ExecutionStatus, METADATA_NAMESPACE, MetadataKey, REFUSED_TASK_REQUIRED,
    REQUEST_REQUIRED, REQUEST_SCHEMA, RefusalReason, TASK_REQUIRED, TASK_SCHEMA, Violation,
    validate_delegation_request, validate_delegation_task,
};
use serde_json::{Value, json};
use std::collections::BTreeSet;

fn request_example() -> Value {
    json!({
      "messageId": "1b9c2f3d4e5a6b7c8d9e0f1a2b3c4d5e",
      "contextId": "3f1a2b3c-4d5e-6f70-8192-a3b4c5d6e7f8",
      "role": "ROLE_USER",
      "parts": [
        {"text": "Review the repository and report findings."},
        {"data": {"repository": "example/widget", "since": "2026-09-01"}, "mediaType": "application/json"}
      ],
      "metadata": {
        "a2aflow/kind": "delegation_request",
        "a2aflow/parentExecutionId": "3f1a2b3c-4d5e-6f70-8192-a3b4c5d6e7f8",
        "a2aflow/rootExecutionId": "3f1a2b3c-4d5e-6f70-8192-a3b4c5d6e7f8",
        "a2aflow/flowId": "9a8b7c6d-5e4f-4031-9283-1a2b3c4d5e6f",
        "a2aflow/flowName": "Repository review",
        "a2aflow/depth": 1
      }
    })
}

fn task_example() -> Value {
    json!({
      "id": "5c6d7e8f-9a0b-4c1d-8e2f-3a4b5c6d7e8f",
      "contextId": "3f1a2b3c-4d5e-6f70-8192-a3b4c5d6e7f8",
      "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-09-15T10:04:11Z"},
      "artifacts": [
        {
          "artifactId": "5c6d7e8f-9a0b-4c1d-8e2f-3a4b5c6d7e8f/result",
          "name": "result",
          "parts": [{"data": {"verdict": "pass", "findings": []}, "mediaType": "application/json"}]
        }
      ],
      "metadata": {
        "a2aflow/kind": "delegation_task",
        "a2aflow/executionId": "5c6d7e8f-9a0b-4c1d-8e2f-3a4b5c6d7e8f",
        "a2aflow/parentExecutionId": "3f1a2b3c-4d5e-6f70-8192-a3b4c5d6e7f8",
        "a2aflow/rootExecutionId": "3f1a2b3c-4d5e-6f70-8192-a3b4c5d6e7f8",
        "a2aflow/flowId": "9a8b7c6d-5e4f-4031-9283-1a2b3c4d5e6f",
        "a2aflow/flowName": "Repository review",
        "a2aflow/depth": 1,
        "a2aflow/status": "SUCCEEDED",
        "a2aflow/cost": 0.42,
        "a2aflow/tokens": 18422,
        "a2aflow/consoleUrl": "/console/flows/executions/5c6d7e8f-9a0b-4c1d-8e2f-3a4b5c6d7e8f"
      }
    })
}

fn refused_example() -> Value {
    json!({
      "id": "7d8e9f0a-1b2c-4d3e-8f40-5a6b7c8d9e0f",
      "contextId": "3f1a2b3c-4d5e-6f70-8192-a3b4c5d6e7f8",
      "status": {"state": "TASK_STATE_REJECTED", "timestamp": "2026-09-15T10:04:11Z"},
      "metadata": {
        "a2aflow/kind": "delegation_task",
        "a2aflow/parentExecutionId": "3f1a2b3c-4d5e-6f70-8192-a3b4c5d6e7f8",
        "a2aflow/rootExecutionId": "3f1a2b3c-4d5e-6f70-8192-a3b4c5d6e7f8",
        "a2aflow/flowId": "9a8b7c6d-5e4f-4031-9283-1a2b3c4d5e6f",
        "a2aflow/depth": 2,
        "a2aflow/status": "REFUSED",
        "a2aflow/refusalReason": "depth_exceeded"
      }
    })
}

#[derive(Clone, Copy, Debug)]
enum Example {
    Request,
    Task,
    Refused,
}

impl Example {
    fn record(self) -> Value {
        match self {
            Example::Request => request_example(),
            Example::Task => task_example(),
            Example::Refused => refused_example(),
        }
    }

    fn validate(self, record: &Value) -> Result<(), DelegationError> {
        match self {
            Example::Request => validate_delegation_request(record),
            Example::Task | Example::Refused => validate_delegation_task(record),
        }
    }
}

/// JSON Pointer escaping of one member name.
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// Splits a pointer into (parent pointer, last member name).
fn split(pointer: &str) -> (&str, String) {
    let (parent, last) = pointer.rsplit_once('/').unwrap_or(("", pointer));
    (parent, last.replace("~1", "/").replace("~0", "~"))
}

fn set(record: &mut Value, pointer: &str, value: Value) {
    let (parent, name) = split(pointer);
    let target = record.pointer_mut(parent).expect("parent exists");
    match target {
        Value::Object(map) => {
            map.insert(name, value);
        }
        Value::Array(items) => {
            let index: usize = name.parse().expect("array index");
            items[index] = value;
        }
        other => panic!("cannot set {pointer} in {other}"),
    }
}

fn remove(record: &mut Value, pointer: &str) {
    let (parent, name) = split(pointer);
    let removed = record
        .pointer_mut(parent)
        .and_then(Value::as_object_mut)
        .and_then(|m| m.shift_remove(&name));
    assert!(removed.is_some(), "{pointer} was present");
}

/// Asserts that validation fails with `delegation.invalid_record` and that some violation sits
/// at `path` and mentions `needle`; returns all violations.
fn expect_violation(example: Example, record: &Value, path: &str, needle: &str) -> Vec<Violation> {
    let err = example
        .validate(record)
        .expect_err(&format!("{example:?} with change at {path} must fail"));
    assert_eq!(err.code(), ErrorCode::DelegationInvalidRecord);
    let violations = err.violations().to_vec();
    assert!(
        violations
            .iter()
            .any(|v| v.instance_path == path && v.message.contains(needle)),
        "{example:?}: no violation at `{path}` mentioning `{needle}` in {violations:#?}"
    );
    violations
}

#[test]
fn the_seed_examples_validate_in_a2aflow_namespace() {
    for example in [Example::Request, Example::Task, Example::Refused] {
        let record = example.record();
        assert_eq!(example.validate(&record), Ok(()), "{example:?}");
        // The same records in the seed's own namespace are not ours: every key is unknown.
        let foreign = serde_json::to_string(&record)
            .unwrap()
            .replace(METADATA_NAMESPACE, "preloop.ai/");
        let foreign: Value = serde_json::from_str(&foreign).unwrap();
        assert!(example.validate(&foreign).is_err(), "{example:?}");
    }
}

/// The completed task example as a run at a gate: `state`, `WAITING_FOR_HUMAN`, no result,
/// the agent's words as the status message.
fn gated_example(state: &str) -> Value {
    let mut record = task_example();
    let id = record["id"].as_str().unwrap().to_owned();
    record.as_object_mut().unwrap().remove("artifacts");
    record["status"]["state"] = json!(state);
    record["status"]["message"] = json!({
        "messageId": format!("{id}/gate/ask.0"),
        "role": "ROLE_AGENT",
        "parts": [{"text": "Which account?"}],
        "contextId": record["contextId"],
        "taskId": id
    });
    record["metadata"]["a2aflow/status"] = json!("WAITING_FOR_HUMAN");
    record
}

#[test]
fn a_gated_task_shows_the_agents_words_and_only_a_gated_one_does() {
    for state in ["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"] {
        assert_eq!(
            validate_delegation_task(&gated_example(state)),
            Ok(()),
            "{state}"
        );
    }
    let mut completed = task_example();
    completed["status"]["message"] =
        gated_example("TASK_STATE_INPUT_REQUIRED")["status"]["message"].clone();
    expect_violation(Example::Task, &completed, "/status/state", "is not one of");
    let mut extra = gated_example("TASK_STATE_AUTH_REQUIRED");
    extra["status"]["message"]["metadata"] = json!({});
    expect_violation(
        Example::Task,
        &extra,
        "/status/message",
        "'metadata' was unexpected",
    );
    let mut user = gated_example("TASK_STATE_INPUT_REQUIRED");
    user["status"]["message"]["role"] = json!("ROLE_USER");
    expect_violation(Example::Task, &user, "/status/message/role", "was expected");
    // An auth gate is still WAITING_FOR_HUMAN, never another status.
    let mut running = gated_example("TASK_STATE_AUTH_REQUIRED");
    running["metadata"]["a2aflow/status"] = json!("RUNNING");
    expect_violation(
        Example::Task,
        &running,
        "/metadata/a2aflow~1status",
        "is not one of",
    );
}

#[test]
fn a_run_that_is_its_own_root_has_depth_zero_and_no_parent() {
    let mut root = task_example();
    let id = root["id"].clone();
    let meta = root["metadata"].as_object_mut().unwrap();
    meta.remove("a2aflow/parentExecutionId");
    meta.remove("a2aflow/rootExecutionId");
    meta.insert("a2aflow/depth".into(), json!(0));
    root["contextId"] = id;
    assert_eq!(validate_delegation_task(&root), Ok(()));
    root["metadata"]["a2aflow/depth"] = json!(-1);
    expect_violation(
        Example::Task,
        &root,
        "/metadata/a2aflow~1depth",
        "less than the minimum of 0",
    );
}

#[test]
fn removing_any_required_member_fails_at_its_parent() {
    let metadata_required = |required: &[MetadataKey]| -> Vec<String> {
        required
            .iter()
            .map(|k| format!("/metadata/{}", escape(k.as_str())))
            .collect()
    };
    let mut cases: Vec<(Example, String)> = Vec::new();
    for member in ["messageId", "contextId", "role", "parts", "metadata"] {
        cases.push((Example::Request, format!("/{member}")));
    }
    for pointer in metadata_required(REQUEST_REQUIRED) {
        cases.push((Example::Request, pointer));
    }
    for (example, required) in [
        (Example::Task, TASK_REQUIRED),
        (Example::Refused, REFUSED_TASK_REQUIRED),
    ] {
        for member in [
            "/id",
            "/contextId",
            "/status",
            "/metadata",
            "/status/state",
            "/status/timestamp",
        ] {
            cases.push((example, member.to_owned()));
        }
        for pointer in metadata_required(required) {
            cases.push((example, pointer));
        }
    }
    cases.push((Example::Task, "/artifacts/0/artifactId".into()));
    cases.push((Example::Task, "/artifacts/0/name".into()));
    cases.push((Example::Task, "/artifacts/0/parts/0/mediaType".into()));
    cases.push((Example::Request, "/parts/1/mediaType".into()));

    assert_eq!(cases.len(), 5 + 4 + 2 * (6 + 5) + 4);
    for (example, pointer) in cases {
        let mut record = example.record();
        remove(&mut record, &pointer);
        let (parent, name) = split(&pointer);
        expect_violation(
            example,
            &record,
            parent,
            &format!("\"{name}\" is a required property"),
        );
    }
}

#[test]
fn adding_any_unknown_member_fails() {
    let cases: &[(Example, &str, Value)] = &[
        (Example::Request, "/metadata/a2aflow~1unknown", json!(1)),
        (
            Example::Request,
            "/metadata/preloop.ai~1kind",
            json!("delegation_request"),
        ),
        (
            Example::Request,
            "/metadata/a2aflow~1executionId",
            json!("e1"),
        ),
        (
            Example::Request,
            "/metadata/a2aflow~1status",
            json!("PENDING"),
        ),
        (Example::Request, "/taskId", json!("t1")),
        (Example::Request, "/extensions", json!([])),
        (Example::Request, "/referenceTaskIds", json!([])),
        (Example::Request, "/parts/0/kind", json!("text")),
        (Example::Request, "/parts/1/metadata", json!({})),
        (Example::Task, "/metadata/a2aflow~1unknown", json!(1)),
        (Example::Task, "/history", json!([])),
        (Example::Task, "/kind", json!("task")),
        (Example::Task, "/artifacts/0/description", json!("d")),
        (Example::Task, "/artifacts/0/metadata", json!({})),
        (Example::Task, "/artifacts/0/parts/0/kind", json!("data")),
        (Example::Refused, "/metadata/a2aflow~1unknown", json!(1)),
        (Example::Refused, "/history", json!([])),
    ];
    for (example, pointer, value) in cases {
        let mut record = example.record();
        set(&mut record, pointer, value.clone());
        let (parent, name) = split(pointer);
        expect_violation(
            *example,
            &record,
            parent,
            &format!("'{name}' was unexpected"),
        );
    }
}

#[test]
fn every_wrong_type_or_value_fails_where_it_is() {
    let depth = "/metadata/a2aflow~1depth";
    let cases: &[(Example, &str, Value, &str)] = &[
        (
            Example::Request,
            "/messageId",
            json!(7),
            "is not of type \"string\"",
        ),
        (
            Example::Request,
            "/messageId",
            json!(""),
            "shorter than 1 character",
        ),
        (
            Example::Request,
            "/contextId",
            json!(null),
            "is not of type \"string\"",
        ),
        (
            Example::Request,
            "/role",
            json!("ROLE_AGENT"),
            "\"ROLE_USER\" was expected",
        ),
        (
            Example::Request,
            "/parts",
            json!([]),
            "[] has less than 1 item",
        ),
        (
            Example::Request,
            "/parts",
            json!({"text": "x"}),
            "is not of type \"array\"",
        ),
        (
            Example::Request,
            "/parts/0/text",
            json!(""),
            "shorter than 1 character",
        ),
        (
            Example::Request,
            "/parts/0/text",
            json!(["x"]),
            "is not of type \"string\"",
        ),
        (
            Example::Request,
            "/parts/1/mediaType",
            json!("text/plain"),
            "\"application/json\" was expected",
        ),
        (
            Example::Request,
            depth,
            json!("1"),
            "is not of type \"integer\"",
        ),
        (
            Example::Request,
            depth,
            json!(1.5),
            "is not of type \"integer\"",
        ),
        (
            Example::Request,
            depth,
            json!(0),
            "less than the minimum of 1",
        ),
        (
            Example::Request,
            "/metadata/a2aflow~1kind",
            json!("delegation_task"),
            "\"delegation_request\" was expected",
        ),
        (
            Example::Request,
            "/metadata/a2aflow~1flowId",
            json!(9),
            "is not of type \"string\"",
        ),
        (
            Example::Request,
            "/metadata/a2aflow~1flowName",
            json!(null),
            "is not of type \"string\"",
        ),
        (
            Example::Request,
            "/metadata/a2aflow~1parentExecutionId",
            json!(""),
            "shorter than 1 character",
        ),
        (
            Example::Request,
            "/metadata/a2aflow~1rootExecutionId",
            json!(5),
            "is not of types \"null\", \"string\"",
        ),
        (
            Example::Request,
            "/metadata/a2aflow~1consoleUrl",
            json!(true),
            "is not of type \"string\"",
        ),
        (
            Example::Request,
            "/metadata",
            json!([]),
            "is not of type \"object\"",
        ),
        (Example::Task, "/id", json!(5), "is not of type \"string\""),
        (
            Example::Task,
            "/status/state",
            json!("completed"),
            "is not one of",
        ),
        (
            Example::Task,
            "/status/state",
            json!("TASK_STATE_UNSPECIFIED"),
            "is not one of",
        ),
        (
            Example::Task,
            "/status/timestamp",
            json!("yesterday"),
            "is not a \"date-time\"",
        ),
        (
            Example::Task,
            "/status/timestamp",
            json!("2026-09-15T10:04:11+02:00"),
            "does not match \"Z$\"",
        ),
        (
            Example::Task,
            "/status/timestamp",
            json!(1789466651),
            "is not of type \"string\"",
        ),
        (
            Example::Task,
            "/artifacts",
            json!([]),
            "[] has less than 1 item",
        ),
        (
            Example::Task,
            "/artifacts/0/name",
            json!("output"),
            "\"result\" was expected",
        ),
        (
            Example::Task,
            "/artifacts/0/artifactId",
            json!("/result"),
            "shorter than 8 characters",
        ),
        (
            Example::Task,
            "/artifacts/0/artifactId",
            json!("e1/output"),
            "does not match \"/result$\"",
        ),
        (
            Example::Task,
            "/artifacts/0/parts",
            json!([]),
            "[] has less than 1 item",
        ),
        (
            Example::Task,
            "/artifacts/0/parts/0",
            json!({"text": "pass"}),
            "\"data\" is a required property",
        ),
        (
            Example::Task,
            "/metadata/a2aflow~1kind",
            json!("delegation_request"),
            "\"delegation_task\" was expected",
        ),
        (
            Example::Task,
            "/metadata/a2aflow~1status",
            json!("DONE"),
            "is not one of",
        ),
        (
            Example::Task,
            "/metadata/a2aflow~1cost",
            json!("0.42"),
            "is not of type \"number\"",
        ),
        (
            Example::Task,
            "/metadata/a2aflow~1cost",
            json!(-0.01),
            "less than the minimum of 0",
        ),
        (
            Example::Task,
            "/metadata/a2aflow~1tokens",
            json!(1.5),
            "is not of type \"integer\"",
        ),
        (
            Example::Task,
            "/metadata/a2aflow~1tokens",
            json!(-1),
            "less than the minimum of 0",
        ),
        (
            Example::Task,
            "/metadata/a2aflow~1executionId",
            json!(""),
            "shorter than 1 character",
        ),
        (
            Example::Task,
            depth,
            json!("1"),
            "is not of type \"integer\"",
        ),
        (
            Example::Refused,
            "/metadata/a2aflow~1refusalReason",
            json!("no_reason"),
            "is not one of",
        ),
        (
            Example::Refused,
            "/metadata/a2aflow~1refusalReason",
            json!(3),
            "is not one of",
        ),
    ];
    for (example, pointer, value, needle) in cases {
        let mut record = example.record();
        set(&mut record, pointer, value.clone());
        expect_violation(*example, &record, pointer, needle);
    }
}

/// One member of an example record set to a value that must be refused at `path`.
struct Change {
    example: Example,
    pointer: &'static str,
    value: Value,
    path: &'static str,
    needle: &'static str,
}

/// Applies each change to a fresh copy of its example and expects its violation.
fn expect_changes_refused(changes: Vec<Change>) {
    for c in changes {
        let mut record = c.example.record();
        set(&mut record, c.pointer, c.value);
        expect_violation(c.example, &record, c.path, c.needle);
    }
}

#[test]
fn a_refusal_is_rejected_without_child_and_only_a_refusal_has_a_reason() {
    let reason = "/metadata/a2aflow~1refusalReason";
    let execution = "/metadata/a2aflow~1executionId";
    let status = "/metadata/a2aflow~1status";
    let not_allowed = "False schema does not allow";
    expect_changes_refused(vec![
        Change {
            example: Example::Refused,
            pointer: execution,
            value: json!("7d8e9f0a-1b2c-4d3e-8f40-5a6b7c8d9e0f"),
            path: execution,
            needle: not_allowed,
        },
        Change {
            example: Example::Refused,
            pointer: "/artifacts",
            value: task_example()["artifacts"].clone(),
            path: "/artifacts",
            needle: not_allowed,
        },
        Change {
            example: Example::Task,
            pointer: reason,
            value: json!("depth_exceeded"),
            path: reason,
            needle: not_allowed,
        },
        // The state and the execution status must agree with the table.
        Change {
            example: Example::Refused,
            pointer: status,
            value: json!("FAILED"),
            path: status,
            needle: "is not one of",
        },
        Change {
            example: Example::Task,
            pointer: "/status/state",
            value: json!("TASK_STATE_FAILED"),
            path: status,
            needle: "is not one of",
        },
        Change {
            example: Example::Task,
            pointer: status,
            value: json!("REFUSED"),
            path: status,
            needle: "is not one of",
        },
    ]);
}

#[test]
fn identity_rules_tie_ids_together() {
    expect_changes_refused(vec![
        Change {
            example: Example::Task,
            pointer: "/contextId",
            value: json!("somewhere-else"),
            path: "/contextId",
            needle: "root execution id",
        },
        Change {
            example: Example::Task,
            pointer: "/artifacts/0/artifactId",
            value: json!("other/result"),
            path: "/artifacts/0/artifactId",
            needle: "must be `5c6d7e8f",
        },
        Change {
            example: Example::Task,
            pointer: "/id",
            value: json!("other"),
            path: "/id",
            needle: "child execution id",
        },
    ]);

    // Caller is the root: rootExecutionId is null and the context is the parent itself.
    let mut record = request_example();
    set(
        &mut record,
        "/metadata/a2aflow~1rootExecutionId",
        Value::Null,
    );
    assert_eq!(validate_delegation_request(&record), Ok(()));
    set(&mut record, "/contextId", json!("not-the-parent"));
    expect_violation(Example::Request, &record, "/contextId", "root execution id");
}

#[test]
fn every_violation_is_listed_not_just_the_first() {
    let mut record = task_example();
    set(&mut record, "/metadata/a2aflow~1depth", json!("deep"));
    set(&mut record, "/metadata/a2aflow~1cost", json!(-1));
    set(&mut record, "/history", json!([]));
    remove(&mut record, "/metadata/a2aflow~1flowId");
    let err = validate_delegation_task(&record).unwrap_err();
    let paths: BTreeSet<&str> = err
        .violations()
        .iter()
        .map(|v| v.instance_path.as_str())
        .collect();
    assert_eq!(
        paths,
        BTreeSet::from([
            "",
            "/metadata",
            "/metadata/a2aflow~1cost",
            "/metadata/a2aflow~1depth"
        ])
    );
    assert_eq!(err.violations().len(), 4, "{:#?}", err.violations());
    let text = err.to_string();
    assert!(
        text.starts_with("invalid delegation_task record: "),
        "{text}"
    );
    assert!(text.contains("'history' was unexpected"), "{text}");
}

// ---- the schema, the constants and the guide agree ----

fn schema(text: &str) -> Value {
    serde_json::from_str(text).expect("embedded schema is JSON")
}

fn object_keys(value: &Value) -> BTreeSet<String> {
    value
        .as_object()
        .expect("an object")
        .keys()
        .cloned()
        .collect()
}

fn string_set(value: &Value) -> BTreeSet<String> {
    value
        .as_array()
        .expect("an array")
        .iter()
        .map(|v| v.as_str().expect("a string").to_owned())
        .collect()
}

fn key_set<'a>(keys: impl IntoIterator<Item = &'a MetadataKey>) -> BTreeSet<String> {
    keys.into_iter().map(|k| k.as_str().to_owned()).collect()
}

#[test]
fn schemas_and_key_constants_agree() {
    let request = schema(REQUEST_SCHEMA);
    let task = schema(TASK_SCHEMA);
    assert_eq!(
        request["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(task["$schema"], request["$schema"]);

    // Properties: the request allows the keys scoped to both records, the task allows them all.
    let request_meta = &request["$defs"]["requestMetadata"];
    let task_meta = &task["$defs"]["taskMetadata"];
    assert_eq!(
        object_keys(&request_meta["properties"]),
        key_set(MetadataKey::ALL.iter().filter(|k| k.allowed_on_request()))
    );
    assert_eq!(
        object_keys(&task_meta["properties"]),
        key_set(MetadataKey::ALL)
    );
    for meta in [request_meta, task_meta] {
        assert_eq!(meta["additionalProperties"], false);
    }

    // Required sets.
    assert_eq!(
        string_set(&request_meta["required"]),
        key_set(REQUEST_REQUIRED)
    );
    let base = string_set(&task_meta["required"]);
    let with = |branch: &str| -> BTreeSet<String> {
        let mut set = base.clone();
        set.extend(string_set(
            &task[branch]["properties"]["metadata"]["required"],
        ));
        set
    };
    assert_eq!(
        task["if"]["properties"]["status"]["properties"]["state"]["const"],
        "TASK_STATE_REJECTED"
    );
    assert_eq!(with("then"), key_set(REFUSED_TASK_REQUIRED));
    assert_eq!(with("else"), key_set(TASK_REQUIRED));

    // Kind values.
    assert_eq!(
        request_meta["properties"]["a2aflow/kind"]["const"],
        "delegation_request"
    );
    assert_eq!(
        task_meta["properties"]["a2aflow/kind"]["const"],
        "delegation_task"
    );

    // Status and refusal vocabularies.
    assert_eq!(
        string_set(&task_meta["properties"]["a2aflow/status"]["enum"]),
        ExecutionStatus::ALL
            .iter()
            .map(|s| s.as_str().to_owned())
            .collect()
    );
    assert_eq!(
        string_set(&task_meta["properties"]["a2aflow/refusalReason"]["enum"]),
        RefusalReason::ALL
            .iter()
            .map(|r| r.as_str().to_owned())
            .collect()
    );
}

#[test]
fn the_schema_states_the_status_table_row_for_row() {
    let task = schema(TASK_SCHEMA);
    let state_name = |status: ExecutionStatus| {
        serde_json::to_value(status.task_state())
            .unwrap()
            .as_str()
            .unwrap()
            .to_owned()
    };
    let mut from_schema = BTreeSet::new();
    for rule in task["allOf"].as_array().expect("allOf") {
        // The rules that tie no state to statuses (where a status message may be) are not rows.
        let Some(state) = rule["if"]["properties"]["status"]["properties"]["state"]["const"]
            .as_str()
            .map(str::to_owned)
        else {
            continue;
        };
        for status in string_set(
            &rule["then"]["properties"]["metadata"]["properties"]["a2aflow/status"]["enum"],
        ) {
            from_schema.insert((status, state.clone()));
        }
    }
    let mut from_code: BTreeSet<(String, String)> = ExecutionStatus::ALL
        .iter()
        .map(|&s| (s.as_str().to_owned(), state_name(s)))
        .collect();
    // The one row beside the table: a run waiting at an AUTH_REQUIRED gate (a served task)
    // shows that state.
    from_code.insert((
        ExecutionStatus::WaitingForHuman.as_str().to_owned(),
        "TASK_STATE_AUTH_REQUIRED".to_owned(),
    ));
    assert_eq!(from_schema, from_code);
    let states: BTreeSet<String> = from_code.iter().map(|(_, s)| s.clone()).collect();
    assert_eq!(
        string_set(&task["properties"]["status"]["properties"]["state"]["enum"]),
        states
    );
}

#[test]
fn the_guide_names_every_key_status_and_reason() {
    let guide = include_str!("../../../../docs/guide/delegation.md");
    assert!(guide.contains(&format!("`{METADATA_NAMESPACE}`")));
    for key in MetadataKey::ALL {
        assert!(
            guide.contains(&format!("`{}`", key.as_str())),
            "{}",
            key.as_str()
        );
    }
    for status in ExecutionStatus::ALL {
        let state = serde_json::to_value(status.task_state()).unwrap();
        let row = format!("| `{}` | `{}` |", status.as_str(), state.as_str().unwrap());
        assert!(guide.contains(&row), "guide lacks the row {row}");
    }
    for reason in RefusalReason::ALL {
        assert!(
            guide.contains(&format!("| `{}` |", reason.as_str())),
            "{reason}"
        );
    }
}
