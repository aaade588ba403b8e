//! LORIOT application output, `rx` (uplink) message (route `loriot`).
//!
//! Notes from the docs' sample (`tests/fixtures/webhooks/loriot-rx-docs-example.json`):
//!
//! * Every message has `cmd`; only `rx` is an uplink to read. Others are refused
//!   (`invalid_burst`), among them `gw` ("gateway information"), the same frame
//!   again with per-gateway radio details, sent later than its `rx`. A message
//!   without `cmd` is read as an uplink.
//! * The device is `EUI` (upper-case hex), the frame counter `fcnt`, and `ts` the
//!   receive time in milliseconds since the epoch, written here as an RFC 3339 UTC
//!   string.
//! * `data` is the payload in hex (`encdata` when LORIOT does not hold the AppSKey);
//!   a decoder's output is read from `decoded`.

use super::json::{Json, Object};
use super::{atom, dev_eui, frame_counter, ms_to_rfc3339, Envelope, Frame, Message};
use crate::dedupe::error::Error;
use std::borrow::Cow;

/// The server's name in messages.
pub(super) const LABEL: &str = "LORIOT";

/// The `cmd`s of LORIOT's application output other than the uplinks (`rx`, `gw`),
/// acknowledged by name; any other is acknowledged as `other`.
const OTHER_COMMANDS: [&str; 0] = [];

/// The message's device, decoded payload, frame counter and receive time, for an
/// `rx` or a `gw` (the same frame with gateway details: one reading); any other
/// `cmd` is acknowledged, not read. The frame's identity is `fcnt`, `port` and
/// `data` (hex, in either case).
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
            return Ok(Message::Ignored(known.copied().unwrap_or("other")));
        }
        Some(_) => {
            return Err(Error::InvalidBurst(
                "LORIOT message \"cmd\" must be a string".into(),
            ))
        }
    };
    Ok(Message::Uplink(Envelope {
        event,
        simulated: false,
        device_id: dev_eui(root.get("EUI")),
        decoded: root.get("decoded"),
        frame_counter: frame_counter(root.get("fcnt")),
        received_at: root.get("ts").map(ms_to_rfc3339),
        frame: Frame {
            session: Cow::Borrowed(""),
            counter: atom(root.get("fcnt")),
            port: atom(root.get("port")),
            payload: Cow::Owned(atom(root.get("data")).to_ascii_lowercase()),
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{assert_maps, plan_of, with, LORIOT};
    use super::super::{plan, FieldNames, Format};
    use crate::dedupe::error::Error;
    use serde_json::json;

    #[test]
    fn the_docs_sample_maps_to_its_metadata() {
        assert_maps(
            Format::Loriot,
            LORIOT,
            &[json!({"device_id": "0102030405060708", "seq": 1,
                     "ts": "2016-08-10T17:37:55.433000+00:00"})],
        );
    }

    #[test]
    fn gw_is_the_same_uplink_and_other_commands_are_acknowledged() {
        let rx = with(LORIOT, &["decoded"], json!({"fill_pct": 12}));
        let p = plan_of(Format::Loriot, &rx);
        assert_eq!((p.event, p.ignored), ("rx", false));
        assert_eq!(p.devices[0].device_id, "0102030405060708");
        assert_eq!(p.devices[0].readings[0].fill_pct, 12.0);
        let gw = with(&rx, &[], json!({"cmd": "gw", "ts": 1470850676000_i64}));
        let g = plan_of(Format::Loriot, &gw);
        assert_eq!(g.event, "gw");
        let (r, s) = (&p.devices[0].readings[0], &g.devices[0].readings[0]);
        assert_eq!(r.frame, s.frame, "one frame");
        assert_ne!(r.ts, s.ts);
        let other = plan(
            Format::Loriot,
            br#"{"cmd":"txd","EUI":"01"}"#,
            &FieldNames::default(),
            10,
        );
        assert_eq!(other.map(|p| (p.event, p.ignored)), Ok(("other", true)));
        assert!(matches!(
            plan(Format::Loriot, br#"{"cmd":7}"#, &FieldNames::default(), 10),
            Err(Error::InvalidBurst(_))
        ));
    }

    #[test]
    fn lower_case_dev_euis_are_upper_cased_and_bad_ones_rejected() {
        let l = with(
            LORIOT,
            &[],
            json!({"EUI": "abcdef0102030405", "decoded": {"fill_pct": 1}}),
        );
        let p = plan_of(Format::Loriot, &l);
        assert_eq!(p.devices[0].device_id, "ABCDEF0102030405");
        assert!(p.devices[0].readings[0]
            .key
            .starts_with("ABCDEF0102030405:1:"));
        let l = with(LORIOT, &[], json!({"EUI": 7, "decoded": {"fill_pct": 1}}));
        let p = plan_of(Format::Loriot, &l);
        assert_eq!(p.rejected[0].rejection.code, "invalid_device_id");
        assert_eq!(p.rejected[0].device_id, None);
        let l = with(LORIOT, &[], json!({"EUI": "", "decoded": {"fill_pct": 1}}));
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
            let l = with(LORIOT, &[], json!({"ts": ts, "decoded": {"fill_pct": 1}}));
            assert_eq!(
                plan_of(Format::Loriot, &l).rejected[0].rejection.code,
                "invalid_ts",
                "{ts}"
            );
        }
    }
}
