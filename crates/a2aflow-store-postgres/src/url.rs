//! The store's URL as a host names it: a `postgres://` or `postgresql://` URL that must not
//! carry a password (it comes from the environment, see [`password_from_env`]).

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
        let config: tokio_postgres::Config = text
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
        self.0
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
}
