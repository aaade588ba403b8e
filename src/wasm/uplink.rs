//! Network servers' webhooks (the core's `uplink`): `parseUplink` and
//! `checkUplinkOptions`.

use crate::dedupe::error::Error;
use crate::uplink::{plan, FieldNames, Format, DEFAULT_MAX_READINGS, MAX_MAX_READINGS};
use serde::Deserialize;
use tsify::Tsify;
use wasm_bindgen::prelude::*;

use super::js_value::{body_bytes, flat_copy, shown, threw, type_name};
use super::to_js;

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
    // Within `limits().maxReadings`: 1 ..= MAX_MAX_READINGS.
    let max = match opts.max_readings {
        None => DEFAULT_MAX_READINGS,
        Some(x) if x.fract() == 0.0 && (1.0..=MAX_MAX_READINGS as f64).contains(&x) => x as usize,
        Some(x) => {
            return Err(Error::InvalidConfig(format!(
                "maxReadings must be a whole number 1 … {MAX_MAX_READINGS}, got {x}"
            )))
        }
    };
    Ok((names, max))
}
