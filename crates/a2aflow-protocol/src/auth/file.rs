//! The credentials file: the reference engines' JSON format (agent-keyed or profile form), with
//! values resolved from the environment and `enc:` values decrypted eagerly, at load time.
//!
//! Agent-keyed form: `{ "<AgentCard.name>": { "<securitySchemeName>": { …entry… } } }`.
//! Profile form: `{ "profiles": { "<p>": { "<scheme>": { … } } }, "agents": { "<AgentCard.name>":
//! { "profile": "<p>", "overrides": { "<scheme>": { … } } } } }` — profiles are copied per agent
//! and overrides deep-merged (objects merge, everything else replaces).
//!
//! Entry fields (all optional, unknown fields are an error):
//! - reference login: `login_url`, `method`, `content_type`, `request_fields`, `token_field`,
//!   `token_ttl`, `username`, `password`, `username_field`, `password_field`, `accept_header`;
//! - header mapping: `auth_header`, `auth_header_prefix`;
//! - static token: `token` (alias `api_key`); HTTP basic: `username` + `password` without
//!   `login_url`;
//! - OAuth2 client credentials: `client_id`, `client_secret`, `token_url`, `scopes`;
//! - custom headers: `headers` (`{"Name": "value"}`), sent with the scheme's credential.
//!
//! Next to the scheme entries, an agent may list `allowed_origins` (`["https://host:port", …]`;
//! in the profile form, in the agent's binding next to `profile`): further origins its
//! credentials may be sent to when the agent's card names an interface there (see
//! [`AgentCredentials::allowed_origins`]). No scheme can be called `allowed_origins`.
//!
//! Every secret-bearing string may be a literal, `env:NAME` (looked up in the
//! [`Environment`]), or `enc:<iv>:<ct>` (decrypted with `A2AT_CRED_KEY`); an `env:` variable may
//! itself hold an `enc:` value.

use std::collections::BTreeMap;
use std::path::Path;

use a2aflow_model::{ErrorCode, Failure};
use http::{HeaderName, Method};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::crypto::{CredentialKey, decrypt_with};
use super::env::Environment;
use super::origin::Origin;
use super::secret::Secret;

/// The prefix of a value read from the environment: `env:NAME`.
pub const ENV_PREFIX: &str = "env:";

/// Credentials for every configured agent, resolved and decrypted.
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    agents: BTreeMap<String, AgentCredentials>,
}

/// The reserved key of an agent's object that lists further origins its credentials may go to.
pub const ALLOWED_ORIGINS_KEY: &str = "allowed_origins";

/// The credentials of one agent: one entry per security scheme name, and the origins besides the
/// configured agent URL they may be sent to.
#[derive(Debug, Clone, Default)]
pub struct AgentCredentials {
    schemes: BTreeMap<String, SchemeCredential>,
    allowed_origins: Vec<Origin>,
}

/// What one scheme entry configures.
#[derive(Debug, Clone)]
pub struct SchemeCredential {
    /// Where the credential value comes from.
    pub source: CredentialSource,
    /// Header to carry the token (`auth_header`), overriding the scheme's own placement.
    pub auth_header: Option<HeaderName>,
    /// Prefix written before the token in `auth_header` (`auth_header_prefix`).
    pub auth_header_prefix: Option<String>,
    /// Extra headers sent with this scheme's credential (`headers`).
    pub headers: Vec<(HeaderName, Secret)>,
}

/// The kinds of credential an entry can hold.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum CredentialSource {
    /// Only custom headers.
    HeadersOnly,
    /// A fixed token or API key (`token` / `api_key`).
    Static(Secret),
    /// HTTP basic credentials (`username` + `password`, no `login_url`).
    Basic {
        /// User name.
        username: Secret,
        /// Password.
        password: Secret,
    },
    /// OAuth2 client-credentials grant.
    OAuth2(OAuth2Config),
    /// The reference engines' login request (`login_url`).
    Login(LoginConfig),
}

/// OAuth2 client-credentials settings.
#[derive(Debug, Clone)]
pub struct OAuth2Config {
    /// Token endpoint; when absent, the card's `clientCredentials` flow `tokenUrl` is used.
    pub token_url: Option<String>,
    /// Client id.
    pub client_id: Secret,
    /// Client secret.
    pub client_secret: Secret,
    /// Scopes to request; when absent, the scopes the card's requirement names.
    pub scopes: Option<Vec<String>>,
    /// Cache lifetime when the response carries no `expires_in` (seconds).
    pub token_ttl: Option<u64>,
}

/// Body encoding of a login request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoginEncoding {
    /// `application/json` (the default).
    Json,
    /// `application/x-www-form-urlencoded` (UTF-8 keys and values).
    Form,
}

/// One field of a login body: a resolved string or a literal JSON value (number, bool, …).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum LoginField {
    /// A string value (resolved, possibly secret).
    Text(Secret),
    /// A non-string JSON value, sent as is.
    Literal(Value),
}

/// The reference engines' login request settings.
#[derive(Debug, Clone)]
pub struct LoginConfig {
    /// URL the login request goes to.
    pub login_url: String,
    /// HTTP method (default POST).
    pub method: Method,
    /// Body encoding.
    pub encoding: LoginEncoding,
    /// Body fields, in file order.
    pub fields: Vec<(String, LoginField)>,
    /// Dotted path of the token in the response (default `accessSession`, then the fallbacks
    /// `access_session`, `access_token`, `token`).
    pub token_field: Option<String>,
    /// Cache lifetime in seconds (default 3600).
    pub token_ttl: Option<u64>,
    /// `Accept` header of the login request.
    pub accept: Option<String>,
}

impl Credentials {
    /// Loads and resolves a credentials file. A missing file, malformed JSON or a malformed entry
    /// is `config.invalid_credentials`; an unset `env:` variable is `config.missing_env`; an
    /// `enc:` value that cannot be decrypted is `config.decrypt`. Messages never hold a value.
    pub fn from_file(path: impl AsRef<Path>, env: &Environment) -> Result<Self, Failure> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| {
            let what = if e.kind() == std::io::ErrorKind::NotFound {
                format!("Credentials file not found: {}", path.display())
            } else {
                format!(
                    "Failed to load credentials from {}: {}",
                    path.display(),
                    e.kind()
                )
            };
            Failure::new(ErrorCode::ConfigInvalidCredentials, what)
                .with_detail("path", path.display().to_string())
        })?;
        Self::from_json_str(&text, env).map_err(|f| {
            if f.is(ErrorCode::ConfigInvalidCredentials) {
                Failure {
                    message: format!(
                        "Failed to load credentials from {}: {}",
                        path.display(),
                        f.message
                    ),
                    ..f
                }
                .with_detail("path", path.display().to_string())
            } else {
                f.with_detail("path", path.display().to_string())
            }
        })
    }

    /// Parses and resolves credentials from JSON text.
    pub fn from_json_str(text: &str, env: &Environment) -> Result<Self, Failure> {
        let value: Value = serde_json::from_str(text).map_err(|e| {
            invalid(format!(
                "not valid JSON (line {}, column {})",
                e.line(),
                e.column()
            ))
        })?;
        Self::from_value(&value, env)
    }

    /// Resolves credentials from an already-parsed document. The document is not modified.
    pub fn from_value(doc: &Value, env: &Environment) -> Result<Self, Failure> {
        let root = doc
            .as_object()
            .ok_or_else(|| invalid("the credentials root must be an object"))?;
        let raw = if root.contains_key("profiles") || root.contains_key("agents") {
            expand_profiles(root)?
        } else {
            root.iter()
                .map(|(agent, v)| {
                    v.as_object()
                        .cloned()
                        .map(|m| (agent.clone(), m))
                        .ok_or_else(|| {
                            invalid(format!("Credential binding for {agent} must be an object"))
                        })
                })
                .collect::<Result<Vec<_>, _>>()?
        };
        let mut resolver = Resolver::new(env);
        let mut agents = BTreeMap::new();
        for (agent, mut schemes) in raw {
            let allowed_origins = match schemes.remove(ALLOWED_ORIGINS_KEY) {
                Some(list) => allowed_origins(&agent, &list)?,
                None => Vec::new(),
            };
            let mut resolved = BTreeMap::new();
            for (scheme, entry) in schemes {
                let cred = resolver.scheme(&agent, &scheme, &entry)?;
                resolved.insert(scheme, cred);
            }
            agents.insert(
                agent,
                AgentCredentials {
                    schemes: resolved,
                    allowed_origins,
                },
            );
        }
        Ok(Credentials { agents })
    }

    /// The credentials for the agent with this `AgentCard.name`.
    pub fn for_agent(&self, agent: &str) -> Option<&AgentCredentials> {
        self.agents.get(agent)
    }

    /// The configured agent names.
    pub fn agent_names(&self) -> impl Iterator<Item = &str> {
        self.agents.keys().map(String::as_str)
    }
}

impl AgentCredentials {
    /// The entry for a security scheme name.
    pub fn scheme(&self, name: &str) -> Option<&SchemeCredential> {
        self.schemes.get(name)
    }

    /// The configured scheme names.
    pub fn scheme_names(&self) -> impl Iterator<Item = &str> {
        self.schemes.keys().map(String::as_str)
    }

    /// Adds or replaces one entry (hosts building credentials in code).
    pub fn with_scheme(mut self, name: impl Into<String>, credential: SchemeCredential) -> Self {
        self.schemes.insert(name.into(), credential);
        self
    }

    /// True when no scheme is configured.
    pub fn is_empty(&self) -> bool {
        self.schemes.is_empty()
    }

    /// The origins (`allowed_origins`) the credentials may go to besides the agent URL the user
    /// configured: the per-agent opt-in for a card whose interface is at another origin, and the
    /// only origins allowed for a card given without a configured URL.
    pub fn allowed_origins(&self) -> &[Origin] {
        &self.allowed_origins
    }

    /// Adds an allowed origin (hosts building credentials in code).
    pub fn with_allowed_origin(mut self, origin: Origin) -> Self {
        if !self.allowed_origins.contains(&origin) {
            self.allowed_origins.push(origin);
        }
        self
    }
}

/// Parses an agent's `allowed_origins`: a list of absolute http(s) URLs, each taken as its origin.
fn allowed_origins(agent: &str, list: &Value) -> Result<Vec<Origin>, Failure> {
    let bad = |why: &str| {
        invalid(format!("`{ALLOWED_ORIGINS_KEY}` of agent {agent} {why}"))
            .with_detail("agent", agent)
    };
    let Value::Array(items) = list else {
        return Err(bad("must be a list of http(s) origins"));
    };
    let mut out: Vec<Origin> = Vec::with_capacity(items.len());
    for item in items {
        let origin = item
            .as_str()
            .and_then(|url| Origin::parse(url.trim()).ok())
            .ok_or_else(|| {
                bad("must hold only absolute http(s) URLs such as https://agent.example:8443")
            })?;
        if !out.contains(&origin) {
            out.push(origin);
        }
    }
    Ok(out)
}

impl SchemeCredential {
    /// An entry with this source, default header mapping and no extra headers.
    pub fn new(source: CredentialSource) -> Self {
        SchemeCredential {
            source,
            auth_header: None,
            auth_header_prefix: None,
            headers: Vec::new(),
        }
    }
}

fn invalid(message: impl Into<String>) -> Failure {
    Failure::new(ErrorCode::ConfigInvalidCredentials, message)
}

/// Agent name → its scheme entries, before resolution.
type RawAgents = Vec<(String, Map<String, Value>)>;

fn expand_profiles(root: &Map<String, Value>) -> Result<RawAgents, Failure> {
    let form_error =
        || invalid("Credential profile form requires object fields: profiles and agents");
    let profiles = root
        .get("profiles")
        .and_then(Value::as_object)
        .ok_or_else(form_error)?;
    let agents = root
        .get("agents")
        .and_then(Value::as_object)
        .ok_or_else(form_error)?;
    if let Some(extra) = root.keys().find(|k| *k != "profiles" && *k != "agents") {
        return Err(invalid(format!(
            "unknown top-level field `{extra}` in the credential profile form"
        )));
    }
    let mut out = Vec::new();
    for (agent, binding) in agents {
        let binding = binding
            .as_object()
            .ok_or_else(|| invalid(format!("Credential binding for {agent} must be an object")))?;
        if let Some(extra) = binding
            .keys()
            .find(|k| *k != "profile" && *k != "overrides" && *k != ALLOWED_ORIGINS_KEY)
        {
            return Err(invalid(format!(
                "unknown field `{extra}` in the credential binding for {agent}"
            )));
        }
        let profile = binding
            .get("profile")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .ok_or_else(|| invalid(format!("Credential profile for {agent} must not be blank")))?;
        let base = profiles.get(profile).ok_or_else(|| {
            invalid(format!(
                "Unknown credential profile '{profile}' for agent {agent}"
            ))
        })?;
        let mut merged = base.clone();
        match binding.get("overrides") {
            None | Some(Value::Null) => {}
            Some(o @ Value::Object(_)) => deep_merge(&mut merged, o),
            Some(_) => {
                return Err(invalid(format!(
                    "Credential overrides for {agent} must be an object"
                )));
            }
        }
        let mut merged = merged.as_object().cloned().ok_or_else(|| {
            invalid(format!(
                "Credential profile '{profile}' for agent {agent} must be an object"
            ))
        })?;
        if let Some(list) = binding.get(ALLOWED_ORIGINS_KEY) {
            merged.insert(ALLOWED_ORIGINS_KEY.to_owned(), list.clone());
        }
        out.push((agent.clone(), merged));
    }
    Ok(out)
}

/// Deep merge: objects merge key by key, everything else (scalars, arrays) replaces.
pub fn deep_merge(target: &mut Value, overlay: &Value) {
    match (target, overlay) {
        (Value::Object(t), Value::Object(o)) => {
            for (k, v) in o {
                match t.get_mut(k) {
                    Some(existing) => deep_merge(existing, v),
                    None => {
                        t.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (t, o) => *t = o.clone(),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    login_url: Option<String>,
    method: Option<String>,
    content_type: Option<String>,
    request_fields: Option<Map<String, Value>>,
    token_field: Option<String>,
    token_ttl: Option<u64>,
    auth_header: Option<String>,
    auth_header_prefix: Option<String>,
    accept_header: Option<String>,
    username: Option<String>,
    password: Option<String>,
    username_field: Option<String>,
    password_field: Option<String>,
    #[serde(alias = "api_key")]
    token: Option<String>,
    headers: Option<BTreeMap<String, String>>,
    token_url: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
    scopes: Option<Vec<String>>,
}

/// Serde messages can quote the offending value; only the field-name kinds are safe to repeat.
fn safe_serde_message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    if text.starts_with("unknown field") || text.starts_with("missing field") {
        text
    } else {
        "a field has a value of the wrong type".to_owned()
    }
}

struct Resolver<'a> {
    env: &'a Environment,
    key: Option<Result<Option<CredentialKey>, Failure>>,
}

impl<'a> Resolver<'a> {
    fn new(env: &'a Environment) -> Self {
        Resolver { env, key: None }
    }

    fn key(&mut self) -> Result<Option<&CredentialKey>, Failure> {
        let env = self.env;
        let key = self
            .key
            .get_or_insert_with(|| CredentialKey::from_environment(env));
        match key {
            Ok(k) => Ok(k.as_ref()),
            Err(e) => Err(e.clone()),
        }
    }

    /// Resolves one configured string: `env:NAME` first, then `enc:` decryption.
    fn value(&mut self, raw: &str, at: &Where<'_>, field: &str) -> Result<Secret, Failure> {
        let raw = if let Some(name) = raw.strip_prefix(ENV_PREFIX) {
            let name = name.trim();
            self.env
                .get(name)
                .ok_or_else(|| {
                    Failure::new(
                        ErrorCode::ConfigMissingEnv,
                        format!(
                            "environment variable {name} (credential {} of agent {}, scheme {}) is not set",
                            field, at.agent, at.scheme
                        ),
                    )
                    .with_detail("variable", name)
                    .with_detail("agent", at.agent)
                    .with_detail("scheme", at.scheme)
                })?
                .to_owned()
        } else {
            raw.to_owned()
        };
        let key = if super::crypto::is_encrypted(&raw) {
            self.key().map_err(|e| at.annotate(e, field))?
        } else {
            None
        };
        decrypt_with(&raw, key).map_err(|e| at.annotate(e, field))
    }

    fn required(
        &mut self,
        raw: Option<&str>,
        at: &Where<'_>,
        field: &str,
    ) -> Result<Secret, Failure> {
        let raw = raw.ok_or_else(|| at.invalid(format!("`{field}` is required")))?;
        let value = self.value(raw, at, field)?;
        if value.is_blank() {
            return Err(at.invalid(format!("`{field}` must not be blank")));
        }
        Ok(value)
    }

    fn scheme(
        &mut self,
        agent: &str,
        scheme: &str,
        entry: &Value,
    ) -> Result<SchemeCredential, Failure> {
        let at = Where { agent, scheme };
        if !entry.is_object() {
            return Err(at.invalid("the entry must be an object".to_owned()));
        }
        let raw: RawEntry = serde_json::from_value(entry.clone())
            .map_err(|e| at.invalid(safe_serde_message(&e)))?;

        let kinds = [
            raw.login_url.is_some(),
            raw.token.is_some(),
            raw.client_id.is_some() || raw.client_secret.is_some(),
        ];
        if kinds.iter().filter(|k| **k).count() > 1 {
            return Err(at.invalid(
                "set only one of `login_url`, `token`/`api_key` and `client_id`/`client_secret`"
                    .to_owned(),
            ));
        }

        let source = if let Some(login_url) = &raw.login_url {
            CredentialSource::Login(self.login(&raw, login_url, &at)?)
        } else if let Some(token) = &raw.token {
            let v = self.value(token, &at, "token")?;
            if v.is_blank() {
                return Err(at.invalid("`token` must not be blank".to_owned()));
            }
            CredentialSource::Static(v)
        } else if raw.client_id.is_some() || raw.client_secret.is_some() {
            if let Some(u) = &raw.token_url {
                check_url(u, &at, "token_url")?;
            }
            CredentialSource::OAuth2(OAuth2Config {
                token_url: raw.token_url.clone(),
                client_id: self.required(raw.client_id.as_deref(), &at, "client_id")?,
                client_secret: self.required(raw.client_secret.as_deref(), &at, "client_secret")?,
                scopes: raw.scopes.clone(),
                token_ttl: raw.token_ttl,
            })
        } else if raw.username.is_some() || raw.password.is_some() {
            CredentialSource::Basic {
                username: self.required(raw.username.as_deref(), &at, "username")?,
                password: self.required(raw.password.as_deref(), &at, "password")?,
            }
        } else {
            CredentialSource::HeadersOnly
        };

        let login_only = [
            ("method", raw.method.is_some()),
            ("content_type", raw.content_type.is_some()),
            ("request_fields", raw.request_fields.is_some()),
            ("token_field", raw.token_field.is_some()),
            ("username_field", raw.username_field.is_some()),
            ("password_field", raw.password_field.is_some()),
            ("accept_header", raw.accept_header.is_some()),
        ];
        if !matches!(source, CredentialSource::Login(_)) {
            if let Some((name, _)) = login_only.iter().find(|(_, set)| *set) {
                return Err(at.invalid(format!("`{name}` needs `login_url`")));
            }
            let oauth = matches!(source, CredentialSource::OAuth2(_));
            if !oauth && (raw.token_url.is_some() || raw.scopes.is_some()) {
                return Err(at.invalid("`token_url`/`scopes` need `client_id`".to_owned()));
            }
            if !oauth && raw.token_ttl.is_some() {
                return Err(at.invalid("`token_ttl` needs `login_url` or `client_id`".to_owned()));
            }
        }

        let auth_header = raw
            .auth_header
            .as_deref()
            .map(|h| header_name(h, &at, "auth_header"))
            .transpose()?;
        if raw.auth_header_prefix.is_some() && auth_header.is_none() {
            return Err(at.invalid("`auth_header_prefix` needs `auth_header`".to_owned()));
        }
        let mut headers = Vec::new();
        for (name, value) in raw.headers.iter().flatten() {
            let hn = header_name(name, &at, "headers")?;
            let v = self.value(value, &at, "headers")?;
            if http::HeaderValue::from_str(v.expose()).is_err() {
                return Err(at.invalid(format!(
                    "the value of header {name} is not a valid header value"
                )));
            }
            headers.push((hn, v));
        }
        if matches!(source, CredentialSource::HeadersOnly) && headers.is_empty() {
            return Err(at.invalid(
                "the entry configures no credential (token, api_key, login_url, client_id, username/password or headers)"
                    .to_owned(),
            ));
        }
        Ok(SchemeCredential {
            source,
            auth_header,
            auth_header_prefix: raw.auth_header_prefix,
            headers,
        })
    }

    fn login(
        &mut self,
        raw: &RawEntry,
        login_url: &str,
        at: &Where<'_>,
    ) -> Result<LoginConfig, Failure> {
        check_url(login_url, at, "login_url")?;
        let method = match raw.method.as_deref() {
            None => Method::POST,
            Some(m) => Method::from_bytes(m.trim().to_ascii_uppercase().as_bytes())
                .map_err(|_| at.invalid("`method` is not an HTTP method".to_owned()))?,
        };
        let encoding = match raw.content_type.as_deref().map(str::trim) {
            None => LoginEncoding::Json,
            Some(ct) if ct.eq_ignore_ascii_case("application/json") => LoginEncoding::Json,
            Some(ct) if ct.eq_ignore_ascii_case("application/x-www-form-urlencoded") => {
                LoginEncoding::Form
            }
            Some(_) => {
                return Err(at.invalid(
                    "`content_type` must be application/json or application/x-www-form-urlencoded"
                        .to_owned(),
                ));
            }
        };
        let mut fields = Vec::new();
        if let Some(request_fields) = &raw.request_fields {
            for (name, value) in request_fields {
                let field = match value {
                    Value::String(s) => LoginField::Text(self.value(s, at, name)?),
                    other => LoginField::Literal(other.clone()),
                };
                fields.push((name.clone(), field));
            }
        } else {
            let (Some(user), Some(pass)) = (&raw.username, &raw.password) else {
                return Err(at.invalid(format!(
                    "Authentication username and password are required for {}",
                    at.agent
                )));
            };
            let user = self.required(Some(user), at, "username")?;
            let pass = self.required(Some(pass), at, "password")?;
            let uf = raw
                .username_field
                .clone()
                .unwrap_or_else(|| "username".into());
            let pf = raw
                .password_field
                .clone()
                .unwrap_or_else(|| "password".into());
            fields.push((uf, LoginField::Text(user)));
            fields.push((pf, LoginField::Text(pass)));
        }
        Ok(LoginConfig {
            login_url: login_url.to_owned(),
            method,
            encoding,
            fields,
            token_field: raw.token_field.clone(),
            token_ttl: raw.token_ttl,
            accept: raw.accept_header.clone(),
        })
    }
}

struct Where<'a> {
    agent: &'a str,
    scheme: &'a str,
}

impl Where<'_> {
    fn invalid(&self, why: String) -> Failure {
        invalid(format!(
            "invalid credential for agent {}, scheme {}: {why}",
            self.agent, self.scheme
        ))
        .with_detail("agent", self.agent)
        .with_detail("scheme", self.scheme)
    }

    fn annotate(&self, f: Failure, field: &str) -> Failure {
        Failure {
            message: format!(
                "{} (credential {field} of agent {}, scheme {})",
                f.message, self.agent, self.scheme
            ),
            ..f
        }
        .with_detail("agent", self.agent)
        .with_detail("scheme", self.scheme)
    }
}

fn header_name(name: &str, at: &Where<'_>, field: &str) -> Result<HeaderName, Failure> {
    HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|_| at.invalid(format!("`{field}` names an invalid header `{name}`")))
}

fn check_url(url: &str, at: &Where<'_>, field: &str) -> Result<(), Failure> {
    super::origin::Origin::parse(url)
        .map(|_| ())
        .map_err(|_| at.invalid(format!("`{field}` must be an absolute http(s) URL")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deep_merge_merges_objects_and_replaces_scalars() {
        let mut a = json!({"x": {"a": 1, "b": {"c": 2}}, "l": [1, 2]});
        deep_merge(&mut a, &json!({"x": {"b": {"d": 3}}, "l": [9]}));
        assert_eq!(a, json!({"x": {"a": 1, "b": {"c": 2, "d": 3}}, "l": [9]}));
    }

    #[test]
    fn serde_errors_never_echo_values() {
        let env = Environment::default();
        let doc = json!({"A": {"s": {"token_ttl": "sneaky-secret-value"}}});
        let e = Credentials::from_value(&doc, &env).unwrap_err();
        assert!(e.is(ErrorCode::ConfigInvalidCredentials));
        assert!(!e.message.contains("sneaky-secret-value"), "{}", e.message);
    }
}
