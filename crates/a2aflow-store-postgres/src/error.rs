//! Postgres and pool errors as [`StoreError`]s with `store.*` codes. Messages name the database
//! by host, port, database and role only ([`crate::target`]); a password never reaches one
//! (tokio-postgres's own messages do not carry it).

use a2aflow_kernel::StoreError;
use a2aflow_model::ErrorCode;
use tokio_postgres::error::SqlState;

/// SQLSTATEs the store's own functions raise (see the schema).
pub(crate) const UNKNOWN_EXECUTION: &str = "A2F01";
pub(crate) const LEASE_LOST: &str = "A2F02";
pub(crate) const RUN_FINISHED: &str = "A2F03";
pub(crate) const EVENT_ORDER: &str = "A2F04";

/// The SQLSTATE of `e` when the server raised it.
pub(crate) fn sqlstate(e: &tokio_postgres::Error) -> Option<&str> {
    e.as_db_error().map(|d| d.code().code())
}

/// What a person does about a failure with this SQLSTATE.
fn hint(state: Option<&SqlState>) -> &'static str {
    match state {
        Some(s)
            if *s == SqlState::INVALID_PASSWORD
                || *s == SqlState::INVALID_AUTHORIZATION_SPECIFICATION =>
        {
            "the database refused the login: check the role in the URL and the password \
             (PGPASSWORD, A2AFLOW_PG_PASSWORD or the credentials file)"
        }
        Some(s) if *s == SqlState::INVALID_CATALOG_NAME => {
            "the database named in the URL does not exist; create it first"
        }
        Some(s) if *s == SqlState::INSUFFICIENT_PRIVILEGE => {
            "the role lacks a privilege the store needs (CREATE on the schema, or access to its \
             tables)"
        }
        Some(s) if *s == SqlState::QUERY_CANCELED => "the statement ran past its timeout",
        Some(_) => "the database refused the statement",
        None => "check that the database is running and reachable at that address",
    }
}

/// A Postgres error of the store at `target` while doing `what`: `store.unavailable`, with the
/// SQLSTATE in the details when the server gave one.
pub(crate) fn postgres(target: &str, what: &str, e: &tokio_postgres::Error) -> StoreError {
    let state = e.code();
    let error = StoreError::new(
        ErrorCode::StoreUnavailable,
        format!(
            "run store {target}: {what} failed: {} ({})",
            describe(e),
            hint(state)
        ),
    )
    .with_detail("database", target);
    match state {
        Some(s) => error.with_detail("sqlstate", s.code()),
        None => error,
    }
}

/// `e` in one line: the server's message, or the client's error and its cause.
fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return db.message().to_owned();
    }
    match std::error::Error::source(e) {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    }
}

/// The pool could not hand out a connection.
pub(crate) fn pool(target: &str, e: &deadpool_postgres::PoolError) -> StoreError {
    match e {
        deadpool_postgres::PoolError::Backend(pg) => postgres(target, "connecting", pg),
        deadpool_postgres::PoolError::Timeout(_) => StoreError::new(
            ErrorCode::StoreUnavailable,
            format!(
                "run store {target}: no connection within the connect timeout (check that the \
                 database is running and reachable at that address)"
            ),
        )
        .with_detail("database", target),
        other => StoreError::new(
            ErrorCode::StoreUnavailable,
            format!("run store {target}: no connection ({other})"),
        )
        .with_detail("database", target),
    }
}

/// An operation that did not finish within the store's operation timeout.
pub(crate) fn timed_out(target: &str, what: &str) -> StoreError {
    StoreError::new(
        ErrorCode::StoreUnavailable,
        format!(
            "run store {target}: {what} did not finish within the store's timeout (the \
             database is unreachable, overloaded or holds a lock)"
        ),
    )
    .with_detail("database", target)
}

/// A record or event the store holds that does not decode: `store.corrupt`.
pub(crate) fn undecodable(target: &str, what: &str, e: &serde_json::Error) -> StoreError {
    StoreError::new(
        ErrorCode::StoreCorrupt,
        format!(
            "run store {target}: {what} does not decode ({e}); the row was changed by another \
             program"
        ),
    )
    .with_detail("database", target)
}
