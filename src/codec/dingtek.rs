//! CNDingtek DF703 (ultrasonic waste-bin level sensor, successor of the DF702):
//! `dingtek/df703`.
//!
//! # Sources read
//! - TheThingsNetwork/lorawan-devices `vendor/dingtek/df703-codec.yaml` (its three
//!   uplink examples are the vectors) and `df703.yaml`; `vendor/dingtek/df702.js` and
//!   `df702-codec.yaml` (the predecessor's decoder and examples: the same frame without
//!   the counter's meaning). The `df703.js` the codec file names is not in the index.
//! - cndingtek/Chirpstack_codec `Chirpstack_DF703_script_V1.0.js` (Dingtek's own
//!   decoder, the same offsets as TTN's; its test input is a type `02` frame with GPS),
//!   and `Chirpstack_DF555_script_V1.0.js` / `Chirpstack_DF556_script_V1.0.js` (sibling
//!   models: type `03` is the parameter frame).
//! - cndingtek/Chirpstack_Http_JS `chirpstack_DF703.js` (a hex-offset parser that also
//!   checks the length byte and the `81` tail).
//! - "DF702&DF703 Waste Bin Sensor Protocol_LoRaWAN V2.8" (Dingtek, 2021; only its
//!   revision list and index were readable: packet header, forced bit, device type…;
//!   V2.5 "modify the size of framecount").
//!
//! # Byte layout
//! A fixed frame of 17 bytes, or 25 when it carries a GPS fix; integers big-endian
//! except the GPS floats. Offsets for 17 bytes (25 bytes: the same up to byte 7, then
//! longitude and latitude as f32 little-endian at 8 ..= 15, and the rest moved by 8):
//!
//! | byte | value |
//! | --- | --- |
//! | 0 | `80`, the header |
//! | 1 ..= 2 | `00 01` in every example (forced bit, device type: not checked, as the vendor decoders do not) |
//! | 3 | frame type: `01` periodic report (heartbeat), `02` report (the vendor's own test frame; decoded like `01`), `03` parameters |
//! | 4 | frame length: `11` (17) or `19` (25) |
//! | 5 ..= 6 | level: distance from the sensor to the rubbish, mm, u16 |
//! | 7 | GPS flag (`00`; `01` in the 25-byte frame) |
//! | 8 | temperature, °C |
//! | 9 ..= 10 | tilt angle (sign, degrees) |
//! | 11 | full alarm (high nibble), fire alarm (low nibble) |
//! | 12 | tilt alarm (high nibble), low-battery alarm (low nibble) |
//! | 13 ..= 14 | frame counter, u16: the device's application counter |
//! | 15 | reserved, `00` |
//! | 16 | `81`, the tail |
//!
//! A report (type `01` or `02`) is one live sample: the level as its distance, the frame
//! counter as its `app_counter` (as read; its wrap at 65 535 is the seq rule's
//! business, not the codec's), `device_time_s` `None`. The frame has no battery level,
//! only a low-battery flag, so `battery` is `None`.
//!
//! A parameter frame (type `03`; the DF702 codec calls it "command confirmation": the
//! device's settings, sent at start and after a configuration downlink) holds no level:
//! it is `Ok` without samples. It arrives on the data port, so it is not an
//! `unsupported_port` (that code names a port); the worker acknowledges it like any
//! frame without a reading.
//!
//! Anything else is `invalid_payload`: a length other than 17 or 25, a length byte that
//! disagrees with the length, a header other than `80`, a tail other than `81`, or a
//! frame type other than `01`, `02`, `03` (the vendor decoders read any type but `03`
//! as a report; a frame type never seen is more likely not this device's frame).
//!
//! # Ports
//! fPort 3 carries every uplink (and the downlink commands); the vendor decoders
//! answer any other port with "unknown FPort", here `unsupported_port`.
//!
//! # Sentinels
//! Level 0 is a [`NoReading`] (no echo; an overfull bin reads as the sensor's blind
//! zone, not 0). The vendor documents no other sentinel value.

use super::{NoReading, Sample, Uplink};
use crate::dedupe::error::Error;

/// The port of every DF703 uplink.
const PORT: u32 = 3;

/// A frame's first and last byte.
const HEADER: u8 = 0x80;
const TAIL: u8 = 0x81;

/// Frame length without and with the GPS fix (8 bytes after byte 7).
const SHORT: usize = 17;
const WITH_GPS: usize = 25;

fn byte(bytes: &[u8], at: usize) -> Result<u8, Error> {
    bytes
        .get(at)
        .copied()
        .ok_or_else(|| Error::InvalidPayload(format!("DF703 frame ends before byte {at}")))
}

fn u16_be(bytes: &[u8], at: usize) -> Result<u16, Error> {
    Ok(u16::from_be_bytes([byte(bytes, at)?, byte(bytes, at + 1)?]))
}

/// Reads a DF703 uplink.
///
/// # Errors
/// [`Error::UnsupportedPort`] for a port other than 3; [`Error::InvalidPayload`] for
/// bytes that are not a DF703 frame (see the module docs).
pub(super) fn decode(f_port: u32, bytes: &[u8]) -> Result<Uplink, Error> {
    if f_port != PORT {
        return Err(Error::UnsupportedPort(f_port));
    }
    let invalid = |why: String| Err(Error::InvalidPayload(why));
    let len = bytes.len();
    // Bytes 8 ..= 15 hold the GPS fix in the long frame; what follows moves by 8.
    let shift = match len {
        SHORT => 0,
        WITH_GPS => WITH_GPS - SHORT,
        _ => return invalid(format!("a DF703 frame has 17 or 25 bytes, not {len}")),
    };
    let (head, tail, length_byte) = (byte(bytes, 0)?, byte(bytes, len - 1)?, byte(bytes, 4)?);
    if head != HEADER || tail != TAIL {
        return invalid(format!(
            "a DF703 frame starts with 80 and ends with 81, not {head:02X} … {tail:02X}"
        ));
    }
    if usize::from(length_byte) != len {
        return invalid(format!(
            "the DF703 length byte says {length_byte}, the frame has {len}"
        ));
    }
    match byte(bytes, 3)? {
        // A periodic report (heartbeat), a report.
        0x01 | 0x02 => {}
        // The device's parameters: no level.
        0x03 => return Ok(Uplink::default()),
        other => return invalid(format!("unknown DF703 frame type {other:02X}")),
    }
    let level = u16_be(bytes, 5)?;
    let counter = u16_be(bytes, 13 + shift)?;
    let distance = match level {
        0 => Err(NoReading("DF703 level 0: no echo")),
        mm => Ok(u32::from(mm)),
    };
    Ok(Uplink {
        samples: vec![Sample {
            distance,
            device_time_s: None,
            app_counter: Some(u32::from(counter)),
            periods_ago: None,
        }],
        battery: None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_kit::{at, hex, hostile};
    use super::super::{decode as decode_codec, Codec, NoReading, Sample, Uplink};
    use super::decode;
    use serde_json::Value;

    const VECTORS: &str = include_str!("../../tests/vectors/devices/dingtek-df703.json");

    fn report(level: Result<u32, NoReading>, counter: u32) -> Uplink {
        Uplink {
            samples: vec![Sample {
                distance: level,
                device_time_s: None,
                app_counter: Some(counter),
                periods_ago: None,
            }],
            battery: None,
        }
    }

    fn code(port: u32, text: &str) -> &'static str {
        decode(port, &hex(text)).unwrap_err().code()
    }

    /// A vector's bytes: its `hex`, which for the parameter packet must agree with the
    /// verbatim `[0x80,…]` list it was taken from.
    fn vector_bytes(v: &Value) -> Vec<u8> {
        let bytes = hex(v["hex"].as_str().unwrap());
        if let Some(list) = v.get("bytes_verbatim").and_then(Value::as_str) {
            let listed: Vec<u8> = list
                .trim_matches(['[', ']'])
                .split(',')
                .map(|b| u8::from_str_radix(b.trim().trim_start_matches("0x"), 16).unwrap())
                .collect();
            assert_eq!(listed, bytes, "{v}");
        }
        bytes
    }

    #[test]
    fn every_vector_decodes_as_its_source_says() {
        let file: Value = serde_json::from_str(VECTORS).unwrap();
        let port = u32::try_from(file["fPort"].as_u64().unwrap()).unwrap();
        let vectors = file["vectors"].as_array().unwrap();
        assert_eq!((port, vectors.len()), (3, 3));
        for v in vectors {
            let bytes = vector_bytes(v);
            let expected = &v["expected"];
            let want = match expected.get("level").and_then(Value::as_u64) {
                Some(level) => {
                    let counter = expected["frameCounter"].as_u64().unwrap();
                    report(
                        Ok(u32::try_from(level).unwrap()),
                        u32::try_from(counter).unwrap(),
                    )
                }
                None => Uplink::default(),
            };
            assert_eq!(decode(port, &bytes), Ok(want.clone()), "{v}");
            assert_eq!(
                decode_codec(Codec::DingtekDf703, port, &bytes),
                Ok(want),
                "{v}"
            );
        }
        let levels: Vec<_> = vectors
            .iter()
            .map(|v| decode(port, &vector_bytes(v)).unwrap())
            .collect();
        assert_eq!(levels[0], report(Ok(2000), 1));
        assert_eq!(levels[1], report(Ok(2000), 1));
        assert_eq!(levels[2], Uplink::default());
        assert_eq!(
            hex(vectors[0]["hex"].as_str().unwrap()),
            hex("800001011107D000190000000000010081")
        );
    }

    #[test]
    fn vendor_examples() {
        // cndingtek/Chirpstack_codec DF703 script, its test input: type 02, with GPS.
        let gps = "800001021907D001CD03E942EF272042190000000000010081";
        assert_eq!(decode(3, &hex(gps)), Ok(report(Ok(2000), 1)));
        // The same script's commented-out 13-byte frame (an older parameter frame):
        // its decoder answers "wrong length".
        assert_eq!(code(3, "800001020D0102180A14190081"), "invalid_payload");
        // TTN df702-codec.yaml: the DF702's heartbeats (counter bytes 0) and its
        // "command confirmation" (the parameter frame).
        assert_eq!(
            decode(3, &hex("800001011107D0001900000000000000 81")),
            Ok(report(Ok(2000), 0))
        );
        assert_eq!(
            decode(
                3,
                &hex("800001011907D001CD03E942EF272042 19 00000000000000 81")
            ),
            Ok(report(Ok(2000), 0))
        );
        assert_eq!(
            decode(
                3,
                &hex("8000010319010418011E4B1E00000000000000000000000081")
            ),
            Ok(Uplink::default())
        );
    }

    #[test]
    fn the_counter_is_read_big_endian_at_13_or_21_and_never_wrapped_here() {
        assert_eq!(
            decode(3, &hex("800001011104D2 00 19 0000 00 00 FFFF 00 81")),
            Ok(report(Ok(1234), 65_535))
        );
        assert_eq!(
            decode(3, &hex("800001011104D2 00 19 0000 00 00 0000 00 81")),
            Ok(report(Ok(1234), 0))
        );
        let gps = "800001011901F4 01 CD03E942EF272042 19 0000 00 00 1234 00 81";
        assert_eq!(decode(3, &hex(gps)), Ok(report(Ok(500), 0x1234)));
        // Alarms, temperature and angle change nothing of the sample.
        assert_eq!(
            decode(3, &hex("800001021104D2 00 FF 01 2D 11 11 0102 00 81")),
            Ok(report(Ok(1234), 258))
        );
    }

    #[test]
    fn level_zero_is_no_reading_and_the_largest_level_is_a_distance() {
        assert_eq!(
            decode(3, &hex("8000010111 0000 00 19 0000 00 00 0007 00 81")),
            Ok(report(Err(NoReading("DF703 level 0: no echo")), 7))
        );
        assert_eq!(
            decode(3, &hex("8000010111 FFFF 00 19 0000 00 00 0007 00 81")),
            Ok(report(Ok(65_535), 7))
        );
    }

    #[test]
    fn frames_that_are_not_df703_frames_are_invalid_payloads() {
        let ok = "800001011107D000190000000000010081";
        assert!(decode(3, &hex(ok)).is_ok());
        for (bad, says) in [
            ("", "17 or 25 bytes, not 0"),
            (
                "800001011107D0001900000000000100 8100",
                "17 or 25 bytes, not 18",
            ),
            ("810001011107D000190000000000010081", "not 81 … 81"),
            ("800001011107D000190000000000010080", "not 80 … 80"),
            (
                "800001011907D000190000000000010081",
                "length byte says 25, the frame has 17",
            ),
            (
                "800001041107D000190000000000010081",
                "unknown DF703 frame type 04",
            ),
            (
                "800001001107D000190000000000010081",
                "unknown DF703 frame type 00",
            ),
        ] {
            let e = decode(3, &hex(bad)).unwrap_err();
            assert_eq!(e.code(), "invalid_payload", "{bad}");
            assert!(e.to_string().contains(says), "{bad}: {e}");
        }
        // A parameter frame of 17 bytes has no level either.
        assert_eq!(
            decode(3, &hex("8000010311 01041801 1E4B1E 00000000 81")),
            Ok(Uplink::default())
        );
    }

    #[test]
    fn only_port_3_carries_data() {
        for port in [0, 1, 2, 4, 85, 255, 256, u32::MAX] {
            assert_eq!(
                code(port, "800001011107D000190000000000010081"),
                "unsupported_port"
            );
        }
    }

    #[test]
    fn hostile_bytes_never_panic_and_answer_with_codes() {
        let file: Value = serde_json::from_str(VECTORS).unwrap();
        let frames: Vec<Vec<u8>> = file["vectors"]
            .as_array()
            .unwrap()
            .iter()
            .map(vector_bytes)
            .collect();
        hostile(Codec::DingtekDf703, &at(3, &frames), &[3], 0xdf703);
        // Random bytes behind a valid header, length and tail: every type, any body.
        let mut rng = fastrand::Rng::with_seed(703);
        for _ in 0..20_000 {
            let len = if rng.bool() { 17 } else { 25 };
            let mut bytes: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
            bytes[0] = 0x80;
            bytes[4] = u8::try_from(len).unwrap();
            bytes[len - 1] = 0x81;
            match decode(3, &bytes) {
                Ok(uplink) => assert!(uplink.samples.len() <= 1 && uplink.battery.is_none()),
                Err(e) => assert_eq!(e.code(), "invalid_payload"),
            }
        }
    }
}
