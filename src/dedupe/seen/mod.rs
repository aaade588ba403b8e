//! The bounded memory of keys already admitted: first write wins, a TTL counted
//! from first admission, a cap on the number of keys, oldest admission out first.
//!
//! # Layout (20 bytes a key plus the index, ≈ 28–31 bytes a key in all at scale)
//! * `ring`: a FIFO of `Entry` in admission order, so expiry and eviction both take
//!   from the front. An entry is a 128-bit fingerprint and a `u32` admission time.
//!   (`Ring`): small, it is one buffer grown by ~1.5× to exactly the size needed;
//!   from 1 024 entries on it is chunked and grows without copying, so growth leaves
//!   no holes in Wasm linear memory (≈ 28 bytes a key in all at 1 M keys).
//! * `table`: an open-addressing index (linear probing, load ≤ 3/4) of `u32` ring
//!   positions, keyed by the fingerprint's `device_id + seq` half. While the ring holds
//!   at most `SCAN_MAX` (48) entries there is no table at all: a lookup scans the ring,
//!   which at that size costs about what hashing does. The table is built when an
//!   admission takes the ring past `SCAN_MAX`, and dropped when removals bring it back
//!   to `SCAN_MAX / 2` (halfway, so a set at the line does not rebuild it every burst).
//!
//! # Memory per set: it follows the keys held, never the cap
//! Many sets share one Wasm linear memory (one per device object in an isolate), so
//! an empty set allocates nothing, a set of 40 keys holds a 40-entry ring (800 bytes)
//! and no table, and after removals ([`SeenSet::sweep`], eviction, `release`) the ring
//! gives back what it no longer needs (see `Ring`), a table under 1/8 full is rebuilt
//! smaller, and the map of open tickets is freed once none is open. The cap only bounds
//! the number of keys (and sizes the ring's chunks for caps under 1 024).
//!
//! # Fingerprints
//! `(h1, h2) = SipHash-2-4-128(secret, device_id ‖ seq)`; an entry stores
//! `id = h1` (62 bits; two bits hold the entry's state) and `tag = h2 XOR d`, where
//! `d` is the key's 64-bit content digest. Two readings of the same device and seq
//! get the same `id` and equal `tag`s exactly when their digests, hence their key
//! strings, are equal: within a device+seq there is no false match at all. Readings
//! of different devices or seqs match only if SipHash collides on all 126 bits:
//! 2^-126 a pair, so a full window of 2^24 held keys checked against 2^24 new ones
//! (2^48 pairs) is falsely suppressed with probability ≤ 2^-78, far under 2^-40.
//! The secret comes from `getrandom` on first use, never at module scope. With a
//! secret random key a sender cannot aim readings at one hash bucket.
//!
//! SipHash is the `siphasher` crate's `SipHasher24` (128-bit output), fed the bytes of
//! `device_id` and then the 8 little-endian bytes of `seq`: the byte stream, hence every
//! fingerprint and every snapshot, is the one the hand-written SipHash it replaced
//! produced (pinned by a test). Measured in the same run before the switch
//! (docs/benchmarks.md): 25–28 ns a hash natively against 37–42 ns for the hand-written one,
//! and 16 against 28 ns in Wasm under V8.
//!
//! # Time
//! `now_ms` is always passed in. A key admitted at `t` is a duplicate for
//! `now < t + ttl` and **expired at exactly `now == t + ttl`**. A duplicate does not
//! refresh it. The set's clock never runs backwards: an earlier `now_ms` than one
//! already seen is treated as the latest one seen.

use crate::dedupe::error::Error;
#[cfg(any(test, feature = "fuzzing"))]
mod check;
mod ring;
mod snapshot;
#[cfg(test)]
mod tests;

use ring::Ring;
use siphasher::sip128::{Hasher128, SipHasher24};
use std::collections::HashMap;
use std::hash::Hasher;

/// Default time-to-live: 6 hours, longer than a daily-route bin's offline buffer.
pub const DEFAULT_TTL_MS: u64 = 6 * 3600 * 1000;
/// Default cap on remembered keys.
pub const DEFAULT_MAX_KEYS: usize = 100_000;
/// Longest accepted TTL: 31 days. Admission times are held as `u32` ms offsets.
pub const MAX_TTL_MS: u64 = 31 * 24 * 3600 * 1000;
/// Largest accepted cap: 2^24 keys (≈ 420 MB, far past an edge isolate's 128 MB).
pub const MAX_MAX_KEYS: usize = 1 << 24;

/// Most ring entries (dead ones included) looked up by a scan, without a table.
pub(crate) const SCAN_MAX: usize = 48;
/// Fewest slots of a table.
const MIN_TABLE: usize = 16;

const STATE_SHIFT: u32 = 62;
const ID_MASK: u64 = (1 << STATE_SHIFT) - 1;
const EMPTY: u32 = u32::MAX;
/// Ring positions count modulo 2^31, so `EMPTY` is never a position.
const POS_MASK: u32 = (1 << 31) - 1;

/// Largest counter a snapshot may hold: the largest integer a JS number holds
/// exactly. [`Stats::capped`] keeps what `stats()` reports within it.
pub const MAX_COUNTER: u64 = (1 << 53) - 1;

/// Largest `now_ms` accepted: the last millisecond a JS `Date` can hold.
pub const MAX_TIME_MS: f64 = 8.64e15;

/// Validated limits of a seen-set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    ttl_ms: u64,
    max_keys: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            ttl_ms: DEFAULT_TTL_MS,
            max_keys: DEFAULT_MAX_KEYS,
        }
    }
}

impl Config {
    /// Checks the limits: `1 ..= MAX_TTL_MS` ms and `1 ..= MAX_MAX_KEYS` keys.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the value out of range.
    pub fn new(ttl_ms: u64, max_keys: usize) -> Result<Config, Error> {
        if ttl_ms == 0 || ttl_ms > MAX_TTL_MS {
            return Err(Error::InvalidConfig(format!(
                "ttl_ms must be 1 ..= {MAX_TTL_MS} (31 days), got {ttl_ms}"
            )));
        }
        if max_keys == 0 || max_keys > MAX_MAX_KEYS {
            return Err(Error::InvalidConfig(format!(
                "max_keys must be 1 ..= {MAX_MAX_KEYS}, got {max_keys}"
            )));
        }
        Ok(Config { ttl_ms, max_keys })
    }

    pub fn ttl_ms(&self) -> u64 {
        self.ttl_ms
    }

    pub fn max_keys(&self) -> usize {
        self.max_keys
    }
}

/// Lifetime counters. `keys` and `pending` are current sizes; the rest only grow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct Stats {
    /// Keys held now, pending ones included.
    pub keys: u64,
    /// Keys held provisionally, awaiting confirm or release.
    pub pending: u64,
    /// Keys ever admitted (provisionally or not).
    pub admitted: u64,
    /// Lookups that found a confirmed key.
    pub duplicates: u64,
    /// Lookups that found a pending key (of an earlier burst).
    pub pending_hits: u64,
    /// Keys dropped because the cap was reached before their TTL ran out.
    pub evicted_before_ttl: u64,
    /// Keys dropped because their TTL ran out.
    pub expired: u64,
    /// Pending keys withdrawn by `release`.
    pub released: u64,
    /// Admissions whose device+seq was already held with other content.
    pub seq_reuses: u64,
}

impl Stats {
    /// Every counter at most `max` (a JS number holds integers exactly up to
    /// [`MAX_COUNTER`]; no real traffic gets there, a forged snapshot can come close).
    pub fn capped(self, max: u64) -> Stats {
        let c = |v: u64| v.min(max);
        Stats {
            keys: c(self.keys),
            pending: c(self.pending),
            admitted: c(self.admitted),
            duplicates: c(self.duplicates),
            pending_hits: c(self.pending_hits),
            evicted_before_ttl: c(self.evicted_before_ttl),
            expired: c(self.expired),
            released: c(self.released),
            seq_reuses: c(self.seq_reuses),
        }
    }
}

/// A key's fingerprint: see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint {
    pub id: u64,
    pub tag: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Dead = 0,
    Confirmed = 1,
    Pending = 2,
}

/// One remembered key. `packed(4)` keeps it at 20 bytes instead of 24.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, packed(4))]
struct Entry {
    /// Fingerprint id in the low 62 bits, [`State`] in the top two.
    id_state: u64,
    tag: u64,
    /// Admission time, ms after `SeenSet::epoch_ms`.
    at: u32,
}

impl Entry {
    fn id(&self) -> u64 {
        self.id_state & ID_MASK
    }
    fn state(&self) -> State {
        match self.id_state >> STATE_SHIFT {
            1 => State::Confirmed,
            2 => State::Pending,
            _ => State::Dead,
        }
    }
    fn set_state(&mut self, s: State) {
        self.id_state = self.id() | ((s as u64) << STATE_SHIFT);
    }
}

/// What [`SeenSet::check_and_add`] decided for one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// New: now remembered. `seq_reuse` when its device+seq was held with other content.
    Admitted { seq_reuse: bool },
    /// Already held and confirmed: first write wins, this copy is suppressed.
    Duplicate,
    /// Already held provisionally by an open ticket of an earlier burst.
    Pending,
}

#[derive(Debug, Clone)]
pub struct SeenSet {
    config: Config,
    ring: Ring<Entry>,
    /// Position of `ring[0]`; positions count up modulo 2^31.
    head: u32,
    table: Vec<u32>,
    /// Entries in `table`: live ones, confirmed or pending.
    live: usize,
    epoch_ms: i64,
    clock_ms: i64,
    hash_key: Option<SipKey>,
    stats: Stats,
    /// Open tickets and the positions they admitted.
    tickets: HashMap<u32, Vec<u32>>,
    next_ticket: u32,
}

impl SeenSet {
    pub fn new(config: Config) -> SeenSet {
        SeenSet {
            config,
            ring: Ring::new(config.max_keys),
            head: 0,
            table: Vec::new(),
            live: 0,
            epoch_ms: 0,
            clock_ms: 0,
            hash_key: None,
            stats: Stats::default(),
            tickets: HashMap::new(),
            next_ticket: 1,
        }
    }

    pub fn config(&self) -> Config {
        self.config
    }

    pub fn stats(&self) -> Stats {
        Stats {
            keys: self.live as u64,
            ..self.stats
        }
    }

    /// Bytes held by the ring and the index (the allocations that scale with keys).
    pub fn memory_bytes(&self) -> usize {
        self.ring.capacity() * std::mem::size_of::<Entry>() + self.table.capacity() * 4
    }

    /// The fingerprint of a key given as its parts, seeding the hash key on first use.
    ///
    /// # Errors
    /// [`Error::NoEntropy`] if the platform has no random source (never in a browser,
    /// workerd or on a desktop OS).
    pub fn fingerprint(
        &mut self,
        device_id: &str,
        seq: i64,
        digest: u64,
    ) -> Result<Fingerprint, Error> {
        Ok(fingerprint_under(self.hash_key()?, device_id, seq, digest))
    }

    /// The secret key of the fingerprints, drawn on first use: a caller that takes it
    /// before it changes anything cannot fail halfway (see [`fingerprint_under`]).
    ///
    /// # Errors
    /// As [`Self::fingerprint`].
    pub(crate) fn hash_key(&mut self) -> Result<SipKey, Error> {
        if let Some(k) = self.hash_key {
            return Ok(k);
        }
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|_| Error::NoEntropy)?;
        let k = SipKey(
            u64::from_le_bytes(bytes[..8].try_into().unwrap_or_default()),
            u64::from_le_bytes(bytes[8..].try_into().unwrap_or_default()),
        );
        self.hash_key = Some(k);
        Ok(k)
    }

    /// Whether a key is held (confirmed or pending) at `now_ms`. Changes nothing:
    /// neither order, nor expiry, nor counters.
    pub fn contains(&self, fp: Fingerprint, now_ms: i64) -> bool {
        let now = now_ms.max(self.clock_ms);
        match self.find(fp) {
            Probe::Found { ring_idx, .. } => {
                let at = self.epoch_ms + i64::from(self.ring[ring_idx].at);
                now - at < self.config.ttl_ms as i64
            }
            Probe::Missing { .. } => false,
        }
    }

    /// Advances the clock to `now_ms` and drops every key whose TTL has run out.
    pub fn sweep(&mut self, now_ms: i64) {
        let now = now_ms.max(self.clock_ms);
        self.clock_ms = now;
        let ttl = self.config.ttl_ms as i64;
        let held = self.ring.len();
        while let Some(front) = self.ring.front().copied() {
            if front.state() != State::Dead && self.epoch_ms + i64::from(front.at) + ttl > now {
                break;
            }
            if front.state() != State::Dead {
                self.stats.expired += 1;
            }
            self.pop_front();
        }
        if self.ring.len() < held {
            self.fit();
        }
        if self.ring.is_empty() {
            self.epoch_ms = now;
        } else if now - self.epoch_ms > i64::from(u32::MAX) {
            // Rebase the u32 offsets: every live entry is younger than ttl < 2^32 ms.
            let new_epoch = now - ttl;
            let shift = new_epoch - self.epoch_ms;
            for e in self.ring.iter_mut() {
                e.at = (i64::from(e.at) - shift).max(0) as u32;
            }
            self.epoch_ms = new_epoch;
        }
        if self.stats.pending == 0 && self.tickets.capacity() > 0 {
            self.tickets = HashMap::new();
        }
    }

    /// Opens a ticket for a provisional admission.
    pub fn open_ticket(&mut self) -> u32 {
        let t = self.next_ticket;
        self.next_ticket = self.next_ticket.wrapping_add(1).max(1);
        self.tickets.insert(t, Vec::new());
        t
    }

    /// The position the next admitted key will get: [`Self::check_and_add`] takes one
    /// taken at a burst's start to tell the keys this burst admitted.
    pub fn next_position(&self) -> u32 {
        self.head.wrapping_add(self.ring.len() as u32) & POS_MASK
    }

    /// Sweeps, then looks the key up and admits it if new. With a ticket the key is
    /// admitted provisionally. `burst_start` (a [`Self::next_position`] taken at the
    /// start of a burst) makes a pending key admitted by this same burst count as a
    /// plain duplicate rather than `Pending`.
    pub fn check_and_add(
        &mut self,
        fp: Fingerprint,
        now_ms: i64,
        ticket: Option<u32>,
        burst_start: u32,
    ) -> Admission {
        self.sweep(now_ms);
        let seq_reuse = match self.find(fp) {
            Probe::Found { ring_idx, .. } => {
                let pos = self.head.wrapping_add(ring_idx as u32) & POS_MASK;
                let this_burst = (pos.wrapping_sub(burst_start) & POS_MASK)
                    < (self.next_position().wrapping_sub(burst_start) & POS_MASK);
                return if self.ring[ring_idx].state() == State::Pending && !this_burst {
                    self.stats.pending_hits += 1;
                    Admission::Pending
                } else {
                    self.stats.duplicates += 1;
                    Admission::Duplicate
                };
            }
            Probe::Missing { same_id } => same_id,
        };
        if self.ring.len() >= self.config.max_keys {
            // The cap counts held keys: released ones left in the middle of the ring
            // make room first; only a full set evicts its oldest key (never dead: the
            // front is trimmed after every removal).
            if self.live < self.ring.len() {
                self.compact();
            }
            if self.live >= self.config.max_keys {
                if let Some(front) = self.ring.front() {
                    if front.state() != State::Dead {
                        self.stats.evicted_before_ttl += 1;
                    }
                }
                self.pop_front();
                self.trim_dead_front();
                self.fit();
            }
        }
        self.insert(fp, self.clock_ms, ticket);
        self.stats.admitted += 1;
        if seq_reuse {
            self.stats.seq_reuses += 1;
        }
        Admission::Admitted { seq_reuse }
    }

    /// Makes the keys of a provisional admission permanent. Returns how many keys
    /// were still pending (some may have expired or been evicted meanwhile).
    ///
    /// # Errors
    /// [`Error::UnknownTicket`] for a ticket never issued. A ticket already closed
    /// (confirmed, released, or with all its keys gone) returns `Ok(0)`.
    pub fn confirm(&mut self, ticket: u32) -> Result<usize, Error> {
        self.close_ticket(ticket, State::Confirmed)
    }

    /// Withdraws the keys of a provisional admission, so a retry of the same readings
    /// is admitted again. Returns how many keys were withdrawn.
    ///
    /// # Errors
    /// As [`Self::confirm`].
    pub fn release(&mut self, ticket: u32) -> Result<usize, Error> {
        self.close_ticket(ticket, State::Dead)
    }

    fn close_ticket(&mut self, ticket: u32, to: State) -> Result<usize, Error> {
        let Some(positions) = self.tickets.remove(&ticket) else {
            let issued = ticket != 0 && ticket < self.next_ticket;
            return if issued {
                Ok(0)
            } else {
                Err(Error::UnknownTicket(f64::from(ticket)))
            };
        };
        let mut changed = 0;
        for pos in positions {
            let idx = (pos.wrapping_sub(self.head) & POS_MASK) as usize;
            if idx >= self.ring.len() || self.ring[idx].state() != State::Pending {
                continue;
            }
            changed += 1;
            self.stats.pending -= 1;
            if to == State::Dead {
                self.unindex(idx);
                self.stats.released += 1;
            }
            self.ring[idx].set_state(to);
        }
        while self.ring.back().is_some_and(|e| e.state() == State::Dead) {
            self.ring.pop_back();
        }
        self.trim_dead_front();
        self.fit();
        if self.tickets.is_empty() {
            self.tickets = HashMap::new();
        }
        Ok(changed)
    }

    fn insert(&mut self, fp: Fingerprint, now: i64, ticket: Option<u32>) {
        let pos = self.next_position();
        let state = if ticket.is_some() {
            State::Pending
        } else {
            State::Confirmed
        };
        let mut entry = Entry {
            id_state: fp.id,
            tag: fp.tag,
            at: (now - self.epoch_ms) as u32,
        };
        entry.set_state(state);
        self.ring.push_back(entry);
        self.live += 1;
        if self.table.is_empty() {
            if self.ring.len() > SCAN_MAX {
                self.build_table(table_slots(self.live));
            }
        } else if self.live * 4 > self.table.len() * 3 {
            self.build_table(self.table.len() * 2);
        } else {
            let slot = empty_slot(&self.table, fp.id);
            self.table[slot] = pos;
        }
        if let Some(t) = ticket {
            self.stats.pending += 1;
            self.tickets.entry(t).or_default().push(pos);
        }
    }

    fn pop_front(&mut self) {
        if let Some(front) = self.ring.front() {
            match front.state() {
                State::Dead => {}
                State::Pending => {
                    self.stats.pending -= 1;
                    self.unindex(0);
                }
                State::Confirmed => self.unindex(0),
            }
            self.ring.pop_front();
            self.head = self.head.wrapping_add(1) & POS_MASK;
        }
    }

    /// Drops the dead (released) entries from the ring, so a full ring always holds
    /// `max_keys` live keys. Runs only when an admission finds the ring full with dead
    /// entries in it, at most once per release that left one in the middle: O(ring).
    ///
    /// The entries after the last dead one keep their positions (the next position
    /// does not move), so a burst in progress, whose keys all come after every dead
    /// entry (only `release` kills entries, between bursts), still recognises its own
    /// keys; the older ones move up, and the index and the open tickets follow.
    fn compact(&mut self) {
        let len = self.ring.len();
        let end = self.next_position();
        let new_head = end.wrapping_sub(self.live as u32) & POS_MASK;
        // New ring index of each old one (dead: none).
        let mut to = Vec::with_capacity(len);
        let mut kept = 0u32;
        for e in self.ring.iter() {
            if e.state() == State::Dead {
                to.push(None);
            } else {
                to.push(Some(kept));
                kept += 1;
            }
        }
        let head = self.head;
        let ring = &self.ring;
        for positions in self.tickets.values_mut() {
            positions.retain_mut(|pos| {
                let idx = (pos.wrapping_sub(head) & POS_MASK) as usize;
                match to.get(idx) {
                    Some(Some(new)) if ring[idx].state() == State::Pending => {
                        *pos = new_head.wrapping_add(*new) & POS_MASK;
                        true
                    }
                    _ => false,
                }
            });
        }
        for (idx, new) in to.iter().enumerate() {
            if let Some(new) = *new {
                let e = self.ring[idx];
                self.ring[new as usize] = e;
            }
        }
        while self.ring.len() > self.live {
            self.ring.pop_back();
        }
        self.head = new_head;
        if !self.table.is_empty() {
            self.build_table(self.table.len());
        }
        self.fit();
    }

    fn trim_dead_front(&mut self) {
        while self.ring.front().is_some_and(|e| e.state() == State::Dead) {
            self.pop_front();
        }
    }

    /// After removals: gives back ring memory no longer needed, drops the table once
    /// the ring is back to half the scanning size, and rebuilds a table under 1/8 full
    /// at its fitting size. Cheap when there is nothing to do.
    fn fit(&mut self) {
        self.ring.shrink();
        if self.table.is_empty() {
            return;
        }
        if self.ring.len() <= SCAN_MAX / 2 {
            self.table = Vec::new();
        } else if self.table.len() > MIN_TABLE && self.live * 8 < self.table.len() {
            self.build_table(table_slots(self.live));
        }
    }

    fn bucket(&self, id: u64) -> usize {
        (id as usize) & (self.table.len() - 1)
    }

    fn find(&self, fp: Fingerprint) -> Probe {
        if self.table.is_empty() {
            return self.scan(fp);
        }
        let mut same_id = false;
        let mask = self.table.len() - 1;
        let mut slot = self.bucket(fp.id);
        loop {
            let pos = self.table[slot];
            if pos == EMPTY {
                return Probe::Missing { same_id };
            }
            let ring_idx = (pos.wrapping_sub(self.head) & POS_MASK) as usize;
            let e = self.ring[ring_idx];
            if e.id() == fp.id {
                if e.tag == fp.tag {
                    return Probe::Found { ring_idx };
                }
                same_id = true;
            }
            slot = (slot + 1) & mask;
        }
    }

    /// [`Self::find`] without a table: every live entry of the ring, oldest first.
    fn scan(&self, fp: Fingerprint) -> Probe {
        let mut same_id = false;
        let mut base = 0;
        for part in self.ring.slices() {
            for (i, e) in part.iter().enumerate() {
                if e.id() == fp.id && e.state() != State::Dead {
                    if e.tag == fp.tag {
                        return Probe::Found { ring_idx: base + i };
                    }
                    same_id = true;
                }
            }
            base += part.len();
        }
        Probe::Missing { same_id }
    }

    /// Takes live ring entry `idx` out of the count and, if there is one, the index
    /// (backward-shift deletion).
    fn unindex(&mut self, idx: usize) {
        self.live -= 1;
        if self.table.is_empty() {
            return;
        }
        let pos = self.head.wrapping_add(idx as u32) & POS_MASK;
        let mask = self.table.len() - 1;
        let mut hole = self.bucket(self.ring[idx].id());
        while self.table[hole] != pos {
            hole = (hole + 1) & mask;
        }
        let mut next = (hole + 1) & mask;
        while self.table[next] != EMPTY {
            let moved = self.table[next];
            let home =
                self.bucket(self.ring[(moved.wrapping_sub(self.head) & POS_MASK) as usize].id());
            // Move it back unless its home lies cyclically in (hole, next].
            if (next.wrapping_sub(home) & mask) >= (next.wrapping_sub(hole) & mask) {
                self.table[hole] = moved;
                hole = next;
            }
            next = (next + 1) & mask;
        }
        self.table[hole] = EMPTY;
    }

    /// Indexes every live entry afresh in a table of `slots` slots (a power of two).
    fn build_table(&mut self, slots: usize) {
        // The old table goes first, so a smaller one can take its place in memory.
        self.table = Vec::new();
        self.table = vec![EMPTY; slots];
        for (idx, e) in self.ring.iter().enumerate() {
            if e.state() != State::Dead {
                let slot = empty_slot(&self.table, e.id());
                self.table[slot] = self.head.wrapping_add(idx as u32) & POS_MASK;
            }
        }
    }
}

/// The secret key of the fingerprints' SipHash (two little-endian halves).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SipKey(pub u64, pub u64);

/// SipHash-2-4-128 of `device_id ‖ seq` (its 8 little-endian bytes) under `key`, as the
/// (first, second) 64-bit halves of the reference output.
fn sip_device_seq(key: SipKey, device_id: &[u8], seq: i64) -> (u64, u64) {
    let mut h = SipHasher24::new_with_keys(key.0, key.1);
    h.write(device_id);
    h.write_u64(seq as u64); // `to_le` inside: the same bytes as `seq.to_le_bytes()`
    let out = h.finish128();
    (out.h1, out.h2)
}

/// The fingerprint of a key's parts under the set's secret (from [`SeenSet::hash_key`]).
pub(crate) fn fingerprint_under(
    key: SipKey,
    device_id: &str,
    seq: i64,
    digest: u64,
) -> Fingerprint {
    let (h1, h2) = sip_device_seq(key, device_id.as_bytes(), seq);
    Fingerprint {
        id: h1 & ID_MASK,
        tag: h2 ^ digest,
    }
}

/// Slots for a table of `live` entries: a power of two, at least [`MIN_TABLE`], load ≤ 3/4.
fn table_slots(live: usize) -> usize {
    (live * 4).div_ceil(3).next_power_of_two().max(MIN_TABLE)
}

/// The first empty slot on `id`'s probe sequence (the table has one: load ≤ 3/4).
fn empty_slot(table: &[u32], id: u64) -> usize {
    let mask = table.len() - 1;
    let mut slot = (id as usize) & mask;
    while table[slot] != EMPTY {
        slot = (slot + 1) & mask;
    }
    slot
}

enum Probe {
    Found { ring_idx: usize },
    Missing { same_id: bool },
}
