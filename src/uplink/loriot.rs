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
use super::{dev_eui, frame_counter, ms_to_rfc3339, Envelope};
use crate::dedupe::error::Error;

/// The server's name in messages.
pub(super) const LABEL: &str = "LORIOT";

/// The message's device, decoded payload, frame counter and receive time.
///
/// # Errors
/// [`Error::InvalidBurst`] for a message whose `cmd` is not `rx`.
pub(super) fn envelope<'a>(root: &'a Object<'a>) -> Result<Envelope<'a>, Error> {
    if let Some(cmd) = root.get("cmd").and_then(Json::as_str) {
        if cmd != "rx" {
            return Err(Error::InvalidBurst(format!(
                "LORIOT message \"{cmd}\" is not an uplink (\"rx\")"
            )));
        }
    }
    Ok(Envelope {
        device_id: dev_eui(root.get("EUI")),
        decoded: root.get("decoded"),
        frame_counter: frame_counter(root.get("fcnt")),
        received_at: root.get("ts").map(ms_to_rfc3339),
    })
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
    fn the_decoded_object_gives_the_fill_level_and_other_commands_are_refused() {
        let l = with(LORIOT, &["decoded"], json!({"fill_pct": 12}));
        let p = plan_of(Format::Loriot, &l);
        assert_eq!(p.devices[0].device_id, "0102030405060708");
        assert_eq!(p.devices[0].readings[0].fill_pct, 12.0);
        assert!(matches!(
            plan(
                Format::Loriot,
                br#"{"cmd":"gw","EUI":"01"}"#,
                &FieldNames::default(),
                10
            ),
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
