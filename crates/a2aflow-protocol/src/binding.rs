//! Choosing a binding from an agent card's `supportedInterfaces`, and building its transport.

use std::sync::Arc;

use a2aflow_model::a2a::{AgentCard, AgentInterface};

use crate::error::TransportError;
use crate::http_client::HttpClient;
use crate::jsonrpc::JsonRpcTransport;
use crate::rest::RestTransport;
use crate::transport::Transport;

/// A protocol binding a2aflow speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Binding {
    /// JSON-RPC 2.0 over HTTP (`JSONRPC`).
    JsonRpc,
    /// HTTP+JSON, the REST binding (`HTTP+JSON`).
    HttpJson,
}

impl Binding {
    /// The default preference order: JSON-RPC, then HTTP+JSON.
    pub const DEFAULT_PREFERENCE: &'static [Binding] = &[Binding::JsonRpc, Binding::HttpJson];

    /// The `protocolBinding` value on the card.
    pub const fn wire_name(self) -> &'static str {
        match self {
            Binding::JsonRpc => "JSONRPC",
            Binding::HttpJson => "HTTP+JSON",
        }
    }
}

impl std::fmt::Display for Binding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.wire_name())
    }
}

/// True for a `protocolVersion` of major version 1 (`1.0`, `1`, `1.1`); 0.3 is not spoken.
fn speaks_v1(version: &str) -> bool {
    version.trim().split('.').next() == Some("1")
}

/// The first interface of the card (in card order) for the first binding in `preference` that
/// the card offers at protocol version 1.x. None offered: `a2a.unsupported_binding`.
pub fn select_interface<'c>(
    card: &'c AgentCard,
    preference: &[Binding],
) -> Result<(Binding, &'c AgentInterface), TransportError> {
    for &b in preference {
        if let Some(i) = card.supported_interfaces.iter().find(|i| {
            i.protocol_binding.eq_ignore_ascii_case(b.wire_name()) && speaks_v1(&i.protocol_version)
        }) {
            return Ok((b, i));
        }
    }
    Err(TransportError::UnsupportedBinding {
        offered: card
            .supported_interfaces
            .iter()
            .map(|i| format!("{}@{}", i.protocol_binding, i.protocol_version))
            .collect(),
    })
}

/// Builds the transport for the card's best interface in `preference` order (use
/// [`Binding::DEFAULT_PREFERENCE`] unless the host says otherwise). The interface's `tenant`, when
/// set, is sent on every request.
pub fn connect(
    card: &AgentCard,
    client: &HttpClient,
    preference: &[Binding],
) -> Result<Arc<dyn Transport>, TransportError> {
    let (binding, interface) = select_interface(card, preference)?;
    connect_interface(binding, interface, client)
}

/// Builds the transport for an interface already chosen with [`select_interface`] (so a caller
/// that needs the interface before connecting, to bind credentials to its URL, chooses once).
pub fn connect_interface(
    binding: Binding,
    interface: &AgentInterface,
    client: &HttpClient,
) -> Result<Arc<dyn Transport>, TransportError> {
    // The card chose the URL: one without an http(s) origin is the agent's fault.
    crate::http_client::parse_uri(&interface.url).map_err(|_| {
        let shown: String = interface
            .url
            .chars()
            .take(128)
            .flat_map(char::escape_debug)
            .collect();
        TransportError::InvalidResponse(format!(
            "the card's {binding} interface URL \"{shown}\" is not an absolute http(s) URL"
        ))
    })?;
    let tenant = interface.tenant.clone().filter(|t| !t.is_empty());
    Ok(match binding {
        Binding::JsonRpc => Arc::new(JsonRpcTransport::new(
            client.clone(),
            &interface.url,
            tenant,
        )?),
        Binding::HttpJson => Arc::new(RestTransport::new(client.clone(), &interface.url, tenant)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(interfaces: &[(&str, &str, &str)]) -> AgentCard {
        let ifs: Vec<serde_json::Value> = interfaces
            .iter()
            .map(|(u, b, v)| serde_json::json!({"url": u, "protocolBinding": b, "protocolVersion": v}))
            .collect();
        serde_json::from_value(serde_json::json!({
            "name": "a", "description": "d", "version": "1", "supportedInterfaces": ifs,
            "capabilities": {}, "defaultInputModes": [], "defaultOutputModes": [], "skills": []
        }))
        .unwrap()
    }

    #[test]
    fn preference_order_wins_over_card_order() {
        let c = card(&[
            ("http://h/rest", "HTTP+JSON", "1.0"),
            ("http://h/rpc", "JSONRPC", "1.0"),
        ]);
        let (b, i) = select_interface(&c, Binding::DEFAULT_PREFERENCE).unwrap();
        assert_eq!((b, i.url.as_str()), (Binding::JsonRpc, "http://h/rpc"));
        let (b, i) = select_interface(&c, &[Binding::HttpJson, Binding::JsonRpc]).unwrap();
        assert_eq!((b, i.url.as_str()), (Binding::HttpJson, "http://h/rest"));
    }

    #[test]
    fn v03_interfaces_and_unknown_bindings_are_not_spoken() {
        let c = card(&[
            ("http://h/rpc03", "JSONRPC", "0.3"),
            ("h:50051", "GRPC", "1.0"),
            ("http://h/rest", "http+json", "1.0"),
        ]);
        let (b, i) = select_interface(&c, Binding::DEFAULT_PREFERENCE).unwrap();
        assert_eq!((b, i.url.as_str()), (Binding::HttpJson, "http://h/rest"));
        let c = card(&[("http://h/rpc03", "JSONRPC", "0.3"), ("h:1", "GRPC", "1.0")]);
        let e = select_interface(&c, Binding::DEFAULT_PREFERENCE).unwrap_err();
        assert_eq!(e.code_str(), "a2a.unsupported_binding");
        assert_eq!(
            e.to_failure().details["offered"],
            serde_json::json!(["JSONRPC@0.3", "GRPC@1.0"])
        );
        // An empty preference list offers nothing.
        let c = card(&[("http://h/rpc", "JSONRPC", "1.0")]);
        assert!(select_interface(&c, &[]).is_err());
    }

    #[test]
    fn an_interface_url_without_an_http_origin_is_the_agents_fault() {
        let client = HttpClient::new().unwrap();
        for url in ["not a url", "file:///etc/passwd", "h:50051"] {
            let c = card(&[(url, "JSONRPC", "1.0")]);
            let e = connect(&c, &client, Binding::DEFAULT_PREFERENCE)
                .err()
                .unwrap();
            assert_eq!(e.code_str(), "a2a.invalid_response", "{url}");
        }
    }

    #[test]
    fn connect_builds_the_chosen_transport() {
        let c = card(&[("http://h/rpc", "JSONRPC", "1.0")]);
        let client = HttpClient::new().unwrap();
        let t = connect(&c, &client, Binding::DEFAULT_PREFERENCE).unwrap();
        assert_eq!(t.binding(), Binding::JsonRpc);
        assert_eq!(t.url(), "http://h/rpc");
    }
}
