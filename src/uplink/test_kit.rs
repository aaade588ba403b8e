//! What the tests of the per-server files, the native burst, the raw payload and
//! the plan share: the network servers' sample webhooks (`tests/fixtures/webhooks/`),
//! a plan of a body, a body with members merged in or replaced, and the readings a
//! body maps to.

use super::{message, plan, uplink_readings, FieldNames, Format, Message, Plan};
use crate::dedupe::burst::read_burst;
use crate::dedupe::json;
use crate::dedupe::reading::RawReading;
use serde::Deserialize;
use serde_json::{json, Value};

pub(super) use crate::dedupe::test_kit::{edit, R1};

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

pub(super) fn plan_err(format: Format, body: &str) -> crate::dedupe::error::Error {
    plan(format, body.as_bytes(), &FieldNames::default(), 10).unwrap_err()
}

/// The rejections of a plan as (index, code, message).
pub(super) fn rejections(p: &Plan) -> Vec<(usize, &'static str, &str)> {
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

/// Members merged into a body at a place (`with`).
pub(super) type Change = (Vec<&'static str>, Value);

/// Per network server with a decoded payload: a body with a fill level and no `ts`,
/// a later receive time, and the members that make another frame. (LORIOT's frames:
/// `loriot.rs`.)
pub(super) fn frame_cases() -> Vec<(Format, String, Change, Vec<Change>)> {
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

// Network servers' uplinks as their docs show them, without a fill level: the raw
// payload they hand on (`Plan::raw`, `raw.rs`).
pub(super) const TTS_UPLINK: &str =
    include_str!("../../tests/fixtures/webhooks/tts/uplink_message.json");
pub(super) const CHIRPSTACK_UP: &str =
    include_str!("../../tests/fixtures/webhooks/chirpstack/up.json");
pub(super) const HELIUM_UPLINK: &str =
    include_str!("../../tests/fixtures/webhooks/helium/uplink.json");
pub(super) const LORIOT_RX: &str = include_str!("../../tests/fixtures/webhooks/loriot/rx.json");
pub(super) const LORIOT_GW: &str = include_str!("../../tests/fixtures/webhooks/loriot/gw.json");

/// The EM500-UDL history vector of tests/vectors/devices/milesight-em500-udl.json
/// (two `20 CE` records), and its bytes in base64.
pub(super) const EM500_HISTORY_HEX: &str = "20ce9e744663d20420ce3a824663d004";
pub(super) const EM500_HISTORY_B64: &str = "IM6edEZj0gQgzjqCRmPQBA==";

/// The plan's `raw` as JSON (`null` when none).
pub(super) fn raw_of(format: Format, body: &str) -> Value {
    serde_json::to_value(&plan_of(format, body).raw).unwrap()
}

/// The TTS uplink fixture carrying the EM500-UDL history vector on port 85, as a
/// device registered from the TTN device repository sends it.
pub(super) fn tts_em500() -> String {
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
