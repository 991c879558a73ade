//! [`Secret`]: a string that never prints itself.

use std::fmt;

/// A credential value (token, password, API key, client secret, …).
///
/// `Debug` and `Display` print `***`, so a secret inside any derived `Debug` output, log line or
/// error message stays hidden. The value is reachable only through [`Secret::expose`], which keeps
/// every place that puts a secret on the wire easy to find.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value itself. Only the code that builds a request header or body should call this.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// True when the value is empty or whitespace.
    pub fn is_blank(&self) -> bool {
        self.0.trim().is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret(value.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_hide_the_value() {
        let s = Secret::new("hunter2-distinctive");
        assert_eq!(format!("{s:?}"), "Secret(***)");
        assert_eq!(format!("{s}"), "***");
        assert_eq!(format!("{:?}", Some(&s)), "Some(Secret(***))");
        assert_eq!(s.expose(), "hunter2-distinctive");
        assert!(!s.is_blank());
        assert!(Secret::from("  ").is_blank());
    }
}
