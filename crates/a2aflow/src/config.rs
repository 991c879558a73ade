//! The engine configuration a host (or the CLI) gives [`crate::execute_workflow`]: bindings,
//! timeouts, limits, TLS, credentials and negotiation budget. Loadable from TOML or JSON with the
//! same validation as code; unknown keys are errors (a typo must not silently keep a default).

use crate::store::StoreLocation;
use a2aflow_engine::ClientConfig;
use a2aflow_kernel::ResumePolicy;
use a2aflow_kernel::journal::RunStore;
use a2aflow_model::{ErrorCode, Failure, RetryPolicy};
use a2aflow_protocol::auth::{AuthProvider, Credentials, Environment};
use a2aflow_protocol::{Binding, ChannelConfig, ChannelFactory, Limits, tls::TlsConfig};
use a2aflow_store_sqlite::StoreOptions;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// A binding name as written in configuration files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum BindingName {
    /// JSON-RPC 2.0.
    #[serde(rename = "jsonrpc", alias = "JSONRPC")]
    JsonRpc,
    /// HTTP+JSON (REST).
    #[serde(rename = "rest", alias = "http+json", alias = "HTTP+JSON")]
    Rest,
    /// gRPC.
    #[serde(rename = "grpc", alias = "GRPC")]
    Grpc,
}

impl BindingName {
    /// The names the command line's `--binding` accepts.
    pub const CLI_NAMES: [&'static str; 3] = ["jsonrpc", "rest", "grpc"];

    /// The binding a configuration or command-line name stands for (`jsonrpc`, `rest`, `grpc`,
    /// or the card's spellings `JSONRPC`, `HTTP+JSON`, `GRPC`).
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "jsonrpc" | "JSONRPC" => BindingName::JsonRpc,
            "rest" | "http+json" | "HTTP+JSON" => BindingName::Rest,
            "grpc" | "GRPC" => BindingName::Grpc,
            _ => return None,
        })
    }
}

impl From<BindingName> for Binding {
    fn from(b: BindingName) -> Self {
        match b {
            BindingName::JsonRpc => Binding::JsonRpc,
            BindingName::Rest => Binding::HttpJson,
            BindingName::Grpc => Binding::Grpc,
        }
    }
}

/// Timeouts, in seconds (fractions allowed).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Timeouts {
    /// TCP + TLS connect.
    pub connect_secs: f64,
    /// One unary request, headers and body.
    pub request_secs: f64,
    /// Silence allowed between two SSE events (keep-alive comments reset it).
    pub idle_stream_secs: f64,
    /// The whole run's one deadline budget.
    pub run_secs: f64,
}

impl Default for Timeouts {
    fn default() -> Self {
        let l = Limits::default();
        Timeouts {
            connect_secs: l.connect_timeout.as_secs_f64(),
            request_secs: l.request_timeout.as_secs_f64(),
            idle_stream_secs: l.idle_stream_timeout.as_secs_f64(),
            run_secs: 600.0,
        }
    }
}

/// Size limits, in bytes.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SizeLimits {
    /// Largest response body read.
    pub max_response_body_bytes: usize,
    /// Largest single SSE event.
    pub max_sse_event_bytes: usize,
    /// Largest assembled artifact of one task (all its appended chunks), in content bytes;
    /// past it the task fails with `a2a.response_too_large`. Default 32 MiB.
    pub max_artifact_bytes: usize,
    /// Largest answer kept for one task (its artifacts, evidence messages and metadata), in
    /// content bytes; past it the task fails with `a2a.response_too_large`. Default 64 MiB.
    pub max_task_evidence_bytes: usize,
}

impl Default for SizeLimits {
    fn default() -> Self {
        SizeLimits {
            max_response_body_bytes: Limits::DEFAULT_MAX_RESPONSE_BODY,
            max_sse_event_bytes: Limits::DEFAULT_MAX_SSE_EVENT,
            max_artifact_bytes: Limits::DEFAULT_MAX_ARTIFACT,
            max_task_evidence_bytes: Limits::DEFAULT_MAX_TASK_EVIDENCE,
        }
    }
}

/// TLS options (verification is on unless `insecure_skip_verify`).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TlsSection {
    /// Extra trusted CA certificates (PEM).
    pub ca_bundle: Option<PathBuf>,
    /// Client certificate chain (PEM) for mTLS; needs `client_key`.
    pub client_cert: Option<PathBuf>,
    /// Client private key (PEM) for mTLS; needs `client_cert`.
    pub client_key: Option<PathBuf>,
    /// Development only: accept any server certificate (logs a warning). Fails with
    /// `config.tls` together with `ca_bundle`, which it would ignore.
    pub insecure_skip_verify: bool,
}

/// Negotiation-T settings.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NegotiationSection {
    /// Replies the host may send per logical task (≥ 1).
    pub max_exchanges: u32,
}

impl Default for NegotiationSection {
    fn default() -> Self {
        NegotiationSection {
            max_exchanges: ClientConfig::default().max_negotiation_exchanges,
        }
    }
}

/// How a dropped Notification-T stream is re-opened (`[extensions.resubscribe]`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ResubscribeSection {
    /// Attempts in a row before a subscription fails (0: never resubscribe).
    pub max_attempts: u32,
    /// Wait before the first attempt, milliseconds; doubles per failed attempt.
    pub backoff_ms: u64,
    /// Upper bound of the wait, milliseconds (≥ `backoff_ms`).
    pub max_backoff_ms: u64,
}

impl Default for ResubscribeSection {
    fn default() -> Self {
        ResubscribeSection {
            max_attempts: 3,
            backoff_ms: 200,
            max_backoff_ms: 5000,
        }
    }
}

/// The extension sender (Authorization-T, Notification-T): `[extensions]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExtensionsSection {
    /// Deadline of one Authorization-T operation, send to final result, seconds.
    pub authorization_timeout_secs: f64,
    /// GetTask poll interval while an authorization is SUBMITTED/WORKING, milliseconds (10–250).
    pub poll_interval_ms: u64,
    /// Deadline of a notification's first protocol result, seconds.
    pub acknowledgement_timeout_secs: f64,
    /// Bound of the best-effort CancelTask when a subscription is closed, seconds.
    pub cancel_timeout_secs: f64,
    /// How dropped notification streams are re-opened.
    pub resubscribe: ResubscribeSection,
}

impl Default for ExtensionsSection {
    fn default() -> Self {
        ExtensionsSection {
            authorization_timeout_secs: 60.0,
            poll_interval_ms: 250,
            acknowledgement_timeout_secs: 300.0,
            cancel_timeout_secs: 3.0,
            resubscribe: ResubscribeSection::default(),
        }
    }
}

/// What a resumed run may resend (`[resume]`): a journaled message whose task cannot be found
/// again (no task for its context id, or an agent that cannot list tasks) is resent, with the
/// same message id and context id, only where this allows it; otherwise that task ends
/// `workflow.outcome_unknown` and nothing is sent.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ResumeSection {
    /// Resend for agents without their own entry. Default false.
    pub resend: bool,
    /// Per agent name (the workflow's name for it): overrides `resend`.
    pub per_agent: std::collections::HashMap<String, bool>,
    /// Before a resend, the wait after which the agent is asked once more for the journaled
    /// message, milliseconds: a send written just before its driver stopped may still be on its
    /// way in. Default 1000; `0` resends after the first look.
    pub resend_grace_ms: u64,
}

impl Default for ResumeSection {
    fn default() -> Self {
        ResumeSection {
            resend: false,
            per_agent: std::collections::HashMap::new(),
            resend_grace_ms: ClientConfig::default().resend_grace.as_millis() as u64,
        }
    }
}

impl ResumeSection {
    /// The kernel's policy of this section.
    pub fn policy(&self) -> ResumePolicy {
        ResumePolicy {
            resend: self.resend,
            per_agent: self.per_agent.clone(),
        }
    }
}

/// Everything the facade needs to build transports and the engine client.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EngineConfig {
    /// Binding preference, first match on the card wins.
    pub bindings: Vec<BindingName>,
    /// Timeouts.
    pub timeouts: Timeouts,
    /// Size limits.
    pub limits: SizeLimits,
    /// TLS.
    pub tls: TlsSection,
    /// The credentials file (reference-engine format); values come from the environment.
    pub credentials_file: Option<PathBuf>,
    /// A `.env` file whose variables complement the process environment for credentials.
    pub env_file: Option<PathBuf>,
    /// Negotiation-T.
    pub negotiation: NegotiationSection,
    /// First GetTask poll interval, milliseconds (≥ 100).
    pub poll_interval_ms: u64,
    /// Bound of one best-effort CancelTask (after a deadline, a Stop or a cancelled run), seconds.
    /// A run that ends by its deadline may take this much longer to return.
    pub cancel_timeout_secs: f64,
    /// At most this many remote tasks in flight per run; the others wait for a slot (their
    /// host callback already answered). Default
    /// [`EngineConfig::DEFAULT_MAX_CONCURRENT_REMOTE_TASKS`] (64); `0` (or `None`) means
    /// unbounded. Read it through [`EngineConfig::remote_task_limit`].
    pub max_concurrent_remote_tasks: Option<usize>,
    /// Log every request, response and SSE event (secrets redacted) on the `tracing` target
    /// `a2aflow::wire` at DEBUG; a subscriber must listen to it. Off by default.
    pub wire_log: bool,
    /// The extension sender's bounds (`[extensions]`).
    pub extensions: ExtensionsSection,
    /// Where runs are journaled (`store = "sqlite:PATH"` or a path); absent: runs live only in
    /// memory.
    pub store: Option<StoreLocation>,
    /// How long a driver's lease on a journaled run lasts, seconds (renewed at a third of its
    /// life). A driver that died holds its runs this long before a resume may take them over.
    /// Default 30.
    pub store_lease_secs: f64,
    /// What a resumed run may resend (`[resume]`).
    pub resume: ResumeSection,
    /// The retry policy of every subtask whose workflow entry gives none (`[retry]`, the same
    /// keys as a subtask's `retry`: `attempts`, `on`, and `[retry.backoff]` with `initial` and
    /// `max` in seconds, `multiplier`, `jitter`). Absent: no retry.
    pub retry: Option<RetryPolicy>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            bindings: vec![BindingName::JsonRpc, BindingName::Rest, BindingName::Grpc],
            timeouts: Timeouts::default(),
            limits: SizeLimits::default(),
            tls: TlsSection::default(),
            credentials_file: None,
            env_file: None,
            negotiation: NegotiationSection::default(),
            poll_interval_ms: ClientConfig::default().poll_interval.as_millis() as u64,
            cancel_timeout_secs: ClientConfig::default().cancel_timeout.as_secs_f64(),
            max_concurrent_remote_tasks: Some(Self::DEFAULT_MAX_CONCURRENT_REMOTE_TASKS),
            wire_log: false,
            extensions: ExtensionsSection::default(),
            store: None,
            store_lease_secs: a2aflow_kernel::journal::DEFAULT_LEASE_TTL.as_secs_f64(),
            resume: ResumeSection::default(),
            retry: None,
        }
    }
}

fn invalid(message: impl Into<String>) -> Failure {
    Failure::new(ErrorCode::ConfigInvalid, message)
}

fn secs(name: &str, value: f64) -> Result<Duration, Failure> {
    positive_secs(&format!("timeouts.{name}"), value)
}

/// `value` seconds as a duration; the key names the setting in the message.
fn positive_secs(key: &str, value: f64) -> Result<Duration, Failure> {
    if value.is_finite() && value > 0.0 && value < 1e9 {
        Ok(Duration::from_secs_f64(value))
    } else {
        Err(invalid(format!(
            "{key} must be a positive number of seconds, got {value}"
        )))
    }
}

impl EngineConfig {
    /// The default of [`EngineConfig::max_concurrent_remote_tasks`]: a wide step sends this many
    /// remote tasks at once (each HTTP/1 request in flight holds a connection of its own).
    pub const DEFAULT_MAX_CONCURRENT_REMOTE_TASKS: usize = 64;

    /// The run's limit on remote tasks in flight as the kernel takes it
    /// ([`a2aflow_kernel::RunOptions::max_concurrent_remote_tasks`]): `None` when unbounded
    /// (`0` or `None` configured).
    pub fn remote_task_limit(&self) -> Option<usize> {
        self.max_concurrent_remote_tasks.filter(|&n| n > 0)
    }

    /// Loads a `.toml` or `.json` file; relative paths inside it are resolved against the file's
    /// directory. The result is validated.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, Failure> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| invalid(format!("cannot read config file {}: {e}", path.display())))?;
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or_default();
        let mut config = match ext {
            "toml" => Self::from_toml_str(&text),
            "json" => Self::from_json_str(&text),
            _ => Err(invalid(format!(
                "config file {} must end in .toml or .json",
                path.display()
            ))),
        }
        .map_err(|mut f| {
            f.message = format!("{}: {}", path.display(), f.message);
            f
        })?;
        if let Some(dir) = path.parent() {
            config.resolve_paths(dir);
        }
        Ok(config)
    }

    /// Parses TOML text and validates it.
    pub fn from_toml_str(text: &str) -> Result<Self, Failure> {
        let config: EngineConfig =
            toml::from_str(text).map_err(|e| invalid(format!("invalid TOML config: {e}")))?;
        config.validate()?;
        Ok(config)
    }

    /// Parses JSON text and validates it.
    pub fn from_json_str(text: &str) -> Result<Self, Failure> {
        let config: EngineConfig =
            serde_json::from_str(text).map_err(|e| invalid(format!("invalid JSON config: {e}")))?;
        config.validate()?;
        Ok(config)
    }

    fn resolve_paths(&mut self, dir: &Path) {
        let fix = |p: &mut Option<PathBuf>| {
            if let Some(path) = p.as_mut().filter(|p| p.is_relative()) {
                *path = dir.join(&*path);
            }
        };
        fix(&mut self.credentials_file);
        fix(&mut self.env_file);
        fix(&mut self.tls.ca_bundle);
        fix(&mut self.tls.client_cert);
        fix(&mut self.tls.client_key);
        self.store = self.store.take().map(|s| s.resolved_against(dir));
    }

    /// Checks every value; the first violation is a `config.invalid` failure.
    pub fn validate(&self) -> Result<(), Failure> {
        if self.bindings.is_empty() {
            return Err(invalid(
                "bindings must name at least one of \"jsonrpc\", \"rest\", \"grpc\"",
            ));
        }
        self.limits()?;
        secs("run_secs", self.timeouts.run_secs)?;
        if self.limits.max_response_body_bytes == 0
            || self.limits.max_sse_event_bytes == 0
            || self.limits.max_artifact_bytes == 0
            || self.limits.max_task_evidence_bytes == 0
        {
            return Err(invalid("limits must be positive byte counts"));
        }
        if self.tls.client_cert.is_some() != self.tls.client_key.is_some() {
            return Err(invalid("tls.client_cert and tls.client_key go together"));
        }
        self.client_config()?;
        self.store_options()?;
        self.retry_policy()?;
        #[cfg(feature = "extensions")]
        self.extension_config()?;
        Ok(())
    }

    /// The binding preference.
    pub fn binding_preference(&self) -> Vec<Binding> {
        self.bindings.iter().map(|&b| b.into()).collect()
    }

    /// The transport limits.
    pub fn limits(&self) -> Result<Limits, Failure> {
        let mut limits = Limits::default();
        limits.connect_timeout = secs("connect_secs", self.timeouts.connect_secs)?;
        limits.request_timeout = secs("request_secs", self.timeouts.request_secs)?;
        limits.idle_stream_timeout = secs("idle_stream_secs", self.timeouts.idle_stream_secs)?;
        limits.max_response_body = self.limits.max_response_body_bytes;
        limits.max_sse_event = self.limits.max_sse_event_bytes;
        limits.max_artifact = self.limits.max_artifact_bytes;
        limits.max_task_evidence = self.limits.max_task_evidence_bytes;
        Ok(limits)
    }

    /// The default retry policy (`[retry]`), checked as a workflow's are: a value that cannot
    /// work or a code no attempt can change is `config.invalid` naming the key.
    pub fn retry_policy(&self) -> Result<Option<RetryPolicy>, Failure> {
        let Some(policy) = &self.retry else {
            return Ok(None);
        };
        match policy.problems("retry").into_iter().next() {
            None => Ok(Some(policy.clone())),
            Some(p) => {
                let key = p.path.replace('/', ".");
                Err(invalid(format!("{key}: {}", p.message))
                    .with_detail("key", key)
                    .with_detail("problem", p.code.as_str()))
            }
        }
    }

    /// The run's deadline budget.
    pub fn run_timeout(&self) -> Result<Duration, Failure> {
        secs("run_secs", self.timeouts.run_secs)
    }

    /// The TLS configuration.
    pub fn tls_config(&self) -> TlsConfig {
        let mut tls = TlsConfig::new().with_insecure_skip_verify(self.tls.insecure_skip_verify);
        if let Some(ca) = &self.tls.ca_bundle {
            tls = tls.with_ca_bundle(ca.clone());
        }
        if let (Some(cert), Some(key)) = (&self.tls.client_cert, &self.tls.client_key) {
            tls = tls.with_client_cert(cert.clone(), key.clone());
        }
        tls
    }

    /// How channels to agents are built: the binding preference, limits, TLS, the credentials of
    /// `credentials_file` (with `env_file`), `auth_provider` and the wire log (`config.*` when
    /// the configuration or a file it names is invalid).
    pub fn channel_config(
        &self,
        auth_provider: Option<Arc<dyn AuthProvider>>,
    ) -> Result<ChannelConfig, Failure> {
        self.validate()?;
        let mut channels = ChannelConfig::new()?
            .with_preference(&self.binding_preference())
            .with_limits(self.limits()?)
            .with_tls_config(&self.tls_config())?
            .with_wire_log(self.wire_log);
        if let Some(credentials) = self.credentials()? {
            channels = channels.with_credentials(credentials);
        }
        if let Some(provider) = auth_provider {
            channels = channels.with_auth_provider(provider);
        }
        Ok(channels)
    }

    /// The door from agent cards to authenticated channels for this configuration (see
    /// [`channel_config`](Self::channel_config)); the credentials file is read once, here.
    pub fn channel_factory(
        &self,
        auth_provider: Option<Arc<dyn AuthProvider>>,
    ) -> Result<ChannelFactory, Failure> {
        ChannelFactory::new(self.channel_config(auth_provider)?)
    }

    fn credentials(&self) -> Result<Option<Credentials>, Failure> {
        let Some(path) = &self.credentials_file else {
            return Ok(None);
        };
        let mut env = Environment::from_process();
        if let Some(env_file) = &self.env_file {
            env = env.with_env_file(env_file)?;
        }
        Ok(Some(Credentials::from_file(path, &env)?))
    }

    /// The extension sender's settings from `[extensions]` (validated).
    #[cfg(feature = "extensions")]
    pub fn extension_config(&self) -> Result<a2aflow_extensions::ExtensionConfig, Failure> {
        let e = &self.extensions;
        let mut resubscribe = a2aflow_extensions::ResubscribePolicy::new(
            e.resubscribe.max_attempts,
            Duration::from_millis(e.resubscribe.backoff_ms),
        );
        resubscribe.max_backoff = Duration::from_millis(e.resubscribe.max_backoff_ms);
        let config = a2aflow_extensions::ExtensionConfig::default()
            .with_authorization_timeout(positive_secs(
                "extensions.authorization_timeout_secs",
                e.authorization_timeout_secs,
            )?)
            .with_poll_interval(Duration::from_millis(e.poll_interval_ms))
            .with_acknowledgement_timeout(positive_secs(
                "extensions.acknowledgement_timeout_secs",
                e.acknowledgement_timeout_secs,
            )?)
            .with_cancel_timeout(positive_secs(
                "extensions.cancel_timeout_secs",
                e.cancel_timeout_secs,
            )?)
            .with_resubscribe(resubscribe);
        config.validate().map_err(|mut f| {
            f.message = format!("extensions: {}", f.message);
            f
        })?;
        Ok(config)
    }

    /// Opens the configured run store, creating it on first use; `None` when no `store` is
    /// configured. Errors are the store's `store.*` codes, and those of
    /// [`EngineConfig::store_password`].
    pub async fn open_store(&self) -> Result<Option<Arc<dyn RunStore>>, Failure> {
        let options = self.store_options()?;
        match &self.store {
            Some(location) => {
                let password = self.store_password()?;
                Ok(Some(location.open_store(options, &password).await?))
            }
            None => Ok(None),
        }
    }

    /// Opens the configured run store, which must already exist (for reading, inspecting,
    /// answering or resuming runs: nothing is created), with the password of
    /// [`EngineConfig::store_password`]. No `store` configured is `config.invalid`; the store's
    /// errors are its `store.*` codes.
    pub async fn open_existing_store(&self) -> Result<Arc<dyn RunStore>, Failure> {
        let Some(location) = &self.store else {
            return Err(Failure::new(
                ErrorCode::ConfigInvalid,
                "no run store is configured: set `store` (a path, `sqlite:PATH` or a \
                 postgres:// URL)",
            ));
        };
        let password = self.store_password()?;
        location
            .open_existing_as(self.store_options()?, &password)
            .await
    }

    /// The password of the configured Postgres store (`None` for SQLite, or when none is
    /// set): from the credentials file's [`crate::store::STORE_CREDENTIALS_ENTRY`] entry
    /// (`{"postgres": {"username": ROLE, "password": …}}`, the username the URL's role; or
    /// `{"postgres": {"token": …}}`), or else from `A2AFLOW_PG_PASSWORD` / `PGPASSWORD`. Set
    /// in both places is `config.invalid_credentials` (neither silently wins), as is an entry
    /// for another role or of another kind; the credentials file's own errors as for agents.
    /// Messages never hold the password.
    pub fn store_password(&self) -> Result<Option<String>, Failure> {
        use crate::store::{STORE_CREDENTIALS_ENTRY, STORE_CREDENTIALS_SCHEME};
        use a2aflow_protocol::auth::CredentialSource;
        let Some(StoreLocation::Postgres(url)) = &self.store else {
            return Ok(None);
        };
        let from_env = a2aflow_store_postgres::password_from_env();
        let credentials = self.credentials()?;
        let entry = credentials.as_ref().and_then(|c| {
            c.for_agent(STORE_CREDENTIALS_ENTRY)
                .and_then(|a| a.scheme(STORE_CREDENTIALS_SCHEME))
        });
        let Some(entry) = entry else {
            return Ok(from_env);
        };
        let bad = |why: String| {
            Failure::new(
                ErrorCode::ConfigInvalidCredentials,
                format!(
                    "credentials entry `{STORE_CREDENTIALS_ENTRY}` / \
                     `{STORE_CREDENTIALS_SCHEME}`: {why}"
                ),
            )
        };
        let password = match &entry.source {
            CredentialSource::Static(secret) => secret.expose().to_owned(),
            CredentialSource::Basic { username, password } => {
                let role = url.role();
                if role.as_deref() != Some(username.expose()) {
                    return Err(bad(format!(
                        "its username is not the role the store URL names ({}); the password \
                         goes only to the role it was written for",
                        role.as_deref().unwrap_or("no role")
                    )));
                }
                password.expose().to_owned()
            }
            _ => {
                return Err(bad(
                    "give the database password as {\"username\": ROLE, \"password\": …} or \
                     {\"token\": …}"
                        .to_owned(),
                ));
            }
        };
        if from_env.is_some() {
            return Err(bad(format!(
                "the store password is set both here and in the environment ({}); unset one \
                 of them",
                a2aflow_store_postgres::PASSWORD_VARIABLES.join(" / ")
            )));
        }
        Ok(Some(password))
    }

    /// How the configured store is opened (the lease length of `store_lease_secs`).
    pub fn store_options(&self) -> Result<StoreOptions, Failure> {
        let ttl = positive_secs("store_lease_secs", self.store_lease_secs)?;
        Ok(StoreOptions::default().with_lease_ttl(ttl))
    }

    /// The engine client's settings (validated).
    pub fn client_config(&self) -> Result<ClientConfig, Failure> {
        let config = ClientConfig::default()
            .with_max_negotiation_exchanges(self.negotiation.max_exchanges)
            .with_poll_interval(Duration::from_millis(self.poll_interval_ms))
            .with_cancel_timeout(secs("cancel_timeout_secs", self.cancel_timeout_secs)?)
            .with_resend_grace(Duration::from_millis(self.resume.resend_grace_ms))
            .with_limits(&self.limits()?);
        config.validate()?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resend_grace_reaches_the_engine_client() {
        let default = EngineConfig::default().client_config().unwrap();
        assert_eq!(default.resend_grace, Duration::from_secs(1));
        let c =
            EngineConfig::from_toml_str("[resume]\nresend = true\nresend_grace_ms = 0").unwrap();
        assert_eq!(c.client_config().unwrap().resend_grace, Duration::ZERO);
        assert!(c.resume.policy().resend);
    }

    #[test]
    fn assembly_caps_reach_the_engine_client() {
        let c = EngineConfig::from_toml_str(
            "[limits]\nmax_artifact_bytes = 1000\nmax_task_evidence_bytes = 2000",
        )
        .unwrap();
        let client = c.client_config().unwrap();
        assert_eq!(client.max_artifact_bytes, 1000);
        assert_eq!(client.max_task_evidence_bytes, 2000);
        assert!(EngineConfig::from_toml_str("[limits]\nmax_artifact_bytes = 0").is_err());
    }

    #[test]
    fn grpc_is_a_binding_name_in_files_and_on_the_command_line() {
        let c: EngineConfig = toml::from_str("bindings = [\"grpc\", \"rest\"]").unwrap();
        assert_eq!(
            c.binding_preference(),
            vec![Binding::Grpc, Binding::HttpJson]
        );
        let c: EngineConfig = serde_json::from_str(r#"{"bindings": ["GRPC"]}"#).unwrap();
        assert_eq!(c.binding_preference(), vec![Binding::Grpc]);
        for name in BindingName::CLI_NAMES {
            assert!(BindingName::parse(name).is_some(), "{name}");
        }
        assert_eq!(BindingName::parse("grpc"), Some(BindingName::Grpc));
        assert_eq!(BindingName::parse("slimrpc"), None);
        // A card offering only gRPC is reached by default.
        assert_eq!(
            EngineConfig::default().binding_preference(),
            vec![Binding::JsonRpc, Binding::HttpJson, Binding::Grpc]
        );
    }

    #[test]
    fn defaults_are_valid() {
        EngineConfig::default().validate().unwrap();
    }

    #[test]
    fn toml_and_json_give_the_same_config() {
        let toml = r#"
            bindings = ["rest", "jsonrpc"]
            credentials_file = "creds.json"
            poll_interval_ms = 200
            [timeouts]
            connect_secs = 2
            request_secs = 5.5
            idle_stream_secs = 30
            run_secs = 90
            [negotiation]
            max_exchanges = 5
        "#;
        let json = r#"{"bindings": ["rest", "jsonrpc"], "credentials_file": "creds.json",
            "poll_interval_ms": 200,
            "timeouts": {"connect_secs": 2, "request_secs": 5.5, "idle_stream_secs": 30, "run_secs": 90},
            "negotiation": {"max_exchanges": 5}}"#;
        let a = EngineConfig::from_toml_str(toml).unwrap();
        let b = EngineConfig::from_json_str(json).unwrap();
        assert_eq!(a, b);
        assert_eq!(
            a.binding_preference(),
            vec![Binding::HttpJson, Binding::JsonRpc]
        );
        assert_eq!(
            a.limits().unwrap().request_timeout,
            Duration::from_millis(5500)
        );
        assert_eq!(a.client_config().unwrap().max_negotiation_exchanges, 5);
        let c = EngineConfig::from_toml_str("cancel_timeout_secs = 0.5").unwrap();
        assert_eq!(
            c.client_config().unwrap().cancel_timeout,
            Duration::from_millis(500)
        );
    }

    /// The fenced block of `lang` in the configuration guide.
    fn guide_block(lang: &str) -> &'static str {
        let guide = include_str!("../../../docs/guide/configuration.md");
        let start = guide.find(&format!("```{lang}\n")).unwrap() + lang.len() + 4;
        let len = guide[start..].find("```").unwrap();
        &guide[start..start + len]
    }

    #[test]
    fn the_guide_examples_parse_to_the_same_config() {
        let toml = EngineConfig::from_toml_str(guide_block("toml")).unwrap();
        let json = EngineConfig::from_json_str(guide_block("json")).unwrap();
        assert_eq!(toml, json);
        assert_eq!(toml.timeouts.run_secs, 300.0);
        assert_eq!(toml.max_concurrent_remote_tasks, Some(8));
    }

    #[test]
    fn remote_tasks_in_flight_default_to_64_and_zero_means_unbounded() {
        let default = EngineConfig::from_toml_str("").unwrap();
        assert_eq!(default.remote_task_limit(), Some(64));
        assert_eq!(EngineConfig::default().remote_task_limit(), Some(64));
        let unbounded = EngineConfig::from_toml_str("max_concurrent_remote_tasks = 0").unwrap();
        assert_eq!(unbounded.remote_task_limit(), None);
        let json = EngineConfig::from_json_str(r#"{"max_concurrent_remote_tasks": null}"#);
        assert_eq!(json.unwrap().remote_task_limit(), None);
        let eight = EngineConfig::from_toml_str("max_concurrent_remote_tasks = 8").unwrap();
        assert_eq!(eight.remote_task_limit(), Some(8));
    }

    #[test]
    fn the_wire_log_is_off_unless_configured() {
        assert!(!EngineConfig::default().wire_log);
        assert!(
            EngineConfig::from_toml_str("wire_log = true")
                .unwrap()
                .wire_log
        );
        assert!(
            EngineConfig::from_json_str(r#"{"wire_log": true}"#)
                .unwrap()
                .wire_log
        );
    }

    #[test]
    fn unknown_keys_and_bad_values_are_config_invalid() {
        for (text, needle) in [
            ("bindngs = [\"rest\"]", "unknown field `bindngs`"),
            ("bindings = [\"slimrpc\"]", "unknown variant `slimrpc`"),
            ("bindings = []", "at least one"),
            (
                "[timeouts]\nrequest_secs = 0",
                "request_secs must be a positive",
            ),
            ("[timeouts]\nrun_secs = -1", "run_secs must be a positive"),
            (
                "[negotiation]\nmax_exchanges = 0",
                "budget must be positive",
            ),
            ("poll_interval_ms = 10", "at least 100 ms"),
            ("[tls]\nclient_cert = \"c.pem\"", "go together"),
            (
                "cancel_timeout_secs = 0",
                "cancel_timeout_secs must be a positive",
            ),
        ] {
            let err = EngineConfig::from_toml_str(text).unwrap_err();
            assert_eq!(err.code, "config.invalid", "{text}");
            assert!(err.message.contains(needle), "{text}: {}", err.message);
        }
    }

    #[test]
    fn the_store_key_names_a_sqlite_file_in_toml_and_json() {
        let toml = EngineConfig::from_toml_str("store = \"sqlite:/var/a2aflow/runs.db\"").unwrap();
        let json = EngineConfig::from_json_str(r#"{"store": "/var/a2aflow/runs.db"}"#).unwrap();
        assert_eq!(toml, json);
        assert_eq!(
            toml.store.unwrap().path(),
            Some(Path::new("/var/a2aflow/runs.db"))
        );
        assert_eq!(EngineConfig::default().store, None);
        for text in [
            "store = \"postgres://app:pw@db/runs\"",
            "store = \"sqlite:\"",
            "store = 3",
        ] {
            let err = EngineConfig::from_toml_str(text).unwrap_err();
            assert_eq!(err.code, "config.invalid", "{text}");
            assert!(err.message.contains("store"), "{text}: {}", err.message);
        }
    }

    #[tokio::test]
    async fn open_store_creates_the_configured_store_and_none_without_one() {
        assert!(
            EngineConfig::default()
                .open_store()
                .await
                .unwrap()
                .is_none()
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("engine.toml");
        std::fs::write(&path, "store = \"sqlite:runs.db\"\n").unwrap();
        let config = EngineConfig::from_file(&path).unwrap();
        let store = config.open_store().await.unwrap().unwrap();
        let listed = store
            .list(a2aflow_kernel::journal::RunFilter::default())
            .await
            .unwrap();
        assert!(listed.is_empty());
        assert!(dir.path().join("runs.db").is_file());
        let missing = EngineConfig::from_toml_str("store = \"/nonexistent-a2aflow/x/runs.db\"")
            .unwrap()
            .open_store()
            .await
            .err()
            .unwrap();
        assert_eq!(missing.code, "store.unavailable");
    }

    #[test]
    fn files_resolve_relative_paths_and_reject_other_extensions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("engine.toml");
        std::fs::write(
            &path,
            "credentials_file = \"creds.json\"\n[tls]\nca_bundle = \"/abs/ca.pem\"\n",
        )
        .unwrap();
        let config = EngineConfig::from_file(&path).unwrap();
        assert_eq!(config.credentials_file, Some(dir.path().join("creds.json")));
        assert_eq!(config.tls.ca_bundle, Some(PathBuf::from("/abs/ca.pem")));
        let yaml = dir.path().join("engine.yaml");
        std::fs::write(&yaml, "x: 1").unwrap();
        let err = EngineConfig::from_file(&yaml).unwrap_err();
        assert!(
            err.message.contains("must end in .toml or .json"),
            "{}",
            err.message
        );
        let err = EngineConfig::from_file(dir.path().join("missing.toml")).unwrap_err();
        assert_eq!(err.code, "config.invalid");
    }
}
