//! Percent-encoding of URL components (RFC 3986), the one copy the REST paths and queries and the
//! service clients' queries use.

use std::fmt::Write as _;

/// Percent-encodes everything outside the RFC 3986 unreserved set (`A-Z a-z 0-9 - . _ ~`), so
/// the result is safe as one path segment or one query name or value.
pub fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            // Writing to a String cannot fail.
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreserved_bytes_stay_and_everything_else_is_encoded() {
        assert_eq!(encode_component("aZ09-._~"), "aZ09-._~");
        assert_eq!(encode_component("a b/c?d&e=f"), "a%20b%2Fc%3Fd%26e%3Df");
        assert_eq!(encode_component("é"), "%C3%A9");
    }
}
