//! Identifiers the kernel makes: a run's execution id and a subtask's local task id.

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
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = i;
    loop {
        at -= 1;
        // `rest % 10` is below 10, so the cast cannot truncate.
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let mut id = String::with_capacity(execution_id.len() + step.len() + 2 + digits.len() - at);
    id.push_str(execution_id);
    id.push(':');
    id.push_str(step);
    id.push(':');
    for &d in &digits[at..] {
        id.push(char::from(d));
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

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
