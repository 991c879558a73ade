//! The store's URL as a host names it: a `postgres://` or `postgresql://` URL that must not
//! carry a password (it comes from the environment, see [`password_from_env`]).
//!
//! Besides what tokio-postgres reads, the URL (or a `key=value` connection string) may name a
//! CA file as libpq does, `sslrootcert=PATH`: its PEM certificates are trusted for the server's
//! certificate besides the Mozilla roots (`sslrootcert=system`: the Mozilla roots only). The
//! parameter is taken out before tokio-postgres reads the rest ([`split_root_cert`]).

use std::borrow::Cow;
use std::fmt;

/// The environment variables the password is read from, in order.
pub const PASSWORD_VARIABLES: [&str; 2] = ["A2AFLOW_PG_PASSWORD", "PGPASSWORD"];

/// Why a store URL is refused. The messages never repeat the URL (it may hold a password).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlError {
    /// Not a `postgres://` / `postgresql://` URL that tokio-postgres can read.
    #[error("the store URL is not a Postgres URL it can use: {0}")]
    Invalid(String),
    /// The URL holds a password (in its user part or a `password` parameter).
    #[error(
        "the store URL carries a password; remove it from the URL and put it in the \
         A2AFLOW_PG_PASSWORD (or PGPASSWORD) environment variable, so it never appears on a \
         command line or in a configuration file"
    )]
    CarriesPassword,
}

/// A Postgres store URL with no password in it (safe to show).
#[derive(Clone, PartialEq, Eq)]
pub struct PgUrl(String);

impl PgUrl {
    /// Checks `text`: a `postgres://` or `postgresql://` URL that tokio-postgres reads, with no
    /// password.
    pub fn parse(text: &str) -> Result<Self, UrlError> {
        if !(text.starts_with("postgres://") || text.starts_with("postgresql://")) {
            return Err(UrlError::Invalid(
                "it must start with postgres:// or postgresql://".to_owned(),
            ));
        }
        let (rest, _) = split_root_cert(text);
        let config: tokio_postgres::Config = rest
            .parse()
            .map_err(|e: tokio_postgres::Error| UrlError::Invalid(e.to_string()))?;
        if config.get_password().is_some() {
            return Err(UrlError::CarriesPassword);
        }
        Ok(PgUrl(text.to_owned()))
    }

    /// The URL.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The role (user) the URL names, when it names one.
    pub fn role(&self) -> Option<String> {
        split_root_cert(&self.0)
            .0
            .parse::<tokio_postgres::Config>()
            .ok()
            .and_then(|c| c.get_user().map(str::to_owned))
    }
}

impl fmt::Display for PgUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for PgUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PgUrl({:?})", self.0)
    }
}

/// The libpq parameter naming the CA file the server's certificate is checked against.
const ROOT_CERT: &str = "sslrootcert";

/// `text` (a URL or a `key=value` connection string) without its `sslrootcert` parameter, and
/// that parameter's value (percent-decoded in a URL). A quoted `key=value` value is left in
/// place (tokio-postgres then refuses the unknown option).
pub(crate) fn split_root_cert(text: &str) -> (Cow<'_, str>, Option<String>) {
    if text.starts_with("postgres://") || text.starts_with("postgresql://") {
        split_url_parameter(text)
    } else {
        split_key_value(text)
    }
}

fn split_url_parameter(text: &str) -> (Cow<'_, str>, Option<String>) {
    let Some((base, query)) = text.split_once('?') else {
        return (Cow::Borrowed(text), None);
    };
    let mut value = None;
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| match pair.split_once('=') {
            Some((ROOT_CERT, v)) => {
                value = Some(
                    percent_encoding::percent_decode_str(v)
                        .decode_utf8_lossy()
                        .into_owned(),
                );
                false
            }
            _ => true,
        })
        .collect();
    if value.is_none() {
        return (Cow::Borrowed(text), None);
    }
    let rest = match kept.is_empty() {
        true => base.to_owned(),
        false => format!("{base}?{}", kept.join("&")),
    };
    (Cow::Owned(rest), value)
}

fn split_key_value(text: &str) -> (Cow<'_, str>, Option<String>) {
    let prefix = format!("{ROOT_CERT}=");
    let mut value = None;
    let kept: Vec<&str> = text
        .split_whitespace()
        .filter(|token| match token.strip_prefix(&prefix) {
            Some(v) if !v.starts_with('\'') => {
                value = Some(v.to_owned());
                false
            }
            _ => true,
        })
        .collect();
    match value {
        Some(v) => (Cow::Owned(kept.join(" ")), Some(v)),
        None => (Cow::Borrowed(text), None),
    }
}

/// The database password from the environment ([`PASSWORD_VARIABLES`], first set wins).
pub fn password_from_env() -> Option<String> {
    PASSWORD_VARIABLES
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_with_a_password_are_refused_without_repeating_it() {
        for text in [
            "postgres://app:s3cret-pw@db/runs",
            "postgresql://app@db/runs?password=s3cret-pw",
        ] {
            let e = PgUrl::parse(text).unwrap_err();
            assert_eq!(e, UrlError::CarriesPassword, "{text}");
            assert!(!e.to_string().contains("s3cret-pw"));
        }
    }

    #[test]
    fn urls_without_a_password_are_kept_as_given() {
        for text in [
            "postgres://app@db:5433/runs",
            "postgresql://db/runs?sslmode=require",
        ] {
            assert_eq!(PgUrl::parse(text).unwrap().as_str(), text);
        }
        assert!(matches!(
            PgUrl::parse("mysql://db/runs"),
            Err(UrlError::Invalid(_))
        ));
        assert!(matches!(
            PgUrl::parse("postgres://db:notaport/runs"),
            Err(UrlError::Invalid(_))
        ));
    }

    #[test]
    fn a_root_certificate_parameter_is_accepted_and_taken_out() {
        let url = "postgres://app@db/runs?sslmode=require&sslrootcert=%2Fetc%2Fca%20dir%2Fca.pem";
        assert_eq!(PgUrl::parse(url).unwrap().as_str(), url);
        assert_eq!(PgUrl::parse(url).unwrap().role().as_deref(), Some("app"));
        let (rest, cert) = split_root_cert(url);
        assert_eq!(rest, "postgres://app@db/runs?sslmode=require");
        assert_eq!(cert.as_deref(), Some("/etc/ca dir/ca.pem"));
        let (rest, cert) = split_root_cert("postgres://db/runs?sslrootcert=system");
        assert_eq!(
            (rest.as_ref(), cert.as_deref()),
            ("postgres://db/runs", Some("system"))
        );
        let (rest, cert) = split_root_cert("host=db sslrootcert=/ca.pem sslmode=require");
        assert_eq!(
            (rest.as_ref(), cert.as_deref()),
            ("host=db sslmode=require", Some("/ca.pem"))
        );
        let plain = "postgres://db/runs?sslmode=require";
        assert!(matches!(split_root_cert(plain), (Cow::Borrowed(t), None) if t == plain));
        assert!(matches!(
            PgUrl::parse("postgres://app:pw@db/runs?sslrootcert=/ca.pem"),
            Err(UrlError::CarriesPassword)
        ));
    }
}
