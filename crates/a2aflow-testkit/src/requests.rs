//! Requests a test's client sends to the testkit's agents (or any A2A agent), built once here
//! instead of in every test.

use a2a::ListTasksRequest;

/// ListTasks of the tasks in `context_id`, every other field unset (the agent's defaults); a
/// test that needs a page size or a history length sets it with struct update syntax:
/// `ListTasksRequest { page_size: Some(50), ..list_in_context(ctx) }`.
pub fn list_in_context(context_id: &str) -> ListTasksRequest {
    ListTasksRequest {
        context_id: Some(context_id.to_owned()),
        ..list_all()
    }
}

/// ListTasks of every task the agent lists, every field unset (the agent's defaults).
pub fn list_all() -> ListTasksRequest {
    ListTasksRequest {
        context_id: None,
        status: None,
        page_size: None,
        page_token: None,
        history_length: None,
        status_timestamp_after: None,
        include_artifacts: None,
        tenant: None,
    }
}
