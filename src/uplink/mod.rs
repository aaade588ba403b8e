//! Network-server webhooks → readings, routed per device.
//!
//! [`map_uplink`] turns one webhook body (The Things Stack v3 uplink, ChirpStack v4
//! `up` event JSON, Helium console uplink, LORIOT `rx`) or a native burst into raw
//! reading objects, filling what the decoded payload lacks from the uplink's
//! metadata. [`route`] validates them with the core's rules and groups the valid
//! ones by device, so the worker sends each device's readings to its own
//! deduplicator and answers with the original indices.
//!
//! Mapping rules (the defaults; the field names in the decoded payload can be
//! overridden with [`FieldNames`]):
//!
//! * `device_id`: the DevEUI in upper-case hex (`end_device_ids.dev_eui`,
//!   `deviceInfo.devEui`, `dev_eui`, `EUI`); TTS falls back to
//!   `end_device_ids.device_id` when no DevEUI is present. Never taken from the
//!   decoded payload (decoders put unrelated numbers there: Decentlab's `device_id`
//!   is the sensor's serial number).
//! * The decoded payload (TTS `uplink_message.decoded_payload`, ChirpStack
//!   `object`, Helium `decoded.payload`, LORIOT `decoded`) gives `seq`, `ts`,
//!   `fill_pct`, or holds `readings: [{seq, ts, fill_pct}, ...]` for a buffered
//!   burst inside one uplink.
//! * `seq` absent → the frame counter (`f_cnt`, `fCnt`, `fcnt`); a missing frame
//!   counter is 0 (TTS omits zero values).
//! * `ts` absent → the network server's receive time: TTS `uplink_message.received_at`
//!   (else the top-level `received_at`), ChirpStack `time`, Helium `reported_at` and
//!   LORIOT `ts` (ms since the epoch, written as RFC 3339 UTC).
//! * `fill_pct` is never derived: none of the level sensors in the device codec
//!   samples reports a percentage (they report the distance from sensor to surface
//!   in mm or cm), and turning a distance into a fill level needs each bin's depth,
//!   which an uplink does not carry. A reading without it is rejected with
//!   `missing_fill_pct`, never dropped; compute `fill_pct` in the network server's
//!   payload formatter, or name the decoder's percentage field in [`FieldNames`].
//!
//! A value that is present but wrong (`"seq": "41"`, `"ts": 1665561758`) is kept
//! as it is, so the core rejects it with its usual code instead of a fallback
//! quietly replacing it.

use crate::dedupe::error::Rejection;
use crate::dedupe::error::{Error, Field};
use crate::dedupe::reading::{validate, RawReading, Reading};
use crate::dedupe::timestamp::{isoformat, MAX_MICROS, MIN_MICROS};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Default cap on readings per request, in line with the worker's documented limit.
pub const DEFAULT_MAX_READINGS: usize = 10_000;
/// Largest readings-per-request cap a deployment may configure.
pub const MAX_MAX_READINGS: usize = 1_000_000;

impl Format {
    /// The route names, as the worker's URLs spell them.
    pub const NAMES: &'static [&'static str] =
        &["ttn", "chirpstack", "helium", "loriot", "readings"];
}

/// The body formats the worker accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The Things Stack v3 webhook, uplink message.
    Tts,
    /// ChirpStack v4 HTTP integration, `up` event, JSON encoding.
    ChirpStack,
    /// Helium console HTTP integration uplink.
    Helium,
    /// LORIOT `rx` message.
    Loriot,
    /// A native burst: an array of readings or `{"readings": [...]}`.
    Readings,
}

impl Format {
    /// The format for a route name: `ttn` (or `tts`), `chirpstack`, `helium`,
    /// `loriot`, `readings`.
    ///
    /// # Errors
    /// [`Error::UnknownFormat`] for any other name.
    pub fn from_name(name: &str) -> Result<Format, Error> {
        Ok(match name {
            "ttn" | "tts" => Format::Tts,
            "chirpstack" => Format::ChirpStack,
            "helium" => Format::Helium,
            "loriot" => Format::Loriot,
            "readings" => Format::Readings,
            _ => return Err(Error::UnknownFormat(name.to_owned())),
        })
    }
}

/// Names of the members read from a decoded payload (and its `readings` elements).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldNames {
    pub seq: String,
    pub ts: String,
    pub fill_pct: String,
}

impl Default for FieldNames {
    fn default() -> Self {
        FieldNames {
            seq: "seq".into(),
            ts: "ts".into(),
            fill_pct: "fill_pct".into(),
        }
    }
}

/// The valid readings of one device, with their indices in the request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceGroup<'a> {
    pub device_id: String,
    pub indices: Vec<usize>,
    pub readings: Vec<Reading<'a>>,
}

/// A reading refused before it reached a deduplicator.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Refused {
    /// The device, when the reading named a valid one.
    pub device_id: Option<String>,
    #[serde(flatten)]
    pub rejection: Rejection,
}

/// One request, split per device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan<'a> {
    pub received: usize,
    /// Devices in order of their first reading in the request.
    pub devices: Vec<DeviceGroup<'a>>,
    pub rejected: Vec<Refused>,
}

/// Maps a webhook body to raw reading objects (members may be missing or wrong;
/// [`route`] judges them).
///
/// # Errors
/// [`Error::InvalidJson`] when the body is not JSON; [`Error::InvalidBurst`] when
/// it is JSON but not an object of the format (or, for [`Format::Readings`], not a
/// burst); [`Error::TooManyReadings`] beyond `max_readings`.
pub fn map_uplink(
    format: Format,
    body: &[u8],
    names: &FieldNames,
    max_readings: usize,
) -> Result<Vec<Value>, Error> {
    let root: Value = serde_json::from_slice(body)?;
    let readings = match format {
        Format::Readings => native(root)?,
        _ => {
            let Value::Object(root) = root else {
                return Err(Error::InvalidBurst(format!(
                    "a {} uplink must be a JSON object",
                    label(format)
                )));
            };
            from_uplink(format, &root, names)?
        }
    };
    if readings.len() > max_readings {
        return Err(Error::TooManyReadings(readings.len(), max_readings));
    }
    Ok(readings)
}

/// Validates mapped readings and groups the valid ones by `device_id`.
pub fn route(format: Format, readings: &[Value], names: &FieldNames) -> Plan<'static> {
    let mut devices: Vec<DeviceGroup<'static>> = Vec::new();
    let mut slot: HashMap<String, usize> = HashMap::new();
    let mut rejected = Vec::new();
    for (index, value) in readings.iter().enumerate() {
        let raw = raw_reading(value);
        let device_id = value
            .get("device_id")
            .and_then(Value::as_str)
            .map(str::to_owned);
        match validate(raw) {
            Ok(reading) => {
                let id = reading.device_id.to_string();
                let at = *slot.entry(id.clone()).or_insert_with(|| {
                    devices.push(DeviceGroup {
                        device_id: id,
                        indices: Vec::new(),
                        readings: Vec::new(),
                    });
                    devices.len() - 1
                });
                devices[at].indices.push(index);
                devices[at].readings.push(reading.into_owned());
            }
            Err(e) => {
                let routable = !matches!(e, Error::InvalidReading(_))
                    && !matches!(e, Error::Missing(Field::DeviceId))
                    && !matches!(e, Error::Invalid(Field::DeviceId, _));
                let mut message = e.to_string();
                if e == Error::Missing(Field::FillPct) && format != Format::Readings {
                    message.push_str(&format!(
                        ": the decoded payload has no \"{}\"; compute it in the network \
                         server's payload formatter",
                        names.fill_pct
                    ));
                }
                rejected.push(Refused {
                    device_id: if routable { device_id } else { None },
                    rejection: Rejection {
                        index,
                        field: e.field(),
                        code: e.code(),
                        message,
                    },
                });
            }
        }
    }
    Plan {
        received: readings.len(),
        devices,
        rejected,
    }
}

/// [`map_uplink`] then [`route`].
///
/// # Errors
/// As [`map_uplink`].
pub fn plan(
    format: Format,
    body: &[u8],
    names: &FieldNames,
    max_readings: usize,
) -> Result<Plan<'static>, Error> {
    let readings = map_uplink(format, body, names, max_readings)?;
    Ok(route(format, &readings, names))
}

fn label(format: Format) -> &'static str {
    match format {
        Format::Tts => "The Things Stack",
        Format::ChirpStack => "ChirpStack",
        Format::Helium => "Helium",
        Format::Loriot => "LORIOT",
        Format::Readings => "readings",
    }
}

fn native(root: Value) -> Result<Vec<Value>, Error> {
    match root {
        Value::Array(v) => Ok(v),
        Value::Object(mut m) => match m.remove("readings") {
            Some(Value::Array(v)) => Ok(v),
            Some(_) => Err(Error::InvalidBurst(r#""readings" must be an array"#.into())),
            None => Err(Error::InvalidBurst(
                r#"object has no "readings" array"#.into(),
            )),
        },
        _ => Err(Error::InvalidBurst(
            r#"expected an array of readings or {"readings": [...]}"#.into(),
        )),
    }
}

/// What an uplink contributes besides its decoded payload.
struct Envelope<'a> {
    device_id: Option<Value>,
    decoded: Option<&'a Value>,
    frame_counter: Value,
    received_at: Option<Value>,
}

fn path<'a>(root: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a Value> {
    let (first, rest) = keys.split_first()?;
    rest.iter()
        .try_fold(root.get(*first)?, |v, k| v.as_object()?.get(*k))
}

/// A DevEUI in upper case; absent or empty → `None`, a non-string kept as is
/// so the core rejects it as `invalid_device_id`.
fn dev_eui(v: Option<&Value>) -> Option<Value> {
    match v? {
        Value::String(s) if s.is_empty() => None,
        Value::String(s) => Some(Value::String(s.to_ascii_uppercase())),
        other => Some(other.clone()),
    }
}

/// Milliseconds since the epoch as an RFC 3339 UTC string; anything else is kept
/// as it is (and rejected as `invalid_ts` if it ends up used).
fn ms_to_rfc3339(v: &Value) -> Value {
    let micros = v
        .as_i64()
        .and_then(|ms| ms.checked_mul(1000))
        .filter(|m| (MIN_MICROS..=MAX_MICROS).contains(m));
    micros.map_or_else(|| v.clone(), |m| Value::String(isoformat(m)))
}

fn envelope<'a>(format: Format, root: &'a Map<String, Value>) -> Result<Envelope<'a>, Error> {
    let counter = |v: Option<&Value>| v.cloned().unwrap_or(Value::from(0));
    Ok(match format {
        Format::Tts => {
            let Some(msg) = root.get("uplink_message").and_then(Value::as_object) else {
                return Err(Error::InvalidBurst(
                    "not a The Things Stack uplink: no \"uplink_message\" object".into(),
                ));
            };
            let device_id = dev_eui(path(root, &["end_device_ids", "dev_eui"])).or_else(|| {
                path(root, &["end_device_ids", "device_id"])
                    .filter(|v| v.as_str() != Some(""))
                    .cloned()
            });
            Envelope {
                device_id,
                decoded: msg.get("decoded_payload"),
                frame_counter: counter(msg.get("f_cnt")),
                received_at: msg
                    .get("received_at")
                    .or_else(|| root.get("received_at"))
                    .cloned(),
            }
        }
        Format::ChirpStack => Envelope {
            device_id: dev_eui(path(root, &["deviceInfo", "devEui"])),
            decoded: root.get("object"),
            frame_counter: counter(root.get("fCnt")),
            received_at: root.get("time").cloned(),
        },
        Format::Helium => Envelope {
            device_id: dev_eui(root.get("dev_eui")),
            decoded: path(root, &["decoded", "payload"]),
            frame_counter: counter(root.get("fcnt")),
            received_at: root.get("reported_at").map(ms_to_rfc3339),
        },
        Format::Loriot => {
            if let Some(cmd) = root.get("cmd").and_then(Value::as_str) {
                if cmd != "rx" {
                    return Err(Error::InvalidBurst(format!(
                        "LORIOT message \"{cmd}\" is not an uplink (\"rx\")"
                    )));
                }
            }
            Envelope {
                device_id: dev_eui(root.get("EUI")),
                decoded: root.get("decoded"),
                frame_counter: counter(root.get("fcnt")),
                received_at: root.get("ts").map(ms_to_rfc3339),
            }
        }
        Format::Readings => {
            return Err(Error::InvalidBurst(
                "a native burst has no uplink envelope".into(),
            ))
        }
    })
}

fn from_uplink(
    format: Format,
    root: &Map<String, Value>,
    names: &FieldNames,
) -> Result<Vec<Value>, Error> {
    let env = envelope(format, root)?;
    let empty = Map::new();
    let decoded = match env.decoded {
        Some(Value::Object(m)) => m,
        // No decoder, or one that failed (null): the reading has only metadata.
        _ => &empty,
    };
    let complete = |src: &Map<String, Value>| -> Value {
        let mut out = Map::new();
        if let Some(id) = &env.device_id {
            out.insert("device_id".into(), id.clone());
        }
        let seq = src.get(&names.seq).cloned();
        out.insert(
            "seq".into(),
            seq.unwrap_or_else(|| env.frame_counter.clone()),
        );
        if let Some(ts) = src.get(&names.ts).or(env.received_at.as_ref()) {
            out.insert("ts".into(), ts.clone());
        }
        if let Some(fill) = src.get(&names.fill_pct) {
            out.insert("fill_pct".into(), fill.clone());
        }
        Value::Object(out)
    };
    Ok(match decoded.get("readings") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::Object(m) => complete(m),
                // Not an object: handed on as is, rejected as `invalid_reading`.
                other => other.clone(),
            })
            .collect(),
        _ => vec![complete(decoded)],
    })
}

/// The raw shape of a JSON value. The visitors never fail on content; should the
/// deserialiser fail anyway, the default (not an object) is rejected by validation.
fn raw_reading(v: &Value) -> RawReading<'_> {
    serde::Deserialize::deserialize(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TTS: &str = include_str!("../../tests/fixtures/webhooks/tts-v3-uplink-docs-example.json");
    const CHIRPSTACK: &str =
        include_str!("../../tests/fixtures/webhooks/chirpstack-v4-up-docs-example.json");
    const HELIUM: &str =
        include_str!("../../tests/fixtures/webhooks/helium-console-uplink-docs-example.json");
    const LORIOT: &str = include_str!("../../tests/fixtures/webhooks/loriot-rx-docs-example.json");

    fn map(format: Format, body: &str) -> Vec<Value> {
        map_uplink(format, body.as_bytes(), &FieldNames::default(), 10).unwrap()
    }

    /// The sample with `extra` merged into the object at `at` (created if absent).
    fn with(body: &str, at: &[&str], extra: Value) -> String {
        let mut root: Value = serde_json::from_str(body).unwrap();
        let mut node = &mut root;
        for k in at {
            node = node
                .as_object_mut()
                .unwrap()
                .entry(k.to_string())
                .or_insert(json!({}));
        }
        for (k, v) in extra.as_object().unwrap() {
            node[k] = v.clone();
        }
        root.to_string()
    }

    fn plan_of(format: Format, body: &str) -> Plan<'static> {
        plan(format, body.as_bytes(), &FieldNames::default(), 10).unwrap()
    }

    #[test]
    fn the_docs_samples_map_to_metadata_and_lack_a_fill_level() {
        assert_eq!(
            map(Format::Tts, TTS),
            vec![json!({"device_id": "0004A30B001C0530", "seq": 1,
                        "ts": "2020-02-12T15:15:45.789585559Z"})]
        );
        assert_eq!(
            map(Format::ChirpStack, CHIRPSTACK),
            vec![json!({"device_id": "0101010101010101", "seq": 0,
                        "ts": "2022-07-18T09:34:15.775023242+00:00"})]
        );
        // The docs' reported_at has one digit too many (year 2472); it is still
        // a valid instant, converted as given.
        assert_eq!(
            map(Format::Helium, HELIUM),
            vec![json!({"device_id": "1C29FBD1D2084E21", "seq": 19,
                        "ts": "2472-11-09T08:11:01.234000+00:00"})]
        );
        assert_eq!(
            map(Format::Loriot, LORIOT),
            vec![json!({"device_id": "0102030405060708", "seq": 1,
                        "ts": "2016-08-10T17:37:55.433000+00:00"})]
        );
        for (format, body) in [
            (Format::Tts, TTS),
            (Format::ChirpStack, CHIRPSTACK),
            (Format::Helium, HELIUM),
            (Format::Loriot, LORIOT),
        ] {
            let p = plan_of(format, body);
            assert!(p.devices.is_empty());
            assert_eq!(p.rejected.len(), 1);
            let r = &p.rejected[0];
            assert_eq!(
                (r.rejection.code, r.rejection.field),
                ("missing_fill_pct", "fill_pct")
            );
            assert!(r.rejection.message.contains("payload formatter"));
            assert!(r.device_id.is_some(), "routable, so counted for its device");
        }
    }

    #[test]
    fn decoded_fields_win_over_the_fallbacks() {
        let body = with(
            TTS,
            &["uplink_message", "decoded_payload"],
            json!({"fill_pct": 62.5, "seq": 41, "ts": "2026-07-16T09:00:00Z"}),
        );
        let p = plan_of(Format::Tts, &body);
        assert_eq!(p.devices.len(), 1);
        let r = &p.devices[0].readings[0];
        assert_eq!((r.seq, r.fill_pct), (41, 62.5));
        assert_eq!(isoformat(r.ts), "2026-07-16T09:00:00+00:00");
        let fallback = with(
            TTS,
            &["uplink_message", "decoded_payload"],
            json!({"fill_pct": 10}),
        );
        let r = &plan_of(Format::Tts, &fallback).devices[0].readings[0];
        assert_eq!(r.seq, 1);
        assert_eq!(isoformat(r.ts), "2020-02-12T15:15:45.789585+00:00");
    }

    #[test]
    fn a_tts_uplink_without_f_cnt_has_seq_zero() {
        let mut v: Value = serde_json::from_str(TTS).unwrap();
        v["uplink_message"].as_object_mut().unwrap().remove("f_cnt");
        v["uplink_message"]["decoded_payload"] = json!({"fill_pct": 50});
        let p = plan_of(Format::Tts, &v.to_string());
        assert_eq!(p.devices[0].readings[0].seq, 0);
    }

    #[test]
    fn tts_falls_back_to_the_device_id_without_a_dev_eui() {
        let mut v: Value = serde_json::from_str(TTS).unwrap();
        v["end_device_ids"]
            .as_object_mut()
            .unwrap()
            .remove("dev_eui");
        v["uplink_message"]
            .as_object_mut()
            .unwrap()
            .remove("received_at");
        let m = map(Format::Tts, &v.to_string());
        assert_eq!(m[0]["device_id"], "dev1");
        assert_eq!(
            m[0]["ts"], "2020-02-12T15:15:46.014773143Z",
            "top-level received_at"
        );
    }

    #[test]
    fn a_buffered_burst_inside_one_uplink_keeps_same_second_readings() {
        let body = with(
            CHIRPSTACK,
            &["object"],
            json!({"readings": [
                {"seq": 41, "ts": "2026-07-16T09:00:00Z", "fill_pct": 62.5},
                {"seq": 42, "ts": "2026-07-16T09:00:00Z", "fill_pct": 71.0},
                {"fill_pct": 80},
                "garbage",
                {"seq": "43", "fill_pct": 1}
            ]}),
        );
        let p = plan_of(Format::ChirpStack, &body);
        assert_eq!(p.received, 5);
        assert_eq!(p.devices.len(), 1);
        assert_eq!(p.devices[0].indices, vec![0, 1, 2]);
        assert_eq!(p.devices[0].readings[2].seq, 0, "fCnt absent → 0");
        let codes: Vec<_> = p
            .rejected
            .iter()
            .map(|r| (r.rejection.index, r.rejection.code))
            .collect();
        assert_eq!(codes, vec![(3, "invalid_reading"), (4, "invalid_seq")]);
        assert_eq!(p.rejected[0].device_id, None);
        assert_eq!(p.rejected[1].device_id.as_deref(), Some("0101010101010101"));
    }

    #[test]
    fn helium_and_loriot_read_their_decoded_objects() {
        let h = with(HELIUM, &["decoded", "payload"], json!({"fill_pct": 33.5}));
        assert_eq!(
            plan_of(Format::Helium, &h).devices[0].readings[0].fill_pct,
            33.5
        );
        let l = with(LORIOT, &["decoded"], json!({"fill_pct": 12}));
        let p = plan_of(Format::Loriot, &l);
        assert_eq!(p.devices[0].device_id, "0102030405060708");
        assert!(matches!(
            map_uplink(
                Format::Loriot,
                br#"{"cmd":"gw","EUI":"01"}"#,
                &FieldNames::default(),
                10
            ),
            Err(Error::InvalidBurst(_))
        ));
    }

    #[test]
    fn lower_case_dev_euis_are_upper_cased_and_bad_ones_rejected() {
        let l = with(
            LORIOT,
            &[],
            json!({"EUI": "abcdef0102030405", "decoded": {"fill_pct": 1}}),
        );
        assert_eq!(
            plan_of(Format::Loriot, &l).devices[0].device_id,
            "ABCDEF0102030405"
        );
        let l = with(LORIOT, &[], json!({"EUI": 7, "decoded": {"fill_pct": 1}}));
        let p = plan_of(Format::Loriot, &l);
        assert_eq!(p.rejected[0].rejection.code, "invalid_device_id");
        assert_eq!(p.rejected[0].device_id, None);
        let l = with(LORIOT, &[], json!({"EUI": "", "decoded": {"fill_pct": 1}}));
        assert_eq!(
            plan_of(Format::Loriot, &l).rejected[0].rejection.code,
            "missing_device_id"
        );
    }

    #[test]
    fn millisecond_times_out_of_range_are_rejected_not_wrapped() {
        let l = with(
            LORIOT,
            &[],
            json!({"ts": 1e300, "decoded": {"fill_pct": 1}}),
        );
        assert_eq!(
            plan_of(Format::Loriot, &l).rejected[0].rejection.code,
            "invalid_ts"
        );
        let l = with(
            LORIOT,
            &[],
            json!({"ts": i64::MAX, "decoded": {"fill_pct": 1}}),
        );
        assert_eq!(
            plan_of(Format::Loriot, &l).rejected[0].rejection.code,
            "invalid_ts"
        );
    }

    #[test]
    fn field_names_can_be_overridden() {
        let names = FieldNames {
            fill_pct: "fillLevel".into(),
            seq: "counter".into(),
            ts: "time".into(),
        };
        let body = with(
            CHIRPSTACK,
            &["object"],
            json!({"fillLevel": 40, "counter": 9, "time": "2026-07-16T09:00:00Z"}),
        );
        let p = plan(Format::ChirpStack, body.as_bytes(), &names, 10).unwrap();
        assert_eq!(
            (
                p.devices[0].readings[0].seq,
                p.devices[0].readings[0].fill_pct
            ),
            (9, 40.0)
        );
    }

    #[test]
    fn native_bursts_are_split_per_device_in_first_seen_order() {
        let body = r#"{"readings":[
            {"device_id":"b","seq":1,"ts":"2026-07-16T09:00:00Z","fill_pct":1},
            {"device_id":"a","seq":1,"ts":"2026-07-16T09:00:00Z","fill_pct":1},
            {"device_id":"b","seq":2,"ts":"2026-07-16T09:00:00Z","fill_pct":101},
            {"device_id":"b","seq":3,"ts":"2026-07-16T09:00:00Z","fill_pct":3}]}"#;
        let p = plan_of(Format::Readings, body);
        let ids: Vec<_> = p
            .devices
            .iter()
            .map(|d| (d.device_id.as_str(), d.indices.clone()))
            .collect();
        assert_eq!(ids, vec![("b", vec![0, 3]), ("a", vec![1])]);
        assert_eq!(p.rejected[0].rejection.code, "invalid_fill_pct");
        assert!(!p.rejected[0].rejection.message.contains("formatter"));
    }

    #[test]
    fn whole_body_errors_have_codes() {
        let n = FieldNames::default();
        let code = |f, b: &str| plan(f, b.as_bytes(), &n, 2).unwrap_err().code();
        assert_eq!(code(Format::Tts, "{"), "invalid_json");
        assert_eq!(code(Format::Tts, "[]"), "invalid_burst");
        assert_eq!(code(Format::Tts, "{}"), "invalid_burst");
        assert_eq!(code(Format::Readings, "{}"), "invalid_burst");
        assert_eq!(code(Format::Readings, r#"{"readings":3}"#), "invalid_burst");
        assert_eq!(code(Format::Readings, "[1,2,3]"), "too_many_readings");
        assert_eq!(
            Format::from_name("mqtt").unwrap_err().code(),
            "unknown_format"
        );
        assert_eq!(Format::from_name("tts"), Ok(Format::Tts));
    }

    #[test]
    fn mapped_readings_keep_the_shared_vector_keys() {
        // A reading that passes through the mapping keeps its idempotency key.
        let vectors: Value =
            serde_json::from_str(include_str!("../../tests/vectors/keys.json")).unwrap();
        for v in vectors["vectors"].as_array().unwrap() {
            let r = &v["reading"];
            let body = with(
                CHIRPSTACK,
                &[],
                json!({"deviceInfo": {"devEui": r["device_id"]}, "object": {
                    "seq": r["seq"], "ts": r["ts"], "fill_pct": r["fill_pct"]}}),
            );
            let p = plan_of(Format::ChirpStack, &body);
            let reading = &p.devices[0].readings[0];
            let mut expected = v["key"].as_str().unwrap().to_owned();
            // DevEUIs are upper-cased; the key's device part follows.
            let id = r["device_id"].as_str().unwrap();
            expected.replace_range(..id.len(), &id.to_ascii_uppercase());
            assert_eq!(crate::idempotency_key(reading), expected, "{}", v["name"]);
        }
    }
}
