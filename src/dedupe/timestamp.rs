//! RFC 3339 timestamps: parsing with a mandatory offset, normalising to UTC, and
//! printing the way Python's `datetime.isoformat()` prints a UTC instant.
//!
//! An instant is held as whole microseconds since 1970-01-01T00:00:00Z in an `i64`.
//! The accepted years are 0001–9999 *after* conversion to UTC, the range of
//! Python's `datetime`, so every instant we accept the seed could also have hashed.

/// Microseconds since the Unix epoch, UTC.
pub type Micros = i64;

const MICROS_PER_SEC: i64 = 1_000_000;
const SECS_PER_DAY: i64 = 86_400;

/// Why a timestamp string was refused; turned into an `invalid_ts` rejection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TsError {
    /// Not `YYYY-MM-DDTHH:MM:SS[.f]` followed by `Z` or `±hh:mm`.
    Syntax,
    /// A date-time without `Z` or an offset: its instant is unknown.
    NoOffset,
    /// A field out of range (month 13, February 30, hour 24, second 60, offset +24:00).
    OutOfRange,
    /// The instant falls outside 0001-01-01 … 9999-12-31 once converted to UTC.
    YearOutOfRange,
}

impl TsError {
    pub fn describe(self) -> &'static str {
        match self {
            TsError::Syntax => "must be an RFC 3339 date-time such as 2026-07-16T09:00:00Z",
            TsError::NoOffset => "has no UTC offset; add Z or ±hh:mm",
            TsError::OutOfRange => "has a date, time or offset field out of range",
            TsError::YearOutOfRange => "falls outside years 0001-9999 in UTC",
        }
    }
}

/// Parses an RFC 3339 date-time that carries an offset and returns its UTC instant.
///
/// Accepted: `YYYY-MM-DDTHH:MM:SS`, `T` or `t` or a space between date and time,
/// an optional fraction of 1–9 digits, then `Z`, `z` or `±hh:mm`. Digits past the
/// sixth (nanoseconds, as The Things Stack sends) are truncated to microseconds,
/// which is what Python's `datetime` can hold.
///
/// By hand, not a crate's parser: each accepts what these rules refuse (`time` any
/// character between date and time, second 60 and a tenth fraction digit; `chrono`
/// second 60 and any number of digits; `jiff` `+0200`, `+24:00`, `T09:00Z`) and none
/// tells a missing offset from other syntax. And this takes 19 ns a parse against
/// 28 (`time` 0.3.55, which needs rustc 1.88; 41 for 0.3.45), 37 (`jiff`) and 46 ns
/// (`chrono`), native; as Wasm they would add 37, 141 and 8 KiB
/// (benches/handwritten.rs, 2026-11-30; docs/benchmarks.md).
pub fn parse_rfc3339(s: &str) -> Result<Micros, TsError> {
    let b = s.as_bytes();
    if b.len() < 19 {
        return Err(TsError::Syntax);
    }
    let year = digits(b, 0, 4)?;
    expect(b, 4, b'-')?;
    let month = digits(b, 5, 2)?;
    expect(b, 7, b'-')?;
    let day = digits(b, 8, 2)?;
    if !matches!(b[10], b'T' | b't' | b' ') {
        return Err(TsError::Syntax);
    }
    let hour = digits(b, 11, 2)?;
    expect(b, 13, b':')?;
    let minute = digits(b, 14, 2)?;
    expect(b, 16, b':')?;
    let second = digits(b, 17, 2)?;

    let mut i = 19;
    let mut micros: i64 = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            if i - start < 6 {
                micros = micros * 10 + i64::from(b[i] - b'0');
            }
            i += 1;
        }
        let n = i - start;
        if n == 0 || n > 9 {
            return Err(TsError::Syntax);
        }
        for _ in n..6 {
            micros *= 10;
        }
    }

    let offset_secs = match b.get(i) {
        None => return Err(TsError::NoOffset),
        Some(b'Z' | b'z') => {
            i += 1;
            0
        }
        Some(&sign @ (b'+' | b'-')) => {
            if b.len() != i + 6 {
                return Err(TsError::Syntax);
            }
            let oh = digits(b, i + 1, 2)?;
            expect(b, i + 3, b':')?;
            let om = digits(b, i + 4, 2)?;
            if oh > 23 || om > 59 {
                return Err(TsError::OutOfRange);
            }
            i += 6;
            let secs = i64::from(oh * 3600 + om * 60);
            if sign == b'-' {
                -secs
            } else {
                secs
            }
        }
        Some(_) => return Err(TsError::Syntax),
    };
    if i != b.len() {
        return Err(TsError::Syntax);
    }

    if year == 0
        || !(1..=12).contains(&month)
        || day == 0
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return Err(TsError::OutOfRange);
    }
    let days = days_from_civil(i64::from(year), month, day);
    let local_secs =
        days * SECS_PER_DAY + i64::from(hour * 3600 + minute * 60 + second) - offset_secs;
    let utc = local_secs * MICROS_PER_SEC + micros;
    if !(MIN_MICROS..=MAX_MICROS).contains(&utc) {
        return Err(TsError::YearOutOfRange);
    }
    Ok(utc)
}

/// 0001-01-01T00:00:00Z in microseconds since the epoch.
pub const MIN_MICROS: Micros = -62_135_596_800 * MICROS_PER_SEC;
/// 9999-12-31T23:59:59.999999Z in microseconds since the epoch.
pub const MAX_MICROS: Micros = 253_402_300_800 * MICROS_PER_SEC - 1;

/// Writes `YYYY-MM-DDTHH:MM:SS[.ffffff]+00:00`, Python's `isoformat()` of a UTC
/// `datetime`: the fraction only when non-zero, and then always six digits.
///
/// The caller guarantees `MIN_MICROS <= t <= MAX_MICROS` (every parsed instant is).
pub fn write_isoformat(out: &mut String, t: Micros) {
    out.push_str(IsoBuf::new(t).as_str());
}

/// `isoformat()` of a UTC instant as a new string.
pub fn isoformat(t: Micros) -> String {
    IsoBuf::new(t).as_str().to_owned()
}

/// `isoformat()` of a UTC instant as a serde string: the `serialize_with` of the
/// shapes that write an instant so (`KeyedReading::ts`, `RawUplink::received_at`).
pub(crate) fn isoformat_text<S: serde::Serializer>(t: &Micros, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(IsoBuf::new(*t).as_str())
}

/// `isoformat()` of a UTC instant, formatted on the stack (the hot path: no `fmt`
/// machinery, no allocation). Same text as [`write_isoformat`].
///
/// By hand: 35 ns against 46 ns for `chrono`'s `to_rfc3339_opts` and 195 ns for
/// `time`'s `format_into`, which write the same text; `jiff`'s printer takes 28 ns
/// but cannot hold the instants after 9999-12-30T22:00Z that this accepts
/// (benches/handwritten.rs, 2026-11-30, native; docs/benchmarks.md).
pub struct IsoBuf {
    buf: [u8; 32],
    len: usize,
}

impl IsoBuf {
    /// Formats `t`; the caller guarantees `MIN_MICROS <= t <= MAX_MICROS`.
    pub fn new(t: Micros) -> IsoBuf {
        let secs = t.div_euclid(MICROS_PER_SEC);
        let micros = t.rem_euclid(MICROS_PER_SEC) as u32;
        let days = secs.div_euclid(SECS_PER_DAY);
        let sod = secs.rem_euclid(SECS_PER_DAY) as u32;
        let (y, m, d) = civil_from_days(days);
        let mut b = IsoBuf {
            buf: *b"0000-00-00T00:00:00.000000+00:00",
            len: 0,
        };
        put_digits(&mut b.buf[0..4], y as u32);
        put_digits(&mut b.buf[5..7], m);
        put_digits(&mut b.buf[8..10], d);
        put_digits(&mut b.buf[11..13], sod / 3600);
        put_digits(&mut b.buf[14..16], sod % 3600 / 60);
        put_digits(&mut b.buf[17..19], sod % 60);
        if micros != 0 {
            put_digits(&mut b.buf[20..26], micros);
            b.len = 32;
        } else {
            b.buf.copy_within(26..32, 19);
            b.len = 25;
        }
        b
    }

    pub fn as_str(&self) -> &str {
        // Only ASCII digits and punctuation were written.
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or_default()
    }
}

/// Writes `v` as decimal digits filling `out` (an even length), zero-padded on the
/// left, two digits per step.
fn put_digits(out: &mut [u8], mut v: u32) {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
        2021222324252627282930313233343536373839404142434445464748495051525354555657585960\
        6162636465666768697071727374757677787980818283848586878889909192939495969798\
        99";
    for pair in out.rchunks_exact_mut(2) {
        let i = (v % 100) as usize * 2;
        pair.copy_from_slice(&PAIRS[i..i + 2]);
        v /= 100;
    }
}

fn digits(b: &[u8], at: usize, n: usize) -> Result<u32, TsError> {
    let mut v = 0u32;
    for &c in b.get(at..at + n).ok_or(TsError::Syntax)? {
        if !c.is_ascii_digit() {
            return Err(TsError::Syntax);
        }
        v = v * 10 + u32::from(c - b'0');
    }
    Ok(v)
}

fn expect(b: &[u8], at: usize, c: u8) -> Result<(), TsError> {
    if b.get(at) == Some(&c) {
        Ok(())
    } else {
        Err(TsError::Syntax)
    }
}

fn is_leap(y: u32) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in_month(y: u32, m: u32) -> u32 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Inverse of [`days_from_civil`].
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iso(s: &str) -> Result<String, TsError> {
        parse_rfc3339(s).map(isoformat)
    }

    #[test]
    fn utc_round_trips_in_python_form() {
        assert_eq!(
            iso("2026-07-16T09:00:00Z").unwrap(),
            "2026-07-16T09:00:00+00:00"
        );
        assert_eq!(
            iso("2026-07-16T09:00:00.1Z").unwrap(),
            "2026-07-16T09:00:00.100000+00:00"
        );
        assert_eq!(
            iso("2026-07-16t09:00:00.000001z").unwrap(),
            "2026-07-16T09:00:00.000001+00:00"
        );
        assert_eq!(
            iso("2026-07-16 09:00:00.000000+00:00").unwrap(),
            "2026-07-16T09:00:00+00:00"
        );
    }

    #[test]
    fn offsets_normalise_to_the_same_instant() {
        let z = parse_rfc3339("2026-12-31T23:30:00Z").unwrap();
        assert_eq!(parse_rfc3339("2027-01-01T01:30:00+02:00"), Ok(z));
        assert_eq!(parse_rfc3339("2026-12-31T18:00:00-05:30"), Ok(z));
        assert_eq!(isoformat(z), "2026-12-31T23:30:00+00:00");
    }

    #[test]
    fn nanoseconds_truncate_to_microseconds() {
        assert_eq!(
            iso("2026-07-16T09:00:00.123456789Z").unwrap(),
            "2026-07-16T09:00:00.123456+00:00"
        );
        assert_eq!(iso("2026-07-16T09:00:00.1234567891Z"), Err(TsError::Syntax));
    }

    #[test]
    fn epoch_and_range_edges() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Ok(0));
        assert_eq!(parse_rfc3339("0001-01-01T00:00:00Z"), Ok(MIN_MICROS));
        assert_eq!(parse_rfc3339("9999-12-31T23:59:59.999999Z"), Ok(MAX_MICROS));
        assert_eq!(
            parse_rfc3339("0001-01-01T00:30:00+01:00"),
            Err(TsError::YearOutOfRange)
        );
        assert_eq!(
            parse_rfc3339("9999-12-31T23:30:00-01:00"),
            Err(TsError::YearOutOfRange)
        );
        assert_eq!(isoformat(MIN_MICROS), "0001-01-01T00:00:00+00:00");
        assert_eq!(isoformat(-1), "1969-12-31T23:59:59.999999+00:00");
    }

    #[test]
    fn bad_inputs_name_their_reason() {
        use TsError::*;
        for (s, want) in [
            ("2026-07-16T09:00:00", NoOffset),
            ("2026-07-16T09:00:00.5", NoOffset),
            ("2026-02-30T09:00:00Z", OutOfRange),
            ("2027-02-29T09:00:00Z", OutOfRange),
            ("2026-07-16T24:00:00Z", OutOfRange),
            ("2026-07-16T09:60:00Z", OutOfRange),
            ("2026-07-16T09:00:60Z", OutOfRange),
            ("2026-07-16T09:00:00+24:00", OutOfRange),
            ("0000-01-01T00:00:00Z", OutOfRange),
            ("2026-07-16", Syntax),
            ("2026-07-16T09:00Z", Syntax),
            ("2026-07-16T09:00:00.Z", Syntax),
            ("2026-07-16T09:00:00+0200", Syntax),
            ("2026-07-16T09:00:00 Z", Syntax),
            ("2026-07-16T09:00:00Z ", Syntax),
            ("2026-7-16T09:00:00Z", Syntax),
            ("+2026-07-16T09:00:00Z", Syntax),
            ("２026-07-16T09:00:00Z", Syntax),
            ("", Syntax),
        ] {
            assert_eq!(parse_rfc3339(s), Err(want), "{s}");
        }
        assert!(parse_rfc3339("2028-02-29T00:00:00Z").is_ok());
    }

    #[test]
    fn civil_conversion_agrees_over_four_centuries() {
        let mut days = days_from_civil(1900, 1, 1);
        for y in 1900..2300u32 {
            for m in 1..=12 {
                for d in 1..=days_in_month(y, m) {
                    assert_eq!(days_from_civil(i64::from(y), m, d), days);
                    assert_eq!(civil_from_days(days), (i64::from(y), m, d));
                    days += 1;
                }
            }
        }
    }
}
