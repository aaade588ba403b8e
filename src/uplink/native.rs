//! The native burst (route `readings`): a JSON array of readings, or an object
//! with a `readings` array, each reading `{device_id, seq, ts, fill_pct}` as the
//! core defines it (README "Readings and rejections"). Nothing is filled in: no
//! envelope, no fallbacks, and no formatter hint on `missing_fill_pct`.

use super::parse_body;
use crate::dedupe::error::{Error, Field};
use crate::dedupe::reading::{RawReading, Scalar};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// The format's name in messages.
pub(super) const LABEL: &str = "readings";

/// Parses a native burst straight into the core's raw readings (strings borrowed
/// from the body where they have no escapes).
///
/// It reads exactly what parsing into a `serde_json::Value` read, without building
/// one: every value is parsed in full, ignored members too (a number out of range
/// or a lone surrogate anywhere is `invalid_json`), a member given twice counts
/// once, the last one, and the body's shape is judged only once it parsed.
///
/// # Errors
/// [`Error::InvalidJson`] when the body is not JSON; [`Error::InvalidBurst`] when
/// it is neither an array nor an object with a `readings` array.
pub(super) fn parse(body: &[u8]) -> Result<Vec<RawReading<'_>>, Error> {
    let burst = |why: &str| Err(Error::InvalidBurst(why.into()));
    match parse_body(body)? {
        Shape::Array(readings) | Shape::Object(Some(Some(readings))) => Ok(readings),
        Shape::Object(Some(None)) => burst(r#""readings" must be an array"#),
        Shape::Object(None) => burst(r#"object has no "readings" array"#),
        Shape::Other => burst(r#"expected an array of readings or {"readings": [...]}"#),
    }
}

/// A JSON value as a burst: an array of readings; an object with its last
/// `readings` member, `Some(None)` when that is not an array; or anything else.
enum Shape<'a> {
    Array(Vec<RawReading<'a>>),
    Object(Option<Option<Vec<RawReading<'a>>>>),
    Other,
}

/// One element of a burst.
struct Element<'a>(RawReading<'a>);

/// One member's value as the core's scalar; arrays and objects parsed in full.
struct Member<'a>(Scalar<'a>);

/// Any value, parsed in full and dropped.
struct Skip;

/// A member name: one of a reading's four, `readings`, or another.
enum Key {
    Field(Field),
    Readings,
    Other,
}

/// Visitor methods that take every JSON scalar as `$value`.
macro_rules! any_scalar_is {
    ($value:expr) => {
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok($value)
        }
    };
}

/// `Deserialize` through `deserialize_any` with a unit-struct visitor.
macro_rules! any_value_with {
    ($type:ident, $visitor:ident) => {
        impl<'de> Deserialize<'de> for $type<'de> {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_any($visitor)
            }
        }
        struct $visitor;
    };
}

any_value_with!(Shape, ShapeVisitor);
any_value_with!(Element, ElementVisitor);
any_value_with!(Member, MemberVisitor);

fn expecting(f: &mut fmt::Formatter) -> fmt::Result {
    f.write_str("any JSON value")
}

fn elements<'de, A: SeqAccess<'de>>(mut a: A) -> Result<Vec<RawReading<'de>>, A::Error> {
    let mut readings = Vec::new();
    while let Some(Element(raw)) = a.next_element()? {
        readings.push(raw);
    }
    Ok(readings)
}

fn skip_elements<'de, A: SeqAccess<'de>>(mut a: A) -> Result<(), A::Error> {
    while a.next_element::<Skip>()?.is_some() {}
    Ok(())
}

fn skip_entries<'de, A: MapAccess<'de>>(mut a: A) -> Result<(), A::Error> {
    while a.next_entry::<Skip, Skip>()?.is_some() {}
    Ok(())
}

impl<'de> Visitor<'de> for ShapeVisitor {
    type Value = Shape<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        expecting(f)
    }
    any_scalar_is!(Shape::Other);
    fn visit_seq<A: SeqAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
        elements(a).map(Shape::Array)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
        let mut readings = None;
        while let Some(key) = a.next_key()? {
            if let Key::Readings = key {
                // The last `readings` stands, as in a `Value` object.
                readings = Some(match a.next_value()? {
                    Shape::Array(v) => Some(v),
                    Shape::Object(_) | Shape::Other => None,
                });
            } else {
                a.next_value::<Skip>()?;
            }
        }
        Ok(Shape::Object(readings))
    }
}

impl<'de> Visitor<'de> for ElementVisitor {
    type Value = Element<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        expecting(f)
    }
    // Not an object: rejected as `invalid_reading`.
    any_scalar_is!(Element(RawReading::default()));
    fn visit_seq<A: SeqAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
        skip_elements(a).map(|()| Element(RawReading::default()))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
        let mut raw = RawReading {
            is_object: true,
            ..RawReading::default()
        };
        while let Some(key) = a.next_key()? {
            let slot = match key {
                Key::Field(Field::DeviceId) => &mut raw.device_id,
                Key::Field(Field::Seq) => &mut raw.seq,
                Key::Field(Field::Ts) => &mut raw.ts,
                Key::Field(Field::FillPct) => &mut raw.fill_pct,
                Key::Readings | Key::Other => {
                    a.next_value::<Skip>()?;
                    continue;
                }
            };
            // The last of a repeated member stands, as in a `Value` object.
            *slot = Some(a.next_value::<Member<'de>>()?.0);
        }
        Ok(Element(raw))
    }
}

impl<'de> Visitor<'de> for MemberVisitor {
    type Value = Member<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        expecting(f)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Member(Scalar::Null))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Member(Scalar::Bool))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Member(Scalar::Int(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        // Beyond i64 a float, as the core's visitor makes it.
        Ok(Member(
            i64::try_from(v).map_or(Scalar::Float(v as f64), Scalar::Int),
        ))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Member(Scalar::Float(v)))
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Member(Scalar::Str(Cow::Borrowed(v))))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Member(Scalar::Str(Cow::Owned(v.to_owned()))))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
        skip_elements(a).map(|()| Member(Scalar::Nested))
    }
    fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
        skip_entries(a).map(|()| Member(Scalar::Nested))
    }
}

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Skip;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                expecting(f)
            }
            any_scalar_is!(Skip);
            fn visit_seq<A: SeqAccess<'de>>(self, a: A) -> Result<Skip, A::Error> {
                skip_elements(a).map(|()| Skip)
            }
            fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<Skip, A::Error> {
                skip_entries(a).map(|()| Skip)
            }
        }
        // Not `deserialize_ignored_any`: that skips numbers and escapes unchecked.
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E>(self, v: &str) -> Result<Key, E> {
                const FIELDS: [Field; 4] = [Field::DeviceId, Field::Seq, Field::Ts, Field::FillPct];
                Ok(match FIELDS.into_iter().find(|f| f.name() == v) {
                    Some(field) => Key::Field(field),
                    None if v == "readings" => Key::Readings,
                    None => Key::Other,
                })
            }
        }
        d.deserialize_str(V)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{assert_maps, plan_of};
    use super::super::{plan, FieldNames, Format};
    use super::parse;
    use crate::dedupe::error::Error;
    use crate::dedupe::key::idempotency_key;
    use crate::dedupe::reading::{parse_reading, RawReading};
    use serde::Deserialize;
    use serde_json::{json, Value};

    /// The visitor reads a body as parsing it into a `Value` did (the way this
    /// format was read before): the same errors, and per element what the core's
    /// visitor made of the element's `Value`.
    fn reads_like_a_value(body: &[u8]) {
        let got = parse(body);
        let text = String::from_utf8_lossy(body);
        let root: Value = match serde_json::from_slice(body) {
            Ok(root) => root,
            Err(e) => return assert_eq!(got, Err(Error::from(e)), "{text}"),
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
        assert_eq!(got, want, "{text}");
    }

    #[test]
    fn the_visitor_reads_what_a_value_read() {
        let deep = |n| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        let bodies = [
            r#"[{"device_id":"a","seq":1,"seq":2,"ts":"2026-07-16T09:00:00Z","fill_pct":1}]"#
                .into(),
            r#"{"readings":[{"device_id":"a"}],"readings":[]}"#.into(),
            r#"{"readings":3,"readings":[{"seq":1}],"x":{"readings":4}}"#.into(),
            r#"{"readings":[{}],"readings":{"a":[1]}}"#.into(),
            r#"[{"device_id":"a","rssi":1e400}]"#.into(),
            r#"[{"device_id":"a","rssi":"\ud800"}]"#.into(),
            r#"[{"device_id":[1,{"b":[2e999]}]}]"#.into(),
            r#"[{"device\u005fid":"a\u002db","se\u0071":-0,"ts":"\ud83d\uddd1"}]"#.into(),
            r#"[{"seq":18446744073709551615,"fill_pct":-0.0,"ts":[],"device_id":{}}]"#.into(),
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
            .map(|d| {
                let indices: Vec<_> = d.readings.iter().map(|r| r.index).collect();
                (d.device_id.as_str(), indices)
            })
            .collect();
        assert_eq!(ids, vec![("b", vec![0, 3]), ("a", vec![1])]);
        assert_eq!(p.rejected[0].rejection.code, "invalid_fill_pct");
        assert_eq!(p.rejected[0].device_id.as_deref(), Some("b"));
        assert!(!p.rejected[0].rejection.message.contains("formatter"));
    }

    #[test]
    fn members_are_taken_as_they_are() {
        assert_maps(
            Format::Readings,
            r#"[{"device_id":"d","seq":"41","ts":1,"fill_pct":null,"rssi":-97},7,[1],
                {"device_id":{"x":1},"seq":1.5,"fill_pct":1e300}]"#,
            &[
                json!({"device_id": "d", "seq": "41", "ts": 1, "fill_pct": null}),
                json!(7),
                json!([1]),
                json!({"device_id": {"x": 1}, "seq": 1.5, "fill_pct": 1e300}),
            ],
        );
        let p = plan_of(Format::Readings, r#"[3, {"seq": 1}, {"device_id": 5}]"#);
        let got: Vec<_> = p
            .rejected
            .iter()
            .map(|r| (r.rejection.code, r.device_id.as_deref()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("invalid_reading", None),
                ("missing_device_id", None),
                ("invalid_device_id", None)
            ]
        );
    }

    /// Today's rule, kept: a member given twice counts once, the last one (the
    /// core's own burst parser rejects such a reading instead).
    #[test]
    fn a_member_given_twice_counts_once_the_last() {
        let p = plan_of(
            Format::Readings,
            r#"[{"device_id":"a","seq":1,"seq":2,"ts":"2026-07-16T09:00:00Z","fill_pct":1}]"#,
        );
        assert_eq!(p.devices[0].readings[0].seq, 2);
    }

    /// Every shared key vector, routed through the native format, gets the key
    /// `idempotency_key` gives the same reading.
    #[test]
    fn plan_keys_are_the_vector_keys() {
        let file: Value =
            serde_json::from_str(include_str!("../../tests/vectors/keys.json")).unwrap();
        let vectors = file["vectors"].as_array().unwrap();
        let readings: Vec<&Value> = vectors.iter().map(|v| &v["reading"]).collect();
        let body = json!({ "readings": readings }).to_string();
        let p = plan(
            Format::Readings,
            body.as_bytes(),
            &FieldNames::default(),
            100,
        )
        .unwrap();
        assert_eq!(p.received, vectors.len());
        assert!(p.rejected.is_empty());
        let mut seen = 0;
        for group in &p.devices {
            for r in &group.readings {
                let v = &vectors[r.index];
                let text = v["reading"].to_string();
                let one = parse_reading(&text).unwrap();
                assert_eq!(r.key, idempotency_key(&one), "{}", v["name"]);
                assert_eq!(r.key, v["key"].as_str().unwrap(), "{}", v["name"]);
                assert_eq!((r.seq, r.ts, r.fill_pct), (one.seq, one.ts, one.fill_pct));
                assert_eq!(group.device_id, one.device_id);
                seen += 1;
            }
        }
        assert_eq!(seen, vectors.len());
    }

    #[test]
    fn whole_body_errors_have_codes() {
        let code = |b: &str| {
            plan(Format::Readings, b.as_bytes(), &FieldNames::default(), 2)
                .unwrap_err()
                .code()
        };
        assert_eq!(code("{}"), "invalid_burst");
        assert_eq!(code("42"), "invalid_burst");
        assert_eq!(code(r#"{"readings":3}"#), "invalid_burst");
        assert_eq!(code("[1,2,3]"), "too_many_readings");
        assert_eq!(code("[1,2,"), "invalid_json");
    }
}
