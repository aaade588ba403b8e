//! `limits()`: the ranges, defaults and names the core defines, for every layer above
//! it (the worker's config checks, the demo page).

use crate::codec::{
    history_port, Codec, APPLICATION_PORT, BIN_DEPTH_MM, OFFSET_MM, REPORTING_PERIOD_S,
};
use crate::dedupe::error::Error;
use crate::dedupe::seen::{DEFAULT_MAX_KEYS, DEFAULT_TTL_MS, MAX_MAX_KEYS, MAX_TTL_MS};
use crate::uplink::{Format, DEFAULT_MAX_READINGS, MAX_MAX_READINGS};
use serde::Serialize;
use tsify::Tsify;
use wasm_bindgen::prelude::*;

use super::to_value;

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
    /// What each codec's sensor does besides its bytes, by codec id.
    #[tsify(type = "Record<string, CodecInfo>")]
    codec_info: EveryCodec,
    /// The ranges of a device configuration's numbers (`PayloadConfig`, and the
    /// worker's `PUT /v1/devices/{id}/config`).
    device_config: DeviceConfigLimits,
    /// What a rejected reading's `code` and `field` can be.
    rejection: RejectionNames,
    /// By format name, the `event`s of the messages `parseUplink` acknowledges
    /// unread (`ignored`): every one it can name.
    #[tsify(type = "Record<string, string[]>")]
    ignored_events: EveryFormat,
}

/// Every format's [`Format::ignored_events`], written as an object keyed by format name.
pub struct EveryFormat;

impl Serialize for EveryFormat {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Every name is a format's (`Format::NAMES`): the filter drops nothing.
        s.collect_map(Format::NAMES.iter().filter_map(|&name| {
            Format::from_name(name)
                .ok()
                .map(|f| (name, f.ignored_events()))
        }))
    }
}

/// `limits().rejection`: the codes and fields of a reading's rejection.
#[derive(Serialize, Tsify)]
pub struct RejectionNames {
    codes: &'static [&'static str],
    fields: &'static [&'static str],
}

/// Every codec's [`CodecInfo`], written as an object keyed by codec id (no map is
/// built: the codecs are a fixed list).
pub struct EveryCodec;

impl Serialize for EveryCodec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(Codec::ALL.iter().map(|&c| {
            let info = CodecInfo {
                needs_period: c.needs_period(),
                seq_is_counter: c.seq_is_counter(),
                history_f_port: history_port(c),
                application_port: c.application_port(),
            };
            (c.id(), info)
        }))
    }
}

/// `limits().codecInfo[codec]`: what the layers above need to know of a codec.
#[derive(Serialize, Tsify)]
#[serde(rename_all = "camelCase")]
pub struct CodecInfo {
    /// Its readings are dated by the reporting schedule: a device's configuration
    /// needs `reporting_period_s` (else `missing_reporting_period`).
    needs_period: bool,
    /// A reading's seq is the sensor's own counter of uplinks, so a gap in it is an
    /// uplink lost (the worker's sequence window follows it).
    seq_is_counter: bool,
    /// The port of its history request (`historyRequest`), or null when the sensor
    /// answers none.
    history_f_port: Option<u32>,
    /// The application port its sensor sends on unless set to another in its settings,
    /// when it can be: a device's configuration may then name the port it was set to
    /// (`application_port`), which its uplinks and history requests then use. Null: the
    /// codec's ports are fixed.
    application_port: Option<u32>,
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
    application_port: Bounds,
}

/// The limits and names every layer reads from here: TTL and cap ranges, the
/// readings-per-request cap, the webhook format names, the codecs and what each
/// one's sensor does (`codecInfo`), the ranges of a device configuration, the codes
/// and fields of a reading's rejection, the events each format acknowledges unread.
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
        codec_info: EveryCodec,
        device_config: DeviceConfigLimits {
            bin_depth_mm: BIN_DEPTH_MM.into(),
            offset_mm: OFFSET_MM.into(),
            reporting_period_s: REPORTING_PERIOD_S.into(),
            application_port: APPLICATION_PORT.into(),
        },
        rejection: RejectionNames {
            codes: &Error::REJECTION_CODES,
            fields: &Error::REJECTION_FIELDS,
        },
        ignored_events: EveryFormat,
    })
}
