//! The class `FillTracker`: the core's [`FillTracker`] of one bin (its fill by device
//! time: the current reading, late ones, collections), and what it returns.

use crate::dedupe::error::{Error, Field};
use crate::dedupe::fill::{Arrival, FillTracker, Sample};
use crate::dedupe::key::parse_key;
use crate::dedupe::timestamp::{isoformat, parse_rfc3339};
use serde::Serialize;
use tsify::Tsify;
use wasm_bindgen::prelude::*;

use super::js_value::{device_id_arg, stored_bytes_arg};
use super::{to_js, to_value};

/// One admitted reading as a `FillTracker` keeps it: `ts` written as the plan writes
/// it (UTC, microseconds).
#[derive(Serialize, Tsify)]
pub struct FillSample {
    ts: String,
    fill_pct: f64,
    key: String,
}

impl FillSample {
    fn of(s: &Sample) -> FillSample {
        FillSample {
            ts: isoformat(s.ts),
            fill_pct: s.fill_pct,
            key: s.key.clone(),
        }
    }
}

/// A collection `observe` confirmed: the fill fell by more than the threshold from
/// `before` to `after` (consecutive newest readings) and stayed down at the next.
#[derive(Serialize, Tsify)]
pub struct FillCollection {
    before: FillSample,
    after: FillSample,
}

/// What `FillTracker.observe` returns: `newest` (the bin's state now) or `late` (older
/// than the newest by `late_by_ms`; null when newest), the collection it confirmed
/// (or null), and whether it showed a suspected collection to be a glitch.
#[derive(Serialize, Tsify)]
pub struct FillObservation {
    #[tsify(type = "\"newest\" | \"late\"")]
    arrival: &'static str,
    late_by_ms: Option<f64>,
    collection: Option<FillCollection>,
    glitch: bool,
}

/// What `FillTracker.state` returns: the newest reading (the bin's state), the one
/// before it, the reading before a fall awaiting confirmation, and the reporting period
/// seen in seconds (the median interval between the last newest readings); each null
/// when not known yet.
#[derive(Serialize, Tsify)]
pub struct FillState {
    newest: Option<FillSample>,
    previous: Option<FillSample>,
    suspected: Option<FillSample>,
    period_s: Option<f64>,
}

/// One bin's fill by device time (the core's `FillTracker`, docs in src/dedupe/fill.rs):
/// which admitted reading is its state, which arrived late, when it was emptied.
/// Readings are given in admission order; time is theirs, never the clock's.
#[wasm_bindgen(js_name = FillTracker)]
pub struct JsFillTracker {
    inner: FillTracker,
    threshold: f64,
}

#[wasm_bindgen(js_class = FillTracker)]
impl JsFillTracker {
    /// An empty tracker; `thresholdPct` is the fall, in percentage points, that makes a
    /// suspected collection: a number above 0 and at most 100, else `invalid_config`.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "number", js_name = thresholdPct)] threshold: JsValue,
    ) -> Result<JsFillTracker, JsValue> {
        Ok(JsFillTracker {
            inner: FillTracker::new(),
            threshold: threshold_arg(&threshold)?,
        })
    }

    /// Takes one admitted reading: its `ts` (RFC 3339 text, as a plan or the ledger
    /// writes it), `fillPct` (0 … 100) and `key` (a reading's key). Returns a
    /// {@link FillObservation}. Throws `invalid_ts`, `invalid_fill_pct` or `invalid_key`;
    /// the tracker is unchanged then.
    #[wasm_bindgen(unchecked_return_type = "FillObservation")]
    pub fn observe(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] ts: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number", js_name = fillPct)] fill_pct: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
    ) -> Result<JsValue, JsValue> {
        let sample = sample_arg(&ts, &fill_pct, &key)?;
        let seen = self.inner.observe(sample, self.threshold);
        let (arrival, late_by_ms) = match seen.arrival {
            Arrival::Newest => ("newest", None),
            // At most ~3.2e17 µs: its ms are within f64's exact integers, the fraction kept.
            Arrival::Late { behind_us } => ("late", Some(behind_us as f64 / 1000.0)),
        };
        to_value(&FillObservation {
            arrival,
            late_by_ms,
            collection: seen.collection.map(|c| FillCollection {
                before: FillSample::of(&c.before),
                after: FillSample::of(&c.after),
            }),
            glitch: seen.glitch,
        })
    }

    /// The bin's state ({@link FillState}). Changes nothing.
    #[wasm_bindgen(unchecked_return_type = "FillState")]
    pub fn state(&self) -> Result<JsValue, JsValue> {
        to_value(&FillState {
            newest: self.inner.newest().map(FillSample::of),
            previous: self.inner.previous().map(FillSample::of),
            suspected: self.inner.suspected().map(FillSample::of),
            period_s: self.inner.period_us().map(|us| us as f64 / 1e6),
        })
    }

    /// The tracker as compact versioned bytes (its threshold is configuration, not state).
    #[wasm_bindgen(js_name = toBytes)]
    pub fn to_bytes(&self) -> Vec<u8> {
        self.inner.to_bytes()
    }

    /// Reads `toBytes()` bytes (a `Uint8Array`) back, with the threshold to go on with.
    /// Throws `invalid_snapshot` for anything but such bytes, `invalid_config` for the
    /// threshold.
    #[wasm_bindgen(js_name = fromBytes)]
    pub fn from_bytes(
        #[wasm_bindgen(unchecked_param_type = "Uint8Array")] bytes: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number", js_name = thresholdPct)] threshold: JsValue,
    ) -> Result<JsFillTracker, JsValue> {
        let threshold = threshold_arg(&threshold)?;
        let bytes = stored_bytes_arg(
            &bytes,
            "the tracker's bytes",
            "a fill tracker's bytes are a Uint8Array",
        )?;
        FillTracker::from_bytes(&bytes)
            .map(|inner| JsFillTracker { inner, threshold })
            .map_err(to_js)
    }
}

/// A threshold in percentage points: a JS number above 0, at most 100.
fn threshold_arg(v: &JsValue) -> Result<f64, JsValue> {
    v.as_f64()
        .filter(|t| *t > 0.0 && *t <= 100.0)
        .ok_or_else(|| {
            to_js(Error::InvalidConfig(
                "thresholdPct must be a number above 0 and at most 100".into(),
            ))
        })
}

/// A reading's `ts`, `fill_pct` and key, checked as the core checks a reading's.
fn sample_arg(ts: &JsValue, fill_pct: &JsValue, key: &JsValue) -> Result<Sample, JsValue> {
    let ts = ts
        .as_string()
        .and_then(|t| parse_rfc3339(&t).ok())
        .ok_or_else(|| to_js(Error::Invalid(Field::Ts, "must be an RFC 3339 time")))?;
    let fill_pct = fill_pct
        .as_f64()
        .filter(|f| (0.0..=100.0).contains(f))
        .ok_or_else(|| to_js(Error::Invalid(Field::FillPct, "must be a number 0 … 100")))?;
    // A key is read as a device id is (a string without lone surrogates), then by the key's rules.
    let key = device_id_arg(key).map_err(|_| to_js(Error::InvalidKey("a key is a string")))?;
    parse_key(&key).map_err(to_js)?;
    Ok(Sample { ts, fill_pct, key })
}
