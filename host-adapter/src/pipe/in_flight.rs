//! The in-flight table: requests sent and not yet answered, and those ended
//! without their answer (cancelled, timed out, abandoned) whose answer may
//! still come.
//!
//! The second set is what makes attribution without an id safe. A rejected
//! response whose id came after the transport limit names no request; both
//! the session and the proxy then pin it on the one request pending, and only
//! when that is certain: exactly one pending, and none ended unanswered that
//! the line could be the late answer to.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;

/// Requests in flight, keyed by `K`, each with what its side keeps (`V`).
#[derive(Debug)]
pub(crate) struct InFlight<K, V> {
    pending: HashMap<K, V>,
    unanswered: HashSet<K>,
    /// More requests ended unanswered than `max_unanswered`: from then on no
    /// response is attributed without its id.
    unanswered_overflowed: bool,
    max_pending: usize,
    max_unanswered: usize,
}

impl<K: Eq + Hash + Clone, V> InFlight<K, V> {
    /// A table that tracks at most `max_pending` requests and remembers at
    /// most `max_unanswered` ended ones: the bounds of its **memory**
    /// against a peer that never answers.
    pub(crate) fn new(max_pending: usize, max_unanswered: usize) -> Self {
        InFlight {
            pending: HashMap::new(),
            unanswered: HashSet::new(),
            unanswered_overflowed: false,
            max_pending,
            max_unanswered,
        }
    }

    /// Requests pending.
    pub(crate) fn len(&self) -> usize {
        self.pending.len()
    }

    /// Tracks `key`; false (and nothing tracked) when the table is full.
    pub(crate) fn insert(&mut self, key: K, value: V) -> bool {
        if self.pending.len() >= self.max_pending {
            return false;
        }
        self.pending.insert(key, value);
        true
    }

    /// What is kept for `key`, if it is pending.
    pub(crate) fn get(&self, key: &K) -> Option<&V> {
        self.pending.get(key)
    }

    /// What is kept for every pending request.
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.pending.values()
    }

    /// The answer to `key` came: it is no longer pending.
    pub(crate) fn answered(&mut self, key: &K) -> Option<V> {
        self.pending.remove(key)
    }

    /// `key` ended without its answer, which may still come.
    pub(crate) fn end_unanswered(&mut self, key: &K) -> Option<V> {
        let value = self.pending.remove(key)?;
        self.remember(key.clone());
        Some(value)
    }

    /// Every pending request ended without its answer.
    pub(crate) fn end_all_unanswered(&mut self) -> Vec<(K, V)> {
        let ended: Vec<(K, V)> = self.pending.drain().collect();
        for (key, _) in &ended {
            self.remember(key.clone());
        }
        ended
    }

    /// An answer to `key` came while it was not pending (and was dropped):
    /// it can no longer come later.
    pub(crate) fn answered_late(&mut self, key: &K) {
        self.unanswered.remove(key);
    }

    /// The one request a response that names no id must be answering: the
    /// only one pending, when no ended request may still be answered.
    /// `None` when that is not certain.
    pub(crate) fn sole(&self) -> Option<(&K, &V)> {
        if self.pending.len() != 1 || !self.unanswered.is_empty() || self.unanswered_overflowed {
            return None;
        }
        self.pending.iter().next()
    }

    /// Empties the table (the peer is gone); gives what was pending.
    pub(crate) fn drain(&mut self) -> Vec<(K, V)> {
        self.pending.drain().collect()
    }

    fn remember(&mut self, key: K) {
        if self.unanswered.len() < self.max_unanswered {
            self.unanswered.insert(key);
        } else {
            self.unanswered_overflowed = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribution_without_an_id_only_when_certain() {
        let mut table = InFlight::new(8, 2);
        assert!(table.insert(1, "a"));
        assert_eq!(table.sole(), Some((&1, &"a")));
        assert!(table.insert(2, "b"));
        assert_eq!(table.sole(), None, "two pending");
        assert_eq!(table.end_unanswered(&2), Some("b"));
        assert_eq!(table.sole(), None, "2 may still answer");
        table.answered_late(&2);
        assert_eq!(table.sole(), Some((&1, &"a")));
        assert_eq!(table.answered(&1), Some("a"));
        assert_eq!(table.sole(), None, "nothing pending");
    }

    #[test]
    fn bounds_hold() {
        let mut table = InFlight::new(2, 1);
        assert!(table.insert(1, ()));
        assert!(table.insert(2, ()));
        assert!(!table.insert(3, ()), "full");
        assert_eq!(table.len(), 2);
        assert_eq!(table.end_all_unanswered().len(), 2);
        // One remembered, one past the bound: attribution stops for good.
        table.answered_late(&1);
        table.answered_late(&2);
        assert!(table.insert(4, ()));
        assert_eq!(table.sole(), None);
    }
}
