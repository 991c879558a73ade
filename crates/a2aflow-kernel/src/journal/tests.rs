//! The journal contract: record shapes, the workflow hash, and MemoryStore against the trait.

use super::samples::{started, workflow};
use super::*;
use a2aflow_model::{FailureCode, StepStatus, StepType, Subtask, TaskOutcomeStatus};
use proptest::prelude::*;
use serde_json::json;
use std::sync::Arc;

fn result(id: &str, failure: Option<Failure>) -> ExecutionResult {
    ExecutionResult {
        execution_id: id.into(),
        workflow_id: "wf-1".into(),
        success: failure.is_none(),
        failure,
        steps: Vec::new(),
        skipped_steps: Vec::new(),
    }
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn records_serialise_camel_case_tagged_by_type() {
    let intent = JournalRecord::TaskIntent(TaskIntent {
        step: "a".into(),
        subtask_index: 0,
        local_task_id: "r:a:0".into(),
        agent: "billing".into(),
        skill: "charge".into(),
        attempt: 1,
        message_id: "m-1".into(),
        context_id: "c-1".into(),
        content: MessageContent::text("hi"),
    });
    let v = serde_json::to_value(&intent).unwrap();
    assert_eq!(v["type"], "taskIntent");
    assert_eq!(v["localTaskId"], "r:a:0");
    assert_eq!(v["messageId"], "m-1");
    assert_eq!(v["contextId"], "c-1");
    let known = JournalRecord::RemoteTaskKnown {
        local_task_id: "r:a:0".into(),
        remote_task_id: "t-9".into(),
    };
    assert_eq!(
        serde_json::to_value(&known).unwrap(),
        json!({"type": "remoteTaskKnown", "localTaskId": "r:a:0", "remoteTaskId": "t-9"})
    );
    let answered = JournalRecord::CallbackAnswered(CallbackAnswered::OnRoute {
        key: RouteKey {
            source_step: "a".into(),
            target_step: "b".into(),
        },
        answer: Answer::Value(RouteDecision::allow("ok")),
    });
    assert_eq!(
        serde_json::to_value(&answered).unwrap(),
        json!({"type": "callbackAnswered", "callback": "onRoute",
               "key": {"sourceStep": "a", "targetStep": "b"},
               "answer": {"value": {"allowed": true, "reason": "ok"}}})
    );
    for r in [intent, known, answered] {
        let text = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<JournalRecord>(&text).unwrap(), r);
        assert_eq!(serde_json::to_value(&r).unwrap()["type"], r.kind());
    }
}

#[test]
fn run_started_keeps_the_workflow_its_hash_and_the_absolute_deadline() {
    let s = started("r1", 1_000);
    assert_eq!(s.deadline_ms, 1_000 + 600_000);
    assert_eq!(s.workflow_sha256.len(), 64);
    assert_eq!(s.workflow_sha256, workflow_sha256(&s.workflow));
    assert_eq!(s.workflow().unwrap(), workflow());
    assert!(s.check_same_workflow(&workflow()).is_ok());
    // Known vector: SHA-256 of the two bytes `{}`.
    assert_eq!(
        workflow_sha256(&json!({})),
        "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
    );
}

#[test]
fn a_changed_journaled_workflow_or_another_workflow_is_a_mismatch() {
    let mut s = started("r1", 1_000);
    s.workflow["name"] = json!("tampered");
    let e = s.workflow().unwrap_err();
    assert!(e.is(ErrorCode::StoreWorkflowMismatch), "{e}");
    assert_eq!(e.details["executionId"], "r1");

    let s = started("r1", 1_000);
    let mut other = workflow();
    let extra = Subtask {
        agent: "extra".into(),
        ..other.steps[0].subtasks[0].clone()
    };
    other.steps[0].subtasks.push(extra);
    let e = s.check_same_workflow(&other).unwrap_err();
    assert!(e.is(ErrorCode::StoreWorkflowMismatch), "{e}");
    assert!(e.message.contains("r1"), "{e}");
}

#[test]
fn store_errors_become_failures_with_their_code() {
    let f: Failure = StoreError::unknown_execution("nope").into();
    assert_eq!(
        f.code,
        FailureCode::Engine(ErrorCode::StoreUnknownExecution)
    );
    assert_eq!(f.details["executionId"], "nope");
}

/// The MemoryStore passes the checks every store passes.
#[test]
fn memory_store_conforms_to_the_store_contract() {
    block_on(async {
        conformance::check_all(|| async { Arc::new(MemoryStore::new()) as Arc<dyn RunStore> })
            .await;
        conformance::a_lapsed_lease_is_taken_over(&MemoryStore::with_lease_ttl(Duration::ZERO))
            .await;
    });
}

// ---- property: any sequence of records round-trips through serde and MemoryStore ----

fn text() -> impl Strategy<Value = String> {
    "[a-z0-9:\\-]{0,12}"
}

fn failure() -> impl Strategy<Value = Failure> {
    (text(), any::<u8>()).prop_map(|(m, n)| {
        Failure::new(ErrorCode::WorkflowStepFailed, m).with_detail("n", u64::from(n))
    })
}

fn task_key() -> impl Strategy<Value = TaskKey> {
    (text(), any::<u16>(), text(), 1u32..5).prop_map(|(step, i, id, attempt)| TaskKey {
        step,
        subtask_index: usize::from(i),
        local_task_id: id,
        attempt,
    })
}

fn view() -> impl Strategy<Value = TaskResultView> {
    (text(), text(), proptest::option::of(text()), any::<bool>()).prop_map(
        |(agent, id, ctx, ok)| TaskResultView {
            agent_name: agent.into(),
            skill: "s".into(),
            task_id: id.into(),
            task_description: "d".into(),
            status: if ok {
                TaskOutcomeStatus::Completed
            } else {
                TaskOutcomeStatus::Failed
            },
            context_id: ctx,
            remote_task_id: None,
            outputs: vec![a2aflow_model::Output::text("out")],
            received_messages: Vec::new(),
            error: (!ok).then(|| "boom".into()),
            error_code: (!ok).then(|| "a2a.task_failed".into()),
            error_details: Map::new(),
            attempts: 1,
        },
    )
}

fn callback() -> impl Strategy<Value = CallbackAnswered> {
    prop_oneof![
        (task_key(), text()).prop_map(|(key, t)| CallbackAnswered::OnTask {
            key,
            answer: Answer::Value(MessageContent::text(t)),
        }),
        (task_key(), failure()).prop_map(|(key, f)| CallbackAnswered::OnSelfTask {
            key,
            answer: Answer::Failure(f),
        }),
        (text(), text(), any::<bool>()).prop_map(|(s, t, ok)| CallbackAnswered::OnRoute {
            key: RouteKey {
                source_step: s,
                target_step: t,
            },
            answer: Answer::Value(RouteDecision {
                allowed: ok,
                reason: None,
            }),
        }),
        (text(), 1u32..9, text()).prop_map(|(id, exchange, code)| {
            CallbackAnswered::OnNegotiation {
                key: NegotiationKey {
                    local_task_id: id,
                    attempt: 1,
                    exchange,
                },
                answer: Answer::Value(NegotiationReply::Stop {
                    code,
                    reason: "no".into(),
                }),
            }
        }),
    ]
}

fn record() -> impl Strategy<Value = JournalRecord> {
    let states = prop_oneof![
        Just(TaskState::Submitted),
        Just(TaskState::Working),
        Just(TaskState::InputRequired),
        Just(TaskState::Completed),
    ];
    prop_oneof![
        callback().prop_map(JournalRecord::CallbackAnswered),
        (task_key(), text(), text(), text()).prop_map(|(k, agent, m, c)| {
            JournalRecord::TaskIntent(TaskIntent {
                step: k.step,
                subtask_index: k.subtask_index,
                local_task_id: k.local_task_id,
                agent,
                skill: "s".into(),
                attempt: k.attempt,
                message_id: m,
                context_id: c.clone(),
                content: MessageContent::text(c),
            })
        }),
        (text(), text()).prop_map(|(l, r)| JournalRecord::RemoteTaskKnown {
            local_task_id: l,
            remote_task_id: r,
        }),
        (text(), states).prop_map(|(l, state)| JournalRecord::RemoteState {
            local_task_id: l,
            state,
        }),
        (text(), view()).prop_map(|(l, result)| JournalRecord::TaskFinished {
            local_task_id: l,
            result,
        }),
        (text(), proptest::option::of(failure()), view()).prop_map(|(name, f, v)| {
            JournalRecord::StepFinished {
                result: StepResult {
                    step_name: name.into(),
                    step_type: StepType::AnySuccess,
                    status: if f.is_some() {
                        StepStatus::Failed
                    } else {
                        StepStatus::Completed
                    },
                    task_results: vec![v],
                    failure: f,
                },
            }
        }),
        (proptest::option::of(text()), proptest::option::of(text())).prop_map(|(l, r)| {
            JournalRecord::CancelRequested {
                local_task_id: l,
                remote_task_id: r,
            }
        }),
        (text(), text()).prop_map(|(l, r)| JournalRecord::CancelSent {
            local_task_id: l,
            remote_task_id: r,
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn any_record_sequence_round_trips_through_serde_and_memory_store(
        records in proptest::collection::vec(record(), 0..24),
        finish in proptest::option::of(proptest::option::of(failure())),
        batch in 1usize..5,
    ) {
        let mut records = records;
        if let Some(f) = finish {
            records.push(JournalRecord::RunFinished { result: result("p", f) });
        }
        for r in &records {
            let text = serde_json::to_string(r).unwrap();
            prop_assert_eq!(&serde_json::from_str::<JournalRecord>(&text).unwrap(), r);
        }
        let journal = block_on(async {
            let store = MemoryStore::new();
            store.create_run(started("p", 1)).await.unwrap();
            for chunk in records.chunks(batch) {
                store.append_batch("p", chunk.to_vec()).await.unwrap();
            }
            store.load("p").await.unwrap()
        });
        let text = serde_json::to_string(&journal).unwrap();
        prop_assert_eq!(&serde_json::from_str::<RunJournal>(&text).unwrap(), &journal);
        let mut expected = vec![JournalRecord::RunStarted(started("p", 1))];
        expected.extend(records);
        let got: Vec<_> = journal.entries.iter().map(|e| e.record.clone()).collect();
        prop_assert_eq!(got, expected);
        for (i, e) in journal.entries.iter().enumerate() {
            prop_assert_eq!(e.seq, i as u64);
        }
    }
}

/// A journal of run `r` with `records` after its `runStarted`.
fn journal_of(records: Vec<JournalRecord>) -> RunJournal {
    let mut all = vec![JournalRecord::RunStarted(started("r", 1))];
    all.extend(records);
    RunJournal {
        execution_id: "r".into(),
        entries: all
            .into_iter()
            .enumerate()
            .map(|(seq, record)| JournalEntry {
                seq: seq as u64,
                record,
            })
            .collect(),
    }
}

fn finished(local: &str, description: &str) -> JournalRecord {
    let mut result = super::samples::view(local);
    result.task_description = description.into();
    JournalRecord::TaskFinished {
        local_task_id: local.into(),
        result,
    }
}

#[test]
fn named_results_are_short_and_expand_to_the_last_result_journaled_before_them() {
    let mut loser = super::samples::view("r:a:1");
    loser.status = TaskOutcomeStatus::Canceled;
    let mut latest = super::samples::view("r:a:0");
    latest.task_description = "second".into();
    let step = StepResult {
        step_name: "a".into(),
        step_type: StepType::AnySuccess,
        status: StepStatus::Completed,
        task_results: vec![latest.clone(), loser.clone()],
        failure: None,
    };
    let named = NamedStepResult::naming(step.clone(), |v| v.task_id == "r:a:0");
    assert_eq!(
        named.task_results,
        [
            TaskSlot::Journaled("r:a:0".into()),
            TaskSlot::View(Box::new(loser.clone()))
        ]
    );
    let text = serde_json::to_value(JournalRecord::StepEnded {
        result: named.clone(),
    })
    .unwrap();
    assert_eq!(text["type"], "stepEnded");
    assert_eq!(
        text["result"]["taskResults"][0],
        json!({"journaled": "r:a:0"})
    );
    assert_eq!(
        text["result"]["taskResults"][1]["view"]["status"],
        "CANCELED"
    );
    let mut run = result("r", None);
    run.steps = vec![step.clone()];
    let named_run = NamedExecutionResult::naming(&run, |v| v.task_id == "r:a:0");

    let journal = journal_of(vec![
        finished("r:a:0", "first"),
        finished("r:a:0", "second"),
        JournalRecord::StepEnded { result: named },
        finished("r:a:0", "after the step"),
        JournalRecord::RunEnded { result: named_run },
    ])
    .expand_named()
    .unwrap();
    let kinds: Vec<_> = journal.entries.iter().map(|e| e.record.kind()).collect();
    assert_eq!(
        kinds,
        [
            "runStarted",
            "taskFinished",
            "taskFinished",
            "stepFinished",
            "taskFinished",
            "runFinished"
        ]
    );
    assert_eq!(
        journal.entries[3].record,
        JournalRecord::StepFinished {
            result: step.clone()
        }
    );
    // The run's end names the last result before it: the one journaled after the step.
    let mut expected = run.clone();
    expected.steps[0].task_results[0].task_description = "after the step".into();
    assert_eq!(journal.finished(), Some(&expected));
}

#[test]
fn a_named_result_the_journal_does_not_hold_before_it_is_corrupt() {
    let step = |id: &str| JournalRecord::StepEnded {
        result: NamedStepResult::naming(
            StepResult {
                step_name: "a".into(),
                step_type: StepType::AllSuccess,
                status: StepStatus::Completed,
                task_results: vec![super::samples::view(id)],
                failure: None,
            },
            |_| true,
        ),
    };
    for records in [
        vec![step("ghost")],
        vec![step("r:a:0"), finished("r:a:0", "too late")],
    ] {
        let e = journal_of(records).expand_named().unwrap_err();
        assert!(e.is(ErrorCode::StoreCorrupt), "{e}");
        assert_eq!(e.details["seq"], 1);
        assert_eq!(e.details["executionId"], "r");
        assert!(e.message.contains("taskFinished"), "{e}");
    }
}

#[test]
fn a_run_ended_in_either_shape_takes_no_more_records_and_has_its_state() {
    let cancelled = Failure::new(ErrorCode::WorkflowCancelled, "stopped");
    let ended = JournalRecord::RunEnded {
        result: NamedExecutionResult::naming(&result("r", Some(cancelled.clone())), |_| true),
    };
    assert_eq!(ended.final_state(), Some(RunState::Cancelled));
    let full = JournalRecord::RunFinished {
        result: result("r", None),
    };
    assert_eq!(full.final_state(), Some(RunState::Succeeded));
    for last in [ended, full] {
        let e = check_append("r", false, &[last.clone(), finished("x", "late")]).unwrap_err();
        assert!(e.is(ErrorCode::StoreInvalidAppend), "{e}");
        assert!(check_append("r", false, &[last]).is_ok());
    }
}
