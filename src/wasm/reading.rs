//! Readings as JS objects: their declarations (`Reading`, `Burst`), how one is read
//! without running caller code ([`JsReading`]), and the functions of one reading:
//! `idempotencyKey`, `checkDeviceId` (and `benchHashFloor`, for `npm run bench`).

use crate::dedupe::error::{Error, Field};
use crate::dedupe::key::idempotency_key;
use crate::dedupe::reading::{
    canonical_device_id, check_device_id, lone_surrogate, validate, RawReading,
    Reading as CoreReading, Scalar,
};
use tsify::Tsify;
use wasm_bindgen::prelude::*;

use super::js_value::{
    device_id_arg, is_plain_object, maybe_lossy, members, threw_arg, try_array_from, try_is_array,
    well_formed,
};
use super::to_js;

// Declaration only, never built: readings are read by the core's own visitor
// (`RawReading`), which reports a bad field as a rejection instead of failing, and
// written by the core's hand-written `Serialize` of `Reading` (src/dedupe/reading.rs),
// which this mirrors; tests/js/types-match.test.mjs checks the readings returned
// (`Admitted extends Reading`) against this declaration.
/// One sensor reading as a device sends it.
#[derive(Tsify)]
pub struct Reading {
    pub device_id: String,
    pub seq: i64,
    /// RFC 3339; returned as the UTC instant that was hashed (Python's `isoformat()`).
    pub ts: String,
    /// Percent, 0 ..= 100.
    pub fill_pct: f64,
}

// Declaration only, like `Reading`: the core's `RawBurst` reads it.
/// A burst as `processBurst` takes it: an array of readings, or `{ readings }`.
#[derive(Tsify)]
#[serde(untagged)]
pub enum Burst {
    Readings(Vec<Reading>),
    Wrapped { readings: Vec<Reading> },
}

/// The largest whole number a JS number holds exactly.
const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

/// One JS member value as far as validation cares (as serde-wasm-bindgen read it:
/// a safe integer is an `Int`, a BigInt an `Int` when `i64` holds it; one beyond 64
/// bits is NaN, rejected where the member is read). Runs no caller code.
fn scalar_of(v: &JsValue) -> Scalar<'static> {
    if v.is_undefined() || v.is_null() {
        Scalar::Null
    } else if v.as_bool().is_some() {
        Scalar::Bool
    } else if let Some(x) = v.as_f64() {
        if x.fract() == 0.0 && x.abs() <= MAX_SAFE {
            Scalar::Int(x as i64)
        } else {
            Scalar::Float(x)
        }
    } else if let Some(s) = v.as_string() {
        Scalar::Str(s.into())
    } else if v.is_bigint() {
        match i64::try_from(v.clone()) {
            Ok(i) => Scalar::Int(i),
            Err(v) => Scalar::Float(u64::try_from(v).map_or(f64::NAN, |u| u as f64)),
        }
    } else {
        Scalar::Nested
    }
}

/// One reading read from JS: its raw shape, and whether its `device_id` string lost
/// a lone surrogate in conversion (see [`well_formed`]).
#[derive(Default)]
pub(super) struct JsReading {
    raw: RawReading<'static>,
    lost_id: bool,
}

impl JsReading {
    /// Reads the JS value `v`; `Err` is the caller's exception.
    pub(super) fn read(v: &JsValue) -> Result<JsReading, JsValue> {
        if !is_plain_object(v)? {
            return Ok(JsReading::default());
        }
        let mut r = JsReading {
            raw: RawReading {
                is_object: true,
                ..RawReading::default()
            },
            lost_id: false,
        };
        for (name, value) in members(v)? {
            let slot = match name.as_str() {
                "device_id" => &mut r.raw.device_id,
                "seq" => &mut r.raw.seq,
                "ts" => &mut r.raw.ts,
                "fill_pct" => &mut r.raw.fill_pct,
                _ => continue,
            };
            let scalar = scalar_of(&value);
            if name == "device_id" {
                r.lost_id = matches!(&scalar, Scalar::Str(s) if maybe_lossy(s) && !well_formed(value.unchecked_ref(), s));
            }
            *slot = Some(scalar);
        }
        Ok(r)
    }

    /// Validates the reading, refusing a device id that lost a lone surrogate.
    pub(super) fn validate(self) -> Result<CoreReading<'static>, Error> {
        if self.lost_id {
            Err(lone_surrogate(Field::DeviceId))
        } else {
            validate(self.raw)
        }
    }
}

/// One reading argument (`idempotencyKey`, `contains`), validated.
pub(super) fn reading_arg(v: &JsValue) -> Result<CoreReading<'static>, JsValue> {
    JsReading::read(v)
        .map_err(|e| threw_arg("the reading", &e))
        .and_then(JsReading::validate)
        .map_err(to_js)
}

/// A burst given as an array of readings or `{ readings: [...] }`, read element by
/// element; `invalid_burst` for any other shape or a caller's exception.
pub(super) fn read_burst(burst: &JsValue) -> Result<Vec<JsReading>, Error> {
    let whole = |e: JsValue| threw_arg("the burst", &e);
    let array = if try_is_array(burst).map_err(whole)? {
        burst.clone()
    } else if burst.is_object() {
        let readings = members(burst)
            .map_err(whole)?
            .find(|(name, _)| name == "readings")
            .map(|(_, v)| v)
            .ok_or_else(|| Error::InvalidBurst(r#"object has no "readings" array"#.into()))?;
        if !try_is_array(&readings).map_err(whole)? {
            return Err(Error::InvalidBurst(r#""readings" must be an array"#.into()));
        }
        readings
    } else {
        return Err(Error::InvalidBurst(
            r#"expected an array of readings or {"readings": [...]}"#.into(),
        ));
    };
    try_array_from(&array)
        .map_err(whole)?
        .into_iter()
        .enumerate()
        .map(|(i, v)| JsReading::read(&v).map_err(|e| threw_arg(&format!("reading {i}"), &e)))
        .collect()
}

/// The idempotency key of one reading: `device_id:seq:<16 hex of SHA-256>`.
///
/// Throws an `Error` whose `code` names the problem (`invalid_fill_pct`, ...;
/// `invalid_burst` when reading the object threw, e.g. a getter).
#[wasm_bindgen(js_name = idempotencyKey)]
pub fn idempotency_key_js(
    #[wasm_bindgen(unchecked_param_type = "Reading")] reading: JsValue,
) -> Result<String, JsValue> {
    Ok(idempotency_key(&reading_arg(&reading)?))
}

/// Checks a device id by the rules every reading's `device_id` follows (1–128 UTF-8
/// bytes, no control, invisible or formatting characters, no white space at either
/// end, in Unicode normalization form C, not `.` or `..`, valid Unicode) and returns it as
/// readings name their device: 16 hex digits (a DevEUI) in upper case, any other id
/// as given. Throws an `Error` with code `invalid_device_id` naming the broken rule.
#[wasm_bindgen(js_name = checkDeviceId)]
pub fn check_device_id_js(
    #[wasm_bindgen(unchecked_param_type = "string")] id: JsValue,
) -> Result<String, JsValue> {
    let id = device_id_arg(&id)?;
    check_device_id(&id)
        .map(|()| canonical_device_id(id.into()).into_owned())
        .map_err(to_js)
}

/// The floor of `npm run bench` (cargo feature `bench` only, never in `pkg/`): SHA-256
/// of each already canonical content, `contents` concatenated, `lengths` the byte
/// length of each. No deduplicator can be faster than hashing every reading once.
/// Returns the XOR of the digests so the work cannot be optimised away.
#[cfg(feature = "bench")]
#[wasm_bindgen(js_name = benchHashFloor)]
pub fn bench_hash_floor(contents: &[u8], lengths: &[u32]) -> f64 {
    let mut at = 0;
    let mut acc = 0u64;
    for &n in lengths {
        let end = (at + n as usize).min(contents.len());
        acc ^= crate::dedupe::key::digest_of(&contents[at..end]);
        at = end;
    }
    (acc >> 12) as f64
}
