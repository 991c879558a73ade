//! The kernel's store conformance suite against the Postgres store.

use crate::support::Scratch;
use a2aflow_kernel::RunStore;
use a2aflow_kernel::journal::conformance;
use a2aflow_store_postgres::StoreOptions;
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_store_passes_the_conformance_suite() {
    let scratch = Scratch::new().await;
    conformance::check_all(|| async {
        Arc::new(scratch.store(StoreOptions::default()).await) as Arc<dyn RunStore>
    })
    .await;
    scratch.drop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lapsed_lease_is_taken_over() {
    let scratch = Scratch::new().await;
    let quick = scratch
        .store(StoreOptions::default().with_lease_ttl(Duration::ZERO))
        .await;
    conformance::a_lapsed_lease_is_taken_over(&quick).await;
    scratch.drop_all().await;
}
