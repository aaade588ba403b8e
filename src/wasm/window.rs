//! The class `SeqWindow`: the core's [`SeqWindow`] of one device, and what it
//! returns (an observation, the open gaps, the totals).

use crate::dedupe::error::Error;
use crate::dedupe::seen::MAX_COUNTER;
use crate::dedupe::window::{Observation, SeqWindow};
use serde::Serialize;
use tsify::Tsify;
use wasm_bindgen::prelude::*;

use super::js_value::{seq_arg, stored_bytes_arg, time_arg};
use super::{serializer, to_js, to_value};

/// What a seq meant to a [`SeqWindow`] (`observe`): the core's `Observation`.
#[derive(Serialize, Tsify)]
#[serde(rename_all = "snake_case")]
pub enum SeqKind {
    /// Not seen before: above the highest (a gap opens if it skipped seqs), or a fill.
    New,
    /// Seen already, in the window.
    Repeat,
    /// Closed a seq of a listed gap: a late arrival, `delay_ms` after the gap was noticed.
    Recovered,
    /// The counter restarted: the window starts over at `to`; `from` was the highest.
    Reset,
    /// Below the window, in no gap, not a reset: too old to tell.
    TooOld,
}

/// What `SeqWindow.observe` returns: the kind, and its figures (null unless that kind
/// has them: `delay_ms` for `recovered`, `from` and `to` for `reset`).
#[derive(Serialize, Tsify)]
pub struct SeqObservation {
    kind: SeqKind,
    delay_ms: Option<u64>,
    from: Option<i64>,
    to: Option<i64>,
}

impl SeqObservation {
    fn of(o: Observation) -> SeqObservation {
        let plain = |kind| SeqObservation {
            kind,
            delay_ms: None,
            from: None,
            to: None,
        };
        match o {
            Observation::New => plain(SeqKind::New),
            Observation::Repeat => plain(SeqKind::Repeat),
            Observation::TooOld => plain(SeqKind::TooOld),
            Observation::Recovered { delay_ms } => SeqObservation {
                // A delay is at most 8.64e15 ms (the core's time range): a safe integer.
                delay_ms: Some(delay_ms),
                ..plain(SeqKind::Recovered)
            },
            Observation::Reset { from, to } => SeqObservation {
                from: Some(from),
                to: Some(to),
                ..plain(SeqKind::Reset)
            },
        }
    }
}

/// One open gap of a `SeqWindow`: the missing seqs `from ..= to`, noticed missing at
/// `first_noticed_ms` (ms since the epoch).
#[derive(Serialize, Tsify)]
pub struct SeqGap {
    from: i64,
    to: i64,
    first_noticed_ms: i64,
}

/// What `SeqWindow.totals()` returns: the core's `SeqTotals` (docs/sequence-health.md "Sequence health").
/// `missing` is the open gaps' seqs now; the rest count since the window was created.
/// Each reads at most 2^53 − 1.
#[derive(Serialize, Tsify)]
pub struct SeqWindowTotals {
    missing: u64,
    recovered: u64,
    repeats: u64,
    resets: u64,
    too_old: u64,
    gaps_dropped: u64,
    missing_dropped: u64,
    closed_by_reset: u64,
}

/// One device's sequence window (the core's `SeqWindow`: about one bit per seq over
/// the last 2048, the open gaps, resets and late arrivals). Time is passed in.
#[wasm_bindgen(js_name = SeqWindow)]
pub struct JsSeqWindow {
    inner: SeqWindow,
}

impl Default for JsSeqWindow {
    fn default() -> Self {
        JsSeqWindow::new()
    }
}

#[wasm_bindgen(js_class = SeqWindow)]
impl JsSeqWindow {
    /// An empty window: no seq seen.
    #[wasm_bindgen(constructor)]
    pub fn new() -> JsSeqWindow {
        JsSeqWindow {
            inner: SeqWindow::new(),
        }
    }

    /// Records `seq`, seen at `atMs`, and says what it was: a {@link SeqObservation}.
    /// Throws `invalid_seq` (not a whole number within ±(2^53 − 1)) or `invalid_time`;
    /// the window is unchanged then.
    #[wasm_bindgen(unchecked_return_type = "SeqObservation")]
    pub fn observe(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "number")] seq: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number", js_name = atMs)] at_ms: JsValue,
    ) -> Result<JsValue, JsValue> {
        let seq = seq_arg(&seq)?;
        let at_ms = time_arg(&at_ms)?;
        let seen = self.inner.observe(seq, at_ms).map_err(to_js)?;
        to_value(&SeqObservation::of(seen))
    }

    /// The highest seq seen since the last reset; undefined before the first.
    #[wasm_bindgen(getter)]
    pub fn highest(&self) -> Option<f64> {
        // Within ±(2^53 − 1): exact as a JS number.
        self.inner.highest().map(|h| h as f64)
    }

    /// The open gaps, lowest first ({@link SeqGap}[]). Changes nothing.
    #[wasm_bindgen(unchecked_return_type = "SeqGap[]")]
    pub fn gaps(&self) -> Result<JsValue, JsValue> {
        let gaps: Vec<SeqGap> = self
            .inner
            .gaps()
            .iter()
            .map(|g| SeqGap {
                from: g.first,
                to: g.last,
                first_noticed_ms: g.first_noticed_ms,
            })
            .collect();
        // A list of a declared type (`SeqGap[]`), written as `to_value` writes one.
        gaps.serialize(&serializer())
            .map_err(|e| to_js(Error::InvalidBurst(e.to_string())))
    }

    /// The counts ({@link SeqWindowTotals}). Changes nothing.
    #[wasm_bindgen(unchecked_return_type = "SeqWindowTotals")]
    pub fn totals(&self) -> Result<JsValue, JsValue> {
        let t = self.inner.totals();
        to_value(&SeqWindowTotals {
            missing: t.missing.min(MAX_COUNTER),
            recovered: t.recovered,
            repeats: t.repeats,
            resets: t.resets,
            too_old: t.too_old,
            gaps_dropped: t.gaps_dropped,
            missing_dropped: t.missing_dropped,
            closed_by_reset: t.closed_by_reset,
        })
    }

    /// The window as compact versioned bytes (docs/sequence-health.md "Sequence health": 2 bytes empty,
    /// ~30 for a new device, at most 278 plus 5 to 13 per gap).
    #[wasm_bindgen(js_name = toBytes)]
    pub fn to_bytes(&self) -> Vec<u8> {
        self.inner.to_bytes()
    }

    /// Reads `toBytes()` bytes (a `Uint8Array`) back. Throws `invalid_snapshot` for
    /// anything else, and for bytes truncated, of another version or breaking a rule
    /// of the window.
    #[wasm_bindgen(js_name = fromBytes)]
    pub fn from_bytes(
        #[wasm_bindgen(unchecked_param_type = "Uint8Array")] bytes: JsValue,
    ) -> Result<JsSeqWindow, JsValue> {
        let bytes = stored_bytes_arg(
            &bytes,
            "the window's bytes",
            "a sequence window's bytes are a Uint8Array",
        )?;
        SeqWindow::from_bytes(&bytes)
            .map(|inner| JsSeqWindow { inner })
            .map_err(to_js)
    }
}
