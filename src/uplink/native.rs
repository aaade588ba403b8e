//! The native burst (route `readings`): a JSON array of readings, or an object
//! with a `readings` array, each reading `{device_id, seq, ts, fill_pct}` as the
//! core defines it (docs/http-api.md "Readings and rejections"). Nothing is filled in: no
//! envelope, no fallbacks, and no formatter hint on `missing_fill_pct`. The body is
//! read by the core's burst reader (`src/dedupe/burst.rs`, the one
//! `Deduplicator::process_json` reads with), so both take a body alike.

/// The format's name in messages.
pub(super) const LABEL: &str = "readings";

#[cfg(test)]
mod tests {
    use super::super::test_kit::{assert_maps, plan_err, plan_of, rejections, R1};
    use super::super::{plan, FieldNames, Format};
    use crate::dedupe::key::idempotency_key;
    use crate::dedupe::reading::parse_reading;
    use serde_json::{json, Value};

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

    #[test]
    fn a_member_twice_in_a_native_reading_rejects_that_reading() {
        let twice =
            r#"{"device_id":"a","seq":2,"ts":"2026-07-16T09:00:00Z","fill_pct":10,"fill_pct":90}"#;
        for body in [
            format!("[{R1},{twice}]"),
            format!(r#"{{"readings":[{R1},{twice}]}}"#),
        ] {
            let p = plan_of(Format::Readings, &body);
            assert_eq!(p.devices[0].readings.len(), 1, "{body}");
            assert_eq!(
                rejections(&p),
                vec![(1, "invalid_reading", r#"member "fill_pct" appears twice"#)]
            );
            assert_eq!(p.rejected[0].rejection.field, "reading");
            assert_eq!(p.rejected[0].device_id, None);
        }
        // Any member: an ignored one, one spelled with an escape, one inside a nested value.
        for (reading, message) in [
            (
                r#"{"device_id":"a","rssi":1,"rssi":1}"#,
                r#"member "rssi" appears twice"#,
            ),
            (
                r#"{"device_id":"a","seq":1,"se\u0071":1}"#,
                r#"member "seq" appears twice"#,
            ),
            (
                r#"{"device_id":"a","meta":[{"x/y":1,"x/y":2}]}"#,
                r#"member "x/y" appears twice (at /0/meta/0/x~1y)"#,
            ),
        ] {
            let p = plan_of(Format::Readings, &format!("[{reading}]"));
            assert_eq!(
                rejections(&p),
                vec![(0, "invalid_reading", message)],
                "{reading}"
            );
        }
    }

    #[test]
    fn a_member_twice_outside_a_native_reading_is_invalid_json_naming_where() {
        for (body, message) in [
            (
                format!(r#"{{"readings":[{R1}],"readings":[]}}"#),
                r#"body is not valid JSON: member "readings" appears twice (at /readings)"#,
            ),
            (
                format!(r#"{{"readings":[],"readings":[{R1}]}}"#),
                r#"body is not valid JSON: member "readings" appears twice (at /readings)"#,
            ),
            (
                format!(r#"{{"x":{{"a~b":1,"a~b":2}},"readings":[{R1}]}}"#),
                r#"body is not valid JSON: member "a~b" appears twice (at /x/a~0b)"#,
            ),
        ] {
            let e = plan_err(Format::Readings, &body);
            assert_eq!(
                (e.code(), e.to_string().as_str()),
                ("invalid_json", message)
            );
        }
    }
}
