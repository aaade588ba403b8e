//! Audit records: the context every audit line takes, the line of a burst without an
//! `admitKeys` outcome (`auditLine`), and a time as the records write times
//! (`isoTime`).

use crate::dedupe::dedup::{check_time, Audit, AuditContext, AuditCounts, AuditEvent};
use crate::dedupe::error::Error;
use crate::dedupe::timestamp::isoformat;
use serde::de::value::MapDeserializer;
use serde::Deserialize;
use std::collections::BTreeMap;
use wasm_bindgen::prelude::*;

use super::js_value::{
    flat_copy, is_plain_object, maybe_lossy, member_well_formed, object_and_copy, shown, threw_arg,
    time_arg, type_name,
};
use super::{to_js, to_value};

/// The members of an [`AuditContext`], as JavaScript names them.
const CONTEXT_MEMBERS: [&str; 4] = ["device_id", "route", "burst_id", "error"];

pub(super) fn audit_context(context: JsValue) -> Result<AuditContext, JsValue> {
    if context.is_undefined() || context.is_null() {
        return Ok(AuditContext::default());
    }
    // Read by name, so that a misspelt member is refused, not dropped: serde-wasm-bindgen's
    // struct reader never sees a member it does not know. One copy, read for both checks.
    let (c, context): (AuditContext, _) =
        object_and_copy(&context, "the audit context", &CONTEXT_MEMBERS)?;
    let [device_id, route, burst_id, error] = CONTEXT_MEMBERS;
    for (name, value) in [
        (device_id, &c.device_id),
        (route, &c.route),
        (burst_id, &c.burst_id),
        (error, &c.error),
    ] {
        if value.as_deref().is_some_and(maybe_lossy) && !member_well_formed(&context, name) {
            return Err(to_js(Error::InvalidBurst(format!(
                "audit context {name} is not valid Unicode (lone surrogate)"
            ))));
        }
    }
    Ok(c)
}

/// The audit line of a burst that has no `admitKeys` outcome (readings no device
/// got, a burst that could not be stored): `event` is `burst_deduplicated` or
/// `burst_not_stored`; `counts` gives the counts the burst has, each one not given
/// is 0 (the core's `AuditCounts` is the one list of them), and they must reconcile.
/// Throws `invalid_burst` (an unknown count, one that is not a whole number, counts
/// that do not reconcile), `invalid_time`.
#[wasm_bindgen(js_name = auditLine)]
pub fn audit_line(
    // A string, read below into `AuditEvent` (a bad one is `invalid_burst`).
    #[wasm_bindgen(unchecked_param_type = "AuditEvent")] event: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Partial<AuditCounts>")] counts: JsValue,
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
    let counts = given_counts(counts).map_err(to_js)?;
    // The core's text already names the counts ("audit counts do not reconcile").
    let audit = Audit::new(event, counts, now_ms)
        .map_err(|e| match e {
            Error::InvalidBurst(why) => Error::BadArgument(why),
            e => e,
        })
        .map_err(to_js)?;
    Ok(audit.line(&audit_context(context)?))
}

/// The counts a caller gives (a plain copy, `flat_copy`) over zero ones: a count not
/// given is 0, a member that is no count of `AuditCounts` (a misspelt one) is refused,
/// as is a count that is not a whole number. Read as a map, then into `AuditCounts`
/// through serde's map reader, which keeps its `deny_unknown_fields`
/// (serde-wasm-bindgen's struct reader reads only the members it knows).
fn given_counts(copy: JsValue) -> Result<AuditCounts, Error> {
    let bad = |e: &dyn std::fmt::Display| Error::BadArgument(format!("audit counts: {e}"));
    if !is_plain_object(&copy).unwrap_or(false) {
        return Err(bad(&"must be an object of counts"));
    }
    let counts = |v: JsValue| -> Result<BTreeMap<String, u64>, Error> {
        serde_wasm_bindgen::from_value(v).map_err(|e| bad(&e))
    };
    let zero = to_value(&AuditCounts::default()).map_err(|_| bad(&"no zero counts"))?;
    let mut all = counts(zero)?;
    all.extend(counts(copy)?);
    let read: MapDeserializer<_, serde::de::value::Error> = MapDeserializer::new(all.into_iter());
    AuditCounts::deserialize(read).map_err(|e| bad(&e))
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
