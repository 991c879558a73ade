//! The URL forms of a gRPC interface: `host:port` (the form the official SDKs publish), or
//! `http://host:port` / `https://host:port`, resolved to the `http(s)://host:port` the channel
//! connects to.

use http::Uri;

use crate::error::TransportError;

/// Longest part of a bad URL an error repeats (in characters).
const SHOWN_CHARS: usize = 128;

/// Whether a URL without a scheme is reached in the clear or over TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Schemeless {
    /// Over TLS (`https`): the default, when nobody said plaintext is fine.
    Tls,
    /// In the clear (`http`): only when the user configured the agent at a plain `http` URL.
    Plaintext,
}

impl Schemeless {
    /// Plaintext when the URL the user configured for the agent is plain `http`, TLS otherwise
    /// (an `https` URL, or none at all).
    pub fn for_configured_url(configured: Option<&str>) -> Self {
        match configured.and_then(|u| u.trim().parse::<Uri>().ok()) {
            Some(u) if u.scheme_str() == Some("http") => Schemeless::Plaintext,
            _ => Schemeless::Tls,
        }
    }

    fn scheme(self) -> &'static str {
        match self {
            Schemeless::Tls => "https",
            Schemeless::Plaintext => "http",
        }
    }
}

/// The `http(s)://host:port` that the gRPC interface URL `url` names. A URL with a scheme keeps
/// it (`http` or `https` only); one without takes the scheme `schemeless` says. A path other
/// than `/`, a query, user information or another scheme is the card's fault
/// (`a2a.invalid_response`).
pub fn target_url(url: &str, schemeless: Schemeless) -> Result<String, TransportError> {
    let trimmed = url.trim();
    let full = if trimmed.contains("://") {
        trimmed.to_owned()
    } else {
        format!("{}://{trimmed}", schemeless.scheme())
    };
    let uri: Uri = full
        .parse()
        .map_err(|_| not_grpc_url(url, "it does not parse"))?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) {
        return Err(not_grpc_url(url, "its scheme is not http or https"));
    }
    let Some(authority) = uri.authority() else {
        return Err(not_grpc_url(url, "it names no host"));
    };
    if authority.host().is_empty() || authority.as_str().contains('@') {
        return Err(not_grpc_url(url, "it names no plain host"));
    }
    let after_host = authority
        .as_str()
        .rsplit_once(']')
        .map_or(authority.as_str(), |(_, rest)| rest);
    if after_host.contains(':') && authority.port_u16().is_none() {
        return Err(not_grpc_url(url, "its port is not a number"));
    }
    if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
        return Err(not_grpc_url(url, "a gRPC interface has no path or query"));
    }
    Ok(format!(
        "{}://{authority}",
        uri.scheme_str().unwrap_or("https")
    ))
}

fn not_grpc_url(url: &str, why: &str) -> TransportError {
    let shown: String = url
        .chars()
        .take(SHOWN_CHARS)
        .flat_map(char::escape_debug)
        .collect();
    TransportError::InvalidResponse(format!(
        "the card's GRPC interface URL \"{shown}\" is not host:port or http(s)://host:port: {why}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_url_form_resolves_to_an_http_origin() {
        let cases: &[(&str, Schemeless, &str)] = &[
            ("h:50051", Schemeless::Plaintext, "http://h:50051"),
            ("h:50051", Schemeless::Tls, "https://h:50051"),
            (" 127.0.0.1:9 ", Schemeless::Plaintext, "http://127.0.0.1:9"),
            ("[::1]:50051", Schemeless::Tls, "https://[::1]:50051"),
            ("http://h:50051", Schemeless::Tls, "http://h:50051"),
            ("http://h:50051/", Schemeless::Tls, "http://h:50051"),
            ("https://h:443", Schemeless::Plaintext, "https://h:443"),
            (
                "https://agent.example",
                Schemeless::Plaintext,
                "https://agent.example",
            ),
            ("agent.example", Schemeless::Tls, "https://agent.example"),
        ];
        for (url, schemeless, want) in cases {
            assert_eq!(target_url(url, *schemeless).unwrap(), *want, "{url}");
        }
    }

    #[test]
    fn other_forms_are_the_cards_fault() {
        for url in [
            "",
            "grpc://h:1",
            "dns:///h:1",
            "unix:/tmp/s",
            "http://h:1/a2a",
            "h:1/path",
            "http://h:1?x=1",
            "http://user@h:1",
            "not a url",
            "h:notaport",
        ] {
            let e = target_url(url, Schemeless::Tls).unwrap_err();
            assert_eq!(e.code_str(), "a2a.invalid_response", "{url}");
        }
    }

    #[test]
    fn schemeless_is_plaintext_only_for_a_configured_http_url() {
        assert_eq!(
            Schemeless::for_configured_url(Some("http://127.0.0.1:8080")),
            Schemeless::Plaintext
        );
        for configured in [Some("https://a.example"), None, Some("not a url")] {
            assert_eq!(Schemeless::for_configured_url(configured), Schemeless::Tls);
        }
    }
}
