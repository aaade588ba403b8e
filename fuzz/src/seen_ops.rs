//! Target `seen_ops`: random operation sequences on a [`Deduplicator`], checked after
//! every step by the seen-set's invariant checker (`SeenSet::validate`) and against
//! [`Model`], a naive model (a `VecDeque` in admission order and a `HashMap` of the
//! keys held) with the same TTL, cap and first-write-wins rules.
//!
//! Input: three bytes choose the TTL ([`TTLS`]), the cap ([`CAPS`]) and the start
//! time; then each operation is a byte (`% 9`) and its arguments: a burst
//! (`process_burst`), a provisional burst, `admit_keys`, `confirm`, `release`, a
//! time step (forward, to a TTL boundary, past 2^32 ms, or backwards), snapshot and
//! restore (with or without overrides), `from_keys` (the worker's cold rebuild from
//! its rows, sometimes broken: times out of order, counts that differ, a bad key) and
//! `contains`. A call is now and then given a bad `now_ms`.
//!
//! Properties: every decision, ticket, count and counter is the model's; the
//! checker passes after every step; a call that returns an error leaves the
//! seen-set exactly as it was (nothing admitted, nothing counted), and so does
//! `contains`.

use crate::Src;
use reconnect_dedupe::dedupe::reading::{Scalar, MAX_SAFE_SEQ};
use reconnect_dedupe::dedupe::seen::MAX_TTL_MS;
use reconnect_dedupe::{
    idempotency_key, validate, AuditCounts, Config, Deduplicator, RawReading, Reading, Stats,
    Verdict,
};
use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};

/// TTLs a run may have, in ms.
pub const TTLS: [u64; 8] = [1, 2, 3, 10, 60, 1000, 60_000, MAX_TTL_MS];
/// Caps a run may have: around 1, around the 48-entry scanning size, and past the
/// 1 024-entry chunk size.
pub const CAPS: [usize; 12] = [1, 2, 3, 4, 7, 24, 47, 48, 49, 100, 200, 1500];
const T0: f64 = 1_784_192_400_000.0; // 2026-07-16T09:00:00Z
const MAX_TIME_MS: f64 = 8.64e15;
const STARTS: [f64; 3] = [T0, 0.0, MAX_TIME_MS - 100_000.0];
const BAD_TIMES: [f64; 5] = [f64::NAN, -1.0, MAX_TIME_MS + 1.0, f64::INFINITY, -0.5];
/// Most operations one input runs.
const MAX_OPS: usize = 300;

const DEVICES: [&str; 5] = ["bin-A17", "bin-B04", "70B3D57ED0041234", "a:b", ""];
const SEQS: [i64; 16] = [
    -1,
    0,
    1,
    2,
    3,
    4,
    5,
    6,
    7,
    8,
    9,
    10,
    11,
    12,
    MAX_SAFE_SEQ,
    -MAX_SAFE_SEQ,
];
const TSS: [&str; 4] = [
    "2026-07-16T09:00:00Z",
    "2026-07-16T09:00:01.5Z",
    "2026-07-16T11:00:00+02:00", // the first instant, written another way
    "not a time",
];
const FILLS: [f64; 5] = [0.0, 12.5, -0.0, 100.0, 250.0];
/// Lines `admit_keys` and `from_keys` must refuse (never produced by a valid reading).
const BAD_KEYS: [&str; 6] = [
    "",
    "bin-A17",
    "bin-A17:01:0123456789abcdef",
    "bin-A17:1:0123456789ABCDEF",
    "bin-A17:9007199254740992:0123456789abcdef",
    // `abs()` of i64::MIN overflowed in the key parser once.
    "bin-A17:-9223372036854775808:0123456789abcdef",
];
/// `admit_keys`' `refused` counts: small ones, past 2^32 (the Wasm API's bound, not
/// the core's), and ones that cannot be added to the key count (`invalid_burst`).
const REFUSED: [usize; 8] = [
    0,
    1,
    2,
    3,
    (1 << 32) + 1,
    usize::MAX / 2,
    usize::MAX - 1,
    usize::MAX,
];

/// One remembered key of the model, in admission order.
struct Entry {
    key: String,
    device_seq: (String, i64),
    at: i64,
    /// The open ticket holding it provisionally.
    ticket: Option<u32>,
    /// Released: gone, and it takes no slot of the cap (only held keys count); it
    /// stays in the order until it reaches an end, as in the ring.
    dead: bool,
    pos: u64,
}

/// The naive model: the same rules, written the plain way.
pub struct Model {
    ttl: i64,
    cap: usize,
    clock: i64,
    entries: VecDeque<Entry>,
    /// Keys held (confirmed or pending) → position.
    held: HashMap<String, u64>,
    /// (device, seq) → how many held keys have it.
    seqs: HashMap<(String, i64), usize>,
    stats: Stats,
    next_ticket: u32,
    next_pos: u64,
}

enum Outcome {
    Admitted(bool),
    Duplicate,
    Pending,
}

impl Model {
    fn new(ttl: u64, cap: usize) -> Model {
        Model {
            ttl: ttl as i64,
            cap,
            clock: 0,
            entries: VecDeque::new(),
            held: HashMap::new(),
            seqs: HashMap::new(),
            stats: Stats::default(),
            next_ticket: 1,
            next_pos: 0,
        }
    }

    /// The entry of a held key (entries are in position order; released ones
    /// leave gaps).
    fn held_entry(&self, key: &str) -> Option<&Entry> {
        let pos = *self.held.get(key)?;
        let i = self.entries.binary_search_by_key(&pos, |e| e.pos).ok()?;
        Some(&self.entries[i])
    }

    fn stats(&self) -> Stats {
        Stats {
            keys: self.held.len() as u64,
            ..self.stats
        }
    }

    fn forget(&mut self, key: &str, device_seq: &(String, i64)) {
        self.held.remove(key);
        if let Some(n) = self.seqs.get_mut(device_seq) {
            *n -= 1;
            if *n == 0 {
                self.seqs.remove(device_seq);
            }
        }
    }

    fn pop_front(&mut self) {
        if let Some(e) = self.entries.pop_front() {
            if !e.dead {
                if e.ticket.is_some() {
                    self.stats.pending -= 1;
                }
                self.forget(&e.key, &e.device_seq);
            }
        }
    }

    fn drop_dead_ends(&mut self) {
        while self.entries.back().is_some_and(|e| e.dead) {
            self.entries.pop_back();
        }
        while self.entries.front().is_some_and(|e| e.dead) {
            self.entries.pop_front();
        }
    }

    /// The clock moves to `now` unless it is earlier; keys admitted `ttl` ago or
    /// more are dropped (expiry at exactly admitted + ttl).
    fn sweep(&mut self, now: i64) {
        self.clock = self.clock.max(now);
        while let Some(e) = self.entries.front() {
            if !e.dead && e.at + self.ttl > self.clock {
                break;
            }
            if !e.dead {
                self.stats.expired += 1;
            }
            self.pop_front();
        }
    }

    fn add(
        &mut self,
        key: &str,
        device_seq: &(String, i64),
        now: i64,
        ticket: Option<u32>,
        burst_start: u64,
    ) -> Outcome {
        self.sweep(now);
        if let Some(e) = self.held_entry(key) {
            // Held by an earlier call's open ticket: pending; else a duplicate.
            return if e.ticket.is_some() && e.pos < burst_start {
                self.stats.pending_hits += 1;
                Outcome::Pending
            } else {
                self.stats.duplicates += 1;
                Outcome::Duplicate
            };
        }
        let seq_reuse = self.seqs.contains_key(device_seq);
        // The cap counts held keys only (fuzzing defect #5: a released key in the
        // middle used to take a slot, evicting a held key early).
        if self.held.len() >= self.cap {
            if self.entries.front().is_some_and(|e| !e.dead) {
                self.stats.evicted_before_ttl += 1;
            }
            self.pop_front();
            self.drop_dead_ends_front();
        }
        self.entries.push_back(Entry {
            key: key.to_owned(),
            device_seq: device_seq.clone(),
            at: self.clock,
            ticket,
            dead: false,
            pos: self.next_pos,
        });
        self.held.insert(key.to_owned(), self.next_pos);
        *self.seqs.entry(device_seq.clone()).or_default() += 1;
        self.next_pos += 1;
        self.stats.admitted += 1;
        self.stats.seq_reuses += u64::from(seq_reuse);
        self.stats.pending += u64::from(ticket.is_some());
        Outcome::Admitted(seq_reuse)
    }

    fn drop_dead_ends_front(&mut self) {
        while self.entries.front().is_some_and(|e| e.dead) {
            self.entries.pop_front();
        }
    }

    fn open_ticket(&mut self) -> u32 {
        let t = self.next_ticket;
        self.next_ticket += 1;
        t
    }

    fn close(&mut self, ticket: u32, release: bool) -> Result<usize, &'static str> {
        if ticket == 0 || ticket >= self.next_ticket {
            return Err("unknown_ticket");
        }
        let mut changed = 0;
        let mut gone = Vec::new();
        for e in self
            .entries
            .iter_mut()
            .filter(|e| !e.dead && e.ticket == Some(ticket))
        {
            changed += 1;
            self.stats.pending -= 1;
            e.ticket = None;
            if release {
                e.dead = true;
                self.stats.released += 1;
                gone.push((e.key.clone(), e.device_seq.clone()));
            }
        }
        for (key, device_seq) in gone {
            self.forget(&key, &device_seq);
        }
        self.drop_dead_ends();
        Ok(changed)
    }

    /// Whether `key` is held at `now` (no sweep, no change).
    fn contains(&self, key: &str, now: i64) -> bool {
        let now = now.max(self.clock);
        self.held_entry(key).is_some_and(|e| now - e.at < self.ttl)
    }

    /// Snapshot and restore: pending keys are dropped and counted released; a
    /// smaller cap keeps the newest keys and counts the rest evicted; a new TTL
    /// applies at once. Tickets start again from 1.
    fn restored(self, ttl: u64, cap: usize) -> Model {
        let mut m = Model::new(ttl, cap);
        m.clock = self.clock;
        m.stats = self.stats;
        m.stats.released += m.stats.pending;
        m.stats.pending = 0;
        let kept: Vec<Entry> = self
            .entries
            .into_iter()
            .filter(|e| !e.dead && e.ticket.is_none())
            .collect();
        let skip = kept.len().saturating_sub(cap);
        m.stats.evicted_before_ttl += skip as u64;
        for e in kept.into_iter().skip(skip) {
            m.held.insert(e.key.clone(), m.next_pos);
            *m.seqs.entry(e.device_seq.clone()).or_default() += 1;
            m.entries.push_back(Entry {
                pos: m.next_pos,
                ..e
            });
            m.next_pos += 1;
        }
        let clock = m.clock;
        m.sweep(clock);
        m
    }

    /// The confirmed keys held and their admission times, oldest first: the rows
    /// the worker keeps.
    fn rows(&self) -> (Vec<String>, Vec<f64>) {
        self.entries
            .iter()
            .filter(|e| !e.dead && e.ticket.is_none())
            .map(|e| (e.key.clone(), e.at as f64))
            .unzip()
    }
}

/// `now_ms` as the core takes it: finite, within 0 ..= 8.64e15, floored.
fn model_time(now: f64) -> Result<i64, &'static str> {
    if now.is_finite() && (0.0..=MAX_TIME_MS).contains(&now) {
        Ok(now.floor() as i64)
    } else {
        Err("invalid_time")
    }
}

/// A reading's key and its (device, seq).
type Keyed = (String, (String, i64));

/// A reading of the small pool, from two bytes, and its key and device+seq when valid.
fn pool_reading(a: u8, b: u8) -> (RawReading<'static>, Option<Keyed>) {
    let device = DEVICES[usize::from(a & 7) % DEVICES.len()];
    let ts = TSS[usize::from(a >> 3) % TSS.len()];
    let seq = SEQS[usize::from(b & 15)];
    let fill = FILLS[usize::from(b >> 4) % FILLS.len()];
    let raw = RawReading {
        is_object: true,
        repeated: None,
        device_id: Some(Scalar::Str(Cow::Borrowed(device))),
        seq: Some(Scalar::Int(seq)),
        ts: Some(Scalar::Str(Cow::Borrowed(ts))),
        fill_pct: Some(Scalar::Float(fill)),
    };
    let keyed = validate(raw.clone())
        .ok()
        .map(|r| (idempotency_key(&r), (device.to_owned(), seq)));
    (raw, keyed)
}

struct Run {
    d: Deduplicator,
    m: Model,
    now: f64,
    open: Vec<u32>,
    /// Every key a valid pool reading has, with its device+seq.
    valid_keys: HashMap<String, (String, i64)>,
}

pub fn check(data: &[u8]) {
    run(data);
}

/// What one input went through, so the stable tests can show that the generated
/// inputs reach every outcome.
#[derive(Debug, Default, Clone, Copy)]
pub struct Coverage {
    pub admitted: u64,
    pub seq_reuses: u64,
    pub duplicates: u64,
    pub pending: u64,
    pub expired: u64,
    pub evicted: u64,
    pub released: u64,
    pub confirmed: u64,
    pub restores: u64,
    pub rebuilds: u64,
    pub failed_calls: u64,
    pub max_keys_held: u64,
}

impl Coverage {
    pub fn add(&mut self, o: &Coverage) {
        self.admitted += o.admitted;
        self.seq_reuses += o.seq_reuses;
        self.duplicates += o.duplicates;
        self.pending += o.pending;
        self.expired += o.expired;
        self.evicted += o.evicted;
        self.released += o.released;
        self.confirmed += o.confirmed;
        self.restores += o.restores;
        self.rebuilds += o.rebuilds;
        self.failed_calls += o.failed_calls;
        self.max_keys_held = self.max_keys_held.max(o.max_keys_held);
    }

    /// Counts the growth of the model's counters from `a` to `b`.
    fn count(&mut self, a: &Stats, b: &Stats) {
        self.admitted += b.admitted.saturating_sub(a.admitted);
        self.seq_reuses += b.seq_reuses.saturating_sub(a.seq_reuses);
        self.duplicates += b.duplicates.saturating_sub(a.duplicates);
        self.pending += b.pending_hits.saturating_sub(a.pending_hits);
        self.expired += b.expired.saturating_sub(a.expired);
        self.evicted += b.evicted_before_ttl.saturating_sub(a.evicted_before_ttl);
        self.released += b.released.saturating_sub(a.released);
        self.max_keys_held = self.max_keys_held.max(b.keys);
    }
}

/// Runs one input (see the module docs) and says what it went through.
pub fn run(data: &[u8]) -> Coverage {
    let mut cov = Coverage::default();
    let mut src = Src::new(data);
    let ttl = src.pick(&TTLS);
    let cap = src.pick(&CAPS);
    let now = src.pick(&STARTS);
    let config = Config::new(ttl, cap).expect("pooled limits are valid");
    let mut run = Run {
        d: Deduplicator::new(config),
        m: Model::new(ttl, cap),
        now,
        open: Vec::new(),
        valid_keys: HashMap::new(),
    };
    run.seed_hash_key();
    for step in 0..MAX_OPS {
        if src.is_empty() {
            break;
        }
        let op = src.u8() % 9;
        let before = run.m.stats();
        let failed = run.step(op, &mut src);
        cov.failed_calls += u64::from(failed);
        cov.restores += u64::from(op == 6);
        cov.rebuilds += u64::from(op == 7 && !failed);
        cov.confirmed += u64::from(op == 3 && !failed);
        let replaced = op == 6 || (op == 7 && !failed);
        if !replaced {
            cov.count(&before, &run.m.stats());
        }
        run.d.seen().validate();
        assert_eq!(run.d.stats(), run.m.stats(), "step {step}, op {op}: stats");
        assert_eq!(
            run.d.seen().config(),
            Config::new(run.m.ttl as u64, run.m.cap).unwrap()
        );
    }
    cov
}

impl Run {
    /// Draws the set's hash key now (a `contains`, which admits nothing), so that a
    /// later failing call cannot be the one that draws it: it then changes nothing.
    fn seed_hash_key(&mut self) {
        let r = Reading {
            device_id: Cow::Borrowed("seed"),
            seq: 0,
            ts: 0,
            fill_pct: 0.0,
        };
        let before = self.d.stats();
        self.d.contains(&r, 0.0).expect("contains at 0");
        assert_eq!(self.d.stats(), before);
    }

    /// A call's `now_ms`: now and then a bad one.
    fn call_time(&self, src: &mut Src) -> f64 {
        let b = src.u8();
        if b % 16 == 15 {
            BAD_TIMES[usize::from(b / 16) % BAD_TIMES.len()]
        } else {
            self.now
        }
    }

    fn state(&self) -> String {
        format!("{:?}", self.d.seen())
    }

    /// Runs one operation; true when the call failed (as the model said it would).
    fn step(&mut self, op: u8, src: &mut Src) -> bool {
        match op {
            0 | 1 => self.burst(src, op == 1),
            2 => self.admit_keys(src),
            3 | 4 => self.close(src, op == 4),
            5 => self.time_step(src),
            6 => self.snapshot_restore(src),
            7 => self.rebuild(src),
            _ => self.contains(src),
        }
    }

    fn burst(&mut self, src: &mut Src, provisional: bool) -> bool {
        let now = self.call_time(src);
        let n = usize::from(src.u8() % 9);
        let mut raws = Vec::with_capacity(n);
        let mut keyed = Vec::with_capacity(n);
        for _ in 0..n {
            let (raw, k) = pool_reading(src.u8(), src.u8());
            if let Some((key, ds)) = &k {
                self.valid_keys.insert(key.clone(), ds.clone());
            }
            raws.push(raw);
            keyed.push(k);
        }
        let before = self.state();
        let got = self.d.process_burst(raws, now, provisional);
        let Ok(at) = model_time(now) else {
            let e = got.expect_err("a bad now_ms is an error");
            assert_eq!(e.code(), "invalid_time");
            assert_eq!(self.state(), before, "a failed burst changed the set");
            return true;
        };
        let out = got.unwrap_or_else(|e| panic!("burst at {now}: {e:?}"));
        let m = &mut self.m;
        m.sweep(at);
        let evicted = m.stats.evicted_before_ttl;
        let ticket = provisional.then(|| m.open_ticket());
        let start = m.next_pos;
        let (mut unique, mut dups, mut pending, mut rejected, mut reuses) =
            (vec![], vec![], vec![], vec![], 0);
        for (i, k) in keyed.iter().enumerate() {
            let Some((key, ds)) = k else {
                rejected.push(i);
                continue;
            };
            match m.add(key, ds, at, ticket, start) {
                Outcome::Admitted(reuse) => {
                    reuses += usize::from(reuse);
                    unique.push((i, key.clone()));
                }
                Outcome::Duplicate => dups.push(i),
                Outcome::Pending => pending.push(i),
            }
        }
        let got_unique: Vec<(usize, String)> = out
            .unique
            .iter()
            .map(|u| (u.index, u.key.clone()))
            .collect();
        let got_rejected: Vec<usize> = out.rejected.iter().map(|r| r.index).collect();
        assert_eq!(got_unique, unique, "admitted");
        assert_eq!(out.duplicates, dups, "duplicates");
        assert_eq!(out.pending, pending, "pending");
        assert_eq!(got_rejected, rejected, "rejected");
        assert_eq!(out.ticket, ticket, "ticket");
        let counts = AuditCounts {
            received: n,
            unique: unique.len(),
            duplicates_suppressed: dups.len(),
            cross_path_duplicates: 0,
            pending: pending.len(),
            rejected: rejected.len(),
            not_stored: 0,
            parked: 0,
            seq_reuses: reuses,
            evicted_before_ttl: m.stats.evicted_before_ttl - evicted,
        };
        assert_eq!(out.audit.payload, counts, "audit counts");
        assert_eq!(out.seq_reuses, reuses);
        self.open.extend(ticket);
        false
    }

    fn admit_keys(&mut self, src: &mut Src) -> bool {
        let now = self.call_time(src);
        let n = usize::from(src.u8() % 9);
        let mut lines = Vec::with_capacity(n);
        for _ in 0..n {
            let (a, b) = (src.u8(), src.u8());
            match pool_reading(a, b).1 {
                Some((key, ds)) if b & 0xc0 != 0xc0 => {
                    self.valid_keys.insert(key.clone(), ds);
                    lines.push(key);
                }
                _ => lines.push(BAD_KEYS[usize::from(a) % BAD_KEYS.len()].to_owned()),
            }
        }
        let refused = REFUSED[usize::from(src.u8()) % REFUSED.len()];
        let keys = lines.join("\n");
        let before = self.state();
        let got = self.d.admit_keys(&keys, now, refused);
        let lines: Vec<&str> = if keys.is_empty() {
            vec![]
        } else {
            keys.split('\n').collect()
        };
        let want_err = match model_time(now) {
            Err(code) => Some(code),
            Ok(_) if lines.iter().any(|k| !self.valid_keys.contains_key(*k)) => Some("invalid_key"),
            // keys + refused must fit the count, else the burst is refused as a whole.
            Ok(_) if lines.len().checked_add(refused).is_none() => Some("invalid_burst"),
            Ok(_) => None,
        };
        if let Some(code) = want_err {
            let e = got.expect_err("admit_keys should fail");
            assert_eq!(e.code(), code, "{keys:?}");
            assert_eq!(self.state(), before, "a failed admit_keys changed the set");
            return true;
        }
        let out = got.unwrap_or_else(|e| panic!("admit_keys {keys:?}: {e:?}"));
        let at = model_time(now).unwrap_or_default();
        let m = &mut self.m;
        m.sweep(at);
        let evicted = m.stats.evicted_before_ttl;
        let start = m.next_pos;
        let mut counts = AuditCounts {
            received: lines.len() + refused,
            rejected: refused,
            ..AuditCounts::default()
        };
        let verdicts: Vec<Verdict> = lines
            .iter()
            .map(|k| match m.add(k, &self.valid_keys[*k], at, None, start) {
                Outcome::Admitted(reuse) => {
                    counts.unique += 1;
                    counts.seq_reuses += usize::from(reuse);
                    if reuse {
                        Verdict::AdmittedSeqReuse
                    } else {
                        Verdict::Admitted
                    }
                }
                Outcome::Duplicate => {
                    counts.duplicates_suppressed += 1;
                    Verdict::Duplicate
                }
                Outcome::Pending => {
                    counts.pending += 1;
                    Verdict::Pending
                }
            })
            .collect();
        counts.evicted_before_ttl = m.stats.evicted_before_ttl - evicted;
        assert_eq!(out.verdicts, verdicts, "verdicts of {keys:?}");
        assert_eq!(out.audit.payload, counts, "audit counts");
        false
    }

    fn close(&mut self, src: &mut Src, release: bool) -> bool {
        let b = src.u8();
        let ticket = match b % 4 {
            0 | 1 if !self.open.is_empty() => {
                self.open.swap_remove(usize::from(b / 4) % self.open.len())
            }
            0..=2 => 1 + u32::from(b / 4) % self.m.next_ticket,
            _ => [0, self.m.next_ticket, u32::MAX][usize::from(b / 4) % 3],
        };
        let before = self.state();
        let got = if release {
            self.d.release(ticket)
        } else {
            self.d.confirm(ticket)
        };
        match self.m.close(ticket, release) {
            Ok(n) => {
                assert_eq!(got, Ok(n), "ticket {ticket}, release {release}");
                false
            }
            Err(code) => {
                let e = got.expect_err("an unknown ticket");
                assert_eq!(e.code(), code);
                assert_eq!(
                    self.state(),
                    before,
                    "a failed confirm/release changed the set"
                );
                true
            }
        }
    }

    fn time_step(&mut self, src: &mut Src) -> bool {
        let (kind, b) = (src.u8(), f64::from(src.u16()));
        let ttl = self.m.ttl as f64;
        self.now = match kind % 8 {
            0 => self.now + b,
            1 => self.now + ttl,
            2 => self.now + ttl - 1.0,
            3 => self.now - b,
            4 => self.now + 4_294_967_296.0 + b,
            5 => self.now + b + 0.5,
            6 => self.now + (ttl / 2.0).floor(),
            _ => self.now - ttl,
        }
        .clamp(0.0, MAX_TIME_MS);
        false
    }

    fn snapshot_restore(&mut self, src: &mut Src) -> bool {
        let b = src.u8();
        let ttl = (b & 1 != 0).then(|| src.pick(&TTLS));
        let cap = (b & 2 != 0).then(|| src.pick(&CAPS));
        let bytes = self.d.snapshot();
        self.d =
            Deduplicator::restore(&bytes, ttl, cap).unwrap_or_else(|e| panic!("restore: {e:?}"));
        let m = std::mem::replace(&mut self.m, Model::new(1, 1));
        let (ttl, cap) = (ttl.unwrap_or(m.ttl as u64), cap.unwrap_or(m.cap));
        self.m = m.restored(ttl, cap);
        self.open.clear();
        false
    }

    fn rebuild(&mut self, src: &mut Src) -> bool {
        let b = src.u8();
        let ttl = if b & 1 != 0 {
            src.pick(&TTLS)
        } else {
            self.m.ttl as u64
        };
        let cap = if b & 2 != 0 {
            src.pick(&CAPS)
        } else {
            self.m.cap
        };
        let (mut keys, mut times) = self.m.rows();
        let at = usize::from(src.u8());
        match (b >> 2) % 8 {
            1 => drop(times.pop()),
            2 => times.push(self.now),
            3 if times.len() >= 2 => times.swap(0, 1),
            4 => keys.insert(
                at % (keys.len() + 1),
                BAD_KEYS[at % BAD_KEYS.len()].to_owned(),
            ),
            5 if !times.is_empty() => {
                let n = times.len();
                times[at % n] = BAD_TIMES[at % BAD_TIMES.len()];
            }
            6 => {
                // Every other row, as a partial rebuild.
                keys = keys.into_iter().step_by(2).collect();
                times = times.into_iter().step_by(2).collect();
            }
            7 => {
                keys.clear();
                times.clear();
            }
            _ => {}
        }
        let text = keys.join("\n");
        let config = Config::new(ttl, cap).expect("pooled limits are valid");
        let got = Deduplicator::from_keys(config, &text, &times);
        // The model's rebuild, checked in the core's order.
        let lines: Vec<&str> = if text.is_empty() {
            vec![]
        } else {
            text.split('\n').collect()
        };
        let mut m = Model::new(ttl, cap);
        let mut want = Ok(());
        let mut last = i64::MIN;
        for (i, key) in lines.iter().enumerate() {
            let Some(&t) = times.get(i) else {
                want = Err("invalid_key");
                break;
            };
            let at = match model_time(t) {
                Ok(at) => at,
                Err(code) => {
                    want = Err(code);
                    break;
                }
            };
            let Some(ds) = self.valid_keys.get(*key).filter(|_| at >= last) else {
                want = Err("invalid_key");
                break;
            };
            last = at;
            let start = m.next_pos;
            m.add(key, ds, at, None, start);
        }
        if want.is_ok() && times.len() > lines.len() {
            want = Err("invalid_key");
        }
        match (got, want) {
            (Ok(d), Ok(())) => {
                self.d = d;
                self.m = m;
                self.open.clear();
                self.seed_hash_key();
            }
            (Err(e), Err(code)) => {
                assert_eq!(e.code(), code, "from_keys {text:?} {times:?}");
                return true;
            }
            (got, want) => panic!(
                "from_keys {text:?} {times:?}: {:?}, model {want:?}",
                got.map(|_| ())
            ),
        }
        false
    }

    fn contains(&mut self, src: &mut Src) -> bool {
        let now = self.call_time(src);
        let (raw, keyed) = pool_reading(src.u8(), src.u8());
        let Ok(r) = validate(raw) else {
            return false;
        };
        let before = self.state();
        let got = self.d.contains(&r, now);
        assert_eq!(self.state(), before, "contains changed the set");
        match model_time(now) {
            Ok(at) => {
                let key = keyed.map(|k| k.0).unwrap_or_default();
                assert_eq!(
                    got,
                    Ok(self.m.contains(&key, at)),
                    "contains {key} at {now}"
                );
            }
            Err(code) => {
                assert_eq!(got.map_err(|e| e.code()), Err(code));
                return true;
            }
        }
        false
    }
}
