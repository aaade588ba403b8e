//! ChirpStack (v4) HTTP integration, `up` event, JSON payload encoding (route
//! `chirpstack`).
//!
//! Notes from the docs' sample (`tests/fixtures/webhooks/chirpstack-v4-up-docs-example.json`):
//!
//! * ChirpStack posts every event type to one URL and appends `?event=up` (`join`,
//!   `status`, `ack`, ...); the worker answers events other than `up` with 204
//!   before the body reaches this module. Only the JSON encoding is read (the
//!   Protobuf one is answered 415 by the worker).
//! * The device is `deviceInfo.devEui` (lower-case hex in the docs' sample, upper
//!   case here); `deviceInfo.deviceName` is a display name and not used.
//! * `object` is the device profile codec's output, absent without a codec.
//! * `fCnt` is the frame counter (absent counts as 0), `time` the gateway or
//!   receive time (RFC 3339 with nanoseconds and an offset).
//! * The raw payload ([`super::Plan::raw`]) is `data` (base64) on `fPort`. The device
//!   profile and tags are the user's: the codec hint is the tag `codec`, else the
//!   device-profile name (`deviceInfo.deviceProfileName`), when either is exactly a
//!   codec id (`milesight-iot/em500-udl`, ...); the tags `bin_depth_mm`, `offset_mm`
//!   and `reporting_period_s` (ChirpStack tags are strings: decimal digits) are the
//!   config hint.

use super::raw::{named_codec, tags_config, Encoding, RawParts};
use super::{atom, dev_eui, frame_counter, path, scalar, Envelope, Frame};
use crate::dedupe::json::Json;
use crate::dedupe::json::Object;

/// The server's name in messages.
pub(super) const LABEL: &str = "ChirpStack";

/// The event's device, decoded payload, frame counter and time; the frame's
/// identity is `devAddr` (a new one with every join), `fCnt`, `fPort` and `data`.
pub(super) fn envelope<'a>(root: &'a Object<'a>) -> Envelope<'a> {
    Envelope {
        event: "up",
        simulated: false,
        device_id: dev_eui(path(root, &["deviceInfo", "devEui"])),
        decoded: root.get("object"),
        frame_counter: frame_counter(root.get("fCnt")),
        received_at: root.get("time").map(scalar),
        frame: Frame {
            session: atom(root.get("devAddr")),
            counter: atom(root.get("fCnt")),
            port: atom(root.get("fPort")),
            payload: atom(root.get("data")),
        },
        raw: {
            let tags = path(root, &["deviceInfo", "tags"]).and_then(Json::as_object);
            let profile = path(root, &["deviceInfo", "deviceProfileName"]);
            RawParts {
                codec_hint: named_codec(tags.and_then(|t| t.get("codec")))
                    .or_else(|| named_codec(profile)),
                config_hint: tags_config(tags),
                ..RawParts::new(
                    "data",
                    Encoding::Base64,
                    root.get("data"),
                    root.get("fPort"),
                )
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_kit::{
        assert_maps, plan_of, raw_of, with, CHIRPSTACK, CHIRPSTACK_UP, CHIRPSTACK_WITH_FILL,
    };
    use super::super::{plan, FieldNames, Format};
    use crate::dedupe::reading::canonical_device_id;
    use serde_json::{json, Value};

    #[test]
    fn the_docs_sample_maps_to_its_metadata() {
        assert_maps(
            Format::ChirpStack,
            CHIRPSTACK,
            &[json!({"device_id": "0101010101010101", "seq": 0,
                     "ts": "2022-07-18T09:34:15.775023242+00:00"})],
        );
    }

    #[test]
    fn the_with_fill_fixture_keeps_two_same_second_readings() {
        let p = plan_of(Format::ChirpStack, CHIRPSTACK_WITH_FILL);
        assert_eq!(p.received, 2);
        assert!(p.rejected.is_empty());
        let group = &p.devices[0];
        assert_eq!(group.device_id, "0101010101010101");
        let got: Vec<_> = group.readings.iter().map(|r| (r.index, r.seq)).collect();
        assert_eq!(got, vec![(0, 41), (1, 42)]);
        assert_ne!(group.readings[0].key, group.readings[1].key);
        assert_eq!(group.readings[0].ts, group.readings[1].ts);
    }

    #[test]
    fn a_buffered_burst_inside_one_uplink_keeps_same_second_readings() {
        let body = with(
            CHIRPSTACK,
            &["object"],
            json!({"readings": [
                {"seq": 41, "ts": "2026-07-16T09:00:00Z", "fill_pct": 62.5},
                {"seq": 42, "ts": "2026-07-16T09:00:00Z", "fill_pct": 71.0},
                {"fill_pct": 80},
                "garbage",
                {"seq": "43", "fill_pct": 1}
            ]}),
        );
        let p = plan_of(Format::ChirpStack, &body);
        assert_eq!(p.received, 5);
        assert_eq!(p.devices.len(), 1);
        let indices: Vec<_> = p.devices[0].readings.iter().map(|r| r.index).collect();
        assert_eq!(indices, vec![0, 1, 2]);
        assert_eq!(p.devices[0].readings[2].seq, 0, "fCnt absent → 0");
        let codes: Vec<_> = p
            .rejected
            .iter()
            .map(|r| (r.rejection.index, r.rejection.code))
            .collect();
        assert_eq!(codes, vec![(3, "invalid_reading"), (4, "invalid_seq")]);
        assert_eq!(p.rejected[0].device_id, None);
        assert_eq!(p.rejected[1].device_id.as_deref(), Some("0101010101010101"));
    }

    #[test]
    fn field_names_can_be_overridden() {
        let names = FieldNames::new(Some("counter"), Some("time"), Some("fillLevel")).unwrap();
        let body = with(
            CHIRPSTACK,
            &["object"],
            json!({"fillLevel": 40, "counter": 9, "time": "2026-07-16T09:00:00Z"}),
        );
        let p = plan(Format::ChirpStack, body.as_bytes(), &names, 10).unwrap();
        let r = &p.devices[0].readings[0];
        assert_eq!((r.seq, r.fill_pct), (9, 40.0));
        // The hint names the renamed member.
        let p = plan(Format::ChirpStack, CHIRPSTACK.as_bytes(), &names, 10).unwrap();
        assert!(p.rejected[0].rejection.message.contains("no \"fillLevel\""));
    }

    #[test]
    fn mapped_readings_keep_the_shared_vector_keys() {
        // A reading that passes through the mapping keeps its idempotency key.
        let vectors: Value =
            serde_json::from_str(include_str!("../../tests/vectors/keys.json")).unwrap();
        for v in vectors["vectors"].as_array().unwrap() {
            let r = &v["reading"];
            let body = with(
                CHIRPSTACK,
                &[],
                json!({"deviceInfo": {"devEui": r["device_id"]}, "object": {
                    "seq": r["seq"], "ts": r["ts"], "fill_pct": r["fill_pct"]}}),
            );
            let p = plan_of(Format::ChirpStack, &body);
            let mut expected = v["key"].as_str().unwrap().to_owned();
            // A DevEUI is upper-cased; the key's device part follows.
            let id = r["device_id"].as_str().unwrap();
            expected.replace_range(..id.len(), &canonical_device_id(id.into()));
            assert_eq!(p.devices[0].readings[0].key, expected, "{}", v["name"]);
        }
    }

    #[test]
    fn chirpstack_names_its_codec_and_bin_in_tags_or_the_profile_name() {
        let raw = raw_of(Format::ChirpStack, CHIRPSTACK_UP);
        assert_eq!(
            raw,
            json!({"device_id": "0101010101010101", "f_port": 1, "payload": [0xaa],
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
}
