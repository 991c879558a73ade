//! The opt-in wire log: every request and response of the transport, with headers and bodies, on
//! the `tracing` target [`WIRE_TARGET`] at DEBUG level — with secrets replaced by [`REDACTED`],
//! always (there is no switch to show them).
//!
//! Redacted, whatever the configuration:
//! - headers `Authorization`, `Proxy-Authorization`, `Cookie`, `Set-Cookie`, any header whose name
//!   (lower-cased, `-`/`_` removed) contains `authorization`, `token`, `secret`, `apikey`,
//!   `cookie`, `password`, `passwd`, `pwd` or `accesssession`, every header whose value is marked
//!   sensitive ([`http::HeaderValue::set_sensitive`] — the auth module marks everything it sets),
//!   and the header names configured in the [`RedactionPolicy`] (API-key headers, custom auth
//!   headers), compared in the same normalised form;
//! - JSON fields, at any depth, whose normalised key is one of the default secret names
//!   (`password`, `token`, `access_token`, `client_secret`, `api_key`, `access_session`, …) or a
//!   configured one: the whole value (also an object or array) becomes `"***"`;
//! - in bodies that are not valid JSON: `"key": value` pairs with a secret key (also unterminated),
//!   `Bearer …`/`Basic …` credentials, and secret `key=value` form fields;
//! - query parameters with a secret name and user-info in URLs.
//!
//! Names containing `://` (A2A-T extension URIs such as `…/Authorization-T/v1`) are business
//! content and are never treated as secrets.

use std::collections::BTreeSet;

use http::{HeaderMap, Method, StatusCode};
use serde_json::{Map, Value};

/// The `tracing` target of the wire log.
pub const WIRE_TARGET: &str = "a2aflow::wire";

/// What a secret is replaced with.
pub const REDACTED: &str = "***";

/// Default cap on the logged characters of one body.
pub const DEFAULT_MAX_BODY_CHARS: usize = 100_000;

const ALWAYS_HEADERS: &[&str] = &["authorization", "proxyauthorization", "cookie", "setcookie"];
const HEADER_FRAGMENTS: &[&str] = &[
    "authorization",
    "token",
    "secret",
    "apikey",
    "cookie",
    "password",
    "passwd",
    "pwd",
    "accesssession",
];
const DEFAULT_JSON_FIELDS: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "secret",
    "clientsecret",
    "token",
    "accesstoken",
    "refreshtoken",
    "idtoken",
    "apikey",
    "accesssession",
    "authorization",
    "proxyauthorization",
    "cookie",
    "setcookie",
];

/// Lower-case, without `-` and `_`: `X-Api_Key` and `x_api_key` are the same name.
fn normalise(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

/// Which header names and JSON fields are secret, beyond the built-in ones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RedactionPolicy {
    headers: BTreeSet<String>,
    fields: BTreeSet<String>,
}

impl RedactionPolicy {
    /// The built-in rules only.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also redacts header `name` (an API-key header, a custom auth header).
    pub fn with_header(mut self, name: impl AsRef<str>) -> Self {
        self.headers.insert(normalise(name.as_ref()));
        self
    }

    /// Also redacts these header names.
    pub fn with_headers<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.headers
            .extend(names.into_iter().map(|n| normalise(n.as_ref())));
        self
    }

    /// Also redacts JSON field `name` at any depth.
    pub fn with_json_field(mut self, name: impl AsRef<str>) -> Self {
        self.fields.insert(normalise(name.as_ref()));
        self
    }

    /// Also redacts these JSON fields.
    pub fn with_json_fields<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.fields
            .extend(names.into_iter().map(|n| normalise(n.as_ref())));
        self
    }

    /// True when a header of this name is logged as [`REDACTED`].
    pub fn is_sensitive_header(&self, name: &str) -> bool {
        if name.contains("://") {
            return false;
        }
        let n = normalise(name);
        ALWAYS_HEADERS.contains(&n.as_str())
            || HEADER_FRAGMENTS.iter().any(|f| n.contains(f))
            || self.headers.contains(&n)
    }

    /// True when a JSON field (or form/query parameter) of this name is logged as [`REDACTED`].
    pub fn is_sensitive_field(&self, name: &str) -> bool {
        if name.contains("://") {
            return false;
        }
        let n = normalise(name);
        DEFAULT_JSON_FIELDS.contains(&n.as_str()) || self.fields.contains(&n)
    }
}

/// The headers as `(name, value)` pairs sorted by name, secrets replaced by [`REDACTED`].
/// Non-UTF-8 values are shown as `<N bytes>`.
pub fn redact_headers(headers: &HeaderMap, policy: &RedactionPolicy) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = headers
        .iter()
        .map(|(name, value)| {
            let shown = if value.is_sensitive() || policy.is_sensitive_header(name.as_str()) {
                REDACTED.to_owned()
            } else {
                match value.to_str() {
                    Ok(s) => redact_credentials_in_text(s),
                    Err(_) => format!("<{} bytes>", value.len()),
                }
            };
            (name.as_str().to_owned(), shown)
        })
        .collect();
    out.sort();
    out
}

/// A copy of `value` whose secret fields, at any depth, are `"***"`. String values are scrubbed
/// too (embedded `"secret": …` pairs, `Bearer …` credentials), since error messages often quote
/// request fragments.
pub fn redact_json(value: &Value, policy: &RedactionPolicy) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if policy.is_sensitive_field(k) {
                        Value::String(REDACTED.to_owned())
                    } else {
                        redact_json(v, policy)
                    };
                    (k.clone(), v)
                })
                .collect::<Map<String, Value>>(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| redact_json(v, policy)).collect()),
        Value::String(s) if !s.contains('"') => Value::String(redact_credentials_in_text(s)),
        Value::String(s) => Value::String(redact_credentials_in_text(&redact_json_like_text(
            s, policy,
        ))),
        other => other.clone(),
    }
}

/// The URL with user-info and secret query parameters replaced.
pub fn redact_url(url: &str, policy: &RedactionPolicy) -> String {
    let (base, fragment) = match url.split_once('#') {
        Some((b, f)) => (b, Some(f)),
        None => (url, None),
    };
    let (path, query) = match base.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (base, None),
    };
    let mut out = match path.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, tail) = match rest.find('/') {
                Some(i) => rest.split_at(i),
                None => (rest, ""),
            };
            match authority.rsplit_once('@') {
                Some((_, host)) => format!("{scheme}://{REDACTED}@{host}{tail}"),
                None => path.to_owned(),
            }
        }
        None => path.to_owned(),
    };
    if let Some(q) = query {
        out.push('?');
        out.push_str(&redact_form(q, policy));
    }
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

/// `a=b&c=d` with secret parameters' values replaced (names are compared after
/// percent-decoding nothing: form names of secrets are plain ASCII in practice).
pub fn redact_form(form: &str, policy: &RedactionPolicy) -> String {
    form.split('&')
        .map(|pair| match pair.split_once('=') {
            Some((k, _)) if policy.is_sensitive_field(&k.replace('+', " ")) => {
                format!("{k}={REDACTED}")
            }
            _ => pair.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// A body for the log: pretty redacted JSON when it parses, redacted form fields for a form
/// body, otherwise text with secret-looking pairs and credentials scrubbed. Capped at
/// `max_chars` characters.
pub fn redact_body(
    body: &[u8],
    content_type: Option<&str>,
    policy: &RedactionPolicy,
    max_chars: usize,
) -> String {
    if body.is_empty() {
        return String::new();
    }
    let text = if let Ok(json) = serde_json::from_slice::<Value>(body) {
        serde_json::to_string_pretty(&redact_json(&json, policy))
            .unwrap_or_else(|_| "<unprintable JSON>".to_owned())
    } else {
        let raw = String::from_utf8_lossy(body);
        let is_form = content_type.is_some_and(|ct| {
            ct.to_ascii_lowercase()
                .starts_with("application/x-www-form-urlencoded")
        });
        if is_form {
            redact_form(raw.trim(), policy)
        } else {
            redact_credentials_in_text(&redact_json_like_text(&raw, policy))
        }
    };
    truncate(text, max_chars)
}

fn truncate(text: String, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text,
        Some((cut, _)) => format!("{}…[truncated, {} bytes total]", &text[..cut], text.len()),
    }
}

/// Replaces the word after `Bearer ` / `Basic ` (any case) with [`REDACTED`].
pub fn redact_credentials_in_text(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    if !lower.contains("bearer ") && !lower.contains("basic ") {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let bytes = text.as_bytes();
    while i < text.len() {
        let hit = ["bearer ", "basic "].iter().find(|p| {
            lower[i..].starts_with(*p) && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric())
        });
        if let Some(p) = hit {
            let start = i + p.len();
            let mut end = start;
            while end < text.len() && is_token_byte(bytes[end]) {
                end += 1;
            }
            out.push_str(&text[i..start]);
            if end > start {
                out.push_str(REDACTED);
            }
            i = end;
        } else {
            let ch_len = text[i..].chars().next().map_or(1, char::len_utf8);
            out.push_str(&text[i..i + ch_len]);
            i += ch_len;
        }
    }
    out
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}

/// Scrubs `"key": value` pairs with a secret key in text that is not valid JSON (truncated,
/// malformed or partial), in one linear pass. String values (also unterminated ones), scalars and
/// whole nested objects/arrays are replaced.
pub fn redact_json_like_text(text: &str, policy: &RedactionPolicy) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        if b[i] != b'"' {
            i += 1;
            continue;
        }
        let after = string_end(b, i);
        let mut j = after;
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        if j < b.len() && b[j] == b':' && policy.is_sensitive_field(&decode_string(b, i, after)) {
            j += 1;
            while j < b.len() && b[j].is_ascii_whitespace() {
                j += 1;
            }
            let end = skip_value(b, j);
            out.push_str(&text[copied..j]);
            out.push('"');
            out.push_str(REDACTED);
            out.push('"');
            copied = end;
            i = end;
        } else {
            i = after;
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// From an opening quote at `start`: the index after the closing quote (or the end of input when
/// unterminated).
fn string_end(b: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'"' => return i + 1,
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    b.len()
}

/// The decoded content of the string token `b[start..end]`.
fn decode_string(b: &[u8], start: usize, end: usize) -> String {
    let inner_end = if end > start + 1 && b.get(end - 1) == Some(&b'"') && end - 1 > start {
        end - 1
    } else {
        end
    };
    decode_escapes(&b[(start + 1).min(inner_end)..inner_end])
}

fn decode_escapes(raw: &[u8]) -> String {
    let s = String::from_utf8_lossy(raw);
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                if let Some(ch) = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    out.push(ch);
                }
            }
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// The index after the JSON value starting at `start` (best effort on malformed input).
fn skip_value(b: &[u8], start: usize) -> usize {
    if start >= b.len() {
        return start;
    }
    match b[start] {
        b'"' => string_end(b, start),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = start;
            while i < b.len() {
                match b[i] {
                    b'"' => {
                        i = string_end(b, i);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            return i + 1;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            b.len()
        }
        _ => {
            let mut i = start;
            while i < b.len() && !matches!(b[i], b',' | b'}' | b']' | b'\n' | b'\r') {
                i += 1;
            }
            i
        }
    }
}

fn render_headers(headers: &HeaderMap, policy: &RedactionPolicy) -> String {
    let pairs = redact_headers(headers, policy);
    if pairs.is_empty() {
        return "(none)".to_owned();
    }
    pairs
        .iter()
        .map(|(n, v)| format!("{n}: {v}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The opt-in wire logger a transport holds. Disabled by default; when enabled it logs only if a
/// subscriber listens to [`WIRE_TARGET`] at DEBUG.
#[derive(Debug, Clone)]
pub struct WireLog {
    enabled: bool,
    policy: RedactionPolicy,
    max_body_chars: usize,
}

impl Default for WireLog {
    fn default() -> Self {
        Self::disabled()
    }
}

impl WireLog {
    /// Logs nothing.
    pub fn disabled() -> Self {
        WireLog {
            enabled: false,
            policy: RedactionPolicy::new(),
            max_body_chars: DEFAULT_MAX_BODY_CHARS,
        }
    }

    /// Logs requests and responses, redacted by the built-in rules and `policy`.
    pub fn enabled(policy: RedactionPolicy) -> Self {
        WireLog {
            enabled: true,
            policy,
            max_body_chars: DEFAULT_MAX_BODY_CHARS,
        }
    }

    /// Caps the logged characters of one body.
    pub fn with_max_body_chars(mut self, max: usize) -> Self {
        self.max_body_chars = max;
        self
    }

    /// The redaction policy.
    pub fn policy(&self) -> &RedactionPolicy {
        &self.policy
    }

    /// True when a call would emit anything (enabled and a DEBUG subscriber on the target): check
    /// it before collecting a body just for the log.
    pub fn is_active(&self) -> bool {
        self.enabled && tracing::enabled!(target: "a2aflow::wire", tracing::Level::DEBUG)
    }

    /// Logs one outgoing request (after all headers, auth included, were applied).
    pub fn log_request(
        &self,
        agent: &str,
        method: &Method,
        url: &str,
        headers: &HeaderMap,
        body: &[u8],
    ) {
        if !self.is_active() {
            return;
        }
        let ct = content_type(headers);
        tracing::debug!(
            target: "a2aflow::wire",
            agent,
            direction = "request",
            method = %method,
            url = %redact_url(url, &self.policy),
            headers = %render_headers(headers, &self.policy),
            body = %redact_body(body, ct, &self.policy, self.max_body_chars),
            ">>> request"
        );
    }

    /// Logs one response (status, headers, the whole body when it was read).
    pub fn log_response(
        &self,
        agent: &str,
        url: &str,
        status: StatusCode,
        headers: &HeaderMap,
        body: &[u8],
    ) {
        if !self.is_active() {
            return;
        }
        let ct = content_type(headers);
        tracing::debug!(
            target: "a2aflow::wire",
            agent,
            direction = "response",
            status = status.as_u16(),
            url = %redact_url(url, &self.policy),
            headers = %render_headers(headers, &self.policy),
            body = %redact_body(body, ct, &self.policy, self.max_body_chars),
            "<<< response"
        );
    }

    /// Logs one reassembled SSE event of a stream.
    pub fn log_sse_event(&self, agent: &str, url: &str, event: Option<&str>, data: &str) {
        if !self.is_active() {
            return;
        }
        tracing::debug!(
            target: "a2aflow::wire",
            agent,
            direction = "sse",
            url = %redact_url(url, &self.policy),
            event = event.unwrap_or("message"),
            body = %redact_body(data.as_bytes(), None, &self.policy, self.max_body_chars),
            "<<< sse event"
        );
    }
}

fn content_type(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use serde_json::json;

    #[test]
    fn every_spelling_of_a_sensitive_header_is_redacted() {
        let p = RedactionPolicy::new();
        for name in [
            "Authorization",
            "X-Auth-Token",
            "x_auth_token",
            "client_secret",
            "client-secret",
            "api_key",
            "api-key",
            "X-API-KEY",
            "ApiKey",
            "x_api_key",
            "access_session",
            "accessSession",
            "Access-Session",
            "pwd",
            "passwd",
            "Password",
            "Cookie",
            "x_cookie",
            "Set-Cookie",
            "Proxy-Authorization",
        ] {
            assert!(p.is_sensitive_header(name), "{name}");
        }
        for name in [
            "Content-Type",
            "A2A-Extensions",
            "Accept",
            "X-Request-Id",
            "https://gateway.example/token",
        ] {
            assert!(!p.is_sensitive_header(name), "{name}");
        }
        let p = p.with_header("X-Corp-Cred");
        assert!(p.is_sensitive_header("x_corp_cred"));
    }

    #[test]
    fn headers_marked_sensitive_are_redacted_whatever_their_name() {
        let mut h = HeaderMap::new();
        let mut v = HeaderValue::from_static("gateway-value-123");
        v.set_sensitive(true);
        h.insert("x-gateway", v);
        h.insert("x-request-id", HeaderValue::from_static("request-1"));
        h.insert("x-api_key", HeaderValue::from_static("hidden"));
        let out = redact_headers(&h, &RedactionPolicy::new());
        assert_eq!(
            out,
            vec![
                ("x-api_key".to_owned(), "***".to_owned()),
                ("x-gateway".to_owned(), "***".to_owned()),
                ("x-request-id".to_owned(), "request-1".to_owned()),
            ]
        );
    }

    #[test]
    fn json_fields_are_redacted_at_any_depth_but_extension_uris_are_kept() {
        let uri = "https://projects.tmforum.org/a2aproject/telecommunication/extensions/Authorization-T/v1";
        let doc = json!({
            "api_key": "hidden", "access_session": "hidden",
            "params": {"message": {"metadata": {uri: {"text": "business"}},
                       "parts": [{"accessToken": "hidden", "password": {"nested": "hidden"}}]}},
            "custom": {"deep": [{"myField": "hidden"}]},
            "note": "Authorization: Bearer abc.def"
        });
        let p = RedactionPolicy::new().with_json_field("my_field");
        let out = redact_json(&doc, &p);
        assert_eq!(out["api_key"], "***");
        assert_eq!(out["access_session"], "***");
        assert_eq!(
            out["params"]["message"]["metadata"][uri]["text"],
            "business"
        );
        assert_eq!(out["params"]["message"]["parts"][0]["accessToken"], "***");
        assert_eq!(out["params"]["message"]["parts"][0]["password"], "***");
        assert_eq!(out["custom"]["deep"][0]["myField"], "***");
        assert_eq!(out["note"], "Authorization: Bearer ***");
        let quoted = redact_json(
            &json!({"message": r#"bad request {"password": "hidden"}"#}),
            &p,
        );
        assert_eq!(quoted["message"], r#"bad request {"password": "***"}"#);
        assert!(!out.to_string().contains("hidden"));
    }

    #[test]
    fn malformed_json_text_is_scrubbed_linearly() {
        let p = RedactionPolicy::new();
        let big = "\\\"".repeat(8000);
        let text = format!("{{\"x\":\"{big}\",\"token\":\"hidden\"}}");
        let out = redact_json_like_text(&text, &p);
        assert_eq!(out, text.replace("hidden", "***"));
        // Unterminated, escaped key, nested object value.
        assert_eq!(
            redact_json_like_text(r#"{"a":1,"to\u006ben":"hid"#, &p),
            r#"{"a":1,"to\u006ben":"***""#
        );
        assert_eq!(
            redact_json_like_text(r#"{"password": {"a": "hidden"}, "b": 2"#, &p),
            r#"{"password": "***", "b": 2"#
        );
    }

    #[test]
    fn urls_forms_and_bodies() {
        let p = RedactionPolicy::new();
        assert_eq!(
            redact_url("https://u:pw@h.example/a?access_token=abc&x=1#f", &p),
            "https://***@h.example/a?access_token=***&x=1#f"
        );
        assert_eq!(
            redact_body(
                b"grant_type=client_credentials&client_secret=s3&scope=a+b",
                Some("application/x-www-form-urlencoded"),
                &p,
                1000
            ),
            "grant_type=client_credentials&client_secret=***&scope=a+b"
        );
        let long = redact_body(&[b'a'; 50], Some("text/plain"), &p, 10);
        assert!(
            long.starts_with("aaaaaaaaaa…[truncated, 50 bytes"),
            "{long}"
        );
    }
}
