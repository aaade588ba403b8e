//! A device's sequence window: an exact, compact record of the seqs one device has
//! sent, and what each new one means (new, repeat, a late arrival that closes a gap, a
//! counter reset, too old to tell).
//!
//! This is the core of issue 12's sequence health. The facade exports it as the JS
//! class `SeqWindow`; the worker's device object keeps one per device, as
//! [`SeqWindow::to_bytes`] in a row of its SQLite (docs/sequence-health.md "Sequence health per device").
//!
//! # The window
//! In the style of RFC 6479 and WireGuard's anti-replay window: a ring of
//! [`WINDOW_SLOTS`] bits (W = 2048) behind the highest seq seen, one bit per seq, bit
//! `seq mod W`. The seqs `highest − W + 1 ..= highest` are *in the window*; the bit says
//! whether each was seen. Below the window the bits are gone, and the only exact record
//! is the gap list.
//!
//! **Why W = 2048.** 256 bytes of bitmap. It spans 85 days of hourly readings, 21 days
//! at the 15-minute period common for bin sensors, 34 hours at one a minute: longer
//! than a gateway outage that a reconnect replay (a sensor's stored history) closes.
//! A larger W costs 1 bit per slot per device for readings older than that; a smaller
//! one would turn a week-old replay into [`Observation::TooOld`].
//!
//! # Slots: the window is unit-free
//! A seq is an integer counter. Where the seq is a counter (the DF703's application
//! counter as [`crate::codec::unwrap_counter`] unwraps it, the LoRaWAN frame counter),
//! pass it as it is. Where the seq is a device time in unix seconds (history and
//! datalog records, [`crate::codec::readings`]), pass `seq / period` (the slot number
//! of the reporting period): the window counts slots, and one slot per second would
//! report every unsent second as missing.
//!
//! # Gaps
//! When the highest seq moves from `h` to `s` with `h + 1 < s ≤ h + W`, the seqs
//! `h + 1 ..= s − 1` open one gap, noticed at the call's `at_ms`: one range (a jump of
//! 2 000 slots is one [`Gap`], not 2 000 bits). A gap is never longer than the window:
//! a jump further than `h + W` is a reset (below). A later arrival inside a listed
//! gap is [`Observation::Recovered`] with its delay since the gap was noticed; the gap
//! shrinks or splits (the parts keep their `first_noticed_ms`). A gap stays listed when
//! the window moves past it: below the window the gap list is the exact record.
//!
//! At most [`MAX_GAPS`] (G = 64) ranges are listed; a 65th drops the lowest one, counted
//! in [`SeqTotals::gaps_dropped`] and its seqs in [`SeqTotals::missing_dropped`]. A seq of
//! a dropped range that arrives later is not known to have been missing: in the window
//! it is [`Observation::New`], below it as any other seq below the window.
//!
//! # The reset rule
//! `h` is the highest seq seen. A seq `s` *beyond the window* (`s > h + W`) is
//! [`Observation::Reset`] at once: W readings or more lost in one stretch is not what a
//! replay closes or a backfill asks for; such a jump is an outlier (a corrupted seq:
//! seqs 1–5, then 4 294 967 295, then 6–10) or a counter that restarted at a higher
//! value, and reading it as a gap would count up to 2^53 seqs missing and take the seqs
//! after an outlier for late arrivals. Which of the two it was, only the seqs after it
//! tell, so the window keeps the jump *pending* and does not move:
//! - a seq near the window (`≤ h + W`) is read against the window as if the jump had
//!   not come: after an outlier the device's seqs go on with nothing missing, nothing
//!   recovered and nothing too old, and its open gaps stay open;
//! - the jump's own seq again is [`Observation::Repeat`];
//! - a seq above the jump by at most W says the counter goes on from the jump: the
//!   window starts over there (below), and the seq is [`Observation::New`] (the reset
//!   was reported already);
//! - any other seq beyond `h + W` (below the jump: an outage longer than W, a restart
//!   below the jump; or beyond the jump's W) is another jump in its place, reported the
//!   same way;
//! - when the window reaches within W of the jump, the jump is dropped: its seq is
//!   then read as any other.
//!
//! A seq `s` *below the window* (`s ≤ h − W`) that is in no listed gap is:
//! - [`Observation::Reset`] when `s ≤ h − 2W` (far below: a counter restarted after it had
//!   counted past 2W, a device clock set back) **or** `s < W` (a small seq: frame
//!   counters, the DF703's counter and a battery swap restart at 0 or 1, and the first seq
//!   seen after a restart is small unless W readings were lost). The window starts over at
//!   `s`: its bits are cleared, its open gaps are closed as reset (their seqs counted in
//!   [`SeqTotals::closed_by_reset`], never as missing), and `h` becomes `s`;
//! - [`Observation::TooOld`] otherwise: within the W slots just below the window, a replay
//!   older than the window. Nothing changes but the count.
//!
//! A seq in the window or in a listed gap is never a reset. Where that misreads a
//! restart, it does so boundedly and without a false gap:
//! - a counter that restarts before it passed W (`h < W`) lands in the window: its
//!   seqs read as repeats, then as fills, until it passes `h`;
//! - a restart whose first seq seen is `≥ W` and within `2W` of `h` reads as
//!   [`Observation::TooOld`] until the counter reaches the window;
//! - the DF703's counter is unwrapped by the codec against the highest value seen, so
//!   a restart at counter `c` after a reference `r` reaches the window as the value
//!   ≡ `c` (mod 65 536) nearest to `r`: a reset when that is far below (reference
//!   30 000, counter 3 → 3), a forward jump that opens a gap when the reference was
//!   near the top of a wrap (reference 65 000, counter 3 → 65 539).
//!
//! A false reset (an old replay taken for a restart) costs more: the next live seq then
//! opens a gap back to the replayed one. The rule keeps the reset zone away from
//! the window for that reason (a band of W slots of [`Observation::TooOld`] between them).
//!
//! # Time
//! `at_ms` is the caller's clock (`Date.now()`), checked as the core checks `now_ms`
//! ([`crate::check_time`]) and kept in whole milliseconds. A delay is never negative:
//! a clock that went back gives 0.
//!
//! # Example
//! ```
//! use reconnect_dedupe::{Observation, SeqWindow};
//!
//! let mut w = SeqWindow::new();
//! assert_eq!(w.observe(1, 1_000.0)?, Observation::New);
//! assert_eq!(w.observe(4, 2_000.0)?, Observation::New); // 2 and 3 are missing
//! assert_eq!(w.gaps()[0].first, 2);
//! assert_eq!(w.observe(3, 9_000.0)?, Observation::Recovered { delay_ms: 7_000 });
//! assert_eq!(w.observe(3, 9_500.0)?, Observation::Repeat);
//! assert_eq!(w.totals().missing, 1);
//! let back = SeqWindow::from_bytes(&w.to_bytes())?;
//! assert_eq!(back, w);
//! # Ok::<(), reconnect_dedupe::Error>(())
//! ```

use crate::dedupe::bytes::{write_varint, Reader};
use crate::dedupe::dedup::check_time;
use crate::dedupe::error::{Error, Field};
use crate::dedupe::reading::MAX_SAFE_SEQ;
use crate::dedupe::seen::{MAX_COUNTER, MAX_TIME_MS};

/// W: the seqs the bitmap holds behind the highest (see the module docs for why 2048).
pub const WINDOW_SLOTS: i64 = 2048;
/// G: the open gap ranges listed at most; a further one drops the lowest.
pub const MAX_GAPS: usize = 64;
/// The first byte of [`SeqWindow::to_bytes`].
pub const FORMAT_VERSION: u8 = 1;

const WORDS: usize = WINDOW_SLOTS as usize / 64;

/// What one seq means to the window ([`SeqWindow::observe`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observation {
    /// Not seen before: above the highest (it advances the window, opening a gap if it
    /// skips seqs), or in the window in no listed gap (a fill).
    New,
    /// Seen already, in the window.
    Repeat,
    /// Closes a seq of a listed gap: a late arrival (a replayed buffer), `delay_ms`
    /// after the gap was noticed.
    Recovered { delay_ms: u64 },
    /// A counter that restarted (the reset rule of the module docs): the window starts
    /// over at `to`; `from` was the highest seq before.
    Reset { from: i64, to: i64 },
    /// Below the window, in no listed gap, and not a reset: too old to tell.
    TooOld,
}

/// Missing seqs `first ..= last`, noticed missing at `first_noticed_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gap {
    pub first: i64,
    pub last: i64,
    pub first_noticed_ms: i64,
}

impl Gap {
    /// How many seqs the gap holds (at least 1).
    pub fn len(&self) -> u64 {
        (self.last - self.first) as u64 + 1
    }

    /// Always false: a gap holds at least one seq (for clippy's `len_without_is_empty`).
    pub fn is_empty(&self) -> bool {
        false
    }

    fn contains(&self, seq: i64) -> bool {
        (self.first..=self.last).contains(&seq)
    }
}

/// The window's counts since it was created (a reset keeps them). Each but `missing`
/// stops at 2^53 − 1, so a JS number holds it exactly; `missing` is the listed gaps'
/// exact sum (beyond 2^53 only after a jump across most of the seq range).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeqTotals {
    /// Seqs in the listed gaps now.
    pub missing: u64,
    /// Seqs that closed a listed gap.
    pub recovered: u64,
    /// [`Observation::Repeat`]s.
    pub repeats: u64,
    /// [`Observation::Reset`]s.
    pub resets: u64,
    /// [`Observation::TooOld`]s.
    pub too_old: u64,
    /// Gap ranges dropped by the bound [`MAX_GAPS`] …
    pub gaps_dropped: u64,
    /// … and the seqs they still held.
    pub missing_dropped: u64,
    /// Seqs of the gaps a reset closed.
    pub closed_by_reset: u64,
}

/// One device's record of the seqs it has sent (the module docs give the rules).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeqWindow {
    /// The highest seq seen since the last reset; `None` before the first.
    highest: Option<i64>,
    /// A jump beyond the window not yet confirmed by the device (the reset rule):
    /// always above `highest + W`.
    jump: Option<i64>,
    /// Bit `seq mod W` for each seq of the window.
    bits: [u64; WORDS],
    /// Open gaps, ascending, disjoint and never adjacent; all below `highest`.
    gaps: Vec<Gap>,
    totals: SeqTotals,
}

impl Default for SeqWindow {
    fn default() -> Self {
        SeqWindow::new()
    }
}

fn bump(counter: &mut u64, by: u64) {
    *counter = counter.saturating_add(by).min(MAX_COUNTER);
}

/// The ring position of `seq`: its word and bit mask.
fn slot(seq: i64) -> (usize, u64) {
    let at = seq.rem_euclid(WINDOW_SLOTS) as usize;
    (at / 64, 1 << (at % 64))
}

impl SeqWindow {
    /// An empty window (no seq seen).
    pub fn new() -> SeqWindow {
        SeqWindow {
            highest: None,
            jump: None,
            bits: [0; WORDS],
            gaps: Vec::new(),
            totals: SeqTotals::default(),
        }
    }

    /// The highest seq seen since the last reset (a pending jump is not: see the
    /// module docs, the reset rule).
    pub fn highest(&self) -> Option<i64> {
        self.highest
    }

    /// A jump beyond the window that the device has not confirmed yet.
    pub fn pending_jump(&self) -> Option<i64> {
        self.jump
    }

    /// The open gaps, lowest first (read-only).
    pub fn gaps(&self) -> &[Gap] {
        &self.gaps
    }

    /// The counts (read-only).
    pub fn totals(&self) -> SeqTotals {
        self.totals
    }

    /// Whether `seq` is in the window and was seen (read-only; false below the window).
    pub fn contains(&self, seq: i64) -> bool {
        self.highest
            .is_some_and(|h| seq <= h && seq > h - WINDOW_SLOTS && self.bit(seq))
    }

    /// The bytes this window holds: the struct and the gap list's allocation.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<SeqWindow>() + self.gaps.capacity() * std::mem::size_of::<Gap>()
    }

    /// Records `seq`, seen at `at_ms`, and says what it was (see the module docs).
    ///
    /// # Errors
    /// [`Error::Invalid`] (`invalid_seq`) for a seq outside ±(2^53 − 1), the core's
    /// range; [`Error::InvalidTime`] unless `at_ms` is finite and within
    /// `0 ..= 8.64e15`. The window is unchanged then.
    pub fn observe(&mut self, seq: i64, at_ms: f64) -> Result<Observation, Error> {
        if seq.unsigned_abs() > MAX_SAFE_SEQ as u64 {
            return Err(Error::Invalid(Field::Seq, "is outside ±(2^53−1)"));
        }
        let at = check_time(at_ms)?;
        let Some(h) = self.highest else {
            self.restart(seq);
            return Ok(Observation::New);
        };
        if seq > h + WINDOW_SLOTS {
            return Ok(self.beyond(h, seq, at));
        }
        if seq > h {
            self.advance(h, seq, at);
            if self.jump.is_some_and(|j| j <= seq + WINDOW_SLOTS) {
                // The window reached the jump: it is a seq like any other now.
                self.jump = None;
            }
            return Ok(Observation::New);
        }
        let in_window = seq > h - WINDOW_SLOTS;
        if in_window && self.bit(seq) {
            bump(&mut self.totals.repeats, 1);
            return Ok(Observation::Repeat);
        }
        if let Ok(i) = self.find_gap(seq) {
            if in_window {
                self.mark(seq);
            }
            return Ok(self.recover(i, seq, at));
        }
        if in_window {
            self.mark(seq);
            return Ok(Observation::New);
        }
        if seq <= h - 2 * WINDOW_SLOTS || seq < WINDOW_SLOTS {
            return Ok(self.reset(h, seq));
        }
        bump(&mut self.totals.too_old, 1);
        Ok(Observation::TooOld)
    }

    /// A seq beyond the window (`seq > h + W`): a new jump, a repeat of the pending
    /// one, or the device going on from it (module docs, the reset rule).
    fn beyond(&mut self, h: i64, seq: i64, at: i64) -> Observation {
        let Some(j) = self.jump else {
            return self.jumped(h, seq);
        };
        if seq == j {
            bump(&mut self.totals.repeats, 1);
            return Observation::Repeat;
        }
        if seq < j || seq > j + WINDOW_SLOTS {
            // Below it (a long outage, a restart below the jump) or beyond it: another
            // jump in its place.
            return self.jumped(h, seq);
        }
        // Above it: the counter goes on from the jump. The reset it was reported as
        // happens now.
        self.close_by_reset();
        self.restart(j);
        self.advance(j, seq, at);
        Observation::New
    }

    /// Reports a jump from `h` to `seq` as a reset and keeps it pending: the window
    /// stays as it is until the device confirms the jump.
    fn jumped(&mut self, h: i64, seq: i64) -> Observation {
        self.jump = Some(seq);
        bump(&mut self.totals.resets, 1);
        Observation::Reset { from: h, to: seq }
    }

    fn bit(&self, seq: i64) -> bool {
        let (word, mask) = slot(seq);
        self.bits[word] & mask != 0
    }

    fn mark(&mut self, seq: i64) {
        let (word, mask) = slot(seq);
        self.bits[word] |= mask;
    }

    /// The reset rule's outcome: the open gaps closed as reset, the window started over
    /// at `seq`.
    fn reset(&mut self, h: i64, seq: i64) -> Observation {
        self.close_by_reset();
        bump(&mut self.totals.resets, 1);
        self.restart(seq);
        Observation::Reset { from: h, to: seq }
    }

    /// Counts the open gaps' seqs as closed by a reset (before a restart clears them).
    fn close_by_reset(&mut self) {
        let closed = self.totals.missing;
        bump(&mut self.totals.closed_by_reset, closed);
    }

    /// Starts over at `seq`: no bits but its own, no gaps, no pending jump.
    fn restart(&mut self, seq: i64) {
        self.jump = None;
        self.bits = [0; WORDS];
        self.gaps.clear();
        self.totals.missing = 0;
        self.highest = Some(seq);
        self.mark(seq);
    }

    /// Moves the highest from `h` to `seq > h`: clears the bits of the seqs it passes,
    /// lists the skipped ones as a gap.
    fn advance(&mut self, h: i64, seq: i64, at: i64) {
        let step = seq - h;
        if step >= WINDOW_SLOTS {
            self.bits = [0; WORDS];
        } else {
            // The ring positions of h + 1 ..= seq, word by word.
            let mut from = (h + 1).rem_euclid(WINDOW_SLOTS) as usize;
            let mut left = step as usize;
            while left > 0 {
                let bit = from % 64;
                let n = left.min(64 - bit);
                let mask = if n == 64 {
                    u64::MAX
                } else {
                    ((1u64 << n) - 1) << bit
                };
                self.bits[from / 64] &= !mask;
                left -= n;
                from = (from + n) % WINDOW_SLOTS as usize;
            }
        }
        self.mark(seq);
        self.highest = Some(seq);
        if step > 1 {
            self.make_room();
            self.gaps.push(Gap {
                first: h + 1,
                last: seq - 1,
                first_noticed_ms: at,
            });
            self.totals.missing += (step - 1) as u64;
        }
    }

    /// Drops the lowest gap when [`MAX_GAPS`] are listed, before one more is added (so
    /// the list's allocation never grows past G); says whether it did.
    fn make_room(&mut self) -> bool {
        if self.gaps.len() < MAX_GAPS {
            return false;
        }
        let dropped = self.gaps.remove(0);
        self.count_dropped(dropped.len());
        true
    }

    fn count_dropped(&mut self, seqs: u64) {
        self.totals.missing -= seqs;
        bump(&mut self.totals.gaps_dropped, 1);
        bump(&mut self.totals.missing_dropped, seqs);
    }

    /// The index of the listed gap holding `seq`, or where one would go.
    fn find_gap(&self, seq: i64) -> Result<usize, usize> {
        let i = self.gaps.partition_point(|g| g.last < seq);
        match self.gaps.get(i) {
            Some(g) if g.contains(seq) => Ok(i),
            _ => Err(i),
        }
    }

    /// Takes `seq` out of gap `i`: shrinks it, splits it or removes it.
    fn recover(&mut self, i: usize, seq: i64, at: i64) -> Observation {
        let g = self.gaps[i];
        match (seq == g.first, seq == g.last) {
            (true, true) => {
                self.gaps.remove(i);
            }
            (true, false) => self.gaps[i].first = seq + 1,
            (false, true) => self.gaps[i].last = seq - 1,
            // A split of the lowest of G gaps: its lower part is the range the bound
            // drops (the lowest of G + 1).
            (false, false) if i == 0 && self.gaps.len() == MAX_GAPS => {
                self.count_dropped((seq - g.first) as u64);
                self.gaps[0].first = seq + 1;
            }
            (false, false) => {
                let i = i - usize::from(self.make_room());
                self.gaps[i].last = seq - 1;
                self.gaps.insert(
                    i + 1,
                    Gap {
                        first: seq + 1,
                        ..g
                    },
                );
            }
        }
        self.totals.missing -= 1;
        bump(&mut self.totals.recovered, 1);
        Observation::Recovered {
            delay_ms: (at - g.first_noticed_ms).max(0) as u64,
        }
    }
}

// ---- bytes ----------------------------------------------------------------------

impl SeqWindow {
    /// The window as compact bytes, for the device's SQLite row.
    ///
    /// Format v1: the version byte [`FORMAT_VERSION`]; a flags byte (bit 0: a seq was
    /// seen; bit 1: a jump beyond the window is pending); and when a seq was seen: the
    /// highest seq (i64, little-endian), with bit 1 the pending jump's seq (i64,
    /// little-endian; a release before pending jumps refuses such bytes), a u32
    /// (little-endian) whose bit `i` says word `i` of the ring is non-zero, those words
    /// (u64 little-endian, in order), then as LEB128 varints the counters `recovered`,
    /// `repeats`, `resets`, `too_old`, `gaps_dropped`, `missing_dropped`,
    /// `closed_by_reset`, the number of gaps and per gap, lowest first, `highest − last`,
    /// `last − first` and `first_noticed_ms`. `missing` is the gaps' sum, not stored.
    /// An empty window is 2 bytes; a new device's 30; a device in order with every word
    /// in use 278, plus 5 to 13 per gap (docs/benchmarks.md, "Sequence window").
    pub fn to_bytes(&self) -> Vec<u8> {
        let flags = u8::from(self.highest.is_some()) | u8::from(self.jump.is_some()) << 1;
        let mut out = vec![FORMAT_VERSION, flags];
        let Some(h) = self.highest else {
            return out;
        };
        out.extend_from_slice(&h.to_le_bytes());
        if let Some(j) = self.jump {
            out.extend_from_slice(&j.to_le_bytes());
        }
        let used: u32 = (0..WORDS)
            .filter(|&i| self.bits[i] != 0)
            .fold(0, |m, i| m | 1 << i);
        out.extend_from_slice(&used.to_le_bytes());
        for word in self.bits.iter().filter(|&&w| w != 0) {
            out.extend_from_slice(&word.to_le_bytes());
        }
        let t = &self.totals;
        for v in [
            t.recovered,
            t.repeats,
            t.resets,
            t.too_old,
            t.gaps_dropped,
            t.missing_dropped,
            t.closed_by_reset,
            self.gaps.len() as u64,
        ] {
            write_varint(&mut out, v);
        }
        for g in &self.gaps {
            write_varint(&mut out, (h - g.last) as u64);
            write_varint(&mut out, (g.last - g.first) as u64);
            write_varint(&mut out, g.first_noticed_ms as u64);
        }
        out
    }

    /// Reads [`Self::to_bytes`]'s bytes back.
    ///
    /// # Errors
    /// [`Error::InvalidSnapshot`] (`invalid_snapshot`) for bytes that are truncated, of
    /// another version, with trailing bytes, or whose content breaks a rule of the
    /// window: unknown flags, a seq outside ±(2^53 − 1), the highest seq's bit unset, a
    /// zero word marked in use, a counter beyond 2^53 − 1, more than [`MAX_GAPS`] gaps,
    /// gaps out of order, adjacent, reaching the highest or below −(2^53 − 1), a gap's
    /// seq marked seen in the window, a time outside `0 ..= 8.64e15` ms, a varint that
    /// is not the shortest. The bitmap has no checksum: a flipped bit of a seq outside
    /// every gap reads as seen or unseen.
    pub fn from_bytes(bytes: &[u8]) -> Result<SeqWindow, Error> {
        let bad = Error::InvalidSnapshot;
        let mut r = Reader { buf: bytes, at: 0 };
        if r.u8()? != FORMAT_VERSION {
            return Err(bad("sequence window: unsupported version"));
        }
        let mut w = SeqWindow::new();
        let jumped = match r.u8()? {
            0 => return r.end().map(|()| w),
            1 => false,
            3 => true,
            _ => return Err(bad("sequence window: unknown flags")),
        };
        let h = i64::from_le_bytes(r.take()?);
        if h.unsigned_abs() > MAX_SAFE_SEQ as u64 {
            return Err(bad("sequence window: seq out of range"));
        }
        w.highest = Some(h);
        if jumped {
            let j = i64::from_le_bytes(r.take()?);
            if j > MAX_SAFE_SEQ || j <= h + WINDOW_SLOTS {
                return Err(bad("sequence window: a pending jump out of range"));
            }
            w.jump = Some(j);
        }
        let used = u32::from_le_bytes(r.take()?);
        for (i, word) in w.bits.iter_mut().enumerate() {
            if used & 1 << i != 0 {
                *word = r.u64()?;
                if *word == 0 {
                    return Err(bad("sequence window: a word in use is zero"));
                }
            }
        }
        if !w.bit(h) {
            return Err(bad("sequence window: the highest seq is not marked seen"));
        }
        let mut counter = || match r.varint()? {
            v if v <= MAX_COUNTER => Ok(v),
            _ => Err(bad("sequence window: a counter is beyond 2^53 − 1")),
        };
        w.totals = SeqTotals {
            missing: 0,
            recovered: counter()?,
            repeats: counter()?,
            resets: counter()?,
            too_old: counter()?,
            gaps_dropped: counter()?,
            missing_dropped: counter()?,
            closed_by_reset: counter()?,
        };
        let n = r.varint()?;
        if n > MAX_GAPS as u64 {
            return Err(bad("sequence window: too many gaps"));
        }
        let mut gaps = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let (below, span, noticed) = (r.varint()?, r.varint()?, r.varint()?);
            let last = (h as i128) - i128::from(below);
            let first = last - i128::from(span);
            if below == 0 || first < -(MAX_SAFE_SEQ as i128) || noticed as f64 > MAX_TIME_MS {
                return Err(bad("sequence window: a gap out of range"));
            }
            gaps.push(Gap {
                first: first as i64,
                last: last as i64,
                first_noticed_ms: noticed as i64,
            });
        }
        w.gaps = gaps;
        w.check_gaps()?;
        r.end()?;
        Ok(w)
    }

    /// The stored gaps' rules: ascending, never adjacent, below the highest, and no
    /// seq of theirs in the window marked seen; sets `missing`.
    fn check_gaps(&mut self) -> Result<(), Error> {
        let bad = Error::InvalidSnapshot;
        let h = self.highest.unwrap_or(0);
        for pair in self.gaps.windows(2) {
            if pair[0].last + 1 >= pair[1].first {
                return Err(bad("sequence window: gaps out of order or adjacent"));
            }
        }
        let mut missing = 0;
        for g in &self.gaps {
            let from = g.first.max(h - WINDOW_SLOTS + 1);
            if (from..=g.last).any(|s| self.bit(s)) {
                return Err(bad("sequence window: a missing seq is marked seen"));
            }
            missing += g.len();
        }
        self.totals.missing = missing;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
