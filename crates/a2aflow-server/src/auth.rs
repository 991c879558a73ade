//! Inbound authentication: the callers a server admits ([`Callers`]), each named and known by a
//! bearer token or an API key header, loaded from a callers file the way the credentials file is
//! (values may be `env:NAME` or `enc:<iv>:<ct>`), and the check of one request's headers.
//!
//! The callers file, JSON or TOML (by its `.toml` extension):
//!
//! ```json
//! { "callers": [
//!     { "name": "alice", "bearer": "env:ALICE_TOKEN" },
//!     { "name": "ci", "apiKey": { "header": "X-API-Key", "value": "enc:…" } }
//! ] }
//! ```
//!
//! Secrets never reach a log line, an error message or `Debug` output ([`Secret`]); a request's
//! credential is compared with every caller's in constant time for equal lengths, and every
//! caller is compared, so the time taken does not say which caller came close.

use a2a::{ApiKeySecurityScheme, HttpAuthSecurityScheme, SecurityRequirement, SecurityScheme};
use a2aflow::model::{ErrorCode, Failure};
use a2aflow::protocol::auth::{CredentialKey, ENV_PREFIX, Environment, Secret, decrypt_with};
use http::{HeaderMap, HeaderName, header};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// The longest callers file read (1 MiB).
const MAX_CALLERS_FILE: u64 = 1024 * 1024;

/// The card's name of the bearer scheme.
const BEARER_SCHEME: &str = "bearer";

/// How one caller proves who it is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallerCredential {
    /// `Authorization: Bearer <token>`.
    Bearer(Secret),
    /// The header `header` with the value `value`.
    ApiKey {
        /// The header's name.
        header: HeaderName,
        /// Its value.
        value: Secret,
    },
}

/// One admitted caller: a name (what its runs are recorded under) and its credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    name: String,
    credential: CallerCredential,
}

impl Caller {
    /// The caller's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The caller's credential.
    pub fn credential(&self) -> &CallerCredential {
        &self.credential
    }
}

/// The callers a server admits. Empty (the default): the server is open, and every request is
/// the one anonymous caller.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Callers {
    callers: Vec<Caller>,
}

/// Who sent a request: a named caller, or the anonymous caller of an open server.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub(crate) struct Who(pub(crate) Option<Arc<str>>);

impl Who {
    /// The caller's name, `None` for the anonymous caller.
    pub(crate) fn name(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

/// The file's shape.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDoc {
    callers: Vec<FileCaller>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct FileCaller {
    name: String,
    #[serde(default)]
    bearer: Option<String>,
    #[serde(default)]
    api_key: Option<FileApiKey>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileApiKey {
    header: String,
    value: String,
}

impl Callers {
    /// No callers: an open server.
    pub fn new() -> Self {
        Callers::default()
    }

    /// Admits `name` with the bearer token `token`.
    ///
    /// # Errors
    /// `config.invalid_credentials` for a blank name or token, a name already admitted, or a
    /// credential another caller already has.
    pub fn bearer(self, name: impl Into<String>, token: Secret) -> Result<Self, Failure> {
        self.with(name.into(), CallerCredential::Bearer(token))
    }

    /// Admits `name` with the API key `value` in header `header`.
    ///
    /// # Errors
    /// As [`Callers::bearer`], and for a header name that is not one (or is `Authorization`,
    /// which bearer tokens use).
    pub fn api_key(
        self,
        name: impl Into<String>,
        header: &str,
        value: Secret,
    ) -> Result<Self, Failure> {
        let name = name.into();
        let header = api_key_header(&name, header)?;
        self.with(name, CallerCredential::ApiKey { header, value })
    }

    /// Loads a callers file (JSON, or TOML when its extension is `.toml`), resolving `env:`
    /// values in `env` and `enc:` values with its `A2AT_CRED_KEY`.
    ///
    /// # Errors
    /// `config.invalid_credentials` for a file that cannot be read or parsed, or a caller that
    /// [`Callers::bearer`] or [`Callers::api_key`] would refuse; `config.missing_env` for an
    /// unset variable; `config.decrypt` for a value that cannot be decrypted. No message holds
    /// a secret.
    pub fn from_file(path: impl AsRef<Path>, env: &Environment) -> Result<Self, Failure> {
        let path = path.as_ref();
        let in_file = |f: Failure| {
            Failure {
                message: format!("the callers file {}: {}", path.display(), f.message),
                ..f
            }
            .with_detail("path", path.display().to_string())
        };
        let text = read_bounded(path).map_err(in_file)?;
        let toml = path.extension().is_some_and(|x| x == "toml");
        Self::from_str(&text, toml, env).map_err(in_file)
    }

    /// Parses callers from the text of a callers file (`toml` for TOML, else JSON).
    fn from_str(text: &str, toml: bool, env: &Environment) -> Result<Self, Failure> {
        let doc: FileDoc = if toml {
            ::toml::from_str(text)
                .map_err(|e| invalid(format!("not a callers list: {}", e.message())))?
        } else {
            serde_json::from_str(text).map_err(|e| {
                invalid(format!(
                    "not a callers list (line {}, column {}): give {{\"callers\": [{{\"name\": …, \
                     \"bearer\": …}} or {{\"name\": …, \"apiKey\": {{\"header\": …, \"value\": …}}}}]}}",
                    e.line(),
                    e.column()
                ))
            })?
        };
        let key = CredentialKey::from_environment(env)?;
        let mut callers = Callers::new();
        for entry in doc.callers {
            let resolve = |raw: &str| resolve(raw, env, key.as_ref(), &entry.name);
            callers = match (&entry.bearer, &entry.api_key) {
                (Some(token), None) => callers.bearer(entry.name.clone(), resolve(token)?)?,
                (None, Some(k)) => {
                    callers.api_key(entry.name.clone(), &k.header, resolve(&k.value)?)?
                }
                _ => {
                    return Err(invalid(format!(
                        "caller '{}' needs exactly one of `bearer` and `apiKey`",
                        entry.name
                    )));
                }
            };
        }
        if callers.is_empty() {
            return Err(invalid(
                "the list of callers is empty; list at least one, or serve without callers",
            ));
        }
        Ok(callers)
    }

    fn with(mut self, name: String, credential: CallerCredential) -> Result<Self, Failure> {
        if name.trim().is_empty() || name.chars().any(char::is_control) {
            return Err(invalid(
                "a caller needs a visible name (its runs are recorded under it)",
            ));
        }
        let secret = match &credential {
            CallerCredential::Bearer(s) | CallerCredential::ApiKey { value: s, .. } => s,
        };
        if secret.is_blank() {
            return Err(invalid(format!("caller '{name}' has a blank credential")));
        }
        if self.callers.iter().any(|c| c.name == name) {
            return Err(invalid(format!("caller '{name}' is listed twice")));
        }
        if let Some(other) = self.callers.iter().find(|c| c.credential == credential) {
            return Err(invalid(format!(
                "callers '{}' and '{name}' have the same credential; each caller needs its own",
                other.name
            )));
        }
        self.callers.push(Caller { name, credential });
        Ok(self)
    }

    /// Whether no caller is admitted (an open server).
    pub fn is_empty(&self) -> bool {
        self.callers.is_empty()
    }

    /// The admitted callers.
    pub fn iter(&self) -> impl Iterator<Item = &Caller> {
        self.callers.iter()
    }

    /// Who sent a request with `headers`: the anonymous caller on an open server, the caller
    /// whose credential the headers carry, or `None` (refused).
    pub(crate) fn identify(&self, headers: &HeaderMap) -> Option<Who> {
        if self.callers.is_empty() {
            return Some(Who(None));
        }
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer_token);
        let mut found: Option<&Caller> = None;
        for caller in &self.callers {
            let presented = match &caller.credential {
                CallerCredential::Bearer(token) => {
                    bearer.map(|b| constant_time_eq(b.as_bytes(), token.expose().as_bytes()))
                }
                CallerCredential::ApiKey { header, value } => headers
                    .get(header)
                    .map(|v| constant_time_eq(v.as_bytes(), value.expose().as_bytes())),
            };
            if presented == Some(true) && found.is_none() {
                found = Some(caller);
            }
        }
        found.map(|c| Who(Some(Arc::from(c.name.as_str()))))
    }

    /// The card's security schemes and requirements (alternatives: any one scheme).
    pub(crate) fn card_security(
        &self,
    ) -> Option<(HashMap<String, SecurityScheme>, Vec<SecurityRequirement>)> {
        if self.callers.is_empty() {
            return None;
        }
        let mut schemes = HashMap::new();
        for caller in &self.callers {
            let (name, scheme) = match &caller.credential {
                CallerCredential::Bearer(_) => (
                    BEARER_SCHEME.to_owned(),
                    SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
                        scheme: "Bearer".to_owned(),
                        description: Some("A bearer token the server's operator issued.".into()),
                        bearer_format: None,
                    }),
                ),
                CallerCredential::ApiKey { header, .. } => (
                    format!("apiKey:{header}"),
                    SecurityScheme::ApiKey(ApiKeySecurityScheme {
                        location: "header".to_owned(),
                        name: header.as_str().to_owned(),
                        description: Some("An API key the server's operator issued.".into()),
                    }),
                ),
            };
            schemes.insert(name, scheme);
        }
        let mut names: Vec<&String> = schemes.keys().collect();
        names.sort();
        let requirements = names
            .into_iter()
            .map(|n| HashMap::from([(n.clone(), Vec::new())]))
            .collect();
        Some((schemes, requirements))
    }

    /// The `WWW-Authenticate` challenge of a refusal.
    pub(crate) fn challenge(&self) -> String {
        if self
            .callers
            .iter()
            .any(|c| matches!(c.credential, CallerCredential::Bearer(_)))
        {
            "Bearer realm=\"a2aflow\"".to_owned()
        } else {
            "ApiKey realm=\"a2aflow\"".to_owned()
        }
    }
}

/// The token of an `Authorization: Bearer <token>` value (the scheme is case-insensitive).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// Equality whose time depends on the lengths only, not on where the bytes differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= x ^ y;
    }
    diff == 0
}

fn api_key_header(caller: &str, header: &str) -> Result<HeaderName, Failure> {
    let name = HeaderName::from_bytes(header.as_bytes()).map_err(|_| {
        invalid(format!(
            "caller '{caller}': '{header}' is not a header name"
        ))
    })?;
    if name == header::AUTHORIZATION {
        return Err(invalid(format!(
            "caller '{caller}': an API key cannot use the Authorization header; give the \
             token as `bearer` instead"
        )));
    }
    Ok(name)
}

/// One configured value: a literal, `env:NAME` (looked up in `env`), or `enc:…` (decrypted).
fn resolve(
    raw: &str,
    env: &Environment,
    key: Option<&CredentialKey>,
    caller: &str,
) -> Result<Secret, Failure> {
    let value = match raw.strip_prefix(ENV_PREFIX) {
        Some(var) => env.get(var).ok_or_else(|| {
            Failure::new(
                ErrorCode::ConfigMissingEnv,
                format!("caller '{caller}': the environment variable {var} is not set"),
            )
            .with_detail("variable", var)
        })?,
        None => raw,
    };
    decrypt_with(value, key)
}

fn read_bounded(path: &Path) -> Result<String, Failure> {
    let cannot = |e: std::io::Error| invalid(format!("cannot be read: {}", e.kind()));
    let len = std::fs::metadata(path).map_err(cannot)?.len();
    if len > MAX_CALLERS_FILE {
        return Err(invalid(format!(
            "it is {len} bytes, more than the {MAX_CALLERS_FILE} bytes read"
        )));
    }
    std::fs::read_to_string(path).map_err(cannot)
}

fn invalid(message: impl Into<String>) -> Failure {
    Failure::new(ErrorCode::ConfigInvalidCredentials, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn callers() -> Callers {
        Callers::new()
            .bearer("alice", Secret::new("a-token"))
            .and_then(|c| c.api_key("ci", "X-API-Key", Secret::new("ci-key")))
            .unwrap_or_else(|f| panic!("{f}"))
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, HeaderValue::from_static(v));
        }
        map
    }

    #[test]
    fn each_credential_names_its_caller_and_anything_else_is_nobody() {
        let c = callers();
        let who = |h| c.identify(&h).map(|w| w.0.map(|n| n.to_string()));
        assert_eq!(
            who(headers(&[("authorization", "Bearer a-token")])),
            Some(Some("alice".into()))
        );
        assert_eq!(
            who(headers(&[("x-api-key", "ci-key")])),
            Some(Some("ci".into()))
        );
        assert_eq!(who(headers(&[("authorization", "Bearer a-toke")])), None);
        assert_eq!(who(headers(&[("authorization", "Bearer ci-key")])), None);
        assert_eq!(who(headers(&[])), None);
        assert_eq!(Callers::new().identify(&headers(&[])), Some(Who(None)));
    }

    #[test]
    fn the_file_resolves_env_values_and_never_echoes_a_secret() {
        let env = Environment::from_pairs([("ALICE", "from-env")]);
        let json = r#"{"callers": [{"name": "alice", "bearer": "env:ALICE"}]}"#;
        let c = Callers::from_str(json, false, &env).unwrap_or_else(|f| panic!("{f}"));
        assert_eq!(
            c.identify(&headers(&[("authorization", "Bearer from-env")]))
                .and_then(|w| w.0)
                .as_deref(),
            Some("alice")
        );
        let toml = "[[callers]]\nname = \"a\"\nbearer = \"s3cret\"\n[[callers]]\nname = \"b\"\nbearer = \"s3cret\"\n";
        let err = Callers::from_str(toml, true, &env)
            .err()
            .unwrap_or_else(|| panic!("refused"));
        assert_eq!(err.code.to_string(), "config.invalid_credentials");
        assert!(!err.message.contains("s3cret"), "{}", err.message);
        let missing = r#"{"callers": [{"name": "x", "bearer": "env:NOPE"}]}"#;
        let err = Callers::from_str(missing, false, &env)
            .err()
            .map(|f| f.code.to_string());
        assert_eq!(err.as_deref(), Some("config.missing_env"));
    }

    #[test]
    fn lengths_and_bytes_both_count() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert!(!constant_time_eq(b"", b"a"));
    }
}
