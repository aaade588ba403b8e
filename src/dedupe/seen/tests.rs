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
    assert_eq!(s.confirm(999), Err(Error::UnknownTicket(999)));
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

/// A tiny deterministic generator (SplitMix64) so every run is reproducible.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
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
        if self.entries.len() >= self.cap {
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

#[test]
fn random_operation_sequences_match_the_naive_model() {
    // Outcomes seen over all seeds, to prove every path was exercised.
    let mut seen_outcomes = std::collections::HashSet::new();
    let mut totals = Stats::default();
    for seed in 0..300u64 {
        let mut rng = Rng(seed);
        let ttl = 1 + rng.below(60) as i64;
        let cap = 1 + rng.below(24) as usize;
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
        for step in 0..400 {
            let ctx = format!("seed {seed} step {step}");
            match rng.below(100) {
                0..=59 => {
                    // A burst of 1..6 readings, sometimes provisional.
                    let ticket = (rng.below(4) == 0).then(|| s.open_ticket());
                    let start = s.next_position();
                    let model_start = m.next_pos;
                    for _ in 0..1 + rng.below(6) {
                        let device =
                            ["bin-A17", "bin-B04", "70B3D57ED0041234"][rng.below(3) as usize];
                        let seq = rng.below(6) as i64 - 1;
                        let digest = rng.below(3);
                        let f = s.fingerprint(device, seq, digest).unwrap();
                        let got = s.check_and_add(f, now, ticket, start);
                        let want = m.add(device, seq, digest, now, ticket, model_start);
                        assert_eq!(got, want, "{ctx}");
                        seen_outcomes.insert(format!("{got:?}"));
                    }
                    if let Some(t) = ticket {
                        open.push(t);
                    }
                }
                60..=74 if !open.is_empty() => {
                    let t = open.swap_remove(rng.below(open.len() as u64) as usize);
                    let release = rng.below(2) == 0;
                    let got = if release { s.release(t) } else { s.confirm(t) };
                    assert_eq!(got, Ok(m.close(t, release)), "{ctx}");
                }
                75..=94 => {
                    // Time moves on, now and then backwards.
                    now += rng.below(25) as i64 - 3;
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
        }
        let st = s.stats();
        totals.expired += st.expired;
        totals.evicted_before_ttl += st.evicted_before_ttl;
        totals.released += st.released;
    }
    assert_eq!(seen_outcomes.len(), 4, "{seen_outcomes:?}");
    assert!(totals.expired > 0 && totals.evicted_before_ttl > 0 && totals.released > 0);
}
