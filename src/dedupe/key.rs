//! The idempotency key of one logical reading, byte-compatible with the seed.
//!
//! ```text
//! key     = "{device_id}:{seq}:{first 16 hex chars of sha256(content)}"
//! content = {"fill_pct":<repr(fill_pct)>,"ts":"<isoformat(ts in UTC)>"}
//! ```
//!
//! `content` is what the seed's `json.dumps(..., sort_keys=True, separators=(",", ":"))`
//! prints: the keys sorted, no spaces, the float as Python's `repr` and the time as
//! `datetime.isoformat()`. The only departure from the seed is on purpose: the instant
//! is converted to UTC first, so one instant written with two offsets gets one key.

use super::error::Error;
use super::reading::{check_device_id, Reading, MAX_SAFE_SEQ};
use super::timestamp::write_isoformat;
use sha2::{Digest, Sha256};

/// Appends Python's `repr(x)` of a finite, non-negative float.
///
/// Shortest round-trip digits, an exact tie going to the even digit as in Python;
/// integral values keep a `.0`; values below 1e-4 use exponent form with a signed
/// exponent of at least two digits (`1e-05`, `1.5e-07`); from 1e16 up, `1e+16`.
///
/// The digits come from zmij (serde_json's float formatter), which writes exactly this
/// from 1e-4 up. `std::fmt`, used here before, does not: it breaks exact ties upwards,
/// so the float32 value 26.775894 as a double came out `26.775894165039063` where
/// Python writes `26.775894165039062` (and the key differed).
///
/// Whole tenths (62.5, 71.0: most fill levels) are written by hand: on the fill-level
/// mix 11 ns a value against 31 ns through zmij alone (benches/handwritten.rs,
/// 2026-11-30, native; docs/benchmarks.md).
///
/// ```
/// use reconnect_dedupe::key::write_py_float_repr;
/// let mut s = String::new();
/// for x in [62.5, 71.0, 0.30000000000000004, 1e-05, 26.775894165039062] {
///     write_py_float_repr(&mut s, x);
///     s.push(' ');
/// }
/// assert_eq!(s, "62.5 71.0 0.30000000000000004 1e-05 26.775894165039062 ");
/// ```
pub fn write_py_float_repr(out: &mut String, x: f64) {
    debug_assert!(x.is_finite() && x >= 0.0);
    if let Some(tenths) = whole_tenths(x) {
        // The shortest digits are the tenths themselves (0.0 included).
        push_u64(out, tenths / 10);
        out.push('.');
        out.push(char::from(b'0' + (tenths % 10) as u8));
        return;
    }
    let mut buf = zmij::Buffer::new();
    let digits = buf.format_finite(x);
    if x >= 1e-4 {
        out.push_str(digits);
    } else {
        push_exponent_form(out, digits);
    }
}

/// Appends a value below 1e-4 in Python's form from zmij's text of it, which is
/// decimal down to 1e-5 (`0.000015`) and exponent form below (`1.5e-7`).
fn push_exponent_form(out: &mut String, digits: &str) {
    let exp = if let Some((mantissa, exp)) = digits.split_once('e') {
        out.push_str(mantissa);
        exp.parse::<i32>().unwrap_or(0)
    } else {
        let fraction = digits.strip_prefix("0.").unwrap_or(digits);
        let significant = fraction.trim_start_matches('0');
        let mut chars = significant.chars();
        out.extend(chars.next());
        if !chars.as_str().is_empty() {
            out.push('.');
            out.push_str(chars.as_str());
        }
        -((fraction.len() - significant.len()) as i32) - 1
    };
    out.push_str(if exp < 0 { "e-" } else { "e+" });
    if exp.unsigned_abs() < 10 {
        out.push('0');
    }
    push_u64(out, u64::from(exp.unsigned_abs()));
}

/// `Some(k)` when `x` (in 0 .. 1e9) is exactly the double nearest to `k / 10`.
///
/// Then `k / 10` with one decimal is Python's `repr(x)`: that decimal round-trips to
/// `x`, and no decimal with fewer digits does, since below 1e9 the doubles lie far
/// closer together than 0.1 (an integral `x` keeps its `.0`, as in Python). No value
/// in 0 < x < 1e-4 is a whole tenth, so the exponent form never takes this path.
fn whole_tenths(x: f64) -> Option<u64> {
    let tenths = (x * 10.0).round();
    // Division is correctly rounded, so `tenths / 10.0` is the double nearest k / 10.
    (x < 1e9 && tenths / 10.0 == x).then_some(tenths as u64)
}

/// Appends the decimal digits of `v`.
pub(crate) fn push_u64(out: &mut String, v: u64) {
    out.push_str(itoa::Buffer::new().format(v));
}

/// Appends `v` in decimal, with a `-` when negative.
pub(crate) fn push_i64(out: &mut String, v: i64) {
    out.push_str(itoa::Buffer::new().format(v));
}

/// Appends the canonical content string that is hashed: `{"fill_pct":F,"ts":"T"}`.
pub fn write_content(out: &mut String, reading: &Reading<'_>) {
    out.push_str("{\"fill_pct\":");
    write_py_float_repr(out, reading.fill_pct);
    out.push_str(",\"ts\":\"");
    write_isoformat(out, reading.ts);
    out.push_str("\"}");
}

/// The first 8 bytes of SHA-256 over the canonical content, as a big-endian integer;
/// its 16 lower-case hex digits are the key's last part.
///
/// `scratch` is reused between calls so the hot path allocates nothing.
pub fn content_digest(reading: &Reading<'_>, scratch: &mut String) -> u64 {
    scratch.clear();
    write_content(scratch, reading);
    digest_of(scratch.as_bytes())
}

/// The first 8 bytes of SHA-256 over already formatted content, big-endian.
pub fn digest_of(content: &[u8]) -> u64 {
    let hash = Sha256::digest(content);
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash[..8]);
    u64::from_be_bytes(first)
}

/// [`digest_of`] a list of text parts, each written as its length in bytes, `:` and
/// itself: the text reads back as exactly one list, so two lists that differ in any
/// part, or in how many parts they have, never share the hashed text.
pub(crate) fn digest_of_parts<'a>(parts: impl IntoIterator<Item = &'a str>) -> u64 {
    let mut text = String::with_capacity(128);
    for part in parts {
        push_u64(&mut text, part.len() as u64);
        text.push(':');
        text.push_str(part);
    }
    digest_of(text.as_bytes())
}

/// Formats the key string from its parts.
pub fn format_key(device_id: &str, seq: i64, digest: u64) -> String {
    let mut key = String::with_capacity(device_id.len() + 40);
    key.push_str(device_id);
    key.push(':');
    push_i64(&mut key, seq);
    key.push(':');
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut hex = [0u8; 16];
    for (i, c) in hex.iter_mut().enumerate() {
        *c = HEX[(digest >> (60 - 4 * i)) as usize & 15];
    }
    // Only ASCII hex digits were written.
    key.push_str(std::str::from_utf8(&hex).unwrap_or_default());
    key
}

/// A key taken apart: all the seen-set needs to fingerprint it, without its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyParts<'a> {
    pub device_id: &'a str,
    pub seq: i64,
    /// The content digest: the key's 16 hex digits.
    pub digest: u64,
}

/// Takes a key apart: the inverse of [`format_key`]. Only what [`format_key`] writes
/// for a valid reading is accepted (canonical seq digits, 16 lower-case hex digits),
/// so one reading can never stand behind two key strings.
///
/// ```
/// use reconnect_dedupe::key::parse_key;
/// let k = parse_key("bin:A17:-1:ae4e63efd7f66f28").unwrap();
/// assert_eq!((k.device_id, k.seq, k.digest), ("bin:A17", -1, 0xae4e63efd7f66f28));
/// ```
///
/// # Errors
/// [`Error::InvalidKey`] naming the broken part.
pub fn parse_key(key: &str) -> Result<KeyParts<'_>, Error> {
    let bad = Error::InvalidKey;
    // device_id may itself contain ':', so the parts are taken from the right.
    let (rest, hex) = key
        .rsplit_once(':')
        .ok_or(bad("expected device_id:seq:digest"))?;
    let (device_id, seq) = rest
        .rsplit_once(':')
        .ok_or(bad("expected device_id:seq:digest"))?;
    if hex.len() != 16 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(bad("the digest must be 16 lower-case hex digits"));
    }
    let digest = u64::from_str_radix(hex, 16).map_err(|_| bad("bad digest"))?;
    let seq_value: i64 = seq
        .parse()
        .map_err(|_| bad("the seq must be a whole number"))?;
    if seq_value.unsigned_abs() > MAX_SAFE_SEQ as u64
        || itoa::Buffer::new().format(seq_value) != seq
    {
        return Err(bad("the seq must be written canonically within ±(2^53−1)"));
    }
    check_device_id(device_id).map_err(|_| bad("the device_id part breaks the device_id rules"))?;
    Ok(KeyParts {
        device_id,
        seq: seq_value,
        digest,
    })
}

/// The idempotency key of a validated reading.
///
/// ```
/// use reconnect_dedupe::{idempotency_key, parse_reading};
/// let r = parse_reading(r#"{"device_id":"bin-A17","seq":-1,
///     "ts":"2030-12-31T00:00:00.250Z","fill_pct":0.30000000000000004}"#).unwrap();
/// assert_eq!(idempotency_key(&r), "bin-A17:-1:ae4e63efd7f66f28");
/// ```
pub fn idempotency_key(reading: &Reading<'_>) -> String {
    let digest = content_digest(reading, &mut String::with_capacity(64));
    format_key(&reading.device_id, reading.seq, digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repr(x: f64) -> String {
        let mut s = String::new();
        write_py_float_repr(&mut s, x);
        s
    }

    /// Each expected text is what Python 3 prints for `repr(x)`.
    #[test]
    fn float_repr_matches_python() {
        for (x, want) in [
            (0.0, "0.0"),
            (100.0, "100.0"),
            (62.5, "62.5"),
            (0.1, "0.1"),
            (0.30000000000000004, "0.30000000000000004"),
            (33.333333333333336, "33.333333333333336"),
            (0.0001, "0.0001"),
            (0.00012, "0.00012"),
            (1e-05, "1e-05"),
            (1.5e-05, "1.5e-05"),
            (9.999999999999999e-05, "9.999999999999999e-05"),
            (1e-07, "1e-07"),
            (1.25e-100, "1.25e-100"),
            (5e-324, "5e-324"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (1234567890123456.0, "1234567890123456.0"),
        ] {
            assert_eq!(repr(x), want, "{x:?}");
        }
    }

    /// Exact ties between two shortest candidates go to the even digit, as in Python
    /// (`std::fmt` goes up: `...063`). They come from float32 values, which payload
    /// formatters decode from the uplink's bytes.
    #[test]
    fn float_repr_breaks_ties_to_even_as_python_does() {
        for (x, want) in [
            (26.775894165039062, "26.775894165039062"),
            (64.00003051757812, "64.00003051757812"),
            (61.760475158691406, "61.760475158691406"),
            (58.400245666503906, "58.400245666503906"),
            (0.0013551712036132812, "0.0013551712036132812"),
            (157106500456924.12, "157106500456924.12"),
        ] {
            assert_eq!(repr(x), want, "{x:?}");
            if x < 100.0 {
                assert_eq!(f64::from(x as f32), x, "{x:?} is a float32 value");
            }
        }
    }

    /// The whole-tenths path writes what the general path (zmij) writes.
    #[test]
    fn tenths_fast_path_matches_shortest_digits() {
        let mut rng = fastrand::Rng::with_seed(0x9e37_79b9_7f4a_7c15);
        let randoms = (0..100_000).map(|_| rng.f64() * 100.0);
        for x in (1..=1_000_000).map(|k| k as f64 / 10.0).chain(randoms) {
            assert_eq!(repr(x), zmij::Buffer::new().format_finite(x), "{x:?}");
        }
    }

    /// Every shared vector's key parses back into the parts it was made of.
    #[test]
    fn parse_key_inverts_format_key() {
        let v: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/vectors/keys.json")).unwrap();
        for case in v["vectors"].as_array().unwrap() {
            let key = case["key"].as_str().unwrap();
            let p = parse_key(key).unwrap();
            assert_eq!(format_key(p.device_id, p.seq, p.digest), key);
            assert_eq!(p.device_id, case["reading"]["device_id"].as_str().unwrap());
        }
    }

    #[test]
    fn parse_key_refuses_what_format_key_never_writes() {
        for key in [
            "",
            "abc",
            "dev:1",
            ":1:0123456789abcdef",
            "dev::0123456789abcdef",
            "dev:+1:0123456789abcdef",
            "dev:01:0123456789abcdef",
            "dev:-0:0123456789abcdef",
            "dev:1.0:0123456789abcdef",
            "dev:9007199254740992:0123456789abcdef",
            "dev:-9007199254740992:0123456789abcdef",
            "dev:-9223372036854775808:0123456789abcdef",
            "dev:9223372036854775807:0123456789abcdef",
            ".:1:0123456789abcdef",
            "..:1:0123456789abcdef",
            "dev:1:0123456789ABCDEF",
            "dev:1:0123456789abcde",
            "dev:1:0123456789abcdef0",
            "dev:1:+123456789abcdef",
            "de\nv:1:0123456789abcdef",
            "de\u{7f}v:1:0123456789abcdef",
        ] {
            let e = parse_key(key).unwrap_err();
            assert_eq!(e.code(), "invalid_key", "{key:?}");
        }
        let p = parse_key("a:b:-9007199254740991:ffffffffffffffff").unwrap();
        assert_eq!(
            (p.device_id, p.seq, p.digest),
            ("a:b", -(1 << 53) + 1, u64::MAX)
        );
    }
}
