//! The sender checks content against the card with the engine client's activation rule: the
//! same refusals, with the same codes, before anything is sent.

use crate::support::*;
use a2aflow_extensions::ExtensionConfig;
use a2aflow_testkit::{Route, TestServer};
use a2at::TASK_T_EXTENSION_URI;

#[tokio::test]
async fn an_activated_a2a_t_extension_the_card_does_not_declare_is_refused_before_sending() {
    let server = TestServer::builder()
        .agent(agent("auth", &[AUTH]))
        .spawn()
        .await
        .unwrap();
    let sender = sender(&server, &["auth"], ExtensionConfig::default()).await;
    let mut content = auth_content("approve policy P-1");
    content.extensions.push(TASK_T_EXTENSION_URI.to_owned());
    let err = sender
        .send_authorization("auth", content)
        .await
        .unwrap_err();
    assert_eq!(err.code, "a2a.extension_not_supported", "{err}");
    assert_eq!(err.message, "Target agent does not declare Task-T: auth");
    assert_eq!(err.details["uri"], TASK_T_EXTENSION_URI);
    let sent = count(&server, "auth", Route::Stream) + count(&server, "auth", Route::Send);
    assert_eq!(sent, 0, "nothing reaches the agent");
    server.shutdown().await.unwrap();
}
