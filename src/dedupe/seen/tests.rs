//! Seen-set tests: pinned boundaries, provisional admission, snapshots, and seeded
//! random operation sequences checked against a naive model after every step.

use super::*;
use crate::dedupe::key::format_key;
use crate::Error;

const T0: i64 = 1_784_192_400_000; // 2026-07-16T09:00:00Z

fn set(ttl_ms: u64, max_keys: usize) -> SeenSet {
    SeenSet::new(Config::new(ttl_ms, max_keys).unwrap())
}

fn fp(s: &mut SeenSet, device: &str, seq: i64, digest: u64) -> Fingerprint {
    s.fingerprint(device, seq, digest).unwrap()
}

fn add(s: &mut SeenSet, f: Fingerprint, now: i64) -> Admission {
    let start = s.next_position();
    let a = s.check_and_add(f, now, None, start);
    s.validate();
    a
}

const NEW: Admission = Admission::Admitted { seq_reuse: false };

fn hex(out: (u64, u64)) -> String {
    let bytes = [out.0.to_le_bytes(), out.1.to_le_bytes()].concat();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SipHash-2-4-128 known answers. The reference code's `vectors_sip128` (key bytes
/// 00 .. 0f, message bytes 00 .. n-1) through `siphasher` and, for n = 15, through the
/// fingerprint's two parts (a 7-byte id, an 8-byte seq); then fingerprint hashes pinned
/// from the hand-written SipHash used before `siphasher`, so fingerprints and snapshots
/// did not change with it.
#[test]
fn fingerprint_hash_known_answers() {
    let key = SipKey(0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908);
    let sip = SipHasher24::new_with_keys(key.0, key.1);
    let msg: Vec<u8> = (0u8..16).collect();
    for (n, want) in [
        (0, "a3817f04ba25a8e66df67214c7550293"),
        (1, "da87c1d86b99af44347659119b22fc45"),
        (15, "5493e99933b0a8117e08ec0f97cfc3d9"),
    ] {
        let out = sip.hash(&msg[..n]);
        assert_eq!(hex((out.h1, out.h2)), want, "{n} bytes");
    }
    let seq = i64::from_le_bytes([7, 8, 9, 10, 11, 12, 13, 14]);
    assert_eq!(
        hex(sip_device_seq(key, &msg[..7], seq)),
        "5493e99933b0a8117e08ec0f97cfc3d9"
    );
    for (device, seq, h1, h2) in [
        ("bin-A17", 41, 0xbe32_1956_b393_b448, 0x3f05_db7a_c469_faa8),
        (
            "70B3D57ED0041234",
            -1,
            0x7df3_a1d9_95ee_4028,
            0xdb48_60f8_56cb_1537,
        ),
        ("", 0, 0x96f2_e6ef_68ab_93c2, 0x1d80_5762_9da4_92bd),
        (
            "bin-00042",
            i64::MAX,
            0x036a_1081_b330_d609,
            0xe7b3_9efc_61c2_c776,
        ),
        ("ü-device", 7, 0x49be_0437_1075_ab18, 0x1946_c7f7_255f_7ddf),
    ] {
        assert_eq!(
            sip_device_seq(key, device.as_bytes(), seq),
            (h1, h2),
            "{device}"
        );
    }
    // The fingerprint: id = the first half less its top two bits, tag = second ^ digest.
    let mut s = set(1000, 10);
    s.hash_key = Some(key);
    let f = s.fingerprint("bin-A17", 41, 0xff).unwrap();
    assert_eq!(
        (f.id, f.tag),
        (0xbe32_1956_b393_b448 & ID_MASK, 0x3f05_db7a_c469_fa57)
    );
}

#[test]
fn config_rejects_zero_and_absurd_limits() {
    for (ttl, max) in [(0, 1), (MAX_TTL_MS + 1, 1), (1, 0), (1, MAX_MAX_KEYS + 1)] {
        assert_eq!(Config::new(ttl, max).unwrap_err().code(), "invalid_config");
    }
    assert!(Config::new(MAX_TTL_MS, MAX_MAX_KEYS).is_ok());
    assert_eq!(Config::default().ttl_ms(), 6 * 3600 * 1000);
    assert_eq!(Config::default().max_keys(), 100_000);
}

#[test]
fn expiry_boundary_is_exactly_admitted_plus_ttl() {
    let ttl = 1000;
    for (offset, want) in [(ttl - 1, Admission::Duplicate), (ttl, NEW), (ttl + 1, NEW)] {
        let mut s = set(ttl as u64, 10);
        let f = fp(&mut s, "bin-A17", 41, 7);
        assert_eq!(add(&mut s, f, T0), NEW);
        assert_eq!(s.contains(f, T0 + offset), want == Admission::Duplicate);
        assert_eq!(add(&mut s, f, T0 + offset), want, "at admitted + {offset}");
    }
}

#[test]
fn a_duplicate_does_not_refresh_expiry() {
    let mut s = set(1000, 10);
    let f = fp(&mut s, "bin-A17", 41, 7);
    assert_eq!(add(&mut s, f, T0), NEW);
    assert_eq!(add(&mut s, f, T0 + 999), Admission::Duplicate);
    assert_eq!(add(&mut s, f, T0 + 1000), NEW);
    let st = s.stats();
    assert_eq!(
        (st.admitted, st.duplicates, st.expired, st.keys),
        (2, 1, 1, 1)
    );
}

#[test]
fn contains_changes_nothing() {
    let mut s = set(1000, 10);
    let f = fp(&mut s, "d", 1, 1);
    add(&mut s, f, T0);
    let before = s.stats();
    assert!(s.contains(f, T0 + 10));
    assert!(!s.contains(f, T0 + 5000));
    assert_eq!(s.stats(), before);
    assert_eq!(add(&mut s, f, T0 + 20), Admission::Duplicate);
}

#[test]
fn the_cap_evicts_the_oldest_admission_first() {
    let mut s = set(60_000, 3);
    let f: Vec<_> = (0..4).map(|i| fp(&mut s, "d", i, 0)).collect();
    for (i, &x) in f.iter().enumerate() {
        assert_eq!(add(&mut s, x, T0 + i as i64), NEW);
    }
    assert_eq!(s.stats().evicted_before_ttl, 1);
    assert!(!s.contains(f[0], T0 + 10));
    assert!(f[1..].iter().all(|&x| s.contains(x, T0 + 10)));
    // The evicted key is admitted again (the cost of a too-small cap), pushing out f[1].
    assert_eq!(add(&mut s, f[0], T0 + 10), NEW);
    assert!(!s.contains(f[1], T0 + 10));
}

#[test]
fn a_released_key_in_the_middle_takes_no_cap_slot() {
    // Cap 3: X, provisional A, Y, release A leaves 2 keys held; Z is the third, so
    // nothing is evicted and a replay of X is still a duplicate (fuzzing defect #5).
    let mut s = set(60_000, 3);
    let [x, a, y, z] = [1, 2, 3, 4].map(|i| fp(&mut s, "d", i, 0));
    assert_eq!(add(&mut s, x, T0), NEW);
    let t = s.open_ticket();
    let start = s.next_position();
    assert_eq!(s.check_and_add(a, T0, Some(t), start), NEW);
    assert_eq!(add(&mut s, y, T0), NEW);
    assert_eq!(s.release(t), Ok(1));
    s.validate();
    assert_eq!(s.stats().keys, 2);
    assert_eq!(add(&mut s, z, T0 + 1), NEW);
    assert_eq!(s.stats().evicted_before_ttl, 0);
    assert_eq!(s.stats().keys, 3);
    assert_eq!(add(&mut s, x, T0 + 2), Admission::Duplicate);
    assert!([y, z].iter().all(|&k| s.contains(k, T0 + 2)));
    // The fourth held key evicts the oldest held one, X.
    assert_eq!(add(&mut s, a, T0 + 3), NEW);
    assert_eq!(s.stats().evicted_before_ttl, 1);
    assert!(!s.contains(x, T0 + 3));
}

#[test]
fn making_room_keeps_open_tickets_pointing_at_their_keys() {
    // Cap 4: X, provisional A (t1), provisional C (t2), Y; release t1; Z finds the
    // ring full with A dead in it and compacts, moving C: t2 must still hold C.
    let mut s = set(60_000, 4);
    let [x, a, c, y, z] = [1, 2, 3, 4, 5].map(|i| fp(&mut s, "d", i, 0));
    assert_eq!(add(&mut s, x, T0), NEW);
    let (t1, t2) = (s.open_ticket(), s.open_ticket());
    for (k, t) in [(a, t1), (c, t2)] {
        let start = s.next_position();
        assert_eq!(s.check_and_add(k, T0, Some(t), start), NEW);
    }
    assert_eq!(add(&mut s, y, T0), NEW);
    assert_eq!(s.release(t1), Ok(1));
    assert_eq!(add(&mut s, z, T0 + 1), NEW);
    assert_eq!(s.stats().evicted_before_ttl, 0);
    assert_eq!(add(&mut s, c, T0 + 2), Admission::Pending);
    assert_eq!(s.confirm(t2), Ok(1));
    s.validate();
    assert_eq!(add(&mut s, c, T0 + 3), Admission::Duplicate);
    assert_eq!(add(&mut s, x, T0 + 3), Admission::Duplicate);
}

#[test]
fn seq_reuse_is_admitted_and_flagged() {
    let mut s = set(60_000, 10);
    let a = fp(&mut s, "bin-A17", 1, 10);
    let b = fp(&mut s, "bin-A17", 1, 11);
    let c = fp(&mut s, "bin-A18", 1, 10);
    assert_eq!(add(&mut s, a, T0), NEW);
    assert_eq!(add(&mut s, b, T0), Admission::Admitted { seq_reuse: true });
    assert_eq!(add(&mut s, c, T0), NEW);
    assert_eq!(s.stats().seq_reuses, 1);
}

#[test]
fn the_clock_never_runs_backwards() {
    let mut s = set(1000, 10);
    let f = fp(&mut s, "d", 1, 1);
    add(&mut s, f, T0 + 5000);
    // An earlier clock reading is treated as T0 + 5000: still a duplicate.
    assert_eq!(add(&mut s, f, T0), Admission::Duplicate);
    assert_eq!(add(&mut s, f, T0 + 6000), NEW);
}

#[test]
fn provisional_keys_are_pending_until_confirmed_or_released() {
    let mut s = set(60_000, 10);
    let f = fp(&mut s, "d", 1, 1);
    let g = fp(&mut s, "d", 2, 1);
    let t = s.open_ticket();
    let start = s.next_position();
    assert_eq!(s.check_and_add(f, T0, Some(t), start), NEW);
    // A copy inside the same burst is a plain duplicate: first wins.
    assert_eq!(s.check_and_add(f, T0, Some(t), start), Admission::Duplicate);
    assert_eq!(s.check_and_add(g, T0, Some(t), start), NEW);
    s.validate();
    assert_eq!(s.stats().pending, 2);
    // A later burst sees them as pending, not as duplicates.
    assert_eq!(add(&mut s, f, T0 + 1), Admission::Pending);
    assert_eq!(s.release(t), Ok(2));
    s.validate();
    assert_eq!(s.stats().keys, 0);
    // The retry goes through, this time provisionally again, and is confirmed.
    let t2 = s.open_ticket();
    let start = s.next_position();
    assert_eq!(s.check_and_add(f, T0 + 2, Some(t2), start), NEW);
    assert_eq!(s.confirm(t2), Ok(1));
    assert_eq!(add(&mut s, f, T0 + 3), Admission::Duplicate);
    // Closed tickets answer 0; tickets never issued are errors.
    assert_eq!(s.confirm(t2), Ok(0));
    assert_eq!(s.release(t), Ok(0));
    assert_eq!(s.confirm(999), Err(Error::UnknownTicket(999.0)));
    let st = s.stats();
    assert_eq!((st.pending, st.pending_hits, st.released), (0, 1, 2));
}

#[test]
fn time_offsets_rebase_over_long_runs() {
    let mut s = set(MAX_TTL_MS, 100);
    let day = 86_400_000;
    let mut held = Vec::new();
    for d in 0..200 {
        let f = fp(&mut s, "d", d, 0);
        assert_eq!(add(&mut s, f, T0 + d * day), NEW);
        held.push((f, T0 + d * day));
    }
    let now = T0 + 199 * day;
    for (f, at) in held {
        let alive = now - at < MAX_TTL_MS as i64;
        assert_eq!(s.contains(f, now), alive);
    }
}

#[test]
fn snapshot_round_trips_and_keeps_deciding_the_same() {
    let mut s = set(60_000, 1000);
    let fs: Vec<_> = (0..300).map(|i| fp(&mut s, "bin", i, i as u64)).collect();
    for (i, &f) in fs.iter().enumerate() {
        add(&mut s, f, T0 + i as i64);
    }
    let t = s.open_ticket();
    let p = fp(&mut s, "bin", 9999, 0);
    let start = s.next_position();
    s.check_and_add(p, T0 + 400, Some(t), start);
    let bytes = s.snapshot();
    let r = SeenSet::restore(&bytes, None, None).unwrap();
    r.validate();
    assert_eq!(r.config(), s.config());
    assert_eq!(r.stats().keys, 300, "pending keys are not persisted");
    assert_eq!(r.stats().admitted, s.stats().admitted);
    let mut r = r;
    for &f in &fs {
        assert_eq!(add(&mut r, f, T0 + 500), Admission::Duplicate);
    }
    assert_eq!(add(&mut r, p, T0 + 500), NEW);
    // Same fingerprints, so a new snapshot of an unchanged set is identical.
    let again = SeenSet::restore(&bytes, None, None).unwrap().snapshot();
    assert_eq!(again[..again.len() - 8], bytes[..bytes.len() - 8]);
}

#[test]
fn restore_with_a_smaller_cap_keeps_the_newest() {
    let mut s = set(60_000, 100);
    let fs: Vec<_> = (0..10).map(|i| fp(&mut s, "d", i, 0)).collect();
    for (i, &f) in fs.iter().enumerate() {
        add(&mut s, f, T0 + i as i64);
    }
    let r = SeenSet::restore(&s.snapshot(), None, Some(4)).unwrap();
    r.validate();
    assert_eq!(r.stats().keys, 4);
    assert_eq!(r.stats().evicted_before_ttl, 6);
    assert!(fs[6..].iter().all(|&f| r.contains(f, T0 + 20)));
    assert!(!r.contains(fs[5], T0 + 20));
}

#[test]
fn corrupt_or_foreign_snapshots_are_errors() {
    let mut s = set(60_000, 100);
    for i in 0..5 {
        let f = fp(&mut s, "d", i, 0);
        add(&mut s, f, T0);
    }
    let good = s.snapshot();
    let code = |b: &[u8]| SeenSet::restore(b, None, None).unwrap_err().code();
    assert_eq!(code(&[]), "invalid_snapshot");
    assert_eq!(code(b"PK\x03\x04 not a snapshot at all, just some bytes......................................................................................................"), "invalid_snapshot");
    for cut in [1, 8, 24, good.len() / 2] {
        assert_eq!(code(&good[..good.len() - cut]), "invalid_snapshot");
    }
    for i in (0..good.len()).step_by(7) {
        let mut bad = good.clone();
        bad[i] ^= 0x40;
        assert_eq!(code(&bad), "invalid_snapshot", "flipped byte {i}");
    }
    // A well-formed checksum over inconsistent content is still refused.
    let mut forged = good[..good.len() - 8].to_vec();
    forged[4] = 2; // version 2
    let sum = <sha2::Sha256 as sha2::Digest>::digest(&forged);
    forged.extend_from_slice(&sum[..8]);
    assert_eq!(code(&forged), "invalid_snapshot");
}

/// `bytes` with `edit` applied to the body and a valid checksum again: what a forger
/// who knows the format writes.
fn forge(bytes: &[u8], edit: impl FnOnce(&mut [u8])) -> Vec<u8> {
    let mut body = bytes[..bytes.len() - 8].to_vec();
    edit(&mut body);
    let sum = <sha2::Sha256 as sha2::Digest>::digest(&body);
    body.extend_from_slice(&sum[..8]);
    body
}

fn put(body: &mut [u8], at: usize, v: u64) {
    body[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// Offsets of the v1 header's u64 fields and of the first entry's time.
const TTL: usize = 8;
const MAX_KEYS: usize = 16;
const CLOCK: usize = 24;
const ADMITTED: usize = 48;
const DUPLICATES: usize = 56;
const EXPIRED: usize = 80;
const RESERVED: usize = 104;
const FIRST_AT: usize = 120 + 16;

/// A checksum over crafted content proves nothing: every field is checked. An entry
/// time near `i64::MIN` used to restore "successfully" with every key gone.
#[test]
fn forged_snapshots_with_a_valid_checksum_are_refused() {
    let mut s = set(60_000, 100);
    for i in 0..3 {
        let f = fp(&mut s, "d", i, 0);
        add(&mut s, f, T0 + i);
    }
    let good = s.snapshot();
    assert!(SeenSet::restore(&forge(&good, |_| ()), None, None).is_ok());
    let min = i64::MIN as u64;
    type Edit = Box<dyn Fn(&mut [u8])>;
    let cases: Vec<(&str, Edit)> = vec![
        (
            "entry time near i64::MIN",
            Box::new(move |b| put(b, FIRST_AT, min + 1)),
        ),
        (
            "entry time i64::MIN",
            Box::new(move |b| put(b, FIRST_AT, min)),
        ),
        ("entry time -1", Box::new(|b| put(b, FIRST_AT, u64::MAX))),
        (
            "clock i64::MAX",
            Box::new(|b| put(b, CLOCK, i64::MAX as u64)),
        ),
        ("clock negative", Box::new(|b| put(b, CLOCK, u64::MAX))),
        ("ttl 0", Box::new(|b| put(b, TTL, 0))),
        ("ttl 2^64 - 1", Box::new(|b| put(b, TTL, u64::MAX))),
        (
            "max_keys 2^32 + 5",
            Box::new(|b| put(b, MAX_KEYS, (1 << 32) + 5)),
        ),
        ("max_keys 2 < 3 entries", Box::new(|b| put(b, MAX_KEYS, 2))),
        ("reserved field set", Box::new(|b| put(b, RESERVED, 1))),
        ("unknown flag bit", Box::new(|b| b[6] = 3)),
        ("no hash key, but entries", Box::new(|b| b[6] = 0)),
        (
            "counters 2^60",
            Box::new(|b| {
                put(b, ADMITTED, 1 << 60);
                put(b, EXPIRED, (1 << 60) - 3);
            }),
        ),
        (
            "duplicates 2^64 - 1",
            Box::new(|b| put(b, DUPLICATES, u64::MAX)),
        ),
        (
            "counters that do not add up",
            Box::new(|b| put(b, ADMITTED, 7)),
        ),
    ];
    for (name, edit) in cases {
        let bytes = forge(&good, edit);
        let got = SeenSet::restore(&bytes, None, None).map(|r| r.stats().keys);
        assert_eq!(got.map_err(|e| e.code()), Err("invalid_snapshot"), "{name}");
    }
    // Counters at the largest a JS number holds exactly restore, and keep counting.
    let top = (1u64 << 53) - 1;
    let mut r = SeenSet::restore(
        &forge(&good, |b| {
            put(b, ADMITTED, top);
            put(b, EXPIRED, top - 3);
            put(b, DUPLICATES, top);
        }),
        None,
        None,
    )
    .unwrap();
    r.validate();
    let f = fp(&mut r, "d", 9, 0);
    assert_eq!(add(&mut r, f, T0 + 10), NEW);
    assert_eq!((r.stats().admitted, r.stats().keys), (top + 1, 4));
}

/// The set's memory follows the keys it holds: nothing when empty, an exact ring and no
/// table while small, chunks and a table when large, and back down both lines as keys
/// expire, every key still found on each side of each line.
#[test]
fn memory_follows_the_keys_held_not_the_cap() {
    let mut s = SeenSet::new(Config::default());
    let ttl = DEFAULT_TTL_MS as i64;
    assert_eq!(s.memory_bytes(), 0);
    let fs: Vec<_> = (0..2100).map(|i| fp(&mut s, "bin-A17", i, 0)).collect();
    let held = |s: &SeenSet, range: std::ops::Range<usize>, now: i64| {
        fs.iter()
            .enumerate()
            .all(|(i, &f)| s.contains(f, now) == range.contains(&i))
    };
    let admit = |s: &mut SeenSet, range: std::ops::Range<usize>| {
        for i in range {
            assert_eq!(add(s, fs[i], T0 + i as i64), NEW);
        }
    };
    admit(&mut s, 0..1);
    assert_eq!(s.memory_bytes(), 20, "one key: one entry");
    admit(&mut s, 1..40);
    assert_eq!(s.memory_bytes(), 40 * 20, "40 keys: 40 entries, no table");
    admit(&mut s, 40..SCAN_MAX);
    assert!(s.table.is_empty() && held(&s, 0..SCAN_MAX, T0 + 2100));
    admit(&mut s, SCAN_MAX..SCAN_MAX + 1);
    assert_eq!(s.table.len(), 128, "past the scanning size: a table");
    assert!(held(&s, 0..SCAN_MAX + 1, T0 + 2100));
    admit(&mut s, SCAN_MAX + 1..2000);
    assert!(s.ring.is_chunked() && held(&s, 0..2000, T0 + 2100));
    assert_eq!(s.memory_bytes(), 2 * 1024 * 20 + 4096 * 4);
    // Down to 29 keys: one small ring again, a table rebuilt at its fitting size.
    s.sweep(T0 + 1970 + ttl);
    s.validate();
    assert!(!s.ring.is_chunked() && held(&s, 1971..2000, T0 + 1970 + ttl));
    assert_eq!(s.memory_bytes(), 44 * 20 + 64 * 4);
    // Down to 23: under half the scanning size, no table.
    let now = T0 + 1976 + ttl;
    s.sweep(now);
    s.validate();
    assert!(s.table.is_empty() && held(&s, 1977..2000, now));
    assert_eq!(s.memory_bytes(), 44 * 20);
    // Across the line again with provisional keys, and back when they are released.
    let t = s.open_ticket();
    let start = s.next_position();
    for &f in &fs[2000..2100] {
        assert_eq!(s.check_and_add(f, now, Some(t), start), NEW);
    }
    s.validate();
    assert!(!s.table.is_empty() && held(&s, 1977..2100, now));
    assert_eq!(s.release(t), Ok(100));
    s.validate();
    assert!(s.table.is_empty() && held(&s, 1977..2000, now));
    // Nothing held, nothing allocated.
    s.sweep(T0 + 2000 + 2 * ttl);
    s.validate();
    assert_eq!((s.memory_bytes(), s.stats().keys), (0, 0));
}

/// The map of open tickets costs nothing while no ticket is open.
#[test]
fn the_ticket_map_is_freed_when_no_ticket_is_open() {
    let mut s = set(60_000, 100);
    for (seq, close) in [
        (1, SeenSet::confirm as fn(&mut SeenSet, u32) -> _),
        (2, SeenSet::release),
    ] {
        let f = fp(&mut s, "d", seq, 1);
        let t = s.open_ticket();
        let start = s.next_position();
        s.check_and_add(f, T0, Some(t), start);
        assert!(s.tickets.capacity() > 0);
        assert_eq!(close(&mut s, t), Ok(1));
        assert_eq!(s.tickets.capacity(), 0);
        s.validate();
    }
    // A ticket that admitted nothing goes with the next sweep.
    s.open_ticket();
    s.sweep(T0 + 1);
    assert_eq!(s.tickets.capacity(), 0);
}

/// The naive model: an ordered list of full key strings with their admission time.
#[derive(Clone)]
struct ModelEntry {
    key: String,
    device_seq: (String, i64),
    at: i64,
    pending: Option<u32>,
    dead: bool,
    pos: u64,
}

struct Model {
    ttl: i64,
    cap: usize,
    clock: i64,
    entries: Vec<ModelEntry>,
    next_pos: u64,
}

impl Model {
    fn sweep(&mut self, now: i64) {
        self.clock = self.clock.max(now);
        let clock = self.clock;
        let ttl = self.ttl;
        while self
            .entries
            .first()
            .is_some_and(|e| e.dead || e.at + ttl <= clock)
        {
            self.entries.remove(0);
        }
    }

    fn add(
        &mut self,
        device: &str,
        seq: i64,
        digest: u64,
        now: i64,
        ticket: Option<u32>,
        burst_start: u64,
    ) -> Admission {
        self.sweep(now);
        let key = format_key(device, seq, digest);
        if let Some(e) = self.entries.iter().find(|e| !e.dead && e.key == key) {
            return if e.pending.is_some() && e.pos < burst_start {
                Admission::Pending
            } else {
                Admission::Duplicate
            };
        }
        let seq_reuse = self
            .entries
            .iter()
            .any(|e| !e.dead && e.device_seq == (device.to_string(), seq));
        // The cap counts held keys; released ones in the middle take no slot.
        if self.live_keys() >= self.cap {
            self.entries.remove(0);
            while self.entries.first().is_some_and(|e| e.dead) {
                self.entries.remove(0);
            }
        }
        self.entries.push(ModelEntry {
            key,
            device_seq: (device.to_string(), seq),
            at: self.clock,
            pending: ticket,
            dead: false,
            pos: self.next_pos,
        });
        self.next_pos += 1;
        Admission::Admitted { seq_reuse }
    }

    fn close(&mut self, ticket: u32, release: bool) -> usize {
        let mut n = 0;
        for e in self
            .entries
            .iter_mut()
            .filter(|e| !e.dead && e.pending == Some(ticket))
        {
            n += 1;
            e.pending = None;
            e.dead = release;
        }
        while self.entries.last().is_some_and(|e| e.dead) {
            self.entries.pop();
        }
        while self.entries.first().is_some_and(|e| e.dead) {
            self.entries.remove(0);
        }
        n
    }

    fn live_keys(&self) -> usize {
        self.entries.iter().filter(|e| !e.dead).count()
    }
}

/// The shape of one seeded run: limits, burst sizes and how many distinct seqs.
struct Shape {
    ttl: i64,
    cap: usize,
    steps: usize,
    /// Most readings in a burst; a run alternates busy phases of bursts up to this size
    /// with quiet ones of bursts up to 2, so sets grow and shrink.
    burst_max: u64,
    /// Seqs are drawn from `-1 .. seqs - 1`.
    seqs: u64,
}

/// What a set of runs went through, to prove every path was exercised.
#[derive(Default)]
struct Coverage {
    outcomes: std::collections::HashSet<String>,
    totals: Stats,
    /// Ring and index layouts seen: scanned, indexed, small ring, chunked ring.
    scanned: bool,
    indexed: bool,
    table_dropped: bool,
    chunked: bool,
    small_again: bool,
}

/// One seeded sequence of bursts (some provisional), confirms, releases, clock moves
/// (now and then backwards) and snapshot round trips, checked against the naive model
/// and `validate` after every step.
fn model_run(seed: u64, shape: &Shape, cov: &mut Coverage) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let (ttl, cap) = (shape.ttl, shape.cap);
    let mut s = set(ttl as u64, cap);
    let mut m = Model {
        ttl,
        cap,
        clock: 0,
        entries: Vec::new(),
        next_pos: 0,
    };
    let mut now = T0;
    let mut open: Vec<u32> = Vec::new();
    for step in 0..shape.steps {
        let ctx = format!("seed {seed} step {step}");
        let burst_max = if step / 50 % 2 == 0 {
            shape.burst_max
        } else {
            2
        };
        match rng.u64(..100) {
            0..=59 => {
                // A burst, sometimes provisional.
                let ticket = (rng.u64(..4) == 0).then(|| s.open_ticket());
                let start = s.next_position();
                let model_start = m.next_pos;
                for _ in 0..rng.u64(1..=burst_max) {
                    let device = ["bin-A17", "bin-B04", "70B3D57ED0041234"][rng.usize(..3)];
                    let seq = rng.i64(-1..shape.seqs as i64 - 1);
                    let digest = rng.u64(..3);
                    let f = s.fingerprint(device, seq, digest).unwrap();
                    let got = s.check_and_add(f, now, ticket, start);
                    let want = m.add(device, seq, digest, now, ticket, model_start);
                    assert_eq!(got, want, "{ctx}");
                    cov.outcomes.insert(format!("{got:?}"));
                }
                if let Some(t) = ticket {
                    open.push(t);
                }
            }
            60..=74 if !open.is_empty() => {
                let t = open.swap_remove(rng.usize(..open.len()));
                let release = rng.bool();
                let got = if release { s.release(t) } else { s.confirm(t) };
                assert_eq!(got, Ok(m.close(t, release)), "{ctx}");
            }
            75..=94 => {
                // Time moves on, now and then backwards.
                now += rng.i64(-3..=ttl / 2 - 3);
                s.sweep(now);
                m.sweep(now);
            }
            _ => {
                // Persist and restore: pending keys are dropped, as if released.
                for t in open.drain(..) {
                    m.close(t, true);
                }
                m.entries.retain(|e| !e.dead);
                s = SeenSet::restore(&s.snapshot(), None, None).unwrap();
            }
        }
        s.validate();
        assert_eq!(s.stats().keys as usize, m.live_keys(), "{ctx}");
        let indexed = !s.table.is_empty();
        cov.table_dropped |= cov.indexed && !indexed;
        cov.scanned |= !indexed && !s.ring.is_empty();
        cov.indexed |= indexed;
        cov.small_again |= cov.chunked && !s.ring.is_chunked();
        cov.chunked |= s.ring.is_chunked();
    }
    let st = s.stats();
    cov.totals.expired += st.expired;
    cov.totals.evicted_before_ttl += st.evicted_before_ttl;
    cov.totals.released += st.released;
}

#[test]
fn random_operation_sequences_match_the_naive_model() {
    let mut cov = Coverage::default();
    for seed in 0..300u64 {
        let mut rng = fastrand::Rng::with_seed(seed);
        let shape = Shape {
            ttl: rng.i64(1..=60),
            cap: rng.usize(1..=24),
            steps: 400,
            burst_max: 6,
            seqs: 6,
        };
        model_run(seed, &shape, &mut cov);
    }
    assert_eq!(cov.outcomes.len(), 4, "{:?}", cov.outcomes);
    let t = cov.totals;
    assert!(t.expired > 0 && t.evicted_before_ttl > 0 && t.released > 0);
}

/// Larger sets: the lookup goes from scanning to a table and back, the ring from one
/// buffer to chunks (128 entries a chunk at cap 100, 256 at cap 200, 1 024 at 1 500)
/// and back, while every decision still matches the model.
#[test]
fn random_sequences_cross_the_scan_table_and_chunk_lines() {
    let mut cov = Coverage::default();
    for seed in 0..24u64 {
        let cap = [40, 100, 200, 1500][seed as usize % 4];
        let shape = Shape {
            ttl: 400,
            cap,
            steps: if cap > 1000 { 500 } else { 300 },
            burst_max: cap as u64 / 8,
            seqs: cap as u64 * 2,
        };
        model_run(seed, &shape, &mut cov);
    }
    assert_eq!(cov.outcomes.len(), 4, "{:?}", cov.outcomes);
    assert!(cov.scanned && cov.indexed && cov.table_dropped);
    assert!(cov.chunked && cov.small_again);
    let t = cov.totals;
    assert!(t.expired > 0 && t.evicted_before_ttl > 0 && t.released > 0);
}
