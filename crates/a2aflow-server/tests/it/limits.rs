//! The limits on what clients hold open — runs in flight, runs in flight per caller, open
//! streams per task — refused with the same typed A2A error over every binding: each scenario
//! runs once per binding (JSON-RPC, HTTP+JSON, gRPC) through a2aflow's own transports, and
//! checks the refusal as that binding carries it.

use crate::support::{
    HANG, Host, as_caller, builder, client, client_with, message, send, serve_with,
};
use a2a::{SendMessageResponse, StreamResponse, SubscribeToTaskRequest};
use a2aflow::protocol::auth::Secret;
use a2aflow::protocol::{Binding, CallOptions, Transport, TransportError};
use a2aflow_server::{Callers, Limits};
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::Duration;

const BINDINGS: [Binding; 3] = [Binding::JsonRpc, Binding::HttpJson, Binding::Grpc];

fn limits(set: impl FnOnce(&mut Limits)) -> Limits {
    let mut limits = Limits::default();
    limits.shutdown_grace = Duration::from_millis(200);
    set(&mut limits);
    limits
}

/// Starts a run that waits until it is cancelled; its task id.
async fn slow(rpc: &dyn Transport) -> Result<String, TransportError> {
    match rpc
        .send_message(&send(message("slow"), true), &CallOptions::default())
        .await?
    {
        SendMessageResponse::Task(t) => Ok(t.id),
        SendMessageResponse::Message(m) => panic!("a served workflow answers a task, got {m:?}"),
    }
}

/// A limit's refusal as `binding` carries it: `a2a.unsupported_operation` (reason
/// `UNSUPPORTED_OPERATION`), JSON-RPC `-32004`, HTTP+JSON `400 FAILED_PRECONDITION`, gRPC
/// `FAILED_PRECONDITION`; the message says which limit.
fn assert_limit_refusal(
    binding: Binding,
    refused: Result<impl std::fmt::Debug, TransportError>,
    says: &str,
) {
    let e = match refused {
        Err(e) => e,
        Ok(v) => panic!("{binding:?}: refused past the limit, got {v:?}"),
    };
    assert_eq!(
        e.code_str(),
        "a2a.unsupported_operation",
        "{binding:?}: {e}"
    );
    let TransportError::Remote(r) = &e else {
        panic!("{binding:?}: the server's typed refusal, got {e}");
    };
    assert_eq!(
        r.reason.as_deref(),
        Some("UNSUPPORTED_OPERATION"),
        "{binding:?}"
    );
    let wire = (r.numeric_code, r.status.as_deref(), r.http_status);
    match binding {
        Binding::JsonRpc => assert_eq!(wire.0, Some(-32004), "{binding:?}: {r:?}"),
        Binding::HttpJson => assert_eq!(
            (wire.1, wire.2),
            (Some("FAILED_PRECONDITION"), Some(400)),
            "{binding:?}: {r:?}"
        ),
        _ => assert_eq!(wire.1, Some("FAILED_PRECONDITION"), "{binding:?}: {r:?}"),
    }
    assert!(r.message.contains(says), "{binding:?}: {}", r.message);
}

#[tokio::test]
async fn runs_past_the_in_flight_limit_are_refused_over_every_binding() {
    for binding in BINDINGS {
        let (server, _) = serve_with(limits(|l| l.runs_in_flight = 1)).await;
        let rpc = client(&server, "echo", binding).await;
        slow(rpc.as_ref()).await.unwrap();
        assert_limit_refusal(binding, slow(rpc.as_ref()).await, "limit of runs in flight");
        server.shutdown().await;
    }
}

#[tokio::test]
async fn each_caller_has_its_own_limit_of_runs_in_flight_over_every_binding() {
    for binding in BINDINGS {
        let callers = Callers::new()
            .bearer("alice", Secret::new("alice-token"))
            .unwrap()
            .api_key("bob", "X-API-Key", Secret::new("bob-key"))
            .unwrap();
        let server = builder(Arc::new(Host::default()))
            .callers(callers)
            .limits(limits(|l| l.runs_per_caller = 1))
            .start()
            .await
            .unwrap();
        let alice_http = as_caller("authorization", "Bearer alice-token");
        let alice = client_with(&server, "echo", binding, &alice_http).await;
        let bob_http = as_caller("x-api-key", "bob-key");
        let bob = client_with(&server, "echo", binding, &bob_http).await;
        slow(alice.as_ref()).await.unwrap();
        assert_limit_refusal(binding, slow(alice.as_ref()).await, "limit per caller");
        slow(bob.as_ref())
            .await
            .unwrap_or_else(|e| panic!("{binding:?}: bob has his own limit: {e}"));
        server.shutdown().await;
    }
}

#[tokio::test]
async fn subscribers_past_the_limit_are_refused_over_every_binding() {
    for binding in BINDINGS {
        let (server, _) = serve_with(limits(|l| l.subscribers_per_task = 1)).await;
        let rpc = client(&server, "echo", binding).await;
        let id = slow(rpc.as_ref()).await.unwrap();
        let subscribe = SubscribeToTaskRequest { id, tenant: None };
        let opts = CallOptions::default();
        // The first subscriber holds its stream open.
        let mut first = rpc.subscribe_to_task(&subscribe, &opts).await.unwrap();
        let event = tokio::time::timeout(HANG, first.next()).await.unwrap();
        assert!(
            matches!(event, Some(Ok(StreamResponse::Task(_)))),
            "{binding:?}: {event:?}"
        );
        // The second is refused, when the call is answered or as its stream's first event.
        let second = match rpc.subscribe_to_task(&subscribe, &opts).await {
            Err(e) => Err(e),
            Ok(mut stream) => match tokio::time::timeout(HANG, stream.next()).await.unwrap() {
                Some(Err(e)) => Err(e),
                other => Ok(format!("{other:?}")),
            },
        };
        assert_limit_refusal(binding, second, "subscribers, the server's limit");
        drop(first);
        server.shutdown().await;
    }
}
