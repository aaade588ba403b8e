//! What the per-server tests share, and the tests of the shared parts: the
//! format table, whole-body errors, the plan's JSON shape.

use super::{envelope, native, plan, scalar, uplink_readings, FieldNames, Format, Plan};
use crate::dedupe::key::idempotency_key;
use crate::dedupe::reading::{parse_reading, RawReading, Scalar};
use serde::Deserialize;
use serde_json::{json, Value};

pub(super) const TTS: &str =
    include_str!("../../tests/fixtures/webhooks/tts-v3-uplink-docs-example.json");
pub(super) const TTS_WITH_FILL: &str =
    include_str!("../../tests/fixtures/webhooks/with-fill/tts-v3-uplink.json");
pub(super) const CHIRPSTACK: &str =
    include_str!("../../tests/fixtures/webhooks/chirpstack-v4-up-docs-example.json");
pub(super) const CHIRPSTACK_WITH_FILL: &str =
    include_str!("../../tests/fixtures/webhooks/with-fill/chirpstack-v4-up.json");
pub(super) const HELIUM: &str =
    include_str!("../../tests/fixtures/webhooks/helium-console-uplink-docs-example.json");
pub(super) const LORIOT: &str =
    include_str!("../../tests/fixtures/webhooks/loriot-rx-docs-example.json");

pub(super) fn plan_of(format: Format, body: &str) -> Plan {
    plan(format, body.as_bytes(), &FieldNames::default(), 10).unwrap()
}

/// The sample with `extra` merged into the object at `at` (created if absent).
pub(super) fn with(body: &str, at: &[&str], extra: Value) -> String {
    let mut root: Value = serde_json::from_str(body).unwrap();
    let mut node = &mut root;
    for k in at {
        node = node
            .as_object_mut()
            .unwrap()
            .entry(k.to_string())
            .or_insert(json!({}));
    }
    for (k, v) in extra.as_object().unwrap() {
        node[k] = v.clone();
    }
    root.to_string()
}

/// The body's readings are, member for member, what the core's visitor makes of
/// the `expected` JSON values (the objects the mapping used to build).
pub(super) fn assert_maps(format: Format, body: &str, expected: &[Value]) {
    let root: Value = serde_json::from_str(body).unwrap();
    let want: Vec<RawReading> = expected
        .iter()
        .map(|v| RawReading::deserialize(v).unwrap())
        .collect();
    if format == Format::Readings {
        assert_eq!(native::parse(body.as_bytes()).unwrap(), want);
    } else {
        let names = FieldNames::default();
        let env = envelope(format, &root).unwrap();
        let got: Vec<RawReading> = uplink_readings(&env, &names).collect();
        assert_eq!(got, want);
    }
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
        assert_eq!(
            r.rejection.message,
            "fill_pct is missing: the decoded payload has no \"fill_pct\"; compute it \
             in the network server's payload formatter"
        );
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
        let too_many = json!({"uplink_message": {"decoded_payload": {"readings": [1, 2, 3]}},
            "object": {"readings": [1, 2, 3]}, "decoded": {"readings": [1, 2, 3],
            "payload": {"readings": [1, 2, 3]}}});
        assert_eq!(
            err(format, too_many.to_string().as_bytes()).code(),
            "too_many_readings"
        );
    }
    assert_eq!(
        err(Format::ChirpStack, b"7").to_string(),
        "body is not a burst: a ChirpStack uplink must be a JSON object"
    );
    assert_eq!(err(Format::Tts, b"{}").code(), "invalid_burst");
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
        assert_eq!(scalar(&v), Scalar::deserialize(&v).unwrap(), "{v}");
    }
}

/// The JSON text of a plan: exactly the documented members, in the documented order.
#[test]
fn the_plan_json_is_the_documented_shape() {
    let one = r#"[{"device_id":"bin-A17","seq":41,"ts":"2026-07-16T09:00:00Z","fill_pct":62.5}]"#;
    assert_eq!(
        plan_of(Format::Readings, one).to_json(),
        r#"{"received":1,"devices":[{"device_id":"bin-A17","readings":[{"index":0,"key":"bin-A17:41:76c73ee2946cc70e","seq":41,"ts":"2026-07-16T09:00:00+00:00","fill_pct":62.5}]}],"rejected":[]}"#
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
            "received": 6,
            "devices": [
                {"device_id": "b", "readings": [
                    {"index": 0, "key": key(0), "seq": 2,
                     "ts": "2026-07-16T09:00:00.500000+00:00", "fill_pct": 0.0},
                    {"index": 5, "key": key(2), "seq": -4,
                     "ts": "2026-07-16T09:00:00.000001+00:00", "fill_pct": 1e-5}]},
                {"device_id": "a", "readings": [
                    {"index": 1, "key": key(1), "seq": 1,
                     "ts": "2026-07-16T09:00:00+00:00", "fill_pct": 100.0}]}
            ],
            "rejected": [
                {"index": 2, "field": "fill_pct", "code": "invalid_fill_pct",
                 "message": "fill_pct must be between 0 and 100", "device_id": "b"},
                {"index": 3, "field": "device_id", "code": "invalid_device_id",
                 "message": "device_id must be a string", "device_id": null},
                {"index": 4, "field": "reading", "code": "invalid_reading",
                 "message": "a reading must be a JSON object", "device_id": null}
            ]
        })
    );
    // Integral fill levels keep their `.0`, as serde_json writes an f64.
    assert!(text.contains(r#""fill_pct":0.0}"#) && text.contains(r#""fill_pct":100.0}"#));
}
