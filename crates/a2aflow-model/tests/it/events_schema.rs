//! The typed event payloads against `schemas/events.schema.json`: a sample of every payload
//! shape validates and reads back as itself, the JSON keeps the keys (and their order) the
//! emitters wrote as maps, and data of the wrong shape or kind is refused by both the schema
//! and `Event::payload`.

use a2aflow_model::a2a::TaskState;
use a2aflow_model::event_data::*;
use a2aflow_model::event_schema::{EVENTS_SCHEMA, check_event_schema};
use a2aflow_model::{
    ClientEvent, ErrorCode, Event, EventKind, EventPayload, EventTime, Failure, Gate,
    MessageContent, StepResult, StepStatus, StepType, TaskOutcomeStatus, TaskResultView,
};
use serde_json::{Value, json};
use std::collections::HashSet;

fn view() -> TaskResultView {
    serde_json::from_value(json!({
        "agentName": "a", "skill": "s", "taskId": "x:step:0", "taskDescription": "do it",
        "status": "FAILED", "contextId": "c1", "outputs": [], "receivedMessages": [],
        "error": "boom", "errorCode": "a2a.task_failed", "errorDetails": {"state": "TASK_STATE_FAILED"}
    }))
    .unwrap()
}

fn step_result() -> StepResult {
    StepResult {
        step_name: "step".into(),
        step_type: StepType::AllSuccess,
        status: StepStatus::Failed,
        task_results: vec![view()],
        failure: Some(failure()),
    }
}

fn failure() -> Failure {
    Failure::new(
        ErrorCode::WorkflowStepFailed,
        "Step execution failed: step 'step'",
    )
    .with_detail(
        "causes",
        json!([{"taskId": "x:step:0", "code": "a2a.task_failed"}]),
    )
}

fn message() -> Value {
    json!({"messageId": "m1", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]})
}

fn negotiation_request() -> a2aflow_model::NegotiationRequest {
    serde_json::from_value(json!({
        "task": {"executionId": "x", "workflowId": "w", "stepName": "step",
                 "stepType": "ALL_SUCCESS", "subtaskIndex": 0, "localTaskId": "x:step:0",
                 "agent": "a", "skill": "s", "description": "d", "input": {},
                 "workflowInput": {}},
        "original": {"parts": [{"text": "go"}]},
        "contextId": "c1", "negotiationContext": {"round": 1},
        "evidence": {"kind": "task"}, "previousExchanges": [], "remainingBudget": 3
    }))
    .unwrap()
}

/// Agent `a`'s message "hi".
fn agent_message() -> AgentMessageEventData {
    AgentMessageEventData {
        agent: "a".into(),
        role: Some(a2aflow_model::a2a::Role::Agent),
        text: Some("hi".into()),
        metadata: None,
    }
}

/// The allowed unconditional route from `s` to `t`.
fn unconditional_route(reason: Option<&str>) -> RouteDecisionData {
    RouteDecisionData {
        step: "s".into(),
        next: "t".into(),
        condition: String::new(),
        conditional: false,
        allowed: true,
        reason: reason.map(Into::into),
    }
}

/// Agent `a`'s status update without text or metadata.
fn status_update(task_id: Option<&str>, state: TaskState, is_final: bool) -> AgentStatusUpdateData {
    AgentStatusUpdateData {
        agent: "a".into(),
        task_id: task_id.map(Into::into),
        state: Some(state),
        is_final,
        text: None,
        metadata: None,
    }
}

/// A first message to agent `a` in context `context_id` (no remote task yet).
fn remote_request(context_id: &str, content: MessageContent) -> RemoteRequestData {
    RemoteRequestData {
        agent: "a".into(),
        context_id: context_id.into(),
        remote_task_id: None,
        content,
        binding: None,
    }
}

/// One sample of every payload shape (each family member once).
pub(crate) fn samples() -> Vec<EventPayload> {
    let content = MessageContent::text("hello");
    vec![
        StartData {
            workflow: "w".into(),
            workflow_id: "w1".into(),
            steps: 2,
        }
        .into(),
        CompleteData {
            success: true,
            steps: vec![step_result()].into(),
            skipped_steps: vec!["later".into()],
        }
        .into(),
        CloseData {}.into(),
        StepStartData {
            step: "step".into(),
            step_type: StepType::AnySuccess,
        }
        .into(),
        StepCompleteData {
            step: "step".into(),
            status: StepStatus::Completed,
            results: vec![view()].into(),
            failure: None,
        }
        .into(),
        TaskRequestData {
            step: "step".into(),
            agent: "a".into(),
            skill: "s".into(),
            task: "do it".into(),
            subtask_index: 0,
            task_id: "x:step:0".into(),
        }
        .into(),
        TaskResponseData {
            step: "step".into(),
            subtask_index: 0,
            result: view().into(),
        }
        .into(),
        TaskStatusChangedData {
            step: "step".into(),
            subtask_index: 0,
            agent: "a".into(),
            status: TaskOutcomeStatus::Canceled,
        }
        .into(),
        RouteDecisionData {
            step: "step".into(),
            next: "b".into(),
            condition: "if good".into(),
            conditional: true,
            allowed: false,
            reason: None,
        }
        .into(),
        WorkflowCompleteData { success: false }.into(),
        ErrorData {
            step: Some("step".into()),
            error: "Step execution failed".into(),
            error_code: failure().code,
            failure: failure(),
            steps: None,
        }
        .into(),
        ErrorData {
            step: None,
            error: "gated".into(),
            error_code: ErrorCode::A2aAuthRequired.into(),
            failure: Failure::new(ErrorCode::A2aAuthRequired, "sign in")
                .with_gate(Gate::AuthRequired)
                .with_cause(ErrorCode::A2aTaskFailed),
            steps: Some(vec![step_result()]),
        }
        .into(),
        remote_request("c1", content.clone()).into(),
        LocalRequestData {
            agent: "a".into(),
            content,
        }
        .into(),
        DelegationRequestData {
            workflow: "child".into(),
            child_execution_id: "x.1".into(),
            delegation_request: serde_json::from_value(message()).unwrap(),
        }
        .into(),
        RemoteResponseData {
            agent: "a".into(),
            context_id: "c1".into(),
            remote_task_id: Some("t1".into()),
            success: false,
            error_code: Some(ErrorCode::A2aTaskFailed.into()),
            received_messages: view().received_messages,
        }
        .into(),
        LocalResponseData {
            agent: "a".into(),
            ok: true,
            received_messages: 1,
        }
        .into(),
        DelegationResponseData {
            workflow: "child".into(),
            child_execution_id: None,
            delegation_task: serde_json::from_value(json!({
                "id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_REJECTED"}
            }))
            .unwrap(),
        }
        .into(),
        status_update(Some("t1"), TaskState::Working, false).into(),
        AgentArtifactUpdateData {
            agent: "a".into(),
            task_id: Some("t1".into()),
            artifact_id: Some("art".into()),
            artifact_name: None,
            append: true,
            last_chunk: false,
            metadata: Some(serde_json::Map::new()),
        }
        .into(),
        agent_message().into(),
        NegotiationRequestData {
            agent: "a".into(),
            exchange: 1,
            request: negotiation_request().into(),
        }
        .into(),
        NegotiationResolvedData {
            agent: "a".into(),
            exchange: 1,
            reply: a2aflow_model::NegotiationReply::Stop {
                code: "biz.no".into(),
                reason: "no".into(),
            },
        }
        .into(),
        ClientNegotiationFailedData {
            agent: "a".into(),
            context_id: "c1".into(),
            remote_task_id: None,
            exchange: 2,
            error: "budget".into(),
            error_code: ErrorCode::NegotiationBudgetExhausted.into(),
            negotiation_context: None,
        }
        .into(),
        HostNegotiationFailedData {
            agent: "a".into(),
            exchange: 1,
            error: "hook failed".into(),
            error_code: ErrorCode::WorkflowExecutionFailed.into(),
        }
        .into(),
        TaskGatedData {
            step: "step".into(),
            local_task_id: "x:step:0".into(),
            agent: "a".into(),
            gate: Gate::InputRequired,
            context_id: Some("c1".into()),
            remote_task_id: Some("t1".into()),
            text: Some("which city?".into()),
        }
        .into(),
        TaskGatedData {
            step: "step".into(),
            local_task_id: "x:step:1".into(),
            agent: "a".into(),
            gate: Gate::AuthRequired,
            context_id: None,
            remote_task_id: None,
            text: None,
        }
        .into(),
        TaskRetryData {
            step: "step".into(),
            subtask_index: 0,
            agent: "a".into(),
            attempt: 1,
            max_attempts: 3,
            code: ErrorCode::A2aTaskFailed.into(),
            message: "failed as asked".into(),
            remote_task_id: Some("t-1".into()),
            delay_ms: 200,
        }
        .into(),
        TaskResponseData {
            step: "step".into(),
            subtask_index: 1,
            result: TaskResultView {
                attempts: 3,
                ..view()
            }
            .into(),
        }
        .into(),
    ]
}

fn event(payload: EventPayload) -> Event {
    let mut e = Event::from_payload(3, "x", payload).unwrap();
    e.step = Some("step".into());
    e.time = Some(EventTime::from_unix_ms(1_796_008_065_744));
    e
}

fn assert_valid(e: &Event) {
    let json = serde_json::to_value(e).unwrap();
    if let Err(v) = check_event_schema(&json) {
        panic!("{} event refused by the schema: {v:?}\n{json:#}", e.kind);
    }
}

#[test]
fn every_sample_validates_and_reads_back_as_itself() {
    for payload in samples() {
        let e = event(payload.clone());
        assert_eq!(e.kind, payload.kind());
        assert_valid(&e);
        assert_eq!(
            e.payload().unwrap(),
            payload,
            "{} did not read back",
            e.kind
        );
        // Through the JSON text too, as a host reading a log would.
        let back: Event = serde_json::from_str(&serde_json::to_string(&e).unwrap()).unwrap();
        assert_eq!(back.payload().unwrap(), payload);
    }
}

#[test]
fn every_emitted_kind_has_a_sample_and_the_schema_names_every_kind() {
    // The reserved kinds and the host's own have no payload type.
    let reserved = [
        EventKind::AuthorizationRequest,
        EventKind::AuthorizationResolved,
        EventKind::Notification,
        EventKind::HostEvent,
    ];
    let sampled: HashSet<EventKind> = samples().iter().map(EventPayload::kind).collect();
    for &kind in EventKind::ALL {
        assert_eq!(
            sampled.contains(&kind),
            !reserved.contains(&kind),
            "{kind}: a payload kind needs a sample, a reserved kind has no payload"
        );
    }
    let schema: Value = serde_json::from_str(EVENTS_SCHEMA).unwrap();
    let names: HashSet<&str> = schema["properties"]["kind"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let kinds: HashSet<&str> = EventKind::ALL.iter().map(|k| k.as_str()).collect();
    assert_eq!(names, kinds);
    for kind in reserved {
        let e = Event {
            data: json!({}).into(),
            kind,
            ..event(CloseData {}.into())
        };
        match e.payload() {
            Err(PayloadError::HostData) => assert_eq!(kind, EventKind::HostEvent),
            other => assert!(matches!(other, Err(PayloadError::Reserved(k)) if k == kind)),
        }
    }
}

#[test]
fn payloads_write_the_keys_in_the_order_the_emitters_wrote_them() {
    let cases: Vec<(EventPayload, &str)> = vec![
        (
            StepStartData {
                step: "s".into(),
                step_type: StepType::AllSuccess,
            }
            .into(),
            r#"{"step":"s","stepType":"ALL_SUCCESS"}"#,
        ),
        (
            unconditional_route(Some("unconditional edge")).into(),
            r#"{"step":"s","next":"t","condition":"","conditional":false,"allowed":true,"reason":"unconditional edge"}"#,
        ),
        (
            ErrorData {
                step: None,
                error: "bad".into(),
                error_code: ErrorCode::WorkflowNoSteps.into(),
                failure: Failure::new(ErrorCode::WorkflowNoSteps, "bad"),
                steps: None,
            }
            .into(),
            r#"{"error":"bad","errorCode":"workflow.no_steps","failure":{"code":"workflow.no_steps","message":"bad"}}"#,
        ),
        (
            status_update(None, TaskState::Completed, true).into(),
            r#"{"agent":"a","taskId":null,"state":"TASK_STATE_COMPLETED","isFinal":true,"text":null,"metadata":null}"#,
        ),
        (
            ClientNegotiationFailedData {
                agent: "a".into(),
                context_id: "c".into(),
                remote_task_id: None,
                exchange: 0,
                error: "e".into(),
                error_code: ErrorCode::NegotiationAborted.into(),
                negotiation_context: None,
            }
            .into(),
            r#"{"agent":"a","contextId":"c","remoteTaskId":null,"exchange":0,"error":"e","errorCode":"negotiation.aborted","negotiationContext":null}"#,
        ),
        (
            remote_request("c", MessageContent::text("x")).into(),
            r#"{"agent":"a","contextId":"c","remoteTaskId":null,"content":{"parts":[{"text":"x"}]}}"#,
        ),
        (
            RemoteResponseData {
                agent: "a".into(),
                context_id: "c".into(),
                remote_task_id: Some("t".into()),
                success: true,
                error_code: None,
                received_messages: Vec::new(),
            }
            .into(),
            r#"{"agent":"a","contextId":"c","remoteTaskId":"t","success":true,"errorCode":null,"receivedMessages":[]}"#,
        ),
        (
            AgentArtifactUpdateData {
                agent: "a".into(),
                task_id: Some("t".into()),
                artifact_id: Some("r".into()),
                artifact_name: None,
                append: false,
                last_chunk: true,
                metadata: None,
            }
            .into(),
            r#"{"agent":"a","taskId":"t","artifactId":"r","artifactName":null,"append":false,"lastChunk":true,"metadata":null}"#,
        ),
        (
            agent_message().into(),
            r#"{"agent":"a","role":"ROLE_AGENT","text":"hi","metadata":null}"#,
        ),
        (CloseData {}.into(), "{}"),
    ];
    for (payload, text) in cases {
        assert_eq!(
            serde_json::to_string(&payload.to_data().unwrap()).unwrap(),
            text
        );
    }
}

#[test]
fn data_of_another_kind_or_shape_is_refused_by_schema_and_payload() {
    let start = event(
        StartData {
            workflow: "w".into(),
            workflow_id: "w1".into(),
            steps: 1,
        }
        .into(),
    );
    // The right data under the wrong kind.
    let mislabelled = Event {
        kind: EventKind::StepStart,
        time: None,
        ..start.clone()
    };
    assert!(check_event_schema(&serde_json::to_value(&mislabelled).unwrap()).is_err());
    assert!(matches!(
        mislabelled.payload(),
        Err(PayloadError::Shape {
            kind: EventKind::StepStart,
            ..
        })
    ));
    // A renamed key, a wrong type; a missing nullable key (the schema wants every key written,
    // the typed reader takes an absent one as null).
    let mut renamed = start.clone();
    renamed.data = json!({"workflow": "w", "workflow_id": "w1", "steps": 1}).into();
    let mut missing = event(unconditional_route(None).into());
    missing.data.as_object_mut().unwrap().remove("reason");
    assert!(check_event_schema(&serde_json::to_value(&missing).unwrap()).is_err());
    assert!(matches!(missing.payload(), Ok(EventPayload::RouteDecision(d)) if d.reason.is_none()));
    let mut wrong = start.clone();
    wrong.data["steps"] = json!("one");
    let mut extra = start.clone();
    extra.data["secret"] = json!("x");
    for e in [renamed, wrong, extra] {
        let json = serde_json::to_value(&e).unwrap();
        assert!(check_event_schema(&json).is_err(), "schema accepted {json}");
        assert!(e.payload().is_err(), "payload accepted {json}");
    }
}

#[test]
fn the_time_is_written_as_utc_milliseconds_and_may_be_absent() {
    let e = event(CloseData {}.into());
    let text = serde_json::to_string(&e).unwrap();
    assert!(
        text.starts_with(r#"{"seq":3,"kind":"close","time":"2026-11-30T03:07:45.744Z","#),
        "{text}"
    );
    let back: Event = serde_json::from_str(&text).unwrap();
    assert_eq!(back, e);

    // An event written before a2aflow kept times loads, validates and writes no time.
    let old = r#"{"seq":3,"kind":"close","executionId":"x","depth":0,"step":"step","data":{}}"#;
    let back: Event = serde_json::from_str(old).unwrap();
    assert_eq!(back.time, None);
    assert_eq!(serde_json::to_string(&back).unwrap(), old);
    check_event_schema(&serde_json::from_str(old).unwrap()).unwrap();

    // Another form of time is refused by the schema; one that is not a time by both.
    let mut other = serde_json::to_value(&e).unwrap();
    other["time"] = json!("2026-11-30T04:07:45.744+01:00");
    assert!(check_event_schema(&other).is_err(), "{other}");
    assert_eq!(
        serde_json::from_value::<Event>(other).unwrap().time,
        e.time,
        "an RFC 3339 offset reads as the same instant"
    );
    let mut bad = serde_json::to_value(&e).unwrap();
    bad["time"] = json!("yesterday");
    assert!(check_event_schema(&bad).is_err(), "{bad}");
    let err = serde_json::from_value::<Event>(bad).unwrap_err();
    assert!(err.to_string().contains("RFC 3339"), "{err}");
}

#[test]
fn a_client_event_knows_its_kind() {
    let event: ClientEvent = LocalResponseData {
        agent: "a".into(),
        ok: false,
        received_messages: 0,
    }
    .into();
    assert_eq!(event.kind(), EventKind::AgentResponse);
    assert_eq!(
        <LocalResponseData as EventData>::KIND,
        EventKind::AgentResponse
    );
    assert_eq!(<StepStartData as EventData>::KIND, EventKind::StepStart);
}
