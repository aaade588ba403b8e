//! Target `reading`: one raw reading (the four fields as the core's raw scalars)
//! through validation and keying.
//!
//! Input ([`decode`]): a flags byte (bit 0 set: not a JSON object; `(b >> 1) % 5`:
//! the field given twice, 0 none), then per field, in the order device_id, seq, ts,
//! fill_pct, a tag byte `t % 7` (0 absent, 1 null, 2 bool, 3 integer: 8 bytes, 4
//! float: 8 bytes of its bits, 5 string: a u16 length `% 512` and its bytes, UTF-8
//! lossily, 6 array or object).
//!
//! Properties: never panics; the verdict (valid, or the code of the first bad
//! field) is the one this module's own reading of the rules gives, timestamps
//! included ([`reference_rfc3339`], written apart from the core's parser); a valid
//! reading holds exactly the values given (`-0.0` as `0.0`), and its key parses
//! back into its device and seq, ends in the first 8 bytes of SHA-256 over its
//! canonical content, whose text gives back the very same `fill_pct` and instant;
//! the reading written as JSON parses back to itself and its key.

use crate::{Sink, Src};
use reconnect_dedupe::dedupe::reading::{parse_reading, Scalar, MAX_SAFE_SEQ};
use reconnect_dedupe::key::format_key;
use reconnect_dedupe::timestamp::{isoformat, parse_rfc3339, MAX_MICROS, MIN_MICROS};
use reconnect_dedupe::{idempotency_key, parse_key, validate, write_content, Field, RawReading};
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use unicode_normalization::UnicodeNormalization;

const FIELDS: [Field; 4] = [Field::DeviceId, Field::Seq, Field::Ts, Field::FillPct];

pub fn check(data: &[u8]) {
    let raw = decode(data);
    let want = expected(&raw);
    let got = validate(raw.clone());
    let r = match (got, want) {
        (Ok(r), Ok(())) => r,
        (Err(e), Err(code)) => {
            assert_eq!(e.code(), code, "{raw:?}: {e}");
            return;
        }
        (got, want) => panic!("{raw:?}: validate gave {got:?}, the rules say {want:?}"),
    };
    // The reading holds exactly what was given.
    assert_eq!(Some(Scalar::Str(r.device_id.clone())), raw.device_id);
    match raw.seq {
        Some(Scalar::Int(n)) => assert_eq!(r.seq, n),
        Some(Scalar::Float(f)) => assert_eq!(r.seq as f64, f),
        _ => unreachable!("a valid seq is a number"),
    }
    let Some(Scalar::Str(ts)) = &raw.ts else {
        unreachable!("a valid ts is a string")
    };
    assert_eq!(Some(r.ts), reference_rfc3339(ts), "{ts:?}");
    let fill = match raw.fill_pct {
        Some(Scalar::Int(n)) => n as f64,
        Some(Scalar::Float(f) | Scalar::Fractional(f)) => f,
        _ => unreachable!("a valid fill_pct is a number"),
    };
    assert_eq!(
        r.fill_pct.to_bits(),
        (fill + 0.0).to_bits(),
        "fill_pct {fill:?}"
    );

    // The key: device and seq parse back, the digest is SHA-256 of the content, and
    // the content's text gives back the exact values it was written from.
    let key = idempotency_key(&r);
    let parts = parse_key(&key).unwrap_or_else(|e| panic!("{key:?} does not parse: {e}"));
    assert_eq!(
        (parts.device_id, parts.seq),
        (&*r.device_id, r.seq),
        "{key}"
    );
    assert_eq!(format_key(parts.device_id, parts.seq, parts.digest), key);
    let mut content = String::new();
    write_content(&mut content, &r);
    let digest = Sha256::digest(content.as_bytes());
    assert_eq!(
        parts.digest.to_be_bytes(),
        digest[..8],
        "{key} over {content}"
    );
    let v: serde_json::Value = serde_json::from_str(&content).expect("the content is JSON");
    let obj = v.as_object().expect("the content is an object");
    assert_eq!(obj.len(), 2, "{content}");
    assert_eq!(
        obj["fill_pct"].as_f64().map(f64::to_bits),
        Some(r.fill_pct.to_bits()),
        "{content}"
    );
    let text = obj["ts"].as_str().expect("ts is a string");
    assert_eq!(text, isoformat(r.ts));
    assert_eq!(parse_rfc3339(text), Ok(r.ts), "{content}");

    // Written as JSON and parsed again: the same reading, the same key.
    let json = serde_json::to_string(&r).expect("a reading serialises");
    let again = parse_reading(&json).unwrap_or_else(|e| panic!("{json} does not parse back: {e}"));
    assert_eq!(again, r, "{json}");
    assert_eq!(idempotency_key(&again), key);
}

/// Unicode's format characters (general category Cf, Unicode 17.0), the line and
/// paragraph separators and the other Default_Ignorable_Code_Points, which a device id
/// must not hold (docs/http-api.md, "Readings and rejections"); listed here apart from the core's
/// table.
fn invisible(c: char) -> bool {
    matches!(
        c as u32,
        0xAD | 0x34F
            | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x890..=0x891
            | 0x8E2
            | 0x115F..=0x1160
            | 0x17B4..=0x17B5
            | 0x180B..=0x180F
            | 0x200B..=0x200F
            | 0x2028..=0x202E
            | 0x2060..=0x206F
            | 0x3164
            | 0xFE00..=0xFE0F
            | 0xFEFF
            | 0xFFA0
            | 0xFFF0..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0000..=0xE0FFF
    )
}

/// The verdict by the rules as the README states them, written apart from the core.
fn expected(raw: &RawReading<'_>) -> Result<(), String> {
    if !raw.is_object {
        return Err("invalid_reading".into());
    }
    // A member given twice: the whole reading is refused, never first- or last-wins.
    if raw.repeated.is_some() {
        return Err("invalid_reading".into());
    }
    let fields = [&raw.device_id, &raw.seq, &raw.ts, &raw.fill_pct];
    for (field, value) in FIELDS.into_iter().zip(fields) {
        let Some(v) = value else {
            return Err(format!("missing_{}", field.name()));
        };
        let ok = match (field, v) {
            (Field::DeviceId, Scalar::Str(s)) => {
                // A Rust `&str` cannot hold a lone surrogate, so no rule for it here.
                !s.is_empty()
                    && s != "."
                    && s != ".."
                    && s.len() <= 128
                    && !s.chars().any(char::is_control)
                    && !s.starts_with(char::is_whitespace)
                    && !s.ends_with(char::is_whitespace)
                    && !s.chars().any(invisible)
                    && s.nfc().eq(s.chars())
            }
            (Field::Seq, Scalar::Int(n)) => n.unsigned_abs() <= MAX_SAFE_SEQ as u64,
            (Field::Seq, Scalar::Float(f)) => f.fract() == 0.0 && f.abs() <= MAX_SAFE_SEQ as f64,
            (Field::Ts, Scalar::Str(s)) => reference_rfc3339(s).is_some(),
            (Field::FillPct, Scalar::Int(n)) => (0.0..=100.0).contains(&(*n as f64)),
            (Field::FillPct, Scalar::Float(f) | Scalar::Fractional(f)) => (0.0..=100.0).contains(f),
            // A number whose text has a fraction is never a seq, whatever its double.
            _ => false,
        };
        if !ok {
            return Err(format!("invalid_{}", field.name()));
        }
    }
    Ok(())
}

/// RFC 3339 as the README accepts it, to microseconds UTC: `YYYY-MM-DD`, `T`, `t` or
/// a space, `HH:MM:SS`, an optional fraction of 1–9 digits (past the sixth
/// truncated), then `Z`, `z` or `±hh:mm` (hh ≤ 23, mm ≤ 59); fields in range, local
/// year ≥ 1, the UTC instant within years 0001–9999. Days are counted from
/// 0001-01-01, not with the core's civil-from-days algorithm.
pub fn reference_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |at: usize, n: usize| -> Option<i64> {
        let part = b.get(at..at + n)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| part.iter().fold(0, |acc, d| acc * 10 + i64::from(d - b'0')))
    };
    let at = |i: usize, c: &[u8]| b.get(i).is_some_and(|x| c.contains(x));
    if !(at(4, b"-") && at(7, b"-") && at(10, b"Tt ") && at(13, b":") && at(16, b":")) {
        return None;
    }
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (hour, minute, second) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    let mut i = 19;
    let mut micros = 0;
    if at(i, b".") {
        let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 || digits > 9 {
            return None;
        }
        let six = format!("{:0<6}", &s[i + 1..i + 1 + digits.min(6)]);
        micros = six.parse::<i64>().ok()?;
        i += 1 + digits;
    }
    let offset = match b.get(i)? {
        b'Z' | b'z' if b.len() == i + 1 => 0,
        sign @ (b'+' | b'-') if b.len() == i + 6 && at(i + 3, b":") => {
            let (oh, om) = (num(i + 1, 2)?, num(i + 4, 2)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let secs = oh * 3600 + om * 60;
            if *sign == b'-' {
                -secs
            } else {
                secs
            }
        }
        _ => return None,
    };
    let leap = |y: i64| y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let month_days = [
        31,
        if leap(year) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if year < 1 || !(1..=12).contains(&month) || day < 1 || day > month_days[month as usize - 1] {
        return None;
    }
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let y = year - 1;
    let days_before_year = 365 * y + y / 4 - y / 100 + y / 400;
    let days_before_month: i64 = month_days[..month as usize - 1].iter().sum();
    // 719_162 days from 0001-01-01 to 1970-01-01.
    let days = days_before_year + days_before_month + day - 1 - 719_162;
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset;
    let utc = secs * 1_000_000 + micros;
    (MIN_MICROS..=MAX_MICROS).contains(&utc).then_some(utc)
}

/// The core's message for a member given twice (`RawReading::repeated`).
fn repeated_message(field: Field) -> String {
    format!("member \"{}\" appears twice", field.name())
}

/// Reads a raw reading from fuzz input (see the module docs).
pub fn decode(data: &[u8]) -> RawReading<'static> {
    let mut src = Src::new(data);
    let flags = src.u8();
    let mut raw = RawReading {
        is_object: flags & 1 == 0,
        repeated: match (flags >> 1) % 5 {
            0 => None,
            n => Some(repeated_message(FIELDS[usize::from(n) - 1])),
        },
        ..RawReading::default()
    };
    let slots = [
        &mut raw.device_id,
        &mut raw.seq,
        &mut raw.ts,
        &mut raw.fill_pct,
    ];
    for slot in slots {
        *slot = match src.u8() % 8 {
            0 => None,
            1 => Some(Scalar::Null),
            2 => Some(Scalar::Bool),
            3 => Some(Scalar::Int(src.u64() as i64)),
            4 => Some(Scalar::Float(f64::from_bits(src.u64()))),
            5 => {
                let n = usize::from(src.u16() % 512);
                Some(Scalar::Str(Cow::Owned(
                    String::from_utf8_lossy(src.bytes(n)).into_owned(),
                )))
            }
            6 => Some(Scalar::Nested),
            _ => Some(Scalar::Fractional(f64::from_bits(src.u64()))),
        };
    }
    raw
}

/// Writes a raw reading as [`decode`] reads it (the seed corpus).
pub fn encode(raw: &RawReading<'_>) -> Vec<u8> {
    let mut out = Sink::default();
    let repeated = raw.repeated.as_deref().map_or(0, |why| {
        FIELDS
            .iter()
            .position(|&f| why == repeated_message(f))
            .unwrap_or(0) as u8
            + 1
    });
    out.u8(u8::from(!raw.is_object) | (repeated << 1));
    for value in [&raw.device_id, &raw.seq, &raw.ts, &raw.fill_pct] {
        match value {
            None => out.u8(0),
            Some(Scalar::Null) => out.u8(1),
            Some(Scalar::Bool) => out.u8(2),
            Some(Scalar::Int(n)) => out.u8(3).u64(*n as u64),
            Some(Scalar::Float(f)) => out.u8(4).u64(f.to_bits()),
            Some(Scalar::Str(s)) => {
                let bytes = &s.as_bytes()[..s.len().min(511)];
                out.u8(5).u16(bytes.len() as u16).bytes(bytes)
            }
            Some(Scalar::Nested) => out.u8(6),
            Some(Scalar::Fractional(f)) => out.u8(7).u64(f.to_bits()),
        };
    }
    out.0
}
