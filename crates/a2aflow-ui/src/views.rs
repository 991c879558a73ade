//! What the server keeps of the runs it has shown, so a run's journal is not decoded again for
//! an answer that cannot have changed: the drawing of each run's workflow (a run's workflow
//! never changes once it started) and the whole answer of a finished run (its journal does not
//! change once it ended). A running run's view is always read afresh from its journal.
//!
//! Both are bounded: the oldest entry goes when a new one would pass [`KEPT`].

use crate::layout::Layout;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

/// Runs kept per kind (a finished 1,000-step run's answer is about 380 KB).
pub(crate) const KEPT: usize = 16;

/// A bounded map from execution id to a kept value, oldest out first.
struct Kept<T: ?Sized> {
    order: VecDeque<String>,
    map: HashMap<String, Arc<T>>,
}

impl<T: ?Sized> Kept<T> {
    fn new() -> Self {
        Kept {
            order: VecDeque::new(),
            map: HashMap::new(),
        }
    }

    fn get(&self, id: &str) -> Option<Arc<T>> {
        self.map.get(id).cloned()
    }

    fn put(&mut self, id: &str, value: Arc<T>) {
        if self.map.insert(id.to_owned(), value).is_none() {
            self.order.push_back(id.to_owned());
        }
        while self.order.len() > KEPT {
            if let Some(old) = self.order.pop_front() {
                self.map.remove(&old);
            }
        }
    }
}

/// The drawings and finished answers the server keeps.
pub(crate) struct Views {
    graphs: Mutex<Kept<Layout>>,
    finished: Mutex<Kept<str>>,
}

impl Views {
    pub(crate) fn new() -> Self {
        Views {
            graphs: Mutex::new(Kept::new()),
            finished: Mutex::new(Kept::new()),
        }
    }

    /// The drawing of run `id`'s workflow, if kept.
    pub(crate) fn graph(&self, id: &str) -> Option<Arc<Layout>> {
        lock(&self.graphs).get(id)
    }

    /// Keeps the drawing of run `id`'s workflow.
    pub(crate) fn keep_graph(&self, id: &str, graph: Arc<Layout>) {
        lock(&self.graphs).put(id, graph);
    }

    /// The answer (`/api/runs/{id}?facts=false`, JSON) of finished run `id`, if kept.
    pub(crate) fn finished(&self, id: &str) -> Option<Arc<str>> {
        lock(&self.finished).get(id)
    }

    /// Keeps the answer of run `id`, which has finished.
    pub(crate) fn keep_finished(&self, id: &str, answer: Arc<str>) {
        lock(&self.finished).put(id, answer);
    }
}

fn lock<T: ?Sized>(m: &Mutex<Kept<T>>) -> std::sync::MutexGuard<'_, Kept<T>> {
    // A panic while the lock was held left the map whole (each change is one insert or remove).
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_entry_goes_past_the_bound() {
        let mut kept = Kept::new();
        for i in 0..=KEPT {
            kept.put(&format!("r{i}"), Arc::new(i));
        }
        assert!(kept.get("r0").is_none());
        assert_eq!(kept.get("r1").as_deref(), Some(&1));
        assert_eq!(kept.get(&format!("r{KEPT}")).as_deref(), Some(&KEPT));
        // Putting a kept id again replaces it without a second place in the order.
        kept.put("r1", Arc::new(100));
        assert_eq!(kept.get("r1").as_deref(), Some(&100));
        assert_eq!(kept.order.len(), KEPT);
    }
}
