//! What the per-server tests share, and the tests of the shared parts: the
//! format table, whole-body errors, the plan's JSON shape.

use super::{message, plan, scalar, uplink_readings, FieldNames, Format, Message, Plan};
use crate::dedupe::burst::read_burst;
use crate::dedupe::json;
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
        assert_eq!(read_burst(body.as_bytes()).unwrap().0, want);
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
        r#"{"event":"readings","ignored":false,"simulated":false,"received":1,"devices":[{"device_id":"bin-A17","readings":[{"index":0,"key":"bin-A17:41:76c73ee2946cc70e","seq":41,"ts":"2026-07-16T09:00:00+00:00","fill_pct":62.5,"frame":null}]}],"rejected":[],"raw":null}"#
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
            ],
            "raw": null
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

// ---- The raw payload of an uplink without a fill level (`Plan::raw`, raw.rs) ----

const TTS_UPLINK: &str = include_str!("../../tests/fixtures/webhooks/tts/uplink_message.json");
const CHIRPSTACK_UP: &str = include_str!("../../tests/fixtures/webhooks/chirpstack/up.json");
const HELIUM_UPLINK: &str = include_str!("../../tests/fixtures/webhooks/helium/uplink.json");
const LORIOT_RX: &str = include_str!("../../tests/fixtures/webhooks/loriot/rx.json");
const LORIOT_GW: &str = include_str!("../../tests/fixtures/webhooks/loriot/gw.json");

/// The EM500-UDL history vector of tests/vectors/devices/milesight-em500-udl.json
/// (two `20 CE` records), and its bytes in base64.
const EM500_HISTORY_HEX: &str = "20ce9e744663d20420ce3a824663d004";
const EM500_HISTORY_B64: &str = "IM6edEZj0gQgzjqCRmPQBA==";

/// The plan's `raw` as JSON (`null` when none).
fn raw_of(format: Format, body: &str) -> Value {
    serde_json::to_value(&plan_of(format, body).raw).unwrap()
}

/// The TTS uplink fixture carrying the EM500-UDL history vector on port 85, as a
/// device registered from the TTN device repository sends it.
fn tts_em500() -> String {
    let body = with(
        TTS_UPLINK,
        &["uplink_message"],
        json!({"frm_payload": EM500_HISTORY_B64, "f_port": 85}),
    );
    with(
        &body,
        &["uplink_message", "version_ids"],
        json!({"brand_id": "milesight-iot", "model_id": "em500-udl"}),
    )
}

#[test]
fn the_history_vector_in_base64_is_its_hex() {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(EM500_HISTORY_B64)
        .unwrap();
    let vectors: Value = serde_json::from_str(include_str!(
        "../../tests/vectors/devices/milesight-em500-udl.json"
    ))
    .unwrap();
    let listed = vectors["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .any(|v| v["hex"].as_str().unwrap().to_lowercase() == EM500_HISTORY_HEX);
    assert!(listed, "the EM500 history vector");
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, EM500_HISTORY_HEX);
}

#[test]
fn a_tts_uplink_without_a_fill_level_hands_on_its_raw_payload_and_codec() {
    let body = tts_em500();
    let p = plan_of(Format::Tts, &body);
    assert_eq!(
        serde_json::to_value(&p.raw).unwrap(),
        json!({"device_id": "0004A30B001C0530", "f_port": 85, "payload": EM500_HISTORY_HEX,
               "received_at": "2020-02-12T15:15:45.789585+00:00", "f_cnt": 1,
               "frame": "78f2a1fe989df34e", "codec_hint": "milesight-iot/em500-udl",
               "config_hint": {}})
    );
    // The rejected row stays as it is, and nothing is planned.
    assert!(p.devices.is_empty());
    assert_eq!(
        rejections(&plan_of(Format::Tts, &body)),
        rejections(&plan_of(Format::Tts, TTS_UPLINK))
    );
    assert_eq!(p.rejected[0].rejection.code, "missing_fill_pct");
    // The JSON text: the plan's last member.
    assert!(p.to_json().ends_with(
        r#""raw":{"device_id":"0004A30B001C0530","f_port":85,"payload":"20ce9e744663d20420ce3a824663d004","received_at":"2020-02-12T15:15:45.789585+00:00","f_cnt":1,"frame":"78f2a1fe989df34e","codec_hint":"milesight-iot/em500-udl","config_hint":{}}}"#
    ), "{}", p.to_json());
}

#[test]
fn the_raw_payload_is_what_the_codec_reads() {
    use crate::codec::{Codec, DeviceConfig, DeviceState, FrameMeta};
    use crate::uplink::payload_readings;
    use std::num::NonZeroU32;
    let raw = plan_of(Format::Tts, &tts_em500()).raw.unwrap();
    let codec = Codec::from_id(raw.codec_hint.unwrap()).unwrap();
    let bytes: Vec<u8> = (0..raw.payload.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&raw.payload[i..i + 2], 16).unwrap())
        .collect();
    let config = DeviceConfig {
        codec: None,
        bin_depth_mm: NonZeroU32::new(1500).unwrap(),
        offset_mm: 0,
        reporting_period_s: None,
    };
    let meta = FrameMeta {
        received_at: raw.received_at,
        f_cnt: raw.f_cnt,
        frame: Some(u64::from_str_radix(&raw.frame, 16).unwrap()),
    };
    let got = payload_readings(
        &raw.device_id,
        codec,
        &config,
        raw.f_port,
        &bytes,
        &meta,
        DeviceState::default(),
    )
    .unwrap();
    let seqs: Vec<i64> = got.readings.iter().map(|r| r.seq).collect();
    assert_eq!(
        seqs,
        [1_665_561_758, 1_665_565_242],
        "one per history record"
    );
    assert!(got.rejected.is_empty());
    // Dated by the device's clock: no frame identity.
    assert!(got.readings.iter().all(|r| r.frame.is_none()));
}

#[test]
fn tts_hints_only_an_exact_known_codec_id() {
    let port = |b: &str| with(b, &["uplink_message"], json!({"f_port": 1}));
    // The fixture as the docs have it: no f_port, so no raw.
    assert_eq!(raw_of(Format::Tts, TTS_UPLINK), Value::Null);
    // With a port: its `gkHe`, and `the-things-products/the-things-uno` is no codec.
    let raw = raw_of(Format::Tts, &port(TTS_UPLINK));
    assert_eq!(
        (&raw["payload"], &raw["f_port"], &raw["codec_hint"]),
        (&json!("8241de"), &json!(1), &Value::Null)
    );
    for (brand, model) in [
        (json!("milesight-iot"), json!("EM500-UDL")),
        (json!("Milesight-IoT"), json!("em500-udl")),
        (json!("milesight-iot/em500-udl"), json!("")),
        (json!("milesight-iot"), json!(null)),
        (json!(7), json!("em500-udl")),
    ] {
        let b = with(
            &tts_em500(),
            &["uplink_message", "version_ids"],
            json!({"brand_id": brand, "model_id": model}),
        );
        assert_eq!(raw_of(Format::Tts, &b)["codec_hint"], Value::Null, "{b}");
    }
    for id in crate::codec::Codec::IDS {
        let (brand, model) = id.split_once('/').unwrap();
        let b = with(
            &tts_em500(),
            &["uplink_message", "version_ids"],
            json!({"brand_id": brand, "model_id": model}),
        );
        assert_eq!(raw_of(Format::Tts, &b)["codec_hint"], json!(id));
    }
    // A simulated uplink (no f_cnt) has one too, at frame 0.
    let sim: &str = include_str!("../../tests/fixtures/webhooks/tts/simulated_uplink.json");
    let raw = raw_of(Format::Tts, sim);
    assert_eq!(
        (&raw["f_cnt"], &raw["payload"]),
        (&json!(0), &json!("202c"))
    );
}

#[test]
fn an_uplink_with_a_fill_level_has_no_raw() {
    for (format, body) in [
        (Format::Tts, TTS_WITH_FILL.to_owned()),
        (Format::ChirpStack, CHIRPSTACK_WITH_FILL.to_owned()),
        (
            Format::Tts,
            with(
                &tts_em500(),
                &["uplink_message", "decoded_payload"],
                json!({"fill_pct": 5}),
            ),
        ),
        (
            Format::Helium,
            with(
                HELIUM_UPLINK,
                &["decoded"],
                json!({"payload": {"fill_pct": 5}}),
            ),
        ),
    ] {
        let p = plan_of(format, &body);
        assert!(!p.devices.is_empty());
        assert_eq!(p.raw, None, "{body}");
    }
    // One reading of a burst with a fill level is enough; another rejection for
    // another reason too.
    for readings in [
        json!([{"fill_pct": 5}, {"seq": 9}]),
        json!([{"fill_pct": 101}, {"seq": 9}]),
        json!([{"seq": "x"}]),
        json!([]),
    ] {
        let b = with(CHIRPSTACK_UP, &["object"], json!({ "readings": readings }));
        assert_eq!(raw_of(Format::ChirpStack, &b), Value::Null, "{readings}");
    }
    let b = with(
        CHIRPSTACK_UP,
        &["object"],
        json!({"readings": [{"seq": 8}, {"seq": 9}]}),
    );
    assert_eq!(raw_of(Format::ChirpStack, &b)["payload"], json!("aa"));
    // No device, no raw.
    let b = with(CHIRPSTACK_UP, &["deviceInfo"], json!({"devEui": ""}));
    assert_eq!(raw_of(Format::ChirpStack, &b), Value::Null);
    // A native burst never has one; nor does an acknowledged event.
    assert_eq!(
        raw_of(Format::Readings, r#"[{"device_id":"a","seq":1}]"#),
        Value::Null
    );
    let join: &str = include_str!("../../tests/fixtures/webhooks/tts/join_accept.json");
    assert_eq!(raw_of(Format::Tts, join), Value::Null);
}

#[test]
fn chirpstack_names_its_codec_and_bin_in_tags_or_the_profile_name() {
    let raw = raw_of(Format::ChirpStack, CHIRPSTACK_UP);
    assert_eq!(
        raw,
        json!({"device_id": "0101010101010101", "f_port": 1, "payload": "aa",
               "received_at": "2022-07-18T09:34:15.775023+00:00", "f_cnt": 0,
               "frame": "886722ea6b2e38d9", "codec_hint": null, "config_hint": {}})
    );
    let tagged = |tags: Value, profile: &str| {
        let b = with(
            CHIRPSTACK_UP,
            &["deviceInfo"],
            json!({"tags": tags, "deviceProfileName": profile}),
        );
        raw_of(Format::ChirpStack, &b)
    };
    let raw = tagged(
        json!({"codec": "dingtek/df703", "bin_depth_mm": "1200", "offset_mm": "0",
               "reporting_period_s": "3600", "key": "value"}),
        "dragino/ldds75",
    );
    assert_eq!(raw["codec_hint"], json!("dingtek/df703"), "the tag first");
    assert_eq!(
        raw["config_hint"],
        json!({"bin_depth_mm": 1200, "offset_mm": 0, "reporting_period_s": 3600})
    );
    // An unknown tag value falls back to the profile name; neither known: none.
    assert_eq!(
        tagged(json!({"codec": "DF703"}), "dragino/ldds75")["codec_hint"],
        json!("dragino/ldds75")
    );
    assert_eq!(
        tagged(json!({"codec": 703}), "Dragino/LDDS75")["codec_hint"],
        Value::Null
    );
    // Only decimal digits within the config route's ranges; the rest is left out.
    for (name, bad) in [
        ("bin_depth_mm", json!("0")),
        ("bin_depth_mm", json!("100001")),
        ("bin_depth_mm", json!(1200)),
        ("bin_depth_mm", json!("1200.0")),
        ("bin_depth_mm", json!("+1200")),
        ("bin_depth_mm", json!(" 1200")),
        ("bin_depth_mm", json!("1e3")),
        ("bin_depth_mm", json!("")),
        ("bin_depth_mm", json!("99999999999999999999")),
        ("offset_mm", json!("-1")),
        ("offset_mm", json!("100001")),
        ("reporting_period_s", json!("0")),
        ("reporting_period_s", json!("604801")),
        ("reporting_period_s", json!("٣٦٠٠")),
    ] {
        let raw = tagged(json!({ name: bad }), "");
        assert_eq!(raw["config_hint"], json!({}), "{name}: {bad}");
    }
    let edges = tagged(
        json!({"bin_depth_mm": "100000", "offset_mm": "0100000", "reporting_period_s": "604800"}),
        "",
    );
    assert_eq!(
        edges["config_hint"],
        json!({"bin_depth_mm": 100000, "offset_mm": 100000, "reporting_period_s": 604800})
    );
    // Tags that are not an object are no tags.
    assert_eq!(tagged(json!(["codec"]), "")["config_hint"], json!({}));
}

#[test]
fn helium_hands_on_its_payload_without_a_hint() {
    let raw = raw_of(Format::Helium, HELIUM_UPLINK);
    assert_eq!(
        raw,
        json!({"device_id": "1C29FBD1D2084E21", "f_port": 1,
               "payload": "48656c6c6f2c20776f726c6421",
               "received_at": "2472-11-09T08:11:01.234000+00:00", "f_cnt": 19,
               "frame": "8139aa6e7e7ce6f1", "codec_hint": null, "config_hint": {}})
    );
}

#[test]
fn loriot_rx_and_gw_hand_on_the_same_hex_and_encdata_says_why_not() {
    let rx = raw_of(Format::Loriot, LORIOT_RX);
    assert_eq!(
        rx,
        json!({"device_id": "0102030405060708", "f_port": 1, "payload": "0102aabb",
               "received_at": "2016-08-10T17:37:55.433000+00:00", "f_cnt": 1,
               "frame": "870238eb4e5c164e", "codec_hint": null, "config_hint": {}})
    );
    assert_eq!(raw_of(Format::Loriot, LORIOT_GW), rx);
    assert_eq!(raw_of(Format::Loriot, LORIOT), rx);
    let lower = with(LORIOT_GW, &[], json!({"data": "0102aabb"}));
    assert_eq!(raw_of(Format::Loriot, &lower), rx);
    // encdata: LORIOT could not decrypt it.
    let mut v: Value = serde_json::from_str(LORIOT_RX).unwrap();
    v.as_object_mut().unwrap().remove("data");
    v["encdata"] = json!("0102AABB");
    let p = plan_of(Format::Loriot, &v.to_string());
    assert_eq!(p.raw, None);
    let r = &p.rejected[0].rejection;
    assert_eq!(r.code, "missing_fill_pct");
    assert!(
        r.message
            .contains("\"encdata\", which LORIOT could not decrypt"),
        "{}",
        r.message
    );
}

/// `raw.frame` of a body that has one.
fn raw_frame(format: Format, body: &str) -> String {
    plan_of(format, body).raw.unwrap().frame
}

#[test]
fn every_copy_of_a_radio_frame_hands_on_the_same_raw_frame() {
    // LORIOT's `rx` and the `gw` it sends after all gateways reported, later.
    let rx = plan_of(Format::Loriot, LORIOT_RX).raw.unwrap();
    let gw_later = with(LORIOT_GW, &[], json!({"ts": 1_470_850_680_000_i64}));
    let gw = plan_of(Format::Loriot, &gw_later).raw.unwrap();
    assert!(gw.received_at > rx.received_at);
    assert_eq!(
        (rx.frame.as_str(), gw.frame.as_str()),
        ("870238eb4e5c164e", "870238eb4e5c164e")
    );
    assert_eq!(raw_frame(Format::Loriot, LORIOT_GW), rx.frame);
    for change in [
        json!({"fcnt": 2}),
        json!({"port": 2}),
        json!({"data": "0102AABC"}),
    ] {
        let other = raw_frame(Format::Loriot, &with(LORIOT_GW, &[], change.clone()));
        assert_ne!(other, rx.frame, "{change}");
    }
    // A redelivery (a later receive time) of the other servers' uplinks; another
    // counter, payload, port or session is another frame.
    let bodies = [
        (Format::Tts, tts_em500(), "78f2a1fe989df34e"),
        (
            Format::ChirpStack,
            CHIRPSTACK_UP.to_owned(),
            "886722ea6b2e38d9",
        ),
        (Format::Helium, HELIUM_UPLINK.to_owned(), "8139aa6e7e7ce6f1"),
    ];
    for ((format, body, frame), (case, _, (at, later), others)) in
        bodies.into_iter().zip(frame_cases())
    {
        assert_eq!(format, case);
        let first = plan_of(format, &body).raw.unwrap();
        assert_eq!(first.frame, frame, "{format:?}");
        let again = plan_of(format, &with(&body, &at, later)).raw.unwrap();
        assert!(again.received_at > first.received_at, "{format:?}");
        assert_eq!(again.frame, first.frame, "{format:?}");
        for (at, change) in others {
            let other = raw_frame(format, &with(&body, &at, change.clone()));
            assert_ne!(other, first.frame, "{format:?} {change}");
        }
    }
}

#[test]
fn a_raw_frame_is_never_the_frame_of_one_of_its_readings() {
    // One uplink, the same frame: its readings with a fill level, then without.
    let uplink = |readings: Value| {
        let body = with(CHIRPSTACK_UP, &["object"], json!({ "readings": readings }));
        plan_of(Format::ChirpStack, &body)
    };
    let keyed = uplink(json!([{"seq": 1, "fill_pct": 5}, {"seq": 2, "fill_pct": 6}]));
    let raw = uplink(json!([{"seq": 1}, {"seq": 2}])).raw.unwrap();
    let frames: Vec<_> = keyed.devices[0]
        .readings
        .iter()
        .map(|r| r.frame.clone())
        .collect();
    assert_eq!(frames.len(), 2);
    for frame in frames {
        assert!(frame.as_ref().is_some_and(|f| *f != raw.frame), "{frame:?}");
    }
}

#[test]
fn a_payload_that_does_not_decode_gives_no_raw_and_says_so() {
    let cases = [
        (
            Format::Tts,
            with(
                &tts_em500(),
                &["uplink_message"],
                json!({"frm_payload": "IM6e dEZj"}),
            ),
            "(\"frm_payload\") is not valid base64",
        ),
        (
            Format::ChirpStack,
            with(CHIRPSTACK_UP, &[], json!({"data": "qg="})),
            "(\"data\") is not valid base64",
        ),
        (
            Format::Helium,
            with(HELIUM_UPLINK, &[], json!({"payload": "SGVsbG8_"})),
            "(\"payload\") is not valid base64",
        ),
        (
            Format::Loriot,
            with(LORIOT_RX, &[], json!({"data": "0102AAB"})),
            "(\"data\") is not valid hex",
        ),
        (
            Format::Loriot,
            with(LORIOT_RX, &[], json!({"data": "0x0102"})),
            "(\"data\") is not valid hex",
        ),
        (
            Format::Loriot,
            with(LORIOT_RX, &[], json!({"data": 102})),
            "(\"data\") is not a string",
        ),
        (
            Format::Loriot,
            with(LORIOT_RX, &[], json!({"data": "00".repeat(256)})),
            "(\"data\") is longer than a LoRaWAN frame's 255 bytes",
        ),
    ];
    for (format, body, said) in cases {
        let p = plan_of(format, &body);
        assert_eq!(p.raw, None, "{body}");
        let r = &p.rejected[0].rejection;
        assert_eq!((r.code, r.field), ("missing_fill_pct", "fill_pct"));
        assert!(
            r.message.starts_with("fill_pct is missing: "),
            "{}",
            r.message
        );
        assert!(
            r.message.ends_with(&format!(
                "; its raw payload {said}, so it cannot be decoded either"
            )),
            "{}",
            r.message
        );
    }
    // 255 bytes is a frame.
    let longest = with(LORIOT_RX, &[], json!({"data": "ff".repeat(255)}));
    assert_eq!(
        raw_of(Format::Loriot, &longest)["payload"],
        json!("ff".repeat(255))
    );
}

#[test]
fn no_payload_port_counter_or_time_gives_no_raw_quietly() {
    let quiet = |format: Format, body: &str| {
        let p = plan_of(format, body);
        assert_eq!(p.raw, None, "{body}");
        let message = &p.rejected[0].rejection.message;
        assert!(
            !message.contains("decoded either") && !message.contains("encdata"),
            "{message}"
        );
    };
    let mut no_port: Value = serde_json::from_str(CHIRPSTACK_UP).unwrap();
    no_port.as_object_mut().unwrap().remove("fPort");
    quiet(Format::ChirpStack, &no_port.to_string());
    let mut no_data: Value = serde_json::from_str(LORIOT_RX).unwrap();
    no_data.as_object_mut().unwrap().remove("data");
    quiet(Format::Loriot, &no_data.to_string());
    // An integer 1 ..= 255, written as one (as `seq` is read).
    for port in ["0", "256", "-1", "\"1\"", "1.5", "1.0", "1e0", "null"] {
        let body = edit(HELIUM_UPLINK, "\"port\": 1,", &format!("\"port\": {port},"));
        quiet(Format::Helium, &body);
    }
    for ok in [json!(1), json!(255)] {
        let b = with(HELIUM_UPLINK, &[], json!({ "port": ok }));
        assert_ne!(raw_of(Format::Helium, &b), Value::Null, "{ok}");
    }
    // An empty frame carries no payload.
    quiet(
        Format::ChirpStack,
        &with(CHIRPSTACK_UP, &[], json!({"data": ""})),
    );
    // A frame counter beyond 32 bits, or a seq given while the counter is bad.
    let b = with(CHIRPSTACK_UP, &[], json!({"fCnt": 4294967296_i64}));
    quiet(Format::ChirpStack, &b);
    let b = with(
        CHIRPSTACK_UP,
        &[],
        json!({"fCnt": "7", "object": {"seq": 7}}),
    );
    quiet(Format::ChirpStack, &b);
    assert_eq!(
        raw_of(
            Format::ChirpStack,
            &with(CHIRPSTACK_UP, &[], json!({"fCnt": 4294967295_u32}))
        )["f_cnt"],
        json!(4294967295_u32)
    );
    // A receive time that does not parse, while the decoded payload dates the reading.
    let b = with(
        CHIRPSTACK_UP,
        &[],
        json!({"time": "yesterday", "object": {"ts": "2026-07-16T09:00:00Z"}}),
    );
    quiet(Format::ChirpStack, &b);
}
