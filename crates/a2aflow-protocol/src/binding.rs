//! Choosing a binding from an agent card's `supportedInterfaces`, and building its transport.

use std::sync::Arc;

use a2aflow_model::a2a::{AgentCard, AgentInterface};

use crate::error::TransportError;
use crate::grpc::{GrpcTransport, Schemeless};
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
    /// gRPC (`GRPC`): the `lf.a2a.v1.A2AService` service.
    Grpc,
}

impl Binding {
    /// The default preference order: JSON-RPC, then HTTP+JSON, then gRPC.
    pub const DEFAULT_PREFERENCE: &'static [Binding] =
        &[Binding::JsonRpc, Binding::HttpJson, Binding::Grpc];

    /// The `protocolBinding` value on the card.
    pub const fn wire_name(self) -> &'static str {
        match self {
            Binding::JsonRpc => "JSONRPC",
            Binding::HttpJson => "HTTP+JSON",
            Binding::Grpc => "GRPC",
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
/// A gRPC interface URL without a scheme is reached over TLS; [`connect_interface_with`] lets
/// the caller say otherwise.
pub fn connect_interface(
    binding: Binding,
    interface: &AgentInterface,
    client: &HttpClient,
) -> Result<Arc<dyn Transport>, TransportError> {
    connect_interface_with(binding, interface, client, Schemeless::Tls)
}

/// [`connect_interface`], a gRPC interface URL without a scheme reached as `schemeless` says.
pub fn connect_interface_with(
    binding: Binding,
    interface: &AgentInterface,
    client: &HttpClient,
    schemeless: Schemeless,
) -> Result<Arc<dyn Transport>, TransportError> {
    let tenant = interface.tenant.clone().filter(|t| !t.is_empty());
    Ok(match binding {
        Binding::JsonRpc => Arc::new(JsonRpcTransport::new(
            client.clone(),
            http_url(binding, interface)?,
            tenant,
        )?),
        Binding::HttpJson => Arc::new(RestTransport::new(
            client.clone(),
            http_url(binding, interface)?,
            tenant,
        )?),
        Binding::Grpc => Arc::new(GrpcTransport::new(
            client.clone(),
            &interface.url,
            tenant,
            schemeless,
        )?),
    })
}

/// The interface's URL when it is an absolute http(s) URL. The card chose it: any other is the
/// agent's fault.
fn http_url(binding: Binding, interface: &AgentInterface) -> Result<&str, TransportError> {
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
    Ok(&interface.url)
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
        let c = card(&[
            ("http://h/rpc03", "JSONRPC", "0.3"),
            ("h:1", "GRPC", "0.3"),
            ("slim://h:1", "SLIMRPC", "1.0"),
        ]);
        let e = select_interface(&c, Binding::DEFAULT_PREFERENCE).unwrap_err();
        assert_eq!(e.code_str(), "a2a.unsupported_binding");
        assert_eq!(
            e.to_failure().details["offered"],
            serde_json::json!(["JSONRPC@0.3", "GRPC@0.3", "SLIMRPC@1.0"])
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
    fn a_card_offering_only_grpc_is_spoken() {
        let c = card(&[
            ("h:50051", "GRPC", "1.0"),
            ("http://h/rpc03", "JSONRPC", "0.3"),
        ]);
        let (b, i) = select_interface(&c, Binding::DEFAULT_PREFERENCE).unwrap();
        assert_eq!((b, i.url.as_str()), (Binding::Grpc, "h:50051"));
        // gRPC after the others by default; first when the host prefers it.
        let c = card(&[
            ("h:50051", "GRPC", "1.0"),
            ("http://h/rpc", "JSONRPC", "1.0"),
        ]);
        let (b, _) = select_interface(&c, Binding::DEFAULT_PREFERENCE).unwrap();
        assert_eq!(b, Binding::JsonRpc);
        let (b, _) = select_interface(&c, &[Binding::Grpc, Binding::JsonRpc]).unwrap();
        assert_eq!(b, Binding::Grpc);
        // Built without a runtime: the channel is made on the first call.
        let client = HttpClient::new().unwrap();
        let t = connect(&c, &client, &[Binding::Grpc]).unwrap();
        assert_eq!((t.binding(), t.url()), (Binding::Grpc, "h:50051"));
        for bad in ["grpc://h:1", "h:1/a2a"] {
            let c = card(&[(bad, "GRPC", "1.0")]);
            let e = connect(&c, &client, &[Binding::Grpc]).err().unwrap();
            assert_eq!(e.code_str(), "a2a.invalid_response", "{bad}");
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
