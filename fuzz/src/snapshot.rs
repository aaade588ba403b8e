//! Target `snapshot`: arbitrary bytes restored as a seen-set snapshot.
//!
//! Input: a flags byte, then the snapshot bytes. Flags bit 0: replace the last 8
//! bytes with the checksum of the rest (else the bytes must carry a right one, which
//! random bytes never do); bit 1: a TTL override follows (u64, `% (MAX_TTL_MS + 2)`,
//! so 0 and one past the range occur); bit 2: a cap override follows (u64,
//! `% (2^16)`; 0 occurs).
//!
//! Properties: never panics; an error is `invalid_snapshot` (or `invalid_config` for
//! an override out of range); a snapshot that breaks a content rule ([`broken_rule`]:
//! times outside `0 ..= 8.64e15` ms, counters past 2^53 − 1 or not adding up, …)
//! is refused with `invalid_snapshot`, and one that restores keeps them all; a
//! restored set passes the invariant checker, takes new keys, and
//! `snapshot(restore(x))` is `x` byte for byte (without overrides) and restores to
//! itself.

use reconnect_dedupe::dedupe::seen::{MAX_MAX_KEYS, MAX_TTL_MS};
use reconnect_dedupe::Deduplicator;
use sha2::{Digest, Sha256};

/// The byte layout of format v1 (see `SeenSet::snapshot`).
pub const HEADER_LEN: usize = 120;
const FLAGS_AT: usize = 6;
const CLOCK_AT: usize = 24;
const KEY_AT: usize = 32;
const COUNTERS_AT: usize = 48;
const RESERVED_AT: usize = 104;
const COUNT_AT: usize = 112;
/// The largest counter a JS number holds exactly.
const MAX_COUNTER: u64 = (1 << 53) - 1;
/// The latest time the set holds (8.64e15 ms, the end of the JS date range).
const MAX_TIME_MS: u64 = 8_640_000_000_000_000;
/// Entry ids are 62-bit (the top two bits of the word hold the entry's state).
const ID_MASK: u64 = (1 << 62) - 1;
const ENTRY_LEN: usize = 24;
const CHECKSUM_LEN: usize = 8;

pub fn check(data: &[u8]) {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let mut rest = rest;
    let mut word = |present: bool| {
        present.then(|| {
            let (w, tail) = rest.split_at(rest.len().min(8));
            rest = tail;
            let mut b = [0u8; 8];
            b[..w.len()].copy_from_slice(w);
            u64::from_le_bytes(b)
        })
    };
    let ttl = word(flags & 2 != 0).map(|v| v % (MAX_TTL_MS + 2));
    let cap = word(flags & 4 != 0).map(|v| (v % (1 << 16)) as usize);
    let mut bytes = rest.to_vec();
    if flags & 1 != 0 {
        seal(&mut bytes);
    }
    let broken = broken_rule(&bytes);
    let restored = match Deduplicator::restore(&bytes, ttl, cap) {
        Ok(d) => {
            assert_eq!(
                broken, None,
                "restore accepted a snapshot that breaks a rule"
            );
            d
        }
        Err(e) => {
            let valid_override = ttl.is_none_or(|t| (1..=MAX_TTL_MS).contains(&t))
                && cap.is_none_or(|c| (1..=MAX_MAX_KEYS).contains(&c));
            if broken.is_some() && valid_override {
                assert_eq!(e.code(), "invalid_snapshot", "{broken:?}: {e:?}");
            }
            let overridden = ttl.is_some() || cap.is_some();
            assert!(
                e.code() == "invalid_snapshot" || (overridden && e.code() == "invalid_config"),
                "{e:?}"
            );
            return;
        }
    };
    restored.seen().validate();
    let again = restored.snapshot();
    if ttl.is_none() && cap.is_none() {
        // Restore refuses unknown flags, a reserved word set and a hash key without
        // its flag, so what it accepts is written back byte for byte.
        assert_eq!(again, bytes, "snapshot(restore(x)) differs from x");
    }
    let twice = Deduplicator::restore(&again, None, None).expect("a snapshot restores");
    twice.seen().validate();
    assert_eq!(twice.snapshot(), again, "snapshot(restore(y)) is y");
    assert_eq!(twice.stats(), restored.stats());

    // The restored set goes on working: a burst at its clock and one a TTL later.
    let clock = i64::from_le_bytes(again[CLOCK_AT..CLOCK_AT + 8].try_into().unwrap_or_default());
    let mut d = restored;
    let keys = "bin-A17:41:76c73ee2946cc70e\nbin-A17:42:0123456789abcdef";
    for now in [
        clock as f64,
        (clock + d.seen().config().ttl_ms() as i64) as f64,
    ] {
        match d.admit_keys(keys, now, 0) {
            Ok(out) => assert!(out.audit.payload.reconciles()),
            Err(e) => assert_eq!(e.code(), "invalid_time", "{e:?}"),
        }
        d.seen().validate();
    }
}

/// Replaces the last 8 bytes with the checksum of the bytes before them.
pub fn seal(bytes: &mut [u8]) {
    if let Some(body_len) = bytes.len().checked_sub(CHECKSUM_LEN) {
        let sum = Sha256::digest(&bytes[..body_len]);
        bytes[body_len..].copy_from_slice(&sum[..CHECKSUM_LEN]);
    }
}

/// The first content rule of format v1 that `bytes` (magic and checksum right, the
/// length a whole number of entries) breaks, by this module's own reading of the
/// rules; `None` when it keeps them all or is not even shaped as a snapshot (then
/// restore must refuse it for that, which `check` does not need to predict).
/// Rules: version 1; flags 0 or 1; no hash key and no entries without flag 1; the
/// reserved word 0; limits in range; the clock and every entry time within
/// `0 ..= MAX_TIME_MS`; counters ≤ 2^53 − 1 and adding up (admitted = held +
/// expired + evicted + released; seq reuses ≤ admitted); entries in time order, not
/// after the clock, not expired at it, ids within `ID_MASK`, none twice.
pub fn broken_rule(bytes: &[u8]) -> Option<&'static str> {
    let body_len = bytes.len().checked_sub(CHECKSUM_LEN)?;
    if body_len < HEADER_LEN || &bytes[..4] != b"RDDS" {
        return None;
    }
    if Sha256::digest(&bytes[..body_len])[..CHECKSUM_LEN] != bytes[body_len..] {
        return None;
    }
    let u16_at = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]);
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or_default());
    let n = u64_at(COUNT_AT);
    if (body_len - HEADER_LEN) as u64 != n.saturating_mul(ENTRY_LEN as u64) {
        return None;
    }
    let in_time = |t: u64| t <= MAX_TIME_MS;
    let (ttl, max_keys, clock) = (u64_at(8), u64_at(16), u64_at(CLOCK_AT));
    let flags = u16_at(FLAGS_AT);
    let counters: Vec<u64> = (0..7).map(|i| u64_at(COUNTERS_AT + 8 * i)).collect();
    let [admitted, _dups, _pending, evicted, expired, released, reuses] = counters[..] else {
        unreachable!("seven counters")
    };
    let rules = [
        (u16_at(4) != 1, "version"),
        (flags > 1, "unknown flags"),
        (
            flags == 0 && (n > 0 || u64_at(KEY_AT) != 0 || u64_at(KEY_AT + 8) != 0),
            "entries or a hash key without the flag",
        ),
        (u64_at(RESERVED_AT) != 0, "reserved word"),
        (ttl == 0 || ttl > MAX_TTL_MS, "stored TTL"),
        (
            max_keys == 0 || max_keys > MAX_MAX_KEYS as u64,
            "stored cap",
        ),
        (n > max_keys, "more entries than the cap"),
        (!in_time(clock), "clock out of range"),
        (
            counters.iter().any(|&c| c > MAX_COUNTER),
            "counter past 2^53 − 1",
        ),
        (
            // Each term ≤ 2^53 − 1 by now (else the rule above), n ≤ 2^24: no overflow.
            counters.iter().all(|&c| c <= MAX_COUNTER)
                && (admitted != n + expired + evicted + released || reuses > admitted),
            "counters do not add up",
        ),
    ];
    if let Some(&(_, why)) = rules.iter().find(|(broken, _)| *broken) {
        return Some(why);
    }
    let mut last = 0;
    let mut ids = std::collections::HashSet::new();
    for i in 0..n as usize {
        let at = HEADER_LEN + i * ENTRY_LEN;
        let (id, tag, t) = (u64_at(at), u64_at(at + 8), u64_at(at + 16));
        if !in_time(t) {
            return Some("entry time out of range");
        }
        if id & !ID_MASK != 0 || t < last || t > clock || clock - t >= ttl {
            return Some("entries out of order or out of range");
        }
        last = t;
        if !ids.insert((id, tag)) {
            return Some("repeated entry");
        }
    }
    None
}
