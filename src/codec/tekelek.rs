//! Tekelek TEK766 (`tekelek/tek766`): ultrasonic tank / level sensor, reporting the
//! *ullage* (the empty height above the contents) in centimetres.
//!
//! # Sources
//! No decoder for it is in the TTN device repository; these were read:
//! - `CampusIoT/payload-codec` `src/main/javascript/tekelec/tekelec_tek766_codec.js`:
//!   message types 0x10 measurement (20 bytes), 0x30 status (18), 0x45 alarm (12).
//! - An ELEMENT IoT parser for the TEK 766 written against Tekelek's
//!   "CF-5004-01 TEK 766 Payload Data Structure R1" (found by its text in the code
//!   index; repository not named there): the same types, product id 0x00, an all-zero
//!   reading is "unavailable", the alarm frame carries the alarming reading and the
//!   previously logged one, ullage in cm; its test payloads, all of fPort 16, 48 or 1.
//! - `akenza-io/device-type-library` `types/tekelek/TEK766/uplink.js` and
//!   `uplink.spec.js`: the same layout, test payloads sent on fPort 1; the vector in
//!   `tests/vectors/devices/tekelek-tek766.json` is its measurement payload.
//!
//! # Layout (words big-endian)
//! A *reading* is 4 bytes: ullage cm (u16), temperature °C (i8), one byte of two
//! nibbles, the sonic result code (SRC, a quality score) and the sonic RSSI (the
//! sources disagree on which nibble is which; neither is read here).
//!
//! | type (byte 0) | length | bytes |
//! | --- | --- | --- |
//! | 0x10 measurement | 20 | 1 product id (0x00) · 2 alarm bits · 3 reserved · 4-19 four readings, newest first |
//! | 0x30 status | 18 | 1 product id · 3 hardware id · 4-5 firmware · 6 contact / reset reason · 8 unit RSSI · 10 battery % · 11-12 measurement steps · 13 transmit period (h) · 14-17 one reading |
//! | 0x45 alarm | 12 | 1 product id · 2 alarm bits · 3 reserved · 4-7 the alarming reading · 8-11 the previously logged reading |
//! | 0x43 parameter read, 0x47 diagnostic read | — | no level |
//!
//! # What becomes a sample
//! - Measurement: the four readings, `periods_ago` 0 (the current one) ..= 3, no
//!   device time: the worker dates them from the receive time rounded to the reporting
//!   period, so the same reading repeated by the next three uplinks keys the same.
//! - Status: its reading, `periods_ago` `None` (it is taken when the status is sent —
//!   at start, on a manual or scheduled contact — not on the reporting schedule, so
//!   the receive time dates it); the battery percentage (0 ..= 100, else none).
//! - Alarm: the alarming reading, `periods_ago` `None` (sent at once, off the schedule).
//!   The previously logged reading is not a sample: it is a scheduled reading whose
//!   place on the schedule this frame does not say, and the measurement uplinks carry
//!   it with its `periods_ago`; guessing would key it wrongly and count it twice.
//! - Ullage in cm × 10 = distance in mm (exact).
//!
//! # Ports
//! The message type, not the port, says what a frame is (the sources show 16, 48 and
//! 1), so every application port 1 ..= 223 is read by its type byte; port 0 and
//! 224 ..= 255 are [`Error::UnsupportedPort`]. The parameter and diagnostic reads carry
//! no level: [`Error::UnsupportedPort`] with the frame's port, so the worker
//! acknowledges them.
//!
//! # Errors and sentinels
//! - An unknown type, another product id, or a length other than the type's:
//!   [`Error::InvalidPayload`].
//! - An all-zero reading (no reading logged yet, e.g. after a reset): a [`NoReading`]
//!   ("empty record"); ullage 0 otherwise: a [`NoReading`] ("distance 0").
//!
//! No counter and no device time in any frame.

use super::{Battery, Codec, NoReading, Sample, Uplink};
use crate::dedupe::error::Error;

/// Message type of the scheduled upload: four readings.
const MEASUREMENT: u8 = 0x10;
/// Message type of the status frame: one reading and the battery.
const STATUS: u8 = 0x30;
/// Message type of the immediate alarm: the alarming reading and the previous one.
const ALARM: u8 = 0x45;
/// Message types without a level: replies to parameter and diagnostic requests.
const PARAMETER_READ: u8 = 0x43;
const DIAGNOSTIC_READ: u8 = 0x47;
/// The TEK 766's product id, byte 1 of every frame.
const PRODUCT_TEK766: u8 = 0x00;

/// The uplink a TEK766 frame describes.
///
/// # Errors
/// [`Error::UnsupportedPort`] for port 0 and 224 ..= 255 and for the frames without a
/// level; [`Error::InvalidPayload`] for anything else that is not a TEK766 frame.
pub(super) fn decode(model: Codec, f_port: u32, bytes: &[u8]) -> Result<Uplink, Error> {
    debug_assert_eq!(model, Codec::TekelekTek766);
    if !(1..=223).contains(&f_port) {
        return Err(Error::UnsupportedPort(f_port));
    }
    let invalid = |why: String| Error::InvalidPayload(format!("TEK766: {why}"));
    let (&kind, rest) = bytes
        .split_first()
        .ok_or_else(|| invalid("empty frame".into()))?;
    let length = match kind {
        MEASUREMENT => 20,
        STATUS => 18,
        ALARM => 12,
        PARAMETER_READ | DIAGNOSTIC_READ => return Err(Error::UnsupportedPort(f_port)),
        other => return Err(invalid(format!("unknown message type 0x{other:02x}"))),
    };
    if bytes.len() != length {
        return Err(invalid(format!(
            "message type 0x{kind:02x} is {length} bytes, this frame {}",
            bytes.len()
        )));
    }
    if rest.first() != Some(&PRODUCT_TEK766) {
        return Err(invalid("product id is not TEK 766 (0x00)".into()));
    }
    let mut uplink = Uplink::default();
    match kind {
        MEASUREMENT => {
            for periods_ago in 0..4u8 {
                let at = 4 + 4 * usize::from(periods_ago);
                uplink.samples.push(reading(bytes, at, Some(periods_ago)));
            }
        }
        STATUS => {
            uplink.samples.push(reading(bytes, 14, None));
            uplink.battery = bytes
                .get(10)
                .filter(|&&pct| pct <= 100)
                .map(|&pct| Battery::Percent(pct));
        }
        _ => uplink.samples.push(reading(bytes, 4, None)),
    }
    Ok(uplink)
}

/// The 4-byte reading at `at` (inside the length checked by [`decode`]; a short
/// frame reads as an empty record rather than panicking).
fn reading(bytes: &[u8], at: usize, periods_ago: Option<u8>) -> Sample {
    let raw = bytes.get(at..at + 4).unwrap_or(&[0; 4]);
    let ullage_cm = u16::from_be_bytes([raw[0], raw[1]]);
    Sample {
        distance: if raw.iter().all(|&b| b == 0) {
            Err(NoReading("empty record"))
        } else if ullage_cm == 0 {
            Err(NoReading("distance 0"))
        } else {
            Ok(u32::from(ullage_cm) * 10)
        },
        device_time_s: None,
        app_counter: None,
        periods_ago,
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_kit::{check, decoded, hex, hostile_vectors, live, vectors};
    use super::*;

    const CODEC: Codec = Codec::TekelekTek766;
    const FILE: &str = include_str!("../../tests/vectors/devices/tekelek-tek766.json");

    fn sample(distance: Result<u32, NoReading>, periods_ago: Option<u8>) -> Sample {
        Sample {
            periods_ago,
            ..live(distance)
        }
    }

    /// The uplink an akenza vector's assertions describe: `ullage` (cm) the current
    /// reading, `ullage1..=3` the previous ones (a measurement), or `ullage` the
    /// status frame's reading with `batteryLevel` (a lifecycle).
    fn akenza_uplink(expected: &serde_json::Value) -> Uplink {
        let mm = |key: &str| Ok(u32::try_from(expected[key].as_u64().unwrap()).unwrap() * 10);
        match expected["topic"].as_str().unwrap() {
            "measurement" => Uplink {
                samples: (0..4u8)
                    .map(|ago| {
                        let key = if ago == 0 {
                            "ullage".to_owned()
                        } else {
                            format!("ullage{ago}")
                        };
                        sample(mm(&key), Some(ago))
                    })
                    .collect(),
                battery: None,
            },
            "lifecycle" => Uplink {
                samples: vec![sample(mm("ullage"), None)],
                battery: Some(Battery::Percent(
                    u8::try_from(expected["batteryLevel"].as_u64().unwrap()).unwrap(),
                )),
            },
            other => panic!("no akenza topic {other}"),
        }
    }

    #[test]
    fn every_vector_decodes_as_its_source_says() {
        let all = decoded(CODEC, FILE, 3);
        for (v, got) in &all[1..] {
            assert_eq!(got, &akenza_uplink(&v.expected), "{}", v.from);
        }
        assert_eq!(all[1].0.f_port, 1);
        assert_eq!(all[2].1.samples, vec![sample(Ok(240), None)]);
        for (v, got) in all.into_iter().take(1) {
            let want: Vec<Sample> = v.expected["readings_newest_first"]
                .as_array()
                .unwrap()
                .iter()
                .zip(0..)
                .map(|(r, ago)| {
                    let cm = u32::try_from(r["ullage_cm"].as_u64().unwrap()).unwrap();
                    sample(Ok(cm * 10), Some(ago))
                })
                .collect();
            assert_eq!(got.samples, want, "{}", v.from);
            assert_eq!(got.battery, None);
        }
        // Literally: 274, 275, 274 and 276 cm.
        let got = check(CODEC, 16, &hex("1000000001121B7701131BAA01121BA90114F274")).unwrap();
        let mm: Vec<_> = got.samples.iter().map(|s| s.distance).collect();
        assert_eq!(mm, [Ok(2740), Ok(2750), Ok(2740), Ok(2760)]);
    }

    /// The ELEMENT IoT parser's test payloads (see the module docs), each with the
    /// ullage it asserts: the current reading, in cm.
    #[test]
    fn the_element_iot_parser_examples() {
        let cases: [(u32, &str, Vec<Sample>, Option<Battery>); 6] = [
            (
                16,
                "10000100018DF8AA018CF8AA018CF8AA018CF8AA",
                vec![
                    sample(Ok(3970), Some(0)),
                    sample(Ok(3960), Some(1)),
                    sample(Ok(3960), Some(2)),
                    sample(Ok(3960), Some(3)),
                ],
                None,
            ),
            (
                48,
                "3000000200023400590062005A0600161B9A",
                vec![sample(Ok(220), None)],
                Some(Battery::Percent(98)),
            ),
            (
                1,
                "45000100004b18aa00000000",
                vec![sample(Ok(750), None)],
                None,
            ),
            (
                16,
                "10000000001A17AA001A17AA001A17AA001A17AA",
                (0..4).map(|ago| sample(Ok(260), Some(ago))).collect(),
                None,
            ),
            (
                48,
                "30000001010637004D0063016806001A17AA",
                vec![sample(Ok(260), None)],
                Some(Battery::Percent(99)),
            ),
            (
                48,
                "30000001010637004D006301680600000000",
                vec![sample(Err(NoReading("empty record")), None)],
                Some(Battery::Percent(99)),
            ),
        ];
        for (port, payload, samples, battery) in cases {
            let got = check(CODEC, port, &hex(payload)).unwrap();
            assert_eq!(got, Uplink { samples, battery }, "{payload}");
        }
        // The akenza status payload (fPort 1): 24 cm, battery 99 %.
        let status = check(CODEC, 1, &hex("300000010106360063006300040600181BAA")).unwrap();
        assert_eq!(status.samples, vec![sample(Ok(240), None)]);
        assert_eq!(status.battery, Some(Battery::Percent(99)));
    }

    #[test]
    fn empty_and_zero_readings_are_no_readings() {
        // Constructed: current 100 cm, then an empty record, ullage 0 with a
        // temperature, and an empty record.
        let got = check(CODEC, 16, &hex("1000000000641BAA00000000000017AA00000000")).unwrap();
        let distances: Vec<_> = got.samples.iter().map(|s| s.distance).collect();
        assert_eq!(
            distances,
            [
                Ok(1000),
                Err(NoReading("empty record")),
                Err(NoReading("distance 0")),
                Err(NoReading("empty record"))
            ]
        );
        // A status battery above 100 % is no figure.
        let status = check(CODEC, 48, &hex("300000010106360063006500040600181BAA")).unwrap();
        assert_eq!(status.battery, None);
    }

    #[test]
    fn other_types_lengths_products_and_ports_are_coded() {
        let code = |port, h: &str| check(CODEC, port, &hex(h)).unwrap_err().code();
        let measurement = "1000000001121B7701131BAA01121BA90114F274";
        assert_eq!(code(16, &measurement[..38]), "invalid_payload");
        assert_eq!(code(16, &format!("{measurement}00")), "invalid_payload");
        assert_eq!(
            code(16, &format!("1001{}", &measurement[4..])),
            "invalid_payload"
        );
        assert_eq!(code(16, "2000000001121B77"), "invalid_payload");
        assert_eq!(code(16, ""), "invalid_payload");
        assert_eq!(code(67, "4300"), "unsupported_port");
        assert_eq!(code(1, "470000"), "unsupported_port");
        assert_eq!(code(0, measurement), "unsupported_port");
        assert_eq!(code(224, measurement), "unsupported_port");
        assert!(check(CODEC, 223, &hex(measurement)).is_ok());
    }

    #[test]
    fn hostile_bytes_never_panic_and_answer_a_code() {
        hostile_vectors(CODEC, &vectors(FILE), &[1, 16, 48, 69]);
    }
}
