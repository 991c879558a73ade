//! Flow-to-flow delegation in A2A 1.0 shapes: the three records a parent sees when a
//! subtask runs a child workflow, and the vocabulary they are written in.
//!
//! - the **request** — an [`a2a::Message`] with `ROLE_USER`, built by
//!   [`DelegationRequest::to_message`];
//! - the **task record** — an [`a2a::Task`] whose id is the child execution id, built by
//!   [`ChildExecution::to_task`], or a `TASK_STATE_REJECTED` record for a refused call, built by
//!   [`RefusedDelegation::to_task`];
//! - the **result artifact** — one artifact named `result` with one data part, built by
//!   [`result_artifact`].
//!
//! Metadata keys live in a2aflow's own closed namespace [`METADATA_NAMESPACE`] (`a2aflow/`); the
//! status table of the seed is [`map_status`]; refusals speak [`RefusalReason`]. With the
//! `schema` feature, [`validate_delegation_request`] and [`validate_delegation_task`] check a
//! record against the closed JSON Schemas in `schemas/` and list every violation.
//!
//! This module only shapes records; running a child workflow is the kernel's job.

mod error;
mod metadata;
mod records;
mod refusal;
#[cfg(feature = "schema")]
mod schema;
mod status;

pub use error::{DelegationError, RecordKind, Violation};
pub use metadata::{
    KeyScope, METADATA_NAMESPACE, MetadataKey, REFUSED_TASK_REQUIRED, REQUEST_REQUIRED,
    TASK_REQUIRED, keys,
};
pub use records::{
    ChildExecution, DATA_MEDIA_TYPE, DelegationRequest, FlowRef, Lineage, RESULT_ARTIFACT_NAME,
    RefusedDelegation, result_artifact, result_artifact_id, result_data,
};
pub use refusal::{Refusal, RefusalReason, authorize_read, execution_not_found};
#[cfg(feature = "schema")]
pub use schema::{
    REQUEST_SCHEMA, TASK_SCHEMA, validate_delegation_request, validate_delegation_task,
};
pub use status::{ExecutionStatus, map_status};
