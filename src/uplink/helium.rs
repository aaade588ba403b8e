//! Helium console HTTP integration, uplink (route `helium`).
//!
//! Notes from the docs' sample (`tests/fixtures/webhooks/helium-console-uplink-docs-example.json`):
//!
//! * The device is `dev_eui` (upper-case hex); `name` is a display name.
//! * `payload` is the raw frame payload (base64); a function decoder's output is
//!   read from `decoded.payload`.
//! * `fcnt` is the frame counter; `reported_at` is milliseconds since the epoch,
//!   written here as an RFC 3339 UTC string (`hotspots[].reported_at` are per
//!   hotspot and not used). The docs' own sample has one digit too many
//!   (`15868685461234`, year 2472); it is still a valid instant and converted as
//!   given.
//! * The raw payload ([`super::Plan::raw`]) is `payload` (base64) on `port`; Helium
//!   names no device model, so there is no codec hint.

use super::raw::{Encoding, RawParts};
use super::{atom, dev_eui, frame_counter, ms_to_rfc3339, path, Envelope, Frame, Message};
use crate::dedupe::error::Error;
use crate::dedupe::json::{Json, Object};

/// The server's name in messages.
pub(super) const LABEL: &str = "Helium";

/// The events acknowledged unread ([`Format::ignored_events`](super::Format::ignored_events)):
/// a `join`, and every other `type` but `uplink` as `other`.
pub(super) const IGNORED: [&str; 2] = ["join", "other"];

/// The uplink's device, decoded payload, frame counter and report time; a message
/// whose `type` is not `uplink` (a `join`) is acknowledged, not read. The frame's
/// identity is `devaddr`, `fcnt`, `port` and `payload`.
///
/// # Errors
/// [`Error::InvalidBurst`] for a `type` that is not a string.
pub(super) fn message<'a>(root: &'a Object<'a>) -> Result<Message<'a>, Error> {
    match root.get("type") {
        None => {}
        Some(Json::Str(t)) if t == "uplink" => {}
        Some(Json::Str(t)) if t == IGNORED[0] => return Ok(Message::Ignored(IGNORED[0])),
        Some(Json::Str(_)) => return Ok(Message::Ignored(IGNORED[1])),
        Some(_) => {
            return Err(Error::InvalidBurst(
                "Helium message \"type\" must be a string".into(),
            ))
        }
    }
    Ok(Message::Uplink(Box::new(Envelope {
        event: "uplink",
        simulated: false,
        device_id: dev_eui(root.get("dev_eui")),
        decoded: path(root, &["decoded", "payload"]),
        frame_counter: frame_counter(root.get("fcnt")),
        received_at: root.get("reported_at").map(ms_to_rfc3339),
        frame: Frame {
            session: atom(root.get("devaddr")),
            counter: atom(root.get("fcnt")),
            port: atom(root.get("port")),
            payload: atom(root.get("payload")),
        },
        raw: RawParts::new(
            "payload",
            Encoding::Base64,
            root.get("payload"),
            root.get("port"),
        ),
    })))
}

#[cfg(test)]
mod tests {
    use super::super::test_kit::{assert_maps, plan_of, raw_of, with, HELIUM, HELIUM_UPLINK};
    use super::super::Format;
    use serde_json::json;

    #[test]
    fn the_docs_sample_maps_to_its_metadata() {
        assert_maps(
            Format::Helium,
            HELIUM,
            &[json!({"device_id": "1C29FBD1D2084E21", "seq": 19,
                     "ts": "2472-11-09T08:11:01.234000+00:00"})],
        );
    }

    #[test]
    fn the_decoded_payload_gives_the_fill_level() {
        let h = with(HELIUM, &["decoded", "payload"], json!({"fill_pct": 33.5}));
        let p = plan_of(Format::Helium, &h);
        let r = &p.devices[0].readings[0];
        assert_eq!((r.seq, r.fill_pct), (19, 33.5));
        assert!(r.key.starts_with("1C29FBD1D2084E21:19:"));
        // `decoded` without `payload` is no decoded payload.
        let h = with(HELIUM, &["decoded"], json!({"fill_pct": 33.5}));
        let p = plan_of(Format::Helium, &h);
        assert_eq!(p.rejected[0].rejection.code, "missing_fill_pct");
    }

    #[test]
    fn helium_hands_on_its_payload_without_a_hint() {
        let raw = raw_of(Format::Helium, HELIUM_UPLINK);
        assert_eq!(
            raw,
            json!({"device_id": "1C29FBD1D2084E21", "f_port": 1,
                   "payload": b"Hello, world!".to_vec(),
                   "received_at": "2472-11-09T08:11:01.234000+00:00", "f_cnt": 19,
                   "frame": "8139aa6e7e7ce6f1", "codec_hint": null, "config_hint": {}})
        );
    }
}
