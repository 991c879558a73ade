//! The `[extensions]` section: the extension sender is configured from the same file as `run`,
//! and built from the same channel door.

use std::time::Duration;

use a2aflow::EngineConfig;
use a2aflow::model::MessageContent;
use a2aflow_testkit::{AgentSpec, Script, TestServer};

#[test]
fn the_extensions_section_reaches_the_extension_config() {
    let toml = r#"
        [extensions]
        authorization_timeout_secs = 7.5
        poll_interval_ms = 20
        acknowledgement_timeout_secs = 9
        cancel_timeout_secs = 0.5
        [extensions.resubscribe]
        max_attempts = 5
        backoff_ms = 50
        max_backoff_ms = 400
    "#;
    let json = r#"{"extensions": {"authorization_timeout_secs": 7.5, "poll_interval_ms": 20,
        "acknowledgement_timeout_secs": 9, "cancel_timeout_secs": 0.5,
        "resubscribe": {"max_attempts": 5, "backoff_ms": 50, "max_backoff_ms": 400}}}"#;
    let a = EngineConfig::from_toml_str(toml).unwrap();
    assert_eq!(a, EngineConfig::from_json_str(json).unwrap());
    let e = a.extension_config().unwrap();
    assert_eq!(e.authorization_timeout, Duration::from_millis(7500));
    assert_eq!(e.poll_interval, Duration::from_millis(20));
    assert_eq!(e.acknowledgement_timeout, Duration::from_secs(9));
    assert_eq!(e.cancel_timeout, Duration::from_millis(500));
    assert_eq!(e.resubscribe.max_attempts, 5);
    assert_eq!(e.resubscribe.delay(1), Duration::from_millis(50));
    assert_eq!(e.resubscribe.delay(9), Duration::from_millis(400));
    // Absent, the sender's own defaults.
    assert_eq!(
        EngineConfig::default().extension_config().unwrap(),
        a2aflow::extensions::ExtensionConfig::default()
    );
}

#[test]
fn bad_extension_values_are_config_invalid() {
    for (text, needle) in [
        (
            "[extensions]\npoll_interval_ms = 5",
            "poll_interval must be between",
        ),
        (
            "[extensions]\nauthorization_timeout_secs = 0",
            "extensions.authorization_timeout_secs must be a positive",
        ),
        (
            "[extensions.resubscribe]\nbackoff_ms = 900\nmax_backoff_ms = 10",
            "max_backoff must not be below backoff",
        ),
        ("[extensions]\npoll_ms = 20", "unknown field `poll_ms`"),
    ] {
        let err = EngineConfig::from_toml_str(text).unwrap_err();
        assert_eq!(err.code, "config.invalid", "{text}");
        assert!(err.message.contains(needle), "{text}: {}", err.message);
    }
}

#[tokio::test]
async fn the_extension_sender_is_built_from_the_configuration() {
    let server = TestServer::builder()
        .agent(
            AgentSpec::new("auth")
                .extension(a2aflow::a2at::AUTHORIZATION_T_EXTENSION_URI, false)
                .script(|_| Script::reply_text("approved")),
        )
        .spawn()
        .await
        .unwrap();
    let config =
        EngineConfig::from_toml_str("[extensions]\nauthorization_timeout_secs = 5").unwrap();
    let agents = a2aflow::discover_agents(&[("auth", server.card_url("auth"))], &config)
        .await
        .unwrap();
    let sender = a2aflow::build_extension_sender(&agents, &config, None).unwrap();
    assert_eq!(
        sender.config().authorization_timeout,
        Duration::from_secs(5)
    );
    let uri = a2aflow::a2at::AUTHORIZATION_T_EXTENSION_URI;
    let mut metadata = serde_json::Map::new();
    metadata.insert(uri.to_owned(), serde_json::json!("## Request\nok?"));
    let content = MessageContent {
        parts: MessageContent::text("ok?").parts,
        metadata: Some(metadata),
        extensions: vec![uri.to_owned()],
        context_id: None,
    };
    let out = sender.send_authorization("auth", content).await.unwrap();
    assert!(out.is_success(), "{out:?}");
    server.shutdown().await.unwrap();
}
