//! Integration tests of `a2aflow-model`: one test binary, a module per area.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap

mod context_sources;
mod delegation_records;
#[cfg(feature = "schema")]
mod delegation_schema;
mod delegation_status;
mod error_codes_doc;
#[cfg(feature = "schema")]
mod event_body;
#[cfg(feature = "schema")]
mod event_view;
#[cfg(feature = "schema")]
mod events_schema;
mod failure_carriers;
mod failure_code;
mod fuzz_regressions;
mod load_direct;
mod proptest_load_validate;
mod python_sdk_fixtures;
#[cfg(feature = "schema")]
mod request_binding;
#[cfg(feature = "schema")]
mod retry_policy;
mod schema_agreement;
