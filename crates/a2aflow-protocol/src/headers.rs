//! The headers every request carries, the per-call options that add to them, and the seam
//! through which credentials (the `auth` module, or a host's own provider) add theirs.

use std::time::Duration;

use a2aflow_model::{ErrorCode, Failure};
use async_trait::async_trait;
use http::{HeaderMap, HeaderName, HeaderValue, Uri};

use crate::error::TransportError;
use crate::gate::SendGate;

/// `A2A-Version`, sent on every request, the card fetch included.
pub const A2A_VERSION: &str = "A2A-Version";
/// `A2A-Extensions`: the comma-separated URIs a call activates.
pub const A2A_EXTENSIONS: &str = "A2A-Extensions";
/// The protocol version this transport speaks.
pub const PROTOCOL_VERSION: &str = "1.0";

/// [`A2A_VERSION`] as a header name, made at compile time (a `&str` key with capitals is parsed,
/// lower-cased and copied into a new name on every insert).
const VERSION_NAME: HeaderName = HeaderName::from_static("a2a-version");
/// [`A2A_EXTENSIONS`] as a header name.
const EXTENSIONS_NAME: HeaderName = HeaderName::from_static("a2a-extensions");

/// Headers the transport owns; a [`RequestHeaders`] hook may not set them to other values.
const RESERVED: &[&str] = &[
    "a2a-version",
    "a2a-extensions",
    "content-type",
    "content-length",
    "accept",
    "host",
    "transfer-encoding",
    "connection",
];

/// Adds headers (credentials, tracing, …) to each request, chosen by its URL.
///
/// The auth module's credential profiles and a host's own provider implement this. It is called
/// for every request, the agent-card fetch included; returning headers for a URL they were not
/// configured for is the implementer's bug (`auth.host_mismatch` is the code to fail with).
#[async_trait]
pub trait RequestHeaders: Send + Sync {
    /// The extra headers for a request to `url`. A failure aborts the request with that failure.
    async fn headers_for(&self, url: &Uri) -> Result<HeaderMap, Failure>;

    /// Called when the agent answered 401 before doing anything. Return `true` when the
    /// credentials were refreshed (an OAuth2 token, say) and the request should be sent once
    /// more; the default never retries.
    async fn on_unauthorized(&self, url: &Uri) -> Result<bool, Failure> {
        let _ = url;
        Ok(false)
    }
}

/// Per-call options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallOptions {
    /// Extension URIs to activate, sent as `A2A-Extensions`.
    pub extensions: Vec<String>,
    /// Overrides the request timeout of the client's limits for this call. For a stream it
    /// bounds the whole stream.
    pub timeout: Option<Duration>,
    /// An absolute deadline for this call (the run's budget); the earlier of this and the
    /// timeout applies.
    pub deadline: Option<tokio::time::Instant>,
    /// Asked at the last moment before the request is written; a closed gate withholds it
    /// ([`crate::TransportError::Withheld`]). See [`SendGate`].
    pub send_gate: Option<SendGate>,
    /// The caller reads no task history: a transport may leave `Task::history` out of the
    /// answers of this call (the request and the wire are the same; only what the answer is
    /// converted into differs). Off by default: the answer is the agent's task, whole.
    pub skip_history: bool,
}

impl CallOptions {
    /// Options that activate `extensions`.
    pub fn with_extensions<I, S>(mut self, extensions: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.extensions = extensions.into_iter().map(Into::into).collect();
        self
    }

    /// Options with a timeout override.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Options with an absolute deadline.
    pub fn with_deadline(mut self, deadline: tokio::time::Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Options whose request is withheld when `gate` is closed at the last moment.
    pub fn with_send_gate(mut self, gate: SendGate) -> Self {
        self.send_gate = Some(gate);
        self
    }

    /// Options whose answers may come without the task's history (see
    /// [`skip_history`](Self::skip_history)).
    pub fn without_history(mut self) -> Self {
        self.skip_history = true;
        self
    }

    /// [`TransportError::Withheld`] when this call's gate withheld its request (whatever the
    /// connection made of the aborted request), else `e`.
    pub(crate) fn withheld_or(&self, e: TransportError) -> TransportError {
        match &self.send_gate {
            Some(g) if g.withheld() => TransportError::Withheld,
            _ => e,
        }
    }
}

/// Sets the protocol headers on `headers`: `A2A-Version` (unless `send_version` is off, as only
/// conformance tests set it), `A2A-Extensions` when any.
pub(crate) fn protocol_headers(
    headers: &mut HeaderMap,
    extensions: &[String],
    send_version: bool,
) -> Result<(), Failure> {
    if send_version {
        headers.insert(VERSION_NAME, HeaderValue::from_static(PROTOCOL_VERSION));
    }
    let mut exts = extensions
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty());
    if let Some(first) = exts.next() {
        let mut joined = first.to_owned();
        for uri in exts {
            joined.push_str(", ");
            joined.push_str(uri);
        }
        // The text becomes the value's bytes (no copy).
        let v = HeaderValue::try_from(joined).map_err(|_| {
            Failure::new(
                ErrorCode::ConfigInvalid,
                "an extension URI is not a valid header value",
            )
        })?;
        headers.insert(EXTENSIONS_NAME, v);
    }
    Ok(())
}

/// Merges hook headers into the request headers. A hook may add any header except the reserved
/// protocol ones; setting one of those to a different value is `auth.conflicting_headers`.
pub(crate) fn merge_hook_headers(target: &mut HeaderMap, extra: HeaderMap) -> Result<(), Failure> {
    let mut last: Option<HeaderName> = None;
    for (name, value) in extra {
        let name = match name {
            Some(n) => {
                last = Some(n.clone());
                n
            }
            None => match &last {
                Some(n) => n.clone(),
                None => continue,
            },
        };
        if RESERVED.contains(&name.as_str()) {
            if target.get(&name) == Some(&value) {
                continue;
            }
            return Err(Failure::new(
                ErrorCode::AuthConflictingHeaders,
                format!("a credential source tried to set the protocol header `{name}`"),
            )
            .with_detail("header", name.as_str()));
        }
        target.append(name, value);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_headers_always_carry_the_version() {
        let mut h = HeaderMap::new();
        protocol_headers(&mut h, &[], true).unwrap();
        assert_eq!(h["a2a-version"], "1.0");
        assert!(h.get("a2a-extensions").is_none());
        protocol_headers(
            &mut h,
            &["https://a/ext/v1".into(), " ".into(), "urn:b".into()],
            true,
        )
        .unwrap();
        assert_eq!(h["a2a-extensions"], "https://a/ext/v1, urn:b");
        assert!(protocol_headers(&mut h, &["bad\nuri".into()], true).is_err());
        let mut without = HeaderMap::new();
        protocol_headers(&mut without, &["urn:b".into()], false).unwrap();
        assert!(without.get("a2a-version").is_none());
        assert_eq!(without["a2a-extensions"], "urn:b");
    }

    #[test]
    fn hooks_add_headers_but_cannot_override_protocol_ones() {
        let mut target = HeaderMap::new();
        protocol_headers(&mut target, &[], true).unwrap();
        let mut extra = HeaderMap::new();
        extra.insert("authorization", HeaderValue::from_static("Bearer t"));
        extra.insert("a2a-version", HeaderValue::from_static("1.0"));
        merge_hook_headers(&mut target, extra).unwrap();
        assert_eq!(target["authorization"], "Bearer t");
        let mut extra = HeaderMap::new();
        extra.insert("a2a-version", HeaderValue::from_static("0.3"));
        let err = merge_hook_headers(&mut target, extra).unwrap_err();
        assert_eq!(err.code, "auth.conflicting_headers");
    }
}
