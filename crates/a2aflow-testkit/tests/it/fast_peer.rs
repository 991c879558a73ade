//! The canned-answer peer: its answers are valid A2A for the request they answer (ids put in,
//! escaped), on every binding, and what it does not serve is refused.

use a2aflow_testkit::FastPeer;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

use crate::support::DEADLINE;

/// One request on a fresh connection: the status and the body parsed as JSON.
async fn post(peer: &FastPeer, method: &str, path: &str, body: &Value) -> (u16, Value) {
    let tcp = tokio::net::TcpStream::connect(peer.addr()).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    tokio::spawn(conn);
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("host", peer.addr().to_string())
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(serde_json::to_vec(body).unwrap())))
        .unwrap();
    let resp = tokio::time::timeout(DEADLINE, sender.send_request(req))
        .await
        .unwrap()
        .unwrap();
    let status = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let v = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&bytes)));
    (status, v)
}

fn message(context_id: &str) -> Value {
    json!({"messageId": "m-1", "contextId": context_id, "role": "ROLE_USER",
        "parts": [{"text": "hello"}]})
}

/// The task of a SendMessage answer, checked to be a valid `SendMessageResponse`.
fn completed_task(result: &Value) -> a2a::Task {
    match serde_json::from_value::<a2a::SendMessageResponse>(result.clone()).unwrap() {
        a2a::SendMessageResponse::Task(task) => task,
        other => panic!("not a task: {other:?}"),
    }
}

#[tokio::test]
async fn jsonrpc_send_is_a_completed_task_in_the_requests_context_with_its_id() {
    let peer = FastPeer::spawn().await.unwrap();
    let context = "ctx \"quoted\" \\ and ünïcode";
    let body = json!({"jsonrpc": "2.0", "id": "req-7", "method": "SendMessage",
        "params": {"message": message(context)}});
    let (status, v) = post(&peer, "POST", "/jsonrpc", &body).await;
    assert_eq!(status, 200);
    assert_eq!(v["jsonrpc"], "2.0");
    assert_eq!(v["id"], "req-7");
    let task = completed_task(&v["result"]);
    assert_eq!(task.context_id, context);
    assert_eq!(task.status.state, a2a::TaskState::Completed);
    assert_eq!(task.artifacts.as_ref().map(Vec::len), Some(1));
    // A second send is another task.
    let (_, again) = post(&peer, "POST", "/jsonrpc", &body).await;
    assert_ne!(completed_task(&again["result"]).id, task.id);
    assert_eq!(peer.sends(), 2);
    peer.shutdown().await.unwrap();
}

#[tokio::test]
async fn http_json_send_is_a_completed_task_in_the_requests_context() {
    let peer = FastPeer::spawn().await.unwrap();
    let body = json!({"message": message("rest-ctx")});
    let (status, v) = post(&peer, "POST", "/rest/message:send", &body).await;
    assert_eq!(status, 200);
    let task = completed_task(&v);
    assert_eq!(task.context_id, "rest-ctx");
    assert_eq!(task.status.state, a2a::TaskState::Completed);
    peer.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_card_lists_every_binding_and_other_requests_are_refused() {
    let peer = FastPeer::spawn().await.unwrap();
    let (status, card) = post(&peer, "GET", "/.well-known/agent-card.json", &json!({})).await;
    assert_eq!(status, 200);
    // It answers SendMessage only, so the card offers no streaming (an engine would stream).
    assert_eq!(card["capabilities"]["streaming"], false);
    let interfaces = card["supportedInterfaces"].as_array().unwrap();
    let bindings: Vec<&str> = interfaces
        .iter()
        .map(|i| i["protocolBinding"].as_str().unwrap())
        .collect();
    assert_eq!(bindings, ["JSONRPC", "HTTP+JSON", "GRPC"]);
    assert_eq!(interfaces[0]["url"], peer.jsonrpc_url());
    assert_eq!(interfaces[1]["url"], peer.rest_url());
    assert_eq!(interfaces[2]["url"], peer.grpc_url());
    let get = json!({"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": "t"}});
    let (_, v) = post(&peer, "POST", "/jsonrpc", &get).await;
    assert_eq!(v["id"], 3);
    assert_eq!(v["error"]["code"], -32601);
    let (status, v) = post(&peer, "POST", "/rest/message:send", &json!({"nope": 1})).await;
    assert_eq!(status, 400);
    assert_eq!(v["error"]["status"], "INVALID_ARGUMENT");
    assert_eq!(peer.sends(), 0);
    peer.shutdown().await.unwrap();
}

async fn grpc_client(
    peer: &FastPeer,
) -> a2a_pb::a2a_service_client::A2aServiceClient<tonic::transport::Channel> {
    let channel = tonic::transport::Endpoint::from_shared(peer.grpc_url())
        .unwrap()
        .connect()
        .await
        .unwrap();
    a2a_pb::a2a_service_client::A2aServiceClient::new(channel)
}

fn grpc_send(context_id: &str) -> a2a_pb::SendMessageRequest {
    let request: a2a::SendMessageRequest =
        serde_json::from_value(json!({"message": message(context_id)})).unwrap();
    a2a_pb::pbconv::to_proto_send_message_request(&request)
}

#[tokio::test]
async fn grpc_send_is_a_completed_task_in_the_requests_context_and_other_calls_are_refused() {
    let peer = FastPeer::spawn().await.unwrap();
    let mut client = grpc_client(&peer).await;
    let context = "grpc \"ctx\" ünïcode";
    let answer = tokio::time::timeout(DEADLINE, client.send_message(grpc_send(context)))
        .await
        .unwrap()
        .unwrap()
        .into_inner();
    let task = match a2a_pb::pbconv::from_proto_send_message_response(&answer) {
        Some(a2a::SendMessageResponse::Task(task)) => task,
        other => panic!("not a task: {other:?}"),
    };
    assert_eq!(task.context_id, context);
    assert_eq!(task.status.state, a2a::TaskState::Completed);
    assert_eq!(task.artifacts.as_ref().map(Vec::len), Some(1));
    let again = client.send_message(grpc_send(context)).await.unwrap();
    let again = a2a_pb::pbconv::from_proto_send_message_response(again.get_ref());
    match again {
        Some(a2a::SendMessageResponse::Task(t)) => assert_ne!(t.id, task.id),
        other => panic!("not a task: {other:?}"),
    }
    let get = a2a_pb::GetTaskRequest {
        id: task.id.clone(),
        ..Default::default()
    };
    let refused = client.get_task(get).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unimplemented);
    assert_eq!(peer.sends(), 2);
    assert!(peer.total_connections() >= 1);
    drop(client);
    peer.shutdown().await.unwrap();
}
