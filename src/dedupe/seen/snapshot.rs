//! Snapshot bytes of a seen-set: format `RDDS` v1, checked field by field on restore.

use super::{
    Config, Entry, Fingerprint, Probe, SeenSet, SipKey, State, Stats, ID_MASK, MAX_COUNTER,
    MAX_TIME_MS,
};
use crate::dedupe::bytes::Reader;
use crate::dedupe::error::Error;
use sha2::{Digest, Sha256};

const MAGIC: &[u8; 4] = b"RDDS";
const VERSION: u16 = 1;
const HEADER_LEN: usize = 4 + 2 + 2 + 8 * 5 + 8 * 8 + 8;
const ENTRY_LEN: usize = 24;
const CHECKSUM_LEN: usize = 8;

impl SeenSet {
    /// Serialises the confirmed keys, limits, counters and hash key to bytes.
    ///
    /// Format v1, little-endian: `"RDDS"`, version u16, flags u16 (bit 0: hash key
    /// present), ttl_ms, max_keys, clock_ms, hash key k0, k1, the eight lifetime
    /// counters, entry count, then per entry id u64, tag u64, admitted_ms i64, and
    /// finally the first 8 bytes of SHA-256 over everything before. Pending keys are
    /// left out: after a restore their readings count as never admitted.
    pub fn snapshot(&self) -> Vec<u8> {
        let confirmed: Vec<&Entry> = self
            .ring
            .iter()
            .filter(|e| e.state() == State::Confirmed)
            .collect();
        let mut out = Vec::with_capacity(HEADER_LEN + confirmed.len() * ENTRY_LEN + CHECKSUM_LEN);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&u16::from(self.hash_key.is_some()).to_le_bytes());
        let key = self.hash_key.unwrap_or(SipKey(0, 0));
        let s = &self.stats;
        for v in [
            self.config.ttl_ms,
            self.config.max_keys as u64,
            self.clock_ms as u64,
            key.0,
            key.1,
            s.admitted,
            s.duplicates,
            s.pending_hits,
            s.evicted_before_ttl,
            s.expired,
            s.released + s.pending, // pending keys are dropped: count them released
            s.seq_reuses,
            0, // reserved
            confirmed.len() as u64,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for e in confirmed {
            out.extend_from_slice(&e.id().to_le_bytes());
            out.extend_from_slice(&{ e.tag }.to_le_bytes());
            out.extend_from_slice(&(self.epoch_ms + i64::from(e.at)).to_le_bytes());
        }
        let sum = Sha256::digest(&out);
        out.extend_from_slice(&sum[..CHECKSUM_LEN]);
        out
    }

    /// Rebuilds a set from [`Self::snapshot`] bytes. `ttl_ms` and `max_keys`, when
    /// given, replace the stored limits; a smaller cap keeps the newest keys and
    /// counts the rest as evicted.
    ///
    /// # Errors
    /// [`Error::InvalidSnapshot`] for bytes that are truncated, corrupt (checksum),
    /// of another format or version, or whose content breaks a rule even under a
    /// valid checksum: unknown flags, a reserved field set, limits out of range, the
    /// clock or an entry time outside `0 ..= 8.64e15` ms, entries out of order, from
    /// after the clock or expired at it, a counter beyond 2^53 − 1, counters that do
    /// not add up (admitted = held + expired + evicted + released);
    /// [`Error::InvalidConfig`] for an override out of range.
    pub fn restore(
        bytes: &[u8],
        ttl_ms: Option<u64>,
        max_keys: Option<usize>,
    ) -> Result<SeenSet, Error> {
        let bad = Error::InvalidSnapshot;
        if bytes.len() < HEADER_LEN + CHECKSUM_LEN || &bytes[..4] != MAGIC {
            return Err(bad("not a reconnect-dedupe snapshot"));
        }
        let (body, sum) = bytes.split_at(bytes.len() - CHECKSUM_LEN);
        if Sha256::digest(body)[..CHECKSUM_LEN] != *sum {
            return Err(bad("checksum mismatch: the bytes are corrupt"));
        }
        let mut r = Reader { buf: body, at: 4 };
        if r.u16()? != VERSION {
            return Err(bad("unsupported snapshot version"));
        }
        let flags = r.u16()?;
        if flags > 1 {
            return Err(bad("unknown flags"));
        }
        let (ttl, max) = (r.u64()?, r.u64()?);
        let stored = Config::new(ttl, usize::try_from(max).unwrap_or(usize::MAX))
            .map_err(|_| bad("stored limits out of range"))?;
        let clock_ms = time(r.u64()?).ok_or(bad("clock out of range"))?;
        let key = SipKey(r.u64()?, r.u64()?);
        let mut stats = Stats {
            admitted: r.u64()?,
            duplicates: r.u64()?,
            pending_hits: r.u64()?,
            evicted_before_ttl: r.u64()?,
            expired: r.u64()?,
            released: r.u64()?,
            seq_reuses: r.u64()?,
            ..Stats::default()
        };
        if r.u64()? != 0 {
            return Err(bad("reserved field is not zero"));
        }
        let n = r.u64()?;
        if n > stored.max_keys as u64 || (body.len() - r.at) as u64 != n * ENTRY_LEN as u64 {
            return Err(bad("entry count does not match the length"));
        }
        if flags & 1 == 0 && (n > 0 || key != SipKey(0, 0)) {
            return Err(bad("entries or a hash key without the hash-key flag"));
        }
        let s = stats;
        let counters = [
            s.admitted,
            s.duplicates,
            s.pending_hits,
            s.evicted_before_ttl,
            s.expired,
            s.released,
            s.seq_reuses,
        ];
        if counters.iter().any(|&c| c > MAX_COUNTER) {
            return Err(bad("a counter is beyond 2^53 − 1"));
        }
        // No sum overflows: each term is below 2^53. Every admitted key is held,
        // expired, evicted or released (pending ones were saved as released).
        if s.admitted != n + s.expired + s.evicted_before_ttl + s.released
            || s.seq_reuses > s.admitted
        {
            return Err(bad("counters do not add up"));
        }
        let config = Config::new(
            ttl_ms.unwrap_or(stored.ttl_ms),
            max_keys.unwrap_or(stored.max_keys),
        )?;
        let mut set = SeenSet::new(config);
        set.hash_key = (flags & 1 == 1).then_some(key);
        set.clock_ms = clock_ms;
        let skip = (n as usize).saturating_sub(config.max_keys);
        stats.evicted_before_ttl += skip as u64;
        let mut last_at = 0;
        // The entries a smaller cap drops are checked for repeats too (against each
        // other and the kept ones): whether bytes are a valid snapshot does not
        // depend on the override. Empty unless the override drops entries.
        let mut dropped = std::collections::HashSet::new();
        for i in 0..n as usize {
            let fp = Fingerprint {
                id: r.u64()?,
                tag: r.u64()?,
            };
            // Within 0 ..= clock (so no difference below overflows), in order, and
            // not expired at the stored clock, as `snapshot` writes them.
            let at = time(r.u64()?).ok_or(bad("entry time out of range"))?;
            if fp.id & !ID_MASK != 0
                || at < last_at
                || at > clock_ms
                || clock_ms - at >= stored.ttl_ms as i64
            {
                return Err(bad("entries out of order or out of range"));
            }
            last_at = at;
            if i < skip {
                if !dropped.insert((fp.id, fp.tag)) {
                    return Err(bad("repeated entry"));
                }
                continue;
            }
            if set.ring.is_empty() {
                set.epoch_ms = at;
            }
            if dropped.contains(&(fp.id, fp.tag)) || matches!(set.find(fp), Probe::Found { .. }) {
                return Err(bad("repeated entry"));
            }
            set.insert(fp, at, None);
        }
        set.stats = stats;
        set.sweep(clock_ms);
        Ok(set)
    }
}

/// A stored time in ms if it is one the set can hold: `0 ..= MAX_TIME_MS`.
fn time(v: u64) -> Option<i64> {
    i64::try_from(v).ok().filter(|&t| t as f64 <= MAX_TIME_MS)
}
