//! The raw payload of an uplink that has no fill level ([`Plan::raw`]), for the
//! worker to decode with a codec (`payload.rs`, [`payload_readings`]).
//!
//! [`payload_readings`]: super::payload_readings
//!
//! # When a plan has `raw`
//! All of these hold, else `raw` is `null`:
//! * the message is a network server's uplink (never a native burst, never an
//!   acknowledged event);
//! * its decoded payload gives no reading with a fill level: no reading is planned,
//!   and every reading it gives is rejected `missing_fill_pct` (there is at least
//!   one; without a decoded payload there is exactly one). The core checks
//!   `device_id`, `seq` and `ts` before `fill_pct`, so the device id is valid;
//! * the uplink carries a payload that decodes to 1 ..= 255 bytes: The Things Stack
//!   `uplink_message.frm_payload`, ChirpStack `data`, Helium `payload` (base64, the
//!   standard alphabet, padded or not at all, no whitespace), LORIOT `data` (hex, either
//!   case; `encdata` is the payload LORIOT could not decrypt, which nobody here
//!   can read). A LoRaWAN frame is at most 255 bytes, so a longer payload does not
//!   decode either;
//! * its port is an integer 1 ..= 255 (The Things Stack `f_port`, ChirpStack
//!   `fPort`, Helium and LORIOT `port`; port 0 carries MAC commands, not data);
//! * its frame counter is an integer 0 ..= 2^32 − 1 (absent: 0) and its receive time
//!   (the one a reading without its own `ts` gets) a valid RFC 3339 time.
//!
//! # The rejected rows stay
//! With `raw` set, the plan's `missing_fill_pct` rejections are unchanged: the
//! worker decodes `raw` and replaces those rows with the codec's readings and
//! rejections (or parks the uplink, `device_not_configured`). Without `raw`, they are
//! the uplink's answer; when the payload is there but does not decode (bad base64 or
//! hex, too long) or is LORIOT's `encdata`, their message says so. The code stays
//! `missing_fill_pct`, since that is what the reading lacks; `invalid_payload` remains
//! the codec's code for bytes it cannot read, an uplink-level error of the worker.
//!
//! # Hints
//! `codec_hint` is a codec id ([`Codec::IDS`]) the uplink names, or `null`:
//! The Things Stack `uplink_message.version_ids` as `brand_id/model_id` when that
//! exact text is a codec id; ChirpStack `deviceInfo.tags.codec`, else
//! `deviceInfo.deviceProfileName`, the first that is exactly a codec id. Helium and
//! LORIOT name no device model.
//!
//! `config_hint` holds what ChirpStack device tags (`deviceInfo.tags`, string values)
//! say of the bin: `bin_depth_mm`, `offset_mm`, `reporting_period_s`, each a string
//! of ASCII decimal digits within the range of `PUT /v1/devices/{id}/config`
//! ([`BIN_DEPTH_MM`], [`OFFSET_MM`], [`REPORTING_PERIOD_S`]). A tag that is anything
//! else (a sign, a space, a fraction, out of range) is left out, as is every tag of
//! another name; the other servers give `{}`. Which of a stored configuration and
//! these hints wins is the worker's rule.

use super::{Envelope, Format, Plan};
use crate::codec::{Codec, BIN_DEPTH_MM, OFFSET_MM, REPORTING_PERIOD_S};
use crate::dedupe::error::{Error, Field};
use crate::dedupe::json::{Json, Object};
use crate::dedupe::reading::Scalar;
use crate::dedupe::timestamp::{isoformat_text, parse_rfc3339, Micros};
use base64::engine::general_purpose;
use base64::Engine;
use serde::Serialize;

/// The most bytes a LoRaWAN frame's payload can have (a PHYPayload is at most 255).
pub const MAX_PAYLOAD_BYTES: usize = 255;

/// The raw payload of an uplink without a fill level, and what the network server
/// says about its device. Serialises as `{device_id, f_port, payload, received_at,
/// f_cnt, frame, codec_hint, config_hint}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct RawUplink {
    /// The device, as the plan's rows name it (a DevEUI in upper case).
    pub device_id: String,
    /// The LoRaWAN port, 1 ..= 255.
    pub f_port: u32,
    /// The payload's bytes (1 ..= 255), a JSON array of numbers: the worker hands
    /// them to the codec as a `Uint8Array` (`readingsFromPayload`), never as text.
    pub payload: Vec<u8>,
    /// The receive time, written as the plan writes `ts`.
    #[serde(serialize_with = "isoformat_text")]
    #[cfg_attr(feature = "typescript", tsify(type = "string"))]
    pub received_at: Micros,
    /// The LoRaWAN frame counter, 0 ..= 2^32 − 1 (absent in the message: 0).
    pub f_cnt: i64,
    /// The radio frame's identity, 16 lower-case hex digits: SHA-256 over the parts a
    /// reading's `frame` hashes (network server, session, frame counter, port, raw
    /// payload as sent) but the reading's place. A copy of the frame (a redelivery,
    /// LORIOT's `gw` after its `rx`) has the same; handed back to the codec
    /// (`readingsFromPayload`'s `frame`), it gives each decoded reading keyed at the
    /// receive time its own identity, as a decoded payload's readings have. Never
    /// equal to a reading's `frame`.
    pub frame: String,
    /// A codec id ([`Codec::IDS`], `limits().codecs`) the uplink names; `null` when
    /// it names none.
    pub codec_hint: Option<&'static str>,
    pub config_hint: ConfigHint,
}

/// What the uplink says of the bin (ChirpStack device tags); absent members are left
/// out of the JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct ConfigHint {
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub bin_depth_mm: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub offset_mm: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "typescript", tsify(optional))]
    pub reporting_period_s: Option<u32>,
}

/// How a network server writes its raw payload member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Encoding {
    Base64,
    Hex,
}

/// An uplink's raw payload member as the envelope found it.
#[derive(Debug, Default)]
pub(super) enum Payload<'a> {
    /// No payload member (or an empty frame: The Things Stack omits empty bytes).
    #[default]
    Absent,
    /// The member `name`'s value, written in `encoding`.
    Text {
        name: &'static str,
        encoding: Encoding,
        value: &'a Json<'a>,
    },
    /// LORIOT's `encdata`: a payload LORIOT could not decrypt.
    Encrypted,
}

/// What an envelope holds for [`Plan::raw`]: the payload, the port and the hints.
#[derive(Debug, Default)]
pub(super) struct RawParts<'a> {
    pub(super) payload: Payload<'a>,
    pub(super) port: Option<&'a Json<'a>>,
    pub(super) codec_hint: Option<Codec>,
    pub(super) config_hint: ConfigHint,
}

impl<'a> RawParts<'a> {
    /// The payload member `name` (absent → [`Payload::Absent`]) and the port.
    pub(super) fn new(
        name: &'static str,
        encoding: Encoding,
        payload: Option<&'a Json<'a>>,
        port: Option<&'a Json<'a>>,
    ) -> RawParts<'a> {
        RawParts {
            payload: payload.map_or(Payload::Absent, |value| Payload::Text {
                name,
                encoding,
                value,
            }),
            port,
            ..RawParts::default()
        }
    }
}

/// The codec a The Things Stack `version_ids` object names as `brand_id/model_id`.
pub(super) fn version_ids_codec(version_ids: Option<&Json<'_>>) -> Option<Codec> {
    let ids = version_ids?.as_object()?;
    let brand = ids.get("brand_id")?.as_str()?;
    let model = ids.get("model_id")?.as_str()?;
    Codec::ALL.into_iter().find(|c| {
        c.id()
            .split_once('/')
            .is_some_and(|(b, m)| b == brand && m == model)
    })
}

/// The codec a text names exactly (a ChirpStack tag or device-profile name).
pub(super) fn named_codec(text: Option<&Json<'_>>) -> Option<Codec> {
    Codec::from_id(text?.as_str()?).ok()
}

/// The bin's numbers in ChirpStack device tags (module docs, "Hints").
pub(super) fn tags_config(tags: Option<&Object<'_>>) -> ConfigHint {
    let number = |name: &str, (min, max): (u32, u32)| {
        let text = tags?.get(name)?.as_str()?;
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        text.parse::<u32>().ok().filter(|n| (min..=max).contains(n))
    };
    ConfigHint {
        bin_depth_mm: number("bin_depth_mm", BIN_DEPTH_MM),
        offset_mm: number("offset_mm", OFFSET_MM),
        reporting_period_s: number("reporting_period_s", REPORTING_PERIOD_S),
    }
}

/// Why an uplink without a fill level has no `raw`: the text appended to its
/// rejections, when there is one to say.
enum NoRaw {
    /// Nothing worth saying (no payload, no port, no frame counter, ...).
    Quiet,
    /// Appended to each `missing_fill_pct` message.
    Said(String),
}

/// Sets `plan.raw` when the uplink of `envelope`, a message of `format`, qualifies
/// (module docs), or says in its rejections why its payload cannot be decoded.
pub(super) fn attach(format: Format, envelope: &Envelope<'_>, plan: &mut Plan) {
    let missing = Error::Missing(Field::FillPct).code();
    let Some(first) = plan.rejected.first() else {
        return;
    };
    if !plan.devices.is_empty() || plan.rejected.iter().any(|r| r.rejection.code != missing) {
        return;
    }
    let Some(device_id) = first.device_id.clone() else {
        return;
    };
    match uplink(format, envelope, device_id) {
        Ok(raw) => plan.raw = Some(raw),
        Err(NoRaw::Said(why)) => {
            for r in &mut plan.rejected {
                r.rejection.message.push_str(&why);
            }
        }
        Err(NoRaw::Quiet) => {}
    }
}

fn uplink(format: Format, envelope: &Envelope<'_>, device_id: String) -> Result<RawUplink, NoRaw> {
    let parts = &envelope.raw;
    let (name, encoding, value) = match &parts.payload {
        Payload::Absent => return Err(NoRaw::Quiet),
        Payload::Encrypted => {
            return Err(NoRaw::Said(
                "; its payload is \"encdata\", which LORIOT could not decrypt: give LORIOT \
                 the device's AppSKey"
                    .into(),
            ))
        }
        Payload::Text {
            name,
            encoding,
            value,
        } => (*name, *encoding, *value),
    };
    let bytes = decode(encoding, value).map_err(|why| {
        NoRaw::Said(format!(
            "; its raw payload (\"{name}\") {why}, so it cannot be decoded either"
        ))
    })?;
    if bytes.is_empty() {
        return Err(NoRaw::Quiet);
    }
    let f_port = parts
        .port
        .and_then(Json::as_i64)
        .and_then(|p| u32::try_from(p).ok())
        .filter(|p| (1..=255).contains(p))
        .ok_or(NoRaw::Quiet)?;
    let f_cnt = match envelope.frame_counter {
        Scalar::Int(n) if (0..=i64::from(u32::MAX)).contains(&n) => n,
        _ => return Err(NoRaw::Quiet),
    };
    let received_at = match &envelope.received_at {
        Some(Scalar::Str(text)) => parse_rfc3339(text).map_err(|_| NoRaw::Quiet)?,
        _ => return Err(NoRaw::Quiet),
    };
    Ok(RawUplink {
        device_id,
        f_port,
        payload: bytes,
        received_at,
        f_cnt,
        frame: format!("{:016x}", envelope.frame.uplink_digest(format)),
        codec_hint: parts.codec_hint.map(Codec::id),
        config_hint: parts.config_hint,
    })
}

/// Base64 as the network servers write it (the standard alphabet, padded), or
/// with no padding at all, as protobuf's JSON parsers also accept; never partly
/// padded, no whitespace, no stray bits in the last character.
fn unbase64(text: &str) -> Option<Vec<u8>> {
    let engine = if text.contains('=') {
        &general_purpose::STANDARD
    } else {
        &general_purpose::STANDARD_NO_PAD
    };
    engine.decode(text).ok()
}

/// The bytes of a payload member, or what is wrong with it (for the message).
fn decode(encoding: Encoding, value: &Json<'_>) -> Result<Vec<u8>, &'static str> {
    let Some(text) = value.as_str() else {
        return Err("is not a string");
    };
    let bytes = match encoding {
        Encoding::Base64 => unbase64(text).ok_or("is not valid base64")?,
        Encoding::Hex => unhex(text).ok_or("is not valid hex")?,
    };
    if bytes.len() > MAX_PAYLOAD_BYTES {
        return Err("is longer than a LoRaWAN frame's 255 bytes");
    }
    Ok(bytes)
}

/// A radio frame's identity as [`RawUplink::frame`] writes it, exactly 16 lower-case
/// hex digits, as the number `FrameMeta::frame` takes (`readingsFromPayload`'s
/// `frame.frame`); `None` for any other text.
///
/// ```
/// use reconnect_dedupe::uplink::frame_from_hex;
/// assert_eq!(frame_from_hex("78f2a1fe989df34e"), Some(0x78f2_a1fe_989d_f34e));
/// assert_eq!(frame_from_hex("78F2A1FE989DF34E"), None);
/// ```
pub fn frame_from_hex(text: &str) -> Option<u64> {
    let lower_hex =
        text.len() == 16 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    u64::from_str_radix(text, 16).ok().filter(|_| lower_hex)
}

/// Hex digits in either case, two per byte.
fn unhex(text: &str) -> Option<Vec<u8>> {
    let digit = |b: u8| char::from(b).to_digit(16);
    let text = text.as_bytes();
    if text.len() % 2 != 0 {
        return None;
    }
    text.chunks_exact(2)
        .map(|pair| u8::try_from(digit(pair[0])? << 4 | digit(pair[1])?).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::test_kit::{
        edit, frame_cases, plan_of, raw_of, rejections, tts_em500, with, CHIRPSTACK_UP,
        CHIRPSTACK_WITH_FILL, EM500_HISTORY_B64, EM500_HISTORY_HEX, HELIUM_UPLINK, LORIOT_GW,
        LORIOT_RX, TTS_UPLINK, TTS_WITH_FILL,
    };
    use super::super::Format;
    use super::{frame_from_hex, unbase64, unhex};
    use serde_json::{json, Value};

    #[test]
    fn hex_is_read_in_either_case_and_what_is_not_hex_is_refused() {
        let all: Vec<u8> = (0..=255).collect();
        let text: String = all.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(unhex(&text), Some(all.clone()));
        assert_eq!(unhex(&text.to_uppercase()), Some(all));
        assert_eq!(unhex(""), Some(vec![]));
        for bad in ["0", "012", "0g", "+1", " 01", "0x01", "é1"] {
            assert_eq!(unhex(bad), None, "{bad}");
        }
    }

    #[test]
    fn base64_is_the_standard_alphabet_padded_or_not_at_all() {
        assert_eq!(unbase64("gkHe"), Some(vec![0x82, 0x41, 0xde]));
        assert_eq!(unbase64("qg=="), Some(vec![0xaa]));
        assert_eq!(unbase64("qg"), Some(vec![0xaa]));
        assert_eq!(unbase64("+/8="), Some(vec![0xfb, 0xff]));
        assert_eq!(unbase64(""), Some(vec![]));
        // Partial padding, stray bits, the URL-safe alphabet, whitespace, a lone
        // character, padding inside.
        for bad in [
            "qg=", "qh==", "qh", "-_8=", "qg== ", "q g=", "q", "qg==qg==",
        ] {
            assert_eq!(unbase64(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_history_vector_in_base64_is_its_hex() {
        use base64::Engine;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(EM500_HISTORY_B64)
            .unwrap();
        let vectors: Value = serde_json::from_str(include_str!(
            "../../tests/vectors/devices/milesight-em500-udl.json"
        ))
        .unwrap();
        let listed = vectors["vectors"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["hex"].as_str().unwrap().to_lowercase() == EM500_HISTORY_HEX);
        assert!(listed, "the EM500 history vector");
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, EM500_HISTORY_HEX);
    }

    #[test]
    fn a_tts_uplink_without_a_fill_level_hands_on_its_raw_payload_and_codec() {
        let body = tts_em500();
        let p = plan_of(Format::Tts, &body);
        assert_eq!(
            serde_json::to_value(&p.raw).unwrap(),
            json!({"device_id": "0004A30B001C0530", "f_port": 85, "payload": unhex(EM500_HISTORY_HEX),
                   "received_at": "2020-02-12T15:15:45.789585+00:00", "f_cnt": 1,
                   "frame": "78f2a1fe989df34e", "codec_hint": "milesight-iot/em500-udl",
                   "config_hint": {}})
        );
        // The rejected row stays as it is, and nothing is planned.
        assert!(p.devices.is_empty());
        assert_eq!(
            rejections(&plan_of(Format::Tts, &body)),
            rejections(&plan_of(Format::Tts, TTS_UPLINK))
        );
        assert_eq!(p.rejected[0].rejection.code, "missing_fill_pct");
        // The JSON text: the plan's last member.
        assert!(p.to_json().ends_with(
            r#""raw":{"device_id":"0004A30B001C0530","f_port":85,"payload":[32,206,158,116,70,99,210,4,32,206,58,130,70,99,208,4],"received_at":"2020-02-12T15:15:45.789585+00:00","f_cnt":1,"frame":"78f2a1fe989df34e","codec_hint":"milesight-iot/em500-udl","config_hint":{}}}"#
        ), "{}", p.to_json());
    }

    #[test]
    fn the_raw_payload_is_what_the_codec_reads() {
        use crate::codec::{Codec, DeviceConfig, DeviceState, FrameMeta};
        use crate::uplink::payload_readings;
        use std::num::NonZeroU32;
        let raw = plan_of(Format::Tts, &tts_em500()).raw.unwrap();
        let codec = Codec::from_id(raw.codec_hint.unwrap()).unwrap();
        let config = DeviceConfig {
            codec: None,
            bin_depth_mm: NonZeroU32::new(1500).unwrap(),
            offset_mm: 0,
            reporting_period_s: None,
            application_port: None,
        };
        let meta = FrameMeta {
            received_at: raw.received_at,
            f_cnt: raw.f_cnt,
            frame: Some(u64::from_str_radix(&raw.frame, 16).unwrap()),
        };
        let got = payload_readings(
            &raw.device_id,
            codec,
            &config,
            raw.f_port,
            &raw.payload,
            &meta,
            DeviceState::default(),
        )
        .unwrap();
        let seqs: Vec<i64> = got.readings.iter().map(|r| r.seq).collect();
        assert_eq!(
            seqs,
            [1_665_561_758, 1_665_565_242],
            "one per history record"
        );
        assert!(got.rejected.is_empty());
        // Dated by the device's clock: no frame identity.
        assert!(got.readings.iter().all(|r| r.frame.is_none()));
    }

    #[test]
    fn an_uplink_with_a_fill_level_has_no_raw() {
        for (format, body) in [
            (Format::Tts, TTS_WITH_FILL.to_owned()),
            (Format::ChirpStack, CHIRPSTACK_WITH_FILL.to_owned()),
            (
                Format::Tts,
                with(
                    &tts_em500(),
                    &["uplink_message", "decoded_payload"],
                    json!({"fill_pct": 5}),
                ),
            ),
            (
                Format::Helium,
                with(
                    HELIUM_UPLINK,
                    &["decoded"],
                    json!({"payload": {"fill_pct": 5}}),
                ),
            ),
        ] {
            let p = plan_of(format, &body);
            assert!(!p.devices.is_empty());
            assert_eq!(p.raw, None, "{body}");
        }
        // One reading of a burst with a fill level is enough; another rejection for
        // another reason too.
        for readings in [
            json!([{"fill_pct": 5}, {"seq": 9}]),
            json!([{"fill_pct": 101}, {"seq": 9}]),
            json!([{"seq": "x"}]),
            json!([]),
        ] {
            let b = with(CHIRPSTACK_UP, &["object"], json!({ "readings": readings }));
            assert_eq!(raw_of(Format::ChirpStack, &b), Value::Null, "{readings}");
        }
        let b = with(
            CHIRPSTACK_UP,
            &["object"],
            json!({"readings": [{"seq": 8}, {"seq": 9}]}),
        );
        assert_eq!(raw_of(Format::ChirpStack, &b)["payload"], json!([0xaa]));
        // No device, no raw.
        let b = with(CHIRPSTACK_UP, &["deviceInfo"], json!({"devEui": ""}));
        assert_eq!(raw_of(Format::ChirpStack, &b), Value::Null);
        // A native burst never has one; nor does an acknowledged event.
        assert_eq!(
            raw_of(Format::Readings, r#"[{"device_id":"a","seq":1}]"#),
            Value::Null
        );
        let join: &str = include_str!("../../tests/fixtures/webhooks/tts/join_accept.json");
        assert_eq!(raw_of(Format::Tts, join), Value::Null);
    }

    /// `raw.frame` of a body that has one.
    fn raw_frame(format: Format, body: &str) -> String {
        plan_of(format, body).raw.unwrap().frame
    }

    #[test]
    fn every_copy_of_a_radio_frame_hands_on_the_same_raw_frame() {
        // LORIOT's `rx` and the `gw` it sends after all gateways reported, later.
        let rx = plan_of(Format::Loriot, LORIOT_RX).raw.unwrap();
        let gw_later = with(LORIOT_GW, &[], json!({"ts": 1_470_850_680_000_i64}));
        let gw = plan_of(Format::Loriot, &gw_later).raw.unwrap();
        assert!(gw.received_at > rx.received_at);
        assert_eq!(
            (rx.frame.as_str(), gw.frame.as_str()),
            ("870238eb4e5c164e", "870238eb4e5c164e")
        );
        assert_eq!(raw_frame(Format::Loriot, LORIOT_GW), rx.frame);
        for change in [
            json!({"fcnt": 2}),
            json!({"port": 2}),
            json!({"data": "0102AABC"}),
        ] {
            let other = raw_frame(Format::Loriot, &with(LORIOT_GW, &[], change.clone()));
            assert_ne!(other, rx.frame, "{change}");
        }
        // A redelivery (a later receive time) of the other servers' uplinks; another
        // counter, payload, port or session is another frame.
        let bodies = [
            (Format::Tts, tts_em500(), "78f2a1fe989df34e"),
            (
                Format::ChirpStack,
                CHIRPSTACK_UP.to_owned(),
                "886722ea6b2e38d9",
            ),
            (Format::Helium, HELIUM_UPLINK.to_owned(), "8139aa6e7e7ce6f1"),
        ];
        for ((format, body, frame), (case, _, (at, later), others)) in
            bodies.into_iter().zip(frame_cases())
        {
            assert_eq!(format, case);
            let first = plan_of(format, &body).raw.unwrap();
            assert_eq!(first.frame, frame, "{format:?}");
            let again = plan_of(format, &with(&body, &at, later)).raw.unwrap();
            assert!(again.received_at > first.received_at, "{format:?}");
            assert_eq!(again.frame, first.frame, "{format:?}");
            for (at, change) in others {
                let other = raw_frame(format, &with(&body, &at, change.clone()));
                assert_ne!(other, first.frame, "{format:?} {change}");
            }
        }
    }

    #[test]
    fn a_raw_frame_is_never_the_frame_of_one_of_its_readings() {
        // One uplink, the same frame: its readings with a fill level, then without.
        let uplink = |readings: Value| {
            let body = with(CHIRPSTACK_UP, &["object"], json!({ "readings": readings }));
            plan_of(Format::ChirpStack, &body)
        };
        let keyed = uplink(json!([{"seq": 1, "fill_pct": 5}, {"seq": 2, "fill_pct": 6}]));
        let raw = uplink(json!([{"seq": 1}, {"seq": 2}])).raw.unwrap();
        let frames: Vec<_> = keyed.devices[0]
            .readings
            .iter()
            .map(|r| r.frame.clone())
            .collect();
        assert_eq!(frames.len(), 2);
        for frame in frames {
            assert!(frame.as_ref().is_some_and(|f| *f != raw.frame), "{frame:?}");
        }
    }

    #[test]
    fn a_payload_that_does_not_decode_gives_no_raw_and_says_so() {
        let cases = [
            (
                Format::Tts,
                with(
                    &tts_em500(),
                    &["uplink_message"],
                    json!({"frm_payload": "IM6e dEZj"}),
                ),
                "(\"frm_payload\") is not valid base64",
            ),
            (
                Format::ChirpStack,
                with(CHIRPSTACK_UP, &[], json!({"data": "qg="})),
                "(\"data\") is not valid base64",
            ),
            (
                Format::Helium,
                with(HELIUM_UPLINK, &[], json!({"payload": "SGVsbG8_"})),
                "(\"payload\") is not valid base64",
            ),
            (
                Format::Loriot,
                with(LORIOT_RX, &[], json!({"data": "0102AAB"})),
                "(\"data\") is not valid hex",
            ),
            (
                Format::Loriot,
                with(LORIOT_RX, &[], json!({"data": "0x0102"})),
                "(\"data\") is not valid hex",
            ),
            (
                Format::Loriot,
                with(LORIOT_RX, &[], json!({"data": 102})),
                "(\"data\") is not a string",
            ),
            (
                Format::Loriot,
                with(LORIOT_RX, &[], json!({"data": "00".repeat(256)})),
                "(\"data\") is longer than a LoRaWAN frame's 255 bytes",
            ),
        ];
        for (format, body, said) in cases {
            let p = plan_of(format, &body);
            assert_eq!(p.raw, None, "{body}");
            let r = &p.rejected[0].rejection;
            assert_eq!((r.code, r.field), ("missing_fill_pct", "fill_pct"));
            assert!(
                r.message.starts_with("fill_pct is missing: "),
                "{}",
                r.message
            );
            assert!(
                r.message.ends_with(&format!(
                    "; its raw payload {said}, so it cannot be decoded either"
                )),
                "{}",
                r.message
            );
        }
        // 255 bytes is a frame.
        let longest = with(LORIOT_RX, &[], json!({"data": "ff".repeat(255)}));
        assert_eq!(
            raw_of(Format::Loriot, &longest)["payload"],
            json!(vec![0xff; 255])
        );
    }

    #[test]
    fn no_payload_port_counter_or_time_gives_no_raw_quietly() {
        let quiet = |format: Format, body: &str| {
            let p = plan_of(format, body);
            assert_eq!(p.raw, None, "{body}");
            let message = &p.rejected[0].rejection.message;
            assert!(
                !message.contains("decoded either") && !message.contains("encdata"),
                "{message}"
            );
        };
        let mut no_port: Value = serde_json::from_str(CHIRPSTACK_UP).unwrap();
        no_port.as_object_mut().unwrap().remove("fPort");
        quiet(Format::ChirpStack, &no_port.to_string());
        let mut no_data: Value = serde_json::from_str(LORIOT_RX).unwrap();
        no_data.as_object_mut().unwrap().remove("data");
        quiet(Format::Loriot, &no_data.to_string());
        // An integer 1 ..= 255, written as one (as `seq` is read).
        for port in ["0", "256", "-1", "\"1\"", "1.5", "1.0", "1e0", "null"] {
            let body = edit(HELIUM_UPLINK, "\"port\": 1,", &format!("\"port\": {port},"));
            quiet(Format::Helium, &body);
        }
        for ok in [json!(1), json!(255)] {
            let b = with(HELIUM_UPLINK, &[], json!({ "port": ok }));
            assert_ne!(raw_of(Format::Helium, &b), Value::Null, "{ok}");
        }
        // An empty frame carries no payload.
        quiet(
            Format::ChirpStack,
            &with(CHIRPSTACK_UP, &[], json!({"data": ""})),
        );
        // A frame counter beyond 32 bits, or a seq given while the counter is bad.
        let b = with(CHIRPSTACK_UP, &[], json!({"fCnt": 4294967296_i64}));
        quiet(Format::ChirpStack, &b);
        let b = with(
            CHIRPSTACK_UP,
            &[],
            json!({"fCnt": "7", "object": {"seq": 7}}),
        );
        quiet(Format::ChirpStack, &b);
        assert_eq!(
            raw_of(
                Format::ChirpStack,
                &with(CHIRPSTACK_UP, &[], json!({"fCnt": 4294967295_u32}))
            )["f_cnt"],
            json!(4294967295_u32)
        );
        // A receive time that does not parse, while the decoded payload dates the reading.
        let b = with(
            CHIRPSTACK_UP,
            &[],
            json!({"time": "yesterday", "object": {"ts": "2026-07-16T09:00:00Z"}}),
        );
        quiet(Format::ChirpStack, &b);
    }

    #[test]
    fn a_frame_identity_reads_back_only_as_raw_frame_writes_it() {
        for frame in [0, 1, 0x78f2_a1fe_989d_f34e, u64::MAX] {
            assert_eq!(frame_from_hex(&format!("{frame:016x}")), Some(frame));
        }
        for text in [
            "",
            "0123",
            "78F2A1FE989DF34E",
            "78f2a1fe989df34",
            "78f2a1fe989df34e0",
            "+8f2a1fe989df34e",
            " 8f2a1fe989df34e",
            "78f2a1fe989df34g",
            "\u{661}8f2a1fe989df34",
        ] {
            assert_eq!(frame_from_hex(text), None, "{text:?}");
        }
        let raw = plan_of(Format::Tts, &tts_em500()).raw.unwrap();
        let again = frame_from_hex(&raw.frame).map(|f| format!("{f:016x}"));
        assert_eq!(again, Some(raw.frame));
    }
}
