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
//! decoded payload and an envelope become readings, and the [`Plan`]. A raw payload
//! the worker decodes with its codec becomes keyed readings in `payload.rs`
//! ([`payload_readings`]).
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
//! * Such an uplink hands its raw payload on instead: [`Plan::raw`] (`raw.rs`) holds
//!   its bytes, port, frame counter and receive time and the codec and bin its
//!   network server names, for the worker to decode with the sensor's codec
//!   (`codec/`). The decoded payload keeps precedence whenever it gives a fill level.
//!
//! A value that is present but wrong (`"seq": "41"`, `"ts": 1665561758`) is kept
//! as it is, so the core rejects it with its usual code instead of a fallback
//! quietly replacing it.
//!
//! Every body is read by the core's JSON reader (`src/dedupe/json.rs`), a native
//! burst by its burst reader (`src/dedupe/burst.rs`): a member given twice in one
//! object is never first- or last-wins (the body's `invalid_json`, or in a native
//! burst's reading element that reading's `invalid_reading`); a number out of f64
//! range is ignored where it is not read and rejects the reading's field where it
//! is; a lone surrogate escape is `invalid_json`.

mod chirpstack;
mod field;
mod helium;
mod loriot;
mod native;
mod payload;
mod raw;
#[cfg(test)]
mod test_kit;
mod ttn;

use crate::dedupe::error::{Error, Field, Rejection};
use crate::dedupe::json::{self, number_scalar, Json, Object, Reader};
use crate::dedupe::key::{content_digest, digest_of_parts, format_key};
use crate::dedupe::reading::{canonical_device_id, validate, RawReading, Reading, Scalar};
use crate::dedupe::timestamp::{isoformat, MAX_MICROS, MIN_MICROS};
use serde::Serialize;
use std::borrow::Cow;
use std::collections::HashMap;

pub use crate::dedupe::burst::read_burst;
pub use crate::dedupe::keyed::KeyedReading;
pub use field::{FieldNames, FieldPath};
pub use payload::{payload_readings, PayloadReadings};
use raw::RawParts;
pub use raw::{frame_from_hex, ConfigHint, RawUplink, MAX_PAYLOAD_BYTES};

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

    /// The `event`s of the messages of this format a plan acknowledges unread
    /// (`ignored`), every one it can name: The Things Stack's other message types and
    /// `unknown`, Helium's `join` and `other`, LORIOT's other commands and `other`.
    /// ChirpStack's are the worker's (its `event` query); a native burst has none.
    pub fn ignored_events(self) -> Vec<&'static str> {
        match self {
            Format::Tts => ttn::ignored_events().collect(),
            Format::Helium => helium::IGNORED.to_vec(),
            Format::Loriot => loriot::ignored_events().collect(),
            Format::ChirpStack | Format::Readings => vec![],
        }
    }

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

/// One request, validated, keyed and split per device. Serialises as
/// `{event, ignored, simulated, received, devices: [{device_id, readings: [{index,
/// key, seq, ts, fill_pct, frame}]}], rejected: [{index, field, code, message,
/// device_id}], raw: null | {device_id, f_port, payload (bytes), received_at, f_cnt, frame,
/// codec_hint, config_hint: {bin_depth_mm?, offset_mm?, reporting_period_s?}}}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
#[cfg_attr(feature = "typescript", tsify(rename = "UplinkPlan"))]
pub struct Plan {
    /// The message's type as its network server names it: The Things Stack's
    /// message member (`uplink_message`, `join_accept`, ..., `unknown`), ChirpStack's
    /// `up`, Helium's `type` (`uplink`, `join`, `other`), LORIOT's `cmd` (`rx`,
    /// `gw`, ..., `other`); `readings` for a native burst.
    pub event: &'static str,
    /// Not an uplink (a join, a downlink acknowledgement, ...): nothing was read, and
    /// `received` is 0. The worker acknowledges it and stores nothing.
    pub ignored: bool,
    /// The Things Stack's "Simulate uplink" (`"simulated": true`): the readings are
    /// planned as usual, and the worker shows their outcome without storing them.
    pub simulated: bool,
    /// Readings in the request, valid or not.
    pub received: usize,
    /// Devices in order of their first valid reading in the request.
    pub devices: Vec<DeviceReadings>,
    /// Readings refused here, in request order.
    pub rejected: Vec<Refused>,
    /// The raw payload of a network server's uplink that gives no reading with a
    /// fill level (every reading rejected `missing_fill_pct`), for the worker to
    /// decode; `None` for any other plan, and when the payload, its port, frame
    /// counter or receive time is absent or unreadable (`raw.rs` lists the rules).
    ///
    /// Contract: with `raw` set, [`Plan::rejected`] still holds the uplink's
    /// `missing_fill_pct` rows unchanged, and [`Plan::devices`] is empty. The worker
    /// that decodes `raw` replaces those rows with the codec's readings and
    /// rejections (their `index` is then the sample's); a worker that does not
    /// decode it answers them as they are. Without `raw`, a payload that is there
    /// but does not decode (bad base64 or hex, too long, LORIOT's `encdata`) is
    /// said in those rows' message; their code stays `missing_fill_pct`.
    pub raw: Option<RawUplink>,
}

/// The valid readings of one device, in request order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct DeviceReadings {
    pub device_id: String,
    pub readings: Vec<KeyedReading>,
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
        let readings = read_burst(body)?.0;
        within(readings.len(), max_readings)?;
        let each = readings.into_iter().map(|r| (r, None));
        return Ok(route(format, names, "readings", false, each));
    }
    let root = json::read(body, Reader::value)?;
    let envelope = match message(format, &root)? {
        Message::Uplink(envelope) => envelope,
        Message::Ignored(event) => return Ok(Plan::ignored(event)),
    };
    within(envelope.burst().map_or(1, <[Json]>::len), max_readings)?;
    let readings = uplink_readings(format, &envelope, names);
    let mut planned = route(
        format,
        names,
        envelope.event,
        envelope.simulated,
        readings.into_iter(),
    );
    raw::attach(format, &envelope, &mut planned);
    Ok(planned)
}

fn within(count: usize, max_readings: usize) -> Result<(), Error> {
    if count > max_readings {
        return Err(Error::TooManyReadings(count, max_readings));
    }
    Ok(())
}

impl Plan {
    /// The plan of a message that is not an uplink.
    fn ignored(event: &'static str) -> Plan {
        Plan {
            event,
            ignored: true,
            simulated: false,
            received: 0,
            devices: Vec::new(),
            rejected: Vec::new(),
            raw: None,
        }
    }
}

/// Validates and keys each raw reading (with its frame identity, when its `ts` is
/// the receive time) once, grouping the valid ones by device.
fn route<'a>(
    format: Format,
    names: &FieldNames,
    event: &'static str,
    simulated: bool,
    readings: impl Iterator<Item = (RawReading<'a>, Option<u64>)>,
) -> Plan {
    let mut devices: Vec<DeviceReadings> = Vec::new();
    let mut slot: HashMap<Cow<'a, str>, usize> = HashMap::new();
    let mut rejected = Vec::new();
    let mut scratch = String::with_capacity(64);
    let mut received = 0;
    for (index, (raw, frame)) in readings.enumerate() {
        received += 1;
        // Kept for a rejection that still names its device; a borrowed id costs nothing.
        let named = match &raw.device_id {
            Some(Scalar::Str(id)) => Some(canonical_device_id(id.clone())),
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
                let keyed = keyed(index, &reading, frame, &mut scratch);
                if let Some(group) = devices.get_mut(at) {
                    group.readings.push(keyed);
                }
            }
            Err(e) => rejected.push(refused(format, names, index, &e, named)),
        }
    }
    Plan {
        event,
        ignored: false,
        simulated,
        received,
        devices,
        rejected,
        raw: None,
    }
}

fn keyed(
    index: usize,
    reading: &Reading<'_>,
    frame: Option<u64>,
    scratch: &mut String,
) -> KeyedReading {
    let digest = content_digest(reading, scratch);
    KeyedReading {
        index,
        key: format_key(&reading.device_id, reading.seq, digest),
        seq: reading.seq,
        ts: reading.ts,
        fill_pct: reading.fill_pct,
        frame: frame.map(|f| format!("{f:016x}")),
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
    if *e == Error::Missing(Field::FillPct) {
        match format {
            Format::Readings => {}
            Format::Loriot => rejection.message.push_str(loriot::NO_DECODER),
            _ => rejection.message.push_str(&format!(
                ": the decoded payload has no \"{}\"; compute it in the network \
                 server's payload formatter",
                names.fill_pct
            )),
        }
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

/// What a network server posted: an uplink, or another event, acknowledged unread.
enum Message<'a> {
    /// Boxed: an envelope is some hundred bytes, an acknowledged event one name.
    Uplink(Box<Envelope<'a>>),
    /// Not an uplink; its event name, as [`Plan::event`] gives it.
    Ignored(&'static str),
}

/// What an uplink contributes besides its decoded payload, as the core's scalars.
struct Envelope<'a> {
    /// The message's event name ([`Plan::event`]).
    event: &'static str,
    /// The Things Stack's "Simulate uplink".
    simulated: bool,
    /// The DevEUI or the server's fallback; `None` when absent.
    device_id: Option<Scalar<'a>>,
    /// The decoded payload as the server delivered it (any JSON, or absent).
    decoded: Option<&'a Json<'a>>,
    /// The frame counter; 0 when absent.
    frame_counter: Scalar<'a>,
    /// The receive time, an RFC 3339 string when the server sends milliseconds.
    received_at: Option<Scalar<'a>>,
    /// What identifies the radio frame besides the device and its counter.
    frame: Frame<'a>,
    /// The raw payload, its port and the device hints, for [`Plan::raw`].
    raw: RawParts<'a>,
}

/// The parts of an uplink that identify its radio frame, as text: the session
/// (when the server names it), the frame counter, the port and the raw payload.
/// Absent parts are empty.
#[derive(Default)]
struct Frame<'a> {
    session: Cow<'a, str>,
    counter: Cow<'a, str>,
    port: Cow<'a, str>,
    payload: Cow<'a, str>,
}

impl Frame<'_> {
    /// The identity of the radio frame itself ([`RawUplink::frame`]), from a network
    /// server's `format`: the five parts, each length-prefixed, so no two frames
    /// share the hashed text, and no reading's identity ([`Frame::digest`], six
    /// parts) does either.
    fn uplink_digest(&self, format: Format) -> u64 {
        digest_of_parts(self.parts(format))
    }

    /// The identity of reading `index` of this frame: the frame's parts and the
    /// reading's place in the uplink.
    fn digest(&self, format: Format, index: usize) -> u64 {
        let index = index.to_string();
        digest_of_parts(self.parts(format).into_iter().chain([index.as_str()]))
    }

    fn parts(&self, format: Format) -> [&str; 5] {
        [
            format.name(),
            &self.session,
            &self.counter,
            &self.port,
            &self.payload,
        ]
    }
}

/// A scalar member as frame text: a string as it is, a number as written.
fn atom<'a>(v: Option<&'a Json<'a>>) -> Cow<'a, str> {
    match v {
        Some(Json::Str(s)) => Cow::Borrowed(s),
        Some(Json::Number(text)) => Cow::Borrowed(text),
        _ => Cow::Borrowed(""),
    }
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

/// What a body in `format` is: an uplink's envelope, or an event to acknowledge.
///
/// # Errors
/// [`Error::InvalidBurst`] when the body is not a JSON object or not a message of
/// the format; [`Error::FieldMaskIncomplete`] for a The Things Stack uplink whose
/// device identifiers were filtered out.
fn message<'a>(format: Format, root: &'a Json<'a>) -> Result<Message<'a>, Error> {
    let Json::Object(root) = root else {
        return Err(Error::InvalidBurst(format!(
            "a {} message must be a JSON object",
            label(format)
        )));
    };
    match format {
        Format::Tts => ttn::message(root),
        Format::ChirpStack => Ok(Message::Uplink(Box::new(chirpstack::envelope(root)))),
        Format::Helium => helium::message(root),
        Format::Loriot => loriot::message(root),
        Format::Readings => Err(Error::InvalidBurst(
            "a native burst has no uplink envelope".into(),
        )),
    }
}

/// The readings of an uplink, each with its frame identity when its `ts` falls back
/// to the receive time: one per element of the decoded payload's `readings` array
/// (an element that is not an object is rejected as `invalid_reading`), else the
/// one the decoded payload describes.
fn uplink_readings<'e>(
    format: Format,
    envelope: &'e Envelope<'_>,
    names: &'e FieldNames,
) -> Vec<(RawReading<'e>, Option<u64>)> {
    let framed = |index: usize, (raw, received): (RawReading<'e>, bool)| {
        (raw, received.then(|| envelope.frame.digest(format, index)))
    };
    match envelope.burst() {
        None => vec![framed(
            0,
            decoded_reading(envelope, envelope.decoded_object(), names),
        )],
        Some(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Json::Object(m) => framed(i, decoded_reading(envelope, Some(m), names)),
                _ => (RawReading::default(), None),
            })
            .collect(),
    }
}

/// One reading from a decoded payload object (or one of its `readings`; `None`:
/// no decoded object), completed from the envelope, and whether its `ts` is the
/// envelope's receive time. The envelope's scalars are lent, not copied.
fn decoded_reading<'e>(
    envelope: &'e Envelope<'_>,
    src: Option<&'e Object<'e>>,
    names: &FieldNames,
) -> (RawReading<'e>, bool) {
    let field = |path: &FieldPath| src.and_then(|m| path.find(m)).map(scalar);
    let ts = field(&names.ts);
    let received = ts.is_none() && envelope.received_at.is_some();
    let raw = RawReading {
        is_object: true,
        repeated: None,
        device_id: envelope.device_id.as_ref().map(lend),
        seq: Some(field(&names.seq).unwrap_or_else(|| lend(&envelope.frame_counter))),
        ts: ts.or_else(|| envelope.received_at.as_ref().map(lend)),
        fill_pct: field(&names.fill_pct),
    };
    (raw, received)
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

/// A DevEUI (the core writes one of 16 hex digits in upper case); absent or empty
/// → `None`, a non-string kept as is so the core rejects it as `invalid_device_id`.
fn dev_eui<'a>(v: Option<&'a Json<'_>>) -> Option<Scalar<'a>> {
    match v? {
        Json::Str(s) if s.is_empty() => None,
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
mod tests {
    use super::test_kit::{
        edit, frame_cases, plan_err, plan_of, rejections, with, CHIRPSTACK, CHIRPSTACK_WITH_FILL,
        HELIUM, LORIOT, R1, TTS, TTS_WITH_FILL,
    };
    use super::*;
    use crate::dedupe::key::idempotency_key;
    use crate::dedupe::reading::parse_reading;
    use serde::Deserialize;
    use serde_json::{json, Value};

    #[test]
    fn the_ignored_events_listed_are_the_events_of_the_messages_acknowledged() {
        // A message of each event listed plans as that event, acknowledged unread.
        let body = |format: Format, event: &str| match format {
            Format::Tts if event == "unknown" => {
                r#"{"end_device_ids":{"device_id":"d"}}"#.to_owned()
            }
            Format::Tts => format!(r#"{{"end_device_ids":{{"device_id":"d"}},"{event}":{{}}}}"#),
            Format::Helium | Format::Loriot if event == "other" => {
                let member = if format == Format::Helium {
                    "type"
                } else {
                    "cmd"
                };
                format!(r#"{{"{member}":"something-new"}}"#)
            }
            Format::Helium => format!(r#"{{"type":"{event}"}}"#),
            _ => format!(r#"{{"cmd":"{event}"}}"#),
        };
        for format in [Format::Tts, Format::Helium, Format::Loriot] {
            let events = format.ignored_events();
            assert!(!events.is_empty(), "{format:?}");
            for event in events {
                let p = plan_of(format, &body(format, event));
                assert_eq!((p.event, p.ignored), (event, true), "{format:?}");
            }
        }
        // The uplinks themselves are never among them.
        assert!(!Format::Tts.ignored_events().contains(&"uplink_message"));
        assert!(["rx", "gw"]
            .iter()
            .all(|e| !Format::Loriot.ignored_events().contains(e)));
        assert!(
            Format::ChirpStack.ignored_events().is_empty()
                && Format::Readings.ignored_events().is_empty()
        );
    }

    #[test]
    fn formats_have_one_table_of_names() {
        assert_eq!(
            Format::NAMES,
            ["ttn", "chirpstack", "helium", "loriot", "readings"]
        );
        for &name in Format::NAMES {
            assert_eq!(Format::from_name(name).map(Format::name), Ok(name));
        }
        assert_eq!(Format::from_name("tts"), Ok(Format::Tts));
        assert_eq!(Format::Tts.name(), "ttn");
        let e = Format::from_name("mqtt").unwrap_err();
        assert_eq!(e.code(), "unknown_format");
        // The message lists the names of the table (it is written in the core's error.rs).
        let message = e.to_string();
        assert!(Format::NAMES.iter().all(|n| message.contains(n)));
    }

    #[test]
    fn the_docs_samples_lack_a_fill_level_and_say_where_to_add_it() {
        for (format, body) in [
            (Format::Tts, TTS),
            (Format::ChirpStack, CHIRPSTACK),
            (Format::Helium, HELIUM),
            (Format::Loriot, LORIOT),
        ] {
            let p = plan_of(format, body);
            assert!(p.devices.is_empty());
            assert_eq!(p.received, 1);
            assert_eq!(p.rejected.len(), 1);
            let r = &p.rejected[0];
            assert_eq!(
                (r.rejection.code, r.rejection.field),
                ("missing_fill_pct", "fill_pct")
            );
            let hint = if format == Format::Loriot {
                super::loriot::NO_DECODER
            } else {
                ": the decoded payload has no \"fill_pct\"; compute it in the network \
                 server's payload formatter"
            };
            assert_eq!(r.rejection.message, format!("fill_pct is missing{hint}"));
            assert!(r.device_id.is_some(), "routable, so counted for its device");
        }
    }

    #[test]
    fn whole_body_errors_have_codes() {
        let n = FieldNames::default();
        let err = |f, b: &[u8]| plan(f, b, &n, 2).unwrap_err();
        for format in [
            Format::Tts,
            Format::ChirpStack,
            Format::Helium,
            Format::Loriot,
        ] {
            assert_eq!(err(format, b"{").code(), "invalid_json");
            assert_eq!(err(format, b"{} x").code(), "invalid_json");
            assert_eq!(err(format, b"\"\xff\"").code(), "invalid_json");
            assert_eq!(err(format, b"[]").code(), "invalid_burst");
            if format == Format::Loriot {
                continue; // No decoded payload: one reading per message.
            }
            let too_many = json!({"end_device_ids": {"device_id": "d"},
                "uplink_message": {"decoded_payload": {"readings": [1, 2, 3]}},
                "object": {"readings": [1, 2, 3]}, "decoded": {"readings": [1, 2, 3],
                "payload": {"readings": [1, 2, 3]}}});
            assert_eq!(
                err(format, too_many.to_string().as_bytes()).code(),
                "too_many_readings"
            );
        }
        assert_eq!(
            err(Format::ChirpStack, b"7").to_string(),
            "body is not a burst: a ChirpStack message must be a JSON object"
        );
        assert_eq!(err(Format::Tts, b"{\"x\":1}").code(), "invalid_burst");
    }

    #[test]
    fn scalars_are_what_the_core_visitor_reads() {
        for v in [
            json!(null),
            json!(true),
            json!(0),
            json!(-1),
            json!(i64::MIN),
            json!(i64::MAX),
            json!(u64::MAX),
            json!(9_007_199_254_740_993_u64),
            json!(41.0),
            json!(-0.0),
            json!(1e300),
            json!("41"),
            json!("2026-07-16T09:00:00Z"),
            json!([1]),
            json!({"a": 1}),
        ] {
            let text = v.to_string();
            let parsed = json::read(text.as_bytes(), json::Reader::value).unwrap();
            assert_eq!(scalar(&parsed), Scalar::deserialize(&v).unwrap(), "{v}");
        }
    }

    /// The JSON text of a plan: exactly the documented members, in the documented order.
    #[test]
    fn the_plan_json_is_the_documented_shape() {
        let one =
            r#"[{"device_id":"bin-A17","seq":41,"ts":"2026-07-16T09:00:00Z","fill_pct":62.5}]"#;
        assert_eq!(
            plan_of(Format::Readings, one).to_json(),
            r#"{"event":"readings","ignored":false,"simulated":false,"received":1,"devices":[{"device_id":"bin-A17","readings":[{"index":0,"key":"bin-A17:41:76c73ee2946cc70e","seq":41,"ts":"2026-07-16T09:00:00+00:00","fill_pct":62.5,"frame":null}]}],"rejected":[],"raw":null}"#
        );
        let readings = [
            json!({"device_id": "b", "seq": 2, "ts": "2026-07-16T11:00:00.5+02:00", "fill_pct": -0.0}),
            json!({"device_id": "a", "seq": 1, "ts": "2026-07-16T09:00:00Z", "fill_pct": 100}),
            json!({"device_id": "b", "seq": -4, "ts": "2026-07-16T09:00:00.000001Z", "fill_pct": 1e-5}),
        ];
        let key = |i: usize| idempotency_key(&parse_reading(&readings[i].to_string()).unwrap());
        let body = json!([
            readings[0],
            readings[1],
            {"device_id": "b", "seq": 3, "ts": "2026-07-16T09:00:00Z", "fill_pct": 101},
            {"device_id": 7, "seq": 1},
            "x",
            readings[2]
        ]);
        let p = plan_of(Format::Readings, &body.to_string());
        let text = p.to_json();
        assert_eq!(text, serde_json::to_string(&p).unwrap());
        let parsed: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            parsed,
            json!({
                "event": "readings", "ignored": false, "simulated": false,
                "received": 6,
                "devices": [
                    {"device_id": "b", "readings": [
                        {"index": 0, "key": key(0), "seq": 2,
                         "ts": "2026-07-16T09:00:00.500000+00:00", "fill_pct": 0.0, "frame": null},
                        {"index": 5, "key": key(2), "seq": -4,
                         "ts": "2026-07-16T09:00:00.000001+00:00", "fill_pct": 1e-5, "frame": null}]},
                    {"device_id": "a", "readings": [
                        {"index": 1, "key": key(1), "seq": 1,
                         "ts": "2026-07-16T09:00:00+00:00", "fill_pct": 100.0, "frame": null}]}
                ],
                "rejected": [
                    {"index": 2, "field": "fill_pct", "code": "invalid_fill_pct",
                     "message": "fill_pct must be between 0 and 100", "device_id": "b"},
                    {"index": 3, "field": "device_id", "code": "invalid_device_id",
                     "message": "device_id must be a string", "device_id": null},
                    {"index": 4, "field": "reading", "code": "invalid_reading",
                     "message": "a reading must be a JSON object", "device_id": null}
                ],
                "raw": null
            })
        );
        // Integral fill levels keep their `.0`, as serde_json writes an f64.
        assert!(text.contains(r#""fill_pct":0.0,"#) && text.contains(r#""fill_pct":100.0,"#));
    }

    // ---- Bodies: a member given twice, numbers out of range, lone surrogates, depth ----
    // (issue 9, contract item 12). One rule for every route: a member given twice inside a
    // native burst's reading element rejects that reading; anywhere else it is the whole
    // body's `invalid_json`. Never first- or last-wins. (A member twice in a native burst:
    // `native.rs`; the library's bulk path, `Deduplicator::process_json`:
    // `src/dedupe/burst.rs`.)

    #[test]
    fn a_member_twice_anywhere_in_a_webhook_is_invalid_json_naming_where() {
        let tts = TTS_WITH_FILL;
        let cs = CHIRPSTACK_WITH_FILL;
        let helium = with(HELIUM, &["decoded", "payload"], json!({"fill_pct": 33.5}));
        let loriot = with(LORIOT, &["decoded"], json!({"fill_pct": 12}));
        // (format, body, what is replaced, by what, the pointer of the member given twice)
        #[rustfmt::skip]
        let cases = [
            (Format::Tts, tts, r#""fill_pct": 62.5"#, r#""fill_pct": 10, "fill_pct": 90"#,
                "/uplink_message/decoded_payload/fill_pct"),
            (Format::Tts, tts, r#""dev_eui": "0004A30B001C0530","#,
                r#""dev_eui": "0004A30B001C0530", "dev_eui": "0004A30B001C0531","#,
                "/end_device_ids/dev_eui"),
            (Format::Tts, tts, r#""f_cnt": 1,"#, r#""f_cnt": 1, "f_cnt": 2,"#, "/uplink_message/f_cnt"),
            (Format::Tts, tts, r#""snr": 5,"#, r#""snr": 5, "snr": 6,"#,
                "/uplink_message/rx_metadata/0/snr"),
            (Format::Tts, tts, r#""fill_pct": 62.5"#, r#""readings": [], "readings": [{"fill_pct": 1}]"#,
                "/uplink_message/decoded_payload/readings"),
            (Format::Tts, tts, r#""fill_pct": 62.5"#, r#""readings": [{"seq": 1, "seq": 2, "fill_pct": 1}]"#,
                "/uplink_message/decoded_payload/readings/0/seq"),
            (Format::ChirpStack, cs, r#""devEui": "0101010101010101","#,
                r#""devEui": "0101010101010101", "devEui": "0202020202020202","#, "/deviceInfo/devEui"),
            (Format::ChirpStack, cs, r#""object": {"#, r#""object": {"fCnt": 1, "fCnt": 1,"#, "/object/fCnt"),
            (Format::ChirpStack, cs, r#""fCnt": 41,"#, r#""fCnt": 41, "fCnt": 42,"#, "/fCnt"),
            (Format::Helium, &helium, r#""fill_pct":33.5"#, r#""fill_pct":33.5,"fill_pct":1"#,
                "/decoded/payload/fill_pct"),
            (Format::Loriot, &loriot, r#""EUI":"0102030405060708""#,
                r#""EUI":"0102030405060708","EUI":"0102030405060709""#, "/EUI"),
        ];
        for (format, body, from, to, at) in cases {
            let body = edit(body, from, to);
            let e = plan_err(format, &body);
            let name = at.rsplit('/').next().unwrap();
            assert_eq!(
                (e.code(), e.to_string()),
                (
                    "invalid_json",
                    format!(r#"body is not valid JSON: member "{name}" appears twice (at {at})"#)
                ),
                "{format:?} {at}"
            );
        }
    }

    /// Numbers out of f64 range: ignored where they are not read, the reading's field
    /// rejected where they are.
    #[test]
    fn numbers_out_of_range_are_ignored_unless_read() {
        // Ignored: a native reading's rssi, TTS rx_metadata[].snr, ChirpStack rxInfo rssi.
        for big in ["1e400", "-1e400", "1e999999999999", "18446744073709551616"] {
            let r = edit(
                R1,
                r#""fill_pct":10"#,
                &format!(r#""fill_pct":10,"rssi":{big}"#),
            );
            let p = plan_of(Format::Readings, &format!("[{r}]"));
            assert!(p.rejected.is_empty(), "{big}");
            let tts = edit(TTS_WITH_FILL, r#""snr": 5,"#, &format!(r#""snr": {big},"#));
            let p = plan_of(Format::Tts, &tts);
            assert_eq!(
                p.devices[0].readings[0].key,
                "0004A30B001C0530:1:d7f366a3cb678f45"
            );
            let cs = edit(
                CHIRPSTACK_WITH_FILL,
                r#""rssi": -36,"#,
                &format!(r#""rssi": {big},"#),
            );
            assert_eq!(
                plan_of(Format::ChirpStack, &cs).devices[0].readings.len(),
                2
            );
        }
        // Read: the reading is rejected with the field's code.
        let read = |member: &str, value: &str| {
            let r = edit(
                R1,
                &format!(r#""{member}":"#),
                &format!(r#""{member}":{value},"x":"#),
            );
            let p = plan_of(Format::Readings, &format!("[{r}]"));
            p.rejected.first().map(|r| r.rejection.code)
        };
        for big in ["1e400", "-1e400"] {
            assert_eq!(read("seq", big), Some("invalid_seq"));
            assert_eq!(read("ts", big), Some("invalid_ts"));
            assert_eq!(read("fill_pct", big), Some("invalid_fill_pct"));
            assert_eq!(read("device_id", big), Some("invalid_device_id"));
        }
        // Neighbours: finite extremes, -0, underflow to 0, integers beyond u64.
        assert_eq!(read("fill_pct", "1e308"), Some("invalid_fill_pct"));
        assert_eq!(read("seq", "1e308"), Some("invalid_seq"));
        assert_eq!(read("seq", "18446744073709551616"), Some("invalid_seq"));
        assert_eq!(read("seq", "-9223372036854775809"), Some("invalid_seq"));
        assert_eq!(read("seq", "-9223372036854775808"), Some("invalid_seq"));
        assert_eq!(read("seq", "9223372036854775807"), Some("invalid_seq"));
        assert_eq!(read("seq", "9007199254740992"), Some("invalid_seq"));
        assert_eq!(
            read("fill_pct", "18446744073709551616"),
            Some("invalid_fill_pct")
        );
        assert_eq!(read("seq", "-0"), None);
        assert_eq!(read("fill_pct", "-0"), None);
        // 1e-400 is below the smallest double: it reads as 0, as JSON.parse reads it; as
        // a seq it is refused, since its text is not a whole number.
        assert_eq!(read("fill_pct", "1e-400"), None);
        assert_eq!(read("seq", "1e-400"), Some("invalid_seq"));
        let zero = |v: &str| {
            let r = edit(R1, r#""fill_pct":10"#, &format!(r#""fill_pct":{v}"#));
            let p = plan_of(Format::Readings, &format!("[{r}]"));
            p.devices[0].readings[0].clone()
        };
        assert_eq!(zero("1e-400").key, zero("0").key);
        assert_eq!(zero("-1e-400").key, zero("0").key);
        assert_eq!(zero("-0").key, zero("0").key);
        // Webhooks: the frame counter and the receive times that stand in for seq and ts.
        let tts = |from: &str, to: &str| {
            let p = plan_of(Format::Tts, &edit(TTS_WITH_FILL, from, to));
            p.rejected.first().map(|r| r.rejection.code)
        };
        assert_eq!(
            tts(r#""f_cnt": 1,"#, r#""f_cnt": 1e400,"#),
            Some("invalid_seq")
        );
        assert_eq!(
            tts(r#""f_cnt": 1,"#, r#""f_cnt": -1e400,"#),
            Some("invalid_seq")
        );
        assert_eq!(
            tts(r#""fill_pct": 62.5"#, r#""fill_pct": 1e400"#),
            Some("invalid_fill_pct")
        );
        let lor = |from: &str, to: &str| {
            let compact = with(LORIOT, &[], json!({}));
            let p = plan_of(Format::Loriot, &edit(&compact, from, to));
            p.rejected.first().map(|r| r.rejection.code)
        };
        assert_eq!(
            lor(r#""ts":1470850675433"#, r#""ts":1e400"#),
            Some("invalid_ts")
        );
        assert_eq!(lor(r#""fcnt":1"#, r#""fcnt":1e400"#), Some("invalid_seq"));
        // Unread: the reading is refused only for what LORIOT never sends.
        assert_eq!(
            lor(r#""bat":254"#, r#""bat":-1e400"#),
            Some("missing_fill_pct")
        );
    }

    #[test]
    fn a_lone_surrogate_is_invalid_json_saying_what_and_where() {
        let cases = [
            (r#""\ud800""#, 1, 27),
            (r#""\udbff x""#, 1, 27),
            (r#""\udc00""#, 1, 27),
            (r#""\ud800\u0041""#, 1, 27),
            (r#""x\uDBFF""#, 1, 28),
        ];
        for (string, line, column) in cases {
            let body = format!(r#"[{{"device_id":"a","note":{string}}}]"#);
            let e = plan_err(Format::Readings, &body);
            let m = e.to_string();
            assert_eq!(e.code(), "invalid_json", "{string}");
            assert!(
                m.contains("lone surrogate") && m.contains(&format!("line {line} column {column}")),
                "{string}: {m}"
            );
            let tts = edit(TTS_WITH_FILL, r#""gkHe""#, string);
            let e = plan_err(Format::Tts, &tts);
            assert!(e.to_string().contains("lone surrogate"), "{e}");
        }
        // In a member name too, and on a later line.
        let e = plan_err(Format::Readings, "[\n {\"\\ud800\": 1}]");
        assert!(
            e.to_string().contains("lone surrogate") && e.to_string().contains("line 2 column 4"),
            "{e}"
        );
        // A pair is one character.
        let r = edit(R1, r#""device_id":"a""#, r#""device_id":"a\ud83d\uddd1""#);
        let p = plan_of(Format::Readings, &format!("[{r}]"));
        assert_eq!(p.devices[0].device_id, "a\u{1f5d1}");
    }

    #[test]
    fn deep_nesting_is_a_clean_error() {
        for depth in [129, 10_000, 1_000_000] {
            let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            let deep_obj = format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth));
            for value in [&deep, &deep_obj] {
                let body = format!(r#"[{{"device_id":"a","x":{value}}}]"#);
                let e = plan_err(Format::Readings, &body);
                assert_eq!(e.code(), "invalid_json");
                assert!(e.to_string().contains("nested deeper than"), "{e}");
                let tts = edit(TTS_WITH_FILL, r#""gkHe""#, value);
                assert_eq!(plan_err(Format::Tts, &tts).code(), "invalid_json");
            }
        }
        // 128 levels in all are fine.
        let ok = format!("{}{}", "[".repeat(126), "]".repeat(126));
        let body = format!(r#"[{{"device_id":"a","x":{ok}}}]"#);
        assert_eq!(plan_of(Format::Readings, &body).received, 1);
    }

    #[test]
    fn a_seq_is_whole_by_its_text_not_by_its_rounded_f64() {
        // Fractional texts whose nearest f64 is whole (or zero by underflow): before,
        // `0.99999999999999999` keyed as seq 1 and `1e-400` as seq 0.
        for seq in [
            "0.99999999999999999",
            "4503599627370496.5",
            "9007199254740990.5",
            "1e-400",
            "-1e-400",
            "1.00000000000000000001",
            "12345678901234567890e-20",
            "0.05e1",
        ] {
            let body = format!("[{}]", edit(R1, r#""seq":1"#, &format!(r#""seq":{seq}"#)));
            let p = plan_of(Format::Readings, &body);
            assert_eq!(
                rejections(&p),
                [(0, "invalid_seq", "seq must be a whole number")],
                "{seq}"
            );
            assert!(p.devices.is_empty(), "{seq}");
        }
        // Whole by their text: a zero fraction, an exponent that moves every digit left
        // of the point, minus zero.
        for (seq, want) in [
            ("1.0", 1_i64),
            ("1e2", 100),
            ("-0", 0),
            ("10E-1", 1),
            ("1.50e1", 15),
            ("0.5e1", 5),
            ("0.0e-5", 0),
            ("123400000e-5", 1234),
            ("9007199254740991.000", 9_007_199_254_740_991),
        ] {
            let body = format!("[{}]", edit(R1, r#""seq":1"#, &format!(r#""seq":{seq}"#)));
            let p = plan_of(Format::Readings, &body);
            assert!(p.rejected.is_empty(), "{seq}: {:?}", rejections(&p));
            assert!(
                p.devices[0].readings[0]
                    .key
                    .starts_with(&format!("a:{want}:")),
                "{seq}"
            );
        }
        // The same rule for a webhook's frame counter.
        let tts = edit(
            TTS_WITH_FILL,
            r#""f_cnt": 1"#,
            r#""f_cnt": 0.99999999999999999"#,
        );
        assert_eq!(rejections(&plan_of(Format::Tts, &tts))[0].1, "invalid_seq");
        // fill_pct is a measurement: its nearest f64 is its value.
        let r = edit(R1, r#""fill_pct":10"#, r#""fill_pct":9.99999999999999999"#);
        let p = plan_of(Format::Readings, &format!("[{r}]"));
        assert!(p.rejected.is_empty());
    }

    // ---- The same frame twice (issue 10) ----

    #[test]
    fn a_frame_received_again_later_has_the_same_frame_and_a_later_ts() {
        for (format, body, (at, later), others) in frame_cases() {
            let first = plan_of(format, &body);
            let again = plan_of(format, &with(&body, &at, later));
            let (a, b) = (&first.devices[0].readings[0], &again.devices[0].readings[0]);
            assert!(
                a.frame.as_ref().is_some_and(|f| f.len() == 16),
                "{format:?}"
            );
            assert_eq!(a.frame, b.frame, "{format:?}");
            assert!(b.ts > a.ts, "{format:?}");
            assert_ne!(
                a.key, b.key,
                "keyed apart here: the worker re-keys the copy"
            );
            for (at, change) in others {
                let other = plan_of(format, &with(&body, &at, change.clone()));
                assert_ne!(
                    other.devices[0].readings[0].frame, a.frame,
                    "{format:?} {change}"
                );
            }
            // A reading that carries its own ts needs no frame.
            let own = plan_of(
                format,
                &body.replace(
                    r#""fill_pct":40"#,
                    r#""fill_pct":40,"ts":"2026-07-16T09:00:00Z""#,
                ),
            );
            assert_eq!(own.devices[0].readings[0].frame, None, "{format:?}");
        }
    }

    #[test]
    fn readings_of_one_uplink_have_frames_of_their_own() {
        let body = with(
            CHIRPSTACK,
            &["object"],
            json!({"readings": [{"seq": 1, "fill_pct": 5}, {"seq": 2, "fill_pct": 5},
                                {"seq": 3, "fill_pct": 5, "ts": "2026-07-16T09:00:00Z"}]}),
        );
        let p = plan_of(Format::ChirpStack, &body);
        let frames: Vec<_> = p.devices[0]
            .readings
            .iter()
            .map(|r| r.frame.clone())
            .collect();
        assert!(frames[0].is_some() && frames[1].is_some() && frames[0] != frames[1]);
        assert_eq!(frames[2], None);
    }

    #[test]
    fn a_dev_eui_in_any_case_is_one_device() {
        for (format, body) in [
            (Format::ChirpStack, with(CHIRPSTACK_WITH_FILL, &["deviceInfo"], json!({"devEui": "70b3d52dd600035a"}))),
            (Format::Readings, r#"[{"device_id":"70b3D52dd600035A","seq":1,"ts":"2026-07-16T09:00:00Z","fill_pct":1}]"#.to_owned()),
        ] {
            let p = plan_of(format, &body);
            assert_eq!(p.devices[0].device_id, "70B3D52DD600035A", "{format:?}");
            assert!(p.devices[0].readings[0].key.starts_with("70B3D52DD600035A:"));
        }
        // A rejection names the device as its readings do.
        let bad = r#"[{"device_id":"70b3d52dd600035a","seq":1.5,"ts":"2026-07-16T09:00:00Z","fill_pct":1}]"#;
        assert_eq!(
            plan_of(Format::Readings, bad).rejected[0]
                .device_id
                .as_deref(),
            Some("70B3D52DD600035A")
        );
    }
}
