//! The AgentCard of a served workflow: one skill (the workflow), the bindings served (JSON-RPC
//! first, then HTTP+JSON, then gRPC, all A2A 1.0), streaming.

use a2a::{AgentCapabilities, AgentCard, AgentInterface, AgentSkill};
use a2aflow::model::Workflow;
use std::net::SocketAddr;

/// The card of `workflow` served at `agent_url` (`{base}/agents/{name}`), its gRPC door at
/// `addr` under the tenant of the workflow's name (published as `host:port`, the form the
/// official SDKs' gRPC channels take).
pub(crate) fn card(workflow: &Workflow, agent_url: &str, addr: &SocketAddr) -> AgentCard {
    let mut grpc = AgentInterface::new(format!("http://{addr}"), "GRPC");
    grpc.tenant = Some(workflow.name.clone());
    let description = if workflow.description.trim().is_empty() {
        format!("The a2aflow workflow '{}'.", workflow.name)
    } else {
        workflow.description.clone()
    };
    AgentCard {
        name: workflow.name.clone(),
        description: description.clone(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        supported_interfaces: vec![
            AgentInterface::new(format!("{agent_url}/jsonrpc"), "JSONRPC"),
            AgentInterface::new(format!("{agent_url}/rest"), "HTTP+JSON"),
            grpc,
        ],
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(false),
            extensions: None,
            extended_agent_card: Some(false),
        },
        default_input_modes: vec!["text/plain".to_owned(), "application/json".to_owned()],
        default_output_modes: vec!["application/json".to_owned()],
        skills: vec![AgentSkill {
            id: workflow.id.clone(),
            name: workflow.name.clone(),
            description,
            tags: vec!["workflow".to_owned(), "a2aflow".to_owned()],
            examples: None,
            input_modes: None,
            output_modes: None,
            security_requirements: None,
        }],
        provider: None,
        documentation_url: None,
        icon_url: None,
        security_schemes: None,
        security_requirements: None,
        signatures: None,
    }
}

/// Whether `name` can be served as the path segment `/agents/{name}/` as it is: ASCII letters,
/// digits, `.`, `_` and `-`, not `.` or `..`.
pub(crate) fn servable_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}
