//! The burst reader: a native burst body, a JSON array of readings or an object with
//! a `readings` array, straight into the core's raw readings ([`read_burst`]), each
//! reading `{device_id, seq, ts, fill_pct}` as the core defines it (docs/http-api.md
//! "Readings and rejections"). What the route `readings` plans
//! (`src/uplink/native.rs`) and [`Deduplicator::process_json`] processes.
//!
//! [`Deduplicator::process_json`]: super::dedup::Deduplicator::process_json

use super::error::Error;
use super::json::{self, number_scalar, Fault, Reader};
use super::reading::{RawBurst, RawReading, Scalar};

/// Reads a native burst body (`[reading, ...]` or `{"readings": [...]}`) into the
/// core's raw readings, by the body rules of every route (`json.rs`): what the route
/// `readings` plans and [`Deduplicator::process_json`] takes.
///
/// ```
/// use reconnect_dedupe::dedupe::burst::read_burst;
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
///
/// [`Deduplicator::process_json`]: super::dedup::Deduplicator::process_json
pub fn read_burst(body: &[u8]) -> Result<RawBurst<'_>, Error> {
    parse(body).map(RawBurst)
}

/// Parses a native burst straight into the core's raw readings (strings borrowed
/// from the body where they have no escapes), with the body rules of `json.rs`.
///
/// A member given twice inside a reading element rejects that reading
/// (`invalid_reading`, `member "fill_pct" appears twice`, with the JSON Pointer when
/// it is deeper than the element's own members); the element must still be JSON.
/// A member given twice anywhere else is `invalid_json`. Every value is read in
/// full, ignored members too; the body's shape is judged only once it is read.
///
/// # Errors
/// [`Error::InvalidJson`] when the body is not JSON; [`Error::InvalidBurst`] when
/// it is neither an array nor an object with a `readings` array.
fn parse(body: &[u8]) -> Result<Vec<RawReading<'_>>, Error> {
    let burst = |why: &str| Err(Error::InvalidBurst(why.into()));
    match json::read(body, shape)? {
        Shape::Array(readings) | Shape::Object(Some(Some(readings))) => Ok(readings),
        Shape::Object(Some(None)) => burst(r#""readings" must be an array"#),
        Shape::Object(None) => burst(r#"object has no "readings" array"#),
        Shape::Other => burst(r#"expected an array of readings or {"readings": [...]}"#),
    }
}

/// A JSON value as a burst: an array of readings; an object with its `readings`
/// member, `Some(None)` when that is not an array; or anything else.
enum Shape<'a> {
    Array(Vec<RawReading<'a>>),
    Object(Option<Option<Vec<RawReading<'a>>>>),
    Other,
}

fn shape<'a>(r: &mut Reader<'a>) -> Result<Shape<'a>, Fault> {
    match r.peek() {
        Some(b'[') => elements(r, None).map(Shape::Array),
        Some(b'{') => {
            let mut readings = None;
            r.object(|r, name| {
                readings = match (&*name, r.peek()) {
                    ("readings", Some(b'[')) => Some(Some(elements(r, Some("readings"))?)),
                    ("readings", _) => r.skip().map(|()| Some(None))?,
                    _ => return r.skip(),
                };
                Ok(())
            })?;
            Ok(Shape::Object(readings))
        }
        _ => r.skip().map(|()| Shape::Other),
    }
}

/// The elements of a burst array (`within`: the member that holds it, if any).
fn elements<'a>(r: &mut Reader<'a>, within: Option<&str>) -> Result<Vec<RawReading<'a>>, Fault> {
    let mut readings = Vec::new();
    r.array(|r, index| {
        readings.push(element(r, index, within)?);
        Ok(())
    })?;
    Ok(readings)
}

/// One element of a burst; not an object → rejected as `invalid_reading`.
fn element<'a>(
    r: &mut Reader<'a>,
    index: usize,
    within: Option<&str>,
) -> Result<RawReading<'a>, Fault> {
    if r.peek() != Some(b'{') {
        r.skip()?;
        return Ok(RawReading::default());
    }
    let mark = r.mark();
    let mut raw = RawReading {
        is_object: true,
        ..RawReading::default()
    };
    let read = r.object(|r, name| {
        let slot = match &*name {
            "device_id" => &mut raw.device_id,
            "seq" => &mut raw.seq,
            "ts" => &mut raw.ts,
            "fill_pct" => &mut raw.fill_pct,
            _ => return r.skip(),
        };
        *slot = Some(member(r)?);
        Ok(())
    });
    match read {
        Ok(()) => Ok(raw),
        Err(fault) if fault.is_duplicate() => {
            // This reading is rejected; the rest of the burst is read on.
            let why = if fault.is_in_this_object() {
                fault.what().to_owned()
            } else {
                let mut fault = fault.within(index);
                if let Some(m) = within {
                    fault = fault.within(m);
                }
                fault.describe(&[])
            };
            r.again(mark, Reader::skip)?;
            Ok(RawReading {
                is_object: true,
                repeated: Some(why),
                ..RawReading::default()
            })
        }
        Err(fault) => Err(fault),
    }
}

/// One member's value as the core's scalar; arrays and objects read in full.
fn member<'a>(r: &mut Reader<'a>) -> Result<Scalar<'a>, Fault> {
    Ok(match r.peek() {
        Some(b'"') => Scalar::Str(r.string()?),
        Some(b'-' | b'0'..=b'9') => number_scalar(r.number()?),
        Some(b'{' | b'[') => {
            r.skip()?;
            Scalar::Nested
        }
        _ => match r.value()? {
            json::Json::Null => Scalar::Null,
            _ => Scalar::Bool,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::parse;
    use crate::dedupe::error::Error;
    use crate::dedupe::reading::{RawReading, Scalar};
    use crate::dedupe::test_kit::{edit, R1};
    use serde::Deserialize;
    use serde_json::Value;

    /// The reader reads a body as parsing it into a `Value` did (the way this
    /// format was read before) wherever the body rules agree with serde_json's (no
    /// member twice, numbers within f64, no lone surrogate): per element what the
    /// core's visitor made of the element's `Value`, and the same error code.
    fn reads_like_a_value(body: &[u8]) {
        let got = parse(body);
        let text = String::from_utf8_lossy(body);
        let root: Value = match serde_json::from_slice(body) {
            Ok(root) => root,
            Err(e) => {
                let want = Error::from(e);
                return assert_eq!(got.map_err(|e| e.code()), Err(want.code()), "{text}");
            }
        };
        let elements = match &root {
            Value::Array(v) => Ok(v),
            Value::Object(m) => match m.get("readings") {
                Some(Value::Array(v)) => Ok(v),
                Some(_) => Err(r#""readings" must be an array"#),
                None => Err(r#"object has no "readings" array"#),
            },
            _ => Err(r#"expected an array of readings or {"readings": [...]}"#),
        };
        let want = elements
            .map(|v| {
                v.iter()
                    .map(|e| RawReading::deserialize(e).unwrap())
                    .collect()
            })
            .map_err(|why| Error::InvalidBurst(why.into()));
        // A number whose text is fractional but whose f64 is whole is `Fractional`
        // here (the reader keeps the text), `Float` through a `Value`.
        let as_float = |s: &mut Option<Scalar>| {
            if let Some(Scalar::Fractional(x)) = *s {
                *s = Some(Scalar::Float(x));
            }
        };
        let got = got.map(|mut rs: Vec<RawReading>| {
            for r in &mut rs {
                [&mut r.device_id, &mut r.seq, &mut r.ts, &mut r.fill_pct]
                    .into_iter()
                    .for_each(as_float);
            }
            rs
        });
        assert_eq!(got, want, "{text}");
    }

    #[test]
    fn the_reader_reads_what_a_value_read() {
        let deep = |n| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        let bodies = [
            r#"{"readings":3,"x":{"readings":4}}"#.into(),
            r#"{"readings":{"a":[1]}}"#.into(),
            r#"[{"device_id":[1,{"b":[2e99]}]}]"#.into(),
            r#"[{"device\u005fid":"a\u002db","se\u0071":-0,"ts":"\ud83d\uddd1"}]"#.into(),
            r#"[{"seq":18446744073709551615,"fill_pct":-0.0,"ts":[],"device_id":{}}]"#.into(),
            r#"[{"seq":-9223372036854775808,"fill_pct":1e-400,"ts":false}]"#.into(),
            r#"[3,null,"x",[{"device_id":"a"}],true,{"fill_pct":1e-5}]"#.into(),
            format!(r#"[{{"device_id":"a","x":{}}}]"#, deep(120)),
            format!(r#"[{{"device_id":"a","x":{}}}]"#, deep(130)),
            format!(r#"{{"x":{},"readings":[]}}"#, deep(130)),
            "[1] x".into(),
            "[1,]".into(),
            String::new(),
            "42".into(),
            "null".into(),
            r#""readings""#.into(),
            "{}".into(),
            include_str!("../../tests/vectors/keys.json").into(),
            include_str!("../../tests/vectors/rejections.json").into(),
        ];
        for body in &bodies {
            reads_like_a_value(body.as_bytes());
        }
        // Bytes that are not UTF-8: in an ignored member, and in a read one.
        reads_like_a_value(b"[{\"device_id\":\"a\",\"x\":\"\xff\"}]");
        reads_like_a_value(b"[{\"device_id\":\"\xc3\"}]");
    }

    /// The library's bulk path reads bodies by the same rules (contract items 12 and 15).
    #[test]
    fn process_json_reads_bodies_by_the_same_rules() {
        use crate::Deduplicator;
        let now = 1_784_192_411_204.0;
        let out = |body: &str| {
            let mut d = Deduplicator::default();
            d.process_json(body.as_bytes(), now, false)
                .map(|o| {
                    let rejected: Vec<_> = o.rejected.iter().map(|r| (r.index, r.code)).collect();
                    (o.unique.len(), rejected)
                })
                .map_err(|e| (e.code(), e.to_string()))
        };
        let r = |extra: &str| edit(R1, r#""fill_pct":10"#, &format!(r#""fill_pct":10,{extra}"#));
        assert_eq!(out(&format!("[{}]", r(r#""rssi":1e400"#))), Ok((1, vec![])));
        let seq = |v: &str| edit(R1, r#""seq":1"#, &format!(r#""seq":{v}"#));
        for v in [
            "1e400",
            "-1e400",
            "9007199254740992",
            "-9223372036854775808",
            "1e19",
        ] {
            assert_eq!(
                out(&format!("[{}]", seq(v))),
                Ok((0, vec![(0, "invalid_seq")])),
                "{v}"
            );
        }
        assert_eq!(
            out(&format!("[{},{R1}]", r(r#""fill_pct":90"#))),
            Ok((1, vec![(0, "invalid_reading")]))
        );
        assert_eq!(
            out(&format!(r#"{{"readings":[],"readings":[{R1}]}}"#)),
            Err((
                "invalid_json",
                r#"body is not valid JSON: member "readings" appears twice (at /readings)"#.into()
            ))
        );
        let lone = out(&format!("[{}]", r(r#""note":"\ud800""#))).unwrap_err();
        assert_eq!(lone.0, "invalid_json");
        assert!(lone.1.contains("lone surrogate"), "{}", lone.1);
    }
}
