//! The JavaScript API: the only module with `#[wasm_bindgen]`. It converts values at
//! the boundary and turns every [`Error`] into a JS `Error` with a stable `code`; it
//! never panics on input (a panic would poison the Wasm instance).
//!
//! Its TypeScript declarations (`pkg/reconnect_dedupe.d.ts`) are generated from the
//! Rust types: every shape a caller passes or gets is a type with `derive(Tsify)`
//! (the core's behind the `typescript` feature, the facade's own below), so a
//! renamed field changes its declaration too. The signatures name those types
//! (`unchecked_*_type`); values cross with the facade's own serde-wasm-bindgen
//! conversions ([`to_value`], [`from_js`]), so tsify converts nothing at run time.
//! A name that no longer matches a declaration fails `tsc` (`tests/types/`, which
//! also type-checks real usage of the API); `tests/js/types-match.test.mjs` checks
//! the values returned against the declarations.

#[cfg(not(feature = "typescript"))]
compile_error!("the JavaScript API needs the `typescript` feature (a default one): its .d.ts is generated with tsify");

use crate::dedupe::dedup::{
    check_time, Audit, AuditContext, AuditCounts, AuditEvent, BurstOutcome, Deduplicator,
};
use crate::dedupe::error::Error;
use crate::dedupe::key::idempotency_key;
use crate::dedupe::reading::{validate, RawBurst, RawReading};
use crate::dedupe::seen::{
    Config, SeenSet, Stats, DEFAULT_MAX_KEYS, DEFAULT_TTL_MS, MAX_MAX_KEYS, MAX_TTL_MS,
};
use crate::dedupe::timestamp::isoformat;
use crate::uplink::{plan, FieldNames, Format, DEFAULT_MAX_READINGS, MAX_MAX_READINGS};
use serde::{Deserialize, Serialize};
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

/// The bytes of a body passed as a string or a `Uint8Array`.
fn body_bytes(body: JsValue, function: &str) -> Result<Vec<u8>, JsValue> {
    if let Some(s) = body.as_string() {
        Ok(s.into_bytes())
    } else if let Some(a) = body.dyn_ref::<js_sys::Uint8Array>() {
        Ok(a.to_vec())
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

/// Reads a JS value into a raw shape; its strings are copied, so `'static`.
fn from_js<T: Deserialize<'static>>(v: JsValue) -> Result<T, JsValue> {
    T::deserialize(serde_wasm_bindgen::Deserializer::from(v))
        .map_err(|e| to_js(Error::InvalidBurst(e.to_string())))
}

/// The idempotency key of one reading: `device_id:seq:<16 hex of SHA-256>`.
///
/// Throws an `Error` whose `code` names the problem (`invalid_fill_pct`, ...).
#[wasm_bindgen(js_name = idempotencyKey)]
pub fn idempotency_key_js(
    #[wasm_bindgen(unchecked_param_type = "Reading")] reading: JsValue,
) -> Result<String, JsValue> {
    let raw: RawReading = from_js(reading)?;
    let reading = validate(raw).map_err(to_js)?;
    Ok(idempotency_key(&reading))
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

/// Reads `{ ttlMs, maxKeys }` (either may be absent) into whole numbers.
fn options_from(options: JsValue) -> Result<(Option<u64>, Option<usize>), JsValue> {
    let opts: DeduplicatorOptions = if options.is_undefined() || options.is_null() {
        DeduplicatorOptions::default()
    } else {
        serde_wasm_bindgen::from_value(options)
            .map_err(|e| to_js(Error::InvalidConfig(e.to_string())))?
    };
    let whole = |v: Option<f64>, name: &str| -> Result<Option<u64>, JsValue> {
        match v {
            None => Ok(None),
            Some(x) if x.is_finite() && x.fract() == 0.0 && x >= 0.0 => Ok(Some(x as u64)),
            Some(x) => Err(to_js(Error::InvalidConfig(format!(
                "{name} must be a whole number, got {x}"
            )))),
        }
    };
    let ttl = whole(opts.ttl_ms, "ttlMs")?;
    let max = whole(opts.max_keys, "maxKeys")?.map(|m| usize::try_from(m).unwrap_or(usize::MAX));
    Ok((ttl, max))
}

/// `{ ttlMs, maxKeys }` with the defaults filled in, checked.
fn config_from(options: JsValue) -> Result<Config, JsValue> {
    let (ttl, max) = options_from(options)?;
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
    serde_wasm_bindgen::from_value(context).map_err(|e| to_js(Error::InvalidBurst(e.to_string())))
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
    fn of(seen: &SeenSet) -> DeduplicatorStats {
        DeduplicatorStats {
            stats: seen.stats(),
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
            inner: Deduplicator::new(config_from(options)?),
        })
    }

    /// Processes an array of reading objects (or `{readings: [...]}`) at `nowMs`.
    /// With `provisional`, admitted keys stay pending under `outcome.ticket`.
    #[wasm_bindgen(js_name = processBurst, unchecked_return_type = "BurstOutcome")]
    pub fn process_burst(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "Burst")] readings: JsValue,
        now_ms: f64,
        provisional: Option<bool>,
    ) -> Result<JsValue, JsValue> {
        let burst: RawBurst = from_js(readings)?;
        let out: BurstOutcome = self
            .inner
            .process_burst(burst.0, now_ms, provisional.unwrap_or(false))
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
        now_ms: f64,
        provisional: Option<bool>,
    ) -> Result<String, JsValue> {
        let bytes = body_bytes(json, "processBurstJson")?;
        let out = self
            .inner
            .process_json(&bytes, now_ms, provisional.unwrap_or(false))
            .map_err(to_js)?;
        Ok(out.to_json())
    }

    /// Admits keys already derived (one per line, `device_id:seq:<16 hex>` as
    /// `parseUplink` or `idempotencyKey` give them) at `nowMs`; `refused` readings of
    /// the same burst count in the audit. No reading is validated and no SHA-256
    /// computed. Returns a {@link KeyAdmission}: a verdict per key, the audit counts
    /// and the audit line with `context` appended. Throws `invalid_key` (nothing
    /// admitted).
    #[wasm_bindgen(js_name = admitKeys, unchecked_return_type = "KeyAdmission")]
    pub fn admit_keys(
        &mut self,
        keys: &str,
        now_ms: f64,
        refused: Option<u32>,
        #[wasm_bindgen(unchecked_optional_param_type = "AuditContext")] context: JsValue,
    ) -> Result<JsValue, JsValue> {
        let context = audit_context(context)?;
        let out = self
            .inner
            .admit_keys(keys, now_ms, refused.unwrap_or(0) as usize)
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
        keys: &str,
        admitted_at_ms: &[f64],
        #[wasm_bindgen(unchecked_optional_param_type = "DeduplicatorOptions")] options: JsValue,
    ) -> Result<JsDeduplicator, JsValue> {
        let config = config_from(options)?;
        Deduplicator::from_keys(config, keys, admitted_at_ms)
            .map(|inner| JsDeduplicator { inner })
            .map_err(to_js)
    }

    /// Makes a provisional admission permanent. Returns the number of keys confirmed.
    /// Throws `unknown_ticket` for a ticket never issued.
    pub fn confirm(&mut self, ticket: u32) -> Result<u32, JsValue> {
        self.inner.confirm(ticket).map(|n| n as u32).map_err(to_js)
    }

    /// Withdraws a provisional admission so a retry is admitted. Returns the number
    /// of keys withdrawn. Throws `unknown_ticket` for a ticket never issued.
    pub fn release(&mut self, ticket: u32) -> Result<u32, JsValue> {
        self.inner.release(ticket).map(|n| n as u32).map_err(to_js)
    }

    /// Whether `reading`'s key is held at `nowMs`. Changes nothing.
    pub fn contains(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "Reading")] reading: JsValue,
        now_ms: f64,
    ) -> Result<bool, JsValue> {
        let raw: RawReading = from_js(reading)?;
        let reading = validate(raw).map_err(to_js)?;
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

    /// Rebuilds a deduplicator from `snapshot()` bytes; `options` override the stored
    /// limits. Throws `invalid_snapshot` for corrupt or foreign bytes.
    pub fn restore(
        bytes: &[u8],
        #[wasm_bindgen(unchecked_optional_param_type = "DeduplicatorOptions")] options: JsValue,
    ) -> Result<JsDeduplicator, JsValue> {
        let (ttl, max) = options_from(options)?;
        Deduplicator::restore(bytes, ttl, max)
            .map(|inner| JsDeduplicator { inner })
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
    #[wasm_bindgen(unchecked_param_type = "AuditEvent")] event: &str,
    #[wasm_bindgen(unchecked_param_type = "AuditCounts")] counts: JsValue,
    now_ms: f64,
    #[wasm_bindgen(unchecked_optional_param_type = "AuditContext")] context: JsValue,
) -> Result<String, JsValue> {
    let event: AuditEvent =
        serde_json::from_value(serde_json::Value::from(event)).map_err(|_| {
            to_js(Error::InvalidBurst(format!(
                "unknown audit event {event:?}"
            )))
        })?;
    let counts: AuditCounts = serde_wasm_bindgen::from_value(counts)
        .map_err(|e| to_js(Error::InvalidBurst(e.to_string())))?;
    let audit = Audit::new(event, counts, now_ms).map_err(to_js)?;
    Ok(audit.line(&audit_context(context)?))
}

/// A time in ms since the epoch as every record of this project writes times:
/// Python's `isoformat()` of the UTC instant (`2026-07-16T09:00:11.204000+00:00`).
/// Throws `invalid_time`.
#[wasm_bindgen(js_name = isoTime)]
pub fn iso_time(ms: f64) -> Result<String, JsValue> {
    let ms = check_time(ms).map_err(to_js)?;
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
    })
}

/// Overrides for `parseUplink`; each may be absent.
#[derive(Deserialize, Default, Tsify)]
#[serde(default, rename_all = "camelCase")]
pub struct UplinkOptions {
    /// The decoded payload's member for `seq` (default `seq`).
    seq_field: Option<String>,
    /// The decoded payload's member for `ts` (default `ts`).
    ts_field: Option<String>,
    /// The decoded payload's member for `fill_pct` (default `fill_pct`).
    fill_field: Option<String>,
    /// Readings accepted in one request, a whole number; range and default:
    /// `limits().maxReadings`.
    max_readings: Option<f64>,
}

/// Maps a webhook body (`format`: one of `limits().formats`) to readings,
/// validates and keys each once, and splits them per device. Returns the JSON text
/// of an {@link UplinkPlan}: `index` is the reading's index in the request, `ts`
/// the UTC instant as the key hashed it, `device_id` of a rejection `null` when the
/// device id itself is bad. Throws `unknown_format`, `invalid_json`,
/// `invalid_burst`, `too_many_readings` (beyond `maxReadings`) or `invalid_config`.
#[wasm_bindgen(js_name = parseUplink)]
pub fn parse_uplink(
    format: &str,
    // A JS union read by `body_bytes`, not a serde value: nothing to derive from.
    #[wasm_bindgen(unchecked_param_type = "string | Uint8Array")] body: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "UplinkOptions")] options: JsValue,
) -> Result<String, JsValue> {
    let format = Format::from_name(format).map_err(to_js)?;
    let opts: UplinkOptions = if options.is_undefined() || options.is_null() {
        UplinkOptions::default()
    } else {
        serde_wasm_bindgen::from_value(options)
            .map_err(|e| to_js(Error::InvalidConfig(e.to_string())))?
    };
    let base = FieldNames::default();
    let names = FieldNames {
        seq: opts.seq_field.unwrap_or(base.seq),
        ts: opts.ts_field.unwrap_or(base.ts),
        fill_pct: opts.fill_field.unwrap_or(base.fill_pct),
    };
    let max = match opts.max_readings {
        None => DEFAULT_MAX_READINGS,
        Some(x) if x.is_finite() && x.fract() == 0.0 && x >= 0.0 => x as usize,
        Some(x) => {
            return Err(to_js(Error::InvalidConfig(format!(
                "maxReadings must be a whole number, got {x}"
            ))))
        }
    };
    let bytes = body_bytes(body, "parseUplink")?;
    let out = plan(format, &bytes, &names, max).map_err(to_js)?;
    serde_json::to_string(&out).map_err(|e| to_js(Error::InvalidBurst(e.to_string())))
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
