//! The shapes every codec shares: a sensor model ([`Codec`]) and its ids, what one
//! uplink's bytes say ([`Uplink`], [`Sample`], [`Battery`], [`NoReading`]), their flat
//! view for JavaScript ([`Decoded`]), and a distance as a fill level ([`fill_pct`]).

use crate::dedupe::error::Error;
use serde::Serialize;
use std::num::NonZeroU32;

/// A sensor model whose bytes the core reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Codec {
    MilesightEm310Udl,
    MilesightEm500Udl,
    DingtekDf703,
    DecentlabDlMbx,
    TekelekTek766,
    DraginoLdds75,
    DraginoDds75Lb,
}

/// Every codec with its id: the TTN device repository's `brand_id/model_id`, so that
/// a The Things Stack uplink's `version_ids` names its codec.
const IDS: [(Codec, &str); 7] = [
    (Codec::MilesightEm310Udl, "milesight-iot/em310-udl"),
    (Codec::MilesightEm500Udl, "milesight-iot/em500-udl"),
    (Codec::DingtekDf703, "dingtek/df703"),
    (Codec::DecentlabDlMbx, "decentlab/dl-mbx"),
    (Codec::TekelekTek766, "tekelek/tek766"),
    (Codec::DraginoLdds75, "dragino/ldds75"),
    (Codec::DraginoDds75Lb, "dragino/dds75-lb"),
];

impl Codec {
    /// Every codec, in the order of [`Codec::IDS`].
    pub const ALL: [Codec; IDS.len()] = {
        let mut all = [Codec::MilesightEm310Udl; IDS.len()];
        let mut i = 0;
        while i < IDS.len() {
            all[i] = IDS[i].0;
            i += 1;
        }
        all
    };

    /// The ids of every codec, in the order of [`Codec::ALL`].
    pub const IDS: [&'static str; IDS.len()] = {
        let mut ids = [""; IDS.len()];
        let mut i = 0;
        while i < IDS.len() {
            ids[i] = IDS[i].1;
            i += 1;
        }
        ids
    };

    /// The codec's id, `brand/model`.
    pub fn id(self) -> &'static str {
        IDS.iter()
            .find(|(c, _)| *c == self)
            .map_or("", |&(_, id)| id)
    }

    /// The codec of an id (exactly as [`Codec::id`] writes it).
    ///
    /// ```
    /// use reconnect_dedupe::codec::Codec;
    /// assert_eq!(Codec::from_id("dingtek/df703"), Ok(Codec::DingtekDf703));
    /// assert_eq!(Codec::from_id("dingtek/df555").unwrap_err().code(), "unknown_codec");
    /// ```
    ///
    /// # Errors
    /// [`Error::UnknownCodec`] for any other text.
    pub fn from_id(id: &str) -> Result<Codec, Error> {
        IDS.iter()
            .find(|(_, i)| *i == id)
            .map(|&(c, _)| c)
            .ok_or_else(|| Error::UnknownCodec(id.to_owned()))
    }

    /// Whether its samples are dated by the reporting schedule (Tekelek's current and
    /// previous readings, `periods_ago`), so that a device's configuration needs
    /// `reporting_period_s` (else [`Error::MissingReportingPeriod`]).
    pub fn needs_period(self) -> bool {
        matches!(self, Codec::TekelekTek766)
    }

    /// The application port its sensor sends on and is sent downlinks on when the
    /// device's configuration names no other (`application_port`), for the codecs whose
    /// sensor lets it be changed in its settings: Milesight's 85. `None`: the codec's
    /// ports are fixed (or, for Decentlab and Tekelek, every application port is read).
    pub fn application_port(self) -> Option<u32> {
        match self {
            Codec::MilesightEm310Udl | Codec::MilesightEm500Udl => Some(super::milesight::PORT),
            _ => None,
        }
    }

    /// Whether a reading's seq is the sensor's own application counter (Dingtek's frame
    /// counter, `app_counter`), one per uplink, so that a gap in it is an uplink lost:
    /// such a seq feeds the worker's sequence window. (The LoRaWAN frame counter, the
    /// others' seq for a live reading, restarts on every rejoin.)
    pub fn seq_is_counter(self) -> bool {
        matches!(self, Codec::DingtekDf703)
    }
}

/// What one uplink's bytes say: its level samples (none for a frame without a level,
/// such as a battery-only report) and the battery, when the frame carries it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Uplink {
    pub samples: Vec<Sample>,
    pub battery: Option<Battery>,
}

/// A battery figure as the device reports it; serialised as `{"percent": 92}` or
/// `{"millivolts": 3612}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
#[serde(rename_all = "snake_case")]
pub enum Battery {
    Percent(u8),
    Millivolts(u16),
}

/// One level sample: the live one, a buffered history record, or one of Tekelek's
/// previous readings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// The distance from the sensor to the surface in mm, or why there is none.
    pub distance: Result<u32, NoReading>,
    /// The device's own time of the sample, unix seconds (history records, datalog
    /// entries); `None` for a live sample, which the receive time dates.
    pub device_time_s: Option<i64>,
    /// The device's own application counter (Dingtek's frame counter).
    pub app_counter: Option<u32>,
    /// Tekelek: 0 for the current reading, 1 ..= 3 for those reporting periods ago.
    pub periods_ago: Option<u8>,
}

/// Why a sample has no distance (a sentinel or an empty record): the worker rejects it
/// with the code `no_reading` and this text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoReading(pub &'static str);

/// An uplink's samples as the JavaScript API gives them (`decodePayload`): flat, a
/// sample's distance or the reason it has none side by side.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
#[cfg_attr(feature = "typescript", tsify(rename = "DecodedPayload"))]
pub struct Decoded {
    /// The codec's id.
    pub codec: &'static str,
    pub battery: Option<Battery>,
    pub samples: Vec<DecodedSample>,
}

/// One [`Sample`], flat: exactly one of `distance_mm` and `no_reading` is set.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct DecodedSample {
    pub distance_mm: Option<u32>,
    /// Why there is no distance (a sentinel, an empty record); the worker's code for
    /// it is `no_reading`.
    pub no_reading: Option<&'static str>,
    pub device_time_s: Option<i64>,
    pub app_counter: Option<u32>,
    pub periods_ago: Option<u8>,
}

impl Decoded {
    /// The flat view of one uplink decoded by `codec`.
    pub fn new(codec: Codec, uplink: &Uplink) -> Decoded {
        Decoded {
            codec: codec.id(),
            battery: uplink.battery,
            samples: uplink
                .samples
                .iter()
                .map(|s| DecodedSample {
                    distance_mm: s.distance.ok(),
                    no_reading: s.distance.err().map(|NoReading(why)| why),
                    device_time_s: s.device_time_s,
                    app_counter: s.app_counter,
                    periods_ago: s.periods_ago,
                })
                .collect(),
        }
    }
}

/// The fill level for a distance: `100 × (depth − (distance − offset)) / depth`,
/// clamped to 0 ..= 100 and rounded to one decimal (half away from zero), never `-0.0`.
/// `offset_mm` is the distance from the sensor to the bin's rim, `depth_mm` from the
/// rim to the bottom.
///
/// ```
/// use reconnect_dedupe::codec::fill_pct;
/// use std::num::NonZeroU32;
/// let depth = NonZeroU32::new(1000).unwrap();
/// assert_eq!(fill_pct(1234, depth, 234), 0.0);   // at the bottom: empty
/// assert_eq!(fill_pct(334, depth, 234), 90.0);
/// assert_eq!(fill_pct(100, depth, 234), 100.0);  // above the rim: full
/// assert_eq!(fill_pct(5000, depth, 0), 0.0);     // below the bottom: empty
/// ```
pub fn fill_pct(distance_mm: u32, depth_mm: NonZeroU32, offset_mm: u32) -> f64 {
    let depth = f64::from(depth_mm.get());
    let below_rim = f64::from(distance_mm) - f64::from(offset_mm);
    let pct = (100.0 * (depth - below_rim) / depth).clamp(0.0, 100.0);
    // Rounded in tenths; `+ 0.0` turns a -0.0 into 0.0.
    (pct * 10.0).round() / 10.0 + 0.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_are_the_ttn_repository_names() {
        for codec in Codec::ALL {
            assert_eq!(Codec::from_id(codec.id()), Ok(codec));
            let (brand, model) = codec.id().split_once('/').unwrap();
            assert!(!brand.is_empty() && !model.is_empty());
        }
        assert_eq!(Codec::IDS.len(), Codec::ALL.len());
        assert_eq!(
            Codec::from_id("Dingtek/DF703").unwrap_err().code(),
            "unknown_codec"
        );
    }

    #[test]
    fn fill_levels_clamp_round_and_never_go_negative_zero() {
        let d = |mm| NonZeroU32::new(mm).unwrap();
        assert_eq!(fill_pct(0, d(1000), 0), 100.0);
        assert_eq!(fill_pct(1000, d(1000), 0), 0.0);
        assert!(fill_pct(1000, d(1000), 0).is_sign_positive());
        assert_eq!(fill_pct(u32::MAX, d(1), u32::MAX), 100.0);
        assert_eq!(fill_pct(0, d(u32::MAX), u32::MAX), 100.0);
        // One decimal, half away from zero: 1/3 of 1000 mm left = 66.666… → 66.7.
        assert_eq!(fill_pct(333, d(1000), 0), 66.7);
        assert_eq!(fill_pct(1, d(3), 0), 66.7);
        assert_eq!(fill_pct(2, d(3), 0), 33.3);
        for distance in 0..3000 {
            let f = fill_pct(distance, d(1500), 120);
            assert!(
                (0.0..=100.0).contains(&f) && f.is_sign_positive(),
                "{distance}: {f}"
            );
            assert_eq!((f * 10.0).round(), f * 10.0, "{distance}: {f}");
        }
    }
}
