//! The JavaScript API: the only module with `#[wasm_bindgen]`. It converts values at
//! the boundary and turns every [`Error`] into a JS `Error` with a stable `code`; it
//! never panics on input (a panic would poison the Wasm instance).
//!
//! Its TypeScript declarations (`pkg/reconnect_dedupe.d.ts`) are generated from the
//! Rust types: every shape a caller passes or gets is a type with `derive(Tsify)`
//! (the core's behind the `typescript` feature, the facade's own in these files), so
//! a renamed field changes its declaration too. The signatures name those types
//! (`unchecked_*_type`); values cross with the facade's own serde-wasm-bindgen
//! conversions ([`to_value`]; arguments are read through catching calls, see
//! `js_value.rs`), so tsify converts nothing at run time.
//! A name that no longer matches a declaration fails `tsc` (`tests/types/`, which
//! also type-checks real usage of the API); `tests/js/types-match.test.mjs` checks
//! the values returned against the declarations.
//!
//! One file per part of the API it binds; this one holds what they share: the start,
//! the error conversion ([`to_js`]) and the conversion of a returned value
//! ([`to_value`]).
//!
//! | file | binds |
//! | --- | --- |
//! | `js_value.rs` | no export: how an argument is read (lone surrogates, the caller's objects read through catching calls, typed arrays of any realm, the scalar arguments) |
//! | `reading.rs` | the `Reading` and `Burst` shapes, `idempotencyKey`, `checkDeviceId` |
//! | `deduplicator.rs` | the class `Deduplicator`, its options, stats and key admissions |
//! | `window.rs` | the class `SeqWindow` |
//! | `fill.rs` | the class `FillTracker` |
//! | `audit.rs` | `auditLine`, `isoTime`, and the audit context every line takes |
//! | `uplink.rs` | `parseUplink`, `checkUplinkOptions` |
//! | `codec.rs` | `decodePayload`, `readingsFromPayload`, `historyRequest` |
//! | `limits.rs` | `limits()`, with each codec's `codecInfo` |
//! | `body.rs` | `readObject`: the request bodies the worker checks itself |
//!
//! The rules a value must follow are the core's (`dedupe`, `codec`, `uplink`); these
//! files check what only a JS value can get wrong (its type, a lone surrogate, a
//! number that is no whole number, a getter that throws).

#[cfg(not(feature = "typescript"))]
compile_error!("the JavaScript API needs the `typescript` feature (a default one): its .d.ts is generated with tsify");

mod audit;
mod body;
mod codec;
mod deduplicator;
mod fill;
mod js_value;
mod limits;
mod reading;
mod uplink;
mod window;

use crate::dedupe::error::Error;
use serde::Serialize;
use tsify::Tsify;
use wasm_bindgen::prelude::*;

pub use audit::{audit_line, iso_time};
pub use body::{read_object_js, BodyMember, BodyScalar, ObjectBody};
pub use codec::{
    decode_payload_js, history_request_js, readings_from_payload_js, PayloadConfig, PayloadFrame,
};
pub use deduplicator::{
    DeduplicatorOptions, DeduplicatorStats, JsDeduplicator, KeyAdmission, Verdicts,
};
pub use fill::{FillCollection, FillObservation, FillSample, FillState, JsFillTracker};
pub use limits::{limits, Bounds, CodecInfo, DeviceConfigLimits, Limits, Range};
#[cfg(feature = "bench")]
pub use reading::bench_hash_floor;
pub use reading::{check_device_id_js, idempotency_key_js, Burst, Reading};
pub use uplink::{check_uplink_options, parse_uplink, UplinkOptions};
pub use window::{JsSeqWindow, SeqGap, SeqKind, SeqObservation, SeqWindowTotals};

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
