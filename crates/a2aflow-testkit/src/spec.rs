//! What one agent is: its name, card, checks and script.

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::message::IncomingMessage;
use crate::script::Script;

/// Edits a generated card.
type CardPatch = Arc<dyn Fn(&mut Value) + Send + Sync>;

/// The script function of an agent.
pub type ScriptFn = Arc<dyn Fn(&IncomingMessage) -> Script + Send + Sync>;

/// A protocol binding an agent serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Binding {
    /// JSON-RPC 2.0 at `/agents/{name}/jsonrpc`.
    JsonRpc,
    /// HTTP+JSON (REST) under `/agents/{name}/rest`.
    HttpJson,
    /// gRPC (`lf.a2a.v1.A2AService`) on the server's own origin, the agent named by the
    /// interface's `tenant` (the agent's name).
    Grpc,
}

impl Binding {
    /// The card's `protocolBinding` value.
    pub fn protocol_binding(self) -> &'static str {
        match self {
            Self::JsonRpc => "JSONRPC",
            Self::HttpJson => "HTTP+JSON",
            Self::Grpc => "GRPC",
        }
    }
}

/// Whether an agent serves ListTasks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ListTasks {
    /// ListTasks is served (the default).
    #[default]
    Served,
    /// ListTasks answers UNSUPPORTED_OPERATION on both bindings.
    Unsupported,
    /// ListTasks does not exist, as on a server that predates it: JSON-RPC answers "Method not
    /// found" (`-32601`), HTTP+JSON a plain 404 for `GET /tasks`.
    Absent,
}

/// Credentials the server demands and checks.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Credential {
    /// `Authorization: Bearer <token>`.
    Bearer(String),
    /// `<header>: <value>`.
    ApiKey {
        /// Header name.
        header: String,
        /// Expected value.
        value: String,
    },
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Bearer(_) => f.write_str("Bearer(***)"),
            Self::ApiKey { header, .. } => write!(f, "ApiKey({header}: ***)"),
        }
    }
}

impl Credential {
    /// Whether the request headers carry this credential.
    pub(crate) fn accepts(&self, headers: &http::HeaderMap) -> bool {
        match self {
            Self::Bearer(token) => headers
                .get_all(http::header::AUTHORIZATION)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .any(|v| {
                    v.split_once(' ').is_some_and(|(scheme, t)| {
                        scheme.eq_ignore_ascii_case("bearer") && t.trim() == token
                    })
                }),
            Self::ApiKey { header, value } => headers
                .get_all(header.as_str())
                .iter()
                .any(|v| v.as_bytes() == value.as_bytes()),
        }
    }

    /// The card scheme name and `SecurityScheme` object.
    pub(crate) fn scheme(&self) -> (&'static str, Value) {
        match self {
            Self::Bearer(_) => (
                "bearer",
                json!({"httpAuthSecurityScheme": {"scheme": "Bearer"}}),
            ),
            Self::ApiKey { header, .. } => (
                "apiKey",
                json!({"apiKeySecurityScheme": {"location": "header", "name": header}}),
            ),
        }
    }
}

/// One agent served by a [`crate::TestServer`].
///
/// ```
/// use a2aflow_testkit::{AgentSpec, Binding, Credential, Script};
/// let spec = AgentSpec::new("planner")
///     .streaming(true)
///     .bindings(&[Binding::HttpJson, Binding::JsonRpc])
///     .extension("https://example.org/ext/v1", true)
///     .require_auth(Credential::Bearer("s3cret".into()))
///     .script(|m| Script::reply_text(format!("you said {}", m.text())));
/// # let _ = spec;
/// ```
#[derive(Clone)]
pub struct AgentSpec {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) streaming: bool,
    pub(crate) bindings: Vec<Binding>,
    pub(crate) extensions: Vec<(String, bool)>,
    pub(crate) security_schemes: Map<String, Value>,
    pub(crate) security_requirements: Vec<Value>,
    pub(crate) auth: Option<Credential>,
    pub(crate) check_version: bool,
    pub(crate) enforce_required_extensions: bool,
    pub(crate) echo_extensions: bool,
    pub(crate) task_bound: usize,
    pub(crate) list_tasks: ListTasks,
    pub(crate) extended_card: Option<Value>,
    pub(crate) card_patch: Option<CardPatch>,
    pub(crate) script: ScriptFn,
}

impl fmt::Debug for AgentSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentSpec")
            .field("name", &self.name)
            .field("streaming", &self.streaming)
            .field("bindings", &self.bindings)
            .field("extensions", &self.extensions)
            .field("auth", &self.auth)
            .field("check_version", &self.check_version)
            .field("task_bound", &self.task_bound)
            .field("list_tasks", &self.list_tasks)
            .finish_non_exhaustive()
    }
}

/// Default number of tasks an agent keeps before evicting the oldest terminal ones.
pub const DEFAULT_TASK_BOUND: usize = 10_000;

impl AgentSpec {
    /// An agent with the built-in first-word behaviours ([`crate::behaviours::builtin`]),
    /// streaming on, both bindings (JSON-RPC first), version check on, no auth.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: "a2aflow testkit agent".into(),
            streaming: true,
            bindings: vec![Binding::JsonRpc, Binding::HttpJson],
            extensions: Vec::new(),
            security_schemes: Map::new(),
            security_requirements: Vec::new(),
            auth: None,
            check_version: true,
            enforce_required_extensions: true,
            echo_extensions: false,
            task_bound: DEFAULT_TASK_BOUND,
            list_tasks: ListTasks::Served,
            extended_card: None,
            card_patch: None,
            script: Arc::new(crate::behaviours::builtin),
        }
    }

    /// The card description.
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.description = d.into();
        self
    }

    /// `capabilities.streaming` (streaming methods are refused with UNSUPPORTED_OPERATION when off).
    pub fn streaming(mut self, on: bool) -> Self {
        self.streaming = on;
        self
    }

    /// The bindings listed in `supportedInterfaces`, in order (an empty list serves none).
    pub fn bindings(mut self, bindings: &[Binding]) -> Self {
        self.bindings = bindings.to_vec();
        self
    }

    /// Declares an extension in `capabilities.extensions`. A required one must be named in the
    /// request's `A2A-Extensions` header or the call fails with EXTENSION_SUPPORT_REQUIRED.
    pub fn extension(mut self, uri: impl Into<String>, required: bool) -> Self {
        self.extensions.push((uri.into(), required));
        self
    }

    /// Turns the required-extension check off (the card still says `required`).
    pub fn enforce_required_extensions(mut self, on: bool) -> Self {
        self.enforce_required_extensions = on;
        self
    }

    /// Answers with an `A2A-Extensions` response header listing the requested extensions the
    /// card declares (as the JS SDK does; the Python SDK never sets it). Off by default.
    pub fn echo_extensions(mut self, on: bool) -> Self {
        self.echo_extensions = on;
        self
    }

    /// Adds a raw `securitySchemes` entry (declared only; not enforced).
    pub fn security_scheme(mut self, name: impl Into<String>, scheme: Value) -> Self {
        self.security_schemes.insert(name.into(), scheme);
        self
    }

    /// Adds a raw `securityRequirements` entry (declared only; not enforced).
    pub fn security_requirement(mut self, requirement: Value) -> Self {
        self.security_requirements.push(requirement);
        self
    }

    /// Demands `credential` on every A2A call (not on the public card): declared on the card and
    /// enforced with HTTP 401 for a missing or wrong value.
    pub fn require_auth(mut self, credential: Credential) -> Self {
        let (name, scheme) = credential.scheme();
        self.security_schemes.insert(name.into(), scheme);
        self.security_requirements
            .push(json!({ "schemes": { name: {} } }));
        self.auth = Some(credential);
        self
    }

    /// Whether the `A2A-Version` header is checked (on by default; see also
    /// [`crate::TestServer::set_version_check`]).
    pub fn check_version(mut self, on: bool) -> Self {
        self.check_version = on;
        self
    }

    /// How many tasks are kept; beyond it the oldest terminal tasks are evicted.
    pub fn task_bound(mut self, bound: usize) -> Self {
        self.task_bound = bound.max(1);
        self
    }

    /// Whether ListTasks is served ([`ListTasks::Served`] by default).
    pub fn list_tasks(mut self, support: ListTasks) -> Self {
        self.list_tasks = support;
        self
    }

    /// Serves `card` from `GetExtendedAgentCard` and sets `capabilities.extendedAgentCard`.
    pub fn extended_card(mut self, card: Value) -> Self {
        self.extended_card = Some(card);
        self
    }

    /// Edits the generated card JSON before it is served (for odd or broken cards).
    pub fn card_patch(mut self, patch: impl Fn(&mut Value) + Send + Sync + 'static) -> Self {
        self.card_patch = Some(Arc::new(patch));
        self
    }

    /// The script run for each new message.
    pub fn script(
        mut self,
        script: impl Fn(&IncomingMessage) -> Script + Send + Sync + 'static,
    ) -> Self {
        self.script = Arc::new(script);
        self
    }

    /// The agent name (its path segment).
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Builds the public agent card for an agent served at `agent_url` (`.../agents/{name}`).
pub(crate) fn build_card(spec: &AgentSpec, agent_url: &str) -> Value {
    let interfaces: Vec<Value> = spec
        .bindings
        .iter()
        .map(|b| {
            let url = match b {
                Binding::JsonRpc => format!("{agent_url}/jsonrpc"),
                Binding::HttpJson => format!("{agent_url}/rest"),
                Binding::Grpc => {
                    let origin = agent_url.split("/agents/").next().unwrap_or(agent_url);
                    return json!({"url": origin, "protocolBinding": b.protocol_binding(),
                        "protocolVersion": "1.0", "tenant": spec.name});
                }
            };
            json!({"url": url, "protocolBinding": b.protocol_binding(), "protocolVersion": "1.0"})
        })
        .collect();
    let extensions: Vec<Value> = spec
        .extensions
        .iter()
        .map(|(uri, required)| {
            let mut e = Map::new();
            e.insert("uri".into(), uri.clone().into());
            e.insert("description".into(), "declared by the testkit".into());
            if *required {
                e.insert("required".into(), true.into());
            }
            Value::Object(e)
        })
        .collect();
    let mut card = Map::new();
    card.insert("name".into(), spec.name.clone().into());
    card.insert("description".into(), spec.description.clone().into());
    card.insert("supportedInterfaces".into(), Value::Array(interfaces));
    card.insert(
        "provider".into(),
        json!({"url": "https://example.invalid/a2aflow", "organization": "a2aflow testkit"}),
    );
    card.insert("version".into(), "1.0.0".into());
    card.insert(
        "capabilities".into(),
        json!({
            "streaming": spec.streaming,
            "pushNotifications": false,
            "extensions": extensions,
            "extendedAgentCard": spec.extended_card.is_some(),
        }),
    );
    card.insert("defaultInputModes".into(), json!(["text/plain"]));
    card.insert(
        "defaultOutputModes".into(),
        json!(["text/plain", "application/json"]),
    );
    card.insert(
        "skills".into(),
        json!([{
            "id": "scripted",
            "name": "Scripted behaviours",
            "description": "echo | task | slow N | fail | reject | input | auth | stream | negotiate | hang | crash",
            "tags": ["test"],
            "examples": ["echo hi", "task x", "slow 1", "input x", "stream x", "negotiate x"],
        }]),
    );
    if !spec.security_schemes.is_empty() {
        card.insert(
            "securitySchemes".into(),
            Value::Object(spec.security_schemes.clone()),
        );
    }
    if !spec.security_requirements.is_empty() {
        card.insert(
            "securityRequirements".into(),
            Value::Array(spec.security_requirements.clone()),
        );
    }
    let mut card = Value::Object(card);
    if let Some(patch) = &spec.card_patch {
        patch(&mut card);
    }
    card
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn card_lists_bindings_in_order_with_version_and_security() {
        let spec = AgentSpec::new("a")
            .bindings(&[Binding::HttpJson, Binding::JsonRpc])
            .extension("urn:x", true)
            .require_auth(Credential::Bearer("t".into()));
        let card = build_card(&spec, "http://h/agents/a");
        assert_eq!(
            card["supportedInterfaces"],
            json!([
                {"url":"http://h/agents/a/rest","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"},
                {"url":"http://h/agents/a/jsonrpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}
            ])
        );
        assert_eq!(
            card["capabilities"]["extensions"][0]["required"],
            json!(true)
        );
        assert_eq!(
            card["securitySchemes"]["bearer"],
            json!({"httpAuthSecurityScheme":{"scheme":"Bearer"}})
        );
        assert_eq!(
            card["securityRequirements"],
            json!([{"schemes":{"bearer":{}}}])
        );
    }

    #[test]
    fn credentials_check_headers() {
        let mut h = http::HeaderMap::new();
        h.insert("authorization", "Bearer good".parse().unwrap());
        assert!(Credential::Bearer("good".into()).accepts(&h));
        assert!(!Credential::Bearer("bad".into()).accepts(&h));
        h.insert("x-api-key", "k1".parse().unwrap());
        let key = Credential::ApiKey {
            header: "X-API-Key".into(),
            value: "k1".into(),
        };
        assert!(key.accepts(&h));
        assert_eq!(format!("{key:?}"), "ApiKey(X-API-Key: ***)");
    }
}
