//! LORIOT application output, `rx` and `gw` messages (route `loriot`).
//!
//! Notes from LORIOT's docs (`tests/fixtures/webhooks/loriot/`, sources in its
//! README):
//!
//! * Every message has `cmd`. `rx` is an uplink; `gw` ("gateway information") is
//!   the same frame again (same `EUI`, `ts`, `fcnt`, `port`, `data`) with
//!   per-gateway radio details, sent after all gateways reported: both are read, and
//!   are one reading. Other commands are acknowledged and not read. A message
//!   without `cmd` is read as an uplink.
//! * The device is `EUI` (upper-case hex), the frame counter `fcnt`, and `ts` the
//!   receive time in milliseconds since the epoch, written here as an RFC 3339 UTC
//!   string.
//! * `data` is the payload in hex (`encdata` when LORIOT does not hold the AppSKey).
//!   LORIOT documents no decoded payload: every LORIOT reading is rejected with
//!   `missing_fill_pct`, saying so, and its `data` on `port` is the plan's raw
//!   payload ([`super::Plan::raw`]; `encdata` gives none, and the rejection says
//!   why). LORIOT names no device model, so there is no codec hint.

use super::raw::{Encoding, Payload, RawParts};
use super::{atom, dev_eui, frame_counter, ms_to_rfc3339, Envelope, Frame, Message};
use crate::dedupe::error::Error;
use crate::dedupe::json::{Json, Object};
use std::borrow::Cow;

/// The server's name in messages.
pub(super) const LABEL: &str = "LORIOT";

/// Appended to a LORIOT reading's `missing_fill_pct` (the worker replaces the reading
/// with the decoded raw payload where there is one, `raw.rs`; where the payload cannot
/// be read, `raw.rs` appends why).
pub(super) const NO_DECODER: &str = ": LORIOT sends no decoded payload; the worker \
    decodes the raw one (\"data\" on \"port\") of a sensor it has a codec for";

/// The `cmd`s of LORIOT's application output other than the uplinks (`rx`, `gw`),
/// acknowledged by name; any other is acknowledged as `other`.
/// (`tx` is a downlink request and `cq` a cache query, both sent by the application;
/// `txd` confirms a downlink.)
const OTHER_COMMANDS: [&str; 3] = ["tx", "txd", "cq"];

/// The event of a `cmd` LORIOT does not document.
const OTHER: &str = "other";

/// The events acknowledged unread ([`Format::ignored_events`](super::Format::ignored_events)).
pub(super) fn ignored_events() -> impl Iterator<Item = &'static str> {
    OTHER_COMMANDS.iter().copied().chain([OTHER])
}

/// The message's device, frame counter and receive time, for an `rx` or a `gw` (the
/// same frame with gateway details: one reading); any other `cmd` is acknowledged,
/// not read. LORIOT documents no decoded payload, so the envelope has none. The
/// frame's identity is `fcnt`, `port` and `data` (or `encdata`; hex, either case).
///
/// # Errors
/// [`Error::InvalidBurst`] for a `cmd` that is not a string.
pub(super) fn message<'a>(root: &'a Object<'a>) -> Result<Message<'a>, Error> {
    let event = match root.get("cmd") {
        None => "rx",
        Some(Json::Str(c)) if c == "rx" => "rx",
        Some(Json::Str(c)) if c == "gw" => "gw",
        Some(Json::Str(c)) => {
            let known = OTHER_COMMANDS.iter().find(|k| **k == &**c);
            return Ok(Message::Ignored(known.copied().unwrap_or(OTHER)));
        }
        Some(_) => {
            return Err(Error::InvalidBurst(
                "LORIOT message \"cmd\" must be a string".into(),
            ))
        }
    };
    Ok(Message::Uplink(Box::new(Envelope {
        event,
        simulated: false,
        device_id: dev_eui(root.get("EUI")),
        decoded: None,
        frame_counter: frame_counter(root.get("fcnt")),
        received_at: root.get("ts").map(ms_to_rfc3339),
        frame: Frame {
            session: Cow::Borrowed(""),
            counter: atom(root.get("fcnt")),
            port: atom(root.get("port")),
            payload: Cow::Owned(
                atom(root.get("data").or_else(|| root.get("encdata"))).to_ascii_lowercase(),
            ),
        },
        raw: match root.get("data") {
            None if root.get("encdata").is_some() => RawParts {
                payload: Payload::Encrypted,
                ..RawParts::new("data", Encoding::Hex, None, root.get("port"))
            },
            data => RawParts::new("data", Encoding::Hex, data, root.get("port")),
        },
    })))
}

#[cfg(test)]
mod tests {
    use super::super::test_kit::{
        assert_maps, plan_of, raw_of, with, LORIOT, LORIOT_GW, LORIOT_RX,
    };
    use super::super::Envelope;
    use super::message;
    use crate::dedupe::json;
    use crate::uplink::Message;

    const GW: &str = include_str!("../../tests/fixtures/webhooks/loriot/gw.json");
    use super::super::{plan, FieldNames, Format};
    use crate::dedupe::error::Error;
    use serde_json::{json, Value};

    #[test]
    fn the_docs_sample_maps_to_its_metadata() {
        assert_maps(
            Format::Loriot,
            LORIOT,
            &[json!({"device_id": "0102030405060708", "seq": 1,
                     "ts": "2016-08-10T17:37:55.433000+00:00"})],
        );
    }

    /// The envelope of a LORIOT body that is an uplink.
    fn uplink_of(body: &str, check: impl FnOnce(&Envelope<'_>)) {
        let root = json::read(body.as_bytes(), json::Reader::value).unwrap();
        match message(root.as_object().unwrap()) {
            Ok(Message::Uplink(env)) => check(&env),
            _ => panic!("not an uplink: {body}"),
        }
    }

    #[test]
    fn gw_is_the_same_frame_and_other_commands_are_acknowledged() {
        let p = plan_of(Format::Loriot, LORIOT);
        assert_eq!((p.event, p.ignored), ("rx", false));
        let g = plan_of(Format::Loriot, GW);
        assert_eq!((g.event, g.ignored), ("gw", false));
        // As the docs sample has them: the same reading, refused alike.
        assert_eq!(p.rejected, g.rejected);
        let mut frames = Vec::new();
        for body in [
            LORIOT,
            GW,
            &with(
                GW,
                &[],
                json!({"ts": 1470850676000_i64, "data": "0102aabb"}),
            ),
        ] {
            uplink_of(body, |env| frames.push(env.frame.digest(Format::Loriot, 0)));
        }
        assert!(
            frames.iter().all(|f| *f == frames[0]),
            "one frame: {frames:?}"
        );
        uplink_of(&with(GW, &[], json!({"data": "0102AABC"})), |env| {
            assert_ne!(env.frame.digest(Format::Loriot, 0), frames[0]);
        });
        for (cmd, event) in [
            ("txd", "txd"),
            ("tx", "tx"),
            ("cq", "cq"),
            ("mcast", "other"),
        ] {
            let body = format!(r#"{{"cmd":"{cmd}","EUI":"01"}}"#);
            let other = plan(Format::Loriot, body.as_bytes(), &FieldNames::default(), 10);
            assert_eq!(other.map(|p| (p.event, p.ignored)), Ok((event, true)));
        }
        assert!(matches!(
            plan(Format::Loriot, br#"{"cmd":7}"#, &FieldNames::default(), 10),
            Err(Error::InvalidBurst(_))
        ));
    }

    #[test]
    fn every_reading_says_loriot_sends_no_decoded_payload() {
        // A `decoded` member is not LORIOT's: it is not read.
        let l = with(LORIOT, &[], json!({"decoded": {"fill_pct": 12}}));
        let r = &plan_of(Format::Loriot, &l).rejected[0].rejection;
        assert_eq!(r.code, "missing_fill_pct");
        assert!(
            r.message.contains("LORIOT sends no decoded payload"),
            "{}",
            r.message
        );
    }

    #[test]
    fn lower_case_dev_euis_are_upper_cased_and_bad_ones_rejected() {
        let l = with(LORIOT, &[], json!({"EUI": "abcdef0102030405"}));
        let p = plan_of(Format::Loriot, &l);
        assert_eq!(p.rejected[0].device_id.as_deref(), Some("ABCDEF0102030405"));
        let l = with(LORIOT, &[], json!({"EUI": 7}));
        let p = plan_of(Format::Loriot, &l);
        assert_eq!(p.rejected[0].rejection.code, "invalid_device_id");
        assert_eq!(p.rejected[0].device_id, None);
        let l = with(LORIOT, &[], json!({"EUI": ""}));
        assert_eq!(
            plan_of(Format::Loriot, &l).rejected[0].rejection.code,
            "missing_device_id"
        );
    }

    #[test]
    fn millisecond_times_out_of_range_are_rejected_not_wrapped() {
        for ts in [
            json!(1e300),
            json!(i64::MAX),
            json!(1470850675433.0),
            json!("1470850675433"),
        ] {
            let l = with(LORIOT, &[], json!({ "ts": ts }));
            assert_eq!(
                plan_of(Format::Loriot, &l).rejected[0].rejection.code,
                "invalid_ts",
                "{ts}"
            );
        }
    }

    #[test]
    fn loriot_rx_and_gw_hand_on_the_same_hex_and_encdata_says_why_not() {
        let rx = raw_of(Format::Loriot, LORIOT_RX);
        assert_eq!(
            rx,
            json!({"device_id": "0102030405060708", "f_port": 1, "payload": [1, 2, 0xaa, 0xbb],
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
}
