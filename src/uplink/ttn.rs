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
//! * Other event types (join accept, downlink ack, ...) have no `uplink_message` and
//!   are refused (`invalid_burst`); enable only "Uplink message" on the webhook.

use super::json::Object;
use super::{dev_eui, frame_counter, path, scalar, Envelope};
use crate::dedupe::error::Error;

/// The server's name in messages.
pub(super) const LABEL: &str = "The Things Stack";

/// The uplink's device, decoded payload, frame counter and receive time.
///
/// # Errors
/// [`Error::InvalidBurst`] when there is no `uplink_message`, or it is not an object.
pub(super) fn envelope<'a>(root: &'a Object<'a>) -> Result<Envelope<'a>, Error> {
    let msg = match root.get("uplink_message") {
        Some(v) => v.as_object().ok_or_else(|| {
            Error::InvalidBurst(
                "not a The Things Stack uplink: \"uplink_message\" is not an object".into(),
            )
        })?,
        None => {
            return Err(Error::InvalidBurst(
                "not a The Things Stack uplink: no \"uplink_message\" object".into(),
            ))
        }
    };
    let device_id = dev_eui(path(root, &["end_device_ids", "dev_eui"])).or_else(|| {
        path(root, &["end_device_ids", "device_id"])
            .filter(|v| v.as_str() != Some(""))
            .map(scalar)
    });
    Ok(Envelope {
        device_id,
        decoded: msg.get("decoded_payload"),
        frame_counter: frame_counter(msg.get("f_cnt")),
        received_at: msg
            .get("received_at")
            .or_else(|| root.get("received_at"))
            .map(scalar),
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::{assert_maps, plan_of, with, TTS, TTS_WITH_FILL};
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
    fn other_events_and_shapes_are_not_uplinks() {
        let code = |b: &str| {
            super::super::plan(Format::Tts, b.as_bytes(), &Default::default(), 10)
                .unwrap_err()
                .code()
        };
        assert_eq!(
            code(r#"{"end_device_ids":{},"join_accept":{}}"#),
            "invalid_burst"
        );
        assert_eq!(code(r#"{"uplink_message":[]}"#), "invalid_burst");
        assert_eq!(code("[]"), "invalid_burst");
    }
}
