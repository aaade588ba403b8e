//! The seed corpora, made from the project's fixtures and from bytes the crate
//! itself produces: the network servers' sample webhooks, the key and rejection
//! vectors as native bursts and as raw readings, snapshots of sets in several
//! states, and a few operation sequences. `examples/seeds.rs` writes them out for
//! `cargo fuzz`; the stable tests replay them in memory.

use crate::{reading, Sink};
use reconnect_dedupe::uplink::Format;
use reconnect_dedupe::{Config, Deduplicator, RawReading};
use serde::Deserialize;
use serde_json::{json, Value};

/// The fuzz targets, by name.
pub const TARGETS: [&str; 5] = ["uplink", "reading", "snapshot", "seen_ops", "codec"];

/// (file name, bytes) of each seed of `target`.
pub fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    match target {
        "uplink" => uplink(),
        "reading" => readings(),
        "snapshot" => snapshots(),
        "seen_ops" => seen_ops(),
        "codec" => codecs(),
        _ => Vec::new(),
    }
}

/// What `check` of `target` runs.
pub fn check_fn(target: &str) -> Option<fn(&[u8])> {
    Some(match target {
        "uplink" => crate::uplink::check,
        "reading" => crate::reading::check,
        "snapshot" => crate::snapshot::check,
        "seen_ops" => crate::seen_ops::check,
        "codec" => crate::codec::check,
        _ => return None,
    })
}

const WEBHOOKS: [(&str, &str, &[u8]); 33] = [
    ("ttn", "tts-v3-uplink-docs-example.json", include_bytes!("../../tests/fixtures/webhooks/tts-v3-uplink-docs-example.json")),
    ("ttn", "with-fill-tts-v3-uplink.json", include_bytes!("../../tests/fixtures/webhooks/with-fill/tts-v3-uplink.json")),
    ("chirpstack", "chirpstack-v4-up-docs-example.json", include_bytes!("../../tests/fixtures/webhooks/chirpstack-v4-up-docs-example.json")),
    ("chirpstack", "with-fill-chirpstack-v4-up.json", include_bytes!("../../tests/fixtures/webhooks/with-fill/chirpstack-v4-up.json")),
    ("helium", "helium-console-uplink-docs-example.json", include_bytes!("../../tests/fixtures/webhooks/helium-console-uplink-docs-example.json")),
    ("loriot", "loriot-rx-docs-example.json", include_bytes!("../../tests/fixtures/webhooks/loriot-rx-docs-example.json")),
    ("ttn", "tts-downlink_ack.json", include_bytes!("../../tests/fixtures/webhooks/tts/downlink_ack.json")),
    ("ttn", "tts-downlink_failed.json", include_bytes!("../../tests/fixtures/webhooks/tts/downlink_failed.json")),
    ("ttn", "tts-downlink_nack.json", include_bytes!("../../tests/fixtures/webhooks/tts/downlink_nack.json")),
    ("ttn", "tts-downlink_queue_invalidated.json", include_bytes!("../../tests/fixtures/webhooks/tts/downlink_queue_invalidated.json")),
    ("ttn", "tts-downlink_queued.json", include_bytes!("../../tests/fixtures/webhooks/tts/downlink_queued.json")),
    ("ttn", "tts-downlink_sent.json", include_bytes!("../../tests/fixtures/webhooks/tts/downlink_sent.json")),
    ("ttn", "tts-join_accept.json", include_bytes!("../../tests/fixtures/webhooks/tts/join_accept.json")),
    ("ttn", "tts-location_solved.json", include_bytes!("../../tests/fixtures/webhooks/tts/location_solved.json")),
    ("ttn", "tts-service_data.json", include_bytes!("../../tests/fixtures/webhooks/tts/service_data.json")),
    ("ttn", "tts-simulated_uplink.json", include_bytes!("../../tests/fixtures/webhooks/tts/simulated_uplink.json")),
    ("ttn", "tts-uplink_message.json", include_bytes!("../../tests/fixtures/webhooks/tts/uplink_message.json")),
    ("ttn", "tts-uplink_normalized.json", include_bytes!("../../tests/fixtures/webhooks/tts/uplink_normalized.json")),
    ("chirpstack", "chirpstack-ack.json", include_bytes!("../../tests/fixtures/webhooks/chirpstack/ack.json")),
    ("chirpstack", "chirpstack-integration.json", include_bytes!("../../tests/fixtures/webhooks/chirpstack/integration.json")),
    ("chirpstack", "chirpstack-join.json", include_bytes!("../../tests/fixtures/webhooks/chirpstack/join.json")),
    ("chirpstack", "chirpstack-location.json", include_bytes!("../../tests/fixtures/webhooks/chirpstack/location.json")),
    ("chirpstack", "chirpstack-log.json", include_bytes!("../../tests/fixtures/webhooks/chirpstack/log.json")),
    ("chirpstack", "chirpstack-status.json", include_bytes!("../../tests/fixtures/webhooks/chirpstack/status.json")),
    ("chirpstack", "chirpstack-txack.json", include_bytes!("../../tests/fixtures/webhooks/chirpstack/txack.json")),
    ("helium", "helium-join.json", include_bytes!("../../tests/fixtures/webhooks/helium/join.json")),
    ("helium", "helium-uplink.json", include_bytes!("../../tests/fixtures/webhooks/helium/uplink.json")),
    ("loriot", "loriot-cq_response.json", include_bytes!("../../tests/fixtures/webhooks/loriot/cq_response.json")),
    ("loriot", "loriot-gw.json", include_bytes!("../../tests/fixtures/webhooks/loriot/gw.json")),
    ("loriot", "loriot-tx.json", include_bytes!("../../tests/fixtures/webhooks/loriot/tx.json")),
    // Raw payloads with hints (`Plan::raw`): the EM500-UDL history vector from a
    // device registered from the TTN device repository, and a tagged ChirpStack device.
    ("ttn", "raw-tts-em500-history.json", br#"{"end_device_ids":{"device_id":"em500","dev_eui":"24E124126C000001"},"received_at":"2026-07-16T09:00:01Z","uplink_message":{"f_cnt":7,"f_port":85,"frm_payload":"IM6edEZj0gQgzjqCRmPQBA==","version_ids":{"brand_id":"milesight-iot","model_id":"em500-udl"},"received_at":"2026-07-16T09:00:00.123456789Z"}}"#),
    ("chirpstack", "raw-chirpstack-tags.json", br#"{"time":"2026-07-16T09:00:00Z","deviceInfo":{"devEui":"a84041000181c061","deviceProfileName":"dragino/ldds75","tags":{"codec":"dingtek/df703","bin_depth_mm":"1200","offset_mm":"150","reporting_period_s":"3600"}},"devAddr":"00189440","fCnt":9,"fPort":3,"data":"gAAAAAAAAAAAAAAAAAAAgQ=="}"#),
    ("readings", "readings-seed-example.json", br#"[{"device_id":"bin-A17","seq":41,"ts":"2026-07-16T09:00:00Z","fill_pct":62.5},{"device_id":"bin-A17","seq":41,"ts":"2026-07-16T09:00:00Z","fill_pct":62.5},{"device_id":"bin-B04","seq":8,"ts":"2026-07-16T09:00:05Z","fill_pct":15.0}]"#),
];

const KEYS: &str = include_str!("../../tests/vectors/keys.json");
const REJECTIONS: &str = include_str!("../../tests/vectors/rejections.json");

fn vector_readings(file: &str, list: &str) -> Vec<Value> {
    let v: Value = serde_json::from_str(file).expect("vector files are JSON");
    v[list]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["reading"].clone())
        .collect()
}

fn selector(name: &str) -> u8 {
    Format::NAMES.iter().position(|n| *n == name).unwrap_or(0) as u8
}

fn uplink() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let with = |sel: u8, body: &[u8]| [&[sel][..], body].concat();
    for (format, file, body) in WEBHOOKS {
        out.push((file.to_owned(), with(selector(format), body)));
        // Every body under every other format too: envelopes that do not fit.
        for (i, other) in Format::NAMES.iter().enumerate() {
            if *other != format {
                out.push((format!("{other}-as-{file}"), with(i as u8, body)));
            }
        }
    }
    let good = vector_readings(KEYS, "vectors");
    let bad = vector_readings(REJECTIONS, "cases");
    let native = selector("readings");
    let bursts = [
        ("native-key-vectors.json", json!(good)),
        (
            "native-key-vectors-object.json",
            json!({ "readings": good }),
        ),
        ("native-rejections.json", json!(bad)),
        (
            "native-mixed-replayed.json",
            json!([good[0], bad[4], good[0], good[1], good[1]]),
        ),
        ("native-empty.json", json!([])),
    ];
    for (name, burst) in bursts {
        out.push((name.to_owned(), with(native, burst.to_string().as_bytes())));
    }
    // A burst inside one uplink: the decoded payload's `readings`.
    let tts: Value = serde_json::from_slice(WEBHOOKS[1].2).expect("fixture is JSON");
    let mut burst = tts.clone();
    burst["uplink_message"]["decoded_payload"] = json!({"readings": [
        {"seq": 1, "ts": "2026-07-16T09:00:00Z", "fill_pct": 10},
        {"seq": 1, "ts": "2026-07-16T09:00:00Z", "fill_pct": 10},
        {"seq": 2, "fill_pct": 11.5}, 7, {"seq": "3", "fill_pct": 12}]});
    out.push((
        "tts-burst.json".into(),
        with(selector("ttn"), burst.to_string().as_bytes()),
    ));
    out
}

fn readings() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for (file, list, prefix) in [(KEYS, "vectors", "key"), (REJECTIONS, "cases", "rejection")] {
        for (i, r) in vector_readings(file, list).iter().enumerate() {
            let raw =
                RawReading::deserialize(r).expect("the core's visitor never fails on a value");
            out.push((format!("{prefix}-{i:02}"), reading::encode(&raw)));
        }
    }
    out
}

fn snapshots() -> Vec<(String, Vec<u8>)> {
    let now = 1_784_192_400_000.0;
    let keys: Vec<String> = vector_readings(KEYS, "vectors")
        .iter()
        .filter_map(|r| {
            let text = r.to_string();
            let reading = reconnect_dedupe::parse_reading(&text).ok()?;
            Some(reconnect_dedupe::idempotency_key(&reading))
        })
        .collect();
    let mut sets = vec![("empty", Deduplicator::default())];
    let mut full = Deduplicator::new(Config::new(60_000, 1000).expect("valid"));
    for (i, k) in keys.iter().enumerate() {
        let _ = full.admit_keys(k, now + (i * 1000) as f64, 0);
    }
    sets.push(("vectors", full.clone()));
    let mut capped = Deduplicator::new(Config::new(60_000, 5).expect("valid"));
    let _ = capped.admit_keys(&keys.join("\n"), now, 1);
    sets.push(("capped", capped));
    let mut pending = full.clone();
    let body = br#"[{"device_id":"p","seq":1,"ts":"2026-07-16T09:00:00Z","fill_pct":1}]"#;
    let _ = pending.process_json(body, now + 50_000.0, true);
    sets.push(("pending", pending));
    let mut out = Vec::new();
    for (name, d) in sets {
        let snap = d.snapshot();
        out.push((name.to_owned(), [&[0u8][..], &snap].concat()));
        let mut overrides = Sink::default();
        overrides.u8(0b111).u64(1000).u64(3).bytes(&snap);
        out.push((format!("{name}-overrides"), overrides.0));
    }
    out
}

fn seen_ops() -> Vec<(String, Vec<u8>)> {
    // ttl index, cap index, start index, then operations (see `seen_ops`).
    let burst = |s: &mut Sink, provisional: bool, readings: &[(u8, u8)]| {
        s.u8(u8::from(provisional)).u8(0).u8(readings.len() as u8);
        for &(a, b) in readings {
            s.u8(a).u8(b);
        }
    };
    let mut out = Vec::new();
    for (name, ttl, cap) in [
        ("ttl60-cap3", 4u8, 2u8),
        ("ttl1000-cap49", 5, 8),
        ("ttl10-cap1500", 3, 11),
    ] {
        let mut s = Sink::default();
        s.u8(ttl).u8(cap).u8(0);
        burst(&mut s, false, &[(0, 1), (0, 1), (1, 2), (2, 3), (16, 1)]);
        s.u8(2)
            .u8(0)
            .u8(3)
            .u8(0)
            .u8(1)
            .u8(1)
            .u8(2)
            .u8(0)
            .u8(9)
            .u8(1); // admit_keys
        burst(&mut s, true, &[(0, 4), (1, 4), (0, 4)]);
        burst(&mut s, false, &[(0, 4)]);
        s.u8(3).u8(0); // confirm an open ticket
        burst(&mut s, true, &[(2, 5), (3, 5)]);
        s.u8(4).u8(0); // release it
        s.u8(5).u8(2).u16(0); // time: ttl - 1
        s.u8(8).u8(0).u8(0).u8(1); // contains
        s.u8(5).u8(1).u16(0); // time: ttl
        burst(&mut s, false, &[(0, 1), (0, 9)]);
        s.u8(6).u8(0); // snapshot, restore
        s.u8(5).u8(3).u16(7); // time backwards
        s.u8(7).u8(0); // from_keys
        s.u8(5).u8(4).u16(1); // past 2^32 ms
        burst(&mut s, false, &[(1, 2), (0, 0xc1)]);
        s.u8(0).u8(15).u8(1).u8(0).u8(1); // a burst at a bad time
        out.push((name.to_owned(), s.0));
    }
    // Past the scanning size and back: 31 days, cap 100, bursts of 8 new readings
    // until over 48 keys are held, then half released, then all expired.
    let mut s = Sink::default();
    s.u8(7).u8(9).u8(0);
    let mut ticket_burst = true;
    for i in 0..96u8 {
        if i % 8 == 0 {
            if ticket_burst {
                s.u8(1).u8(0).u8(8);
            } else {
                s.u8(0).u8(0).u8(8);
            }
            ticket_burst = !ticket_burst;
        }
        s.u8(i % 4).u8((i / 4 % 14) | ((i / 56) << 4));
    }
    s.u8(4).u8(0).u8(4).u8(0).u8(3).u8(0); // release, release, confirm
    s.u8(6).u8(0).u8(5).u8(1).u16(0); // snapshot and restore, a TTL on
    s.u8(0).u8(0).u8(1).u8(0).u8(1);
    out.push(("grow-past-the-scan".to_owned(), s.0));
    out
}

/// The device vector files, in `tests/vectors/devices/`.
const DEVICES: [&str; 7] = [
    include_str!("../../tests/vectors/devices/decentlab-dl-mbx.json"),
    include_str!("../../tests/vectors/devices/dingtek-df703.json"),
    include_str!("../../tests/vectors/devices/dragino-dds75-lb.json"),
    include_str!("../../tests/vectors/devices/dragino-ldds75.json"),
    include_str!("../../tests/vectors/devices/milesight-em310-udl.json"),
    include_str!("../../tests/vectors/devices/milesight-em500-udl.json"),
    include_str!("../../tests/vectors/devices/tekelek-tek766.json"),
];

/// Every device vector under its codec (selector byte) and port.
fn codecs() -> Vec<(String, Vec<u8>)> {
    use reconnect_dedupe::codec::Codec;
    let mut out = Vec::new();
    for file in DEVICES {
        let file: Value = serde_json::from_str(file).expect("a device vector file");
        let name = file["device"].as_str().unwrap_or("").to_ascii_lowercase();
        for (sel, codec) in Codec::ALL.iter().enumerate() {
            let model = codec.id().split('/').nth(1).unwrap_or("");
            if !name.contains(model) {
                continue;
            }
            for (i, v) in file["vectors"].as_array().into_iter().flatten().enumerate() {
                let port = v["fPort"].as_u64().or(file["fPort"].as_u64()).unwrap_or(1);
                let hex: String = v["hex"].as_str().unwrap_or("").split_whitespace().collect();
                let mut bytes = vec![sel as u8, port as u8];
                bytes.extend(
                    (0..hex.len() / 2)
                        .filter_map(|j| u8::from_str_radix(hex.get(2 * j..2 * j + 2)?, 16).ok()),
                );
                out.push((format!("{model}-{i}"), bytes));
            }
        }
    }
    out
}
