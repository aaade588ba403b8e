//! Browser tests: the exported JavaScript API driven with real JS values in headless
//! Chromium (`wasm-pack test --headless --chrome`). Values go in as `JSON.parse`d
//! objects and come out through `JSON.stringify`, as a page would see them.
#![cfg(target_arch = "wasm32")]

use js_sys::{Reflect, Uint8Array, JSON};
use reconnect_dedupe::wasm::{
    check_device_id_js, idempotency_key_js, parse_uplink, JsDeduplicator, JsSeqWindow,
};
use serde_json::{json, Value};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

const KEYS: &str = include_str!("vectors/keys.json");
const REJECTIONS: &str = include_str!("vectors/rejections.json");
const NOW: f64 = 1_784_192_411_204.0;

fn js(v: &Value) -> JsValue {
    JSON::parse(&v.to_string()).unwrap()
}

fn rust(v: &JsValue) -> Value {
    serde_json::from_str(&String::from(JSON::stringify(v).unwrap())).unwrap()
}

fn code_of(err: JsValue) -> String {
    assert!(err.is_instance_of::<js_sys::Error>(), "throws an Error");
    Reflect::get(&err, &"code".into())
        .unwrap()
        .as_string()
        .unwrap()
}

fn list(file: &str, name: &str) -> Vec<Value> {
    serde_json::from_str::<Value>(file).unwrap()[name]
        .as_array()
        .unwrap()
        .clone()
}

fn dedup() -> JsDeduplicator {
    JsDeduplicator::new(JsValue::UNDEFINED).unwrap()
}

fn reading(device: &str, seq: i64, fill: f64, ts: &str) -> Value {
    json!({"device_id": device, "seq": seq, "ts": ts, "fill_pct": fill})
}

fn process(d: &mut JsDeduplicator, readings: &[Value], now: f64) -> Value {
    let out = rust(
        &d.process_burst(js(&json!(readings)), now.into(), JsValue::UNDEFINED)
            .unwrap(),
    );
    let p = &out["audit"]["payload"];
    // `pending` and `not_stored` are written only when not zero.
    let n = |k: &str| p.get(k).map_or(0, |v| v.as_u64().unwrap());
    assert_eq!(
        n("received"),
        n("unique") + n("duplicates_suppressed") + n("pending") + n("rejected"),
        "the audit reconciles"
    );
    out
}

#[wasm_bindgen_test]
fn key_vectors_agree_with_the_native_core() {
    for v in list(KEYS, "vectors") {
        let key = idempotency_key_js(js(&v["reading"])).unwrap();
        assert_eq!(key, v["key"].as_str().unwrap(), "{}", v["name"]);
    }
}

#[wasm_bindgen_test]
fn rejection_vectors_throw_errors_with_stable_codes() {
    for v in list(REJECTIONS, "cases") {
        let err = idempotency_key_js(js(&v["reading"])).unwrap_err();
        assert_eq!(code_of(err), v["code"].as_str().unwrap(), "{}", v["name"]);
    }
}

#[wasm_bindgen_test]
fn a_replayed_burst_is_suppressed() {
    let mut d = dedup();
    let burst = [
        reading("bin-A17", 41, 62.5, "2026-07-16T09:00:00Z"),
        reading("bin-A17", 42, 71.0, "2026-07-16T09:00:00Z"),
        reading("bin-B04", 8, 15.0, "2026-07-16T09:00:05Z"),
    ];
    let first = process(&mut d, &burst, NOW);
    assert_eq!(first["unique"].as_array().unwrap().len(), 3);
    assert_eq!(first["unique"][0]["key"], "bin-A17:41:76c73ee2946cc70e");
    let replay = process(&mut d, &burst, NOW + 60_000.0);
    assert_eq!(replay["unique"], json!([]));
    assert_eq!(replay["duplicates_suppressed"], 3);
    assert_eq!(replay["duplicates"], json!([0, 1, 2]));
}

#[wasm_bindgen_test]
fn two_same_second_readings_are_both_kept() {
    let mut d = dedup();
    let out = process(
        &mut d,
        &[
            reading("bin-A17", 41, 62.5, "2026-07-16T09:00:00Z"),
            reading("bin-A17", 42, 71.0, "2026-07-16T09:00:00Z"),
        ],
        NOW,
    );
    assert_eq!(out["unique"].as_array().unwrap().len(), 2);
    assert_eq!(out["duplicates_suppressed"], 0);
}

#[wasm_bindgen_test]
fn an_invalid_reading_is_rejected_while_the_rest_survive() {
    let mut d = dedup();
    let out = process(
        &mut d,
        &[
            reading("bin-A17", 41, 62.5, "2026-07-16T09:00:00Z"),
            reading("bin-A17", 42, 162.5, "2026-07-16T09:00:00Z"),
            json!({"device_id": "bin-A17", "seq": "43", "ts": "2026-07-16T09:00:00Z", "fill_pct": 1}),
            reading("bin-A17", 44, 80.0, "2026-07-16T09:00:00"),
            reading("bin-A17", 45, 90.0, "2026-07-16T09:00:00Z"),
        ],
        NOW,
    );
    let kept: Vec<_> = out["unique"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["index"].as_u64().unwrap())
        .collect();
    assert_eq!(kept, [0, 4]);
    let rejected: Vec<_> = out["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["index"].as_u64().unwrap(),
                r["field"].as_str().unwrap().to_string(),
                r["code"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        rejected,
        [
            (1, "fill_pct".into(), "invalid_fill_pct".into()),
            (2, "seq".into(), "invalid_seq".into()),
            (3, "ts".into(), "invalid_ts".into()),
        ]
    );
}

#[wasm_bindgen_test]
fn the_bulk_path_gives_the_same_outcome_as_the_object_path() {
    let mut readings: Vec<Value> = list(KEYS, "vectors")
        .iter()
        .map(|v| v["reading"].clone())
        .collect();
    readings.extend(
        list(REJECTIONS, "cases")
            .iter()
            .map(|v| v["reading"].clone()),
    );
    let body = json!({ "readings": readings }).to_string();
    let objects = rust(
        &dedup()
            .process_burst(js(&json!(readings)), NOW.into(), JsValue::UNDEFINED)
            .unwrap(),
    );
    // Through JSON.parse, as a JS caller reads it (100.0 and 100 are one JS number).
    let parsed = |text: String| rust(&JSON::parse(&text).unwrap());
    let text = parsed(
        dedup()
            .process_burst_json(body.clone().into(), NOW.into(), JsValue::UNDEFINED)
            .unwrap(),
    );
    let bytes = Uint8Array::from(body.as_bytes());
    let from_bytes = parsed(
        dedup()
            .process_burst_json(bytes.into(), NOW.into(), JsValue::UNDEFINED)
            .unwrap(),
    );
    assert_eq!(objects, text);
    assert_eq!(text, from_bytes);
    assert!(!objects["rejected"].as_array().unwrap().is_empty());
    assert!(objects["duplicates_suppressed"].as_u64().unwrap() > 0);
}

#[wasm_bindgen_test]
fn snapshot_round_trip_keeps_suppressing() {
    let mut d = JsDeduplicator::new(js(&json!({"ttlMs": 3_600_000, "maxKeys": 500}))).unwrap();
    let burst: Vec<Value> = (0..200)
        .map(|i| {
            reading(
                "70B3D57ED0041234",
                i,
                (i % 100) as f64,
                "2026-07-16T09:00:00Z",
            )
        })
        .collect();
    process(&mut d, &burst, NOW);
    let bytes = Uint8Array::from(&d.snapshot()[..]);
    let mut restored = JsDeduplicator::restore(bytes.into(), JsValue::UNDEFINED).unwrap();
    let stats = rust(&restored.stats().unwrap());
    assert_eq!(
        (stats["keys"].as_u64(), stats["max_keys"].as_u64()),
        (Some(200), Some(500))
    );
    let replay = process(&mut restored, &burst, NOW + 1000.0);
    assert_eq!(replay["duplicates_suppressed"], 200);
    // Corrupt bytes are an error with a code, never a trap.
    let mut bad = d.snapshot();
    bad[20] ^= 1;
    assert_eq!(
        code_of(
            JsDeduplicator::restore(Uint8Array::from(&bad[..]).into(), JsValue::UNDEFINED)
                .err()
                .unwrap()
        ),
        "invalid_snapshot"
    );
    assert_eq!(
        code_of(
            JsDeduplicator::restore(Uint8Array::from(&b"nope"[..]).into(), JsValue::UNDEFINED)
                .err()
                .unwrap()
        ),
        "invalid_snapshot"
    );
}

#[wasm_bindgen_test]
fn provisional_admission_is_pending_then_released_for_a_retry() {
    let mut d = dedup();
    let burst = js(&json!([reading(
        "bin-A17",
        1,
        10.0,
        "2026-07-16T09:00:00Z"
    )]));
    let first = rust(
        &d.process_burst(burst.clone(), NOW.into(), JsValue::TRUE)
            .unwrap(),
    );
    let ticket = first["ticket"].as_u64().unwrap() as u32;
    let again = rust(
        &d.process_burst(burst.clone(), (NOW + 1.0).into(), JsValue::UNDEFINED)
            .unwrap(),
    );
    assert_eq!(
        (
            again["pending"].clone(),
            again["duplicates_suppressed"].clone()
        ),
        (json!([0]), json!(0))
    );
    assert_eq!(d.release(ticket.into()).unwrap(), 1);
    let retry = rust(
        &d.process_burst(burst.clone(), (NOW + 2.0).into(), JsValue::UNDEFINED)
            .unwrap(),
    );
    assert_eq!(retry["unique"].as_array().unwrap().len(), 1);
    assert_eq!(
        code_of(d.confirm(4242.into()).unwrap_err()),
        "unknown_ticket"
    );
}

#[wasm_bindgen_test]
fn bad_options_and_bodies_throw_coded_errors_and_the_instance_keeps_working() {
    for opts in [
        json!({"ttlMs": 0}),
        json!({"maxKeys": 0}),
        json!({"ttlMs": 1.5}),
        json!({"maxKeys": -3}),
        json!({"ttlMs": "6h"}),
    ] {
        assert_eq!(
            code_of(JsDeduplicator::new(js(&opts)).err().unwrap()),
            "invalid_config",
            "{opts}"
        );
    }
    let mut d = dedup();
    assert_eq!(
        code_of(
            d.process_burst_json("[{".into(), NOW.into(), JsValue::UNDEFINED)
                .unwrap_err()
        ),
        "invalid_json"
    );
    assert_eq!(
        code_of(
            d.process_burst_json(JsValue::from(42), NOW.into(), JsValue::UNDEFINED)
                .unwrap_err()
        ),
        "invalid_burst"
    );
    assert_eq!(
        code_of(
            d.process_burst(js(&json!("x")), NOW.into(), JsValue::UNDEFINED)
                .unwrap_err()
        ),
        "invalid_burst"
    );
    assert_eq!(
        code_of(
            d.process_burst(js(&json!([])), f64::NAN.into(), JsValue::UNDEFINED)
                .unwrap_err()
        ),
        "invalid_time"
    );
    let out = process(
        &mut d,
        &[reading("bin-A17", 1, 10.0, "2026-07-16T09:00:00Z")],
        NOW,
    );
    assert_eq!(out["unique"].as_array().unwrap().len(), 1);
    let held = d
        .contains(
            js(&reading("bin-A17", 1, 10.0, "2026-07-16T11:00:00+02:00")),
            NOW.into(),
        )
        .unwrap();
    assert!(held);
}

#[wasm_bindgen_test]
fn parse_uplink_maps_a_tts_webhook_and_its_readings_key_like_the_vectors() {
    let sample = include_str!("fixtures/webhooks/tts-v3-uplink-docs-example.json");
    let mut uplink: Value = serde_json::from_str(sample).unwrap();
    // A buffered burst inside one uplink: every key vector of the device, sent
    // as bytes. The DevEUI names the device; the decoded readings give the rest.
    let vectors: Vec<Value> = list(KEYS, "vectors")
        .into_iter()
        .filter(|v| v["reading"]["device_id"] == "70B3D57ED0041234")
        .collect();
    assert!(!vectors.is_empty());
    uplink["end_device_ids"]["dev_eui"] = json!("70b3d57ed0041234");
    uplink["uplink_message"]["decoded_payload"] = json!({
        "readings": vectors.iter().map(|v| v["reading"].clone()).collect::<Vec<_>>()
    });
    let bytes = Uint8Array::from(uplink.to_string().as_bytes());
    let plan: Value = serde_json::from_str(
        &parse_uplink("ttn".into(), bytes.into(), JsValue::UNDEFINED).unwrap(),
    )
    .unwrap();
    assert_eq!(plan["received"], vectors.len());
    assert_eq!(plan["rejected"], json!([]));
    let group = &plan["devices"][0];
    assert_eq!(group["device_id"], "70B3D57ED0041234");
    let readings = group["readings"].as_array().unwrap();
    assert_eq!(readings.len(), vectors.len());
    for (i, (reading, v)) in readings.iter().zip(&vectors).enumerate() {
        assert_eq!((&reading["index"], &reading["key"]), (&json!(i), &v["key"]));
    }
    // The worker's path: the device object admits the plan's keys, no content hashed.
    let keys: Vec<&str> = readings
        .iter()
        .map(|r| r["key"].as_str().unwrap())
        .collect();
    let mut d = dedup();
    let out = d
        .admit_keys(
            keys.join("\n").into(),
            NOW.into(),
            JsValue::UNDEFINED,
            JsValue::UNDEFINED,
        )
        .unwrap();
    let verdicts = Uint8Array::from(Reflect::get(&out, &"verdicts".into()).unwrap()).to_vec();
    let mut seen = std::collections::HashSet::new();
    for (k, v) in keys.iter().zip(&verdicts) {
        assert_eq!(
            *v == 2,
            !seen.insert(*k),
            "duplicate exactly when repeated: {k}"
        );
    }
    let again = d
        .admit_keys(
            keys.join("\n").into(),
            (NOW + 1.0).into(),
            JsValue::UNDEFINED,
            JsValue::UNDEFINED,
        )
        .unwrap();
    let verdicts = Uint8Array::from(Reflect::get(&again, &"verdicts".into()).unwrap()).to_vec();
    assert!(verdicts.iter().all(|v| *v == 2), "the replay is suppressed");
    // The docs sample itself has no fill level: rejected with a code, not dropped.
    let plan: Value = serde_json::from_str(
        &parse_uplink("ttn".into(), JsValue::from_str(sample), JsValue::UNDEFINED).unwrap(),
    )
    .unwrap();
    assert_eq!(plan["rejected"][0]["code"], "missing_fill_pct");
    assert_eq!(plan["rejected"][0]["device_id"], "0004A30B001C0530");
    let err = parse_uplink("mqtt".into(), JsValue::from_str("{}"), JsValue::UNDEFINED).unwrap_err();
    assert_eq!(code_of(err), "unknown_format");
    let opts = js(&json!({"maxReadings": 1}));
    let err = parse_uplink("readings".into(), JsValue::from_str("[{},{}]"), opts).unwrap_err();
    assert_eq!(code_of(err), "too_many_readings");
}

/// The browser's own string conversion maps a lone surrogate to U+FFFD; the API
/// refuses such strings instead, so `dev\uD800` and `dev\uDBFF` never collide. Also
/// in the browser: a BigInt seq of -2^63 is one rejected reading (nothing throws
/// after admitting), and a `nowMs` or ticket that is not a JS number is refused.
#[wasm_bindgen_test]
fn hostile_strings_numbers_and_tickets_are_refused_before_anything_is_admitted() {
    let mut d = dedup();
    let burst = JSON::parse(
        r#"[{"device_id":"dev\ud800","seq":1,"ts":"2026-07-16T09:00:00Z","fill_pct":5},
            {"device_id":"dev\udbff","seq":1,"ts":"2026-07-16T09:00:00Z","fill_pct":5},
            {"device_id":"dev","seq":1,"ts":"2026-07-16T09:00:00Z","fill_pct":5}]"#,
    )
    .unwrap();
    let min =
        js(&json!({"device_id": "dev", "seq": 0, "ts": "2026-07-16T09:00:00Z", "fill_pct": 6}));
    Reflect::set(&min, &"seq".into(), &js_sys::BigInt::from(i64::MIN).into()).unwrap();
    burst.unchecked_ref::<js_sys::Array>().push(&min);
    let out = rust(&d.process_burst(burst, NOW.into(), JsValue::TRUE).unwrap());
    let rejected: Vec<(u64, &str)> = out["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["index"].as_u64().unwrap(), r["code"].as_str().unwrap()))
        .collect();
    assert_eq!(
        rejected,
        [
            (0, "invalid_device_id"),
            (1, "invalid_device_id"),
            (3, "invalid_seq")
        ]
    );
    assert_eq!(out["unique"][0]["index"], 2);
    let lone = JSON::parse(r#""dev\ud800""#).unwrap();
    assert_eq!(
        code_of(check_device_id_js(lone).unwrap_err()),
        "invalid_device_id"
    );
    assert_eq!(
        code_of(check_device_id_js("..".into()).unwrap_err()),
        "invalid_device_id"
    );
    check_device_id_js("dev\u{FFFD}".into()).expect("a real U+FFFD is valid Unicode");
    // Ids that print the same: the browser's own normalizer decides NFC in Wasm.
    for printing_alike in ["cafe\u{301}", "\u{212B}", "bin\u{FE0F}1", "bin1 "] {
        assert_eq!(
            code_of(check_device_id_js(printing_alike.into()).unwrap_err()),
            "invalid_device_id",
            "{printing_alike:?}"
        );
    }
    check_device_id_js("caf\u{E9}".into()).expect("NFC is an id");
    let before = d.snapshot();
    let empty = js(&json!([]));
    assert_eq!(
        code_of(
            d.process_burst(empty, "123".into(), JsValue::UNDEFINED)
                .unwrap_err()
        ),
        "invalid_time"
    );
    assert_eq!(
        code_of(d.confirm((2f64.powi(32) + 1.0).into()).unwrap_err()),
        "unknown_ticket"
    );
    assert_eq!(d.snapshot(), before);
    assert_eq!(
        rust(&d.stats().unwrap())["pending"],
        1,
        "ticket 1 still open"
    );
    assert_eq!(d.confirm(1.into()).unwrap(), 1);
}

/// A reading whose `device_id` getter throws `Error: boom` when the facade reads it.
fn reading_whose_getter_throws() -> JsValue {
    let obj = js(&reading("bin-g", 2, 5.0, "2026-07-16T09:00:00Z"));
    let get = wasm_bindgen::closure::Closure::<dyn Fn() -> Result<JsValue, JsValue>>::new(|| {
        Err(js_sys::Error::new("boom").into())
    });
    let descriptor = js_sys::Object::new();
    Reflect::set(&descriptor, &"get".into(), get.as_ref()).unwrap();
    Reflect::set(&descriptor, &"enumerable".into(), &true.into()).unwrap();
    let target: &js_sys::Object = obj.unchecked_ref();
    Reflect::define_property(target, &"device_id".into(), &descriptor).unwrap();
    get.forget();
    obj
}

#[wasm_bindgen_test]
fn a_js_exception_while_reading_arguments_is_a_coded_error_that_admits_nothing() {
    let mut d = dedup();
    let ok = reading("bin-g", 1, 5.0, "2026-07-16T09:00:00Z");
    let burst = js_sys::Array::of2(&js(&ok), &reading_whose_getter_throws());
    let err = d
        .process_burst(burst.into(), NOW.into(), JsValue::UNDEFINED)
        .unwrap_err();
    let message = Reflect::get(&err, &"message".into()).unwrap().as_string();
    assert_eq!(code_of(err), "invalid_burst");
    assert_eq!(
        message.as_deref(),
        Some("reading 1 could not be read: reading it threw Error: boom")
    );
    assert_eq!(rust(&d.stats().unwrap())["keys"], 0, "nothing admitted");
    let err = idempotency_key_js(reading_whose_getter_throws()).unwrap_err();
    assert_eq!(code_of(err), "invalid_burst");
    // The instance keeps working.
    let out = process(&mut d, &[ok], NOW);
    assert_eq!(out["unique"].as_array().unwrap().len(), 1);
}

/// Every device vector file (tests/vectors/devices/), every vector: `decodePayload` and
/// `readingsFromPayload` in the browser give what the core's `decode` and
/// `payload_readings` give, member for member.
#[wasm_bindgen_test]
fn every_device_vector_decodes_in_the_browser_as_in_the_core() {
    use reconnect_dedupe::codec::{decode, Codec, Decoded, DeviceConfig, DeviceState, FrameMeta};
    use reconnect_dedupe::uplink::payload_readings;
    use reconnect_dedupe::wasm::{decode_payload_js, readings_from_payload_js};
    use std::num::NonZeroU32;
    let files = [
        (
            "milesight-iot/em310-udl",
            include_str!("vectors/devices/milesight-em310-udl.json"),
        ),
        (
            "milesight-iot/em500-udl",
            include_str!("vectors/devices/milesight-em500-udl.json"),
        ),
        (
            "dingtek/df703",
            include_str!("vectors/devices/dingtek-df703.json"),
        ),
        (
            "decentlab/dl-mbx",
            include_str!("vectors/devices/decentlab-dl-mbx.json"),
        ),
        (
            "tekelek/tek766",
            include_str!("vectors/devices/tekelek-tek766.json"),
        ),
        (
            "dragino/ldds75",
            include_str!("vectors/devices/dragino-ldds75.json"),
        ),
        (
            "dragino/dds75-lb",
            include_str!("vectors/devices/dragino-dds75-lb.json"),
        ),
    ];
    let mut decoded = 0;
    for (id, file) in files {
        let codec = Codec::from_id(id).unwrap();
        let file: Value = serde_json::from_str(file).unwrap();
        for v in file["vectors"].as_array().unwrap() {
            let port = v["fPort"].as_u64().or(file["fPort"].as_u64()).unwrap();
            let text: String = v["hex"].as_str().unwrap().split_whitespace().collect();
            let bytes: Vec<u8> = (0..text.len() / 2)
                .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).unwrap())
                .collect();
            let js_bytes = Uint8Array::from(bytes.as_slice());
            let got = decode_payload_js(id.into(), (port as f64).into(), js_bytes.into());
            match decode(codec, port as u32, &bytes) {
                Ok(uplink) => {
                    let want = serde_json::to_value(Decoded::new(codec, &uplink)).unwrap();
                    assert_eq!(rust(&got.unwrap()), want, "{id} {text}");
                    decoded += 1;
                }
                Err(e) => assert_eq!(code_of(got.unwrap_err()), e.code(), "{id} {text}"),
            }
            // And as keyed readings of a device.
            let config = DeviceConfig {
                codec: Some(codec),
                bin_depth_mm: NonZeroU32::new(2000).unwrap(),
                offset_mm: 100,
                reporting_period_s: NonZeroU32::new(3600),
                application_port: None,
            };
            let meta = FrameMeta {
                received_at: 1_784_192_400_000_000,
                f_cnt: 5,
                frame: Some(0x0123_4567_89ab_cdef),
            };
            let native = payload_readings(
                "70b3d52dd600035a",
                codec,
                &config,
                port as u32,
                &bytes,
                &meta,
                DeviceState {
                    counter_ref: Some(9),
                    schedule_phase_s: None,
                },
            );
            let got = readings_from_payload_js(
                "70b3d52dd600035a".into(),
                js(
                    &json!({"codec": id, "bin_depth_mm": 2000, "offset_mm": 100, "reporting_period_s": 3600}),
                ),
                (port as f64).into(),
                Uint8Array::from(bytes.as_slice()).into(),
                js(
                    &json!({"received_at": "2026-07-16T09:00:00Z", "f_cnt": 5, "counter_ref": 9,
                            "frame": "0123456789abcdef"}),
                ),
            );
            match native {
                // Through JSON.parse both, as a page sees numbers (0.0 is 0 there).
                Ok(want) => assert_eq!(
                    rust(&got.unwrap()),
                    rust(&js(&serde_json::to_value(want).unwrap())),
                    "{id} {text}"
                ),
                Err(e) => assert_eq!(code_of(got.unwrap_err()), e.code(), "{id} {text}"),
            }
        }
    }
    assert!(decoded >= 10, "{decoded} vectors decoded");
    let bytes = || JsValue::from(Uint8Array::from(&[1u8, 0x75, 0x64][..]));
    let code = |c: &str, port: f64, payload: JsValue| {
        code_of(decode_payload_js(c.into(), port.into(), payload).unwrap_err())
    };
    assert_eq!(code("milesight-iot/em999", 85.0, bytes()), "unknown_codec");
    assert_eq!(
        code("milesight-iot/em310-udl", 85.5, bytes()),
        "invalid_burst"
    );
    assert_eq!(
        code("milesight-iot/em310-udl", 85.0, "0175".into()),
        "invalid_burst"
    );
    assert_eq!(
        code("milesight-iot/em310-udl", 86.0, bytes()),
        "unsupported_port"
    );
}

/// A raw uplink's `frame` handed to `readingsFromPayload`: LORIOT's `rx` and its later
/// `gw` give a live reading the same frame identity, a reading dated by the device
/// none, and a `frame` that is not 16 lower-case hex digits is refused naming it.
#[wasm_bindgen_test]
fn a_raw_frame_gives_decoded_readings_their_frames() {
    use reconnect_dedupe::wasm::readings_from_payload_js;
    // The fixture carrying `data` on port 85, received `later_ms` after its `ts`.
    let decoded = |fixture: &str, data: &str, later_ms: i64, codec: &str| {
        let mut body: Value = serde_json::from_str(fixture).unwrap();
        body["data"] = json!(data);
        body["port"] = json!(85);
        body["ts"] = json!(body["ts"].as_i64().unwrap() + later_ms);
        let plan: Value = serde_json::from_str(
            &parse_uplink(
                "loriot".into(),
                JsValue::from_str(&body.to_string()),
                JsValue::UNDEFINED,
            )
            .unwrap(),
        )
        .unwrap();
        let raw = &plan["raw"];
        let bytes: Vec<u8> = (0..data.len() / 2)
            .map(|i| u8::from_str_radix(&data[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        let frame = json!({"received_at": raw["received_at"], "f_cnt": raw["f_cnt"], "frame": raw["frame"]});
        let out = readings_from_payload_js(
            raw["device_id"].as_str().unwrap().into(),
            js(&json!({"codec": codec, "bin_depth_mm": 1500})),
            85.0.into(),
            Uint8Array::from(bytes.as_slice()).into(),
            js(&frame),
        );
        (raw["frame"].clone(), rust(&out.unwrap()))
    };
    let rx = include_str!("fixtures/webhooks/loriot/rx.json");
    let gw = include_str!("fixtures/webhooks/loriot/gw.json");
    let live = "0175640382d204";
    let (frame, first) = decoded(rx, live, 0, "milesight-iot/em310-udl");
    let (again_frame, again) = decoded(gw, live, 4_000, "milesight-iot/em310-udl");
    assert_eq!(again_frame, frame);
    let reading = &first["readings"][0];
    let id = reading["frame"].as_str().unwrap();
    assert!(id.len() == 16 && id != frame.as_str().unwrap(), "{id}");
    assert_eq!(again["readings"][0]["frame"], reading["frame"]);
    assert_ne!(again["readings"][0]["ts"], reading["ts"], "received later");
    let history = "20ce9e744663d20420ce3a824663d004";
    let (_, dated) = decoded(rx, history, 0, "milesight-iot/em500-udl");
    let frames: Vec<&Value> = dated["readings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["frame"])
        .collect();
    assert_eq!(frames, [&Value::Null, &Value::Null]);
    let refused = |frame: Value| {
        let err = readings_from_payload_js(
            "0102030405060708".into(),
            js(&json!({"codec": "milesight-iot/em310-udl", "bin_depth_mm": 1500})),
            85.0.into(),
            Uint8Array::from(&[1u8, 0x75, 0x64][..]).into(),
            js(&json!({"received_at": "2026-07-16T09:00:00Z", "frame": frame})),
        )
        .unwrap_err();
        let message = Reflect::get(&err, &"message".into())
            .unwrap()
            .as_string()
            .unwrap();
        (code_of(err), message.contains("\"frame\""))
    };
    for bad in [
        json!("0123456789ABCDEF"),
        json!("0123"),
        json!("+123456789abcdef"),
        json!(" 0123456789abcde"),
        json!(5),
    ] {
        assert_eq!(
            refused(bad.clone()),
            ("invalid_burst".to_owned(), true),
            "{bad}"
        );
    }
}

#[wasm_bindgen_test]
fn a_sequence_window_finds_a_gap_closes_it_and_round_trips_its_bytes() {
    let mut w = JsSeqWindow::new();
    for seq in [1.0, 2.0, 5.0] {
        w.observe(seq.into(), NOW.into()).unwrap();
    }
    assert_eq!(
        rust(&w.gaps().unwrap()),
        json!([{"from": 3, "to": 4, "first_noticed_ms": NOW as i64}])
    );
    let bytes = Uint8Array::from(&w.to_bytes()[..]);
    let mut back = JsSeqWindow::from_bytes(bytes.into()).unwrap();
    let late = back.observe(3.0.into(), (NOW + 5000.0).into()).unwrap();
    assert_eq!(
        rust(&late),
        json!({"kind": "recovered", "delay_ms": 5000, "from": null, "to": null})
    );
    assert_eq!(rust(&back.totals().unwrap())["missing"], json!(1));
    assert_eq!(back.highest(), Some(5.0));
    assert_eq!(
        code_of(
            JsSeqWindow::from_bytes(Uint8Array::from(&b"nope"[..]).into())
                .err()
                .unwrap()
        ),
        "invalid_snapshot"
    );
    assert_eq!(
        code_of(back.observe("3".into(), NOW.into()).err().unwrap()),
        "invalid_seq"
    );
}
