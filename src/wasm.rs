//! The JavaScript API: the only module with `#[wasm_bindgen]`. It converts values at
//! the boundary and turns every [`Error`] into a JS `Error` with a stable `code`; it
//! never panics on input (a panic would poison the Wasm instance).
//!
//! Its TypeScript declarations (`pkg/reconnect_dedupe.d.ts`) are generated from the
//! Rust types: every shape a caller passes or gets is a type with `derive(Tsify)`
//! (the core's behind the `typescript` feature, the facade's own below), so a
//! renamed field changes its declaration too. The signatures name those types
//! (`unchecked_*_type`); values cross with the facade's own serde-wasm-bindgen
//! conversions ([`to_value`]; arguments are read through catching calls, see
//! [`read_burst`]), so tsify converts nothing at run time.
//! A name that no longer matches a declaration fails `tsc` (`tests/types/`, which
//! also type-checks real usage of the API); `tests/js/types-match.test.mjs` checks
//! the values returned against the declarations.

#[cfg(not(feature = "typescript"))]
compile_error!("the JavaScript API needs the `typescript` feature (a default one): its .d.ts is generated with tsify");

use crate::codec::{
    decode, Codec, Decoded, DeviceConfig, DeviceState, FrameMeta, BIN_DEPTH_MM, OFFSET_MM,
    REPORTING_PERIOD_S,
};
use crate::dedupe::dedup::{
    check_time, Audit, AuditContext, AuditCounts, AuditEvent, BurstOutcome, Deduplicator,
};
use crate::dedupe::error::{Error, Field};
use crate::dedupe::key::idempotency_key;
use crate::dedupe::reading::{
    canonical_device_id, check_device_id, lone_surrogate, validate, RawReading,
    Reading as CoreReading, Scalar, MAX_SAFE_SEQ,
};
use crate::dedupe::seen::{
    Config, SeenSet, Stats, DEFAULT_MAX_KEYS, DEFAULT_TTL_MS, MAX_COUNTER, MAX_MAX_KEYS, MAX_TTL_MS,
};
use crate::dedupe::timestamp::isoformat;
use crate::dedupe::timestamp::parse_rfc3339;
use crate::dedupe::window::{Observation, SeqWindow};
use crate::uplink::{
    payload_readings, plan, FieldNames, Format, DEFAULT_MAX_READINGS, MAX_MAX_READINGS,
};
use serde::{Deserialize, Serialize};
use std::num::NonZeroU32;
use tsify::Tsify;
use wasm_bindgen::prelude::*;

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

#[wasm_bindgen(start)]
fn start() {
    #[cfg(feature = "console_error_panic_hook")]
    console_error_panic_hook::set_once();
}

fn to_js(e: Error) -> JsValue {
    let err = js_sys::Error::new(&e.to_string());
    // Setting a property on a fresh Error object cannot fail.
    let _ = js_sys::Reflect::set(&err, &"code".into(), &e.code().into());
    err.into()
}

// Strings that are not valid Unicode. wasm-bindgen's conversion of a JS string to
// Rust (`as_string`, `String`, `&str` parameters) maps a lone UTF-16 surrogate to
// U+FFFD, so `"dev\uD800"` and `"dev\uDBFF"` would arrive as one id. A string
// argument is checked once in JS (`isWellFormed`, constant time on the one-byte
// strings engines keep ASCII text in); a reading's member only when its converted
// text has a U+FFFD, the only trace a lost surrogate leaves.

#[wasm_bindgen]
extern "C" {
    /// A JS string, as far as the check below needs one.
    type Text;
    /// `String.prototype.isWellFormed` (ES2024); `Err` where the engine lacks it.
    #[wasm_bindgen(method, catch, js_name = isWellFormed)]
    fn is_well_formed(this: &Text) -> Result<bool, JsValue>;
}

/// Whether a converted string may have lost a lone surrogate.
fn maybe_lossy(s: &str) -> bool {
    s.contains('\u{FFFD}')
}

/// Whether the JS string `v`, converted to `converted`, has no lone surrogate.
fn well_formed(v: &js_sys::JsString, converted: &str) -> bool {
    match v.unchecked_ref::<Text>().is_well_formed() {
        Ok(yes) => yes,
        // Without `isWellFormed`: only a U+FFFD can hide one; then unit by unit.
        Err(_) => !maybe_lossy(converted) || v.is_valid_utf16(),
    }
}

/// `v` as an exact Rust string: `None` when it is not a string, `Err(())` when it
/// holds a lone surrogate.
fn exact_string(v: &JsValue) -> Option<Result<String, ()>> {
    let js = v.dyn_ref::<js_sys::JsString>()?;
    let s = String::from(js);
    Some(if well_formed(js, &s) { Ok(s) } else { Err(()) })
}

/// Whether member `name` of the JS object `object` is a string without lone
/// surrogates (called only for a member whose converted text has a U+FFFD).
fn member_well_formed(object: &JsValue, name: &str) -> bool {
    js_sys::Reflect::get(object, &JsValue::from_str(name)).is_ok_and(|v| {
        v.dyn_ref::<js_sys::JsString>()
            .is_some_and(|js| well_formed(js, "\u{FFFD}"))
    })
}

// Reading what the caller passed. A JS exception (a throwing getter, a Proxy whose
// traps throw) that unwinds through Wasm frames leaves wasm-bindgen's borrow of the
// instance held, so every later call on it threw "recursive use of an object
// detected" and `free()` too, and it skips the Rust frames' epilogues (the shadow
// stack is never given back). So every read that can run caller code is a `catch`
// import, called before the deduplicator is touched: an exception comes back as an
// `Err` (`invalid_burst` naming it) and nothing is admitted. Nested objects are never
// entered (validation needs scalars only); `Array.from` and `Object.entries` give
// plain copies whose reading runs no caller code.
#[wasm_bindgen]
extern "C" {
    /// `Array.isArray`, which throws for a revoked Proxy.
    #[wasm_bindgen(catch, js_namespace = Array, js_name = isArray)]
    fn try_is_array(v: &JsValue) -> Result<bool, JsValue>;
    /// `Array.from`: a plain copy of an array (a Proxy's traps run inside).
    #[wasm_bindgen(catch, js_namespace = Array, js_name = from)]
    fn try_array_from(v: &JsValue) -> Result<js_sys::Array, JsValue>;
    /// `Object.entries`: own enumerable string-keyed members as fresh `[name, value]`
    /// pairs (getters and traps run inside).
    #[wasm_bindgen(catch, js_namespace = Object, js_name = entries)]
    fn try_entries(v: &JsValue) -> Result<js_sys::Array, JsValue>;
    /// A `Uint8Array` made by [`CopiedU8::new`].
    #[wasm_bindgen(js_name = Uint8Array)]
    type CopiedU8;
    /// `new Uint8Array(source)`: a plain copy of bytes (a memory copy for a real
    /// typed array; a Proxy's traps run inside).
    #[wasm_bindgen(constructor, catch, js_class = "Uint8Array")]
    fn new(source: &JsValue) -> Result<CopiedU8, JsValue>;
    /// A `Float64Array` made by [`CopiedF64::new`].
    #[wasm_bindgen(js_name = Float64Array)]
    type CopiedF64;
    /// `new Float64Array(source)`, likewise.
    #[wasm_bindgen(constructor, catch, js_class = "Float64Array")]
    fn new(source: &JsValue) -> Result<CopiedF64, JsValue>;
    /// `String(v)`, which runs a `toString` of the caller's.
    #[wasm_bindgen(catch, js_name = String)]
    fn try_string(v: &JsValue) -> Result<js_sys::JsString, JsValue>;
    /// `Object.prototype.toString.call(v)`: `[object Uint8Array]` for a typed array of
    /// any realm (read from its internal slot by %TypedArray%.prototype's tag getter).
    #[wasm_bindgen(js_namespace = ["Object", "prototype", "toString"], js_name = call)]
    fn type_tag(v: &JsValue) -> String;
}

/// A caller's exception as text: `String(e)` (`TypeError: boom`, `42`), at most
/// 200 characters.
fn describe(e: &JsValue) -> String {
    let text = try_string(e).map_or_else(|_| "a value that cannot be shown".into(), String::from);
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

/// What to say of a call whose reading of `what` threw `e`.
fn threw(what: &str, e: &JsValue) -> String {
    format!("{what} could not be read: reading it threw {}", describe(e))
}

/// The `invalid_burst` error of an argument whose reading threw `e`.
fn threw_arg(what: &str, e: &JsValue) -> Error {
    Error::BadArgument(threw(what, e))
}

/// What kind of JS value `v` is, for messages; runs no caller code.
/// A caller's text in a message: as given, at most 64 characters.
fn shown(text: &str) -> String {
    match text.char_indices().nth(64) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

fn type_name(v: &JsValue) -> &'static str {
    if v.is_null() {
        "null"
    } else if v.is_undefined() {
        "undefined"
    } else if v.is_string() {
        "a string"
    } else if v.as_f64().is_some() {
        "a number"
    } else if v.is_bigint() {
        "a BigInt"
    } else if v.as_bool().is_some() {
        "a boolean"
    } else if v.is_symbol() {
        "a symbol"
    } else if v.is_function() {
        "a function"
    } else if try_is_array(v).unwrap_or(false) {
        "an array"
    } else {
        "an object"
    }
}

/// The own enumerable members of the object `v` as `(name, value)` pairs, read
/// through catching calls; `Err` is the caller's exception.
fn members(v: &JsValue) -> Result<impl Iterator<Item = (String, JsValue)>, JsValue> {
    let pairs = try_entries(v)?;
    Ok(pairs.into_iter().filter_map(|pair| {
        let pair: js_sys::Array = pair.unchecked_into();
        Some((pair.get(0).as_string()?, pair.get(1)))
    }))
}

/// Whether `v` is an object that is not an array (nor a function).
fn is_plain_object(v: &JsValue) -> Result<bool, JsValue> {
    Ok(v.is_object() && !try_is_array(v)?)
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
struct JsReading {
    raw: RawReading<'static>,
    lost_id: bool,
}

impl JsReading {
    /// Reads the JS value `v`; `Err` is the caller's exception.
    fn read(v: &JsValue) -> Result<JsReading, JsValue> {
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
    fn validate(self) -> Result<CoreReading<'static>, Error> {
        if self.lost_id {
            Err(lone_surrogate(Field::DeviceId))
        } else {
            validate(self.raw)
        }
    }
}

/// One reading argument (`idempotencyKey`, `contains`), validated.
fn reading_arg(v: &JsValue) -> Result<CoreReading<'static>, JsValue> {
    JsReading::read(v)
        .map_err(|e| threw_arg("the reading", &e))
        .and_then(JsReading::validate)
        .map_err(to_js)
}

/// A burst given as an array of readings or `{ readings: [...] }`, read element by
/// element; `invalid_burst` for any other shape or a caller's exception.
fn read_burst(burst: &JsValue) -> Result<Vec<JsReading>, Error> {
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

/// A plain copy of the object `v` (own enumerable members, read through catching
/// calls), its nested objects replaced by `{}` (never entered), for serde to read
/// without running caller code. `Err` is the caller's exception.
fn flat_copy(v: &JsValue) -> Result<JsValue, JsValue> {
    if !is_plain_object(v)? {
        return Ok(v.clone());
    }
    let pairs = try_entries(v)?;
    for pair in pairs.iter() {
        let pair: js_sys::Array = pair.unchecked_into();
        let value = pair.get(1);
        if value.is_object() || value.is_function() {
            pair.set(1, js_sys::Object::new().into());
        }
    }
    js_sys::Object::from_entries(&pairs).map(Into::into)
}

/// A time argument (`nowMs`): a JS number, checked by the core. Anything else (a
/// string such as `"123"`, `null`, a BigInt) would be coerced by JS, so it is refused.
fn time_arg(v: &JsValue) -> Result<f64, JsValue> {
    let t = v.as_f64().unwrap_or(f64::NAN);
    check_time(t).map(|_| t).map_err(to_js)
}

/// A flag argument: a boolean, or absent (`false`). JS truthiness would make the
/// string `"false"` a provisional admission, so anything else is `invalid_burst`.
fn flag_arg(v: &JsValue, name: &str) -> Result<bool, JsValue> {
    match v.as_bool() {
        Some(b) => Ok(b),
        None if v.is_undefined() || v.is_null() => Ok(false),
        None => Err(to_js(Error::InvalidBurst(format!(
            "{name} must be a boolean"
        )))),
    }
}

/// A ticket argument: a whole JS number within `0 ..= 2^32 − 1`; anything else
/// (`2**32 + 1`, `1.5`, `"1"`) is no ticket, so `unknown_ticket` rather than a
/// wrapped or truncated ticket of someone else.
fn ticket_arg(v: &JsValue) -> Result<u32, JsValue> {
    match v.as_f64() {
        Some(t) if t.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&t) => Ok(t as u32),
        Some(t) => Err(to_js(Error::NotATicket(t.to_string()))),
        None => Err(to_js(Error::NotATicket(type_name(v).into()))),
    }
}

/// A key list argument: one string, a key per line, valid Unicode (a device id in a
/// key that lost a lone surrogate would be another device's).
fn keys_arg(v: &JsValue) -> Result<String, JsValue> {
    match exact_string(v) {
        Some(Ok(s)) => Ok(s),
        Some(Err(())) => Err(Error::InvalidKey(
            "a key is not valid Unicode (lone surrogate)",
        )),
        None => Err(Error::InvalidKey(
            "the keys must be one string, a key per line",
        )),
    }
    .map_err(to_js)
}

/// `fromKeys`' admission times: a `Float64Array`, or an array of JS numbers (a
/// string or `null` in it would be coerced by a typed-array copy: `invalid_time`).
fn times_arg(v: &JsValue) -> Result<Vec<f64>, JsValue> {
    let thrown = |e: JsValue| to_js(threw_arg("the admission times", &e));
    if v.has_type::<js_sys::Float64Array>() || foreign_view(v, "[object Float64Array]") {
        return CopiedF64::new(v)
            .map(|a| a.unchecked_into::<js_sys::Float64Array>().to_vec())
            .map_err(thrown);
    }
    if !try_is_array(v).map_err(thrown)? {
        return Err(to_js(Error::InvalidKey(
            "admission times must be a Float64Array or an array of numbers",
        )));
    }
    try_array_from(v)
        .map_err(thrown)?
        .iter()
        .map(|t| time_arg(&t))
        .collect()
}

/// Whether `v` is a typed array whose type tag is `tag` (`[object Uint8Array]`), of
/// any realm (`node:vm`, an iframe, what Jest hands a test): `instanceof` fails across
/// realms, so such a value is recognised by `ArrayBuffer.isView` and its type tag,
/// which both read the value's internal slots.
fn foreign_view(v: &JsValue, tag: &str) -> bool {
    js_sys::ArrayBuffer::is_view(v) && type_tag(v) == tag
}

/// The bytes of a `Uint8Array` argument (of any realm), copied through a catching
/// call; `None` when `v` is no `Uint8Array`, `Err` the caller's exception (a Proxy's
/// trap).
fn u8_arg(v: &JsValue, what: &str) -> Option<Result<Vec<u8>, JsValue>> {
    (v.has_type::<js_sys::Uint8Array>() || foreign_view(v, "[object Uint8Array]")).then(|| {
        CopiedU8::new(v)
            .map(|a| a.unchecked_into::<js_sys::Uint8Array>().to_vec())
            .map_err(|e| to_js(threw_arg(what, &e)))
    })
}

/// `admitKeys`' `refused`: absent (0) or a whole JS number within `0 ..= 2^32 − 1`.
fn refused_arg(v: &JsValue) -> Result<usize, JsValue> {
    if v.is_undefined() || v.is_null() {
        return Ok(0);
    }
    match v.as_f64() {
        Some(n) if n.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&n) => Ok(n as usize),
        _ => Err(to_js(Error::InvalidBurst(format!(
            "refused must be a whole number 0 ..= 4294967295, got {}",
            js_sys::JSON::stringify(v)
                .map(String::from)
                .unwrap_or_else(|_| "a value JSON cannot write".into())
        )))),
    }
}

/// Line and column (1-based, in characters) of the first lone surrogate of `text`.
/// Unit by unit across the boundary: only for a text known to have one.
fn lone_surrogate_at(text: &js_sys::JsString) -> (usize, usize) {
    let (mut line, mut column) = (1, 1);
    for c in char::decode_utf16(text.iter()) {
        match c {
            Err(_) => break,
            Ok('\n') => (line, column) = (line + 1, 1),
            Ok(_) => column += 1,
        }
    }
    (line, column)
}

/// The bytes of a body passed as a string or a `Uint8Array`. A string that is not
/// valid Unicode is not JSON text: `invalid_json`, saying where.
fn body_bytes(body: JsValue, function: &str) -> Result<Vec<u8>, JsValue> {
    if let Some(s) = exact_string(&body) {
        s.map(String::into_bytes).map_err(|()| {
            let (line, column) = lone_surrogate_at(body.unchecked_ref());
            to_js(Error::InvalidJson(format!(
                "the text is not valid Unicode (lone surrogate) at line {line} column {column}"
            )))
        })
    } else if let Some(bytes) = u8_arg(&body, "the body") {
        bytes
    } else {
        Err(to_js(Error::InvalidBurst(format!(
            "{function} takes a string or a Uint8Array"
        ))))
    }
}

/// JSON-compatible values (`null` for `None`, plain objects), except that bytes
/// become a `Uint8Array` (only [`KeyAdmission::verdicts`] has bytes).
fn serializer() -> serde_wasm_bindgen::Serializer {
    serde_wasm_bindgen::Serializer::json_compatible().serialize_bytes_as_arrays(false)
}

/// `v` as a JS value. Only a type with a generated declaration is returned, named
/// by the function's `unchecked_return_type`.
fn to_value<T: Tsify + Serialize>(v: &T) -> Result<JsValue, JsValue> {
    v.serialize(&serializer())
        .map_err(|e| to_js(Error::InvalidBurst(e.to_string())))
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

/// A device id argument: a JS string that is valid Unicode (a lone surrogate would be
/// mapped to U+FFFD, and two ids would collide), else `invalid_device_id`. The id's
/// rules are the core's to check.
fn device_id_arg(v: &JsValue) -> Result<String, JsValue> {
    match exact_string(v) {
        None => Err(Error::Invalid(Field::DeviceId, "must be a string")),
        Some(Err(())) => Err(lone_surrogate(Field::DeviceId)),
        Some(Ok(s)) => Ok(s),
    }
    .map_err(to_js)
}

/// The seen-set's limits, whole numbers; an absent one takes its default. Ranges
/// and defaults: `limits().ttlMs` and `limits().maxKeys`.
#[derive(Deserialize, Default, Tsify)]
#[serde(default, rename_all = "camelCase")]
pub struct DeduplicatorOptions {
    /// How long a key is held, in ms.
    ttl_ms: Option<f64>,
    /// How many keys are held at most; the oldest goes first.
    max_keys: Option<f64>,
}

/// Reads `{ ttlMs, maxKeys }` (either may be absent, unknown members are ignored)
/// into whole numbers; `what` names the argument in messages. Throws
/// `invalid_config` naming the option and what it must be.
fn options_from(options: &JsValue, what: &str) -> Result<(Option<u64>, Option<usize>), JsValue> {
    let config = |why: String| to_js(Error::InvalidConfig(why));
    if options.is_undefined() || options.is_null() {
        return Ok((None, None));
    }
    if !is_plain_object(options).map_err(|e| config(threw(what, &e)))? {
        return Err(config(format!(
            "{what} must be an object {{ ttlMs, maxKeys }}, got {}",
            type_name(options)
        )));
    }
    let (mut ttl, mut max) = (JsValue::UNDEFINED, JsValue::UNDEFINED);
    for (name, value) in members(options).map_err(|e| config(threw(what, &e)))? {
        match name.as_str() {
            "ttlMs" => ttl = value,
            "maxKeys" => max = value,
            _ => {}
        }
    }
    let whole = |v: &JsValue, name: &str| -> Result<Option<u64>, JsValue> {
        if v.is_undefined() || v.is_null() {
            return Ok(None);
        }
        match v.as_f64() {
            Some(x) if x.is_finite() && x.fract() == 0.0 && x >= 0.0 => Ok(Some(x as u64)),
            Some(x) => Err(config(format!("{name} must be a whole number, got {x}"))),
            None => Err(config(format!(
                "{name} must be a number (a whole number; see limits()), got {}",
                type_name(v)
            ))),
        }
    };
    let ttl = whole(&ttl, "ttlMs")?;
    let max = whole(&max, "maxKeys")?.map(|m| usize::try_from(m).unwrap_or(usize::MAX));
    Ok((ttl, max))
}

/// `{ ttlMs, maxKeys }` with the defaults filled in, checked.
fn config_from(options: &JsValue, what: &str) -> Result<Config, JsValue> {
    let (ttl, max) = options_from(options, what)?;
    Config::new(
        ttl.unwrap_or(DEFAULT_TTL_MS),
        max.unwrap_or(DEFAULT_MAX_KEYS),
    )
    .map_err(to_js)
}

fn audit_context(context: JsValue) -> Result<AuditContext, JsValue> {
    if context.is_undefined() || context.is_null() {
        return Ok(AuditContext::default());
    }
    let context = flat_copy(&context).map_err(|e| to_js(threw_arg("the audit context", &e)))?;
    let c: AuditContext = serde_wasm_bindgen::from_value(context.clone())
        .map_err(|e| to_js(Error::BadArgument(format!("audit context: {e}"))))?;
    for (name, value) in [
        ("device_id", &c.device_id),
        ("route", &c.route),
        ("burst_id", &c.burst_id),
        ("error", &c.error),
    ] {
        if value.as_deref().is_some_and(maybe_lossy) && !member_well_formed(&context, name) {
            return Err(to_js(Error::InvalidBurst(format!(
                "audit context {name} is not valid Unicode (lone surrogate)"
            ))));
        }
    }
    Ok(c)
}

/// What `stats()` returns: the seen-set's counters, its memory and its limits.
#[derive(Serialize, Tsify)]
pub struct DeduplicatorStats {
    #[serde(flatten)]
    stats: Stats,
    /// Bytes of memory the seen-set holds.
    memory_bytes: usize,
    ttl_ms: u64,
    max_keys: usize,
}

impl DeduplicatorStats {
    /// The set's figures; counters beyond 2^53 − 1 (which a JS number cannot hold
    /// exactly, and no real traffic reaches) read as 2^53 − 1.
    fn of(seen: &SeenSet) -> DeduplicatorStats {
        DeduplicatorStats {
            stats: seen.stats().capped(MAX_COUNTER),
            memory_bytes: seen.memory_bytes(),
            ttl_ms: seen.config().ttl_ms(),
            max_keys: seen.config().max_keys(),
        }
    }
}

/// What `admitKeys` returns.
#[derive(Serialize, Tsify)]
pub struct KeyAdmission {
    /// One verdict per key, in order: 0 admitted, 1 admitted with a seq reuse (its
    /// device and seq were held with other content), 2 duplicate, 3 pending (held
    /// provisionally by another call's open ticket; library use only).
    // The core's `Verdict` as a byte; bytes become a Uint8Array (see `serializer`).
    #[tsify(type = "Uint8Array")]
    verdicts: Verdicts,
    /// The burst's audit counts, `refused` included in `rejected`.
    counts: AuditCounts,
    /// The burst's audit line (JSON text) with the context appended.
    line: String,
}

/// Verdict bytes, written as bytes (a `Uint8Array`, see [`serializer`]).
pub struct Verdicts(Vec<u8>);

impl Serialize for Verdicts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

/// A deduplicator with its bounded seen-set. Time is always passed in (`Date.now()`).
#[wasm_bindgen(js_name = Deduplicator)]
pub struct JsDeduplicator {
    inner: Deduplicator,
}

#[wasm_bindgen(js_class = Deduplicator)]
impl JsDeduplicator {
    /// `new Deduplicator({ ttlMs, maxKeys })`; both optional. Throws `invalid_config`.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_optional_param_type = "DeduplicatorOptions")] options: JsValue,
    ) -> Result<JsDeduplicator, JsValue> {
        Ok(JsDeduplicator {
            inner: Deduplicator::new(config_from(&options, "the options")?),
        })
    }

    /// Processes an array of reading objects (or `{readings: [...]}`) at `nowMs`.
    /// With `provisional`, admitted keys stay pending under `outcome.ticket`.
    #[wasm_bindgen(js_name = processBurst, unchecked_return_type = "BurstOutcome")]
    pub fn process_burst(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "Burst")] readings: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now_ms: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "boolean | null")] provisional: JsValue,
    ) -> Result<JsValue, JsValue> {
        let now_ms = time_arg(&now_ms)?;
        let provisional = flag_arg(&provisional, "provisional")?;
        let burst = read_burst(&readings).map_err(to_js)?;
        let checked = burst.into_iter().map(JsReading::validate);
        let out: BurstOutcome = self
            .inner
            .process_readings(checked, now_ms, provisional)
            .map_err(to_js)?;
        to_value(&out)
    }

    /// The bulk path: the burst as JSON text or UTF-8 bytes in, the outcome as JSON
    /// text out: a {@link BurstOutcome}, as `processBurst` returns it. No reading
    /// crosses the boundary as an object.
    #[wasm_bindgen(js_name = processBurstJson)]
    pub fn process_burst_json(
        &mut self,
        // A JS union read by `body_bytes`, not a serde value: nothing to derive from.
        #[wasm_bindgen(unchecked_param_type = "string | Uint8Array")] json: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now_ms: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "boolean | null")] provisional: JsValue,
    ) -> Result<String, JsValue> {
        let now_ms = time_arg(&now_ms)?;
        let provisional = flag_arg(&provisional, "provisional")?;
        let bytes = body_bytes(json, "processBurstJson")?;
        let out = self
            .inner
            .process_json(&bytes, now_ms, provisional)
            .map_err(to_js)?;
        Ok(out.to_json())
    }

    /// Admits keys already derived (one per line, `device_id:seq:<16 hex>` as
    /// `parseUplink` or `idempotencyKey` give them) at `nowMs`; `refused` readings of
    /// the same burst count in the audit. No reading is validated and no SHA-256
    /// computed. Returns a {@link KeyAdmission}: a verdict per key, the audit counts
    /// and the audit line with `context` appended. `refused` is a whole number
    /// `0 ..= 2^32 − 1` (absent: 0). Throws `invalid_key`, `invalid_time`,
    /// `invalid_burst` (a bad `refused` or context); a call that throws admits nothing.
    #[wasm_bindgen(js_name = admitKeys, unchecked_return_type = "KeyAdmission")]
    pub fn admit_keys(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "string")] keys: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now_ms: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "number")] refused: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "AuditContext")] context: JsValue,
    ) -> Result<JsValue, JsValue> {
        let now_ms = time_arg(&now_ms)?;
        let keys = keys_arg(&keys)?;
        let refused = refused_arg(&refused)?;
        let context = audit_context(context)?;
        let out = self
            .inner
            .admit_keys(&keys, now_ms, refused)
            .map_err(to_js)?;
        to_value(&KeyAdmission {
            verdicts: Verdicts(out.verdicts.iter().map(|v| *v as u8).collect()),
            counts: out.audit.payload,
            line: out.audit.line(&context),
        })
    }

    /// Rebuilds a deduplicator from stored keys (one per line) and their admission
    /// times in ms (same order, oldest first), as if it had never been dropped: TTL
    /// and the cap hold. No SHA-256. Throws `invalid_key`, `invalid_time`,
    /// `invalid_config`.
    #[wasm_bindgen(js_name = fromKeys)]
    pub fn from_keys(
        #[wasm_bindgen(unchecked_param_type = "string")] keys: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Float64Array | number[]")] admitted_at_ms: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "DeduplicatorOptions")] options: JsValue,
    ) -> Result<JsDeduplicator, JsValue> {
        let keys = keys_arg(&keys)?;
        let times = times_arg(&admitted_at_ms)?;
        let config = config_from(&options, "fromKeys' third argument (the options)")?;
        Deduplicator::from_keys(config, &keys, &times)
            .map(|inner| JsDeduplicator { inner })
            .map_err(to_js)
    }

    /// Makes a provisional admission permanent. Returns the number of keys confirmed.
    /// Throws `unknown_ticket` for a ticket never issued, or a value that is no
    /// ticket (not a whole number within `1 ..= 2^32 − 1`).
    pub fn confirm(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "number")] ticket: JsValue,
    ) -> Result<u32, JsValue> {
        let ticket = ticket_arg(&ticket)?;
        self.inner.confirm(ticket).map(|n| n as u32).map_err(to_js)
    }

    /// Withdraws a provisional admission so a retry is admitted. Returns the number
    /// of keys withdrawn. Throws `unknown_ticket` as `confirm` does.
    pub fn release(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "number")] ticket: JsValue,
    ) -> Result<u32, JsValue> {
        let ticket = ticket_arg(&ticket)?;
        self.inner.release(ticket).map(|n| n as u32).map_err(to_js)
    }

    /// Whether `reading`'s key is held at `nowMs`. Changes nothing.
    pub fn contains(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "Reading")] reading: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now_ms: JsValue,
    ) -> Result<bool, JsValue> {
        let now_ms = time_arg(&now_ms)?;
        let reading = reading_arg(&reading)?;
        self.inner.contains(&reading, now_ms).map_err(to_js)
    }

    /// Counters, current sizes and limits.
    #[wasm_bindgen(unchecked_return_type = "DeduplicatorStats")]
    pub fn stats(&self) -> Result<JsValue, JsValue> {
        to_value(&DeduplicatorStats::of(self.inner.seen()))
    }

    /// The confirmed keys, limits, counters and hash key as versioned bytes.
    pub fn snapshot(&self) -> Vec<u8> {
        self.inner.snapshot()
    }

    /// Rebuilds a deduplicator from `snapshot()` bytes (a `Uint8Array`); `options`
    /// override the stored limits. Throws `invalid_snapshot` for anything else, and for
    /// corrupt, foreign or forged bytes (every field is checked, not only the checksum).
    pub fn restore(
        #[wasm_bindgen(unchecked_param_type = "Uint8Array")] bytes: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "DeduplicatorOptions")] options: JsValue,
    ) -> Result<JsDeduplicator, JsValue> {
        let bytes = u8_arg(&bytes, "the snapshot")
            .ok_or_else(|| to_js(Error::InvalidSnapshot("a snapshot is a Uint8Array")))??;
        let (ttl, max) = options_from(&options, "restore's second argument (the options)")?;
        Deduplicator::restore(&bytes, ttl, max)
            .map(|inner| JsDeduplicator { inner })
            .map_err(to_js)
    }
}

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

/// A `seq` argument: a whole JS number within ±(2^53 − 1); anything else is `invalid_seq`.
fn seq_arg(v: &JsValue) -> Result<i64, JsValue> {
    match v.as_f64() {
        Some(n) if n.fract() == 0.0 && n.abs() <= MAX_SAFE_SEQ as f64 => Ok(n as i64),
        _ => Err(to_js(Error::Invalid(
            Field::Seq,
            "must be a whole number within ±(2^53−1)",
        ))),
    }
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
        let bytes = u8_arg(&bytes, "the window's bytes").ok_or_else(|| {
            to_js(Error::InvalidSnapshot(
                "a sequence window's bytes are a Uint8Array",
            ))
        })??;
        SeqWindow::from_bytes(&bytes)
            .map(|inner| JsSeqWindow { inner })
            .map_err(to_js)
    }
}

/// The audit line of a burst that has no `admitKeys` outcome (readings no device
/// got, a burst that could not be stored): `event` is `burst_deduplicated` or
/// `burst_not_stored`, the counts must reconcile. Throws `invalid_burst`,
/// `invalid_time`.
#[wasm_bindgen(js_name = auditLine)]
pub fn audit_line(
    // A string, read below into `AuditEvent` (a bad one is `invalid_burst`).
    #[wasm_bindgen(unchecked_param_type = "AuditEvent")] event: JsValue,
    #[wasm_bindgen(unchecked_param_type = "AuditCounts")] counts: JsValue,
    #[wasm_bindgen(unchecked_param_type = "number")] now_ms: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "AuditContext")] context: JsValue,
) -> Result<String, JsValue> {
    let now_ms = time_arg(&now_ms)?;
    let unknown = |given: String| {
        to_js(Error::BadArgument(format!(
            "unknown audit event {given}; expected burst_deduplicated or burst_not_stored"
        )))
    };
    let name = event
        .as_string()
        .ok_or_else(|| unknown(format!("<{}>", type_name(&event))))?;
    let event: AuditEvent = serde_json::from_value(serde_json::Value::from(name.as_str()))
        .map_err(|_| unknown(format!("{:?}", shown(&name))))?;
    let counts = flat_copy(&counts).map_err(|e| to_js(threw_arg("the audit counts", &e)))?;
    let counts: AuditCounts = serde_wasm_bindgen::from_value(counts)
        .map_err(|e| to_js(Error::BadArgument(format!("audit counts: {e}"))))?;
    // The core's text already names the counts ("audit counts do not reconcile").
    let audit = Audit::new(event, counts, now_ms)
        .map_err(|e| match e {
            Error::InvalidBurst(why) => Error::BadArgument(why),
            e => e,
        })
        .map_err(to_js)?;
    Ok(audit.line(&audit_context(context)?))
}

/// A time in ms since the epoch as every record of this project writes times:
/// Python's `isoformat()` of the UTC instant (`2026-07-16T09:00:11.204000+00:00`).
/// Throws `invalid_time`.
#[wasm_bindgen(js_name = isoTime)]
pub fn iso_time(
    #[wasm_bindgen(unchecked_param_type = "number")] ms: JsValue,
) -> Result<String, JsValue> {
    let ms = check_time(time_arg(&ms)?).map_err(to_js)?;
    Ok(isoformat(ms * 1000))
}

/// A configurable number: its smallest and largest allowed values and its default.
#[derive(Serialize, Tsify)]
pub struct Range {
    min: u64,
    max: u64,
    default: u64,
}

/// What `limits()` returns.
#[derive(Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// `DeduplicatorOptions.ttlMs`, in ms.
    ttl_ms: Range,
    /// `DeduplicatorOptions.maxKeys`.
    max_keys: Range,
    /// `UplinkOptions.maxReadings`: readings in one request.
    max_readings: Range,
    /// The `format` names `parseUplink` takes.
    formats: &'static [&'static str],
    /// The `codec` ids `decodePayload` takes.
    codecs: &'static [&'static str],
    /// The ranges of a device configuration's numbers (`PayloadConfig`, and the
    /// worker's `PUT /v1/devices/{id}/config`).
    device_config: DeviceConfigLimits,
}

/// A whole number's smallest and largest allowed values.
#[derive(Serialize, Tsify)]
pub struct Bounds {
    min: u32,
    max: u32,
}

impl From<(u32, u32)> for Bounds {
    fn from((min, max): (u32, u32)) -> Bounds {
        Bounds { min, max }
    }
}

/// `limits().deviceConfig`: each number of a device configuration, by its member name.
#[derive(Serialize, Tsify)]
pub struct DeviceConfigLimits {
    bin_depth_mm: Bounds,
    offset_mm: Bounds,
    reporting_period_s: Bounds,
}

/// The limits and names every layer reads from here: TTL and cap ranges, the
/// readings-per-request cap, the webhook format names.
#[wasm_bindgen(unchecked_return_type = "Limits")]
pub fn limits() -> Result<JsValue, JsValue> {
    to_value(&Limits {
        ttl_ms: Range {
            min: 1,
            max: MAX_TTL_MS,
            default: DEFAULT_TTL_MS,
        },
        max_keys: Range {
            min: 1,
            max: MAX_MAX_KEYS as u64,
            default: DEFAULT_MAX_KEYS as u64,
        },
        max_readings: Range {
            min: 1,
            max: MAX_MAX_READINGS as u64,
            default: DEFAULT_MAX_READINGS as u64,
        },
        formats: Format::NAMES,
        codecs: &Codec::IDS,
        device_config: DeviceConfigLimits {
            bin_depth_mm: BIN_DEPTH_MM.into(),
            offset_mm: OFFSET_MM.into(),
            reporting_period_s: REPORTING_PERIOD_S.into(),
        },
    })
}

/// Overrides for `parseUplink`; each may be absent.
#[derive(Deserialize, Default, Tsify)]
#[serde(default, rename_all = "camelCase")]
pub struct UplinkOptions {
    /// Where the decoded payload holds `seq`: a member name, or a JSON Pointer
    /// such as `/counter/value` (default `seq`).
    seq_field: Option<String>,
    /// Where the decoded payload holds `ts`: a member name or a JSON Pointer
    /// (default `ts`).
    ts_field: Option<String>,
    /// Where the decoded payload holds `fill_pct`: a member name or a JSON Pointer
    /// such as `/level/fill_pct` (default `fill_pct`).
    fill_field: Option<String>,
    /// Readings accepted in one request, a whole number; range and default:
    /// `limits().maxReadings`.
    max_readings: Option<f64>,
}

/// Maps a webhook body (`format`: one of `limits().formats`) to readings,
/// validates and keys each once, and splits them per device. Returns the JSON text
/// of an {@link UplinkPlan}: `index` is the reading's index in the request, `ts`
/// the UTC instant as the key hashed it, `device_id` of a rejection `null` when the
/// device id itself is bad; `ignored` for a message that is not an uplink,
/// `simulated` for The Things Stack's "Simulate uplink", `frame` when a reading's
/// `ts` is the receive time. Throws `unknown_format`, `invalid_json`,
/// `invalid_burst`, `field_mask_incomplete`, `too_many_readings` (beyond
/// `maxReadings`) or `invalid_config`.
#[wasm_bindgen(js_name = parseUplink)]
pub fn parse_uplink(
    #[wasm_bindgen(unchecked_param_type = "string")] format: JsValue,
    // A JS union read by `body_bytes`, not a serde value: nothing to derive from.
    #[wasm_bindgen(unchecked_param_type = "string | Uint8Array")] body: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "UplinkOptions")] options: JsValue,
) -> Result<String, JsValue> {
    // `as_string` and `type_name` run no caller code (a Proxy's traps, a toString).
    let name = format
        .as_string()
        .ok_or_else(|| to_js(Error::UnknownFormat(format!("<{}>", type_name(&format)))))?;
    let format = Format::from_name(&name).map_err(|_| to_js(Error::UnknownFormat(shown(&name))))?;
    let (names, max) = uplink_options(&options).map_err(to_js)?;
    let bytes = body_bytes(body, "parseUplink")?;
    let out = plan(format, &bytes, &names, max).map_err(to_js)?;
    serde_json::to_string(&out).map_err(|e| to_js(Error::InvalidBurst(e.to_string())))
}

/// Checks `parseUplink`'s options without a body, so that a bad field path is found
/// when the worker starts rather than with the first uplink. Throws `invalid_config`
/// naming the option (`seqField`, `tsField`, `fillField`, `maxReadings`).
#[wasm_bindgen(js_name = checkUplinkOptions)]
pub fn check_uplink_options(
    #[wasm_bindgen(unchecked_param_type = "UplinkOptions")] options: JsValue,
) -> Result<(), JsValue> {
    uplink_options(&options).map(|_| ()).map_err(to_js)
}

/// The field paths and readings cap of `parseUplink`'s options (absent: defaults).
fn uplink_options(options: &JsValue) -> Result<(FieldNames, usize), Error> {
    let opts: UplinkOptions = if options.is_undefined() || options.is_null() {
        UplinkOptions::default()
    } else {
        let options = flat_copy(options)
            .map_err(|e| Error::InvalidConfig(threw("the uplink options", &e)))?;
        serde_wasm_bindgen::from_value(options)
            .map_err(|e| Error::InvalidConfig(format!("uplink options: {e}")))?
    };
    let names = FieldNames::new(
        opts.seq_field.as_deref(),
        opts.ts_field.as_deref(),
        opts.fill_field.as_deref(),
    )?;
    let max = match opts.max_readings {
        None => DEFAULT_MAX_READINGS,
        Some(x) if x.is_finite() && x.fract() == 0.0 && x >= 0.0 => x as usize,
        Some(x) => {
            return Err(Error::InvalidConfig(format!(
                "maxReadings must be a whole number, got {x}"
            )))
        }
    };
    Ok((names, max))
}

/// Reads one uplink's raw payload with a sensor codec (`codec`: one of
/// `limits().codecs`, e.g. `"milesight-iot/em500-udl"`; `fPort` the frame's port).
/// Returns a {@link DecodedPayload}: the battery when the frame has one, and each level
/// sample (the live one, history records with their device time, Tekelek's previous
/// ones) with its distance in mm or why it has none (`no_reading`). Throws
/// `unknown_codec`, `invalid_payload` (bytes the codec cannot read),
/// `unsupported_port` (a port without level data) or `invalid_burst` (a codec that is
/// not a string, an fPort that is not a whole number 0 ..= 255, a payload that is not
/// a readable `Uint8Array`).
#[wasm_bindgen(js_name = decodePayload, unchecked_return_type = "DecodedPayload")]
pub fn decode_payload_js(
    #[wasm_bindgen(unchecked_param_type = "string")] codec: JsValue,
    #[wasm_bindgen(unchecked_param_type = "number")] f_port: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Uint8Array")] payload: JsValue,
) -> Result<JsValue, JsValue> {
    // `as_string` and `type_name` run no caller code (a Proxy's traps, a toString).
    let id = codec.as_string().ok_or_else(|| {
        to_js(Error::BadArgument(format!(
            "the codec must be a string, one of limits().codecs; got {}",
            type_name(&codec)
        )))
    })?;
    let codec = codec_arg(&id)?;
    let (port, bytes) = frame_args(&f_port, &payload)?;
    let uplink = decode(codec, port, &bytes).map_err(to_js)?;
    to_value(&Decoded::new(codec, &uplink))
}

/// A codec by its id (`unknown_codec`, the id shown at most 64 characters long).
fn codec_arg(id: &str) -> Result<Codec, JsValue> {
    Codec::from_id(id).map_err(|_| to_js(Error::UnknownCodec(shown(id))))
}

/// A frame's port (a whole number 0 ..= 255) and payload bytes, copied through a
/// catching constructor: a Proxy or a detached buffer throws a coded error, not the
/// runtime's TypeError.
fn frame_args(f_port: &JsValue, payload: &JsValue) -> Result<(u32, Vec<u8>), JsValue> {
    let port = f_port
        .as_f64()
        .filter(|p| p.fract() == 0.0 && (0.0..=255.0).contains(p))
        .ok_or_else(|| {
            to_js(Error::BadArgument(
                "fPort must be a whole number 0 ..= 255".into(),
            ))
        })?;
    let bytes = u8_arg(payload, "the payload").unwrap_or_else(|| {
        Err(to_js(Error::BadArgument(
            "the payload must be a Uint8Array".into(),
        )))
    })?;
    Ok((port as u32, bytes))
}

/// A device's bin and sensor for `readingsFromPayload`, as the worker's
/// `PUT /v1/devices/{id}/config` stores them (ranges: `limits().deviceConfig`).
#[derive(Deserialize, Tsify)]
pub struct PayloadConfig {
    /// One of `limits().codecs`.
    codec: String,
    bin_depth_mm: u32,
    #[serde(default)]
    offset_mm: u32,
    #[serde(default)]
    reporting_period_s: Option<u32>,
}

/// What the network server said about the frame, for `readingsFromPayload`.
#[derive(Deserialize, Tsify)]
pub struct PayloadFrame {
    /// The receive time, RFC 3339.
    received_at: String,
    /// The LoRaWAN frame counter (absent: 0).
    #[serde(default)]
    f_cnt: i64,
    /// The device's stored application-counter reference (`counter_ref` of its last
    /// `PayloadReadings`; absent or null before the first).
    #[serde(default)]
    counter_ref: Option<i64>,
    /// The device's stored schedule phase (`schedule_phase_s` of its last
    /// `PayloadReadings`; absent or null before the first): Tekelek's slots follow it.
    #[serde(default)]
    schedule_phase_s: Option<i64>,
    /// The radio frame's identity, the plan's `raw.frame` (16 lower-case hex digits):
    /// each reading keyed at the receive time then carries one of its own, as a
    /// decoded payload's reading does, so a later copy of the frame is re-keyed by the
    /// worker. Absent or null: every reading's `frame` is null.
    #[serde(default, deserialize_with = "frame_id")]
    #[tsify(type = "string | null")]
    frame: Option<u64>,
}

/// One uplink's raw payload as keyed readings of `deviceId`: decoded by the config's
/// codec, each sample made a reading by the rules of docs/devices.md "Configure a device" (fill
/// level from the bin's geometry; ts the device's time, Tekelek's slot or the receive
/// time; seq the unwrapped application counter, the device time in seconds or the
/// frame counter), validated and keyed as every reading is. Returns a
/// {@link PayloadReadings}: the readings (`index`: the sample's place; `frame`: the
/// sample's identity in `frame.frame` when its ts derives from the receive time, else
/// null), the samples rejected (`no_reading` for a sentinel, `invalid_ts`,
/// `invalid_seq`) and the counter reference and schedule phase to keep. Throws `invalid_device_id`,
/// `unknown_codec`, `invalid_config`, `invalid_payload`, `unsupported_port`,
/// `missing_reporting_period`, `invalid_ts` (a bad `received_at`) or `invalid_burst`
/// (arguments of the wrong type, a `frame.frame` that is not 16 lower-case hex digits).
#[wasm_bindgen(js_name = readingsFromPayload, unchecked_return_type = "PayloadReadings")]
pub fn readings_from_payload_js(
    #[wasm_bindgen(unchecked_param_type = "string")] device_id: JsValue,
    #[wasm_bindgen(unchecked_param_type = "PayloadConfig")] config: JsValue,
    #[wasm_bindgen(unchecked_param_type = "number")] f_port: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Uint8Array")] payload: JsValue,
    #[wasm_bindgen(unchecked_param_type = "PayloadFrame")] frame: JsValue,
) -> Result<JsValue, JsValue> {
    let device_id = device_id_arg(&device_id)?;
    let config: PayloadConfig = object_arg(
        &config,
        "the device config",
        &["codec", "bin_depth_mm", "offset_mm", "reporting_period_s"],
    )?;
    let frame: PayloadFrame = object_arg(
        &frame,
        "the frame",
        &[
            "received_at",
            "f_cnt",
            "counter_ref",
            "schedule_phase_s",
            "frame",
        ],
    )?;
    let codec = codec_arg(&config.codec)?;
    let (port, bytes) = frame_args(&f_port, &payload)?;
    // Zero is below every range's minimum (`payload_readings` checks the rest).
    let nonzero = |name: &str, v: u32| {
        NonZeroU32::new(v)
            .ok_or_else(|| to_js(Error::InvalidConfig(format!("{name} must not be 0"))))
    };
    let device = DeviceConfig {
        codec: Some(codec),
        bin_depth_mm: nonzero("bin_depth_mm", config.bin_depth_mm)?,
        offset_mm: config.offset_mm,
        reporting_period_s: config
            .reporting_period_s
            .map(|p| nonzero("reporting_period_s", p))
            .transpose()?,
    };
    let received_at = parse_rfc3339(&frame.received_at).map_err(|_| {
        to_js(Error::Invalid(
            Field::Ts,
            "received_at must be an RFC 3339 time",
        ))
    })?;
    let meta = FrameMeta {
        received_at,
        f_cnt: frame.f_cnt,
        frame: frame.frame,
    };
    let out = payload_readings(
        &device_id,
        codec,
        &device,
        port,
        &bytes,
        &meta,
        DeviceState {
            counter_ref: frame.counter_ref,
            schedule_phase_s: frame.schedule_phase_s,
        },
    )
    .map_err(to_js)?;
    to_value(&out)
}

/// `PayloadFrame::frame`: absent or null, or a frame identity as `RawUplink::frame`
/// writes it, exactly 16 lower-case hex digits; anything else names the member.
fn frame_id<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let rule = |got: &str| {
        serde::de::Error::custom(format!(
            "member \"frame\" must be 16 lower-case hex digits (a plan's raw.frame), got {got}"
        ))
    };
    let Some(text) = Option::<String>::deserialize(d).map_err(|_| rule("no string"))? else {
        return Ok(None);
    };
    let lower_hex =
        text.len() == 16 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    u64::from_str_radix(&text, 16)
        .ok()
        .filter(|_| lower_hex)
        .map(Some)
        .ok_or_else(|| rule(&format!("{:?}", shown(&text))))
}

/// A plain object argument read into `T` through catching calls (a getter or Proxy
/// that throws is `invalid_burst`); a member of the wrong type, or one not among
/// `members`, is `invalid_burst` naming it (serde reads only the members it knows).
fn object_arg<T: serde::de::DeserializeOwned>(
    v: &JsValue,
    what: &str,
    members: &[&str],
) -> Result<T, JsValue> {
    let copy = flat_copy(v).map_err(|e| to_js(threw_arg(what, &e)))?;
    if copy.is_object() {
        // A plain copy: reading its keys runs no caller code.
        let keys = js_sys::Object::keys(copy.unchecked_ref::<js_sys::Object>());
        if let Some(unknown) = keys
            .iter()
            .filter_map(|k| k.as_string())
            .find(|k| !members.contains(&k.as_str()))
        {
            return Err(to_js(Error::BadArgument(format!(
                "{what}: unknown member {:?}; expected {}",
                shown(&unknown),
                members.join(", ")
            ))));
        }
    }
    serde_wasm_bindgen::from_value(copy)
        .map_err(|e| to_js(Error::BadArgument(format!("{what}: {e}"))))
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
