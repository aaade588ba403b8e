//! The seen-set's invariant checker, run after every step of the randomised tests.

use super::{Fingerprint, Probe, SeenSet, State, EMPTY, POS_MASK};

impl SeenSet {
    /// Panics if any internal invariant is broken. Called after every step of the
    /// randomised tests.
    pub fn validate(&self) {
        let ttl = self.config.ttl_ms as i64;
        assert!(self.ring.len() <= self.config.max_keys, "ring over the cap");
        let mut live = 0;
        let mut pending = 0;
        let mut last_at = 0u32;
        for (idx, e) in self.ring.iter().enumerate() {
            assert!(e.at >= last_at, "admission times out of order");
            last_at = e.at;
            let at = self.epoch_ms + i64::from(e.at);
            assert!(at <= self.clock_ms, "entry from the future");
            if e.state() == State::Dead {
                continue;
            }
            assert!(self.clock_ms - at < ttl, "expired entry still held");
            live += 1;
            pending += usize::from(e.state() == State::Pending);
            let pos = self.head.wrapping_add(idx as u32) & POS_MASK;
            assert_eq!(
                self.table.iter().filter(|&&p| p == pos).count(),
                1,
                "live entry not indexed exactly once"
            );
            let fp = Fingerprint {
                id: e.id(),
                tag: e.tag,
            };
            assert!(
                matches!(self.find(fp), Probe::Found { ring_idx } if ring_idx == idx),
                "entry not reachable from its bucket"
            );
        }
        assert!(self.ring.front().is_none_or(|e| e.state() != State::Dead));
        assert!(self.ring.back().is_none_or(|e| e.state() != State::Dead));
        assert_eq!(live, self.live, "live count");
        assert_eq!(pending as u64, self.stats.pending, "pending count");
        let indexed = self.table.iter().filter(|&&p| p != EMPTY).count();
        assert_eq!(indexed, live, "index holds dead or foreign positions");
        assert!(self.table.is_empty() || live * 4 <= self.table.len() * 3);
        let s = self.stats;
        assert_eq!(
            s.admitted,
            live as u64 + s.expired + s.evicted_before_ttl + s.released,
            "admitted = held + expired + evicted + released"
        );
    }
}
