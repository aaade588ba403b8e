//! Sensors' raw payloads (the core's `codec`, and `uplink::payload_readings`):
//! `decodePayload` and `readingsFromPayload`; the downlink asking a sensor for its
//! records, `historyRequest`.

use crate::codec::{decode, history_request, Codec, Decoded, DeviceConfig, DeviceState, FrameMeta};
use crate::dedupe::error::{Error, Field};
use crate::dedupe::timestamp::parse_rfc3339;
use crate::uplink::{frame_from_hex, payload_readings};
use serde::Deserialize;
use tsify::Tsify;
use wasm_bindgen::prelude::*;

use super::js_value::{device_id_arg, object_arg, shown, type_name, u8_arg, whole_u32};
use super::{to_js, to_value};

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
    let codec = codec_value(&codec)?;
    let (port, bytes) = frame_args(&f_port, &payload)?;
    let uplink = decode(codec, port, &bytes).map_err(to_js)?;
    to_value(&Decoded::new(codec, &uplink))
}

/// The downlink payload that asks a sensor of `codec` (one of `limits().codecs`) for
/// its buffered records of the device times `startS ..= endS` (unix seconds), sent on
/// `limits().codecInfo[codec].historyFPort`; `undefined` when the sensor answers no
/// history request. Throws `unknown_codec`, or `invalid_burst` for a bound that is not
/// a whole number 0 ..= 2^32 − 1 or a start after the end.
#[wasm_bindgen(js_name = historyRequest)]
pub fn history_request_js(
    #[wasm_bindgen(unchecked_param_type = "string")] codec: JsValue,
    #[wasm_bindgen(unchecked_param_type = "number")] start_s: JsValue,
    #[wasm_bindgen(unchecked_param_type = "number")] end_s: JsValue,
) -> Result<Option<Vec<u8>>, JsValue> {
    let codec = codec_value(&codec)?;
    let second = |v: &JsValue, name: &str| {
        whole_u32(v).ok_or_else(|| {
            to_js(Error::BadArgument(format!(
                "{name} must be a whole number of unix seconds 0 ..= 4294967295"
            )))
        })
    };
    let (start, end) = (second(&start_s, "startS")?, second(&end_s, "endS")?);
    let request = history_request(codec, start, end).map_err(to_js)?;
    Ok(request.map(|d| d.bytes))
}

/// The codec a JS value names: a string (else `invalid_burst`) that is a codec id.
fn codec_value(codec: &JsValue) -> Result<Codec, JsValue> {
    // `as_string` and `type_name` run no caller code (a Proxy's traps, a toString).
    let id = codec.as_string().ok_or_else(|| {
        to_js(Error::BadArgument(format!(
            "the codec must be a string, one of limits().codecs; got {}",
            type_name(codec)
        )))
    })?;
    codec_arg(&id)
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
    /// The port the sensor was set to send on, for a codec with
    /// `limits().codecInfo[codec].applicationPort`; absent or null: the codec's own.
    #[serde(default)]
    application_port: Option<u32>,
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
/// codec (on its `application_port` when the config names one), each sample made a reading by the rules of docs/devices.md "Configure a device" (fill
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
        &[
            "codec",
            "bin_depth_mm",
            "offset_mm",
            "reporting_period_s",
            "application_port",
        ],
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
    // A depth or period of 0 is refused here; `payload_readings` checks the ranges.
    let mut device = DeviceConfig::new(
        Some(codec),
        config.bin_depth_mm,
        config.offset_mm,
        config.reporting_period_s,
    )
    .map_err(to_js)?;
    device.application_port = config.application_port;
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
    frame_from_hex(&text)
        .map(Some)
        .ok_or_else(|| rule(&format!("{:?}", shown(&text))))
}
