//! The one error type of the core. Every variant has a stable `code()` string that
//! the worker maps to an HTTP status and that clients may match on.

use std::borrow::Cow;
use std::fmt;

/// A reading's field, as named in rejections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    DeviceId,
    Seq,
    Ts,
    FillPct,
}

impl Field {
    pub fn name(self) -> &'static str {
        match self {
            Field::DeviceId => "device_id",
            Field::Seq => "seq",
            Field::Ts => "ts",
            Field::FillPct => "fill_pct",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// The element of a burst is not a JSON object, or has a member twice.
    InvalidReading(Cow<'static, str>),
    /// A required field is absent.
    Missing(Field),
    /// A field is present but breaks its rule; the text says which rule.
    Invalid(Field, &'static str),
    /// The body is not JSON (serde_json's message, with line and column).
    InvalidJson(String),
    /// The body is JSON but neither an array nor `{"readings": [...]}`.
    InvalidBurst(String),
    /// A `device_id` with an invisible or formatting character (Unicode Cf, U+2028,
    /// U+2029): code `invalid_device_id`.
    InvisibleCharacter(char),
    /// A call's argument that is not what the facade takes, or whose reading threw
    /// (a getter, a Proxy trap); code `invalid_burst`, the text alone as message.
    BadArgument(String),
    /// A configuration value out of its documented range.
    InvalidConfig(String),
    /// Snapshot bytes that are truncated, corrupt, of another format or version.
    InvalidSnapshot(&'static str),
    /// `confirm`/`release` of a ticket that is not open, or a value that is no
    /// ticket at all (not a whole number within `1 ..= 2^32 − 1`), as the caller gave it.
    UnknownTicket(f64),
    /// A value passed as a ticket that is no ticket at all (not a whole JS number
    /// within `1 ..= 2^32 − 1`), described as given (`4294967297`, `a BigInt`): code
    /// `unknown_ticket`.
    NotATicket(String),
    /// `now_ms` is not a finite time within the range of JS dates.
    InvalidTime(f64),
    /// The platform gave no random bytes for the hash seed.
    NoEntropy,
    /// A webhook format name the worker does not know.
    UnknownFormat(String),
    /// A The Things Stack uplink without the device identifiers: the webhook's field
    /// mask ("Filter event data") removed them. The text names the paths to keep.
    FieldMaskIncomplete(&'static str),
    /// A codec id that names no codec (`unknown_codec`).
    UnknownCodec(String),
    /// Bytes a codec cannot read as its frame (`invalid_payload`): the text says why.
    InvalidPayload(String),
    /// A port on which the codec's device sends no level data (`unsupported_port`).
    UnsupportedPort(u32),
    /// A frame on another port than the two a device whose application port was set
    /// sends on: the sensor's factory port and its configuration's `application_port`
    /// (code `unsupported_port` too).
    NotApplicationPort {
        port: u32,
        factory: u32,
        application_port: u32,
    },
    /// A sample without a level (a sentinel, an empty record), never turned into 0 % or
    /// 100 %: code `no_reading`, field `fill_pct`; the text is the codec's reason.
    NoReading(&'static str),
    /// Samples dated by the device's reporting schedule (Tekelek's previous readings)
    /// from a device whose configuration has no `reporting_period_s`: code
    /// `missing_reporting_period`.
    MissingReportingPeriod,
    /// More readings in one request than allowed: (found, limit).
    TooManyReadings(usize, usize),
    /// A stored or forwarded key that is not `device_id:seq:<16 hex>` in canonical
    /// form, or keys and admission times that do not pair up in order.
    InvalidKey(&'static str),
}

impl Error {
    /// The codes of a reading's [`Rejection`] (`limits().rejection.codes`): what
    /// [`Error::code`] gives for an error about one reading, its members or its content.
    /// The others are about a call (a body, a burst, an argument, a configuration) and
    /// are thrown, never a reading's rejection.
    pub const REJECTION_CODES: [&'static str; 10] = [
        "invalid_reading",
        "missing_device_id",
        "invalid_device_id",
        "missing_seq",
        "invalid_seq",
        "missing_ts",
        "invalid_ts",
        "missing_fill_pct",
        "invalid_fill_pct",
        "no_reading",
    ];

    /// The fields a [`Rejection`] names (`limits().rejection.fields`): each [`Field`]'s
    /// name, and `reading` for the reading as a whole ([`Error::field`]).
    pub const REJECTION_FIELDS: [&'static str; 5] =
        ["device_id", "seq", "ts", "fill_pct", "reading"];

    /// The stable, machine-readable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidReading(_) => "invalid_reading",
            Error::Missing(Field::DeviceId) => "missing_device_id",
            Error::Missing(Field::Seq) => "missing_seq",
            Error::Missing(Field::Ts) => "missing_ts",
            Error::Missing(Field::FillPct) => "missing_fill_pct",
            Error::Invalid(Field::DeviceId, _) | Error::InvisibleCharacter(_) => {
                "invalid_device_id"
            }
            Error::Invalid(Field::Seq, _) => "invalid_seq",
            Error::Invalid(Field::Ts, _) => "invalid_ts",
            Error::Invalid(Field::FillPct, _) => "invalid_fill_pct",
            Error::InvalidJson(_) => "invalid_json",
            Error::InvalidBurst(_) | Error::BadArgument(_) => "invalid_burst",
            Error::InvalidConfig(_) => "invalid_config",
            Error::InvalidSnapshot(_) => "invalid_snapshot",
            Error::UnknownTicket(_) | Error::NotATicket(_) => "unknown_ticket",
            Error::InvalidTime(_) => "invalid_time",
            Error::NoEntropy => "no_entropy",
            Error::UnknownFormat(_) => "unknown_format",
            Error::FieldMaskIncomplete(_) => "field_mask_incomplete",
            Error::TooManyReadings(..) => "too_many_readings",
            Error::UnknownCodec(_) => "unknown_codec",
            Error::InvalidPayload(_) => "invalid_payload",
            Error::UnsupportedPort(_) | Error::NotApplicationPort { .. } => "unsupported_port",
            Error::NoReading(_) => "no_reading",
            Error::MissingReportingPeriod => "missing_reporting_period",
            Error::InvalidKey(_) => "invalid_key",
        }
    }

    /// The reading field this error is about, or `"reading"` for the whole reading.
    pub fn field(&self) -> &'static str {
        match self {
            Error::Missing(f) | Error::Invalid(f, _) => f.name(),
            Error::InvisibleCharacter(_) => Field::DeviceId.name(),
            Error::NoReading(_) => Field::FillPct.name(),
            _ => "reading",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidReading(why) => f.write_str(why),
            Error::Missing(field) => write!(f, "{} is missing", field.name()),
            Error::Invalid(field, why) => write!(f, "{} {why}", field.name()),
            Error::InvalidJson(why) => write!(f, "body is not valid JSON: {why}"),
            Error::InvalidBurst(why) => write!(f, "body is not a burst: {why}"),
            Error::BadArgument(why) => f.write_str(why),
            Error::InvisibleCharacter(c) => write!(
                f,
                "device_id must not contain invisible or formatting characters (U+{:04X})",
                u32::from(*c)
            ),
            Error::InvalidConfig(why) => write!(f, "invalid configuration: {why}"),
            Error::InvalidSnapshot(why) => write!(f, "invalid snapshot: {why}"),
            Error::UnknownTicket(t) => write!(f, "ticket {t} is not open"),
            Error::NotATicket(given) => {
                write!(
                    f,
                    "a ticket is a whole number 1 ..= 4294967295, got {given}"
                )
            }
            Error::InvalidTime(t) => write!(f, "now_ms {t} is not a valid time in ms"),
            Error::NoEntropy => f.write_str("no random bytes available to seed the hash"),
            Error::UnknownFormat(name) => write!(
                f,
                "unknown format \"{name}\"; expected ttn, chirpstack, helium, loriot or readings"
            ),
            Error::TooManyReadings(n, max) => {
                write!(f, "{n} readings in one request; at most {max} are accepted")
            }
            Error::InvalidKey(why) => write!(f, "invalid key: {why}"),
            Error::FieldMaskIncomplete(why) => f.write_str(why),
            Error::UnknownCodec(id) => write!(f, "unknown codec \"{id}\""),
            Error::InvalidPayload(why) => write!(f, "the payload cannot be read: {why}"),
            Error::UnsupportedPort(port) => {
                write!(f, "port {port} carries no level data for this sensor")
            }
            Error::NotApplicationPort {
                port,
                factory,
                application_port,
            } => write!(
                f,
                "port {port} carries no level data for this device: it sends on {factory}, or on its configuration's application_port {application_port}"
            ),
            Error::NoReading(why) => write!(f, "no level reading: {why}"),
            Error::MissingReportingPeriod => f.write_str(
                "reporting_period_s is not configured; this sensor's readings are dated by its reporting period",
            ),
        }
    }
}

impl std::error::Error for Error {}

/// A body serde_json could not read: not JSON at all (`invalid_json`), or JSON of the
/// wrong shape (`invalid_burst`).
impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        if e.is_data() {
            Error::InvalidBurst(e.to_string())
        } else {
            Error::InvalidJson(e.to_string())
        }
    }
}

/// A reading refused at the boundary: its index in the burst, the field, the
/// stable code and a message. The rest of the burst is processed as usual.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct Rejection {
    pub index: usize,
    pub field: &'static str,
    pub code: &'static str,
    pub message: String,
}

impl Rejection {
    /// The rejection of the reading at `index` for `error`.
    pub fn new(index: usize, error: &Error) -> Rejection {
        Rejection {
            index,
            field: error.field(),
            code: error.code(),
            message: error.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Error, Field};

    /// One of each variant, and whether it is about one reading. The match has no
    /// wildcard: a new variant is not compiled until it is sorted here.
    fn every_error() -> Vec<(Error, bool)> {
        let fields = [Field::DeviceId, Field::Seq, Field::Ts, Field::FillPct];
        let mut all: Vec<Error> = fields.iter().map(|&f| Error::Missing(f)).collect();
        all.extend(fields.iter().map(|&f| Error::Invalid(f, "breaks its rule")));
        all.extend([
            Error::InvalidReading("not an object".into()),
            Error::InvalidJson("line 1".into()),
            Error::InvalidBurst("not an array".into()),
            Error::InvisibleCharacter('\u{200B}'),
            Error::BadArgument("not a string".into()),
            Error::InvalidConfig("out of range".into()),
            Error::InvalidSnapshot("truncated"),
            Error::UnknownTicket(7.0),
            Error::NotATicket("a BigInt".into()),
            Error::InvalidTime(f64::NAN),
            Error::NoEntropy,
            Error::UnknownFormat("x".into()),
            Error::FieldMaskIncomplete("end_device_ids"),
            Error::UnknownCodec("x".into()),
            Error::InvalidPayload("short".into()),
            Error::UnsupportedPort(9),
            Error::NotApplicationPort {
                port: 87,
                factory: 85,
                application_port: 86,
            },
            Error::NoReading("sentinel"),
            Error::MissingReportingPeriod,
            Error::TooManyReadings(2, 1),
            Error::InvalidKey("not a key"),
        ]);
        all.into_iter()
            .map(|e| {
                let about_a_reading = match e {
                    Error::InvalidReading(_)
                    | Error::Missing(_)
                    | Error::Invalid(..)
                    | Error::InvisibleCharacter(_)
                    | Error::NoReading(_) => true,
                    Error::InvalidJson(_)
                    | Error::InvalidBurst(_)
                    | Error::BadArgument(_)
                    | Error::InvalidConfig(_)
                    | Error::InvalidSnapshot(_)
                    | Error::UnknownTicket(_)
                    | Error::NotATicket(_)
                    | Error::InvalidTime(_)
                    | Error::NoEntropy
                    | Error::UnknownFormat(_)
                    | Error::FieldMaskIncomplete(_)
                    | Error::UnknownCodec(_)
                    | Error::InvalidPayload(_)
                    | Error::UnsupportedPort(_)
                    | Error::NotApplicationPort { .. }
                    | Error::MissingReportingPeriod
                    | Error::TooManyReadings(..)
                    | Error::InvalidKey(_) => false,
                };
                (e, about_a_reading)
            })
            .collect()
    }

    /// `names` in order, each once.
    fn set(mut names: Vec<&'static str>) -> Vec<&'static str> {
        names.sort_unstable();
        names.dedup();
        names
    }

    #[test]
    fn the_rejection_codes_and_fields_are_those_of_the_errors_about_one_reading() {
        let errors = every_error();
        let about_a_reading = || errors.iter().filter(|(_, r)| *r).map(|(e, _)| e);
        assert_eq!(
            set(about_a_reading().map(Error::code).collect()),
            set(Error::REJECTION_CODES.to_vec())
        );
        assert_eq!(
            set(about_a_reading().map(Error::field).collect()),
            set(Error::REJECTION_FIELDS.to_vec())
        );
        // No code of a call's error is also a reading's.
        for (e, about_a_reading) in &errors {
            assert_eq!(
                Error::REJECTION_CODES.contains(&e.code()),
                *about_a_reading,
                "{e:?}"
            );
        }
    }
}
