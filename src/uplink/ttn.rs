//! The Things Stack (v3) webhook, "Uplink message" event, JSON format (route `ttn`,
//! alias `tts`).
//!
//! Notes from the docs' sample (`tests/fixtures/webhooks/tts-v3-uplink-docs-example.json`):
//!
//! * The device is `end_device_ids`: `dev_eui` (hex), and `device_id`, the
//!   application's own name for it. `dev_eui` may be absent (a device registered
//!   without one); then `device_id` names the device.
//! * Everything about the frame is under `uplink_message`: `f_cnt`, `frm_payload`,
//!   `decoded_payload` (the payload formatter's output, absent without one) and
//!   `received_at`, the Network Server's receive time. The top-level `received_at`
//!   is the Application Server's, used when the message has none.
//! * The JSON is protobuf's JSON mapping, which omits zero values: a missing `f_cnt`
//!   is frame 0.
//! * Times carry nanoseconds (`2020-02-12T15:15:45.789585559Z`); the core truncates
//!   them to microseconds.
//! * Every message type ticked on the webhook may be posted to the same URL (when
//!   the per-message paths are left empty). A message is the `ApplicationUp` of
//!   `messages.proto`: its type is the one member of [`EVENTS`] it has. Every type
//!   but `uplink_message` is acknowledged and not read (`uplink_normalized` is the
//!   same frame again, normalized); a message with `end_device_ids` but none of
//!   these members (a type newer than this list) is acknowledged as `unknown`.
//! * `"simulated": true` marks the console's "Simulate uplink".
//! * The webhook's field mask ("Filter event data", paths such as `end_device_ids`,
//!   `up.uplink_message.f_cnt`) keeps only what it lists, nothing implicitly: an
//!   uplink without `end_device_ids` is refused as a whole (`field_mask_incomplete`,
//!   [`MASK_HINT`] names the paths to keep), since none of its readings has a device;
//!   another message type whose member the mask removed arrives as the common
//!   members alone (or `{}`), and is acknowledged as `unknown`. Without `simulated`
//!   in the mask, a simulated uplink cannot be told from a real one.
//! * The frame's identity: `uplink_message.session_key_id` (a new one with every
//!   join), `f_cnt`, `f_port`, `frm_payload`.
//! * The raw payload ([`super::Plan::raw`]) is `uplink_message.frm_payload` (base64,
//!   protobuf's JSON of bytes; absent when empty) on `f_port`; the codec hint is
//!   `uplink_message.version_ids` (`brand_id`, `model_id`: the device's entry in the
//!   TTN device repository, set when it was registered from it) read as
//!   `brand_id/model_id`.

use super::raw::{version_ids_codec, Encoding, RawParts};
use super::{atom, dev_eui, frame_counter, path, scalar, Envelope, Frame, Message};
use crate::dedupe::error::Error;
use crate::dedupe::json::{Json, Object};

/// The server's name in messages.
pub(super) const LABEL: &str = "The Things Stack";

/// The message members of `ApplicationUp`, one per message type; the first is the
/// uplink.
const EVENTS: [&str; 11] = [
    "uplink_message",
    "uplink_normalized",
    "join_accept",
    "downlink_ack",
    "downlink_nack",
    "downlink_sent",
    "downlink_failed",
    "downlink_queued",
    "downlink_queue_invalidated",
    "location_solved",
    "service_data",
];

/// The event of a message with none of [`EVENTS`] (acknowledged, not read).
const UNKNOWN: &str = "unknown";

/// The events acknowledged unread ([`Format::ignored_events`](super::Format::ignored_events)):
/// every message type but the uplink, and [`UNKNOWN`].
pub(super) fn ignored_events() -> impl Iterator<Item = &'static str> {
    EVENTS[1..].iter().copied().chain([UNKNOWN])
}

/// The members every `ApplicationUp` may have besides its message: a body with one
/// of them (or none at all) is a The Things Stack message even when a field mask
/// removed its message member.
const COMMON: [&str; 4] = [
    "end_device_ids",
    "correlation_ids",
    "received_at",
    "simulated",
];

/// What `field_mask_incomplete` says: the paths a webhook's field mask must keep.
pub(super) const MASK_HINT: &str = "The Things Stack uplink has no \"end_device_ids\" \
    (dev_eui or device_id): the webhook's \"Filter event data\" field mask removed them. \
    Keep at least end_device_ids, simulated, received_at, up.uplink_message.f_cnt, \
    up.uplink_message.f_port, up.uplink_message.frm_payload, \
    up.uplink_message.decoded_payload, up.uplink_message.received_at and \
    up.uplink_message.session_key_id, or clear the filter";

/// The message's envelope when it is an uplink, else its type.
///
/// # Errors
/// [`Error::InvalidBurst`] when the body is no `ApplicationUp` message (none of
/// [`EVENTS`], no `end_device_ids`) or its `uplink_message` is not an object;
/// [`Error::FieldMaskIncomplete`] for an uplink without its device identifiers.
pub(super) fn message<'a>(root: &'a Object<'a>) -> Result<Message<'a>, Error> {
    let Some(msg) = root.get(EVENTS[0]) else {
        let event = EVENTS.iter().find(|e| root.get(e).is_some());
        return match event {
            Some(event) => Ok(Message::Ignored(event)),
            None if root.is_empty() || COMMON.iter().any(|m| root.get(m).is_some()) => {
                Ok(Message::Ignored(UNKNOWN))
            }
            None => Err(Error::InvalidBurst(
                "not a The Things Stack message: none of end_device_ids, correlation_ids, \
                 received_at, uplink_message, join_accept, downlink_*, location_solved, \
                 service_data"
                    .into(),
            )),
        };
    };
    let msg = msg.as_object().ok_or_else(|| {
        Error::InvalidBurst(
            "not a The Things Stack uplink: \"uplink_message\" is not an object".into(),
        )
    })?;
    // Absent, or an object without either identifier: the mask removed them.
    let masked = match root.get("end_device_ids") {
        None => true,
        Some(Json::Object(ids)) => ids.get("dev_eui").is_none() && ids.get("device_id").is_none(),
        Some(_) => false,
    };
    if masked {
        return Err(Error::FieldMaskIncomplete(MASK_HINT));
    }
    let device_id = dev_eui(path(root, &["end_device_ids", "dev_eui"])).or_else(|| {
        path(root, &["end_device_ids", "device_id"])
            .filter(|v| v.as_str() != Some(""))
            .map(scalar)
    });
    Ok(Message::Uplink(Box::new(Envelope {
        event: EVENTS[0],
        simulated: matches!(root.get("simulated"), Some(Json::Bool(true))),
        device_id,
        decoded: msg.get("decoded_payload"),
        frame_counter: frame_counter(msg.get("f_cnt")),
        received_at: msg
            .get("received_at")
            .or_else(|| root.get("received_at"))
            .map(scalar),
        frame: Frame {
            session: atom(msg.get("session_key_id")),
            counter: atom(msg.get("f_cnt")),
            port: atom(msg.get("f_port")),
            payload: atom(msg.get("frm_payload")),
        },
        raw: RawParts {
            codec_hint: version_ids_codec(msg.get("version_ids")),
            ..RawParts::new(
                "frm_payload",
                Encoding::Base64,
                msg.get("frm_payload"),
                msg.get("f_port"),
            )
        },
    })))
}

#[cfg(test)]
mod tests {
    use super::super::test_kit::{
        assert_maps, plan_err, plan_of, raw_of, tts_em500, with, TTS, TTS_UPLINK, TTS_WITH_FILL,
    };
    use super::super::Format;
    use crate::dedupe::timestamp::isoformat;
    use serde_json::{json, Value};

    #[test]
    fn the_docs_sample_maps_to_its_metadata() {
        assert_maps(
            Format::Tts,
            TTS,
            &[json!({"device_id": "0004A30B001C0530", "seq": 1,
                     "ts": "2020-02-12T15:15:45.789585559Z"})],
        );
    }

    #[test]
    fn the_with_fill_fixture_is_one_keyed_reading() {
        let p = plan_of(Format::Tts, TTS_WITH_FILL);
        assert!(p.rejected.is_empty());
        assert_eq!(p.devices.len(), 1);
        assert_eq!(p.devices[0].device_id, "0004A30B001C0530");
        let r = &p.devices[0].readings[0];
        // The key the README shows for this fixture.
        assert_eq!(r.key, "0004A30B001C0530:1:d7f366a3cb678f45");
        assert_eq!((r.index, r.seq, r.fill_pct), (0, 1, 62.5));
        assert_eq!(isoformat(r.ts), "2020-02-12T15:15:45.789585+00:00");
    }

    #[test]
    fn decoded_fields_win_over_the_fallbacks() {
        let body = with(
            TTS,
            &["uplink_message", "decoded_payload"],
            json!({"fill_pct": 62.5, "seq": 41, "ts": "2026-07-16T09:00:00Z"}),
        );
        let p = plan_of(Format::Tts, &body);
        assert_eq!(p.devices.len(), 1);
        let r = &p.devices[0].readings[0];
        assert_eq!((r.seq, r.fill_pct), (41, 62.5));
        assert_eq!(isoformat(r.ts), "2026-07-16T09:00:00+00:00");
        let fallback = with(
            TTS,
            &["uplink_message", "decoded_payload"],
            json!({"fill_pct": 10}),
        );
        let r = &plan_of(Format::Tts, &fallback).devices[0].readings[0];
        assert_eq!(r.seq, 1);
        assert_eq!(isoformat(r.ts), "2020-02-12T15:15:45.789585+00:00");
    }

    #[test]
    fn a_tts_uplink_without_f_cnt_has_seq_zero() {
        let mut v: Value = serde_json::from_str(TTS).unwrap();
        v["uplink_message"].as_object_mut().unwrap().remove("f_cnt");
        v["uplink_message"]["decoded_payload"] = json!({"fill_pct": 50});
        let p = plan_of(Format::Tts, &v.to_string());
        assert_eq!(p.devices[0].readings[0].seq, 0);
    }

    #[test]
    fn tts_falls_back_to_the_device_id_without_a_dev_eui() {
        let mut v: Value = serde_json::from_str(TTS).unwrap();
        v["end_device_ids"]
            .as_object_mut()
            .unwrap()
            .remove("dev_eui");
        v["uplink_message"]
            .as_object_mut()
            .unwrap()
            .remove("received_at");
        // The top-level received_at.
        assert_maps(
            Format::Tts,
            &v.to_string(),
            &[json!({"device_id": "dev1", "seq": 1,
                     "ts": "2020-02-12T15:15:46.014773143Z"})],
        );
        // An empty dev_eui is absent too; an empty device_id is no device.
        v["end_device_ids"]["dev_eui"] = json!("");
        v["end_device_ids"]["device_id"] = json!("");
        assert_maps(
            Format::Tts,
            &v.to_string(),
            &[json!({"seq": 1, "ts": "2020-02-12T15:15:46.014773143Z"})],
        );
        let body = with(
            &v.to_string(),
            &["uplink_message", "decoded_payload"],
            json!({"fill_pct": 1}),
        );
        let p = plan_of(Format::Tts, &body);
        assert_eq!(p.rejected[0].rejection.code, "missing_device_id");
        assert_eq!(p.rejected[0].device_id, None);
    }

    #[test]
    fn every_other_message_type_is_acknowledged_unread() {
        let p = |b: &str| super::super::plan(Format::Tts, b.as_bytes(), &Default::default(), 10);
        for event in super::EVENTS.iter().skip(1) {
            let body = format!(r#"{{"end_device_ids":{{"device_id":"d"}},"{event}":{{}}}}"#);
            let plan = p(&body).unwrap();
            assert_eq!((plan.event, plan.ignored, plan.received), (*event, true, 0));
            assert!(plan.devices.is_empty() && plan.rejected.is_empty());
        }
        // A type newer than the list: still a The Things Stack message.
        let plan = p(r#"{"end_device_ids":{"device_id":"d"},"relay_notice":{}}"#).unwrap();
        assert_eq!((plan.event, plan.ignored), ("unknown", true));
        // A mask without the message's member leaves the common members, or nothing.
        for masked in [r#"{"received_at":"2020-02-12T15:15:46Z"}"#, "{}"] {
            assert_eq!(
                p(masked).map(|p| (p.event, p.ignored)),
                Ok(("unknown", true))
            );
        }
        let code = |b: &str| p(b).unwrap_err().code();
        assert_eq!(code(r#"{"join_acept":{}}"#), "invalid_burst");
        assert_eq!(code(r#"{"deviceInfo":{},"object":{}}"#), "invalid_burst");
        assert_eq!(
            code(r#"{"end_device_ids":{},"uplink_message":[]}"#),
            "invalid_burst"
        );
        assert_eq!(code("[]"), "invalid_burst");
    }

    #[test]
    fn an_uplink_whose_ids_were_masked_names_the_paths_to_keep() {
        let mut v: Value = serde_json::from_str(TTS_WITH_FILL).unwrap();
        v.as_object_mut().unwrap().remove("end_device_ids");
        let e = plan_err(Format::Tts, &v.to_string());
        assert_eq!(e.code(), "field_mask_incomplete");
        for path in [
            "end_device_ids",
            "up.uplink_message.decoded_payload",
            "up.uplink_message.f_cnt",
        ] {
            assert!(e.to_string().contains(path), "{path}: {e}");
        }
        // An object without either identifier is a mask too; empty ones are not.
        v["end_device_ids"] = json!({"application_ids": {"application_id": "app"}});
        let e = plan_err(Format::Tts, &v.to_string());
        assert_eq!(e.code(), "field_mask_incomplete");
        v["end_device_ids"] = json!({"device_id": "dev1"});
        assert_eq!(
            plan_of(Format::Tts, &v.to_string()).devices[0].device_id,
            "dev1"
        );
    }

    #[test]
    fn a_simulated_uplink_is_planned_and_marked() {
        let real = plan_of(Format::Tts, TTS_WITH_FILL);
        assert!(!real.simulated);
        let sim = plan_of(
            Format::Tts,
            &with(TTS_WITH_FILL, &[], json!({"simulated": true})),
        );
        assert!(sim.simulated);
        assert_eq!(sim.devices, real.devices, "the outcome it would have had");
        // Only `true` marks it.
        let not = plan_of(
            Format::Tts,
            &with(TTS_WITH_FILL, &[], json!({"simulated": "true"})),
        );
        assert!(!not.simulated);
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
            (&json!([0x82, 0x41, 0xde]), &json!(1), &Value::Null)
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
            (&json!(0), &json!([0x20, 0x2c]))
        );
    }
}
