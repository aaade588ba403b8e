//! Defects the fuzz targets (fuzz/) found, one test each, through the public API.
//! Each failed before its fix; the inputs are the fuzzers' findings, minimised.

use reconnect_dedupe::{Config, Deduplicator};
use sha2::{Digest, Sha256};

const T0: f64 = 1_784_192_400_000.0; // 2026-07-16T09:00:00Z

/// Snapshot format v1: the eight lifetime counters start at byte 48, in the order
/// admitted, duplicates, pending_hits, evicted_before_ttl, expired, released,
/// seq_reuses, reserved.
const COUNTERS_AT: usize = 48;
const ADMITTED: usize = 0;
const DUPLICATES: usize = 1;
const EXPIRED: usize = 4;

/// Recomputes a snapshot's checksum (the last 8 bytes: SHA-256 of the rest), as a
/// forger who knows the format would.
fn reseal(bytes: &mut [u8]) {
    let body = bytes.len() - 8;
    let sum = Sha256::digest(&bytes[..body]);
    bytes[body..].copy_from_slice(&sum[..8]);
}

/// A snapshot of a set holding two keys, with counter `i` set to `value` and the
/// checksum made right again (what a crafted snapshot does).
fn snapshot_with_counter(i: usize, value: u64) -> Vec<u8> {
    let mut d = Deduplicator::new(Config::new(60_000, 100).unwrap());
    d.admit_keys(
        "bin-A17:41:76c73ee2946cc70e\nbin-A17:42:0123456789abcdef",
        T0,
        0,
    )
    .unwrap();
    let mut bytes = d.snapshot();
    let at = COUNTERS_AT + 8 * i;
    bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
    reseal(&mut bytes);
    bytes
}

/// fuzz target `snapshot`: counters that do not add up (here `expired` 13 697 024
/// with 2 keys ever admitted) restored "successfully", and the restored set broke
/// the seen-set's invariant `admitted = held + expired + evicted + released`.
#[test]
fn restore_refuses_counters_that_do_not_add_up() {
    for (i, value) in [(EXPIRED, 13_697_024), (ADMITTED, 0), (ADMITTED, 3)] {
        let e = Deduplicator::restore(&snapshot_with_counter(i, value), None, None)
            .map(|d| d.stats())
            .unwrap_err();
        assert_eq!(e.code(), "invalid_snapshot", "counter {i} = {value}");
    }
    // The untouched snapshot restores.
    assert!(Deduplicator::restore(&snapshot_with_counter(ADMITTED, 2), None, None).is_ok());
}

/// fuzz target `snapshot`: counters near `u64::MAX` that add up restored, and the
/// next admission or duplicate overflowed (a panic natively, a wrap in Wasm).
/// Counters beyond 2^53 − 1 are not a JS number either: refused.
#[test]
fn restore_refuses_counters_past_2_pow_53() {
    let huge = snapshot_with_counter(DUPLICATES, u64::MAX);
    let e = Deduplicator::restore(&huge, None, None)
        .map(|d| d.stats())
        .unwrap_err();
    assert_eq!(e.code(), "invalid_snapshot");
    let just_past = snapshot_with_counter(DUPLICATES, 1 << 53);
    let e = Deduplicator::restore(&just_past, None, None)
        .map(|d| d.stats())
        .unwrap_err();
    assert_eq!(e.code(), "invalid_snapshot");
    let at_most = snapshot_with_counter(DUPLICATES, (1 << 53) - 1);
    assert_eq!(
        Deduplicator::restore(&at_most, None, None)
            .unwrap()
            .stats()
            .duplicates,
        (1 << 53) - 1
    );
}

/// fuzz target `seen_ops` (key pool): `parse_key` took `abs()` of a seq of
/// i64::MIN, which overflows: `admitKeys`/`fromKeys` panicked natively (a trap that
/// poisons the Wasm instance) and, without overflow checks, let the seq through.
#[test]
fn a_key_with_seq_i64_min_is_invalid_not_a_panic() {
    let key = "bin-A17:-9223372036854775808:0123456789abcdef";
    let e = reconnect_dedupe::parse_key(key).map(|_| ()).unwrap_err();
    assert_eq!(e.code(), "invalid_key");
    let mut d = Deduplicator::default();
    let e = d.admit_keys(key, T0, 0).map(|_| ()).unwrap_err();
    assert_eq!(e.code(), "invalid_key");
    assert_eq!(d.stats().admitted, 0);
    let e = Deduplicator::from_keys(Config::default(), key, &[T0])
        .map(|_| ())
        .unwrap_err();
    assert_eq!(e.code(), "invalid_key");
}

/// `admit_keys`' `refused` added to the key count overflowed for a huge `refused`
/// (a panic natively; on wasm32, where usize is 32 bits, 2^32 − 1 refused readings
/// and one key wrapped `received` to 0). An error, and nothing admitted.
#[test]
fn admit_keys_with_a_refused_count_that_overflows_is_an_error() {
    let mut d = Deduplicator::default();
    let e = d
        .admit_keys("bin-A17:41:76c73ee2946cc70e", T0, usize::MAX)
        .map(|_| ())
        .unwrap_err();
    assert_eq!(e.code(), "invalid_burst");
    assert_eq!(d.stats().admitted, 0);
}

/// fuzz target `snapshot` (2-minute run on the fixed core): a snapshot whose entry
/// list holds one entry twice is refused, but restored "successfully" under a
/// smaller cap override when a copy fell among the oldest entries the smaller cap
/// drops (those were never checked). Whether bytes are a valid snapshot must not
/// depend on the override.
#[test]
fn restore_refuses_a_repeated_entry_whatever_the_cap_override() {
    const HEADER_LEN: usize = 120;
    const ENTRY_LEN: usize = 24;
    let mut d = Deduplicator::new(Config::new(60_000, 100).unwrap());
    for (i, key) in [
        "bin-A17:41:76c73ee2946cc70e",
        "bin-A17:42:0123456789abcdef",
        "bin-A17:43:0123456789abcdef",
    ]
    .into_iter()
    .enumerate()
    {
        d.admit_keys(key, T0 + i as f64, 0).unwrap();
    }
    let mut bytes = d.snapshot();
    // Entry 1 becomes a copy of entry 0 (its own, later time keeps the order).
    let (first, second) = (HEADER_LEN, HEADER_LEN + ENTRY_LEN);
    let copy: Vec<u8> = bytes[first..first + 16].to_vec();
    bytes[second..second + 16].copy_from_slice(&copy);
    reseal(&mut bytes);
    // No override, a cap that keeps one copy, a cap that drops both.
    for cap in [None, Some(2), Some(1)] {
        let e = Deduplicator::restore(&bytes, None, cap).err();
        assert_eq!(
            e.map(|e| e.code()),
            Some("invalid_snapshot"),
            "cap override {cap:?}"
        );
    }
}
