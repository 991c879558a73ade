//! Where credential values come from: the process environment, optionally completed by a `.env`
//! file the host names explicitly.
//!
//! The engine never reads a `.env` implicitly and never mutates the process environment (Rust
//! 2024 makes `set_var` unsafe, and this crate forbids `unsafe`): an [`Environment`] is a snapshot
//! the host builds once and hands to [`crate::auth::Credentials`]. Secrets never come from the
//! command line.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use a2aflow_model::{ErrorCode, Failure};

/// A snapshot of name → value pairs used to resolve `env:NAME` credential references and the
/// `A2AT_CRED_KEY` encryption key.
///
/// `Debug` prints only how many variables it holds, never a value.
#[derive(Clone, Default)]
pub struct Environment {
    vars: BTreeMap<String, String>,
}

impl Environment {
    /// The current process environment (variables whose name or value is not UTF-8 are skipped).
    pub fn from_process() -> Self {
        let vars = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect();
        Environment { vars }
    }

    /// An environment holding exactly these pairs (tests, hosts with their own secret store).
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Environment {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// Adds the variables of a `.env` file that are not already set (the process environment
    /// wins, as in the reference engines). The file must exist: a host that names a file and has
    /// none gets `config.invalid` rather than silently running without credentials.
    pub fn with_env_file(mut self, path: impl AsRef<Path>) -> Result<Self, Failure> {
        for (key, value) in read_env_file(path)? {
            self.vars.entry(key).or_insert(value);
        }
        Ok(self)
    }

    /// Sets one variable in this snapshot only, replacing any value (the process environment is
    /// untouched). Use it to give one client an explicit `A2AT_CRED_KEY` that wins over the
    /// process-wide one without changing it for anyone else.
    pub fn with_var(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.vars.insert(name.into(), value.into());
        self
    }

    /// The value of `name`, when set.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// Number of variables held.
    pub fn len(&self) -> usize {
        self.vars.len()
    }

    /// True when no variable is held.
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }
}

impl fmt::Debug for Environment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Environment({} variables)", self.vars.len())
    }
}

/// Reads a `.env` file: see [`parse_env_file`]. A missing or unreadable file is `config.invalid`.
pub fn read_env_file(path: impl AsRef<Path>) -> Result<Vec<(String, String)>, Failure> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|e| {
        Failure::new(
            ErrorCode::ConfigInvalid,
            format!("cannot read env file {}: {}", path.display(), e.kind()),
        )
        .with_detail("path", path.display().to_string())
    })?;
    Ok(parse_env_file(&text))
}

/// Parses `.env` text: UTF-8 lines; blank lines and `#` comments are skipped; each line splits on
/// the first `=`; key and value are trimmed; one pair of surrounding double or single quotes is
/// stripped from the value. Lines whose key is not a valid variable name (`[A-Za-z_][A-Za-z0-9_]*`,
/// e.g. `BAD-KEY`, `1NUMBERED`, `SPACED KEY`) and lines without `=` are skipped. A later line for
/// the same key replaces an earlier one.
pub fn parse_env_file(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if !is_valid_name(key) {
            continue;
        }
        let value = strip_quotes(value.trim());
        out.retain(|(k, _)| k != key);
        out.push((key.to_owned(), value.to_owned()));
    }
    out
}

/// True for `[A-Za-z_][A-Za-z0-9_]*`.
pub fn is_valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn strip_quotes(value: &str) -> &str {
    for q in ['"', '\''] {
        if value.len() >= 2 && value.starts_with(q) && value.ends_with(q) {
            return &value[1..value.len() - 1];
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_reference_example_and_skips_invalid_names() {
        let text = "SDK_REVIEW_GOOD_KEY=value\nA2AT_CRED_KEY=deadbeef\nBAD-KEY=value\n1NUMBERED=value\n\
                    SPACED KEY=value\nQUOTED='single'\n# comment\nQUOTED_VALUE=\"with spaces\"\n\n\
                    NOEQUALS\nEQ=a=b\n";
        let pairs = parse_env_file(text);
        let keys: Vec<&str> = pairs.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "SDK_REVIEW_GOOD_KEY",
                "A2AT_CRED_KEY",
                "QUOTED",
                "QUOTED_VALUE",
                "EQ"
            ]
        );
        let get = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("QUOTED"), Some("single"));
        assert_eq!(get("QUOTED_VALUE"), Some("with spaces"));
        assert_eq!(get("EQ"), Some("a=b"));
    }

    #[test]
    fn debug_never_prints_values() {
        let env = Environment::from_pairs([("TOKEN", "very-secret-env-value")]);
        let shown = format!("{env:?}");
        assert_eq!(shown, "Environment(1 variables)");
    }
}
