//! `a2aflow send --binding grpc` and `a2aflow card` against a testkit agent serving gRPC only.

use crate::support::{a2aflow_guarded, serve, stdout, stdout_json};
use a2aflow_testkit::{AgentSpec, Binding, TestServer};

fn grpc_agent() -> (TestServer, tokio::runtime::Runtime) {
    serve(TestServer::builder().agent(AgentSpec::new("g").bindings(&[Binding::Grpc])))
}

#[test]
fn send_over_grpc_reaches_an_agent_that_offers_only_grpc() {
    let (server, _rt) = grpc_agent();
    let card = server.card_url("g");
    for extra in [&["--binding", "grpc"][..], &[][..]] {
        let mut args = vec!["send", card.as_str(), "task over grpc", "--format", "json"];
        args.extend_from_slice(extra);
        let out = a2aflow_guarded(&args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{extra:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let task = stdout_json(&out);
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task:#}");
    }
    let calls: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
    assert!(
        calls
            .iter()
            .any(|p| p == "/lf.a2a.v1.A2AService/SendMessage"),
        "{calls:?}"
    );
    let out = a2aflow_guarded(&["send", card.as_str(), "x", "--binding", "rest"]);
    assert_eq!(out.status.code(), Some(1), "the card offers no HTTP+JSON");
}

#[test]
fn card_shows_the_grpc_interface() {
    let (server, _rt) = grpc_agent();
    let out = a2aflow_guarded(&["card", &server.card_url("g")]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(
        // The testkit publishes `http://host:port`; the card is shown as it said it.
        text.contains(&format!("GRPC http://{} (1.0)", server.addr())),
        "{text}"
    );
}
