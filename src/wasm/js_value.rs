//! How the facade reads what a caller passes, hardened: a string is checked for lone
//! surrogates (wasm-bindgen's conversion maps one to U+FFFD), every read that can run
//! caller code is a catching import, a typed array is recognised across realms, and
//! a scalar argument (a time, a flag, a ticket, a seq, keys, a device id, a body) is
//! refused where JS would coerce it. It exports nothing; the rules the values must
//! then follow are the core's.

use crate::dedupe::dedup::check_time;
use crate::dedupe::error::{Error, Field};
use crate::dedupe::reading::{lone_surrogate, MAX_SAFE_SEQ};
use wasm_bindgen::prelude::*;

use super::to_js;

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
pub(super) fn maybe_lossy(s: &str) -> bool {
    s.contains('\u{FFFD}')
}

/// Whether the JS string `v`, converted to `converted`, has no lone surrogate.
pub(super) fn well_formed(v: &js_sys::JsString, converted: &str) -> bool {
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
pub(super) fn member_well_formed(object: &JsValue, name: &str) -> bool {
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
    pub(super) fn try_is_array(v: &JsValue) -> Result<bool, JsValue>;
    /// `Array.from`: a plain copy of an array (a Proxy's traps run inside).
    #[wasm_bindgen(catch, js_namespace = Array, js_name = from)]
    pub(super) fn try_array_from(v: &JsValue) -> Result<js_sys::Array, JsValue>;
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
pub(super) fn threw(what: &str, e: &JsValue) -> String {
    format!("{what} could not be read: reading it threw {}", describe(e))
}

/// The `invalid_burst` error of an argument whose reading threw `e`.
pub(super) fn threw_arg(what: &str, e: &JsValue) -> Error {
    Error::BadArgument(threw(what, e))
}

/// A caller's text in a message: as given, at most 64 characters.
pub(super) fn shown(text: &str) -> String {
    match text.char_indices().nth(64) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// What kind of JS value `v` is, for messages; runs no caller code.
pub(super) fn type_name(v: &JsValue) -> &'static str {
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
pub(super) fn members(v: &JsValue) -> Result<impl Iterator<Item = (String, JsValue)>, JsValue> {
    let pairs = try_entries(v)?;
    Ok(pairs.into_iter().filter_map(|pair| {
        let pair: js_sys::Array = pair.unchecked_into();
        Some((pair.get(0).as_string()?, pair.get(1)))
    }))
}

/// Whether `v` is an object that is not an array (nor a function).
pub(super) fn is_plain_object(v: &JsValue) -> Result<bool, JsValue> {
    Ok(v.is_object() && !try_is_array(v)?)
}

/// A plain copy of the object `v` (own enumerable members, read through catching
/// calls), its nested objects replaced by `{}` (never entered), for serde to read
/// without running caller code. `Err` is the caller's exception.
pub(super) fn flat_copy(v: &JsValue) -> Result<JsValue, JsValue> {
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
pub(super) fn time_arg(v: &JsValue) -> Result<f64, JsValue> {
    let t = v.as_f64().unwrap_or(f64::NAN);
    check_time(t).map(|_| t).map_err(to_js)
}

/// A flag argument: a boolean, or absent (`false`). JS truthiness would make the
/// string `"false"` a provisional admission, so anything else is `invalid_burst`.
pub(super) fn flag_arg(v: &JsValue, name: &str) -> Result<bool, JsValue> {
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
pub(super) fn ticket_arg(v: &JsValue) -> Result<u32, JsValue> {
    match (whole_u32(v), v.as_f64()) {
        (Some(t), _) => Ok(t),
        (None, Some(t)) => Err(to_js(Error::NotATicket(t.to_string()))),
        (None, None) => Err(to_js(Error::NotATicket(type_name(v).into()))),
    }
}

/// A JS number that is a whole number within `0 ..= 2^32 − 1` (`-0` is 0), else `None`.
pub(super) fn whole_u32(v: &JsValue) -> Option<u32> {
    v.as_f64()
        .filter(|n| n.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(n))
        .map(|n| n as u32)
}

/// A key list argument: one string, a key per line, valid Unicode (a device id in a
/// key that lost a lone surrogate would be another device's).
pub(super) fn keys_arg(v: &JsValue) -> Result<String, JsValue> {
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
pub(super) fn times_arg(v: &JsValue) -> Result<Vec<f64>, JsValue> {
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
pub(super) fn u8_arg(v: &JsValue, what: &str) -> Option<Result<Vec<u8>, JsValue>> {
    (v.has_type::<js_sys::Uint8Array>() || foreign_view(v, "[object Uint8Array]")).then(|| {
        CopiedU8::new(v)
            .map(|a| a.unchecked_into::<js_sys::Uint8Array>().to_vec())
            .map_err(|e| to_js(threw_arg(what, &e)))
    })
}

/// Stored bytes read back (`fromBytes`, `restore`): a `Uint8Array`'s copy; anything
/// else is `invalid_snapshot` saying `refusal`.
pub(super) fn stored_bytes_arg(
    v: &JsValue,
    what: &str,
    refusal: &'static str,
) -> Result<Vec<u8>, JsValue> {
    u8_arg(v, what).ok_or_else(|| to_js(Error::InvalidSnapshot(refusal)))?
}

/// `admitKeys`' `refused`: absent (0) or a whole JS number within `0 ..= 2^32 − 1`.
pub(super) fn refused_arg(v: &JsValue) -> Result<usize, JsValue> {
    if v.is_undefined() || v.is_null() {
        return Ok(0);
    }
    match whole_u32(v) {
        Some(n) => Ok(n as usize),
        None => Err(to_js(Error::InvalidBurst(format!(
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
pub(super) fn body_bytes(body: JsValue, function: &str) -> Result<Vec<u8>, JsValue> {
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

/// A device id argument: a JS string that is valid Unicode (a lone surrogate would be
/// mapped to U+FFFD, and two ids would collide), else `invalid_device_id`. The id's
/// rules are the core's to check.
pub(super) fn device_id_arg(v: &JsValue) -> Result<String, JsValue> {
    match exact_string(v) {
        None => Err(Error::Invalid(Field::DeviceId, "must be a string")),
        Some(Err(())) => Err(lone_surrogate(Field::DeviceId)),
        Some(Ok(s)) => Ok(s),
    }
    .map_err(to_js)
}

/// A `seq` argument: a whole JS number within ±(2^53 − 1); anything else is `invalid_seq`.
pub(super) fn seq_arg(v: &JsValue) -> Result<i64, JsValue> {
    match v.as_f64() {
        Some(n) if n.fract() == 0.0 && n.abs() <= MAX_SAFE_SEQ as f64 => Ok(n as i64),
        _ => Err(to_js(Error::Invalid(
            Field::Seq,
            "must be a whole number within ±(2^53−1)",
        ))),
    }
}

/// A plain object argument read into `T` through catching calls (a getter or Proxy
/// that throws is `invalid_burst`); a member of the wrong type, or one not among
/// `members`, is `invalid_burst` naming it (serde reads only the members it knows).
pub(super) fn object_arg<T: serde::de::DeserializeOwned>(
    v: &JsValue,
    what: &str,
    members: &[&str],
) -> Result<T, JsValue> {
    object_and_copy(v, what, members).map(|(value, _)| value)
}

/// [`object_arg`], with the plain copy it read (for a caller that looks at a member's
/// text again, such as a lone surrogate's).
pub(super) fn object_and_copy<T: serde::de::DeserializeOwned>(
    v: &JsValue,
    what: &str,
    members: &[&str],
) -> Result<(T, JsValue), JsValue> {
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
    let value = serde_wasm_bindgen::from_value(copy.clone())
        .map_err(|e| to_js(Error::BadArgument(format!("{what}: {e}"))))?;
    Ok((value, copy))
}
