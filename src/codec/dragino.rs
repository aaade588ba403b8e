//! Dragino LDDS75 (`dragino/ldds75`) and DDS75-LB (`dragino/dds75-lb`): ultrasonic
//! distance detection sensors (flat-target range 280 ..= 7500 mm).
//!
//! # Sources
//! - Dragino's decoders, `dragino/dragino-end-node-decoder`:
//!   `LDDS75/LDDS75 decoder--TTN.txt` (5-byte frame), `LDDS75/LDDS75_Decoder_V1.1.4.js`
//!   and `LDDS75/LDDS751.1.4_ChirpstackV4_Decoder.txt` (8-byte frame, firmware
//!   1.1.4); `DDS75-LB/DDS75-LB TTN Decoder.txt` and
//!   `DDS75-LB/DDS75-LB_ChirpstackV4_Decoder.txt` (fPorts 2, 3, 5, 6).
//! - The TTN device repository, `TheThingsNetwork/lorawan-devices`
//!   `vendor/dragino/ldds75.js`, `ldds75-codec.yaml`, `dds75-lb-codec.yaml` (their
//!   examples are the vectors in `tests/vectors/devices/dragino-*.json`; the decoder
//!   stored as `dds75-lb.js` there is Dragino's three-probe DDS75-3-LB one, and the
//!   examples of `dds75-lb-codec.yaml` carry another device's output).
//! - Dragino's manuals for the LB series' datalog: entries of 11 bytes, "if the device
//!   has no data in the polled time range it uplinks 11 bytes of 0".
//!
//! # LDDS75, fPort 2 only (words big-endian)
//! | length | bytes |
//! | --- | --- |
//! | 5 (before firmware 1.1.4) | 0-1 battery mV (low 14 bits) · 2-3 distance mm · 4 interrupt flag |
//! | 8 (firmware 1.1.4) | 0-1 battery mV (low 14 bits) · 2-3 distance mm · 4 interrupt flag · 5-6 DS18B20 °C × 10 (i16) · 7 sensor flag |
//! | 4 | Dragino's decoder reads every frame that is not 5 bytes as "No Sensor" (the TTN example is 4 bytes): a [`NoReading`] with the battery |
//!
//! Other lengths are [`Error::InvalidPayload`], other ports
//! [`Error::UnsupportedPort`].
//!
//! # DDS75-LB
//! - fPort 2, 8 bytes: the LDDS75's 8-byte layout. Bit 12 of the battery word set
//!   (a battery above 4095 mV cannot be) marks the newer multi-distance frame, whose
//!   bytes 2-7 no decoder reads and whose distances carry no time:
//!   [`Error::InvalidPayload`] rather than a guess.
//! - fPort 3, datalog (the reply to a poll, or records kept while the network was
//!   down): whole 11-byte entries, oldest first, each 0-1 battery mV · 2-3 distance mm ·
//!   4-5 °C × 10 · 6 flags (bit 0 interrupt, bit 1 sensor, bit 6 poll reply) · 7-10
//!   unix seconds (u32). Each entry is one sample with `device_time_s`. An entry of 11
//!   zero bytes ("no data in the polled range") is kept as a [`NoReading`] ("empty
//!   datalog entry", no device time) so that nothing is dropped without a word. The
//!   entries' battery figures are historical: the uplink's `battery` is `None`.
//! - fPort 5 (device status: model, firmware, band, battery), fPort 6 (detect-mode
//!   list of u16 values without time) and any other port: [`Error::UnsupportedPort`].
//!
//! # Sentinels (both models, live and datalog)
//! - Distance 0: the ultrasonic probe did not answer ("no sensor").
//! - Distance 1 ..= 19 mm: "invalid reading", the threshold of Dragino's 5-byte
//!   LDDS75 decoder (`LDDS75 decoder--TTN.txt`); its firmware-1.1.4 decoder and the
//!   DDS75-LB decoders pass every value on, so for them it is this codec's choice (the
//!   manual's range starts at 280 mm; 20 ..= 279 mm are passed on as measured).
//! - Sensor flag 0 in an 8-byte live frame: "no sensor".
//!
//! No application counter. A live frame has no device time (the receive time dates
//! it); a datalog entry has its own, so a record replayed after a rejoin keys the same.

use super::{Battery, Codec, NoReading, Sample, Uplink};
use crate::dedupe::error::Error;

/// The live frame's port (both models).
const LIVE: u32 = 2;
/// The DDS75-LB's datalog port.
const DATALOG: u32 = 3;
/// One datalog entry's length.
const ENTRY: usize = 11;
/// The battery word's bit that marks a DDS75-LB multi-distance frame.
const MULTI_DISTANCE: u16 = 1 << 12;

/// The uplink an LDDS75 or DDS75-LB frame describes.
///
/// # Errors
/// [`Error::UnsupportedPort`] for the ports without a level (see the module docs);
/// [`Error::InvalidPayload`] for a frame of a length or kind this codec cannot read.
pub(super) fn decode(model: Codec, f_port: u32, bytes: &[u8]) -> Result<Uplink, Error> {
    let invalid = |why: String| Error::InvalidPayload(format!("{}: {why}", model.id()));
    match (model, f_port) {
        (Codec::DraginoLdds75 | Codec::DraginoDds75Lb, LIVE) => {
            let battery = word(bytes, 0).ok_or_else(|| invalid("empty frame".into()))?;
            let distance = match (model, bytes.len()) {
                (Codec::DraginoDds75Lb, _) if battery & MULTI_DISTANCE != 0 => {
                    return Err(invalid("a multi-distance frame is not read".into()));
                }
                (Codec::DraginoLdds75, 4) => Err(NoReading("no sensor")),
                // The 8-byte frame's sensor flag (byte 7) 0: no probe.
                (_, 8) if bytes.get(7) == Some(&0) => Err(NoReading("no sensor")),
                (Codec::DraginoLdds75, 5) | (_, 8) => {
                    word(bytes, 2).map_or(Err(NoReading("no sensor")), distance)
                }
                (_, len) => return Err(invalid(format!("a {len}-byte fPort 2 frame"))),
            };
            Ok(Uplink {
                samples: vec![Sample {
                    distance,
                    device_time_s: None,
                    app_counter: None,
                    periods_ago: None,
                }],
                battery: Some(Battery::Millivolts(battery & 0x3FFF)),
            })
        }
        (Codec::DraginoDds75Lb, DATALOG) => {
            if bytes.is_empty() || bytes.len() % ENTRY != 0 {
                return Err(invalid(format!(
                    "a datalog of {} bytes is not whole 11-byte entries",
                    bytes.len()
                )));
            }
            let samples = bytes.chunks_exact(ENTRY).map(entry).collect();
            Ok(Uplink {
                samples,
                battery: None,
            })
        }
        _ => Err(Error::UnsupportedPort(f_port)),
    }
}

/// One 11-byte datalog entry as a sample.
fn entry(bytes: &[u8]) -> Sample {
    let empty = bytes.iter().all(|&b| b == 0);
    let time = bytes
        .get(7..ENTRY)
        .and_then(|t| <[u8; 4]>::try_from(t).ok())
        .map(u32::from_be_bytes);
    Sample {
        distance: match word(bytes, 2) {
            _ if empty => Err(NoReading("empty datalog entry")),
            Some(mm) => distance(mm),
            None => Err(NoReading("empty datalog entry")),
        },
        device_time_s: time.filter(|_| !empty).map(i64::from),
        app_counter: None,
        periods_ago: None,
    }
}

/// A distance word, with Dragino's sentinels.
fn distance(mm: u16) -> Result<u32, NoReading> {
    match mm {
        0 => Err(NoReading("no sensor")),
        1..=19 => Err(NoReading("invalid reading")),
        mm => Ok(u32::from(mm)),
    }
}

/// The big-endian u16 at `at`, if the frame holds it.
fn word(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*bytes.get(at)?, *bytes.get(at + 1)?]))
}

#[cfg(test)]
mod tests {
    use super::super::test_kit::{check, hex, hostile_vectors, live, vectors};
    use super::*;

    const LDDS75: &str = include_str!("../../tests/vectors/devices/dragino-ldds75.json");
    const DDS75_LB: &str = include_str!("../../tests/vectors/devices/dragino-dds75-lb.json");
    const MODELS: [Codec; 2] = [Codec::DraginoLdds75, Codec::DraginoDds75Lb];

    fn logged(distance: Result<u32, NoReading>, time: Option<i64>) -> Sample {
        Sample {
            device_time_s: time,
            ..live(distance)
        }
    }

    #[test]
    fn the_ldds75_vectors() {
        let vectors = vectors(LDDS75);
        assert_eq!(vectors.len(), 2);
        // "Distance Detection": Dragino's decoder says "No Sensor" for a 4-byte frame.
        let v = &vectors[0];
        assert_eq!(v.expected["distance"], "No Sensor", "{}", v.from);
        let got = check(Codec::DraginoLdds75, v.f_port, &v.bytes).unwrap();
        assert_eq!(got.samples, vec![live(Err(NoReading("no sensor")))]);
        assert_eq!(got.battery, Some(Battery::Millivolts(3612)));
        // "Unknown FPort": fPort 42.
        let v = &vectors[1];
        assert_eq!(v.expected["errors"][0], "unknown FPort", "{}", v.from);
        let err = check(Codec::DraginoLdds75, v.f_port, &v.bytes).unwrap_err();
        assert_eq!(err, Error::UnsupportedPort(42));
    }

    /// The TTN repository's two DDS75-LB examples are 11 bytes on fPort 2, another
    /// device's frames (see the vector file's notes): no DDS75-LB reading in them.
    #[test]
    fn the_dds75_lb_vectors() {
        let vectors = vectors(DDS75_LB);
        assert_eq!(vectors.len(), 2);
        for v in &vectors {
            assert_eq!(v.bytes.len(), 11, "{}", v.from);
            let err = check(Codec::DraginoDds75Lb, v.f_port, &v.bytes).unwrap_err();
            assert_eq!(err.code(), "invalid_payload", "{}", v.from);
        }
    }

    /// Constructed from Dragino's decoders' layouts (their manuals' example values:
    /// battery 0x0B45 = 2885 mV, distance 0x0B05 = 2821 mm).
    #[test]
    fn live_frames_of_both_lengths_and_their_sentinels() {
        let ldds75 = Codec::DraginoLdds75;
        let got = check(ldds75, 2, &hex("0B450B0500")).unwrap();
        assert_eq!(got.samples, vec![live(Ok(2821))]);
        assert_eq!(got.battery, Some(Battery::Millivolts(2885)));
        // The interrupt bit above the battery's 14 bits is not battery.
        let got = check(ldds75, 2, &hex("CB450B0501")).unwrap();
        assert_eq!(got.battery, Some(Battery::Millivolts(2885)));
        for model in MODELS {
            let got = check(model, 2, &hex("0B450B0500010501")).unwrap();
            assert_eq!(got.samples, vec![live(Ok(2821))], "{model:?}");
            assert_eq!(got.battery, Some(Battery::Millivolts(2885)));
            let reason = |h: &str| check(model, 2, &hex(h)).unwrap().samples[0].distance;
            assert_eq!(reason("0B45000000010501"), Err(NoReading("no sensor")));
            assert_eq!(
                reason("0B45001300010501"),
                Err(NoReading("invalid reading"))
            );
            assert_eq!(reason("0B45001400010501"), Ok(20));
            assert_eq!(reason("0B450B0500010500"), Err(NoReading("no sensor")));
            assert_eq!(reason("0B45FFFF00010501"), Ok(65_535));
        }
        let code = |model, port, h: &str| check(model, port, &hex(h)).unwrap_err().code();
        // 5- and 4-byte frames are the LDDS75's only.
        assert_eq!(
            code(Codec::DraginoDds75Lb, 2, "0B450B0500"),
            "invalid_payload"
        );
        assert_eq!(
            code(Codec::DraginoDds75Lb, 2, "0E1C0B05"),
            "invalid_payload"
        );
        // The DDS75-LB multi-distance frame (battery word bit 12) is not read.
        let multi = "1B450B05000105010B060B0700010501";
        assert_eq!(code(Codec::DraginoDds75Lb, 2, multi), "invalid_payload");
        for model in MODELS {
            assert_eq!(code(model, 2, ""), "invalid_payload");
            assert_eq!(code(model, 2, "0B"), "invalid_payload");
            assert_eq!(code(model, 2, "0B450B05000105"), "invalid_payload");
            assert_eq!(code(model, 5, "27010301FF0B45"), "unsupported_port");
            assert_eq!(code(model, 6, "0B050B06"), "unsupported_port");
            assert_eq!(code(model, 1, "0B450B0500010501"), "unsupported_port");
        }
        assert_eq!(code(ldds75, 3, &"00".repeat(11)), "unsupported_port");
    }

    /// Constructed: three entries, oldest first (2821 mm at 2021-01-19 04:27:03 UTC,
    /// an empty entry, 15 mm), as Dragino's DDS75-LB decoder splits them.
    #[test]
    fn datalog_entries_are_samples_with_device_time() {
        let model = Codec::DraginoDds75Lb;
        let frame = hex(concat!(
            "0B450B05010541",
            "60065F97",
            "0000000000000000000000",
            "0B45000F010541",
            "60066DA7",
        ));
        let got = check(model, 3, &frame).unwrap();
        assert_eq!(
            got.samples,
            vec![
                logged(Ok(2821), Some(1_611_030_423)),
                logged(Err(NoReading("empty datalog entry")), None),
                logged(Err(NoReading("invalid reading")), Some(1_611_034_023)),
            ]
        );
        assert_eq!(got.battery, None);
        // One empty entry: the device had nothing in the polled range.
        let empty = check(model, 3, &[0; 11]).unwrap();
        assert_eq!(empty.samples.len(), 1);
        // A datalog must be whole entries.
        for len in [0, 1, 10, 12, 21, 23, 32] {
            let err = check(model, 3, frame.get(..len).unwrap()).unwrap_err();
            assert_eq!(err.code(), "invalid_payload", "{len}");
        }
    }

    #[test]
    fn hostile_bytes_never_panic_and_answer_a_code() {
        hostile_vectors(Codec::DraginoLdds75, &vectors(LDDS75), &[2]);
        hostile_vectors(Codec::DraginoDds75Lb, &vectors(DDS75_LB), &[2, 3]);
    }
}
