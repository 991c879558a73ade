//! An agent that refuses ListTasks, or predates it, on both bindings.

use a2aflow_testkit::{AgentSpec, ListTasks, Route, TestServer};
use serde_json::json;

use crate::support::{get_v1, path_of, rpc};

async fn serve(support: ListTasks) -> TestServer {
    TestServer::builder()
        .agent(AgentSpec::new("a").list_tasks(support))
        .spawn()
        .await
        .unwrap()
}

#[tokio::test]
async fn list_tasks_is_served_refused_or_missing_as_the_spec_says() {
    // (support, JSON-RPC error code or none, REST status)
    let cases = [
        (ListTasks::Served, None, 200),
        (ListTasks::Unsupported, Some(-32004), 400),
        (ListTasks::Absent, Some(-32601), 404),
    ];
    for (support, rpc_code, rest_status) in cases {
        let s = serve(support).await;
        let answer = rpc(&s, "a", "ListTasks", json!({"contextId": "c"})).await;
        match rpc_code {
            None => assert_eq!(answer["result"]["tasks"], json!([]), "{support:?}"),
            Some(code) => assert_eq!(answer["error"]["code"], json!(code), "{support:?}"),
        }
        let path = format!("{}/tasks?contextId=c", path_of(&s.rest_url("a")));
        let r = get_v1(&s, &path).await;
        assert_eq!(r.status, rest_status, "{support:?}");
        let listed = s
            .requests()
            .iter()
            .filter(|r| r.route == Some(Route::List))
            .count();
        assert_eq!(listed, 2, "{support:?}: both calls are logged as ListTasks");
        // Everything else is served as before.
        let sent = rpc(
            &s,
            "a",
            "SendMessage",
            json!({"message": crate::support::user_message("task x")}),
        )
        .await;
        assert!(sent["result"]["task"]["id"].is_string(), "{support:?}");
        s.shutdown().await.unwrap();
    }
}
