//! Raw payloads of bin-level sensors → level samples ([`decode`]), and a sample's
//! distance → a fill level from the bin's geometry ([`fill_pct`]).
//!
//! Network servers pass the frame's application payload as bytes (The Things Stack
//! `frm_payload`, ChirpStack `data`, Helium `payload`, LORIOT `data`) with its port;
//! the payload formatters that ship with these sensors output a *distance*, never a
//! fill level, and a sensor's buffered history arrives as records with a device time
//! inside those bytes. One file per vendor holds its byte layout, the sources it was
//! read from, and its vectors:
//!
//! | codec id (TTN device repository `brand/model`) | file |
//! | --- | --- |
//! | `milesight-iot/em310-udl`, `milesight-iot/em500-udl` | `milesight.rs` |
//! | `dingtek/df703` | `dingtek.rs` |
//! | `decentlab/dl-mbx` | `decentlab.rs` |
//! | `tekelek/tek766` | `tekelek.rs` |
//! | `dragino/ldds75`, `dragino/dds75-lb` | `dragino.rs` |
//!
//! A codec never panics on bytes: what it cannot read is [`Error::InvalidPayload`]
//! (the whole uplink), a port that carries no level data is
//! [`Error::UnsupportedPort`], and a sample whose value is a sentinel ("no target",
//! "sensor missing", an empty history record, distance 0) is a [`NoReading`], which
//! the worker rejects with the code `no_reading` rather than turning it into 0 % or
//! 100 %.
//!
//! What the vendor files share, a sensor model ([`Codec`]) and what its bytes say
//! ([`Uplink`], [`Sample`], [`Battery`], [`NoReading`]; flat for JavaScript,
//! [`Decoded`]) and [`fill_pct`], is in `types.rs`; a sample becomes a reading by
//! the rules of `readings.rs`. This file dispatches to the vendor files: their bytes
//! ([`decode`]) and the downlink a sensor answers with its records
//! ([`history_request`]).

use crate::dedupe::error::Error;

mod decentlab;
mod dingtek;
mod dragino;
mod milesight;
mod readings;
mod tekelek;
#[cfg(test)]
pub(crate) mod test_kit;
mod types;

pub use readings::{
    readings, unwrap_counter, DeviceConfig, DeviceState, FrameMeta, Readings, SampleReading,
    APPLICATION_PORT, BIN_DEPTH_MM, MIN_DEVICE_TIME_S, OFFSET_MM, REPORTING_PERIOD_S,
};
pub use types::{fill_pct, Battery, Codec, Decoded, DecodedSample, NoReading, Sample, Uplink};

/// A downlink to a sensor: the port and the bytes of its application payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Downlink {
    pub f_port: u32,
    pub bytes: Vec<u8>,
}

/// The downlink that asks a sensor of `codec` for its buffered records of the device
/// times `start_s ..= end_s` (unix seconds), or `None` when the sensor answers no such
/// request (every codec but the EM500-UDL).
///
/// ```
/// use reconnect_dedupe::codec::{history_request, Codec};
/// let d = history_request(Codec::MilesightEm500Udl, 1784183340, 1784183399).unwrap().unwrap();
/// assert_eq!(d.f_port, 85);
/// assert_eq!(d.bytes, [0xFD, 0x6C, 0x2C, 0x7A, 0x58, 0x6A, 0x67, 0x7A, 0x58, 0x6A]);
/// assert_eq!(history_request(Codec::DingtekDf703, 0, 1), Ok(None));
/// ```
///
/// # Errors
/// [`Error::BadArgument`] when `start_s` is after `end_s`.
pub fn history_request(codec: Codec, start_s: u32, end_s: u32) -> Result<Option<Downlink>, Error> {
    if start_s > end_s {
        return Err(Error::BadArgument(format!(
            "a history request's start ({start_s}) is after its end ({end_s})"
        )));
    }
    Ok(match codec {
        Codec::MilesightEm500Udl => Some(Downlink {
            f_port: milesight::HISTORY_PORT,
            bytes: milesight::history_request(start_s, end_s),
        }),
        _ => None,
    })
}

/// The port of `codec`'s history request ([`history_request`]), or `None` when its
/// sensor answers none.
pub fn history_port(codec: Codec) -> Option<u32> {
    history_request(codec, 0, 0)
        .ok()
        .flatten()
        .map(|d| d.f_port)
}

/// The samples of one uplink's bytes, read by `codec` from a device whose sensor was
/// set to send on `application_port` (`None`: the codec's own ports, as [`decode`]):
/// a frame on that port is read as a frame on the codec's factory port
/// ([`Codec::application_port`]), and so is one on the factory port itself (where the
/// sensor sends again once reset to its factory settings).
///
/// ```
/// use reconnect_dedupe::codec::{decode_on, Codec};
/// let battery = [0x01, 0x75, 0x5C];
/// let em310 = Codec::MilesightEm310Udl;
/// assert!(decode_on(em310, Some(86), 86, &battery).is_ok());
/// assert!(decode_on(em310, Some(86), 85, &battery).is_ok());
/// assert_eq!(decode_on(em310, Some(86), 87, &battery).unwrap_err().code(), "unsupported_port");
/// assert_eq!(decode_on(Codec::DingtekDf703, Some(86), 86, &battery).unwrap_err().code(), "invalid_config");
/// ```
///
/// # Errors
/// As [`decode`]; [`Error::NotApplicationPort`] for a frame on any other port than
/// these two; [`Error::InvalidConfig`] when `codec`'s sensor has no application port
/// to set.
pub fn decode_on(
    codec: Codec,
    application_port: Option<u32>,
    f_port: u32,
    bytes: &[u8],
) -> Result<Uplink, Error> {
    let Some(set) = application_port else {
        return decode(codec, f_port, bytes);
    };
    let factory = readings::settable_port(codec)?;
    if f_port != set && f_port != factory {
        return Err(Error::NotApplicationPort {
            port: f_port,
            factory,
            application_port: set,
        });
    }
    decode(codec, factory, bytes)
}

/// The samples of one uplink's bytes, read by `codec`.
///
/// # Errors
/// [`Error::InvalidPayload`] when the bytes cannot be read as this codec's frame;
/// [`Error::UnsupportedPort`] for a port that carries no level data.
pub fn decode(codec: Codec, f_port: u32, bytes: &[u8]) -> Result<Uplink, Error> {
    match codec {
        Codec::MilesightEm310Udl | Codec::MilesightEm500Udl => {
            milesight::decode(codec, f_port, bytes)
        }
        Codec::DingtekDf703 => dingtek::decode(f_port, bytes),
        Codec::DecentlabDlMbx => decentlab::decode(codec, f_port, bytes),
        Codec::TekelekTek766 => tekelek::decode(codec, f_port, bytes),
        Codec::DraginoLdds75 | Codec::DraginoDds75Lb => dragino::decode(codec, f_port, bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::test_kit::vectors;
    use super::*;

    /// Every codec with its vector file (tests/vectors/devices/).
    const FILES: [(Codec, &str); 7] = [
        (
            Codec::MilesightEm310Udl,
            include_str!("../../tests/vectors/devices/milesight-em310-udl.json"),
        ),
        (
            Codec::MilesightEm500Udl,
            include_str!("../../tests/vectors/devices/milesight-em500-udl.json"),
        ),
        (
            Codec::DingtekDf703,
            include_str!("../../tests/vectors/devices/dingtek-df703.json"),
        ),
        (
            Codec::DecentlabDlMbx,
            include_str!("../../tests/vectors/devices/decentlab-dl-mbx.json"),
        ),
        (
            Codec::TekelekTek766,
            include_str!("../../tests/vectors/devices/tekelek-tek766.json"),
        ),
        (
            Codec::DraginoLdds75,
            include_str!("../../tests/vectors/devices/dragino-ldds75.json"),
        ),
        (
            Codec::DraginoDds75Lb,
            include_str!("../../tests/vectors/devices/dragino-dds75-lb.json"),
        ),
    ];

    #[test]
    fn a_codec_says_what_its_bytes_do_a_period_when_they_date_by_schedule_a_counter_when_they_count(
    ) {
        assert_eq!(FILES.map(|(c, _)| c), Codec::ALL);
        for (codec, file) in FILES {
            let samples: Vec<Sample> = vectors(file)
                .iter()
                .filter_map(|v| decode(codec, v.f_port, &v.bytes).ok())
                .flat_map(|u| u.samples)
                .collect();
            // (The DDS75-LB's two vectors are another device's frames: no sample.)
            let scheduled = samples.iter().any(|s| s.periods_ago.is_some());
            let counted = samples.iter().any(|s| s.app_counter.is_some());
            assert_eq!(codec.needs_period(), scheduled, "{}", codec.id());
            assert_eq!(codec.seq_is_counter(), counted, "{}", codec.id());
            // A counter's codec counts every sample it reads.
            if counted {
                assert!(
                    samples.iter().all(|s| s.app_counter.is_some()),
                    "{}",
                    codec.id()
                );
            }
        }
    }

    #[test]
    fn the_em500_alone_answers_a_history_request_on_its_uplink_port_and_its_records_decode_there() {
        for codec in Codec::ALL {
            let request = history_request(codec, 1_784_183_340, 1_784_183_399).unwrap();
            assert_eq!(
                request.is_some(),
                codec == Codec::MilesightEm500Udl,
                "{}",
                codec.id()
            );
            assert_eq!(history_port(codec), request.map(|d| d.f_port));
        }
        let d = history_request(Codec::MilesightEm500Udl, 0, u32::MAX)
            .unwrap()
            .unwrap();
        assert_eq!(d.bytes, [0xFD, 0x6C, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]);
        // The records it asks for come back on that port: a `20 CE` record decodes there.
        let record = [0x20, 0xCE, 0x2C, 0x7A, 0x58, 0x6A, 0xE8, 0x03];
        let up = decode(Codec::MilesightEm500Udl, d.f_port, &record).unwrap();
        assert_eq!(up.samples[0].device_time_s, Some(1_784_183_340));
        // One second is a range; a start after the end is refused.
        assert!(history_request(Codec::MilesightEm500Udl, 7, 7)
            .unwrap()
            .is_some());
        assert_eq!(
            history_request(Codec::MilesightEm500Udl, 8, 7)
                .unwrap_err()
                .code(),
            "invalid_burst"
        );
    }

    #[test]
    fn a_device_set_to_another_application_port_is_read_on_that_port_and_on_its_factory_port() {
        for codec in Codec::ALL {
            let settable = matches!(codec, Codec::MilesightEm310Udl | Codec::MilesightEm500Udl);
            assert_eq!(
                codec.application_port().is_some(),
                settable,
                "{}",
                codec.id()
            );
        }
        for (codec, file) in &FILES[..2] {
            // (Every vector of theirs on another port than 85 is refused there.)
            for v in vectors(file).into_iter().filter(|v| v.f_port == 85) {
                let factory = decode(*codec, v.f_port, &v.bytes);
                // The same bytes on the port the device was set to read as on 85 ...
                for set in [1, 86, 223] {
                    assert_eq!(
                        decode_on(*codec, Some(set), set, &v.bytes),
                        factory,
                        "{}",
                        v.from
                    );
                    // ... and still on 85, where a sensor reset to its factory settings sends.
                    assert_eq!(
                        decode_on(*codec, Some(set), v.f_port, &v.bytes),
                        factory,
                        "{}",
                        v.from
                    );
                    // Any other port is neither.
                    let other = 87; // neither 85 nor any `set` here
                    let err = decode_on(*codec, Some(set), other, &v.bytes).unwrap_err();
                    assert_eq!(err.code(), "unsupported_port");
                    assert_eq!(
                        err.to_string(),
                        format!("port {other} carries no level data for this device: it sends on 85, or on its configuration's application_port {set}")
                    );
                }
                // Set to 85, or not set: the codec's own port.
                assert_eq!(decode_on(*codec, Some(85), v.f_port, &v.bytes), factory);
                assert_eq!(decode_on(*codec, None, v.f_port, &v.bytes), factory);
            }
        }
        // A codec whose ports are fixed has no port to set.
        let err = decode_on(Codec::DingtekDf703, Some(3), 3, &[0x80]).unwrap_err();
        assert_eq!(err.code(), "invalid_config");
        assert!(err.to_string().contains("(milesight-iot/em310-udl, milesight-iot/em500-udl); dingtek/df703 reads its own ports"), "{err}");
    }

    #[test]
    fn a_config_checks_its_application_port_range_and_codec() {
        let mut config = DeviceConfig::new(Some(Codec::MilesightEm310Udl), 1500, 0, None).unwrap();
        for (port, ok) in [(0, false), (1, true), (85, true), (223, true), (224, false)] {
            config.application_port = Some(port);
            assert_eq!(config.check().is_ok(), ok, "{port}");
        }
        config.application_port = Some(0);
        assert_eq!(
            config.check().unwrap_err().to_string(),
            "invalid configuration: application_port must be 1 ..= 223, got 0"
        );
        config.codec = Some(Codec::TekelekTek766);
        config.application_port = Some(10);
        assert_eq!(config.check().unwrap_err().code(), "invalid_config");
        // Chosen from the uplink: checked with the codec chosen (decode_on).
        config.codec = None;
        assert!(config.check().is_ok());
    }
}
