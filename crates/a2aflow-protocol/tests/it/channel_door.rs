//! The channel door: a card and a `ChannelConfig` become an agent channel on the preferred
//! binding, and the agent table keeps channels by unique name.

use a2aflow_model::a2a::AgentCard;
use a2aflow_protocol::{AgentTable, Binding, ChannelConfig, ChannelFactory, Limits};

fn card(name: &str, interfaces: &[(&str, &str)]) -> AgentCard {
    let ifs: Vec<serde_json::Value> = interfaces
        .iter()
        .map(|(u, b)| serde_json::json!({"url": u, "protocolBinding": b, "protocolVersion": "1.0"}))
        .collect();
    serde_json::from_value(serde_json::json!({
        "name": name, "description": "d", "version": "1", "supportedInterfaces": ifs,
        "capabilities": {"streaming": true, "extensions": [{"uri": "urn:x", "required": true}]},
        "defaultInputModes": [], "defaultOutputModes": [], "skills": []
    }))
    .unwrap()
}

#[test]
fn the_door_chooses_the_preferred_interface_and_keeps_the_configured_limits() {
    let c = card(
        "a",
        &[("http://h/rpc", "JSONRPC"), ("http://h/rest", "HTTP+JSON")],
    );
    let mut limits = Limits::default();
    limits.max_artifact = 123;
    let factory = ChannelFactory::new(
        ChannelConfig::new()
            .unwrap()
            .with_preference(&[Binding::HttpJson, Binding::JsonRpc])
            .with_limits(limits),
    )
    .unwrap();
    let channel = factory.channel(&c).unwrap();
    assert_eq!(channel.binding(), Binding::HttpJson);
    assert_eq!(channel.transport.url(), "http://h/rest");
    assert_eq!(channel.interface.as_ref().unwrap().url, "http://h/rest");
    assert_eq!(channel.limits.max_artifact, 123);
    assert!(channel.streaming);
    assert_eq!(channel.declared.len(), 1);
    assert!(channel.declared[0].required);
    // A card offering nothing the preference speaks is refused before anything is sent.
    let grpc = card("g", &[("h:1", "GRPC")]);
    let e = factory.channel(&grpc).unwrap_err();
    assert_eq!(e.code, "a2a.unsupported_binding");
}

#[test]
fn the_agent_table_refuses_blank_duplicate_and_unknown_names() {
    let factory = ChannelFactory::new(ChannelConfig::new().unwrap()).unwrap();
    let mut table = AgentTable::new();
    table
        .insert(
            factory
                .channel(&card("a", &[("http://h/rpc", "JSONRPC")]))
                .unwrap(),
        )
        .unwrap();
    let again = factory
        .channel(&card(" a ", &[("http://h/rpc", "JSONRPC")]))
        .unwrap();
    let e = table.insert(again).unwrap_err();
    assert_eq!(e.code, "config.invalid");
    assert_eq!(e.message, "Duplicate AgentCard name: a");
    let blank = factory
        .channel(&card("  ", &[("http://h/rpc", "JSONRPC")]))
        .unwrap();
    assert_eq!(table.insert(blank).unwrap_err().code, "config.invalid");
    assert_eq!(table.get("b").unwrap_err().code, "workflow.unknown_agent");
    assert_eq!(table.get("a").unwrap().name, "a");
    assert_eq!(table.len(), 1);
}
