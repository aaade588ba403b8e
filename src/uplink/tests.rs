//! What the per-server tests share, and the tests of the shared parts: the
//! format table, whole-body errors, the plan's JSON shape.

use super::{
    json, message, native, plan, scalar, uplink_readings, FieldNames, Format, Message, Plan,
};
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
    let want: Vec<RawReading> = expected
        .iter()
        .map(|v| RawReading::deserialize(v).unwrap())
        .collect();
    if format == Format::Readings {
        assert_eq!(native::parse(body.as_bytes()).unwrap(), want);
    } else {
        let names = FieldNames::default();
        let root = json::read(body.as_bytes(), json::Reader::value).unwrap();
        let Ok(Message::Uplink(env)) = message(format, &root) else {
            panic!("not an uplink")
        };
        let got: Vec<RawReading> = uplink_readings(format, &env, &names)
            .into_iter()
            .map(|(raw, _)| raw)
            .collect();
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
    let one = r#"[{"device_id":"bin-A17","seq":41,"ts":"2026-07-16T09:00:00Z","fill_pct":62.5}]"#;
    assert_eq!(
        plan_of(Format::Readings, one).to_json(),
        r#"{"event":"readings","ignored":false,"simulated":false,"received":1,"devices":[{"device_id":"bin-A17","readings":[{"index":0,"key":"bin-A17:41:76c73ee2946cc70e","seq":41,"ts":"2026-07-16T09:00:00+00:00","fill_pct":62.5,"frame":null}]}],"rejected":[]}"#
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
            ]
        })
    );
    // Integral fill levels keep their `.0`, as serde_json writes an f64.
    assert!(text.contains(r#""fill_pct":0.0,"#) && text.contains(r#""fill_pct":100.0,"#));
}

// ---- Bodies: a member given twice, numbers out of range, lone surrogates, depth ----
// (issue 9, contract item 12). One rule for every route: a member given twice inside a
// native burst's reading element rejects that reading; anywhere else it is the whole
// body's `invalid_json`. Never first- or last-wins.

/// `body` with `from` (which must occur exactly once) replaced by `to`.
fn edit(body: &str, from: &str, to: &str) -> String {
    assert_eq!(body.matches(from).count(), 1, "{from:?}");
    body.replacen(from, to, 1)
}

pub(super) fn plan_err(format: Format, body: &str) -> crate::dedupe::error::Error {
    plan(format, body.as_bytes(), &FieldNames::default(), 10).unwrap_err()
}

/// The rejections of a plan as (index, code, message).
fn rejections(p: &Plan) -> Vec<(usize, &'static str, &str)> {
    p.rejected
        .iter()
        .map(|r| {
            (
                r.rejection.index,
                r.rejection.code,
                r.rejection.message.as_str(),
            )
        })
        .collect()
}

const R1: &str = r#"{"device_id":"a","seq":1,"ts":"2026-07-16T09:00:00Z","fill_pct":10}"#;

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

/// Members merged into a body at a place (`with`).
type Change = (Vec<&'static str>, Value);

/// Per network server with a decoded payload: a body with a fill level and no `ts`,
/// a later receive time, and the members that make another frame. (LORIOT's frames:
/// `loriot.rs`.)
fn frame_cases() -> Vec<(Format, String, Change, Vec<Change>)> {
    let fill = json!({"fill_pct": 40});
    vec![
        (
            Format::Tts,
            with(TTS, &["uplink_message", "decoded_payload"], fill.clone()),
            (
                vec!["uplink_message"],
                json!({"received_at": "2020-02-12T15:16:45.1Z"}),
            ),
            vec![
                (vec!["uplink_message"], json!({"f_cnt": 2})),
                (vec!["uplink_message"], json!({"frm_payload": "AAE="})),
                (vec!["uplink_message"], json!({"f_port": 2})),
                (
                    vec!["uplink_message"],
                    json!({"session_key_id": "AXBSAAAAAAAAAAAAAAAAAA=="}),
                ),
            ],
        ),
        (
            Format::ChirpStack,
            with(CHIRPSTACK, &["object"], fill.clone()),
            (
                vec![],
                json!({"time": "2022-07-18T09:35:15.775023242+00:00"}),
            ),
            vec![
                (vec![], json!({"fCnt": 9})),
                (vec![], json!({"data": "AAE="})),
                (vec![], json!({"fPort": 2})),
                (vec![], json!({"devAddr": "00000001"})),
            ],
        ),
        (
            Format::Helium,
            with(HELIUM, &["decoded", "payload"], fill),
            (vec![], json!({"reported_at": 15868685462234_i64})),
            vec![
                (vec![], json!({"fcnt": 20})),
                (vec![], json!({"payload": "AAE="})),
                (vec![], json!({"port": 2})),
                (vec![], json!({"devaddr": "00000001"})),
            ],
        ),
    ]
}

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
    let bad =
        r#"[{"device_id":"70b3d52dd600035a","seq":1.5,"ts":"2026-07-16T09:00:00Z","fill_pct":1}]"#;
    assert_eq!(
        plan_of(Format::Readings, bad).rejected[0]
            .device_id
            .as_deref(),
        Some("70B3D52DD600035A")
    );
}

#[test]
fn json_pointers_read_nested_decoder_output() {
    let names = FieldNames::new(
        Some("/counter/value"),
        Some("/time"),
        Some("/level/fill_pct"),
    )
    .unwrap();
    let body = with(
        CHIRPSTACK,
        &["object"],
        json!({"level": {"fill_pct": 62}, "counter": {"value": 7}, "time": "2026-07-16T09:00:00Z"}),
    );
    let p = plan(Format::ChirpStack, body.as_bytes(), &names, 10).unwrap();
    let r = &p.devices[0].readings[0];
    assert_eq!((r.seq, r.fill_pct, r.frame.clone()), (7, 62.0, None));
    // The hint names the configured path.
    let p = plan(Format::ChirpStack, CHIRPSTACK.as_bytes(), &names, 10).unwrap();
    assert!(
        p.rejected[0]
            .rejection
            .message
            .contains("no \"/level/fill_pct\""),
        "{}",
        p.rejected[0].rejection.message
    );
}
