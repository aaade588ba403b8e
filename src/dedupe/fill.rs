//! A bin's fill by device time: which admitted reading is its current state, which
//! arrived late, and when the bin was emptied (a collection). Readings come in the
//! order they were admitted; a sensor that reconnects replays readings older than ones
//! already admitted, so "the last reading received" is not the bin's state: a full bin
//! would drop back to its fill of hours ago, which looks exactly like a collection.
//!
//! # Newest or late
//! A reading whose `ts` is after the newest admitted one's is the **newest**: the bin's
//! current state. One before it is **late**, by how much ([`Arrival::Late`]). A tie
//! (the same `ts`) is not late: the later admission is the current state (a coarse
//! device clock gives two real readings one `ts`; with the same `seq` too, the seen-set
//! reports them as a conflict); the newest reading itself admitted again (its
//! key expired from the seen-set) changes nothing. A reading without a device time has
//! the receive time as its `ts` (the plan's rule), so the same rule holds for it. The
//! state only moves forwards: a late reading never changes it.
//!
//! # Collections
//! Only the newest readings count, so a late reading never makes or unmakes a
//! collection and a replay cannot fake one. A fall of more than `threshold` percentage
//! points from one newest reading to the next is a suspected collection; the next
//! newest reading decides it:
//! * still more than `threshold` below the level before the fall: a **collection**,
//!   from the last reading before the fall to the first after it ([`Collection`]);
//! * otherwise a **glitch** (a single low reading between two high ones: a bag, a
//!   bird, a reflection), and nothing is reported.
//!
//! So a collection is reported one reading after the fall. Until then
//! [`FillTracker::suspected`] says a fall awaits its confirmation.
//!
//! # The reporting period seen
//! The median of the last [`INTERVALS`] intervals between consecutive newest readings
//! (a device offline for hours makes one long interval, which the median ignores).

use crate::dedupe::bytes::Reader;
use crate::dedupe::error::Error;
use crate::dedupe::timestamp::{Micros, MAX_MICROS, MIN_MICROS};

/// The intervals between newest readings the period seen is the median of.
pub const INTERVALS: usize = 7;

/// The version of [`FillTracker::to_bytes`]'s format.
pub const FORMAT_VERSION: u8 = 1;

/// The longest key a sample keeps (a key is at most ~170 bytes: a device id of 128,
/// a seq, a digest of 16 hex digits).
const MAX_KEY_BYTES: usize = 512;

/// One admitted reading as the tracker sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Its device time (or receive time), in microseconds since the epoch.
    pub ts: Micros,
    pub fill_pct: f64,
    /// Its key, to name it in the state and in a collection.
    pub key: String,
}

/// Where an admitted reading stands against the ones admitted before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// After the newest one (or the first, or a tie): the bin's current state.
    Newest,
    /// Before the newest one, by `behind_us` microseconds (> 0).
    Late { behind_us: Micros },
}

/// A confirmed collection: the bin's fill fell by more than the threshold between
/// `before` and `after` (consecutive newest readings) and stayed down at the next.
#[derive(Debug, Clone, PartialEq)]
pub struct Collection {
    /// The last reading before the fall.
    pub before: Sample,
    /// The first reading after it.
    pub after: Sample,
}

/// What the tracker made of one admitted reading.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    pub arrival: Arrival,
    /// A collection this reading confirmed, if any.
    pub collection: Option<Collection>,
    /// Whether this reading showed a suspected collection to be a glitch.
    pub glitch: bool,
}

/// One bin's state by device time (the module docs give the rules).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FillTracker {
    newest: Option<Sample>,
    previous: Option<Sample>,
    /// A fall awaiting its confirmation: the reading before it (the newest's
    /// predecessor then); the newest is the reading after it.
    suspect: Option<Sample>,
    /// The last intervals between consecutive newest readings, oldest first.
    intervals: Vec<Micros>,
}

/// Whether the fill fell by more than `threshold` points from `from` to `to`. Fills are
/// percentages of a few decimals, whose difference in binary floating point may land a
/// hair above the threshold (30.3 − 30 > 0.3): a fall within `1e-9` of it is the
/// threshold, not more.
fn falls(from: &Sample, to: &Sample, threshold: f64) -> bool {
    from.fill_pct - to.fill_pct - threshold > 1e-9
}

impl FillTracker {
    pub fn new() -> FillTracker {
        FillTracker::default()
    }

    /// Takes one admitted reading, in admission order; `threshold` is the fall in
    /// percentage points that makes a suspected collection (> 0).
    pub fn observe(&mut self, sample: Sample, threshold: f64) -> Observed {
        let Some(newest) = &self.newest else {
            self.newest = Some(sample);
            return Observed {
                arrival: Arrival::Newest,
                collection: None,
                glitch: false,
            };
        };
        if sample.key == newest.key {
            // The newest reading admitted again (its key expired from the seen-set): it
            // is the state already.
            return Observed {
                arrival: Arrival::Newest,
                collection: None,
                glitch: false,
            };
        }
        if sample.ts < newest.ts {
            return Observed {
                arrival: Arrival::Late {
                    behind_us: newest.ts - sample.ts,
                },
                collection: None,
                glitch: false,
            };
        }
        let (mut collection, mut glitch) = (None, false);
        if let Some(before) = self.suspect.take() {
            if falls(&before, &sample, threshold) {
                collection = Some(Collection {
                    before,
                    after: newest.clone(),
                });
            } else {
                glitch = true;
            }
        } else if falls(newest, &sample, threshold) {
            self.suspect = Some(newest.clone());
        }
        if sample.ts > newest.ts {
            if self.intervals.len() == INTERVALS {
                self.intervals.remove(0);
            }
            self.intervals.push(sample.ts - newest.ts);
        }
        self.previous = self.newest.replace(sample);
        Observed {
            arrival: Arrival::Newest,
            collection,
            glitch,
        }
    }

    /// The bin's current state: its newest reading.
    pub fn newest(&self) -> Option<&Sample> {
        self.newest.as_ref()
    }

    /// The newest reading before the current one.
    pub fn previous(&self) -> Option<&Sample> {
        self.previous.as_ref()
    }

    /// The reading before a fall that awaits its confirmation (the newest is the one
    /// after it), or `None`.
    pub fn suspected(&self) -> Option<&Sample> {
        self.suspect.as_ref()
    }

    /// The tracker as compact versioned bytes, for a checkpoint. Format v1:
    /// [`FORMAT_VERSION`]; a flags byte (bit 0 newest, bit 1 previous, bit 2 suspect);
    /// each sample present, in that order, as its `ts` (i64 LE), `fill_pct` (f64 LE)
    /// and key (u16 LE length, UTF-8); the intervals' count (a byte) and each (i64 LE).
    pub fn to_bytes(&self) -> Vec<u8> {
        let samples = [&self.newest, &self.previous, &self.suspect];
        let flags = samples
            .iter()
            .enumerate()
            .fold(0u8, |f, (i, s)| f | u8::from(s.is_some()) << i);
        let mut out = vec![FORMAT_VERSION, flags];
        for s in samples.into_iter().flatten() {
            out.extend_from_slice(&s.ts.to_le_bytes());
            out.extend_from_slice(&s.fill_pct.to_le_bytes());
            // A key longer than a u16 is never admitted (MAX_KEY_BYTES): cut, not wrapped.
            let key = &s.key.as_bytes()[..s.key.len().min(MAX_KEY_BYTES)];
            out.extend_from_slice(&(key.len() as u16).to_le_bytes());
            out.extend_from_slice(key);
        }
        out.push(self.intervals.len() as u8);
        for i in &self.intervals {
            out.extend_from_slice(&i.to_le_bytes());
        }
        out
    }

    /// Reads [`FillTracker::to_bytes`]'s bytes back.
    ///
    /// # Errors
    /// [`Error::InvalidSnapshot`] for bytes truncated, of another version, or breaking
    /// a rule of the tracker (a time out of range, a fill outside 0–100, a previous
    /// reading after the newest, a suspect without a newest, an interval not positive,
    /// more than [`INTERVALS`] of them).
    pub fn from_bytes(bytes: &[u8]) -> Result<FillTracker, Error> {
        let bad = Error::InvalidSnapshot;
        let mut r = Reader { buf: bytes, at: 0 };
        if r.u8()? != FORMAT_VERSION {
            return Err(bad("fill tracker: unsupported version"));
        }
        let flags = r.u8()?;
        if flags > 0b111 || (flags & 0b001 == 0 && flags != 0) {
            return Err(bad("fill tracker: unknown flags"));
        }
        let mut sample = |present: bool| -> Result<Option<Sample>, Error> {
            if !present {
                return Ok(None);
            }
            let ts = i64::from_le_bytes(r.take()?);
            let fill_pct = f64::from_le_bytes(r.take()?);
            let len = usize::from(r.u16()?);
            let key = r
                .buf
                .get(r.at..r.at + len)
                .ok_or(bad("truncated"))
                .and_then(|k| {
                    std::str::from_utf8(k).map_err(|_| bad("fill tracker: a key not UTF-8"))
                })?
                .to_owned();
            r.at += len;
            if !(MIN_MICROS..=MAX_MICROS).contains(&ts)
                || !(0.0..=100.0).contains(&fill_pct)
                || len > MAX_KEY_BYTES
            {
                return Err(bad("fill tracker: a sample out of range"));
            }
            Ok(Some(Sample { ts, fill_pct, key }))
        };
        let newest = sample(flags & 0b001 != 0)?;
        let previous = sample(flags & 0b010 != 0)?;
        let suspect = sample(flags & 0b100 != 0)?;
        let count = usize::from(r.u8()?);
        if count > INTERVALS {
            return Err(bad("fill tracker: too many intervals"));
        }
        let mut intervals = Vec::with_capacity(count);
        for _ in 0..count {
            let i = i64::from_le_bytes(r.take()?);
            if i <= 0 {
                return Err(bad("fill tracker: an interval not positive"));
            }
            intervals.push(i);
        }
        r.end()?;
        if let (Some(n), Some(p)) = (&newest, &previous) {
            if p.ts > n.ts {
                return Err(bad("fill tracker: the previous reading after the newest"));
            }
        }
        Ok(FillTracker {
            newest,
            previous,
            suspect,
            intervals,
        })
    }

    /// The reporting period seen: the median interval between the last newest
    /// readings (the lower of the two middle ones for an even count), or `None`
    /// before two of them.
    pub fn period_us(&self) -> Option<Micros> {
        // The k-th smallest of at most INTERVALS values, found by counting: a sort
        // would add ~3 KB of Wasm for seven numbers.
        let k = self.intervals.len().checked_sub(1)? / 2;
        let below = |x: Micros, strict: bool| {
            self.intervals
                .iter()
                .filter(|&&y| if strict { y < x } else { y <= x })
                .count()
        };
        self.intervals
            .iter()
            .copied()
            .find(|&x| below(x, true) <= k && k < below(x, false))
    }
}

#[cfg(test)]
mod tests {
    use super::{Arrival, FillTracker, Sample, INTERVALS};
    use crate::dedupe::timestamp::Micros;

    const MIN: Micros = 60_000_000;
    const THRESHOLD: f64 = 30.0;

    fn at(minute: i64, fill_pct: f64) -> Sample {
        Sample {
            ts: minute * MIN,
            fill_pct,
            key: format!("bin:{minute}:{fill_pct}"),
        }
    }

    /// Observes `samples` in order: each one's arrival, and the collections as
    /// (before, after) minutes.
    fn run(t: &mut FillTracker, samples: &[Sample]) -> (Vec<Arrival>, Vec<(i64, i64)>) {
        let mut arrivals = vec![];
        let mut collections = vec![];
        for s in samples {
            let o = t.observe(s.clone(), THRESHOLD);
            arrivals.push(o.arrival);
            if let Some(c) = o.collection {
                collections.push((c.before.ts / MIN, c.after.ts / MIN));
            }
        }
        (arrivals, collections)
    }

    #[test]
    fn a_late_reading_is_marked_by_how_much_and_never_moves_the_state_back() {
        let mut t = FillTracker::new();
        let (arrivals, _) = run(&mut t, &[at(0, 10.0), at(20, 30.0), at(10, 20.0)]);
        assert_eq!(
            arrivals,
            [
                Arrival::Newest,
                Arrival::Newest,
                Arrival::Late {
                    behind_us: 10 * MIN
                }
            ]
        );
        assert_eq!(t.newest(), Some(&at(20, 30.0)));
        assert_eq!(t.previous(), Some(&at(0, 10.0)));
        // A tie is not late: the later admission is the state.
        let (arrivals, _) = run(&mut t, &[at(20, 31.0)]);
        assert_eq!(arrivals, [Arrival::Newest]);
        assert_eq!(t.newest(), Some(&at(20, 31.0)));
    }

    #[test]
    fn the_newest_reading_admitted_again_changes_nothing() {
        // Its key expired from the seen-set and a replay brought it back: the same
        // reading, not a new state (nor its own predecessor, nor an interval of 0).
        let mut t = FillTracker::new();
        run(&mut t, &[at(0, 80.0), at(10, 20.0)]);
        let before = t.clone();
        let o = t.observe(at(10, 20.0), THRESHOLD);
        assert_eq!(
            (o.arrival, o.collection, o.glitch),
            (Arrival::Newest, None, false)
        );
        assert_eq!(t, before);
        // The fall still awaits its confirmation by the next reading.
        let (_, collections) = run(&mut t, &[at(20, 21.0)]);
        assert_eq!(collections, [(0, 10)]);
    }

    #[test]
    fn a_replay_after_an_outage_neither_moves_the_state_back_nor_makes_a_collection() {
        // A day of filling, 6 h offline, the buffer replayed twice out of order
        // (the seen-set suppresses the second copy; the tracker sees admissions only,
        // so the second pass is the late readings' own test), then emptied.
        let mut t = FillTracker::new();
        let filling: Vec<Sample> = (0..=24).map(|h| at(h * 60, 2.0 + 3.0 * h as f64)).collect();
        run(&mut t, &filling[..=18]);
        let mut replay: Vec<Sample> = filling[19..].to_vec();
        replay.reverse();
        let (arrivals, collections) = run(&mut t, &replay);
        assert_eq!(arrivals[0], Arrival::Newest);
        assert!(arrivals[1..]
            .iter()
            .all(|a| matches!(a, Arrival::Late { .. })));
        assert!(collections.is_empty());
        assert_eq!(t.newest(), Some(&filling[24]));
        // Emptied at 25:00, the next reading low too: one collection, at the right time.
        let (_, collections) = run(&mut t, &[at(25 * 60, 3.0), at(26 * 60, 5.0)]);
        assert_eq!(collections, [(24 * 60, 25 * 60)]);
    }

    #[test]
    fn a_single_low_reading_between_two_high_ones_is_a_glitch_not_a_collection() {
        let mut t = FillTracker::new();
        run(&mut t, &[at(0, 80.0), at(10, 5.0)]);
        assert_eq!(t.suspected(), Some(&at(0, 80.0)));
        let o = t.observe(at(20, 79.0), THRESHOLD);
        assert!(o.glitch && o.collection.is_none());
        assert_eq!(t.suspected(), None);
        // A fall of exactly the threshold is not one.
        let (_, collections) = run(&mut t, &[at(30, 49.0), at(40, 48.0)]);
        assert!(collections.is_empty());
        // Nor where the difference of two decimal fills rounds above it (30.3 − 0.3 is
        // 30.000000000000004 in binary floating point).
        let mut t = FillTracker::new();
        run(&mut t, &[at(0, 30.3), at(10, 0.3)]);
        assert_eq!(t.suspected(), None);
        let mut t = FillTracker::new();
        let (_, collections) = run(&mut t, &[at(0, 30.3), at(10, 0.1), at(20, 0.3)]);
        assert!(collections.is_empty() && t.suspected().is_none());
    }

    #[test]
    fn a_late_low_reading_cannot_fake_a_collection_nor_confirm_one() {
        let mut t = FillTracker::new();
        run(&mut t, &[at(0, 20.0), at(10, 90.0), at(20, 91.0)]);
        // The bin's fill of minute 5, replayed: late, and no fall.
        let (_, collections) = run(&mut t, &[at(5, 21.0), at(6, 22.0)]);
        assert!(collections.is_empty());
        assert_eq!(t.suspected(), None);
        // A real fall, then a late low reading: still a suspect, not yet confirmed.
        run(&mut t, &[at(30, 10.0), at(15, 9.0)]);
        assert_eq!(t.suspected(), Some(&at(20, 91.0)));
        let (_, collections) = run(&mut t, &[at(40, 11.0)]);
        assert_eq!(collections, [(20, 30)]);
    }

    /// Seeded random bins: readings by device time, some arriving late (a replay
    /// shuffles a stretch), fills rising with falls and single glitches. Held against
    /// the rules computed naively from the whole history after every admission.
    #[test]
    fn random_histories_match_the_rules_computed_from_the_whole_history() {
        // What the histories held, so that the test is known to reach each rule.
        let (mut lates, mut collections, mut glitches) = (0, 0, 0);
        for seed in 0..200 {
            let mut rng = fastrand::Rng::with_seed(seed);
            let mut fill = 0.0;
            let mut series: Vec<Sample> = (0..40)
                .map(|minute| {
                    // Emptied, a glitch (one low reading; the bin's fill goes on), or filling.
                    let value = match rng.u32(..10) {
                        0 => {
                            fill = rng.f64() * 10.0;
                            fill
                        }
                        1 => fill * 0.1,
                        _ => {
                            fill = (fill + rng.f64() * 8.0).min(100.0);
                            fill
                        }
                    };
                    Sample {
                        ts: minute * MIN + rng.i64(0..3) * MIN / 2,
                        fill_pct: value,
                        key: format!("{seed}:{minute}"),
                    }
                })
                .collect();
            // A replay: one stretch arrives after the rest, in reverse.
            let from = rng.usize(..series.len());
            let to = rng.usize(from..series.len());
            series[from..=to].reverse();
            let mut t = FillTracker::new();
            let (mut newest_stream, mut seen): (Vec<Sample>, Vec<Sample>) = (vec![], vec![]);
            let mut reported = vec![];
            for s in &series {
                let o = t.observe(s.clone(), THRESHOLD);
                let max = seen.iter().map(|x| x.ts).max();
                match (max, o.arrival) {
                    (Some(m), Arrival::Late { behind_us }) => {
                        assert_eq!((m - s.ts, s.ts < m), (behind_us, true), "seed {seed}")
                    }
                    (Some(m), Arrival::Newest) => assert!(s.ts >= m, "seed {seed}"),
                    (None, a) => assert_eq!(a, Arrival::Newest),
                }
                seen.push(s.clone());
                if o.arrival == Arrival::Newest {
                    newest_stream.push(s.clone());
                }
                // The state: the last admitted of the readings with the latest ts.
                let latest = seen.iter().map(|x| x.ts).max().unwrap();
                assert_eq!(
                    t.newest(),
                    seen.iter().rev().find(|x| x.ts == latest),
                    "seed {seed}"
                );
                lates += usize::from(o.arrival != Arrival::Newest);
                glitches += usize::from(o.glitch);
                if let Some(c) = o.collection {
                    reported.push((c.before.key, c.after.key));
                }
            }
            // Collections, naively: a fall over the threshold between consecutive
            // newest readings, the next one still below the level before it by more
            // than the threshold; a fall decided (either way) is not a "before" again.
            let mut naive = vec![];
            let mut i = 1;
            while i + 1 < newest_stream.len() {
                let (a, b, c) = (
                    &newest_stream[i - 1],
                    &newest_stream[i],
                    &newest_stream[i + 1],
                );
                if b.fill_pct < a.fill_pct - THRESHOLD {
                    if c.fill_pct < a.fill_pct - THRESHOLD {
                        naive.push((a.key.clone(), b.key.clone()));
                    }
                    i += 2;
                } else {
                    i += 1;
                }
            }
            assert_eq!(reported, naive, "seed {seed}");
            collections += reported.len();
        }
        assert!(
            lates > 500 && collections > 100 && glitches > 100,
            "{lates} {collections} {glitches}"
        );
    }

    #[test]
    fn the_bytes_round_trip_and_what_is_not_a_tracker_is_refused() {
        let mut t = FillTracker::new();
        assert_eq!(FillTracker::from_bytes(&t.to_bytes()), Ok(t.clone()));
        run(&mut t, &[at(0, 80.0), at(10, 81.5), at(20, 5.0)]);
        assert!(t.suspected().is_some());
        let bytes = t.to_bytes();
        let back = FillTracker::from_bytes(&bytes).unwrap();
        assert_eq!(back, t);
        // The copy goes on as the original does: the fall confirmed by the next reading.
        let (mut a, mut b) = (t, back);
        assert_eq!(
            a.observe(at(30, 6.0), THRESHOLD),
            b.observe(at(30, 6.0), THRESHOLD)
        );
        // Every truncation, another version, trailing bytes, a flipped flag: refused, never a panic.
        for n in 0..bytes.len() {
            assert!(FillTracker::from_bytes(&bytes[..n]).is_err(), "{n}");
        }
        let mut other = bytes.clone();
        other[0] = 2;
        let mut trailing = bytes.clone();
        trailing.push(0);
        let mut no_newest = bytes.clone();
        no_newest[1] &= !1;
        for bad in [other, trailing, no_newest] {
            assert_eq!(
                FillTracker::from_bytes(&bad).unwrap_err().code(),
                "invalid_snapshot"
            );
        }
        // A fill outside 0–100 (the first sample's fill_pct, after version, flags and ts).
        let mut fill = bytes;
        fill[10..18].copy_from_slice(&101.0f64.to_le_bytes());
        assert!(FillTracker::from_bytes(&fill).is_err());
    }

    #[test]
    fn the_period_seen_is_the_median_interval_and_ignores_one_long_outage() {
        let mut t = FillTracker::new();
        assert_eq!(t.period_us(), None);
        run(&mut t, &[at(0, 1.0)]);
        assert_eq!(t.period_us(), None);
        let mut minute = 0;
        for step in [10, 10, 360, 10, 11, 10, 9, 10] {
            minute += step;
            run(&mut t, &[at(minute, 1.0)]);
        }
        assert_eq!(t.intervals.len(), INTERVALS);
        assert_eq!(t.period_us(), Some(10 * MIN));
        // An even count: the lower middle one.
        let mut two = FillTracker::new();
        run(&mut two, &[at(0, 1.0), at(30, 1.0), at(40, 1.0)]);
        assert_eq!(two.period_us(), Some(10 * MIN));
    }
}
