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
//! the rules of `readings.rs`. This file dispatches to the vendor files ([`decode`]).

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
    BIN_DEPTH_MM, MIN_DEVICE_TIME_S, OFFSET_MM, REPORTING_PERIOD_S,
};
pub use types::{fill_pct, Battery, Codec, Decoded, DecodedSample, NoReading, Sample, Uplink};

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
