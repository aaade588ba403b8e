//! The seen-set's invariant checker, run after every step of the randomised tests.

use super::{Fingerprint, Probe, SeenSet, State, EMPTY, MIN_TABLE, POS_MASK, SCAN_MAX};

impl SeenSet {
    /// Panics if any internal invariant is broken. Called after every step of the
    /// randomised tests.
    pub fn validate(&self) {
        let ttl = self.config.ttl_ms as i64;
        assert!(self.ring.len() <= self.config.max_keys, "ring over the cap");
        let mut live = 0;
        let mut pending = 0;
        let mut last_at = 0u32;
        let mut indexed: Vec<u32> = self.table.iter().copied().filter(|&p| p != EMPTY).collect();
        indexed.sort_unstable();
        assert!(
            indexed.windows(2).all(|w| w[0] < w[1]),
            "a position indexed twice"
        );
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
            if !self.table.is_empty() {
                assert!(
                    indexed.binary_search(&pos).is_ok(),
                    "live entry not indexed"
                );
            }
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
        if self.table.is_empty() {
            assert!(
                self.ring.len() <= SCAN_MAX,
                "no table past the scanning size"
            );
        } else {
            assert_eq!(indexed.len(), live, "index holds dead or foreign positions");
            assert!(self.table.len().is_power_of_two() && self.table.len() >= MIN_TABLE);
            assert!(live * 4 <= self.table.len() * 3, "table over 3/4 full");
            assert!(
                self.ring.len() > SCAN_MAX / 2,
                "table kept at half the scanning size"
            );
            assert!(
                self.table.len() == MIN_TABLE || live * 8 >= self.table.len(),
                "table under 1/8 full after removals"
            );
        }
        self.ring.check_fit();
        assert!(
            !self.tickets.is_empty() || self.tickets.capacity() == 0,
            "ticket map kept with no ticket open"
        );
        let s = self.stats;
        assert_eq!(
            s.admitted,
            live as u64 + s.expired + s.evicted_before_ttl + s.released,
            "admitted = held + expired + evicted + released"
        );
    }
}
