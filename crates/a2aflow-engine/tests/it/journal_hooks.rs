//! What the engine client tells the dispatch journal: every send before it goes (write-ahead),
//! the remote task id once the agent names it, and each remote state change.

use crate::journal_support::{
    ALL_WIRES, LONG, Record, Recorder, client_for, dispatch, sent_messages, serve,
};
use a2aflow_engine::A2aEngineClient;
use a2aflow_kernel::{
    DispatchJournal, DispatchRequest, RemoteClient, RunInput, RunOptions, TaskFailure, TaskOutcome,
};
use a2aflow_model::a2a::TaskState;
use a2aflow_model::{
    ErrorCode, Event, Failure, LoadOptions, MessageContent, TaskRequest, load_workflow_value,
};
use async_trait::async_trait;
use serde_json::json;
use std::sync::{Arc, Mutex};

#[tokio::test]
async fn the_send_is_journaled_before_it_arrives_then_the_task_id_and_its_states() {
    for wire in ALL_WIRES {
        let server = serve(wire, |a| a).await;
        let client = client_for(&server, wire).await;
        let journal = Recorder::new(&server);
        let out = dispatch(&client, "task journaled", &journal).await.unwrap();
        let sent = sent_messages(&server);
        assert_eq!(sent.len(), 1, "{wire:?}");
        let records = journal.records();
        let Record::Send {
            context_id,
            message_id,
            remote_task_id,
            logged_sends,
        } = &records[0]
        else {
            panic!("{wire:?}: the first record is the send: {records:?}");
        };
        assert_eq!(
            *logged_sends, 0,
            "{wire:?}: journaled before the request arrived"
        );
        assert_eq!(sent[0]["messageId"], json!(message_id), "{wire:?}");
        assert_eq!(sent[0]["contextId"], json!(context_id), "{wire:?}");
        assert_eq!(*remote_task_id, None, "{wire:?}");
        let task_id = out.remote_task_id.clone().unwrap();
        assert_eq!(
            records[1],
            Record::Known {
                context_id: context_id.clone(),
                remote_task_id: task_id.clone(),
            },
            "{wire:?}: the task id next, once"
        );
        assert_eq!(journal.known(), std::slice::from_ref(&task_id), "{wire:?}");
        let states = journal.states();
        assert_eq!(states.last(), Some(&TaskState::Completed), "{wire:?}");
        assert!(
            states.windows(2).all(|w| w[0] != w[1]),
            "{wire:?}: a state is told when it changes: {states:?}"
        );
        assert!(
            records[2..].iter().all(
                |r| matches!(r, Record::State { remote_task_id, .. } if *remote_task_id == task_id)
            ),
            "{wire:?}: {records:?}"
        );
        server.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn a_gate_is_the_last_state_journaled() {
    let wire = ALL_WIRES[0];
    let server = serve(wire, |a| a).await;
    let client = client_for(&server, wire).await;
    let journal = Recorder::new(&server);
    // `input` asks for more; without Negotiation-T the task stops at the gate: one send.
    let e = dispatch(&client, "input please", &journal)
        .await
        .unwrap_err();
    assert_eq!(e.failure.gate(), Some(a2aflow_model::Gate::InputRequired));
    assert_eq!(journal.sends().len(), 1);
    assert_eq!(journal.states().last(), Some(&TaskState::InputRequired));
    server.shutdown().await.unwrap();
}

/// The engine client, with every dispatch told to `journal` (what the kernel does with a store).
struct Journaling {
    inner: A2aEngineClient,
    journal: Recorder,
}

#[async_trait]
impl RemoteClient for Journaling {
    async fn dispatch(&self, r: DispatchRequest<'_>) -> Result<TaskOutcome, TaskFailure> {
        let journal: &dyn DispatchJournal = &self.journal;
        let request = DispatchRequest {
            execution_id: r.execution_id,
            local_task_id: r.local_task_id,
            agent: r.agent,
            skill: r.skill,
            content: r.content,
            context_id: None,
            continues: None,
            reference_task_ids: &[],
            task: r.task,
            deadline: r.deadline,
            cancel: r.cancel,
            negotiation: r.negotiation,
            events: r.events,
            journal,
        };
        self.inner.dispatch(request).await
    }
}

struct Host;

#[async_trait]
impl a2aflow_kernel::ControlPoint for Host {
    async fn on_task(
        &self,
        request: TaskRequest,
    ) -> Result<MessageContent, a2aflow_kernel::CallbackError> {
        Ok(MessageContent::text(request.description))
    }
}

#[tokio::test]
async fn a_journal_that_fails_means_nothing_is_sent_nor_announced_and_the_task_fails_with_it() {
    for wire in ALL_WIRES {
        let server = serve(wire, |a| a).await;
        let refusal = Failure::new(ErrorCode::ConfigInvalid, "the run store is read-only");
        let client = Journaling {
            inner: client_for(&server, wire).await,
            journal: Recorder::refusing(&server, refusal),
        };
        let client = Arc::new(client);
        let workflow = load_workflow_value(
            &json!({"id": "wf", "name": "w", "steps": [{"name": "s", "subtasks": [
                {"agent": "a", "description": "task never sent"}]}]}),
            LoadOptions::LENIENT,
        )
        .unwrap()
        .workflow;
        let seen: Arc<Mutex<Vec<Event>>> = Arc::default();
        let sink = seen.clone();
        let options = RunOptions {
            timeout: LONG,
            on_event: Some(Arc::new(move |e: &Event| {
                sink.lock().unwrap().push(e.clone())
            })),
            ..RunOptions::default()
        };
        let result = a2aflow_kernel::run(
            workflow,
            RunInput::default(),
            Arc::new(Host),
            client.clone(),
            options,
        )
        .await;
        assert!(!result.success, "{wire:?}");
        let view = &result.steps[0].task_results[0];
        assert_eq!(
            view.error_code.as_deref(),
            Some("config.invalid"),
            "{wire:?}: the journal's failure ends the task"
        );
        assert!(sent_messages(&server).is_empty(), "{wire:?}: nothing sent");
        assert_eq!(client.journal.sends().len(), 1, "{wire:?}");
        let events = seen.lock().unwrap().clone();
        assert!(
            !events.iter().any(|e| e.kind.as_str() == "agent_request"),
            "{wire:?}: nothing announced as sent"
        );
        server.shutdown().await.unwrap();
    }
}
