//! Identifiers the kernel makes: a run's execution id, a subtask's local task id, and the
//! context id a logical task is sent in when its host names none.

use sha2::{Digest, Sha256};
use std::sync::atomic::{AtomicU64, Ordering};

/// A fresh, process-unique execution id (`run-<nanos>-<counter>`, both hexadecimal).
pub(crate) fn fresh_execution_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!(
        "run-{nanos:x}-{:x}",
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// The stable local id of subtask `i` of a step: `<execution id>:<step name>:<i>` (built without
/// the formatting machinery: it is made once per task).
pub(crate) fn local_task_id(execution_id: &str, step: &str, i: usize) -> String {
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(i);
    let mut id = String::with_capacity(execution_id.len() + step.len() + 2 + digits.len());
    id.push_str(execution_id);
    id.push(':');
    id.push_str(step);
    id.push(':');
    id.push_str(digits);
    id
}

/// The context id of logical task `local_task_id` of run `execution_id` when the host names
/// none: a UUID (version 8, RFC 9562) made from a SHA-256 of both ids. It is the same for every
/// attempt and every driver of the run — a resumed run derives the very id it journaled — and
/// differs between runs, whose execution ids differ. A host may compute it to find a task's
/// context before the result names it.
pub fn task_context_id(execution_id: &str, local_task_id: &str) -> String {
    let digest = Sha256::new()
        .chain_update(b"a2aflow context id\0")
        .chain_update(execution_id.as_bytes())
        .chain_update([0])
        .chain_update(local_task_id.as_bytes())
        .finalize();
    let mut b = [0u8; 16];
    b.copy_from_slice(&digest[..16]);
    b[6] = (b[6] & 0x0f) | 0x80; // version 8
    b[8] = (b[8] & 0x3f) | 0x80; // the RFC 9562 variant
    // Written by hand, not with `{:02x}`: it is made once per task, and the formatting
    // machinery cost as much as the hash.
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut id = String::with_capacity(36);
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            id.push('-');
        }
        id.push(char::from(HEX[usize::from(byte >> 4)]));
        id.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_context_id_is_a_stable_uuid_of_its_run_and_task() {
        let id = task_context_id("run-1", "run-1:s:0");
        // Pinned (journals hold these ids; a resumed run must derive the same): computed apart
        // from this code, from the SHA-256 of the same bytes.
        assert_eq!(id, "de50a7c1-68a1-85ac-82b0-7a3e2cf8cc56");
        assert_eq!(id, task_context_id("run-1", "run-1:s:0"));
        assert_ne!(id, task_context_id("run-2", "run-1:s:0"));
        assert_ne!(id, task_context_id("run-1", "run-1:s:1"));
        let groups: Vec<usize> = id.split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12], "{id}");
        assert!(id.chars().all(|c| c == '-' || c.is_ascii_hexdigit()));
        assert_eq!(&id[14..15], "8", "version 8: {id}");
        assert!(
            matches!(&id[19..20], "8" | "9" | "a" | "b"),
            "variant: {id}"
        );
    }

    #[test]
    fn local_task_ids_join_execution_step_and_index() {
        assert_eq!(local_task_id("run-1", "s", 0), "run-1:s:0");
        assert_eq!(
            local_task_id("e", "step", usize::MAX),
            format!("e:step:{}", usize::MAX)
        );
        assert_ne!(fresh_execution_id(), fresh_execution_id());
    }
}
