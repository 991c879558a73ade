//! Registry and workflow loading: AgentCards from an agent registry, workflows loaded or searched
//! at an orchestration centre.
//!
//! Every request goes through an [`HttpClient`], so TLS is verified (unless the host built the
//! client otherwise), and timeouts and body sizes are bounded by its [`a2aflow_protocol::Limits`]. An access
//! token travels only in the `Authorization: Bearer` header, added by [`BearerToken`] to requests
//! for the configured host, never in a query string, and it is never logged.
//!
//! Endpoints (base URLs lose a trailing `/`):
//! - `GET {registry}/rest/v1/registry-center/agent-cards[?name=…&organization=…]` →
//!   `{"agentCards":[…]}` or `{"data":[…]}`;
//! - `GET {center}/api/v1/orchestrate/psop/{id}` → `{"data": workflow}` or the bare workflow;
//! - `POST {center}/api/v1/orchestrate/search` with `{"intent": …, "top_n": …}` →
//!   `{"data":[result…]}`.

use std::sync::Arc;

use a2aflow_model::a2a::AgentCard;
use a2aflow_model::{ErrorCode, Failure, LoadOptions, Loaded, load_workflow_value};
use async_trait::async_trait;
use http::{HeaderMap, HeaderValue, Uri, header};

use a2aflow_protocol::auth::Origin;
use serde_json::{Value, json};

use a2aflow_protocol::envelope::classify_error_body;
use a2aflow_protocol::error::TransportError;
use a2aflow_protocol::headers::{CallOptions, RequestHeaders};
use a2aflow_protocol::http_client::{HttpClient, parse_uri};
use a2aflow_protocol::http_json::JsonReply;

/// The registry's agent-card collection path.
pub const AGENT_CARDS_PATH: &str = "/rest/v1/registry-center/agent-cards";
/// The orchestration centre's workflow path (the id is appended).
pub const WORKFLOW_PATH: &str = "/api/v1/orchestrate/psop/";
/// The orchestration centre's search path.
pub const SEARCH_PATH: &str = "/api/v1/orchestrate/search";

/// Adds `Authorization: Bearer <token>` to requests for one host (scheme, host and port of the
/// base URL); a request anywhere else fails with `auth.host_mismatch` rather than leak the token.
pub struct BearerToken {
    origin: Origin,
    value: HeaderValue,
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BearerToken")
            .field("origin", &self.origin.to_string())
            .field("token", &"<redacted>")
            .finish()
    }
}

impl BearerToken {
    /// A token for the service at `base_url`. A blank token or one that is not a valid header
    /// value is `config.invalid_credentials`; a bad URL is `config.invalid`.
    pub fn new(base_url: &str, token: &str) -> Result<Self, Failure> {
        let uri = parse_uri(base_url.trim())?;
        let origin = Origin::of(&uri)?;
        let token = token.trim();
        let mut value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
            Failure::new(
                ErrorCode::ConfigInvalidCredentials,
                "the access token is not a valid header value",
            )
        })?;
        if token.is_empty() {
            return Err(Failure::new(
                ErrorCode::ConfigInvalidCredentials,
                "the access token is blank",
            ));
        }
        value.set_sensitive(true);
        Ok(BearerToken { origin, value })
    }
}

#[async_trait]
impl RequestHeaders for BearerToken {
    async fn headers_for(&self, url: &Uri) -> Result<HeaderMap, Failure> {
        self.origin.check(url).map_err(|f| Failure {
            message: format!(
                "the access token is configured for another host: {}",
                f.message
            ),
            ..f
        })?;
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, self.value.clone());
        Ok(h)
    }
}

/// Builds an [`HttpClient`] for a registry or orchestration centre at `base_url` from a builder
/// (limits, TLS), adding the bearer `token` when there is one.
pub fn service_client(
    builder: a2aflow_protocol::http_client::HttpClientBuilder,
    base_url: &str,
    token: Option<&str>,
) -> Result<HttpClient, Failure> {
    let builder = match token {
        Some(t) => builder.request_headers(Arc::new(BearerToken::new(base_url, t)?)),
        None => builder,
    };
    Ok(builder.build()?)
}

fn base(url: &str) -> Result<String, Failure> {
    let trimmed = url.trim().trim_end_matches('/').to_owned();
    parse_uri(&trimmed)?;
    Ok(trimmed)
}

use a2aflow_protocol::percent::encode_component as encode;

/// A 2xx body as JSON; anything else a typed error (`a2a.http_status` with a redacted excerpt,
/// `auth.rejected`, `a2a.invalid_response`).
fn json_body(reply: JsonReply, service: &str) -> Result<Value, Failure> {
    if !(200..300).contains(&reply.status) {
        let err =
            classify_error_body(reply.status, &reply.body).unwrap_or(TransportError::HttpStatus {
                status: reply.status,
                excerpt: String::new(),
            });
        return Err(Failure::from(err).with_detail("service", service.to_owned()));
    }
    serde_json::from_slice(&reply.body).map_err(|e| {
        Failure::new(
            ErrorCode::A2aInvalidResponse,
            format!("the {service} answered a body that is not JSON: {e}"),
        )
    })
}

/// A client of an agent registry.
#[derive(Debug, Clone)]
pub struct RegistryClient {
    base: String,
    http: HttpClient,
}

impl RegistryClient {
    /// A client of the registry at `base_url` (a trailing `/` is dropped) sending through `http`.
    pub fn new(base_url: &str, http: HttpClient) -> Result<Self, Failure> {
        Ok(RegistryClient {
            base: base(base_url)?,
            http,
        })
    }

    /// The collection URL.
    pub fn cards_url(&self) -> String {
        format!("{}{AGENT_CARDS_PATH}", self.base)
    }

    /// Every card the registry lists. A card that is not a valid AgentCard is
    /// `a2a.invalid_response`.
    pub async fn fetch_agent_cards(&self) -> Result<Vec<AgentCard>, Failure> {
        self.fetch(&self.cards_url()).await
    }

    /// The first card named `name` (and of `organization`, when given), or `None`.
    pub async fn fetch_agent_card(
        &self,
        name: &str,
        organization: Option<&str>,
    ) -> Result<Option<AgentCard>, Failure> {
        let mut url = format!("{}?name={}", self.cards_url(), encode(name));
        if let Some(org) = organization {
            url.push_str(&format!("&organization={}", encode(org)));
        }
        Ok(self.fetch(&url).await?.into_iter().next())
    }

    async fn fetch(&self, url: &str) -> Result<Vec<AgentCard>, Failure> {
        let reply = self.http.get_json(url, &CallOptions::default()).await?;
        let body = json_body(reply, "registry")?;
        let list = match &body {
            Value::Object(o) => o.get("agentCards").or_else(|| o.get("data")),
            _ => None,
        };
        let Some(Value::Array(items)) = list else {
            return Err(Failure::new(
                ErrorCode::A2aInvalidResponse,
                "the registry answer has no `agentCards` or `data` list",
            ));
        };
        items
            .iter()
            .map(|c| {
                a2aflow_protocol::card_compat::agent_card_from_value(c.clone()).map_err(|e| {
                    Failure::new(
                        ErrorCode::A2aInvalidResponse,
                        format!("the registry listed an invalid agent card: {e}"),
                    )
                })
            })
            .collect()
    }

    /// Registers `card` (`POST`, body `{"agentCards":[card]}`); returns the registry's answer.
    /// A non-2xx answer is an error, never a result.
    pub async fn register_agent_card(&self, card: &Value) -> Result<Value, Failure> {
        let body = json!({ "agentCards": [card] });
        let reply = self
            .http
            .post_json(&self.cards_url(), &body, &CallOptions::default())
            .await?;
        json_body(reply, "registry")
    }
}

/// One workflow found by a search.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct WorkflowSearchResult {
    /// `workflow_id`, or `id` when that is missing.
    pub workflow_id: String,
    /// `workflow_type` (empty when missing).
    pub workflow_type: String,
    /// `name`.
    pub name: String,
    /// `description`.
    pub description: String,
    /// `score`; 1.0 when missing.
    pub score: f64,
    /// `user_intent`.
    pub user_intent: String,
    /// `tasks_summary`.
    pub tasks_summary: String,
    /// `created_at`, a number rendered as text.
    pub created_at: String,
}

impl WorkflowSearchResult {
    /// Reads one search item leniently: missing strings are empty, a missing score is 1.0.
    pub fn from_value(v: &Value) -> Self {
        let text = |k: &str| match v.get(k) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        let mut workflow_id = text("workflow_id");
        if workflow_id.is_empty() {
            workflow_id = text("id");
        }
        WorkflowSearchResult {
            workflow_id,
            workflow_type: text("workflow_type"),
            name: text("name"),
            description: text("description"),
            score: v.get("score").and_then(Value::as_f64).unwrap_or(1.0),
            user_intent: text("user_intent"),
            tasks_summary: text("tasks_summary"),
            created_at: text("created_at"),
        }
    }
}

/// A client of an orchestration centre.
#[derive(Debug, Clone)]
pub struct OrchestratorClient {
    base: String,
    http: HttpClient,
}

impl OrchestratorClient {
    /// A client of the centre at `base_url` (a trailing `/` is dropped) sending through `http`.
    pub fn new(base_url: &str, http: HttpClient) -> Result<Self, Failure> {
        Ok(OrchestratorClient {
            base: base(base_url)?,
            http,
        })
    }

    /// Loads workflow `id` (the `{"data": …}` wrapper or the bare document) and parses it with
    /// `options`. A blank id is `config.invalid`; a document that does not load carries the
    /// loader's first problem code (`workflow.*`).
    pub async fn load_workflow(&self, id: &str, options: LoadOptions) -> Result<Loaded, Failure> {
        if id.trim().is_empty() {
            return Err(Failure::new(
                ErrorCode::ConfigInvalid,
                "the workflow id is blank",
            ));
        }
        let url = format!("{}{WORKFLOW_PATH}{}", self.base, encode(id.trim()));
        let reply = self.http.get_json(&url, &CallOptions::default()).await?;
        let body = json_body(reply, "orchestration centre")?;
        load_workflow_value(&body, options).map_err(|e| e.to_failure())
    }

    /// Searches workflows by intent; at most `top_n` asked for. A missing `data` is no result.
    pub async fn search(
        &self,
        intent: &str,
        top_n: u32,
    ) -> Result<Vec<WorkflowSearchResult>, Failure> {
        let url = format!("{}{SEARCH_PATH}", self.base);
        let body = json!({ "intent": intent, "top_n": top_n });
        let reply = self
            .http
            .post_json(&url, &body, &CallOptions::default())
            .await?;
        let answer = json_body(reply, "orchestration centre")?;
        Ok(match answer.get("data") {
            Some(Value::Array(items)) => {
                items.iter().map(WorkflowSearchResult::from_value).collect()
            }
            _ => Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_escapes_everything_but_unreserved() {
        assert_eq!(encode("abc/=1"), "abc%2F%3D1");
        assert_eq!(encode("a b&c"), "a%20b%26c");
        assert_eq!(encode("A-z._~9"), "A-z._~9");
    }

    #[test]
    fn base_drops_the_trailing_slash_and_rejects_relative_urls() {
        assert_eq!(base("http://h:1/x/").unwrap(), "http://h:1/x");
        assert_eq!(base("/x").unwrap_err().code, "config.invalid");
    }

    #[test]
    fn s_reg_10_search_items_are_read_leniently() {
        let r = WorkflowSearchResult::from_value(
            &json!({"id": "w9", "name": "n", "created_at": 12345}),
        );
        assert_eq!(r.workflow_id, "w9");
        assert_eq!(r.score, 1.0);
        assert_eq!(r.created_at, "12345");
        assert_eq!(r.description, "");
        assert_eq!(r.name, "n");
    }

    #[tokio::test]
    async fn bearer_token_is_only_sent_to_its_host() {
        let t = BearerToken::new("https://reg.example:8443/base", "abc/=1").unwrap();
        let h = t
            .headers_for(&"https://reg.example:8443/rest/v1/x".parse().unwrap())
            .await
            .unwrap();
        assert_eq!(h[header::AUTHORIZATION], "Bearer abc/=1");
        let err = t
            .headers_for(&"https://other.example/x".parse().unwrap())
            .await
            .unwrap_err();
        assert_eq!(err.code, "auth.host_mismatch");
        assert!(!format!("{t:?}").contains("abc"));
        // Origins compare as origins: a default port spelled out is the same origin, another
        // scheme on the same port is not.
        let t = BearerToken::new("https://reg.example:443/base", "tok").unwrap();
        t.headers_for(&"https://REG.example/rest".parse().unwrap())
            .await
            .unwrap();
        let err = t
            .headers_for(&"http://reg.example:443/rest".parse().unwrap())
            .await
            .unwrap_err();
        assert_eq!(err.code, "auth.host_mismatch");
        assert_eq!(
            BearerToken::new("https://h", " ").unwrap_err().code,
            "config.invalid_credentials"
        );
    }
}
