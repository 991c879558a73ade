//! The Postgres store's tests, against the server `A2AFLOW_PG_URL` names (the password in
//! `A2AFLOW_PG_PASSWORD` or `PGPASSWORD`); each store gets a schema of its own, dropped after.
//! Without the URL every test fails and says how to get a server (`cargo xtask postgres
//! start`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod bad_input;
mod claim;
mod conformance;
mod fencing;
mod support;
mod tls;
