//! Network-server webhooks → keyed readings, routed per device (`parseUplink`).
//!
//! [`plan`] parses one request body once, takes each reading's four fields out of it
//! as the core's raw scalars ([`RawReading`]), validates each reading once with the
//! core's rules, keys it once (SHA-256) and groups the keyed readings by device, so
//! the worker hands each device's object only keys and rows to store, and answers
//! with the request's indices.
//!
//! One file per network server holds its envelope and its docs-derived notes:
//!
//! | format | route name | file |
//! | --- | --- | --- |
//! | The Things Stack v3 webhook, uplink message | `ttn` (alias `tts`) | `ttn.rs` |
//! | ChirpStack v4 HTTP integration, `up` event, JSON | `chirpstack` | `chirpstack.rs` |
//! | Helium console HTTP integration, uplink | `helium` | `helium.rs` |
//! | LORIOT `rx` message | `loriot` | `loriot.rs` |
//! | the native burst `[reading, ...]` or `{"readings": [...]}` | `readings` | `native.rs` |
//!
//! This file holds what they share: the [`Format`] table, [`FieldNames`], how a
//! decoded payload and an envelope become readings, and the [`Plan`].
//!
//! Mapping rules (the defaults; the field names in the decoded payload can be
//! overridden with [`FieldNames`]):
//!
//! * `device_id`: the DevEUI in upper-case hex; taken from the envelope only, never
//!   from the decoded payload (decoders put unrelated numbers there: Decentlab's
//!   `device_id` is the sensor's serial number).
//! * The decoded payload (the network server's payload formatter or codec output)
//!   gives `seq`, `ts`, `fill_pct`, or holds `readings: [{seq, ts, fill_pct}, ...]`
//!   for a buffered burst inside one uplink; each element is completed like a
//!   single reading, an element that is not an object is rejected
//!   (`invalid_reading`).
//! * `seq` absent → the frame counter; a missing frame counter is 0.
//! * `ts` absent → the network server's receive time.
//! * `fill_pct` is never derived: none of the level sensors in the device codec
//!   samples reports a percentage (they report the distance from sensor to surface
//!   in mm or cm), and turning a distance into a fill level needs each bin's depth,
//!   which an uplink does not carry. A reading without it is rejected with
//!   `missing_fill_pct`, never dropped; compute `fill_pct` in the network server's
//!   payload formatter, or name the decoder's percentage field in [`FieldNames`].
//!   Sensor codecs, should they come, would sit beside these files (`codec/`) and
//!   take over from `decoded_reading`, which reads the decoded payload.
//!
//! A value that is present but wrong (`"seq": "41"`, `"ts": 1665561758`) is kept
//! as it is, so the core rejects it with its usual code instead of a fallback
//! quietly replacing it.
//!
//! Every body is read by `json.rs`: a member given twice in one object is never
//! first- or last-wins (the body's `invalid_json`, or in a native burst's reading
//! element that reading's `invalid_reading`); a number out of f64 range is ignored
//! where it is not read and rejects the reading's field where it is; a lone
//! surrogate escape is `invalid_json`.

mod chirpstack;
mod helium;
mod json;
mod loriot;
mod native;
mod ttn;

use crate::dedupe::error::{Error, Field, Rejection};
use crate::dedupe::key::{content_digest, format_key};
use crate::dedupe::reading::{validate, RawBurst, RawReading, Reading, Scalar};
use crate::dedupe::timestamp::{isoformat, IsoBuf, Micros, MAX_MICROS, MIN_MICROS};
use json::{number_scalar, Json, Object, Reader};
use serde::{Serialize, Serializer};
use std::borrow::Cow;
use std::collections::HashMap;

/// Default cap on readings per request, in line with the worker's documented limit.
pub const DEFAULT_MAX_READINGS: usize = 10_000;
/// Largest readings-per-request cap a deployment may configure.
pub const MAX_MAX_READINGS: usize = 1_000_000;

/// The body formats the worker accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The Things Stack v3 webhook, uplink message (`ttn.rs`).
    Tts,
    /// ChirpStack v4 HTTP integration, `up` event, JSON encoding (`chirpstack.rs`).
    ChirpStack,
    /// Helium console HTTP integration uplink (`helium.rs`).
    Helium,
    /// LORIOT `rx` message (`loriot.rs`).
    Loriot,
    /// A native burst: an array of readings or `{"readings": [...]}` (`native.rs`).
    Readings,
}

/// The route names: one row per format, its name first, then an alias that
/// [`Format::from_name`] also accepts. The one place these names are written;
/// [`Format::NAMES`] lists them for JavaScript.
const ROUTES: [(Format, &str, Option<&str>); 5] = [
    (Format::Tts, "ttn", Some("tts")),
    (Format::ChirpStack, "chirpstack", None),
    (Format::Helium, "helium", None),
    (Format::Loriot, "loriot", None),
    (Format::Readings, "readings", None),
];

/// The names of [`ROUTES`], in its order.
const NAMES: [&str; ROUTES.len()] = {
    let mut names = [""; ROUTES.len()];
    let mut i = 0;
    while i < ROUTES.len() {
        names[i] = ROUTES[i].1;
        i += 1;
    }
    names
};

impl Format {
    /// The route names, as the worker's URLs spell them, one per format (aliases
    /// left out): `ttn`, `chirpstack`, `helium`, `loriot`, `readings`.
    pub const NAMES: &'static [&'static str] = &NAMES;

    /// The format for a route name: one of [`Format::NAMES`], or the alias `tts`.
    ///
    /// ```
    /// use reconnect_dedupe::uplink::Format;
    /// assert_eq!(Format::from_name("tts"), Format::from_name("ttn"));
    /// assert_eq!(Format::from_name("mqtt").unwrap_err().code(), "unknown_format");
    /// ```
    ///
    /// # Errors
    /// [`Error::UnknownFormat`] for any other name.
    pub fn from_name(name: &str) -> Result<Format, Error> {
        ROUTES
            .iter()
            .find(|(_, route, alias)| *route == name || *alias == Some(name))
            .map(|&(format, ..)| format)
            .ok_or_else(|| Error::UnknownFormat(name.to_owned()))
    }

    /// The route name of this format (the inverse of [`Format::from_name`]).
    pub fn name(self) -> &'static str {
        ROUTES
            .iter()
            .find(|(format, ..)| *format == self)
            .map_or("", |&(_, route, _)| route)
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

/// One request, validated, keyed and split per device. Serialises as
/// `{received, devices: [{device_id, readings: [{index, key, seq, ts, fill_pct}]}],
/// rejected: [{index, field, code, message, device_id}]}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
#[cfg_attr(feature = "typescript", tsify(rename = "UplinkPlan"))]
pub struct Plan {
    /// Readings in the request, valid or not.
    pub received: usize,
    /// Devices in order of their first valid reading in the request.
    pub devices: Vec<DeviceReadings>,
    /// Readings refused here, in request order.
    pub rejected: Vec<Refused>,
}

/// The valid readings of one device, in request order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct DeviceReadings {
    pub device_id: String,
    pub readings: Vec<KeyedReading>,
}

/// A valid reading with its idempotency key; its `device_id` is its group's.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct KeyedReading {
    /// The reading's index in the request.
    pub index: usize,
    /// `device_id:seq:<16 hex digits of SHA-256 of the content>`.
    pub key: String,
    pub seq: i64,
    /// The UTC instant, written as the key hashed it (Python's `isoformat()`).
    #[serde(serialize_with = "isoformat_text")]
    #[cfg_attr(feature = "typescript", tsify(type = "string"))]
    pub ts: Micros,
    /// Percent, 0.0 ..= 100.0, never `-0.0`.
    pub fill_pct: f64,
}

/// A reading refused before it reached a deduplicator.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct Refused {
    #[serde(flatten)]
    pub rejection: Rejection,
    /// The device, when the reading named a valid one (the worker counts the
    /// rejection for that device); `None` when the device id itself is missing or
    /// bad, or the element is not a reading at all.
    pub device_id: Option<String>,
}

fn isoformat_text<S: Serializer>(ts: &Micros, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(IsoBuf::new(*ts).as_str())
}

impl Plan {
    /// The plan as JSON text (what `parseUplink` returns).
    pub fn to_json(&self) -> String {
        // Plain structs, strings and finite numbers: serialising cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Parses a request body once, then validates, keys and routes its readings.
///
/// ```
/// use reconnect_dedupe::uplink::{plan, FieldNames, Format};
/// let body = br#"[{"device_id":"bin-A17","seq":41,"ts":"2026-07-16T09:00:00Z","fill_pct":62.5}]"#;
/// let p = plan(Format::Readings, body, &FieldNames::default(), 10).unwrap();
/// assert_eq!(p.devices[0].readings[0].key, "bin-A17:41:76c73ee2946cc70e");
/// ```
///
/// # Errors
/// [`Error::InvalidJson`] when the body is not JSON; [`Error::InvalidBurst`] when
/// it is JSON but not an object of the format (or, for [`Format::Readings`], not a
/// burst); [`Error::TooManyReadings`] beyond `max_readings`. Bad readings are not
/// errors: they come back in [`Plan::rejected`].
pub fn plan(
    format: Format,
    body: &[u8],
    names: &FieldNames,
    max_readings: usize,
) -> Result<Plan, Error> {
    if format == Format::Readings {
        let readings = native::parse(body)?;
        within(readings.len(), max_readings)?;
        return Ok(route(format, names, readings.into_iter()));
    }
    let root = json::read(body, Reader::value)?;
    let envelope = envelope(format, &root)?;
    within(envelope.burst().map_or(1, <[Json]>::len), max_readings)?;
    Ok(route(format, names, uplink_readings(&envelope, names)))
}

/// Reads a native burst body (`[reading, ...]` or `{"readings": [...]}`) into the
/// core's raw readings, by the body rules of every route (module docs): what
/// [`plan`] reads for [`Format::Readings`] and `Deduplicator::process_json` takes.
///
/// ```
/// use reconnect_dedupe::uplink::read_burst;
/// let r = read_burst(br#"[{"device_id":"a","seq":1,"seq":2}, {"rssi":1e400}]"#).unwrap();
/// assert_eq!(r.0.len(), 2);
/// assert_eq!(r.0[0].repeated.as_deref(), Some(r#"member "seq" appears twice"#));
/// assert_eq!(read_burst(br#"{"readings":[],"readings":[]}"#).unwrap_err().code(), "invalid_json");
/// ```
///
/// # Errors
/// [`Error::InvalidJson`] when the body is not JSON (a member given twice outside a
/// reading element, a lone surrogate escape included); [`Error::InvalidBurst`] when
/// it is neither an array nor an object with a `readings` array.
pub fn read_burst(body: &[u8]) -> Result<RawBurst<'_>, Error> {
    native::parse(body).map(RawBurst)
}

fn within(count: usize, max_readings: usize) -> Result<(), Error> {
    if count > max_readings {
        return Err(Error::TooManyReadings(count, max_readings));
    }
    Ok(())
}

/// Validates and keys each raw reading once, grouping the valid ones by device.
fn route<'a>(
    format: Format,
    names: &FieldNames,
    readings: impl Iterator<Item = RawReading<'a>>,
) -> Plan {
    let mut devices: Vec<DeviceReadings> = Vec::new();
    let mut slot: HashMap<Cow<'a, str>, usize> = HashMap::new();
    let mut rejected = Vec::new();
    let mut scratch = String::with_capacity(64);
    let mut received = 0;
    for (index, raw) in readings.enumerate() {
        received += 1;
        // Kept for a rejection that still names its device; a borrowed id costs nothing.
        let named = match &raw.device_id {
            Some(Scalar::Str(id)) => Some(id.clone()),
            _ => None,
        };
        match validate(raw) {
            Ok(reading) => {
                let at = match slot.get(&*reading.device_id) {
                    Some(&at) => at,
                    None => {
                        devices.push(DeviceReadings {
                            device_id: reading.device_id.to_string(),
                            readings: Vec::new(),
                        });
                        slot.insert(reading.device_id.clone(), devices.len() - 1);
                        devices.len() - 1
                    }
                };
                let keyed = keyed(index, &reading, &mut scratch);
                if let Some(group) = devices.get_mut(at) {
                    group.readings.push(keyed);
                }
            }
            Err(e) => rejected.push(refused(format, names, index, &e, named)),
        }
    }
    Plan {
        received,
        devices,
        rejected,
    }
}

fn keyed(index: usize, reading: &Reading<'_>, scratch: &mut String) -> KeyedReading {
    let digest = content_digest(reading, scratch);
    KeyedReading {
        index,
        key: format_key(&reading.device_id, reading.seq, digest),
        seq: reading.seq,
        ts: reading.ts,
        fill_pct: reading.fill_pct,
    }
}

fn refused(
    format: Format,
    names: &FieldNames,
    index: usize,
    e: &Error,
    device_id: Option<Cow<'_, str>>,
) -> Refused {
    let routable = !matches!(
        e,
        Error::InvalidReading(_)
            | Error::Missing(Field::DeviceId)
            | Error::Invalid(Field::DeviceId, _)
            | Error::InvisibleCharacter(_)
    );
    let mut rejection = Rejection::new(index, e);
    if *e == Error::Missing(Field::FillPct) && format != Format::Readings {
        rejection.message.push_str(&format!(
            ": the decoded payload has no \"{}\"; compute it in the network \
             server's payload formatter",
            names.fill_pct
        ));
    }
    Refused {
        rejection,
        device_id: device_id.filter(|_| routable).map(Cow::into_owned),
    }
}

/// The human name of a network server, for messages.
fn label(format: Format) -> &'static str {
    match format {
        Format::Tts => ttn::LABEL,
        Format::ChirpStack => chirpstack::LABEL,
        Format::Helium => helium::LABEL,
        Format::Loriot => loriot::LABEL,
        Format::Readings => native::LABEL,
    }
}

/// What an uplink contributes besides its decoded payload, as the core's scalars.
struct Envelope<'a> {
    /// The DevEUI (upper case) or the server's fallback; `None` when absent.
    device_id: Option<Scalar<'a>>,
    /// The decoded payload as the server delivered it (any JSON, or absent).
    decoded: Option<&'a Json<'a>>,
    /// The frame counter; 0 when absent.
    frame_counter: Scalar<'a>,
    /// The receive time, an RFC 3339 string when the server sends milliseconds.
    received_at: Option<Scalar<'a>>,
}

impl<'a> Envelope<'a> {
    /// The decoded payload's object; `None` without a decoder, or with one that
    /// failed (`null`): the reading then has only metadata.
    fn decoded_object(&self) -> Option<&'a Object<'a>> {
        self.decoded.and_then(Json::as_object)
    }

    /// The decoded payload's `readings` array: a buffered burst in one uplink.
    fn burst(&self) -> Option<&'a [Json<'a>]> {
        self.decoded_object()?.get("readings")?.as_array()
    }
}

/// The envelope of an uplink body in `format`.
///
/// # Errors
/// [`Error::InvalidBurst`] when the body is not a JSON object or not an uplink
/// of the format.
fn envelope<'a>(format: Format, root: &'a Json<'a>) -> Result<Envelope<'a>, Error> {
    let Json::Object(root) = root else {
        return Err(Error::InvalidBurst(format!(
            "a {} uplink must be a JSON object",
            label(format)
        )));
    };
    match format {
        Format::Tts => ttn::envelope(root),
        Format::ChirpStack => Ok(chirpstack::envelope(root)),
        Format::Helium => Ok(helium::envelope(root)),
        Format::Loriot => loriot::envelope(root),
        Format::Readings => Err(Error::InvalidBurst(
            "a native burst has no uplink envelope".into(),
        )),
    }
}

/// The readings of an uplink: one per element of the decoded payload's `readings`
/// array (an element that is not an object is rejected as `invalid_reading`), else
/// the one the decoded payload describes.
fn uplink_readings<'e>(
    envelope: &'e Envelope<'_>,
    names: &'e FieldNames,
) -> impl Iterator<Item = RawReading<'e>> + 'e {
    let burst = envelope.burst();
    let single = burst
        .is_none()
        .then(|| decoded_reading(envelope, envelope.decoded_object(), names));
    let each = burst.into_iter().flatten().map(|item| match item {
        Json::Object(m) => decoded_reading(envelope, Some(m), names),
        _ => RawReading::default(),
    });
    each.chain(single)
}

/// One reading from a decoded payload object (or one of its `readings`; `None`:
/// no decoded object), completed from the envelope. The envelope's scalars are
/// lent, not copied.
fn decoded_reading<'e>(
    envelope: &'e Envelope<'_>,
    src: Option<&'e Object<'e>>,
    names: &FieldNames,
) -> RawReading<'e> {
    let field = |name: &String| src.and_then(|m| m.get(name)).map(scalar);
    RawReading {
        is_object: true,
        repeated: None,
        device_id: envelope.device_id.as_ref().map(lend),
        seq: Some(field(&names.seq).unwrap_or_else(|| lend(&envelope.frame_counter))),
        ts: field(&names.ts).or_else(|| envelope.received_at.as_ref().map(lend)),
        fill_pct: field(&names.fill_pct),
    }
}

/// A JSON value as the core's raw scalar: what `Scalar::deserialize` makes of it
/// (strings are borrowed).
fn scalar<'a>(v: &'a Json<'_>) -> Scalar<'a> {
    match v {
        Json::Null => Scalar::Null,
        Json::Bool(_) => Scalar::Bool,
        Json::Number(text) => number_scalar(text),
        Json::Str(s) => Scalar::Str(Cow::Borrowed(s)),
        Json::Array(_) | Json::Object(_) => Scalar::Nested,
    }
}

/// A scalar borrowed from one the envelope holds (its strings are not copied).
fn lend<'e>(s: &'e Scalar<'_>) -> Scalar<'e> {
    match s {
        Scalar::Str(text) => Scalar::Str(Cow::Borrowed(text)),
        Scalar::Null => Scalar::Null,
        Scalar::Bool => Scalar::Bool,
        Scalar::Int(n) => Scalar::Int(*n),
        Scalar::Float(x) => Scalar::Float(*x),
        Scalar::Fractional(x) => Scalar::Fractional(*x),
        Scalar::Nested => Scalar::Nested,
    }
}

/// The member at `keys` below `root`, through nested objects.
fn path<'a>(root: &'a Object<'a>, keys: &[&str]) -> Option<&'a Json<'a>> {
    let (first, rest) = keys.split_first()?;
    rest.iter()
        .try_fold(root.get(first)?, |v, k| v.as_object()?.get(k))
}

/// A DevEUI in upper case; absent or empty → `None`, a non-string kept as is so
/// the core rejects it as `invalid_device_id`.
fn dev_eui<'a>(v: Option<&'a Json<'_>>) -> Option<Scalar<'a>> {
    match v? {
        Json::Str(s) if s.is_empty() => None,
        Json::Str(s) if s.bytes().any(|b| b.is_ascii_lowercase()) => {
            Some(Scalar::Str(Cow::Owned(s.to_ascii_uppercase())))
        }
        other => Some(scalar(other)),
    }
}

/// A frame counter; absent → 0 (The Things Stack omits zero values).
fn frame_counter<'a>(v: Option<&'a Json<'_>>) -> Scalar<'a> {
    v.map_or(Scalar::Int(0), scalar)
}

/// Milliseconds since the epoch as an RFC 3339 UTC string; anything else is kept
/// as it is (and rejected as `invalid_ts` if it ends up used).
fn ms_to_rfc3339<'a>(v: &'a Json<'_>) -> Scalar<'a> {
    let micros = v
        .as_i64()
        .and_then(|ms| ms.checked_mul(1000))
        .filter(|m| (MIN_MICROS..=MAX_MICROS).contains(m));
    micros.map_or_else(|| scalar(v), |m| Scalar::Str(Cow::Owned(isoformat(m))))
}

#[cfg(test)]
mod tests;
