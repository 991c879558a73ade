//! The page's access token: 256 bits from the operating system's random source, as 64 hex
//! digits, compared in constant time. A request carries it as `?token=` (the URL the server
//! prints), as the cookie the first load sets, or as `Authorization: Bearer` (scripts).

use crate::error::UiError;
use http::HeaderMap;
use http::header::{AUTHORIZATION, COOKIE};
use subtle::ConstantTimeEq;

/// Bytes of randomness in a token.
const TOKEN_BYTES: usize = 32;

/// A server's access token.
#[derive(Clone)]
pub(crate) struct AccessToken {
    hex: String,
    /// The cookie's name: one per port, so two pages on one host do not overwrite each other.
    cookie: String,
}

impl std::fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AccessToken(…)")
    }
}

impl AccessToken {
    /// A fresh token from the OS random source (`ui.token` failure when it cannot be read).
    pub(crate) fn generate(port: u16) -> Result<Self, UiError> {
        let mut bytes = [0u8; TOKEN_BYTES];
        getrandom::fill(&mut bytes).map_err(|e| UiError::Random(e.to_string()))?;
        let hex = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Ok(AccessToken {
            hex,
            cookie: format!("a2aflow_ui_{port}"),
        })
    }

    /// The token text.
    pub(crate) fn as_str(&self) -> &str {
        &self.hex
    }

    /// The `Set-Cookie` value that carries the token after the first load.
    pub(crate) fn set_cookie(&self) -> String {
        format!(
            "{}={}; Path=/; HttpOnly; SameSite=Strict",
            self.cookie, self.hex
        )
    }

    /// Whether `candidate` is the token, in time independent of where they differ.
    fn matches(&self, candidate: &str) -> bool {
        bool::from(self.hex.as_bytes().ct_eq(candidate.as_bytes()))
    }

    /// Whether the query's `token`, the cookie or the bearer header carries the token. Returns
    /// also whether it came in the query (the page then sets the cookie).
    pub(crate) fn check(&self, query: Option<&str>, headers: &HeaderMap) -> Check {
        if query_param(query, "token").is_some_and(|t| self.matches(&t)) {
            return Check::Query;
        }
        let bearer = headers
            .get_all(AUTHORIZATION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .filter_map(|v| v.strip_prefix("Bearer "))
            .any(|t| self.matches(t.trim()));
        let cookie = headers
            .get_all(COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .any(|(name, value)| name == self.cookie && self.matches(value));
        if bearer || cookie {
            Check::Carried
        } else {
            Check::Refused
        }
    }
}

/// How a request stood against the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    /// In the query string (the first load).
    Query,
    /// In the cookie or the bearer header.
    Carried,
    /// Missing or wrong.
    Refused,
}

/// The decoded value of query parameter `name` (its first occurrence).
pub(crate) fn query_param(query: Option<&str>, name: &str) -> Option<String> {
    query?
        .split('&')
        .filter_map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (k == name).then(|| percent_decode(v))
        })
        .next()
}

/// `%XX` and `+` decoding of a query value; an invalid escape is kept as it is.
fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(&text.replace('+', " "))
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn the_token_is_256_random_bits_and_differs_each_time() {
        let (a, b) = (AccessToken::generate(1), AccessToken::generate(1));
        let (a, b) = (a.map_err(|e| e.to_string()), b.map_err(|e| e.to_string()));
        let (a, b) = (
            a.as_ref().map(|t| t.as_str()),
            b.as_ref().map(|t| t.as_str()),
        );
        assert_eq!(a.map(str::len), Ok(64));
        assert_ne!(a, b);
    }

    #[test]
    fn query_cookie_and_bearer_carry_it_and_nothing_else_does() -> Result<(), UiError> {
        let t = AccessToken::generate(8080)?;
        let none = HeaderMap::new();
        let q = format!("x=1&token={}", t.as_str());
        assert_eq!(t.check(Some(&q), &none), Check::Query);
        assert_eq!(t.check(Some("token=00"), &none), Check::Refused);
        assert_eq!(t.check(None, &none), Check::Refused);
        let mut h = HeaderMap::new();
        let cookie = format!("other=1; a2aflow_ui_8080={}", t.as_str());
        h.insert(
            COOKIE,
            HeaderValue::from_str(&cookie).map_err(|e| UiError::Random(e.to_string()))?,
        );
        assert_eq!(t.check(None, &h), Check::Carried);
        let mut h = HeaderMap::new();
        let wrong_port = format!("a2aflow_ui_8081={}", t.as_str());
        h.insert(
            COOKIE,
            HeaderValue::from_str(&wrong_port).map_err(|e| UiError::Random(e.to_string()))?,
        );
        assert_eq!(t.check(None, &h), Check::Refused);
        let mut h = HeaderMap::new();
        let bearer = format!("Bearer {}", t.as_str());
        h.insert(
            AUTHORIZATION,
            HeaderValue::from_str(&bearer).map_err(|e| UiError::Random(e.to_string()))?,
        );
        assert_eq!(t.check(None, &h), Check::Carried);
        Ok(())
    }

    #[test]
    fn query_values_are_percent_decoded() {
        assert_eq!(
            query_param(Some("a=b%20c+d&e"), "a").as_deref(),
            Some("b c d")
        );
        assert_eq!(query_param(Some("a=%zz%"), "a").as_deref(), Some("%zz%"));
        assert_eq!(query_param(Some("e"), "e").as_deref(), Some(""));
        assert_eq!(query_param(Some("e=1"), "f"), None);
    }
}
