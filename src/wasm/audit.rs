//! Audit records: the context every audit line takes, the line of a burst without an
//! `admitKeys` outcome (`auditLine`), and a time as the records write times
//! (`isoTime`).

use crate::dedupe::dedup::{check_time, Audit, AuditContext, AuditCounts, AuditEvent};
use crate::dedupe::error::Error;
use crate::dedupe::timestamp::isoformat;
use wasm_bindgen::prelude::*;

use super::js_value::{
    flat_copy, maybe_lossy, member_well_formed, shown, threw_arg, time_arg, type_name,
};
use super::to_js;

pub(super) fn audit_context(context: JsValue) -> Result<AuditContext, JsValue> {
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
