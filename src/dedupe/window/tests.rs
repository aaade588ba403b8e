//! Sequence-window tests: each observation and its boundary, the reset rule, the gap
//! bound, bytes and corrupt bytes, and seeded random seqs checked against a model
//! (a `BTreeSet` of seen seqs and a map of the missing ones) after every step.

use super::*;
use std::collections::{BTreeMap, BTreeSet};

const W: i64 = WINDOW_SLOTS;
const T0: f64 = 1_784_192_400_000.0; // 2026-07-16T09:00:00Z

impl SeqWindow {
    /// Panics if an invariant is broken; run after every step below.
    fn validate(&self) {
        let Some(h) = self.highest else {
            assert_eq!(self.bits, [0; WORDS], "bits without a seq");
            assert!(self.gaps.is_empty(), "gaps without a seq");
            assert_eq!(self.totals.missing, 0);
            return;
        };
        assert!(h.unsigned_abs() <= MAX_SAFE_SEQ as u64);
        assert!(self.bit(h), "the highest seq is not marked");
        if let Some(j) = self.jump {
            assert!(
                j <= MAX_SAFE_SEQ && j > h + W,
                "a pending jump out of range"
            );
        }
        assert!(self.gaps.len() <= MAX_GAPS, "gap list over its bound");
        let mut missing = 0;
        for (i, g) in self.gaps.iter().enumerate() {
            assert!(g.first <= g.last && g.last < h, "gap out of range: {g:?}");
            if let Some(next) = self.gaps.get(i + 1) {
                assert!(g.last + 1 < next.first, "gaps out of order or adjacent");
            }
            for s in g.first.max(h - W + 1)..=g.last {
                assert!(!self.bit(s), "missing seq {s} marked seen");
            }
            missing += g.len();
        }
        assert_eq!(self.totals.missing, missing, "missing is not the gaps' sum");
        let back = SeqWindow::from_bytes(&self.to_bytes()).expect("own bytes read back");
        assert_eq!(&back, self, "bytes do not round-trip");
        assert_eq!(back.to_bytes(), self.to_bytes(), "bytes not canonical");
    }
}

fn obs(w: &mut SeqWindow, seq: i64, at: f64) -> Observation {
    let o = w.observe(seq, at).unwrap();
    w.validate();
    o
}

/// A window that has seen `seqs` in order at T0.
fn seen(seqs: impl IntoIterator<Item = i64>) -> SeqWindow {
    let mut w = SeqWindow::new();
    for s in seqs {
        obs(&mut w, s, T0);
    }
    w
}

/// The delay of a late arrival, `None` for any other observation.
fn delay(w: &mut SeqWindow, seq: i64, at: f64) -> Option<u64> {
    match obs(w, seq, at) {
        Observation::Recovered { delay_ms } => Some(delay_ms),
        _ => None,
    }
}

fn gap(first: i64, last: i64, at: f64) -> Gap {
    Gap {
        first,
        last,
        first_noticed_ms: at as i64,
    }
}

#[test]
fn in_order_is_new_then_repeat_and_opens_no_gap() {
    let mut w = SeqWindow::new();
    assert_eq!(w.highest(), None);
    assert!(!w.contains(0));
    for s in 0..5000 {
        assert_eq!(obs(&mut w, s, T0 + s as f64), Observation::New, "{s}");
    }
    assert_eq!(w.highest(), Some(4999));
    assert!(w.gaps().is_empty());
    // Repeats across the window, to its low edge exactly.
    assert_eq!(obs(&mut w, 4999, T0), Observation::Repeat);
    assert_eq!(obs(&mut w, 4999 - W + 1, T0), Observation::Repeat);
    assert!(w.contains(4999 - W + 1));
    assert!(!w.contains(4999 - W)); // below the window: not known
    assert_eq!(
        w.totals(),
        SeqTotals {
            repeats: 2,
            ..SeqTotals::default()
        }
    );
}

#[test]
fn the_first_seq_is_new_wherever_it_is_and_seqs_below_it_fill() {
    let mut w = seen([1_000_000]);
    // Below the first seq but in the window: sent before the window existed.
    assert_eq!(obs(&mut w, 999_999, T0), Observation::New);
    assert_eq!(obs(&mut w, 1_000_000 - W + 1, T0), Observation::New);
    assert!(w.gaps().is_empty());
    let mut neg = seen([-MAX_SAFE_SEQ]);
    assert_eq!(obs(&mut neg, -MAX_SAFE_SEQ + 2, T0), Observation::New);
    assert_eq!(neg.gaps(), &[gap(-MAX_SAFE_SEQ + 1, -MAX_SAFE_SEQ + 1, T0)]);
}

#[test]
fn a_gap_is_noticed_then_recovered_with_its_delay() {
    let mut w = seen(1..=10);
    assert_eq!(obs(&mut w, 16, T0 + 1_000.0), Observation::New);
    assert_eq!(w.gaps(), &[gap(11, 15, T0 + 1_000.0)]);
    assert_eq!(w.totals().missing, 5);
    // The middle: the gap splits, both parts keep when they were noticed.
    assert_eq!(delay(&mut w, 13, T0 + 61_000.0), Some(60_000));
    assert_eq!(
        w.gaps(),
        &[gap(11, 12, T0 + 1_000.0), gap(14, 15, T0 + 1_000.0)]
    );
    // Its ends: the parts shrink, then go.
    assert_eq!(delay(&mut w, 11, T0 + 2_000.0), Some(1_000));
    assert_eq!(delay(&mut w, 15, T0 + 2_000.0), Some(1_000));
    assert_eq!(
        w.gaps(),
        &[gap(12, 12, T0 + 1_000.0), gap(14, 14, T0 + 1_000.0)]
    );
    assert_eq!(delay(&mut w, 12, T0 + 3_000.0), Some(2_000));
    assert_eq!(obs(&mut w, 13, T0 + 3_000.0), Observation::Repeat);
    // A clock that went back gives a delay of 0, never a negative one.
    assert_eq!(delay(&mut w, 14, T0), Some(0));
    assert!(w.gaps().is_empty());
    let t = w.totals();
    assert_eq!((t.missing, t.recovered, t.repeats), (0, 5, 1));
    // The next step of one opens nothing.
    assert_eq!(obs(&mut w, 17, T0), Observation::New);
    assert!(w.gaps().is_empty());
}

#[test]
fn a_gap_below_the_window_is_still_recovered() {
    // A gap that the window has moved past is exact in the list.
    let mut w = seen([0, 10]);
    for s in 11..=10 + W + 100 {
        obs(&mut w, s, T0);
    }
    assert!(!w.contains(5));
    assert_eq!(
        obs(&mut w, 5, T0 + 500.0),
        Observation::Recovered { delay_ms: 500 }
    );
    assert_eq!(w.gaps(), &[gap(1, 4, T0), gap(6, 9, T0)]);
    // Still not marked in the bitmap: below the window nothing is.
    assert!(!w.contains(5));
    // Not a repeat either: below the window a seen seq is too old to tell (5 is
    // small, so it would read as a reset; 4 is in the gap).
    assert_eq!(obs(&mut w, 4, T0), Observation::Recovered { delay_ms: 0 });
}

#[test]
fn a_forward_jump_within_the_window_is_one_gap_and_clears_the_bitmap() {
    let mut w = seen(0..100);
    let far = 99 + W;
    assert_eq!(obs(&mut w, far, T0 + 5.0), Observation::New);
    assert_eq!(w.gaps(), &[gap(100, far - 1, T0 + 5.0)]);
    assert_eq!(w.totals().missing, (far - 100) as u64);
    // Nothing of the old window survives as seen: the ring slots of 0 .. 99 now stand
    // for seqs of the jump, all unseen.
    for s in far - W + 1..far {
        assert!(!w.contains(s), "{s}");
    }
    assert_eq!(
        obs(&mut w, far - 1, T0 + 10.0),
        Observation::Recovered { delay_ms: 5 }
    );
    // A jump of exactly W and of W − 1: the bitmap is cleared word by word, exactly.
    for step in [W - 1, W] {
        let mut w = seen(0..W);
        obs(&mut w, W - 1 + step, T0);
        for s in W.max(step)..W - 1 + step {
            assert!(!w.contains(s), "step {step}, seq {s}");
        }
        assert_eq!(w.gaps(), &[gap(W, W - 2 + step, T0)]);
    }
}

#[test]
fn a_forward_jump_beyond_the_window_is_a_reset_not_a_gap() {
    // One step further than the window: the window starts over there, nothing missing.
    let mut w = seen(0..100);
    assert_eq!(
        obs(&mut w, 99 + W + 1, T0),
        Observation::Reset {
            from: 99,
            to: 99 + W + 1
        }
    );
    assert!(w.gaps().is_empty());
    assert_eq!((w.totals().missing, w.totals().resets), (0, 1));
    // The window moves once the device goes on from the jump; the gaps open before it
    // are closed then, as a reset closes them, and not before.
    let mut w = seen([1, 5]);
    obs(&mut w, 5 + 10 * W, T0);
    assert_eq!((w.highest(), w.pending_jump()), (Some(5), Some(5 + 10 * W)));
    assert_eq!((w.totals().missing, w.totals().closed_by_reset), (3, 0));
    assert_eq!(obs(&mut w, 5 + 10 * W + 1, T0), Observation::New);
    assert_eq!(
        (w.highest(), w.pending_jump()),
        (Some(5 + 10 * W + 1), None)
    );
    let t = w.totals();
    assert_eq!((t.missing, t.closed_by_reset, t.resets), (0, 3, 1));
    assert!(w.gaps().is_empty());
}

#[test]
fn one_outlier_seq_leaves_nothing_missing_and_nothing_recovered() {
    // Seqs 1–5, then 4 294 967 295 (a corrupted seq), then 6–10: before, 4 294 967 284
    // missing, a gap ratio of 1, and 6–10 counted as late arrivals. The outlier is
    // reported as a reset; the window waits for the device to go on from it.
    let mut w = seen(1..=5);
    assert_eq!(
        obs(&mut w, 4_294_967_295, T0),
        Observation::Reset {
            from: 5,
            to: 4_294_967_295
        }
    );
    for s in 6..=10 {
        assert_eq!(obs(&mut w, s, T0), Observation::New, "{s}");
    }
    let t = w.totals();
    assert_eq!((t.missing, t.recovered, t.resets), (0, 0, 1));
    assert!(w.gaps().is_empty());
    assert_eq!(w.highest(), Some(10));
}

#[test]
fn after_an_outlier_the_window_goes_on_as_if_it_had_not_come() {
    // Seqs 10 000–10 005, then 13 100 (a corrupted seq, between W and 2W beyond), then
    // the device goes on at 10 006: before, up to W of the seqs after the outlier were
    // too old (below its window, above its reset zone).
    let mut w = seen(10_000..=10_005);
    let outlier = 10_005 + W + 1_047;
    assert_eq!(
        obs(&mut w, outlier, T0),
        Observation::Reset {
            from: 10_005,
            to: outlier
        }
    );
    // The network server's second delivery of the outlier is a repeat.
    assert_eq!(obs(&mut w, outlier, T0), Observation::Repeat);
    for s in 10_006..=10_020 {
        assert_eq!(obs(&mut w, s, T0), Observation::New, "{s}");
    }
    let t = w.totals();
    assert_eq!((t.missing, t.too_old, t.resets), (0, 0, 1));
    // A replay of a seq seen before the outlier is a repeat, and opens no gap.
    let mut w = seen(1..=10);
    obs(&mut w, 4_294_967_295, T0);
    assert_eq!(obs(&mut w, 9, T0), Observation::Repeat);
    assert_eq!(obs(&mut w, 11, T0), Observation::New);
    assert_eq!(obs(&mut w, 10, T0), Observation::Repeat);
    assert_eq!((w.totals().missing, w.totals().recovered), (0, 0));
    // The gaps open before the outlier stay open: their late arrivals are recovered.
    let mut w = seen([1, 2, 3, 4, 5, 8, 9, 10]);
    obs(&mut w, 4_294_967_295, T0);
    assert_eq!(obs(&mut w, 11, T0), Observation::New);
    assert!(delay(&mut w, 6, T0 + 5.0).is_some());
    assert!(delay(&mut w, 7, T0 + 5.0).is_some());
    let t = w.totals();
    assert_eq!((t.missing, t.recovered, t.closed_by_reset), (0, 2, 0));
    // Two outliers in a row: the second takes the first's place; the device goes on.
    let mut w = seen(10_000..=10_005);
    obs(&mut w, 10_005 + W + 1, T0);
    assert_eq!(
        obs(&mut w, 10_005 + 3 * W, T0),
        Observation::Reset {
            from: 10_005,
            to: 10_005 + 3 * W
        }
    );
    assert_eq!(obs(&mut w, 10_006, T0), Observation::New);
    assert_eq!(w.pending_jump(), Some(10_005 + 3 * W));
    // The window reaching within W of a pending jump drops it.
    let mut w = seen([0]);
    obs(&mut w, 3 * W, T0);
    obs(&mut w, W, T0);
    assert_eq!(w.pending_jump(), Some(3 * W));
    obs(&mut w, 2 * W, T0);
    assert_eq!(w.pending_jump(), None);
    assert_eq!(obs(&mut w, 3 * W, T0), Observation::New);
}

#[test]
fn a_counter_that_restarted_higher_is_followed_once_it_goes_on() {
    // 9 990–10 000, then the counter really restarts at 13 000, its old buffer replayed
    // between the live frames: one reset, and the replay too old once the window moved
    // (not a reset at every frame, there and back).
    use Observation::*;
    let mut w = seen(9_990..=10_000);
    let got: Vec<_> = [13_000, 9_995, 13_001, 9_996, 13_002, 9_997, 13_003]
        .into_iter()
        .map(|s| obs(&mut w, s, T0))
        .collect();
    let reset = Reset {
        from: 10_000,
        to: 13_000,
    };
    assert_eq!(got, [reset, Repeat, New, TooOld, New, TooOld, New]);
    assert_eq!((w.totals().resets, w.highest()), (1, Some(13_003)));
}

#[test]
fn a_pending_outlier_is_not_taken_for_the_device_going_on() {
    // 1-1000, an outlier at 5 096, then the device loses 2 100 frames (3 101) or
    // restarts higher below the outlier: before, such a seq "confirmed" the outlier,
    // its highest became 5 096 and the seqs after it read as fills (no gap for the
    // frames lost, the real 5 096 a false repeat).
    let mut w = seen(1..=1000);
    obs(&mut w, 5_096, T0);
    assert_eq!(
        obs(&mut w, 3_101, T0),
        Observation::Reset {
            from: 1000,
            to: 3_101
        }
    );
    assert_eq!(obs(&mut w, 3_102, T0), Observation::New);
    assert_eq!(obs(&mut w, 3_200, T0), Observation::New);
    assert_eq!(w.gaps(), [gap(3_103, 3_199, T0)]);
    assert_eq!(obs(&mut w, 5_096, T0), Observation::New);
    // A real restart at 99 500 below a pending outlier at 100 000 is reported, and followed.
    let mut w = seen(1..=1000);
    obs(&mut w, 100_000, T0);
    obs(&mut w, 1001, T0);
    assert_eq!(
        obs(&mut w, 99_500, T0),
        Observation::Reset {
            from: 1001,
            to: 99_500
        }
    );
    assert_eq!(obs(&mut w, 99_501, T0), Observation::New);
    assert_eq!((w.highest(), w.pending_jump()), (Some(99_501), None));
}

#[test]
fn every_step_length_clears_exactly_the_seqs_passed() {
    // Steps that start and end at every offset within a word and across the ring's end.
    for start in [0, 1, 63, 64, 65, W - 65, W - 1] {
        for step in [1, 2, 63, 64, 65, 127, 128, 129, 1000, W - 1] {
            let mut w = SeqWindow::new();
            for s in start - W + 1..=start {
                w.observe(s, T0).unwrap();
            }
            w.observe(start + step, T0).unwrap();
            w.validate();
            for s in start + step - W + 1..=start + step {
                let want = s <= start || s == start + step;
                assert_eq!(w.contains(s), want, "start {start}, step {step}, seq {s}");
            }
        }
    }
}

#[test]
fn the_window_edges_and_the_reset_rule_are_pinned() {
    let h = 100_000;
    let base = || seen([h]);
    // h − W + 1 is in the window, h − W just below it.
    assert_eq!(obs(&mut base(), h - W + 1, T0), Observation::New);
    assert_eq!(obs(&mut base(), h - W, T0), Observation::TooOld);
    // The band of W slots below the window is too old; h − 2W and below is a reset.
    assert_eq!(obs(&mut base(), h - 2 * W + 1, T0), Observation::TooOld);
    assert_eq!(
        obs(&mut base(), h - 2 * W, T0),
        Observation::Reset {
            from: h,
            to: h - 2 * W
        }
    );
    // A small seq is a reset even inside the band: W − 1 is, W is not.
    let young = 2 * W + 10;
    assert_eq!(
        obs(&mut seen([young]), W - 1, T0),
        Observation::Reset {
            from: young,
            to: W - 1
        }
    );
    assert_eq!(obs(&mut seen([young]), W, T0), Observation::TooOld);
    // Negative seqs are small.
    assert_eq!(
        obs(&mut seen([young]), -5, T0),
        Observation::Reset {
            from: young,
            to: -5
        }
    );
    // Too old changes nothing but its count.
    let mut w = seen([h]);
    let before = w.to_bytes();
    assert_eq!(obs(&mut w, h - W - 1, T0), Observation::TooOld);
    assert_eq!(w.totals().too_old, 1);
    let mut again = SeqWindow::from_bytes(&before).unwrap();
    again.totals.too_old = 1;
    assert_eq!(again, w);
}

#[test]
fn a_df703_like_restart_is_a_reset_not_a_gap_of_65_000() {
    // The application counter climbs to 65 000 with one gap, then the battery is
    // swapped and it restarts: 3 is the first seq seen after.
    let mut w = seen(0..=64_990);
    obs(&mut w, 65_000, T0 + 1.0);
    assert_eq!(w.gaps(), &[gap(64_991, 64_999, T0 + 1.0)]);
    assert_eq!(
        obs(&mut w, 3, T0 + 2.0),
        Observation::Reset {
            from: 65_000,
            to: 3
        }
    );
    assert!(w.gaps().is_empty(), "old gaps closed by the reset");
    let t = w.totals();
    assert_eq!(
        (t.missing, t.closed_by_reset, t.resets, t.too_old),
        (0, 9, 1, 0)
    );
    // The new epoch runs on: 4 is new, 2 (before the restart's first seen) fills.
    assert_eq!(obs(&mut w, 4, T0), Observation::New);
    assert_eq!(obs(&mut w, 2, T0), Observation::New);
    assert_eq!(obs(&mut w, 4, T0), Observation::Repeat);
    assert_eq!(w.highest(), Some(4));
    // A counter's restart as the codec unwraps it (codec/readings.rs: a DF703's counter 3
    // after 30 000 is seq 3, after 65 000 seq 65 539): a reset, and a forward jump.
    let mut w = seen([30_000]);
    assert_eq!(
        obs(&mut w, 3, T0),
        Observation::Reset {
            from: 30_000,
            to: 3
        }
    );
    let mut w = seen([65_000]);
    assert_eq!(obs(&mut w, 65_539, T0), Observation::New);
    assert_eq!(w.gaps(), &[gap(65_001, 65_538, T0)]);
}

#[test]
fn the_gap_list_keeps_the_newest_g_and_counts_the_dropped() {
    let mut w = seen([0]);
    // MAX_GAPS + 5 gaps of 2 seqs each: 0, 3, 6, ...
    for i in 1..=MAX_GAPS as i64 + 5 {
        obs(&mut w, 3 * i, T0 + i as f64);
    }
    assert_eq!(w.gaps().len(), MAX_GAPS);
    assert_eq!(w.gaps()[0], gap(16, 17, T0 + 6.0));
    let t = w.totals();
    assert_eq!(
        (t.missing, t.gaps_dropped, t.missing_dropped),
        (2 * MAX_GAPS as u64, 5, 10)
    );
    // A seq of a dropped gap is no longer known to be missing: in the window, new.
    assert_eq!(obs(&mut w, 1, T0), Observation::New);
    // A split of a listed gap at the bound drops the lowest again.
    let mut w = seen([0]);
    for i in 1..=MAX_GAPS as i64 {
        obs(&mut w, 4 * i, T0);
    }
    assert_eq!(w.gaps().len(), MAX_GAPS);
    assert_eq!(
        obs(&mut w, 4 * MAX_GAPS as i64 - 2, T0),
        Observation::Recovered { delay_ms: 0 }
    );
    assert_eq!(w.gaps().len(), MAX_GAPS);
    assert_eq!(w.gaps()[0], gap(5, 7, T0));
    assert_eq!(w.totals().missing_dropped, 3);
    // A split of the lowest of G gaps: its lower part is what the bound drops.
    assert_eq!(obs(&mut w, 6, T0), Observation::Recovered { delay_ms: 0 });
    assert_eq!(w.gaps().len(), MAX_GAPS);
    assert_eq!(w.gaps()[0], gap(7, 7, T0));
    let t = w.totals();
    assert_eq!((t.gaps_dropped, t.missing_dropped), (2, 4));
}

#[test]
fn bad_seqs_and_times_are_coded_errors_and_change_nothing() {
    let mut w = seen([5]);
    let before = w.clone();
    for seq in [MAX_SAFE_SEQ + 1, -MAX_SAFE_SEQ - 1, i64::MIN, i64::MAX] {
        assert_eq!(w.observe(seq, T0).unwrap_err().code(), "invalid_seq");
    }
    for at in [f64::NAN, f64::INFINITY, -1.0, 8.64e15 + 1.0] {
        assert_eq!(w.observe(6, at).unwrap_err().code(), "invalid_time");
    }
    assert_eq!(w, before);
    // The ends of the range are fine; a jump across all of it is a reset, not a gap.
    assert_eq!(
        obs(&mut w, MAX_SAFE_SEQ, 8.64e15),
        Observation::Reset {
            from: 5,
            to: MAX_SAFE_SEQ
        }
    );
    let mut w = seen([-MAX_SAFE_SEQ]);
    obs(&mut w, MAX_SAFE_SEQ, T0);
    assert_eq!(w.totals().missing, 0);
    let mut w = seen([MAX_SAFE_SEQ - W]);
    assert_eq!(obs(&mut w, MAX_SAFE_SEQ, T0), Observation::New);
    assert_eq!(w.totals().missing, W as u64 - 1);
}

#[test]
fn bytes_are_compact_and_round_trip() {
    let empty = SeqWindow::new();
    assert_eq!(empty.to_bytes(), [FORMAT_VERSION, 0]);
    assert_eq!(SeqWindow::from_bytes(&[1, 0]).unwrap(), empty);
    // A new device: 2 + 8 + 4 + one word + 8 one-byte varints.
    let one = seen([41]);
    assert_eq!(one.to_bytes().len(), 2 + 8 + 4 + 8 + 8);
    assert_eq!(SeqWindow::from_bytes(&one.to_bytes()).unwrap(), one);
    // Steady state: every word in use, a few gaps, counters of every kind.
    let mut w = seen(0..10_000);
    assert_eq!(w.to_bytes().len(), 2 + 8 + 4 + 8 * WORDS + 8); // 278
    obs(&mut w, 10_010, T0 + 1.0);
    obs(&mut w, 10_020, T0 + 2.0);
    obs(&mut w, 10_015, T0 + 3.0);
    obs(&mut w, 10_020, T0 + 3.0);
    obs(&mut w, 10_020 - W - 1, T0);
    let bytes = w.to_bytes();
    assert_eq!(SeqWindow::from_bytes(&bytes).unwrap(), w);
    assert!(
        bytes.len() <= 2 + 8 + 4 + 8 * WORDS + 8 * 2 + 3 * 13,
        "{}",
        bytes.len()
    );
    // Known answer: the layout, byte for byte.
    let mut w = seen([1, 3]);
    obs(&mut w, 1, 0.0);
    assert_eq!(
        w.to_bytes(),
        [
            1, 1, // version, flags
            3, 0, 0, 0, 0, 0, 0, 0, // highest
            1, 0, 0, 0, // word 0 in use
            0b1010, 0, 0, 0, 0, 0, 0, 0, // seqs 1 and 3
            0, 1, 0, 0, 0, 0, 0, // recovered, repeats, resets, too_old, dropped ×2, reset
            1, // one gap
            1, 0, // 3 − 2, 2 − 2
            0x80, 0xf5, 0x9d, 0xd1, 0xf6, 0x33, // T0 = 1 784 192 400 000 ms
        ]
    );
}

#[test]
fn corrupt_or_truncated_bytes_are_coded_errors_never_panics() {
    let mut w = seen(0..3000);
    obs(&mut w, 3010, T0);
    obs(&mut w, 3020, T0);
    let good = w.to_bytes();
    // Every truncation and every single-byte change is either refused with the code
    // or read as a window that keeps every rule (a flipped bit of a seen seq).
    for n in 0..good.len() {
        let e = SeqWindow::from_bytes(&good[..n]).unwrap_err();
        assert_eq!(e.code(), "invalid_snapshot", "{n}");
    }
    for i in 0..good.len() {
        for flip in [0x01, 0x02, 0x40, 0x80, 0xff] {
            let mut bad = good.clone();
            bad[i] ^= flip;
            match SeqWindow::from_bytes(&bad) {
                Ok(back) => back.validate(),
                Err(e) => assert_eq!(e.code(), "invalid_snapshot", "byte {i} ^ {flip:#x}"),
            }
        }
    }
    let refused = |bytes: &[u8], why: &str| {
        let e = SeqWindow::from_bytes(bytes).unwrap_err();
        assert_eq!(e.code(), "invalid_snapshot");
        assert!(e.to_string().contains(why), "{e} lacks {why}");
    };
    refused(&[], "truncated");
    refused(&[2, 0], "unsupported version");
    refused(&[1, 2], "unknown flags");
    // A pending jump that is not beyond the window: seq 5000, the jump 5000 + W.
    let mut b = vec![1, 3];
    b.extend(5000i64.to_le_bytes());
    b.extend((5000 + W).to_le_bytes());
    refused(&b, "a pending jump out of range");
    // Bytes with a pending jump round-trip (the fields are otherwise as v1's).
    let mut w = seen(1..=5);
    obs(&mut w, 5 + 3 * W, T0);
    assert_eq!(w.to_bytes()[1], 3);
    assert_eq!(w.to_bytes().len(), seen([5 + 3 * W]).to_bytes().len() + 8);
    refused(&[1, 0, 0], "trailing bytes");
    let mut long = good.clone();
    long.push(0);
    refused(&long, "trailing bytes");
    // The highest seq's bit unset: seq 1 with the word of seq 0.
    let mut b = vec![
        1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
    ];
    b.extend([0; 8]);
    refused(&b, "not marked seen");
    // A word in use that is zero.
    let mut b = vec![
        1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
    ];
    b.extend([0; 8]);
    refused(&b, "is zero");
    // A seq out of range.
    let mut b = vec![1, 1];
    b.extend((MAX_SAFE_SEQ + 1).to_le_bytes());
    refused(&b, "seq out of range");
    // A counter beyond 2^53 − 1, a varint not in its shortest form, one too long.
    let head = &seen([0]).to_bytes()[..22];
    let with = |tail: &[u8]| [head, tail].concat();
    refused(
        &with(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10]),
        "beyond 2^53",
    );
    refused(&with(&[0x80, 0x00]), "shortest form");
    refused(&with(&[0xff; 10]), "too long");
    // Gaps: too many, reaching the highest, marked seen, adjacent, out of range.
    let zeros = [0u8; 7];
    refused(&with(&[&zeros[..], &[65]].concat()), "too many gaps");
    refused(&with(&[&zeros[..], &[1, 0, 0, 0]].concat()), "out of range");
    let g = |gaps: &[u8]| {
        let mut b = seen([0, 1, 2, 3, 10]).to_bytes()[..22].to_vec();
        b.extend(&zeros);
        b.extend(gaps);
        b
    };
    // One gap 4 ..= 9 is fine; 3 ..= 9 holds a seen seq.
    assert!(SeqWindow::from_bytes(&g(&[1, 1, 5, 0])).is_ok());
    refused(&g(&[1, 1, 6, 0]), "marked seen");
    refused(&g(&[2, 1, 0, 0, 3, 0, 0]), "out of order or adjacent"); // 4 and 5
    refused(&g(&[2, 1, 0, 0, 1, 0, 0]), "out of order or adjacent"); // 9 then 8
    let mut big = g(&[1, 1, 0]);
    big.extend([0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10]); // 2^53 + 1 ms
    refused(&big, "out of range");
}

#[test]
fn bytes_per_device() {
    // The struct (highest, the 256-byte ring, the gap list's header, the counts) and
    // the gap list's allocation, 24 bytes a gap. Stated in docs/benchmarks.md.
    assert_eq!(std::mem::size_of::<Gap>(), 24);
    let idle = SeqWindow::new();
    let struct_bytes = std::mem::size_of::<SeqWindow>();
    assert_eq!(struct_bytes, 2 * 16 + 8 * WORDS + 24 + 8 * 8);
    assert_eq!(idle.memory_bytes(), struct_bytes);
    assert_eq!(struct_bytes, 376);
    let mut w = seen(0..10_000);
    obs(&mut w, 10_005, T0);
    assert_eq!(w.memory_bytes(), 376 + 4 * 24); // Vec's first allocation holds 4
    let mut full = seen([0]);
    for i in 1..=200 {
        obs(&mut full, 2 * i, T0);
    }
    assert_eq!(full.gaps().len(), MAX_GAPS);
    // At the bound the list's allocation stops at G gaps: 1 912 bytes in all.
    assert_eq!(full.memory_bytes(), 376 + MAX_GAPS * 24);
    assert_eq!(full.memory_bytes(), 1_912);
}

/// The model: the set of seqs seen, the highest, and the missing seqs with when they
/// were noticed (consecutive ones form a gap; G ranges at most, lowest dropped).
#[derive(Default)]
struct Model {
    seen: BTreeSet<i64>,
    highest: Option<i64>,
    missing: BTreeMap<i64, i64>,
    dropped: u64,
}

impl Model {
    fn observe(&mut self, seq: i64, at: i64) -> Observation {
        let Some(h) = self.highest else {
            self.seen.insert(seq);
            self.highest = Some(seq);
            return Observation::New;
        };
        if !self.seen.insert(seq) {
            return Observation::Repeat;
        }
        if seq > h {
            self.missing.extend((h + 1..seq).map(|s| (s, at)));
            self.highest = Some(seq);
            while self.ranges().len() > MAX_GAPS {
                self.drop_lowest();
            }
            return Observation::New;
        }
        match self.missing.remove(&seq) {
            Some(noticed) => {
                let o = Observation::Recovered {
                    delay_ms: (at - noticed).max(0) as u64,
                };
                while self.ranges().len() > MAX_GAPS {
                    self.drop_lowest();
                }
                o
            }
            None => Observation::New,
        }
    }

    fn drop_lowest(&mut self) {
        let first = self.ranges()[0];
        for s in first.first..=first.last {
            self.missing.remove(&s);
        }
        self.dropped += 1;
    }

    fn ranges(&self) -> Vec<Gap> {
        let mut out: Vec<Gap> = Vec::new();
        for (&s, &at) in &self.missing {
            match out.last_mut() {
                Some(g) if g.last + 1 == s => g.last = s,
                _ => out.push(Gap {
                    first: s,
                    last: s,
                    first_noticed_ms: at,
                }),
            }
        }
        out
    }
}

/// Seeded random seqs that stay within one window of the first (so the model, which
/// keeps everything, and the window, which keeps W slots, must agree exactly): mostly
/// the next seq, some jumps, some repeats, some late arrivals, times moving forward with
/// an occasional step back.
#[test]
fn random_seqs_within_the_window_agree_with_a_set_model() {
    let mut kinds = [0u32; 3]; // new, repeat, recovered: each must occur
    let mut dropped = 0;
    for seed in 0..16u64 {
        let mut rng = fastrand::Rng::with_seed(0x5e9_0000 + seed);
        let base = rng.i64(-1_000_000..1_000_000);
        let mut w = SeqWindow::new();
        let mut m = Model::default();
        let mut next = base;
        let mut at = T0 as i64;
        for step in 0..2000 {
            at += rng.i64(-50..1000);
            let top = base + W - 1;
            let seq = match rng.u32(..100) {
                0..=59 => next,
                60..=74 => next + rng.i64(1..40),
                75..=84 => rng.i64(base..=next.min(top)),
                _ => m
                    .missing
                    .keys()
                    .nth(rng.usize(..m.missing.len().max(1)))
                    .copied()
                    .unwrap_or(next),
            }
            .min(top);
            next = next.max(seq + 1);
            let want = m.observe(seq, at);
            let got = w.observe(seq, at as f64).unwrap();
            assert_eq!(got, want, "seed {seed}, step {step}, seq {seq}");
            kinds[match got {
                Observation::New => 0,
                Observation::Repeat => 1,
                _ => 2,
            }] += 1;
            w.validate();
            assert_eq!(w.gaps(), &m.ranges()[..], "seed {seed}, step {step}");
            assert_eq!(w.totals().gaps_dropped, m.dropped);
            for s in [seq, seq - 1, seq + 1, base, top] {
                assert_eq!(w.contains(s), m.seen.contains(&s), "seed {seed}, seq {s}");
            }
        }
        dropped += m.dropped;
    }
    assert!(
        kinds.iter().all(|&k| k > 100) && dropped > 0,
        "{kinds:?} {dropped}"
    );
}

/// Seeded random seqs over the whole range (jumps beyond the window, resets, too old):
/// the invariants and the bytes round trip after every step, and what the window says
/// for a seq below it follows the reset rule.
#[test]
fn random_seqs_anywhere_keep_the_invariants() {
    for seed in 0..16u64 {
        let mut rng = fastrand::Rng::with_seed(0xa11_0000 + seed);
        let mut w = SeqWindow::new();
        let mut next = rng.i64(0..100_000);
        // The seqs sent since the window last started over: none of them is ever a
        // late arrival.
        let mut sent = BTreeSet::new();
        for step in 0..1000 {
            let seq = match rng.u32(..100) {
                0..=49 => next,
                50..=64 => next + rng.i64(1..3 * W),
                65..=79 => next - rng.i64(1..3 * W),
                80..=84 => rng.i64(-5..W + 5),
                85..=89 => rng.i64(-MAX_SAFE_SEQ..=MAX_SAFE_SEQ),
                // Near a pending jump: its repeat, the device going on from it.
                90..=94 => w.jump.map_or(next, |j| j + rng.i64(-W..=W)),
                _ => next - rng.i64(1..40),
            }
            .clamp(-MAX_SAFE_SEQ, MAX_SAFE_SEQ);
            let before = w.clone();
            let got = obs(&mut w, seq, T0 + step as f64);
            let h = before.highest.unwrap_or(seq);
            let below = seq <= h - W && before.find_gap(seq).is_err();
            let beyond = seq > h + W;
            let jump = before.jump;
            let goes_on = jump.is_some_and(|j| beyond && seq > j && seq <= j + W);
            let is_jump = beyond && !goes_on && Some(seq) != jump;
            // No gap is longer than the window, and none reaches above the highest.
            assert!(
                w.gaps()
                    .iter()
                    .all(|g| g.len() < W as u64 && g.last < w.highest().unwrap()),
                "seed {seed}, {seq}"
            );
            match got {
                Observation::Reset { from, to } => {
                    assert!(
                        is_jump || (below && (seq <= h - 2 * W || seq < W)),
                        "seed {seed}, {seq}"
                    );
                    assert_eq!((from, to), (h, seq));
                    if is_jump {
                        // Pending: the window has not moved.
                        assert_eq!((w.gaps(), w.highest), (before.gaps(), before.highest));
                        assert_eq!(w.jump, Some(seq));
                    } else {
                        assert!(w.gaps().is_empty());
                    }
                }
                Observation::TooOld => {
                    assert!(below && seq > h - 2 * W && seq >= W, "seed {seed}, {seq}");
                    assert_eq!(w.gaps(), before.gaps());
                }
                Observation::Recovered { .. } => {
                    assert!(
                        before.find_gap(seq).is_ok(),
                        "seed {seed}, {seq} recovered outside a gap"
                    );
                    assert!(
                        !sent.contains(&seq),
                        "seed {seed}, {seq} recovered but seen"
                    );
                }
                _ => assert!(
                    (!below && !beyond) || goes_on || Some(seq) == jump,
                    "seed {seed}, seq {seq} outside the window"
                ),
            }
            // Since the last reset the window started over at: every seq sent.
            let (was, now) = (before.highest.unwrap_or(seq), w.highest.unwrap());
            if now < was || now > was + W {
                sent.clear();
            }
            sent.insert(seq);
            next = w.highest().unwrap() + 1;
        }
    }
}
