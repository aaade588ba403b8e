//! Decentlab DL-MBX (`decentlab/dl-mbx`): ultrasonic distance / level sensor.
//!
//! # Sources
//! - Decentlab's decoders, `decentlab/decentlab-decoders` `DL-MBX/DL-MBX.js`,
//!   `DL-MBX/DL-MBX.py`, `DL-MBX/DL-MBX.ELEMENT-IoT.ex` (the same layout in three
//!   languages, each with the two test payloads pinned below).
//! - The TTN device repository, `TheThingsNetwork/lorawan-devices`
//!   `vendor/decentlab/dl-mbx.js` and `vendor/decentlab/dl-mbx-codec.yaml` (the same
//!   decoder; its two examples are the vectors in
//!   `tests/vectors/devices/decentlab-dl-mbx.json`).
//! - The DL-MBX datasheet: each measurement takes 15 samples and discards the
//!   invalid ones; the frame says how many were valid.
//!
//! # Layout (all words big-endian)
//! | bytes | field |
//! | --- | --- |
//! | 0 | protocol version, always 2 |
//! | 1-2 | device id (u16) |
//! | 3-4 | flags (u16): bit 0 the distance group follows, bit 1 the battery group follows |
//! | group bit 0 | distance mm (u16), number of valid samples (u16) |
//! | group bit 1 | battery mV (u16) |
//!
//! The groups follow the flags in bit order; a frame with only bit 1 set is a
//! battery-only report, which is `Ok` with no sample. Flag bits above 1 would announce
//! groups of a later firmware that follow the two known ones: they are skipped with
//! whatever bytes follow, while a frame without them must end exactly after its groups.
//!
//! # Ports
//! Decentlab's decoders read the frame whatever its port (the version byte identifies
//! it; the repository's examples use fPort 1), so every application port 1 ..= 223
//! is read. Port 0 (MAC commands) and 224 ..= 255 (reserved by LoRaWAN) are
//! [`Error::UnsupportedPort`].
//!
//! # Errors and sentinels
//! - A version other than 2, a frame shorter than its flags announce, or bytes after
//!   the announced groups: [`Error::InvalidPayload`].
//! - Number of valid samples 0: the distance is a [`NoReading`] ("no valid sample"):
//!   the device found no echo among its samples, so the distance word means nothing.
//! - Distance 0: a [`NoReading`] (no target).
//!
//! No counter and no device time: the worker keys a DL-MBX reading by its frame
//! counter and receive time.

use super::{Battery, Codec, NoReading, Sample, Uplink};
use crate::dedupe::error::Error;

/// The only protocol version the decoders read.
const PROTOCOL_VERSION: u8 = 2;
/// Flags bit 0: distance and number of valid samples follow.
const DISTANCE_GROUP: u16 = 1 << 0;
/// Flags bit 1: battery voltage follows.
const BATTERY_GROUP: u16 = 1 << 1;

/// The uplink a DL-MBX frame describes.
///
/// # Errors
/// [`Error::UnsupportedPort`] for port 0 and 224 ..= 255; [`Error::InvalidPayload`]
/// for a frame that is not a version 2 DL-MBX frame.
pub(super) fn decode(model: Codec, f_port: u32, bytes: &[u8]) -> Result<Uplink, Error> {
    debug_assert_eq!(model, Codec::DecentlabDlMbx);
    if !(1..=223).contains(&f_port) {
        return Err(Error::UnsupportedPort(f_port));
    }
    let invalid = |why: &str| Error::InvalidPayload(format!("DL-MBX: {why}"));
    match bytes.first() {
        None => return Err(invalid("empty frame")),
        Some(&PROTOCOL_VERSION) => {}
        Some(v) => return Err(invalid(&format!("protocol version {v}, expected 2"))),
    }
    let flags = word(bytes, 3).ok_or_else(|| invalid("no flags"))?;
    let mut at = 5;
    let mut next = || {
        let w = word(bytes, at);
        at += 2;
        w.ok_or_else(|| invalid("shorter than its flags announce"))
    };
    let mut uplink = Uplink::default();
    if flags & DISTANCE_GROUP != 0 {
        let distance = next()?;
        let valid_samples = next()?;
        uplink.samples.push(Sample {
            distance: match (distance, valid_samples) {
                (_, 0) => Err(NoReading("no valid sample")),
                (0, _) => Err(NoReading("distance 0")),
                (mm, _) => Ok(u32::from(mm)),
            },
            device_time_s: None,
            app_counter: None,
            periods_ago: None,
        });
    }
    if flags & BATTERY_GROUP != 0 {
        uplink.battery = Some(Battery::Millivolts(next()?));
    }
    let unknown_groups = flags & !(DISTANCE_GROUP | BATTERY_GROUP) != 0;
    if bytes.len() > at && !unknown_groups {
        return Err(invalid("bytes after the announced groups"));
    }
    Ok(uplink)
}

/// The big-endian u16 at `at`, if the frame holds it.
fn word(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*bytes.get(at)?, *bytes.get(at + 1)?]))
}

#[cfg(test)]
mod tests {
    use super::super::test_kit::{check, decoded, hex, hostile_vectors, live as sample, vectors};
    use super::*;

    const CODEC: Codec = Codec::DecentlabDlMbx;
    const FILE: &str = include_str!("../../tests/vectors/devices/decentlab-dl-mbx.json");

    #[test]
    fn every_vector_decodes_as_the_vendor_decoder_says() {
        for (v, got) in decoded(CODEC, FILE, 2) {
            // The vendor decoder's values, turned into a sample and a battery.
            let e = &v.expected;
            assert_eq!(e["protocol_version"], 2, "{}", v.from);
            let volts = e["battery_voltage"]["value"].as_f64().unwrap();
            let mv = u16::try_from((volts * 1000.0).round() as i64).unwrap();
            assert_eq!(got.battery, Some(Battery::Millivolts(mv)), "{}", v.from);
            let want: Vec<Sample> = match e["distance"]["value"].as_u64() {
                Some(mm) => {
                    assert_eq!(e["distance"]["unit"], "mm");
                    assert!(e["number_of_valid_samples"]["value"].as_u64().unwrap() > 0);
                    vec![sample(Ok(u32::try_from(mm).unwrap()))]
                }
                None => vec![],
            };
            assert_eq!(got.samples, want, "{}", v.from);
        }
        // And literally: 1234 mm from 1 valid sample at 2993 mV; the battery-only frame.
        let one = check(CODEC, 1, &hex("02012F000304D200010BB1")).unwrap();
        assert_eq!(one.samples, vec![sample(Ok(1234))]);
        assert_eq!(one.battery, Some(Battery::Millivolts(2993)));
        let battery_only = check(CODEC, 1, &hex("02012F00020BB1")).unwrap();
        assert_eq!(
            battery_only,
            Uplink {
                samples: vec![],
                battery: Some(Battery::Millivolts(2993))
            }
        );
    }

    #[test]
    fn no_valid_sample_and_distance_zero_are_no_readings() {
        // Example 1 with 0 valid samples, then with distance 0 (both constructed).
        let none_valid = check(CODEC, 1, &hex("02012F000304D200000BB1")).unwrap();
        assert_eq!(
            none_valid.samples,
            vec![sample(Err(NoReading("no valid sample")))]
        );
        let zero = check(CODEC, 1, &hex("02012F00030000000F0BB1")).unwrap();
        assert_eq!(zero.samples, vec![sample(Err(NoReading("distance 0")))]);
        // Distance group alone, no battery.
        let no_battery = check(CODEC, 1, &hex("02012F000104D20001")).unwrap();
        assert_eq!(no_battery.samples, vec![sample(Ok(1234))]);
        assert_eq!(no_battery.battery, None);
    }

    #[test]
    fn wrong_version_length_or_port_is_coded() {
        let code = |port, h: &str| check(CODEC, port, &hex(h)).unwrap_err().code();
        assert_eq!(code(1, "03012F00020BB1"), "invalid_payload");
        assert_eq!(code(1, "01012F00020BB1"), "invalid_payload");
        assert_eq!(code(1, ""), "invalid_payload");
        assert_eq!(code(1, "02012F0003"), "invalid_payload");
        assert_eq!(code(1, "02012F000304D200010B"), "invalid_payload");
        assert_eq!(code(1, "02012F00020BB100"), "invalid_payload");
        assert_eq!(code(0, "02012F00020BB1"), "unsupported_port");
        assert_eq!(code(224, "02012F00020BB1"), "unsupported_port");
        // A later firmware's group (flag bit 2) after the known ones is skipped.
        let later = check(CODEC, 1, &hex("02012F00060BB1ABCD")).unwrap();
        assert_eq!(later.battery, Some(Battery::Millivolts(2993)));
        assert!(check(CODEC, 223, &hex("02012F00020BB1")).is_ok());
    }

    #[test]
    fn hostile_bytes_never_panic_and_answer_a_code() {
        hostile_vectors(CODEC, &vectors(FILE), &[1]);
    }
}
