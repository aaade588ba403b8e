//! One reading at the boundary: the raw shape as it arrives, the rules that turn it
//! into a validated [`Reading`], and the stable rejection codes when it cannot be.
//!
//! Raw readings are deserialised by hand-written serde visitors that never fail on
//! content: a bad field is remembered and reported, so one malformed reading is
//! rejected on its own while the rest of its burst is processed. The same visitors
//! serve `serde_json` (bulk path) and `serde-wasm-bindgen` (object path).

use super::error::{Error, Field};
#[cfg(test)]
use super::timestamp::isoformat;
use super::timestamp::{parse_rfc3339, IsoBuf, Micros};
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeStruct, Serializer};
use std::borrow::Cow;
use std::fmt;

/// Longest accepted `device_id`, in UTF-8 bytes.
pub const MAX_DEVICE_ID_BYTES: usize = 128;
/// Largest magnitude of `seq`: the integers a JSON number and a JS number hold exactly.
pub const MAX_SAFE_SEQ: i64 = (1 << 53) - 1;

/// A validated, normalised reading: `ts` is a UTC instant, `fill_pct` is never `-0.0`.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading<'a> {
    pub device_id: Cow<'a, str>,
    pub seq: i64,
    /// Microseconds since the Unix epoch, UTC.
    pub ts: Micros,
    /// Percent, 0.0 ..= 100.0.
    pub fill_pct: f64,
}

impl Reading<'_> {
    /// Detaches the reading from the buffer it was parsed from.
    pub fn into_owned(self) -> Reading<'static> {
        Reading {
            device_id: Cow::Owned(self.device_id.into_owned()),
            seq: self.seq,
            ts: self.ts,
            fill_pct: self.fill_pct,
        }
    }
}

/// Serialises as `{device_id, seq, ts, fill_pct}` with `ts` in the canonical
/// `isoformat()` form that was hashed.
impl Serialize for Reading<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Reading", 4)?;
        self.serialize_fields(&mut st)?;
        st.end()
    }
}

impl Reading<'_> {
    /// Writes the four members into a struct being serialised (also used by the
    /// outcome's admitted readings, which put `index` and `key` first).
    pub fn serialize_fields<S: SerializeStruct>(&self, st: &mut S) -> Result<(), S::Error> {
        st.serialize_field("device_id", &self.device_id)?;
        st.serialize_field("seq", &self.seq)?;
        st.serialize_field("ts", IsoBuf::new(self.ts).as_str())?;
        st.serialize_field("fill_pct", &self.fill_pct)
    }
}

/// One JSON value as far as validation cares.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar<'a> {
    Null,
    Bool,
    Int(i64),
    Float(f64),
    /// A JSON number whose text has a non-zero fraction although its nearest f64 is
    /// whole (`0.99999999999999999` is 1.0, `4503599627370496.5` is 4503599627370496.0,
    /// `1e-400` is 0.0): that f64, which a measurement takes as its value and a `seq`
    /// refuses (not a whole number). Only the JSON reader, which keeps each number's
    /// text, makes it; a JS number has been rounded before the library sees it.
    Fractional(f64),
    Str(Cow<'a, str>),
    /// An array or object where a scalar belongs.
    Nested,
}

impl<'de> Deserialize<'de> for Scalar<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Scalar::Null)
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(Scalar::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Scalar::Bool)
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Scalar::Int(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(i64::try_from(v).map_or(Scalar::Float(v as f64), Scalar::Int))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Scalar::Float(v))
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Owned(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
        while a.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar::Nested)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
        while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Nested)
    }
}

/// A reading as it arrived, before validation. Unknown members are ignored.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RawReading<'a> {
    /// False when the element was not a JSON object at all.
    pub is_object: bool,
    /// Set when a member appeared twice (`member "seq" appears twice`); the reading
    /// is then rejected as `invalid_reading`.
    pub repeated: Option<String>,
    pub device_id: Option<Scalar<'a>>,
    pub seq: Option<Scalar<'a>>,
    pub ts: Option<Scalar<'a>>,
    pub fill_pct: Option<Scalar<'a>>,
}

impl<'de> Deserialize<'de> for RawReading<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(RawReadingVisitor)
    }
}

struct RawReadingVisitor;

impl<'de> Visitor<'de> for RawReadingVisitor {
    type Value = RawReading<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a reading object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
        let mut raw = RawReading {
            is_object: true,
            ..RawReading::default()
        };
        while let Some(member) = a.next_key::<Member>()? {
            let (field, slot) = match member {
                Member::Field(Field::DeviceId) => (Field::DeviceId, &mut raw.device_id),
                Member::Field(Field::Seq) => (Field::Seq, &mut raw.seq),
                Member::Field(Field::Ts) => (Field::Ts, &mut raw.ts),
                Member::Field(Field::FillPct) => (Field::FillPct, &mut raw.fill_pct),
                Member::Other => {
                    a.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            let value = a.next_value::<Scalar<'de>>()?;
            if slot.replace(value).is_some() && raw.repeated.is_none() {
                raw.repeated = Some(format!("member \"{}\" appears twice", field.name()));
            }
        }
        Ok(raw)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
        while a.next_element::<IgnoredAny>()?.is_some() {}
        Ok(RawReading::default())
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(RawReading::default())
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(RawReading::default())
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(RawReading::default())
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(RawReading::default())
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(RawReading::default())
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(RawReading::default())
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(RawReading::default())
    }
}

/// A member name of a reading, recognised without allocating (a `Cow<str>` key
/// would be deserialised as an owned `String` every time).
enum Member {
    Field(Field),
    Other,
}

impl<'de> Deserialize<'de> for Member {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Member;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E>(self, v: &str) -> Result<Member, E> {
                Ok(match v {
                    "device_id" => Member::Field(Field::DeviceId),
                    "seq" => Member::Field(Field::Seq),
                    "ts" => Member::Field(Field::Ts),
                    "fill_pct" => Member::Field(Field::FillPct),
                    _ => Member::Other,
                })
            }
        }
        d.deserialize_identifier(V)
    }
}

/// A burst body: a JSON array of readings, or an object with a `readings` array.
#[derive(Debug, Default)]
pub struct RawBurst<'a>(pub Vec<RawReading<'a>>);

impl<'de> Deserialize<'de> for RawBurst<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(RawBurstVisitor)
    }
}

struct RawBurstVisitor;

impl<'de> Visitor<'de> for RawBurstVisitor {
    type Value = RawBurst<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(r#"an array of readings or {"readings": [...]}"#)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
        // JSON gives no length hint; most bursts are under 64 readings.
        let mut v = Vec::with_capacity(a.size_hint().unwrap_or(64).min(4096));
        while let Some(r) = a.next_element::<RawReading<'de>>()? {
            v.push(r);
        }
        Ok(RawBurst(v))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
        let mut readings = None;
        while let Some(name) = a.next_key::<Cow<'de, str>>()? {
            if name == "readings" && readings.is_none() {
                readings = Some(a.next_value::<ReadingsArray<'de>>()?.0);
            } else {
                a.next_value::<IgnoredAny>()?;
            }
        }
        readings
            .map(RawBurst)
            .ok_or_else(|| de::Error::custom(r#"object has no "readings" array"#))
    }
}

/// The value of a `readings` member, which must itself be an array.
struct ReadingsArray<'a>(Vec<RawReading<'a>>);

impl<'de> Deserialize<'de> for ReadingsArray<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ReadingsArray<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(r#""readings" to be an array"#)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
                RawBurstVisitor.visit_seq(a).map(|b| ReadingsArray(b.0))
            }
        }
        d.deserialize_seq(V)
    }
}

/// Validates one raw reading. The first bad field, in the order device_id, seq,
/// ts, fill_pct, is the one reported.
///
/// # Errors
/// [`Error::InvalidReading`], [`Error::Missing`] or [`Error::Invalid`] naming the field.
pub fn validate<'a>(raw: RawReading<'a>) -> Result<Reading<'a>, Error> {
    if !raw.is_object {
        return Err(Error::InvalidReading(
            "a reading must be a JSON object".into(),
        ));
    }
    if let Some(why) = raw.repeated {
        return Err(Error::InvalidReading(why.into()));
    }
    let device_id = device_id(required(raw.device_id, Field::DeviceId)?)?;
    let seq = seq(required(raw.seq, Field::Seq)?)?;
    let ts = ts(required(raw.ts, Field::Ts)?)?;
    let fill_pct = fill_pct(required(raw.fill_pct, Field::FillPct)?)?;
    Ok(Reading {
        device_id,
        seq,
        ts,
        fill_pct,
    })
}

/// Parses and validates one reading from JSON text.
///
/// # Errors
/// [`Error::InvalidJson`] when the text is not JSON, else as [`validate`].
pub fn parse_reading(json: &str) -> Result<Reading<'_>, Error> {
    let raw: RawReading<'_> =
        serde_json::from_str(json).map_err(|e| Error::InvalidJson(e.to_string()))?;
    validate(raw)
}

fn required<T>(v: Option<T>, field: Field) -> Result<T, Error> {
    v.ok_or(Error::Missing(field))
}

fn device_id(v: Scalar<'_>) -> Result<Cow<'_, str>, Error> {
    let Scalar::Str(s) = v else {
        return Err(Error::Invalid(Field::DeviceId, "must be a string"));
    };
    check_device_id(&s)?;
    Ok(canonical_device_id(s))
}

/// A device id as every layer names its device: one of exactly 16 ASCII hex digits is
/// a DevEUI and is written in upper case (ChirpStack sends and shows DevEUIs in lower
/// case, The Things Stack in upper case: one sensor, one device); any other id is kept
/// as given. Call it on an id that passed [`check_device_id`].
///
/// ```
/// use reconnect_dedupe::dedupe::reading::canonical_device_id;
/// assert_eq!(canonical_device_id("70b3d52dd600035a".into()), "70B3D52DD600035A");
/// assert_eq!(canonical_device_id("bin-a17".into()), "bin-a17");
/// assert_eq!(canonical_device_id("70b3d52dd600035".into()), "70b3d52dd600035");
/// ```
pub fn canonical_device_id(id: Cow<'_, str>) -> Cow<'_, str> {
    let eui = id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit());
    if eui && id.bytes().any(|b| b.is_ascii_lowercase()) {
        Cow::Owned(id.to_ascii_uppercase())
    } else {
        id
    }
}

/// The error for a string member that is not valid Unicode: a JS string with a lone
/// UTF-16 surrogate, which a lossy conversion would map to U+FFFD (so two different
/// ids would collide). The JavaScript API detects it; text parsed here never has one.
pub fn lone_surrogate(field: Field) -> Error {
    Error::Invalid(field, "is not valid Unicode (lone surrogate)")
}

/// The rules of a `device_id` (also applied to the device part of a stored key):
/// 1–128 UTF-8 bytes, no control characters, no invisible or formatting characters
/// (`INVISIBLE`), no white space at either end, in Unicode normalization form C,
/// not `.` or `..`. Each rule keeps two ids that print the same from being two
/// devices: `bin1`, `bin1 ` and `bin\u{34F}1` look alike in a log, a dashboard or a
/// spreadsheet, and `café` typed on two keyboards is NFC (U+00E9) on one and NFD
/// (`e` + U+0301) on the other. Such ids are refused, not rewritten: a network server
/// that sends `bin1 ` is told so, rather than having its readings filed under an id
/// it never sent.
///
/// # Errors
/// [`Error::Invalid`] for `device_id` naming the broken rule,
/// [`Error::InvisibleCharacter`] naming the code point.
pub fn check_device_id(s: &str) -> Result<(), Error> {
    if s.is_empty() {
        return Err(Error::Invalid(Field::DeviceId, "must not be empty"));
    }
    if s == "." || s == ".." {
        return Err(Error::Invalid(
            Field::DeviceId,
            r#"must not be "." or ".." (a URL path cannot address it)"#,
        ));
    }
    if s.len() > MAX_DEVICE_ID_BYTES {
        return Err(Error::Invalid(Field::DeviceId, "is longer than 128 bytes"));
    }
    // ASCII controls by byte; C1 controls (U+0080..U+009F) only exist in non-ASCII text.
    if s.bytes().any(|b| b < 0x20 || b == 0x7f)
        || (!s.is_ascii() && s.chars().any(char::is_control))
    {
        return Err(Error::Invalid(
            Field::DeviceId,
            "must not contain control characters",
        ));
    }
    // Unicode's White_Space (the ASCII space, U+00A0, U+3000, ...) at either end.
    if s.starts_with(char::is_whitespace) || s.ends_with(char::is_whitespace) {
        return Err(Error::Invalid(
            Field::DeviceId,
            "must not begin or end with white space",
        ));
    }
    // Only non-ASCII text can break the last two rules; ASCII ids (the usual
    // DevEUIs) skip both scans.
    if !s.is_ascii() {
        if let Some(c) = s.chars().find(|&c| is_invisible(c)) {
            return Err(Error::InvisibleCharacter(c));
        }
        if !is_nfc(s) {
            return Err(Error::Invalid(
                Field::DeviceId,
                "must be in Unicode normalization form C (NFC: \"é\" as U+00E9, not \"e\" followed by U+0301)",
            ));
        }
    }
    Ok(())
}

/// The code points a device id must not contain although they are not controls:
/// Unicode's format characters (general category Cf: the soft hyphen, zero-width
/// space and joiners, bidirectional marks, embeddings, overrides and isolates, word
/// joiner and invisible operators, the byte order mark, interlinear annotation, the
/// tags), the line and paragraph separators U+2028/U+2029, and every other
/// Default_Ignorable_Code_Point (the combining grapheme joiner U+034F, the Hangul
/// fillers U+115F/U+1160/U+3164/U+FFA0, the Khmer inherent vowels, the Mongolian and
/// other variation selectors U+180B–U+180F, U+FE00–U+FE0F, U+E0100–U+E01EF, and the
/// code points reserved as ignorable). Each is invisible or reorders how the text
/// around it is shown, so `bin\u{200B}1` would be a second device that prints as
/// `bin1` in logs and dashboards. Sorted, disjoint, inclusive ranges of Unicode 17.0,
/// generated with `[\p{Cf}\p{Default_Ignorable_Code_Point}\u2028\u2029]` in Node 20's
/// ICU; a static table and a binary search rather than a crate: 25 ranges, one lookup
/// per non-ASCII character.
const INVISIBLE: [(u32, u32); 25] = [
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x2028, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
];

/// Whether `s` is in Unicode normalization form C: in Wasm by the JS engine's
/// `String.prototype.normalize`, natively by the `unicode-normalization` crate (the
/// reason is in Cargo.toml). Both are Unicode's NFC; only non-ASCII ids are asked.
#[cfg(target_arch = "wasm32")]
fn is_nfc(s: &str) -> bool {
    js_sys::JsString::from(s).normalize("NFC") == s
}

#[cfg(not(target_arch = "wasm32"))]
fn is_nfc(s: &str) -> bool {
    unicode_normalization::is_nfc(s)
}

/// Whether `c` is in [`INVISIBLE`].
fn is_invisible(c: char) -> bool {
    let c = c as u32;
    INVISIBLE
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

fn seq(v: Scalar<'_>) -> Result<i64, Error> {
    let n = match v {
        Scalar::Int(n) => n,
        Scalar::Float(f) if f.fract() == 0.0 && f.abs() <= MAX_SAFE_SEQ as f64 => f as i64,
        Scalar::Float(f) if f.is_finite() && f.fract() != 0.0 => {
            return Err(Error::Invalid(Field::Seq, "must be a whole number"))
        }
        Scalar::Fractional(_) => return Err(Error::Invalid(Field::Seq, "must be a whole number")),
        Scalar::Float(_) => return Err(Error::Invalid(Field::Seq, "is outside ±(2^53−1)")),
        _ => return Err(Error::Invalid(Field::Seq, "must be a JSON number")),
    };
    // `unsigned_abs`: `abs` of `i64::MIN` overflows (and wraps to itself in release).
    if n.unsigned_abs() > MAX_SAFE_SEQ as u64 {
        return Err(Error::Invalid(Field::Seq, "is outside ±(2^53−1)"));
    }
    Ok(n)
}

fn ts(v: Scalar<'_>) -> Result<Micros, Error> {
    let Scalar::Str(s) = v else {
        return Err(Error::Invalid(Field::Ts, "must be an RFC 3339 string"));
    };
    parse_rfc3339(&s).map_err(|e| Error::Invalid(Field::Ts, e.describe()))
}

fn fill_pct(v: Scalar<'_>) -> Result<f64, Error> {
    let x = match v {
        Scalar::Int(n) => n as f64,
        Scalar::Float(f) | Scalar::Fractional(f) => f,
        _ => return Err(Error::Invalid(Field::FillPct, "must be a JSON number")),
    };
    if !x.is_finite() {
        return Err(Error::Invalid(Field::FillPct, "must be finite"));
    }
    if !(0.0..=100.0).contains(&x) {
        return Err(Error::Invalid(Field::FillPct, "must be between 0 and 100"));
    }
    // `-0.0 + 0.0` is `+0.0`: one key for both zeros.
    Ok(x + 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(json: &str) -> &'static str {
        parse_reading(json).unwrap_err().code()
    }

    #[test]
    fn accepts_and_normalises() {
        let r = parse_reading(
            r#"{"device_id":"bin-A17","seq":41.0,"ts":"2026-07-16T11:00:00+02:00","fill_pct":-0.0,"rssi":-97}"#,
        )
        .unwrap();
        assert_eq!(r.seq, 41);
        assert_eq!(isoformat(r.ts), "2026-07-16T09:00:00+00:00");
        assert!(r.fill_pct.is_sign_positive() && r.fill_pct == 0.0);
    }

    #[test]
    fn seq_bounds() {
        let ok = |s: &str| {
            parse_reading(&format!(
                r#"{{"device_id":"d","seq":{s},"ts":"2026-07-16T09:00:00Z","fill_pct":1}}"#
            ))
            .map(|r| r.seq)
        };
        assert_eq!(ok("9007199254740991"), Ok(MAX_SAFE_SEQ));
        assert_eq!(ok("-9007199254740991"), Ok(-MAX_SAFE_SEQ));
        assert_eq!(ok("1e3"), Ok(1000));
        assert_eq!(ok("9007199254740992").unwrap_err().code(), "invalid_seq");
        assert_eq!(
            ok("18446744073709551615").unwrap_err().code(),
            "invalid_seq"
        );
        assert_eq!(ok("1e300").unwrap_err().code(), "invalid_seq");
        // i64's own extremes: the range check must not overflow on them.
        for s in [
            "-9223372036854775808",
            "9223372036854775807",
            "-9007199254740992",
        ] {
            assert_eq!(ok(s).unwrap_err().code(), "invalid_seq", "{s}");
        }
        assert_eq!(ok("41.5").unwrap_err().code(), "invalid_seq");
        assert_eq!(ok("\"41\"").unwrap_err().code(), "invalid_seq");
        assert_eq!(ok("true").unwrap_err().code(), "invalid_seq");
    }

    #[test]
    fn first_bad_field_is_reported() {
        assert_eq!(code(r#"[1,2]"#), "invalid_reading");
        assert_eq!(code(r#"{}"#), "missing_device_id");
        assert_eq!(code(r#"{"device_id":"","seq":"x"}"#), "invalid_device_id");
        assert_eq!(code(r#"{"device_id":"a\u0007b"}"#), "invalid_device_id");
        assert_eq!(code(r#"{"device_id":"d"}"#), "missing_seq");
        assert_eq!(code(r#"{"device_id":"d","seq":1,"ts":null}"#), "invalid_ts");
        assert_eq!(
            code(r#"{"device_id":"d","seq":1,"ts":"2026-07-16T09:00:00Z"}"#),
            "missing_fill_pct"
        );
        assert_eq!(
            code(r#"{"device_id":"d","seq":1,"ts":"2026-07-16T09:00:00Z","fill_pct":100.0000001}"#),
            "invalid_fill_pct"
        );
        assert_eq!(
            code(r#"{"device_id":"d","seq":1,"seq":2,"ts":"2026-07-16T09:00:00Z","fill_pct":1}"#),
            "invalid_reading"
        );
    }

    /// "." and ".." cannot be addressed in a URL path (`/v1/devices/../readings` is
    /// normalised to another route), so no reading may be stored under them.
    #[test]
    fn dot_segments_are_not_device_ids() {
        for id in [".", ".."] {
            let e = check_device_id(id).unwrap_err();
            assert_eq!(e.code(), "invalid_device_id");
            assert_eq!(
                e.to_string(),
                r#"device_id must not be "." or ".." (a URL path cannot address it)"#
            );
        }
        for id in ["...", ".a", "a.", "./"] {
            assert_eq!(check_device_id(id), Ok(()), "{id}");
        }
    }

    #[test]
    fn the_invisible_table_is_sorted_and_disjoint() {
        assert!(INVISIBLE.iter().all(|&(lo, hi)| lo <= hi));
        assert!(INVISIBLE.windows(2).all(|w| w[0].1 + 1 < w[1].0));
    }

    #[test]
    fn device_ids_with_invisible_or_formatting_characters_are_refused() {
        // Each of these looks like (or reorders the display of) another id: before,
        // "bin\u{200B}1" was a device of its own beside "bin1".
        for c in [
            '\u{00AD}',
            '\u{0600}',
            '\u{061C}',
            '\u{180E}',
            '\u{200B}',
            '\u{200C}',
            '\u{200D}',
            '\u{200E}',
            '\u{200F}',
            '\u{2028}',
            '\u{2029}',
            '\u{202A}',
            '\u{202E}',
            '\u{2060}',
            '\u{2064}',
            '\u{2066}',
            '\u{206F}',
            '\u{FEFF}',
            '\u{FFF9}',
            '\u{FFFB}',
            '\u{110BD}',
            '\u{1343F}',
            '\u{1D173}',
            '\u{E0001}',
            '\u{E0020}',
            '\u{E007F}',
            // Default_Ignorable_Code_Point outside Cf: each was a device of its own.
            '\u{034F}',
            '\u{FE0F}',
            '\u{3164}',
            '\u{115F}',
            '\u{17B4}',
            '\u{180B}',
            '\u{E0100}',
            '\u{FFA0}',
            '\u{2065}',
            '\u{E0000}',
            '\u{E0FFF}',
        ] {
            let id = format!("bin{c}1");
            let e = check_device_id(&id).unwrap_err();
            assert_eq!(e.code(), "invalid_device_id", "U+{:04X}", c as u32);
            assert_eq!(
                e.to_string(),
                format!(
                    "device_id must not contain invisible or formatting characters (U+{:04X})",
                    c as u32
                )
            );
        }
        // Neighbours of the ranges, and visible non-ASCII text, are ids.
        for c in [
            '\u{00AC}',
            '\u{00AE}',
            '\u{200A}',
            '\u{2010}',
            '\u{2027}',
            '\u{202F}',
            '\u{2070}',
            '\u{034E}',
            '\u{0350}',
            '\u{3163}',
            '\u{3165}',
            '\u{FDFF}',
            '\u{FE10}',
            '\u{FEFE}',
            '\u{FFFC}',
            '\u{FFFD}',
            '\u{DFFFF}',
            '\u{E1000}',
            'ü',
            '🗑',
        ] {
            assert_eq!(
                check_device_id(&format!("bin{c}1")),
                Ok(()),
                "U+{:04X}",
                c as u32
            );
        }
    }

    #[test]
    fn device_ids_with_white_space_at_either_end_are_refused() {
        // Before, "bin1", " bin1" and "bin1 " were three devices that print alike.
        for id in [
            " bin1",
            "bin1 ",
            "\u{A0}bin1",
            "bin1\u{3000}",
            "bin1\u{2003}",
            " ",
        ] {
            let e = check_device_id(id).unwrap_err();
            assert_eq!(e.code(), "invalid_device_id", "{id:?}");
            assert_eq!(
                e.to_string(),
                "device_id must not begin or end with white space",
                "{id:?}"
            );
        }
        // White space inside an id is the operator's choice.
        assert_eq!(check_device_id("bin 1"), Ok(()));
        assert_eq!(check_device_id("Müllplatz\u{A0}3"), Ok(()));
    }

    #[test]
    fn device_ids_not_in_normalization_form_c_are_refused() {
        // "café" as U+00E9 and as "e" + U+0301 print the same: before, two devices.
        assert_eq!(check_device_id("caf\u{E9}"), Ok(()));
        for id in [
            "cafe\u{301}",
            "A\u{30A}ngstr\u{F6}m",
            "\u{212B}",
            "\u{1100}\u{1161}",
        ] {
            let e = check_device_id(id).unwrap_err();
            assert_eq!(e.code(), "invalid_device_id", "{id:?}");
            assert!(
                e.to_string()
                    .starts_with("device_id must be in Unicode normalization form C"),
                "{e}"
            );
        }
        // Combining marks with no precomposed form are NFC as they stand.
        assert_eq!(check_device_id("q\u{323}\u{307}"), Ok(()));
        // Marks out of canonical order are not NFC either (U+0323 sorts before U+0307).
        assert_eq!(
            check_device_id("q\u{307}\u{323}").unwrap_err().code(),
            "invalid_device_id"
        );
        assert_eq!(check_device_id("\u{AC00}"), Ok(()));
    }

    #[test]
    fn device_id_length_is_counted_in_bytes() {
        let mk = |id: &str| {
            format!(r#"{{"device_id":"{id}","seq":1,"ts":"2026-07-16T09:00:00Z","fill_pct":1}}"#)
        };
        assert!(parse_reading(&mk(&"a".repeat(128))).is_ok());
        assert_eq!(code(&mk(&"a".repeat(129))), "invalid_device_id");
        assert_eq!(code(&mk(&"ü".repeat(65))), "invalid_device_id");
    }

    #[test]
    fn burst_shapes() {
        let b: RawBurst = serde_json::from_str(r#"{"readings":[{},3],"x":1}"#).unwrap();
        assert_eq!(b.0.len(), 2);
        assert!(serde_json::from_str::<RawBurst>(r#"{"readings":{}}"#).is_err());
        assert!(serde_json::from_str::<RawBurst>(r#"{"x":[]}"#).is_err());
        assert!(serde_json::from_str::<RawBurst>(r#""readings""#).is_err());
    }
}
