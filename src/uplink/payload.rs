//! One uplink's raw payload as keyed readings of its device ([`payload_readings`],
//! `readingsFromPayload`): what the worker admits for a [`RawUplink`] (`raw.rs`) once
//! it knows the device's codec and bin. The codec reads the bytes ([`decode_on`]); the
//! rules that make its samples readings (ts, seq, fill level, the schedule phase,
//! device clocks) are the codec's, in `src/codec/readings.rs` ("module docs" below
//! means those); here each reading is keyed as every reading is, and given its
//! sample's identity in the radio frame.
//!
//! [`RawUplink`]: super::RawUplink

use crate::codec::{decode_on, readings, Battery, Codec, DeviceConfig, DeviceState, FrameMeta};
use crate::dedupe::error::{Error, Rejection};
use crate::dedupe::key::{digest_of_parts, idempotency_key};
use crate::dedupe::keyed::KeyedReading;
use crate::dedupe::reading::{canonical_device_id, check_device_id, Reading};
use serde::Serialize;
use std::borrow::Cow;

/// One uplink's raw payload as keyed readings of `device_id`: what the worker admits.
/// Serialises as `{codec, battery, readings: [{index, key, seq, ts, fill_pct,
/// frame}], rejected: [{index, field, code, message}], counter_ref, schedule_phase_s}`; `index` is the
/// sample's place in the payload.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct PayloadReadings {
    /// The codec's id.
    pub codec: &'static str,
    pub battery: Option<Battery>,
    pub readings: Vec<KeyedReading>,
    pub rejected: Vec<Rejection>,
    /// The application-counter reference to store for the next uplink.
    pub counter_ref: Option<i64>,
    /// The schedule phase to store for the next uplink (Tekelek; module docs).
    pub schedule_phase_s: Option<i64>,
}

/// Decodes `bytes` with `codec` (on the device's `application_port`, when its
/// configuration names one: [`decode_on`]), makes each sample a reading by the codec's rules
/// ([`readings`]) and keys it for `device_id` (checked and written as every
/// reading's: a DevEUI in upper case): decode, [`readings`] and the core's validation
/// and key, in one call.
///
/// A reading's `frame` is the sample's identity in the radio frame `meta.frame` (16
/// hex digits of SHA-256 over the frame's and the sample's index, length-prefixed)
/// when its `ts` derives from the receive time (rules 2 and 3 of ts in
/// `src/codec/readings.rs`: Tekelek's slot, the receive time itself), as a network
/// server's reading keyed at its receive time
/// has one: a copy of the frame received later gives the same. `None` for a reading
/// dated by the device's clock, whose `ts` no copy changes, and for every reading
/// when `meta.frame` is `None`.
///
/// # Errors
/// `invalid_device_id`; `invalid_config` for a number outside its range
/// or an application port `codec` has none of ([`DeviceConfig::check`], [`decode_on`];
/// the route checks them first); [`decode_on`]'s `invalid_payload` and `unsupported_port`;
/// [`Error::MissingReportingPeriod`]. A sample's own problem is in
/// [`PayloadReadings::rejected`].
pub fn payload_readings(
    device_id: &str,
    codec: Codec,
    config: &DeviceConfig,
    f_port: u32,
    bytes: &[u8],
    meta: &FrameMeta,
    state: DeviceState,
) -> Result<PayloadReadings, Error> {
    check_device_id(device_id)?;
    config.check()?;
    let uplink = decode_on(codec, config.application_port, f_port, bytes)?;
    let got = readings(
        config,
        &uplink,
        meta,
        DeviceState {
            counter_ref: state.counter_ref,
            schedule_phase_s: state.schedule_phase_s,
        },
    )?;
    let device_id = canonical_device_id(Cow::Borrowed(device_id));
    let mut out = PayloadReadings {
        codec: codec.id(),
        battery: uplink.battery,
        readings: Vec::new(),
        rejected: Vec::new(),
        counter_ref: got.counter_ref,
        schedule_phase_s: got.schedule_phase_s,
    };
    for (index, (each, sample)) in got.each.into_iter().zip(&uplink.samples).enumerate() {
        match each {
            Ok(r) => {
                let reading = Reading {
                    device_id: device_id.clone(),
                    seq: r.seq,
                    ts: r.ts,
                    fill_pct: r.fill_pct,
                };
                out.readings.push(KeyedReading {
                    index,
                    key: idempotency_key(&reading),
                    seq: r.seq,
                    ts: r.ts,
                    fill_pct: r.fill_pct,
                    frame: meta
                        .frame
                        .filter(|_| sample.device_time_s.is_none())
                        .map(|frame| sample_frame(frame, index)),
                });
            }
            Err(e) => out.rejected.push(Rejection::new(index, &e)),
        }
    }
    Ok(out)
}

/// The identity of sample `index` of the radio frame `frame`, in 16 lower-case hex
/// digits.
fn sample_frame(frame: u64, index: usize) -> String {
    let (frame, index) = (format!("{frame:016x}"), index.to_string());
    format!("{:016x}", digest_of_parts([frame.as_str(), index.as_str()]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::test_kit::{config, hex, meta};

    const HOUR_S: u32 = 3600;

    #[test]
    fn a_payload_becomes_keyed_readings_of_its_device_whatever_the_frame_counter() {
        let history = hex("20CE9E744663D20420CE3A824663D004");
        let cfg = config(1500, 0, None);
        let meta = |f_cnt| FrameMeta {
            received_at: 1_700_000_000_000_000,
            f_cnt,
            frame: None,
        };
        let run = |id: &str, f_cnt| {
            payload_readings(
                id,
                Codec::MilesightEm500Udl,
                &cfg,
                85,
                &history,
                &meta(f_cnt),
                DeviceState::default(),
            )
        };
        let got = run("24e124136b502217", 7).unwrap();
        assert_eq!(got.codec, "milesight-iot/em500-udl");
        assert_eq!(got.readings.len(), 2);
        assert!(got.rejected.is_empty());
        for (i, r) in got.readings.iter().enumerate() {
            let reading = Reading {
                device_id: Cow::Borrowed("24E124136B502217"),
                seq: r.seq,
                ts: r.ts,
                fill_pct: r.fill_pct,
            };
            assert_eq!(
                (r.index, r.key.clone(), r.frame.clone()),
                (i, idempotency_key(&reading), None)
            );
        }
        // After a rejoin (a new frame counter) the same records key the same.
        assert_eq!(run("24E124136B502217", 1).unwrap().readings, got.readings);
        assert_eq!(run("", 7).unwrap_err().code(), "invalid_device_id");
    }

    /// The frames of a payload's readings, keyed with frame identity `frame`, received
    /// at `received_at`.
    fn frames_of(
        codec: Codec,
        f_port: u32,
        bytes: &[u8],
        received_at: &str,
        frame: Option<u64>,
    ) -> Vec<Option<String>> {
        let meta = FrameMeta {
            frame,
            ..meta(received_at, 7)
        };
        let got = payload_readings(
            "bin-1",
            codec,
            &config(3000, 200, Some(6 * HOUR_S)),
            f_port,
            bytes,
            &meta,
            DeviceState::default(),
        )
        .unwrap();
        assert!(got.rejected.is_empty());
        got.readings.into_iter().map(|r| r.frame).collect()
    }

    #[test]
    fn a_reading_dated_by_the_receive_time_gets_its_sample_identity_in_the_frame() {
        const FRAME: u64 = 0x0123_4567_89ab_cdef;
        // SHA-256 of "16:0123456789abcdef1:0" and "16:0123456789abcdef1:1" (Python's
        // hashlib), the first 8 bytes.
        assert_eq!(sample_frame(FRAME, 0), "f38390fddd9cd03d");
        assert_eq!(sample_frame(FRAME, 1), "3efdd590fb5bd2c3");
        // A live sample: its receive time is its ts. A copy of the frame, received
        // later, gives the same identity; another frame another.
        let live = hex("0175640382D204");
        let at = "2026-07-16T09:00:05Z";
        let em310 =
            |received_at, frame| frames_of(Codec::MilesightEm310Udl, 85, &live, received_at, frame);
        assert_eq!(em310(at, Some(FRAME)), vec![Some(sample_frame(FRAME, 0))]);
        assert_eq!(
            em310("2026-07-16T09:03:00Z", Some(FRAME)),
            em310(at, Some(FRAME))
        );
        assert_ne!(em310(at, Some(FRAME + 1)), em310(at, Some(FRAME)));
        assert_eq!(em310(at, None), vec![None], "no frame given: none");
        // Tekelek's four readings are dated by slots of the receive time: each its own.
        let tek = hex("1000000001121B7701131BAA01121BA90114F274");
        let frames = frames_of(Codec::TekelekTek766, 16, &tek, at, Some(FRAME));
        let want: Vec<_> = (0..4).map(|i| Some(sample_frame(FRAME, i))).collect();
        assert_eq!(frames, want);
        // History records are dated by the device's clock, which no copy changes.
        let history = hex("20CE9E744663D20420CE3A824663D004");
        let frames = frames_of(Codec::MilesightEm500Udl, 85, &history, at, Some(FRAME));
        assert_eq!(frames, vec![None, None]);
    }

    #[test]
    fn a_payload_with_a_sentinel_lists_it_and_bad_numbers_are_refused() {
        // A live distance of 0xFFFD ("no target") next to a battery reading.
        let bytes = hex("01756403 82FDFF");
        let meta = FrameMeta {
            received_at: 1_700_000_000_000_000,
            f_cnt: 3,
            frame: None,
        };
        let got = payload_readings(
            "bin-1",
            Codec::MilesightEm310Udl,
            &config(1000, 0, None),
            85,
            &bytes,
            &meta,
            DeviceState::default(),
        )
        .unwrap();
        assert!(got.readings.is_empty());
        assert_eq!(
            (got.rejected[0].index, got.rejected[0].code),
            (0, "no_reading")
        );
        for bad in [
            config(100_001, 0, None),
            config(1000, 100_001, None),
            config(1000, 0, Some(7 * 86_400 + 1)),
        ] {
            let e = payload_readings(
                "bin-1",
                Codec::MilesightEm310Udl,
                &bad,
                85,
                &bytes,
                &meta,
                DeviceState::default(),
            )
            .unwrap_err();
            assert_eq!(e.code(), "invalid_config");
        }
        let e = payload_readings(
            "bin-1",
            Codec::MilesightEm310Udl,
            &config(1000, 0, None),
            86,
            &bytes,
            &meta,
            DeviceState::default(),
        )
        .unwrap_err();
        assert_eq!(e.code(), "unsupported_port");
    }
}
