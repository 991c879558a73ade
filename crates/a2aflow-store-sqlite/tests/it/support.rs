//! Shared set-up: stores in temporary directories; the sample records are the kernel's
//! (`a2aflow_kernel::journal::samples`), the same ones its MemoryStore tests write.

pub use a2aflow_kernel::journal::samples::{event, every_record, intent, started, workflow};
use std::future::Future;

/// Runs `f` on a fresh multi-thread runtime (the store's thread answers on its own).
pub fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}
