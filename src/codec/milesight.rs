//! Milesight EM310-UDL and EM500-UDL (ultrasonic distance/level sensors):
//! `milesight-iot/em310-udl`, `milesight-iot/em500-udl`.
//!
//! # Sources read
//! - Milesight-IoT/SensorDecoders `em-series/em310-udl/em310-udl-decoder.js` and
//!   `README.md`, `em-series/em500-udl/em500-udl-decoder.js`, `README.md` and
//!   `em500-udl-codec.json` (main at v1.5.49, decoders last changed 2025-11-10), and the
//!   history of `EM_Series/EM500_Series/EM500-UDL/EM500-UDL_Decoder.js` (the first one,
//!   2024, had battery, distance and history only; `83 E9` and the downlink replies
//!   came in April 2025).
//! - Milesight-IoT/SensorDecoders `em-series/em410-rdl/em410-rdl-decoder.js`: the
//!   sibling radar sensor's distance sentinels (see below).
//! - TheThingsNetwork/lorawan-devices `vendor/milesight-iot/em310-udl-codec.yaml`,
//!   `em310-udl.js` (the same decoder as Milesight's), `em500-udl-codec.yaml` and
//!   `em500-udl.js` (an older Ursalink decoder that outputs metres; its example
//!   `01 75 5A 03 82 1E 00` is pinned below, in mm).
//! - The EM400-UDL user guide (Milesight, page 15): the device-information uplink
//!   every EM model sends after joining, `ff0bff ff0101 ff16… ff0901.. ff0a.. ff0f00`,
//!   pinned below.
//!
//! # Byte layout
//! The payload is a sequence of channels, each a channel id byte, a type byte and a
//! value whose length the (id, type) pair fixes; integers are little-endian. Nothing
//! says how long an unknown channel is, so an unknown pair stops the reading with
//! `invalid_payload` (the vendor decoder silently stops there and keeps what it read;
//! the rest of the frame would then be lost without a word). A value cut short is
//! `invalid_payload` too.
//!
//! | id | type | length | value | models |
//! | --- | --- | --- | --- | --- |
//! | `01` | `75` | 1 | battery, % | both |
//! | `03` | `82` | 2 | distance, mm (u16): the live sample | both |
//! | `04` | `00` | 1 | position, 0 normal / 1 tilt (read, not reported) | EM310 |
//! | `83` | `E9` | 5 | distance alarm: distance u16 in 0.1 mm, mutation u16 in 0.1 mm, alarm kind u8 | EM500 |
//! | `20` | `CE` | 6 | history record: unix seconds u32, distance mm u16 | EM500 |
//! | `FF` | `01 0F FE 0B` | 1 | protocol version, LoRaWAN class, reset event, device status | both |
//! | `FF` | `09 0A FF` | 2 | hardware, firmware, TSL version | both |
//! | `FF` | `16` | 8 | serial number | both |
//! | `FF`/`FE` | … | per type | replies to downlinks (configuration), lengths as the model's decoder reads them | per model |
//!
//! Each `20 CE` record is one buffered reading with its own device time
//! (`device_time_s`); one uplink may carry several, kept in byte order. `03 82` and
//! `83 E9` give the live reading (`device_time_s` `None`, dated by the receive time);
//! when an uplink has both, or either twice, the last one is the live sample, as in the
//! vendor decoder, whose later value overwrites the earlier. The live sample comes
//! after the history records. A frame of device information or downlink replies only
//! is `Ok` without samples.
//!
//! The `83 E9` distance is in tenths of a millimetre: the vendor decoder divides it by
//! 10 and its codec description gives the result in mm. It is rounded to the nearest
//! mm (half up). No vendor example of this channel exists; that scale is the one
//! uncertain point of this file, and there is evidence against it: the same
//! `/ 10` on a 5-byte value + change + kind channel is how the EM320-TH v2 decoder
//! reads its temperature and humidity mutation alarms (`83 67`, in 0.1 units), so it
//! may have been carried over; the radar sibling's distance mutation alarm
//! (EM410-RDL `94 82`, the same 5-byte shape) is read in plain mm; and a u16 in
//! 0.1 mm stops at 6.55 m. If real `83 E9` frames read ten times too short next to
//! the `03 82` distances of the same device, the division is the decoder's error.
//!
//! The position byte (`04 00`, tilt) is read but does not void the distance: the
//! vendor reports both, and a sensor mounted on a lid that tilts when the lid opens is
//! a deployment matter, not a sentinel.
//!
//! # Ports
//! fPort 85, Milesight's application port, carries every uplink of these models
//! (reports, history, device information, replies). Any other port is
//! `unsupported_port`. The port can be changed in the device's LoRaWAN settings
//! (Milesight's documentation: "the downlink application port is 85 by default"): a
//! device configured so names its port (`DeviceConfig::application_port`), and
//! [`super::decode_on`] reads that port's frames here as port 85's.
//!
//! # Sentinels (a sample with [`NoReading`])
//! - distance 0 (any channel): no echo, never an empty bin at 0 mm;
//! - `0xFFFD` "no target", `0xFFFF` "sensor exception", `0xFFFE` "distance
//!   disabled": the UDL decoders name no sentinel, but Milesight's EM410-RDL decoder
//!   documents these three raw u16 values for the same distance field, and 65 533 mm or
//!   more is far beyond any of these sensors' range, so no real distance is lost. They
//!   are checked on the raw value of every distance channel (for `83 E9`, before the
//!   division by 10).
//!
//! A history record with a sentinel is still a sample (its device time keys it); only
//! its distance is a [`NoReading`].

use super::{Battery, Codec, NoReading, Sample, Uplink};
use crate::dedupe::error::Error;

/// Milesight's application port, as the sensors leave the factory.
pub(super) const PORT: u32 = 85;

/// Raw distance values that are not distances, with the reason given.
const SENTINELS: [(u16, &str); 3] = [
    (0xFFFD, "Milesight distance 0xFFFD: no target"),
    (
        0xFFFE,
        "Milesight distance 0xFFFE: distance sensor disabled",
    ),
    (0xFFFF, "Milesight distance 0xFFFF: sensor exception"),
];

/// What a channel's value is, once its (id, type) pair is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Channel {
    Battery,
    Distance,
    /// EM500 `83 E9`: the distance in 0.1 mm, then three bytes not read.
    DistanceAlarm,
    /// EM500 `20 CE`.
    History,
    /// A value of this many bytes that holds no level (position, device information,
    /// a reply to a downlink).
    Skip(usize),
}

/// The length of a device-information channel (`FF` + type), the same on both models.
fn device_info_len(ty: u8) -> Option<usize> {
    match ty {
        0x01 | 0x0F | 0xFE | 0x0B => Some(1),
        0x09 | 0x0A | 0xFF => Some(2),
        0x16 => Some(8),
        _ => None,
    }
}

/// The length of a reply to a downlink (`FF`/`FE` + type) as the EM310-UDL decoder
/// reads it.
fn em310_reply_len(ty: u8) -> Option<usize> {
    match ty {
        0x10 => Some(1),
        0x02 | 0x03 => Some(2),
        0x06 => Some(9),
        _ => None,
    }
}

/// The length of a reply to a downlink (`FF`/`FE` + type) as the EM500-UDL decoder
/// reads it.
fn em500_reply_len(ty: u8) -> Option<usize> {
    match ty {
        0x10 | 0x27 | 0x28 | 0x3B | 0x4A | 0x68 | 0x69 | 0x84 | 0xF5 => Some(1),
        0x02 | 0x03 | 0x17 | 0x1C | 0xF2 => Some(2),
        0x6A => Some(3),
        0x11 | 0xF1 => Some(4),
        0x35 | 0x96 => Some(8),
        0x06 => Some(9),
        _ => None,
    }
}

/// The channel an (id, type) pair names on this model, `None` when the model's
/// decoder does not know it.
fn channel(em500: bool, id: u8, ty: u8) -> Option<Channel> {
    match (id, ty) {
        (0x01, 0x75) => Some(Channel::Battery),
        (0x03, 0x82) => Some(Channel::Distance),
        (0x04, 0x00) if !em500 => Some(Channel::Skip(1)),
        (0x83, 0xE9) if em500 => Some(Channel::DistanceAlarm),
        (0x20, 0xCE) if em500 => Some(Channel::History),
        (0xFF | 0xFE, _) => {
            let info = if id == 0xFF {
                device_info_len(ty)
            } else {
                None
            };
            let reply = if em500 {
                em500_reply_len
            } else {
                em310_reply_len
            };
            info.or_else(|| reply(ty)).map(Channel::Skip)
        }
        _ => None,
    }
}

/// A raw distance in mm, or why it is none.
fn distance_mm(raw: u16) -> Result<u32, NoReading> {
    if raw == 0 {
        return Err(NoReading("Milesight distance 0: no echo"));
    }
    match SENTINELS.iter().find(|&&(value, _)| value == raw) {
        Some(&(_, why)) => Err(NoReading(why)),
        None => Ok(u32::from(raw)),
    }
}

/// The `83 E9` distance (0.1 mm) in mm, rounded half up, or why it is none.
fn alarm_distance_mm(raw: u16) -> Result<u32, NoReading> {
    distance_mm(raw).and_then(|_| match (u32::from(raw) + 5) / 10 {
        0 => Err(NoReading("Milesight alarm distance under 0.5 mm: no echo")),
        mm => Ok(mm),
    })
}

fn sample(distance: Result<u32, NoReading>, device_time_s: Option<i64>) -> Sample {
    Sample {
        distance,
        device_time_s,
        app_counter: None,
        periods_ago: None,
    }
}

fn u16_le(value: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes([*value.get(at)?, *value.get(at + 1)?]))
}

/// Reads a Milesight EM310-UDL or EM500-UDL uplink: `codec` picks the model (the
/// EM500-UDL's channels for [`Codec::MilesightEm500Udl`], the EM310-UDL's otherwise).
///
/// # Errors
/// [`Error::UnsupportedPort`] for a port other than 85; [`Error::InvalidPayload`] for
/// a channel this model does not have, or a value cut short.
pub(super) fn decode(codec: Codec, f_port: u32, bytes: &[u8]) -> Result<Uplink, Error> {
    if f_port != PORT {
        return Err(Error::UnsupportedPort(f_port));
    }
    let em500 = codec == Codec::MilesightEm500Udl;
    let mut uplink = Uplink::default();
    let mut live = None;
    let mut at = 0;
    while at < bytes.len() {
        let (id, ty) = match (bytes.get(at), bytes.get(at + 1)) {
            (Some(&id), Some(&ty)) => (id, ty),
            _ => {
                return Err(invalid(format!(
                    "a channel id without its type at byte {at}"
                )))
            }
        };
        let channel = channel(em500, id, ty).ok_or_else(|| {
            invalid(format!(
                "unknown channel {id:02X} {ty:02X} at byte {at} for {}",
                codec.id()
            ))
        })?;
        let len = match channel {
            Channel::Battery => 1,
            Channel::Distance => 2,
            Channel::DistanceAlarm => 5,
            Channel::History => 6,
            Channel::Skip(len) => len,
        };
        let start = at + 2;
        let value = bytes.get(start..start + len).ok_or_else(|| {
            invalid(format!(
                "channel {id:02X} {ty:02X} at byte {at} needs {len} bytes, {} left",
                bytes.len() - start.min(bytes.len())
            ))
        })?;
        match channel {
            Channel::Battery => uplink.battery = value.first().map(|&pct| Battery::Percent(pct)),
            Channel::Distance => live = u16_le(value, 0).map(distance_mm),
            Channel::DistanceAlarm => live = u16_le(value, 0).map(alarm_distance_mm),
            Channel::History => {
                let time = value.get(..4).and_then(|t| t.try_into().ok());
                if let (Some(time), Some(raw)) = (time, u16_le(value, 4)) {
                    let time = i64::from(u32::from_le_bytes(time));
                    uplink.samples.push(sample(distance_mm(raw), Some(time)));
                }
            }
            Channel::Skip(_) => {}
        }
        at = start + len;
    }
    uplink.samples.extend(live.map(|d| sample(d, None)));
    Ok(uplink)
}

fn invalid(why: String) -> Error {
    Error::InvalidPayload(why)
}

/// The EM500-UDL's port for a history request, the one its records come back on.
pub(super) const HISTORY_PORT: u32 = PORT;

/// The downlink that asks an EM500-UDL for its history records of the device times
/// `start_s ..= end_s` (unix seconds): "enquire data in time range", `FD 6C`, then the
/// start and the end, each a u32 little-endian (Milesight-IoT/SensorDecoders, the
/// EM500-UDL encoder's `fetch_history`; the UC100 user guide's "Historical Data
/// Enquiry"). The records come back as `20 CE` channels on port 85.
pub(super) fn history_request(start_s: u32, end_s: u32) -> Vec<u8> {
    let mut bytes = vec![0xFD, 0x6C];
    bytes.extend_from_slice(&start_s.to_le_bytes());
    bytes.extend_from_slice(&end_s.to_le_bytes());
    bytes
}

#[cfg(test)]
mod tests {
    use super::super::test_kit::{at, hex, hostile};
    use super::super::{decode, Battery, Codec, NoReading, Sample, Uplink};
    use serde_json::Value;

    const EM310: Codec = Codec::MilesightEm310Udl;
    const EM500: Codec = Codec::MilesightEm500Udl;
    const EM310_VECTORS: &str =
        include_str!("../../tests/vectors/devices/milesight-em310-udl.json");
    const EM500_VECTORS: &str =
        include_str!("../../tests/vectors/devices/milesight-em500-udl.json");

    fn live(mm: u32) -> Sample {
        Sample {
            distance: Ok(mm),
            device_time_s: None,
            app_counter: None,
            periods_ago: None,
        }
    }

    fn record(time: i64, distance: Result<u32, NoReading>) -> Sample {
        Sample {
            distance,
            device_time_s: Some(time),
            app_counter: None,
            periods_ago: None,
        }
    }

    fn uplink(samples: Vec<Sample>, battery: Option<u8>) -> Uplink {
        Uplink {
            samples,
            battery: battery.map(Battery::Percent),
        }
    }

    /// The first of `keys` that `expected` has, as a number.
    fn number(expected: &Value, keys: &[&str]) -> Option<u64> {
        keys.iter()
            .find_map(|k| expected.get(*k))
            .and_then(Value::as_u64)
    }

    /// The uplink a vector's `expected` describes: battery and live distance under
    /// any of the sources' key names, and `history` records with a distance.
    fn expected_uplink(expected: &Value) -> Uplink {
        let mut samples: Vec<Sample> = expected
            .get("history")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|r| {
                let time = r["timestamp"].as_i64().unwrap();
                record(
                    time,
                    Ok(u32::try_from(r["distance"].as_u64().unwrap()).unwrap()),
                )
            })
            .collect();
        let distance = number(expected, &["distance", "default.distance"]);
        samples.extend(distance.map(|mm| live(u32::try_from(mm).unwrap())));
        let battery = number(expected, &["battery", "lifecycle.batteryLevel"]);
        uplink(samples, battery.map(|b| u8::try_from(b).unwrap()))
    }

    fn vectors(file: &str) -> (u32, Vec<Value>) {
        let file: Value = serde_json::from_str(file).unwrap();
        let port = u32::try_from(file["fPort"].as_u64().unwrap()).unwrap();
        (port, file["vectors"].as_array().unwrap().clone())
    }

    #[test]
    fn every_em310_vector_decodes_as_its_source_says() {
        let (port, vectors) = vectors(EM310_VECTORS);
        assert_eq!((port, vectors.len()), (85, 3));
        for v in &vectors {
            let bytes = hex(v["hex"].as_str().unwrap());
            let want = expected_uplink(&v["expected"]);
            assert_eq!(want, uplink(vec![live(2116)], Some(92)), "{v}");
            assert_eq!(decode(EM310, port, &bytes), Ok(want), "{v}");
        }
        let tts = &vectors[0];
        assert_eq!(
            hex(tts["hex"].as_str().unwrap()),
            [1, 0x75, 0x5C, 3, 0x82, 0x44, 8, 4, 0, 1]
        );
        assert_eq!(tts["base64"], "AXVcA4JECAQAAQ==");
    }

    #[test]
    fn every_em500_vector_decodes_as_its_source_says() {
        let (port, vectors) = vectors(EM500_VECTORS);
        assert_eq!((port, vectors.len()), (85, 5));
        let expected = [
            uplink(vec![live(30)], Some(100)),
            uplink(vec![live(30)], Some(92)),
            uplink(
                vec![
                    record(1_665_561_758, Ok(1234)),
                    record(1_665_565_242, Ok(1232)),
                ],
                None,
            ),
        ];
        for (v, want) in vectors.iter().zip(&expected) {
            let bytes = hex(v["hex"].as_str().unwrap());
            assert_eq!(&expected_uplink(&v["expected"]), want, "{v}");
            assert_eq!(decode(EM500, port, &bytes).as_ref(), Ok(want), "{v}");
        }
        // The EM300-TH's history record (temperature and humidity after the time) is
        // no EM500-UDL frame: its last two bytes, `5D 00`, are no EM500 channel. Its
        // first eight bytes still read the same unix seconds, little-endian.
        // The TTN decoder's header example, appended after the EM300-TH record.
        let ttn_header = &vectors[4];
        assert_eq!(
            expected_uplink(&ttn_header["expected"]),
            uplink(vec![live(30)], Some(90))
        );
        assert_eq!(
            decode(EM500, port, &hex(ttn_header["hex"].as_str().unwrap())),
            Ok(uplink(vec![live(30)], Some(90)))
        );
        let th = &vectors[3];
        let bytes = hex(th["hex"].as_str().unwrap());
        assert_eq!(
            decode(EM500, port, &bytes).unwrap_err().code(),
            "invalid_payload"
        );
        let time = th["expected"]["history"][0]["timestamp"].as_i64().unwrap();
        assert_eq!(
            decode(EM500, port, &bytes[..8]),
            Ok(uplink(vec![record(time, Ok(0x0110))], None))
        );
    }

    #[test]
    fn vendor_examples() {
        // TTN em500-udl.js header comment, `AXVaA4IeAA==` (that decoder says 0.03 m).
        assert_eq!(
            decode(EM500, 85, &hex("01755A03821E00")),
            Ok(uplink(vec![live(30)], Some(90)))
        );
        // EM400-UDL user guide p. 15: the device-information uplink after a join,
        // whose `FF` channels the EM310/EM500 decoders read alike.
        let info = hex("ff0bff ff0101 ff166329c42903640033 ff090100 ff0a0101 ff0f00");
        for codec in [EM310, EM500] {
            assert_eq!(decode(codec, 85, &info), Ok(Uplink::default()));
        }
        // Replies to downlinks, lengths as each decoder reads them: the EM310's
        // distance alarm settings (9 bytes), the EM500's time sync (4 bytes).
        assert_eq!(
            decode(EM310, 85, &hex("ff06 01 0000 e803 0000 0000 01755c")),
            Ok(uplink(vec![], Some(92)))
        );
        assert_eq!(
            decode(EM500, 85, &hex("fe11 9e744663 03821e00")),
            Ok(uplink(vec![live(30)], None))
        );
        let em310_has_no_time_sync = decode(EM310, 85, &hex("fe11 9e744663"));
        assert_eq!(
            em310_has_no_time_sync.unwrap_err().code(),
            "invalid_payload"
        );
    }

    #[test]
    fn history_and_live_in_one_uplink_keep_byte_order_and_the_live_comes_last() {
        // CONSTRUCTED: live 30 mm between two records, battery after them.
        let bytes = hex("20CE9E744663D204 03821E00 20CE3A824663D004 017564");
        assert_eq!(
            decode(EM500, 85, &bytes),
            Ok(uplink(
                vec![
                    record(1_665_561_758, Ok(1234)),
                    record(1_665_565_242, Ok(1232)),
                    live(30),
                ],
                Some(100),
            ))
        );
        // A record with the largest u32 time stays a time, not a negative number.
        assert_eq!(
            decode(EM500, 85, &hex("20CEFFFFFFFF0100")),
            Ok(uplink(vec![record(4_294_967_295, Ok(1))], None))
        );
    }

    #[test]
    fn the_last_live_distance_wins_as_in_the_vendor_decoder() {
        assert_eq!(
            decode(EM310, 85, &hex("03821E00 03824408")),
            Ok(uplink(vec![live(2116)], None))
        );
        // `83 E9` in 0.1 mm: 12 345 → 1234.5 → 1235 mm (half up); 12 344 → 1234.
        assert_eq!(
            decode(EM500, 85, &hex("03821E00 83E9 3930 0500 01")),
            Ok(uplink(vec![live(1235)], None))
        );
        assert_eq!(
            decode(EM500, 85, &hex("83E9 3830 0A00 02")),
            Ok(uplink(vec![live(1234)], None))
        );
    }

    #[test]
    fn sentinels_and_zero_are_no_readings_not_distances() {
        let no = |text: &str, codec| decode(codec, 85, &hex(text)).unwrap().samples[0].distance;
        for codec in [EM310, EM500] {
            assert_eq!(
                no("03820000", codec),
                Err(NoReading("Milesight distance 0: no echo"))
            );
            assert_eq!(
                no("0382FDFF", codec),
                Err(NoReading("Milesight distance 0xFFFD: no target"))
            );
            assert_eq!(
                no("0382FEFF", codec),
                Err(NoReading(
                    "Milesight distance 0xFFFE: distance sensor disabled"
                ))
            );
            assert_eq!(
                no("0382FFFF", codec),
                Err(NoReading("Milesight distance 0xFFFF: sensor exception"))
            );
            // Just below the sentinels: a (far) distance.
            assert_eq!(no("0382FCFF", codec), Ok(65_532));
            assert_eq!(no("03820100", codec), Ok(1));
        }
        assert_eq!(
            no("83E9 0400 0000 00", EM500),
            Err(NoReading("Milesight alarm distance under 0.5 mm: no echo"))
        );
        assert_eq!(no("83E9 0500 0000 00", EM500), Ok(1));
        assert_eq!(
            no("83E9 FDFF 0000 00", EM500),
            Err(NoReading("Milesight distance 0xFFFD: no target"))
        );
        // A history record with a sentinel keeps its device time.
        assert_eq!(
            decode(EM500, 85, &hex("20CE9E744663FFFF 20CE3A8246630000")),
            Ok(uplink(
                vec![
                    record(
                        1_665_561_758,
                        Err(NoReading("Milesight distance 0xFFFF: sensor exception"))
                    ),
                    record(
                        1_665_565_242,
                        Err(NoReading("Milesight distance 0: no echo"))
                    ),
                ],
                None,
            ))
        );
    }

    #[test]
    fn unknown_channels_and_values_cut_short_are_invalid_payloads_that_say_where() {
        for (codec, bytes, says) in [
            // A channel of the other model, or of no model.
            (EM310, "20CE9E744663D204", "unknown channel 20 CE at byte 0"),
            (
                EM310,
                "83E9 3930 0500 01",
                "unknown channel 83 E9 at byte 0",
            ),
            (EM500, "01755C 040001", "unknown channel 04 00 at byte 3"),
            (EM500, "01755C 0567 0101", "unknown channel 05 67 at byte 3"),
            (EM310, "ff11 9e744663", "unknown channel FF 11 at byte 0"),
            (EM310, "fe01 01", "unknown channel FE 01 at byte 0"),
            // An id without its type, a value cut short.
            (EM310, "01", "a channel id without its type at byte 0"),
            (
                EM310,
                "01755C 03",
                "a channel id without its type at byte 3",
            ),
            (
                EM310,
                "0175",
                "channel 01 75 at byte 0 needs 1 bytes, 0 left",
            ),
            (
                EM310,
                "01755C 0382 44",
                "channel 03 82 at byte 3 needs 2 bytes, 1 left",
            ),
            (
                EM500,
                "20CE9E744663D2",
                "channel 20 CE at byte 0 needs 6 bytes, 5 left",
            ),
            (
                EM500,
                "ff16 6329c429036400",
                "channel FF 16 at byte 0 needs 8 bytes, 7 left",
            ),
        ] {
            let e = decode(codec, 85, &hex(bytes)).unwrap_err();
            assert_eq!(e.code(), "invalid_payload", "{bytes}");
            assert!(e.to_string().contains(says), "{bytes}: {e}");
        }
        assert_eq!(decode(EM310, 85, &[]), Ok(Uplink::default()));
    }

    #[test]
    fn only_port_85_carries_data() {
        for port in [0, 1, 2, 3, 84, 86, 255, 256, u32::MAX] {
            for codec in [EM310, EM500] {
                let e = decode(codec, port, &hex("01755C03824408")).unwrap_err();
                assert_eq!(
                    (e.code(), e.to_string().contains(&port.to_string())),
                    ("unsupported_port", true)
                );
            }
        }
    }

    #[test]
    fn hostile_bytes_never_panic_and_answer_with_codes() {
        let frames: Vec<Vec<u8>> = [EM310_VECTORS, EM500_VECTORS]
            .iter()
            .flat_map(|file| vectors(file).1)
            .map(|v| hex(v["hex"].as_str().unwrap()))
            .chain([hex(
                "ff0bff ff0101 ff166329c42903640033 ff090100 ff0a0101 ff0f00",
            )])
            .collect();
        hostile(EM310, &at(85, &frames), &[85], 0x310);
        hostile(EM500, &at(85, &frames), &[85], 0x500);
    }
}
