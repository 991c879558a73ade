//! Identifiers the kernel makes: a run's execution id, a subtask's local task id, and the
//! context id a logical task is sent in when its host names none.

use a2aflow_model::SharedStr;
use sha2::{Digest, Sha256};
use std::sync::atomic::{AtomicU64, Ordering};

/// What a context id's hash starts with, before the run's and the task's ids.
const CONTEXT_ID_DOMAIN: &[u8] = b"a2aflow context id\0";

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

/// The stable local id of subtask `i` of a step: `<execution id>:<step name>:<i>`.
pub(crate) fn local_task_id(execution_id: &str, step: &str, i: usize) -> SharedStr {
    let mut ids = TaskIds::default();
    ids.start(execution_id, step);
    ids.of(i)
}

/// The local task ids of a run's steps ([`local_task_id`]), written after the start the
/// subtasks of one step share, in one buffer the run keeps (built without the formatting
/// machinery: an id is made once per task, and costs one allocation, its own).
#[derive(Debug, Default)]
pub(crate) struct TaskIds {
    text: String,
    prefix: usize,
}

impl TaskIds {
    /// The ids that follow are those of step `step` of run `execution_id`.
    pub(crate) fn start(&mut self, execution_id: &str, step: &str) {
        self.text.clear();
        self.text.push_str(execution_id);
        self.text.push(':');
        self.text.push_str(step);
        self.text.push(':');
        self.prefix = self.text.len();
    }

    /// The id of subtask `i` of the step.
    pub(crate) fn of(&mut self, i: usize) -> SharedStr {
        self.text.truncate(self.prefix);
        self.text.push_str(itoa::Buffer::new().format(i));
        SharedStr::from(self.text.as_str())
    }
}

/// The context id of logical task `local_task_id` of run `execution_id` when the host names
/// none: a UUID (version 8, RFC 9562) made from a SHA-256 of both ids. It is the same for every
/// attempt and every driver of the run — a resumed run derives the very id it journaled — and
/// differs between runs, whose execution ids differ. A host may compute it to find a task's
/// context before the result names it.
pub fn task_context_id(execution_id: &str, local_task_id: &str) -> String {
    let digest = run_prefix(execution_id)
        .chain_update(local_task_id.as_bytes())
        .finalize();
    uuid_of(&digest)
}

/// The hash of a context id up to its task id: the domain, the execution id and a 0 byte.
fn run_prefix(execution_id: &str) -> Sha256 {
    Sha256::new()
        .chain_update(CONTEXT_ID_DOMAIN)
        .chain_update(execution_id.as_bytes())
        .chain_update([0])
}

/// The context ids of one run's tasks ([`task_context_id`]), from the hash's state after the
/// bytes every kernel-made task id of the run shares: the domain, the execution id, a 0 byte
/// and the task id's own start, the execution id again. Kept once per run, so a task hashes
/// only the rest of its id (for an execution id of 22 bytes or more, one SHA-256 block of two).
pub(crate) struct ContextIds {
    execution_id: SharedStr,
    /// The hash after the run's shared bytes.
    shared: Sha256,
}

impl ContextIds {
    /// The context ids of run `execution_id`.
    pub(crate) fn new(execution_id: SharedStr) -> Self {
        let shared = run_prefix(&execution_id).chain_update(execution_id.as_bytes());
        ContextIds {
            execution_id,
            shared,
        }
    }

    /// The context id of the run's logical task `local_task_id`: `task_context_id(execution id,
    /// local_task_id)`.
    pub(crate) fn of(&self, local_task_id: &str) -> String {
        match local_task_id.strip_prefix(&*self.execution_id) {
            Some(rest) => uuid_of(&self.shared.clone().chain_update(rest.as_bytes()).finalize()),
            None => task_context_id(&self.execution_id, local_task_id),
        }
    }
}

/// A UUID (version 8, RFC 9562) from the first 16 bytes of `digest`.
fn uuid_of(digest: &[u8]) -> String {
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
    fn a_runs_context_ids_are_the_task_context_ids_of_its_tasks() {
        let long = "run-".repeat(40);
        for execution_id in [
            "run-1",
            "run-18e2f3a4b5c6d7e8-0",
            "run-18e2f3a4b5c6d7e8-1f",
            &long,
        ] {
            let ids = ContextIds::new(SharedStr::from(execution_id));
            let tasks = [
                local_task_id(execution_id, "s", 0).to_string(),
                local_task_id(execution_id, &"step ".repeat(30), 12).to_string(),
                // Not made by the kernel: no shared start.
                "other:s:0".to_owned(),
                String::new(),
                execution_id.to_owned(),
            ];
            for task in &tasks {
                assert_eq!(
                    ids.of(task),
                    task_context_id(execution_id, task),
                    "{execution_id} / {task}"
                );
            }
        }
        // The pinned id of the test above, through a run's ids.
        let ids = ContextIds::new(SharedStr::from("run-1"));
        assert_eq!(ids.of("run-1:s:0"), "de50a7c1-68a1-85ac-82b0-7a3e2cf8cc56");
    }

    #[test]
    fn local_task_ids_join_execution_step_and_index() {
        assert_eq!(local_task_id("run-1", "s", 0), "run-1:s:0");
        assert_eq!(
            local_task_id("e", "step", usize::MAX),
            format!("e:step:{}", usize::MAX)
        );
        // One buffer for every step of a run: a shorter step after a longer one.
        let mut ids = TaskIds::default();
        ids.start("run-1", "a longer step");
        assert_eq!(ids.of(10), "run-1:a longer step:10");
        assert_eq!(ids.of(2), "run-1:a longer step:2");
        ids.start("run-1", "s");
        assert_eq!(ids.of(0), "run-1:s:0");
        assert_ne!(fresh_execution_id(), fresh_execution_id());
    }
}
