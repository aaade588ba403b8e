//! The class `Deduplicator`: the core's [`Deduplicator`] with its options, its stats
//! and what `admitKeys` returns.

use crate::dedupe::dedup::{AuditCounts, BurstOutcome, Deduplicator};
use crate::dedupe::error::Error;
use crate::dedupe::seen::{Config, SeenSet, Stats, DEFAULT_MAX_KEYS, DEFAULT_TTL_MS, MAX_COUNTER};
use serde::{Deserialize, Serialize};
use tsify::Tsify;
use wasm_bindgen::prelude::*;

use super::audit::audit_context;
use super::js_value::{
    body_bytes, flag_arg, is_plain_object, keys_arg, members, refused_arg, stored_bytes_arg, threw,
    ticket_arg, time_arg, times_arg, type_name,
};
use super::reading::{read_burst, reading_arg, JsReading};
use super::{to_js, to_value};

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
    // The core's `Verdict` as a byte; bytes become a Uint8Array (see `serializer`, mod.rs).
    #[tsify(type = "Uint8Array")]
    verdicts: Verdicts,
    /// The burst's audit counts, `refused` included in `rejected`.
    counts: AuditCounts,
    /// The burst's audit line (JSON text) with the context appended.
    line: String,
}

/// Verdict bytes, written as bytes (a `Uint8Array`, see [`serializer`](super::serializer)).
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
        let bytes = stored_bytes_arg(&bytes, "the snapshot", "a snapshot is a Uint8Array")?;
        let (ttl, max) = options_from(&options, "restore's second argument (the options)")?;
        Deduplicator::restore(&bytes, ttl, max)
            .map(|inner| JsDeduplicator { inner })
            .map_err(to_js)
    }
}
