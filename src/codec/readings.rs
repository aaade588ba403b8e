//! An uplink's samples → readings `(seq, ts, fill_pct)`, with the device's bin geometry
//! and the frame's metadata: the rules that give a payload without `seq` or `ts` the
//! key its first delivery had, so that a replay is recognised.
//!
//! # Rules
//! - **fill_pct**: [`fill_pct`]`(distance, bin_depth_mm, offset_mm)`.
//! - **ts**, the first that applies:
//!   1. the sample's device time (EM500-UDL history records, Dragino datalog entries);
//!   2. a sample dated by the reporting schedule (Tekelek: `periods_ago`): the receive
//!      time rounded to the *nearest* multiple of `reporting_period_s` since the unix
//!      epoch, minus `periods_ago` periods;
//!   3. the receive time.
//! - **seq**, the first that applies:
//!   1. the device's application counter (DF703), unwrapped across its wrap at 65 535
//!      by [`unwrap_counter`] against the device's counter reference;
//!   2. for a sample dated by rule 1 or 2 of ts: that time in unix seconds, so a
//!      history record replayed after a rejoin (new frame counter) keys as its first
//!      delivery, and Tekelek's reading repeated by the next three uplinks keys the same;
//!   3. the frame counter, which restarts on a rejoin (the key's content hash keeps
//!      that safe: a restarted counter with other content is a conflict, not a replay).
//! - A sample without a distance (a sentinel, an empty record) is
//!   [`Error::NoReading`] (`no_reading`, field `fill_pct`) with the codec's reason, never
//!   0 % or 100 %.
//!
//! # Why the nearest multiple of the period
//! An uplink's receive time is near, not on, its slot of the schedule: the device's
//! clock drifts either way, LoRaWAN devices delay a transmission at random, and the
//! network adds latency. Rounding *down* would move an uplink received a few seconds
//! early into the previous slot, so the same reading repeated by the next uplink would
//! get another ts and seq; the nearest multiple absorbs jitter of up to half a period
//! either side. Ties (exactly half a period) round to the later slot. The slots are the
//! multiples of the period since the epoch, so a reading's ts is on the clock's grid.
//!
//! # The device's own phase
//! A device's schedule need not be on that grid: a Tekelek reporting every 600 s may
//! send at 09:04:58, 09:15:02, … Rounding each receive time on its own would put the
//! first in 09:00 and the second in 09:20 (302 s past 09:15 is nearer), and the three
//! readings the second repeats would key under new times: counted twice. So the
//! device's phase, how long after its slot its uplinks arrive, is kept
//! ([`DeviceState::schedule_phase_s`], [`Readings::schedule_phase_s`]; the worker stores it per
//! device): an uplink's slot is the receive time *less the phase*, rounded to the
//! nearest multiple of the period. The first uplink has no phase (0), so it rounds as
//! above (298 s past 09:00: 09:00) and its offset becomes the phase; the second, 302 s
//! past its slot, then rounds to 09:10, and its repeats key the same. The phase moves
//! only when an uplink's offset differs from it by more than an eighth of a period
//! (a clock's drift, not a radio's jitter), so it is rarely written; a phase that drifts
//! past five eighths of a period wraps by one period (the ts stays within that of the
//! receive time), and that one uplink's repeats are then counted again.
//!
//! # Device clocks
//! A device time before 2015-01-01T00:00:00Z is refused per sample with `invalid_ts`
//! ("device clock not set"): an unsynced clock counts from 0 (1970), from 2000-01-01
//! (where real-time clocks start after a power loss) or from its last reset, and keying
//! by it would make unrelated readings after each reset share seqs. A record dated
//! 2000-01-01T00:10Z is such a clock, not a reading of 2000: before, it restarted the
//! sequence window 26 years back. No LoRaWAN device keeps a set clock earlier than
//! LoRaWAN itself (specification 1.0, January 2015), so the bound is that, one constant
//! for every codec.
//! A time after 9999-12-31 is refused with `invalid_ts` too, as the core does.
//!
//! # The counter reference
//! [`readings`] takes the device's stored reference (`None` before its first counter)
//! and returns the one to store: the largest unwrapped counter seen. Each counter whose
//! seq is valid moves it, even on a sample without a distance (the counter was read all
//! the same); it never goes down, so an old frame replayed does not pull it back.
//!
//! Everything is integer arithmetic with checked operations: no input panics, and
//! every `Ok` reading passes the core's own validation (`|seq| ≤ 2^53 − 1`, ts in years
//! 0001 ..= 9999, fill 0 ..= 100).

use super::{fill_pct, Codec, NoReading, Sample, Uplink};
use crate::dedupe::error::{Error, Field};
use crate::dedupe::reading::MAX_SAFE_SEQ;
use crate::dedupe::timestamp::{Micros, TsError, MAX_MICROS, MIN_MICROS};
use std::num::NonZeroU32;

const MICROS_PER_SEC: i64 = 1_000_000;
/// 2015-01-01T00:00:00Z in unix seconds: a device time before it is a clock never set
/// (module docs, "Device clocks").
pub const MIN_DEVICE_TIME_S: i64 = 1_420_070_400;
/// The span of a 16-bit application counter.
const COUNTER_SPAN: i64 = 1 << 16;

/// A device's bin and sensor, as `PUT /v1/devices/{id}/config` stores it. The ranges
/// are the route's to check ([`DeviceConfig::check`]); [`readings`] reads any value
/// without panicking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceConfig {
    /// `None`: selected from the uplink (The Things Stack `version_ids`, …).
    pub codec: Option<Codec>,
    /// From the bin's rim to its bottom, 1 ..= 100 000 mm.
    pub bin_depth_mm: NonZeroU32,
    /// From the sensor to the bin's rim, 0 ..= 100 000 mm.
    pub offset_mm: u32,
    /// The device's reporting period, 1 ..= 604 800 s (7 days); Tekelek's readings
    /// are dated by it.
    pub reporting_period_s: Option<NonZeroU32>,
    /// The application port the sensor was set to send on, 1 ..= 223, for a codec whose
    /// sensor lets it be changed ([`Codec::application_port`]); `None`: the codec's own.
    pub application_port: Option<u32>,
}

/// What the envelope says about the frame (the network server's metadata).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameMeta {
    /// When the network server received the frame.
    pub received_at: Micros,
    /// The LoRaWAN frame counter (restarts on a rejoin).
    pub f_cnt: i64,
    /// The radio frame's identity (`RawUplink::frame`, as a number), when known: each
    /// reading keyed at the receive time then gets one of its own
    /// (`uplink::payload_readings`), so the worker keys a later copy of the frame with
    /// the first copy's `ts`.
    pub frame: Option<u64>,
}

/// What the worker keeps of a device between its uplinks for the codecs (`None`: not
/// yet): the application-counter reference ([`Readings::counter_ref`], DF703) and the
/// schedule phase ([`Readings::schedule_phase_s`], Tekelek).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceState {
    pub counter_ref: Option<i64>,
    pub schedule_phase_s: Option<i64>,
}

/// One sample's reading, the fields of the core's `Reading` but the device id.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleReading {
    pub seq: i64,
    pub ts: Micros,
    pub fill_pct: f64,
}

/// The readings of one uplink's samples, in sample order, and the counter reference
/// to store.
#[derive(Debug, Clone, PartialEq)]
pub struct Readings {
    /// Per sample: its reading, or why it has none ([`Error::NoReading`], `invalid_ts`,
    /// `invalid_seq`).
    pub each: Vec<Result<SampleReading, Error>>,
    /// The device's application-counter reference after this uplink (unchanged when
    /// no sample carries a counter).
    pub counter_ref: Option<i64>,
    /// The device's schedule phase after this uplink ([`readings`]; unchanged
    /// when no sample is dated by the schedule, or when it did not move).
    pub schedule_phase_s: Option<i64>,
}

/// The readings of `uplink`'s samples (see the module's rules), for a device whose
/// stored codec state is `state`: the application-counter reference unwraps its
/// counters, and the schedule phase dates its scheduled samples (module docs, "The
/// device's own phase"); [`Readings`] holds both to store after it.
///
/// ```
/// use reconnect_dedupe::codec::{decode, readings, Codec, DeviceConfig, DeviceState, FrameMeta};
/// use std::num::NonZeroU32;
/// let config = DeviceConfig {
///     codec: Some(Codec::MilesightEm500Udl),
///     bin_depth_mm: NonZeroU32::new(1500).unwrap(),
///     offset_mm: 0,
///     reporting_period_s: None,
///     application_port: None,
/// };
/// // Two history records: device times 1665561758 and 1665565242, 1234 and 1232 mm.
/// let bytes = [0x20, 0xCE, 0x9E, 0x74, 0x46, 0x63, 0xD2, 0x04,
///              0x20, 0xCE, 0x3A, 0x82, 0x46, 0x63, 0xD0, 0x04];
/// let uplink = decode(Codec::MilesightEm500Udl, 85, &bytes).unwrap();
/// let meta = FrameMeta { received_at: 1_700_000_000_000_000, f_cnt: 7, frame: None };
/// let got = readings(&config, &uplink, &meta, DeviceState::default()).unwrap();
/// let first = got.each[0].as_ref().unwrap();
/// assert_eq!((first.seq, first.ts, first.fill_pct), (1665561758, 1665561758_000_000, 17.7));
/// ```
///
/// # Errors
/// [`Error::MissingReportingPeriod`] when a sample is dated by the reporting schedule
/// (Tekelek's `periods_ago`) and `config` has no period: the whole uplink. Per sample
/// (in [`Readings::each`]): [`Error::NoReading`] for a sample without a distance,
/// `invalid_ts` for a time out of range or a device clock not set, `invalid_seq` for a
/// seq outside ±(2^53 − 1) or an application counter above 65 535.
pub fn readings(
    config: &DeviceConfig,
    uplink: &Uplink,
    meta: &FrameMeta,
    state: DeviceState,
) -> Result<Readings, Error> {
    let scheduled = uplink.samples.iter().any(|s| on_schedule(s).is_some());
    let schedule = match (scheduled, config.reporting_period_s) {
        (false, _) => None,
        (true, None) => return Err(Error::MissingReportingPeriod),
        (true, Some(period_s)) => Some(Schedule::of(
            meta.received_at,
            period_s,
            state.schedule_phase_s,
        )),
    };
    let mut counter_ref = state.counter_ref;
    let each = uplink
        .samples
        .iter()
        .map(|sample| reading(sample, meta, config, schedule.as_ref(), &mut counter_ref))
        .collect();
    Ok(Readings {
        each,
        counter_ref,
        schedule_phase_s: schedule.map_or(state.schedule_phase_s, |s| s.phase_s),
    })
}

/// A scheduled uplink's receive time less the device's phase (`None` past the range of
/// `i64`), which its samples' slots are rounded from, and the phase to store.
struct Schedule {
    period: NonZeroU32,
    shifted: Option<Micros>,
    phase_s: Option<i64>,
}

impl Schedule {
    /// The schedule of an uplink received at `received_at` from a device whose phase is
    /// `phase_s`, and its phase after it: the new offset when it moved by more than an
    /// eighth of a period (drift, not jitter), wrapped by one period when it went past
    /// five eighths (module docs).
    fn of(received_at: Micros, period: NonZeroU32, phase_s: Option<i64>) -> Schedule {
        let period_s = i64::from(period.get());
        let phase = phase_s.unwrap_or(0);
        let shifted = phase
            .checked_mul(MICROS_PER_SEC)
            .and_then(|p| received_at.checked_sub(p));
        let now = shifted.and_then(|t| slot(t, period, 0));
        let moved = now.and_then(|s| received_at.checked_sub(s)).map(|d| {
            let d = d.div_euclid(MICROS_PER_SEC);
            if d.abs().saturating_mul(8) > period_s.saturating_mul(5) {
                d - period_s * d.signum()
            } else if (d - phase).abs().saturating_mul(8) > period_s {
                d
            } else {
                phase
            }
        });
        let phase_s = match moved {
            Some(p) if p != phase => Some(p),
            _ => phase_s,
        };
        Schedule {
            period,
            shifted,
            phase_s,
        }
    }
}

/// `Ok` when `codec`'s sensor lets its application port be set, else
/// [`Error::InvalidConfig`] saying so.
pub(super) fn settable_port(codec: Codec) -> Result<u32, Error> {
    codec.application_port().ok_or_else(|| {
        Error::InvalidConfig(format!(
            "application_port is only for codecs whose sensor lets it be set ({}); {} reads its own ports",
            Codec::ALL
                .iter()
                .filter(|c| c.application_port().is_some())
                .map(|c| c.id())
                .collect::<Vec<_>>()
                .join(", "),
            codec.id()
        ))
    })
}

/// The ranges of a [`DeviceConfig`]'s numbers, as `PUT /v1/devices/{id}/config`
/// checks them (`limits().deviceConfig` in the JavaScript API): (min, max).
pub const BIN_DEPTH_MM: (u32, u32) = (1, 100_000);
pub const OFFSET_MM: (u32, u32) = (0, 100_000);
pub const REPORTING_PERIOD_S: (u32, u32) = (1, 7 * 86_400);
/// LoRaWAN's application ports (fPort 0 is the MAC's, 224 ..= 255 are reserved).
pub const APPLICATION_PORT: (u32, u32) = (1, 223);

impl DeviceConfig {
    /// A config of plain numbers, as `PUT /v1/devices/{id}/config` and
    /// `readingsFromPayload` take them. A depth or a period of 0, below every range's
    /// minimum, is refused here; the rest of each range by [`DeviceConfig::check`].
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a `bin_depth_mm` of 0, then for a
    /// `reporting_period_s` of 0.
    pub fn new(
        codec: Option<Codec>,
        bin_depth_mm: u32,
        offset_mm: u32,
        reporting_period_s: Option<u32>,
    ) -> Result<DeviceConfig, Error> {
        let nonzero = |name: &str, v: u32| {
            NonZeroU32::new(v).ok_or_else(|| Error::InvalidConfig(format!("{name} must not be 0")))
        };
        Ok(DeviceConfig {
            codec,
            bin_depth_mm: nonzero("bin_depth_mm", bin_depth_mm)?,
            offset_mm,
            reporting_period_s: reporting_period_s
                .map(|p| nonzero("reporting_period_s", p))
                .transpose()?,
            application_port: None,
        })
    }

    /// Checks each number against its range ([`BIN_DEPTH_MM`], [`OFFSET_MM`],
    /// [`REPORTING_PERIOD_S`], [`APPLICATION_PORT`]), as `PUT /v1/devices/{id}/config`
    /// does, and that an application port is one the codec's sensor lets be set.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the first number outside its range, or an
    /// application port for a codec without one.
    pub fn check(&self) -> Result<(), Error> {
        let within = |name: &str, v: u32, (min, max): (u32, u32)| {
            if (min..=max).contains(&v) {
                Ok(())
            } else {
                Err(Error::InvalidConfig(format!(
                    "{name} must be {min} ..= {max}, got {v}"
                )))
            }
        };
        within("bin_depth_mm", self.bin_depth_mm.get(), BIN_DEPTH_MM)?;
        within("offset_mm", self.offset_mm, OFFSET_MM)?;
        if let Some(period) = self.reporting_period_s {
            within("reporting_period_s", period.get(), REPORTING_PERIOD_S)?;
        }
        if let Some(port) = self.application_port {
            within("application_port", port, APPLICATION_PORT)?;
            if let Some(codec) = self.codec {
                settable_port(codec)?;
            }
        }
        Ok(())
    }
}

/// The value ≡ `counter` (mod 65 536) nearest to `reference` (ties: the later one), or
/// `counter` itself without a reference: a counter that wrapped continues (reference
/// 65 535, counter 0 → 65 536) and an old frame replayed keeps its value (reference
/// 65 540, counter 65 530 → 65 530). Before the first value seen the result is
/// negative (reference 5, counter 65 530 → −6): a frame from before the last wrap.
/// When the nearest value is not an `i64`, the nearest one that is.
///
/// ```
/// use reconnect_dedupe::codec::unwrap_counter;
/// assert_eq!(unwrap_counter(None, 65_535), 65_535);
/// assert_eq!(unwrap_counter(Some(65_535), 0), 65_536);
/// assert_eq!(unwrap_counter(Some(65_540), 65_530), 65_530);
/// ```
pub fn unwrap_counter(reference: Option<i64>, counter: u16) -> i64 {
    let Some(reference) = reference else {
        return i64::from(counter);
    };
    // 0 ..= 65 535 steps forward from the reference to the next value ≡ counter.
    let ahead = (i64::from(counter) - reference.rem_euclid(COUNTER_SPAN)).rem_euclid(COUNTER_SPAN);
    let forward = reference.checked_add(ahead);
    let backward = reference.checked_add(ahead - COUNTER_SPAN);
    let (nearest, other) = if ahead <= COUNTER_SPAN / 2 {
        (forward, backward)
    } else {
        (backward, forward)
    };
    // One of the two is always an i64: they are 65 536 apart around the reference.
    nearest.or(other).unwrap_or(reference)
}

/// How many periods ago a sample was taken when the schedule dates it: its
/// `periods_ago` when it has no device time of its own.
fn on_schedule(sample: &Sample) -> Option<u8> {
    sample
        .periods_ago
        .filter(|_| sample.device_time_s.is_none())
}

/// One sample's reading, moving the counter reference.
fn reading(
    sample: &Sample,
    meta: &FrameMeta,
    config: &DeviceConfig,
    schedule: Option<&Schedule>,
    counter_ref: &mut Option<i64>,
) -> Result<SampleReading, Error> {
    let counter = sample.app_counter.map(|c| counter_seq(c, counter_ref));
    let distance = sample
        .distance
        .map_err(|NoReading(why)| Error::NoReading(why))?;
    let (ts, seq) = match (counter, sample.device_time_s, on_schedule(sample)) {
        (Some(seq), ..) => (time(sample, meta, schedule)?, seq?),
        (None, Some(_), _) | (None, None, Some(_)) => {
            let ts = time(sample, meta, schedule)?;
            (ts, ts.div_euclid(MICROS_PER_SEC))
        }
        (None, None, None) => (time(sample, meta, schedule)?, safe_seq(meta.f_cnt)?),
    };
    Ok(SampleReading {
        seq,
        ts,
        fill_pct: fill_pct(distance, config.bin_depth_mm, config.offset_mm),
    })
}

/// The seq of an application counter; a valid one moves the reference up.
fn counter_seq(counter: u32, counter_ref: &mut Option<i64>) -> Result<i64, Error> {
    let counter = u16::try_from(counter).map_err(|_| {
        Error::Invalid(
            Field::Seq,
            "cannot come from an application counter above 65 535",
        )
    })?;
    let seq = safe_seq(unwrap_counter(*counter_ref, counter))?;
    *counter_ref = Some(counter_ref.map_or(seq, |r| r.max(seq)));
    Ok(seq)
}

/// `n` when it is a seq the core accepts.
fn safe_seq(n: i64) -> Result<i64, Error> {
    if n.unsigned_abs() > MAX_SAFE_SEQ.unsigned_abs() {
        return Err(Error::Invalid(Field::Seq, "is outside ±(2^53−1)"));
    }
    Ok(n)
}

/// The sample's ts: its device time, its slot on the reporting schedule, or the
/// receive time.
fn time(sample: &Sample, meta: &FrameMeta, schedule: Option<&Schedule>) -> Result<Micros, Error> {
    let out_of_range = || Error::Invalid(Field::Ts, TsError::YearOutOfRange.describe());
    let ts = if let Some(secs) = sample.device_time_s {
        if secs < MIN_DEVICE_TIME_S {
            return Err(Error::Invalid(
                Field::Ts,
                "is a device time before 2015-01-01: the device clock is not set",
            ));
        }
        secs.checked_mul(MICROS_PER_SEC).ok_or_else(out_of_range)?
    } else if let Some(periods_ago) = on_schedule(sample) {
        // `readings` refused the uplink before when the period is absent.
        let s = schedule.ok_or(Error::MissingReportingPeriod)?;
        s.shifted
            .and_then(|t| slot(t, s.period, periods_ago))
            .ok_or_else(out_of_range)?
    } else {
        meta.received_at
    };
    if !(MIN_MICROS..=MAX_MICROS).contains(&ts) {
        return Err(out_of_range());
    }
    Ok(ts)
}

/// `received_at` (a device's, less its phase) rounded to the nearest multiple of the
/// period since the epoch (ties: the later), minus `periods_ago` periods; `None` past
/// the range of `i64`.
fn slot(received_at: Micros, period_s: NonZeroU32, periods_ago: u8) -> Option<Micros> {
    let period = i64::from(period_s.get()).checked_mul(MICROS_PER_SEC)?;
    let past = received_at.rem_euclid(period);
    let below = received_at.checked_sub(past)?;
    let nearest = if past >= period - past {
        below.checked_add(period)?
    } else {
        below
    };
    nearest.checked_sub(period.checked_mul(i64::from(periods_ago))?)
}

#[cfg(test)]
mod tests {
    use super::super::decode;
    use super::super::test_kit::{config, decoded, hex, live, meta, vectors};
    use super::*;
    use crate::dedupe::reading::{validate, RawReading, Scalar};
    use crate::dedupe::timestamp::{isoformat, parse_rfc3339};

    const EM500: &str = include_str!("../../tests/vectors/devices/milesight-em500-udl.json");
    const EM310: &str = include_str!("../../tests/vectors/devices/milesight-em310-udl.json");
    const TEK766: &str = include_str!("../../tests/vectors/devices/tekelek-tek766.json");
    const DF703_HEARTBEAT: &str = "800001011107D000190000000000010081";

    const HOUR_S: u32 = 3600;

    fn at(rfc3339: &str) -> Micros {
        parse_rfc3339(rfc3339).unwrap()
    }

    fn of(samples: Vec<Sample>) -> Uplink {
        Uplink {
            samples,
            battery: None,
        }
    }

    #[test]
    fn a_config_refuses_a_depth_or_period_of_zero_and_numbers_out_of_their_ranges() {
        assert_eq!(
            DeviceConfig::new(None, 1500, 200, Some(600)),
            Ok(config(1500, 200, Some(600)))
        );
        let said = |r: Result<(), Error>| r.map_err(|e| (e.code(), e.to_string()));
        let made = |depth, period| DeviceConfig::new(None, depth, 0, period).map(|_| ());
        let refused = |why: &str| Err(("invalid_config", format!("invalid configuration: {why}")));
        assert_eq!(
            said(made(0, Some(0))),
            refused("bin_depth_mm must not be 0")
        );
        assert_eq!(
            said(made(1, Some(0))),
            refused("reporting_period_s must not be 0")
        );
        // Each range's ends are in it; one past either is not, the first named.
        assert_eq!(config(1, 0, Some(1)).check(), Ok(()));
        assert_eq!(config(100_000, 100_000, Some(604_800)).check(), Ok(()));
        assert_eq!(config(1, 0, None).check(), Ok(()));
        for (bad, why) in [
            (
                config(100_001, 100_001, None),
                "bin_depth_mm must be 1 ..= 100000, got 100001",
            ),
            (
                config(1000, 100_001, Some(604_801)),
                "offset_mm must be 0 ..= 100000, got 100001",
            ),
            (
                config(1000, 0, Some(604_801)),
                "reporting_period_s must be 1 ..= 604800, got 604801",
            ),
        ] {
            assert_eq!(said(bad.check()), refused(why));
        }
    }

    /// (seq, ts, fill) of every sample, which must all be readings.
    fn triples(got: &Readings) -> Vec<(i64, String, f64)> {
        got.each
            .iter()
            .map(|r| {
                let r = r.as_ref().unwrap();
                (r.seq, isoformat(r.ts), r.fill_pct)
            })
            .collect()
    }

    /// The EM500-UDL vector with two history records.
    fn history_uplink() -> Uplink {
        let vector = vectors(EM500).swap_remove(2);
        assert!(vector.expected["history"].is_array(), "{}", vector.from);
        decode(Codec::MilesightEm500Udl, vector.f_port, &vector.bytes).unwrap()
    }

    #[test]
    fn em500_history_keys_by_device_time_whatever_the_frame_counter() {
        let cfg = config(1500, 100, None);
        let uplink = history_uplink();
        let first = readings(
            &cfg,
            &uplink,
            &meta("2022-10-12T09:01:00Z", 12),
            DeviceState::default(),
        )
        .unwrap();
        let want = vec![
            (1_665_561_758, "2022-10-12T08:02:38+00:00".to_owned(), 24.4),
            (1_665_565_242, "2022-10-12T09:00:42+00:00".to_owned(), 24.5),
        ];
        assert_eq!(triples(&first), want);
        assert_eq!(first.counter_ref, None);
        // After a rejoin: frame counter 1, delivered a day later.
        let replay = readings(
            &cfg,
            &uplink,
            &meta("2022-10-13T11:00:00Z", 1),
            DeviceState {
                counter_ref: Some(3),
                schedule_phase_s: None,
            },
        )
        .unwrap();
        assert_eq!(triples(&replay), want);
        assert_eq!(replay.counter_ref, Some(3));
    }

    #[test]
    fn a_live_sample_is_keyed_by_the_frame_counter_and_the_receive_time() {
        let cfg = config(3000, 0, Some(HOUR_S));
        for (_, uplink) in decoded(Codec::MilesightEm310Udl, EM310, 3) {
            let got = readings(
                &cfg,
                &uplink,
                &meta("2026-07-16T09:00:05.25Z", 4711),
                DeviceState::default(),
            );
            let want = (4711, "2026-07-16T09:00:05.250000+00:00".to_owned(), 29.5);
            assert_eq!(triples(&got.unwrap()), vec![want]);
        }
        // The EM500's live sample beside its history: the same rule.
        let uplink = decode(Codec::MilesightEm500Udl, 85, &hex("01756403821E00")).unwrap();
        let got = readings(
            &cfg,
            &uplink,
            &meta("2026-07-16T09:00:00Z", 9),
            DeviceState::default(),
        )
        .unwrap();
        assert_eq!(
            triples(&got),
            vec![(9, "2026-07-16T09:00:00+00:00".to_owned(), 99.0)]
        );
    }

    #[test]
    fn fill_comes_from_the_bin_geometry() {
        let sample = |mm| live(Ok(mm));
        let uplink = of(vec![
            sample(200),
            sample(1700),
            sample(3200),
            sample(50),
            sample(5000),
        ]);
        let cfg = config(3000, 200, None);
        let got = readings(
            &cfg,
            &uplink,
            &meta("2026-07-16T09:00:00Z", 1),
            DeviceState::default(),
        )
        .unwrap();
        let fills: Vec<f64> = got
            .each
            .iter()
            .map(|r| r.as_ref().unwrap().fill_pct)
            .collect();
        assert_eq!(fills, vec![100.0, 50.0, 0.0, 100.0, 0.0]);
        for (s, fill) in uplink.samples.iter().zip(fills) {
            assert_eq!(fill, fill_pct(s.distance.unwrap(), cfg.bin_depth_mm, 200));
        }
    }

    #[test]
    fn a_sample_without_a_distance_is_no_reading_with_its_reason() {
        // A Milesight "no target" live sample and a history record with a sentinel.
        let uplink = decode(
            Codec::MilesightEm500Udl,
            85,
            &hex("20CE9E744663FDFF 0382FDFF 0382E803"),
        )
        .unwrap();
        let got = readings(
            &config(1500, 0, None),
            &uplink,
            &meta("2026-07-16T09:00:00Z", 2),
            DeviceState::default(),
        )
        .unwrap();
        assert_eq!(got.each.len(), 2);
        let e = got.each[0].as_ref().unwrap_err();
        assert_eq!((e.code(), e.field()), ("no_reading", "fill_pct"));
        assert_eq!(
            e.to_string(),
            "no level reading: Milesight distance 0xFFFD: no target"
        );
        assert_eq!(got.each[1].as_ref().unwrap().fill_pct, 33.3);
        // Never 0 % or 100 %, whatever the geometry.
        let empty = of(vec![live(Err(NoReading("empty record")))]);
        let e = readings(
            &config(1, 0, None),
            &empty,
            &meta("2026-07-16T09:00:00Z", 2),
            DeviceState::default(),
        )
        .unwrap()
        .each
        .swap_remove(0)
        .unwrap_err();
        assert_eq!(e, Error::NoReading("empty record"));
    }

    /// A DF703 heartbeat (the TTN vector) with another level and counter.
    fn df703(level_mm: u16, counter: u16) -> Uplink {
        let mut bytes = hex(DF703_HEARTBEAT);
        bytes[5..7].copy_from_slice(&level_mm.to_be_bytes());
        bytes[13..15].copy_from_slice(&counter.to_be_bytes());
        decode(Codec::DingtekDf703, 3, &bytes).unwrap()
    }

    #[test]
    fn df703_seq_is_its_counter_unwrapped_and_the_reference_only_grows() {
        let cfg = config(2000, 0, None);
        let m = meta("2026-07-16T09:00:00Z", 77);
        let step = |level, counter, reference| {
            let got = readings(
                &cfg,
                &df703(level, counter),
                &m,
                DeviceState {
                    counter_ref: reference,
                    schedule_phase_s: None,
                },
            )
            .unwrap();
            (got.each[0].as_ref().unwrap().seq, got.counter_ref)
        };
        // The vector itself: counter 1, the first counter seen.
        let got = readings(
            &cfg,
            &decode(Codec::DingtekDf703, 3, &hex(DF703_HEARTBEAT)).unwrap(),
            &m,
            DeviceState::default(),
        )
        .unwrap();
        assert_eq!(
            triples(&got),
            vec![(1, "2026-07-16T09:00:00+00:00".to_owned(), 0.0)]
        );
        assert_eq!(got.counter_ref, Some(1));
        // The wrap: 65 535 → 0 continues at 65 536, then 65 537.
        assert_eq!(step(1000, 65_535, Some(65_534)), (65_535, Some(65_535)));
        assert_eq!(step(1000, 0, Some(65_535)), (65_536, Some(65_536)));
        assert_eq!(step(1000, 1, Some(65_536)), (65_537, Some(65_537)));
        // An old frame after the reference moved on keeps its seq; the reference stays.
        assert_eq!(step(1000, 65_530, Some(65_540)), (65_530, Some(65_540)));
        // A frame replayed verbatim keys the same.
        assert_eq!(step(1000, 4, Some(65_540)), (65_540, Some(65_540)));
        // Across a sequence of uplinks the reference never goes down.
        let mut reference = None;
        let mut seen = Vec::new();
        for counter in [65_500, 65_520, 65_535, 3, 65_510, 20, 9] {
            let (seq, next) = step(1000, counter, reference);
            assert!(next >= reference && next >= Some(seq));
            reference = next;
            seen.push(seq);
        }
        assert_eq!(
            seen,
            vec![65_500, 65_520, 65_535, 65_539, 65_510, 65_556, 65_545]
        );
        assert_eq!(reference, Some(65_556));
        // A level-0 frame is no_reading, but its counter still moves the reference.
        let got = readings(
            &cfg,
            &df703(0, 2),
            &m,
            DeviceState {
                counter_ref: Some(65_536),
                schedule_phase_s: None,
            },
        )
        .unwrap();
        assert_eq!(got.each[0].as_ref().unwrap_err().code(), "no_reading");
        assert_eq!(got.counter_ref, Some(65_538));
    }

    /// The unwrapped counter is what the sequence window sees: a restart after 30 000 is
    /// a reset of it; the same counter after 65 000, near the top of a wrap, a forward
    /// jump of 539 (module docs).
    #[test]
    fn an_unwrapped_counter_restarts_the_window_or_moves_it_on() {
        use crate::dedupe::window::{Observation, SeqWindow};
        let mut w = SeqWindow::new();
        w.observe(30_000, 0.0).unwrap();
        let to = unwrap_counter(Some(30_000), 3);
        assert_eq!(
            w.observe(to, 0.0).unwrap(),
            Observation::Reset {
                from: 30_000,
                to: 3
            }
        );
        let mut w = SeqWindow::new();
        w.observe(65_000, 0.0).unwrap();
        assert_eq!(
            w.observe(unwrap_counter(Some(65_000), 3), 0.0).unwrap(),
            Observation::New
        );
        assert_eq!((w.gaps()[0].first, w.gaps()[0].last), (65_001, 65_538));
    }

    #[test]
    fn unwrap_counter_takes_the_nearest_value_and_the_later_on_a_tie() {
        assert_eq!(unwrap_counter(None, 0), 0);
        assert_eq!(unwrap_counter(None, 65_535), 65_535);
        assert_eq!(unwrap_counter(Some(0), 32_767), 32_767);
        assert_eq!(unwrap_counter(Some(0), 32_768), 32_768);
        assert_eq!(unwrap_counter(Some(0), 32_769), -32_767);
        assert_eq!(unwrap_counter(Some(32_768), 0), 65_536);
        assert_eq!(unwrap_counter(Some(5), 65_530), -6);
        assert_eq!(unwrap_counter(Some(-1), 0), 0);
        assert_eq!(unwrap_counter(Some(10 * 65_536 + 7), 7), 10 * 65_536 + 7);
        // At the ends of i64 the nearest value that exists.
        let top = unwrap_counter(Some(i64::MAX), 0);
        assert_eq!(top.rem_euclid(COUNTER_SPAN), 0);
        assert!(i64::MAX - top < COUNTER_SPAN);
        let bottom = unwrap_counter(Some(i64::MIN), 65_535);
        assert_eq!(bottom.rem_euclid(COUNTER_SPAN), 65_535);
        assert!(bottom - i64::MIN < COUNTER_SPAN);
        for reference in [
            i64::MIN,
            i64::MIN + 1,
            -70_000,
            0,
            1 << 40,
            i64::MAX - 1,
            i64::MAX,
        ] {
            for counter in [0, 1, 32_767, 32_768, 65_535] {
                let got = unwrap_counter(Some(reference), counter);
                assert_eq!(got.rem_euclid(COUNTER_SPAN), i64::from(counter));
            }
        }
    }

    #[test]
    fn a_counter_past_the_safe_seq_range_is_invalid_seq_and_moves_nothing() {
        let cfg = config(2000, 0, None);
        let m = meta("2026-07-16T09:00:00Z", 1);
        let got = readings(
            &cfg,
            &df703(1000, 0),
            &m,
            DeviceState {
                counter_ref: Some(MAX_SAFE_SEQ),
                schedule_phase_s: None,
            },
        )
        .unwrap();
        assert_eq!(got.each[0].as_ref().unwrap_err().code(), "invalid_seq");
        assert_eq!(got.counter_ref, Some(MAX_SAFE_SEQ));
        let wide = of(vec![Sample {
            app_counter: Some(65_536),
            ..live(Ok(1000))
        }]);
        let got = readings(
            &cfg,
            &wide,
            &m,
            DeviceState {
                counter_ref: Some(4),
                schedule_phase_s: None,
            },
        )
        .unwrap();
        let e = got.each[0].as_ref().unwrap_err();
        assert_eq!(e.code(), "invalid_seq");
        assert_eq!(
            e.to_string(),
            "seq cannot come from an application counter above 65 535"
        );
        assert_eq!(got.counter_ref, Some(4));
    }

    #[test]
    fn a_frame_counter_past_the_safe_seq_range_is_invalid_seq() {
        let uplink = of(vec![live(Ok(100))]);
        let cfg = config(1000, 0, None);
        for (f_cnt, code) in [
            (MAX_SAFE_SEQ, None),
            (-MAX_SAFE_SEQ, None),
            (MAX_SAFE_SEQ + 1, Some("invalid_seq")),
            (i64::MIN, Some("invalid_seq")),
        ] {
            let m = FrameMeta {
                received_at: 0,
                f_cnt,
                frame: None,
            };
            let got = readings(&cfg, &uplink, &m, DeviceState::default())
                .unwrap()
                .each
                .swap_remove(0);
            assert_eq!(got.as_ref().err().map(Error::code), code, "{f_cnt}");
        }
    }

    #[test]
    fn device_times_before_2015_or_past_9999_are_invalid_ts() {
        let cfg = config(1000, 0, None);
        let with_time = |t| {
            of(vec![Sample {
                device_time_s: Some(t),
                ..live(Ok(100))
            }])
        };
        let m = meta("2026-07-16T09:00:00Z", 1);
        let one = |t| {
            readings(&cfg, &with_time(t), &m, DeviceState::default())
                .unwrap()
                .each
                .swap_remove(0)
        };
        assert_eq!(
            one(MIN_DEVICE_TIME_S).unwrap().ts,
            at("2015-01-01T00:00:00Z")
        );
        let e = one(MIN_DEVICE_TIME_S - 1).unwrap_err();
        assert_eq!((e.code(), e.field()), ("invalid_ts", "ts"));
        assert!(e.to_string().contains("clock is not set"), "{e}");
        // A real-time clock that started at its epoch after a power loss: before, a
        // record of 2000-01-01T00:10Z was a reading, and restarted the sequence window.
        for t in [946_684_800, 946_685_400, 946_684_800 + 365 * 86_400] {
            let e = one(t).unwrap_err();
            assert_eq!(e.code(), "invalid_ts", "{t}");
            assert!(e.to_string().contains("clock is not set"), "{e}");
        }
        assert_eq!(one(0).unwrap_err().code(), "invalid_ts");
        assert_eq!(one(i64::MIN).unwrap_err().code(), "invalid_ts");
        let last = MAX_MICROS.div_euclid(MICROS_PER_SEC);
        assert_eq!(one(last).unwrap().seq, last);
        for t in [last + 1, i64::MAX / MICROS_PER_SEC + 1, i64::MAX] {
            let e = one(t).unwrap_err();
            assert_eq!(e.to_string(), "ts falls outside years 0001-9999 in UTC");
        }
        // The receive time out of range: the same code.
        let late = FrameMeta {
            received_at: MAX_MICROS + 1,
            f_cnt: 1,
            frame: None,
        };
        let live_one = of(vec![live(Ok(100))]);
        let got = readings(&cfg, &live_one, &late, DeviceState::default())
            .unwrap()
            .each
            .swap_remove(0);
        assert_eq!(got.unwrap_err().code(), "invalid_ts");
    }

    fn tek766(hex_text: &str) -> Uplink {
        decode(Codec::TekelekTek766, 16, &hex(hex_text)).unwrap()
    }

    #[test]
    fn tekelek_readings_repeated_by_the_next_uplink_key_the_same() {
        let cfg = config(3000, 200, Some(6 * HOUR_S));
        let (vector, first) = decoded(Codec::TekelekTek766, TEK766, 3).swap_remove(0);
        assert_eq!(
            vector.bytes,
            hex("1000000001121B7701131BAA01121BA90114F274")
        );
        // Received 3 min 12 s after its slot (06:00).
        let got = readings(
            &cfg,
            &first,
            &meta("2026-07-16T06:03:12Z", 40),
            DeviceState::default(),
        )
        .unwrap();
        let before = triples(&got);
        let slot = |t: &str, ullage_mm: u32| {
            let ts = at(t);
            let fill = fill_pct(ullage_mm, cfg.bin_depth_mm, 200);
            (ts / 1_000_000, isoformat(ts), fill)
        };
        assert_eq!(
            before,
            vec![
                slot("2026-07-16T06:00:00Z", 2740),
                slot("2026-07-16T00:00:00Z", 2750),
                slot("2026-07-15T18:00:00Z", 2740),
                slot("2026-07-15T12:00:00Z", 2760),
            ]
        );
        assert_eq!(before[0].2, 15.3);
        // One period later, received 2 min 30 s *before* its slot (12:00), another
        // frame counter; a new current reading, the previous three shifted by one.
        let next = tek766("1000000001101B7701121B7701131BAA01121BA9");
        let got = readings(
            &cfg,
            &next,
            &meta("2026-07-16T11:57:30Z", 41),
            DeviceState::default(),
        )
        .unwrap();
        let after = triples(&got);
        assert_eq!(after[0], slot("2026-07-16T12:00:00Z", 2720));
        assert_eq!(after[1..], before[..3]);
        // Jitter up to just under half a period either side keeps the slots.
        for received in ["2026-07-16T09:00:00Z", "2026-07-16T14:59:59.999999Z"] {
            let got = readings(&cfg, &next, &meta(received, 41), DeviceState::default()).unwrap();
            assert_eq!(triples(&got), after, "{received}");
        }
        // The status frame's reading is off the schedule: receive time and frame counter.
        let (_, status) = decoded(Codec::TekelekTek766, TEK766, 3).swap_remove(2);
        let got = readings(
            &cfg,
            &status,
            &meta("2026-07-16T07:31:00Z", 42),
            DeviceState::default(),
        )
        .unwrap();
        assert_eq!(
            triples(&got),
            vec![(42, "2026-07-16T07:31:00+00:00".to_owned(), 98.7)]
        );
    }

    #[test]
    fn tekelek_repeats_key_the_same_when_the_schedule_is_off_the_grid() {
        // Period 600 s; uplink B 604 s after A; B's last three readings are A's first three.
        let cfg = config(3000, 0, Some(600));
        let a = tek766("1000000001121B7701131BAA01121BA90114F274");
        let b = tek766("1000000001101B7701121B7701131BAA01121BA9");
        let keyed = |uplink: &Uplink, received: &str, phase: Option<i64>| {
            let got = readings(
                &cfg,
                uplink,
                &meta(received, 40),
                DeviceState {
                    counter_ref: None,
                    schedule_phase_s: phase,
                },
            )
            .unwrap();
            let ts: Vec<String> = got
                .each
                .iter()
                .map(|r| isoformat(r.as_ref().unwrap().ts))
                .collect();
            (ts, got.schedule_phase_s)
        };
        // On the grid: 1 new reading and 3 repeats, as before; no phase to store.
        let (first, phase) = keyed(&a, "2026-07-16T09:00:30Z", None);
        assert_eq!(phase, None);
        let (second, _) = keyed(&b, "2026-07-16T09:10:30Z", phase);
        assert_eq!(second[1..], first[..3]);
        // Half a period off: before, B's slot was 09:20 and its repeats 4 new readings.
        let (first, phase) = keyed(&a, "2026-07-16T09:04:58Z", None);
        assert_eq!(first[0], "2026-07-16T09:00:00+00:00");
        assert_eq!(phase, Some(298));
        let (second, kept) = keyed(&b, "2026-07-16T09:15:02Z", phase);
        assert_eq!(second[0], "2026-07-16T09:10:00+00:00");
        assert_eq!(second[1..], first[..3]);
        assert_eq!(kept, Some(298), "4 s of jitter does not move the phase");
        // Without the phase, the same uplink flips to the next slot (what happened before).
        assert_eq!(
            keyed(&b, "2026-07-16T09:15:02Z", None).0[0],
            "2026-07-16T09:20:00+00:00"
        );
        // Jitter either way around the phase keeps the slot; an old frame delivered late
        // finds its own slot by the same phase.
        for (received, slot) in [
            ("2026-07-16T09:14:10Z", "09:10"),
            ("2026-07-16T09:19:40Z", "09:10"),
            ("2026-07-16T08:55:01Z", "08:50"),
        ] {
            assert_eq!(
                keyed(&b, received, Some(298)).0[0],
                format!("2026-07-16T{slot}:00+00:00"),
                "{received}"
            );
        }
    }

    #[test]
    fn the_schedule_phase_follows_drift_and_wraps_past_five_eighths_of_a_period() {
        let cfg = config(3000, 0, Some(600));
        let a = tek766("1000000001121B7701131BAA01121BA90114F274");
        let phase_after = |received: &str, phase: Option<i64>| {
            readings(
                &cfg,
                &a,
                &meta(received, 40),
                DeviceState {
                    counter_ref: None,
                    schedule_phase_s: phase,
                },
            )
            .unwrap()
            .schedule_phase_s
        };
        // Within an eighth of a period (75 s) of the phase: kept, nothing to write.
        assert_eq!(phase_after("2026-07-16T09:06:13Z", Some(298)), Some(298));
        // Drifted further: the phase follows.
        assert_eq!(phase_after("2026-07-16T09:06:14Z", Some(298)), Some(374));
        // Past five eighths (375 s): wrapped by a period, the ts within 225 s of receipt.
        assert_eq!(
            phase_after("2026-07-16T09:06:20Z", Some(320)),
            Some(380 - 600)
        );
        // A phase near 0 that does not move is not written (None stays None).
        assert_eq!(phase_after("2026-07-16T09:01:00Z", None), None);
        assert_eq!(phase_after("2026-07-16T09:01:16Z", None), Some(76));
        // A device's phase of the far ends of i64 is no slot (invalid_ts), never a panic.
        let got = readings(
            &cfg,
            &a,
            &meta("2026-07-16T09:00:00Z", 40),
            DeviceState {
                counter_ref: None,
                schedule_phase_s: Some(i64::MAX),
            },
        )
        .unwrap();
        assert!(got
            .each
            .iter()
            .all(|r| r.as_ref().unwrap_err().code() == "invalid_ts"));
    }

    #[test]
    fn tekelek_rounds_to_the_nearest_slot_and_a_tie_to_the_later() {
        let period = NonZeroU32::new(600).unwrap();
        let s = |t| slot(t, period, 0).unwrap();
        let p = 600 * MICROS_PER_SEC;
        assert_eq!(s(10 * p), 10 * p);
        assert_eq!(s(10 * p + p / 2 - 1), 10 * p);
        assert_eq!(s(10 * p + p / 2), 11 * p);
        assert_eq!(s(10 * p - p / 2), 10 * p);
        assert_eq!(s(10 * p - p / 2 - 1), 9 * p);
        // Before the epoch the same grid.
        assert_eq!(s(-p / 2 - 1), -p);
        assert_eq!(s(-p / 2), 0);
        assert_eq!(slot(10 * p, period, 3), Some(7 * p));
        // Past the ends of i64: no slot (invalid_ts), never a panic.
        let second = NonZeroU32::new(1).unwrap();
        assert_eq!(slot(i64::MAX, second, 0), None);
        assert_eq!(slot(i64::MIN, second, 0), None);
        assert_eq!(slot(i64::MIN + 224_192, second, 1), None);
        let longest = NonZeroU32::new(u32::MAX).unwrap();
        for t in [i64::MIN, MIN_MICROS, 0, MAX_MICROS, i64::MAX] {
            for ago in [0, 1, 255] {
                let _ = slot(t, longest, ago);
            }
        }
    }

    #[test]
    fn tekelek_without_a_reporting_period_is_missing_reporting_period() {
        let (_, first) = decoded(Codec::TekelekTek766, TEK766, 3).swap_remove(0);
        let e = readings(
            &config(3000, 0, None),
            &first,
            &meta("2026-07-16T06:00:00Z", 1),
            DeviceState::default(),
        )
        .unwrap_err();
        assert_eq!(
            (e.code(), e.field()),
            ("missing_reporting_period", "reading")
        );
        assert!(e.to_string().contains("reporting_period_s"), "{e}");
        // Its status frame needs no period.
        let (_, status) = decoded(Codec::TekelekTek766, TEK766, 3).swap_remove(2);
        let got = readings(
            &config(3000, 0, None),
            &status,
            &meta("2026-07-16T06:00:00Z", 1),
            DeviceState::default(),
        );
        assert!(got.unwrap().each[0].is_ok());
        // A sample with a device time is dated by it, whatever its periods_ago.
        let dated = of(vec![Sample {
            device_time_s: Some(1_700_000_000),
            periods_ago: Some(2),
            ..live(Ok(100))
        }]);
        let got = readings(
            &config(3000, 0, None),
            &dated,
            &meta("2026-07-16T06:00:00Z", 1),
            DeviceState::default(),
        );
        assert_eq!(got.unwrap().each[0].as_ref().unwrap().seq, 1_700_000_000);
    }

    /// Picks one of a few interesting values or a random one.
    fn pick_i64(rng: &mut fastrand::Rng, around: &[i64]) -> i64 {
        match rng.u8(0..8) {
            0 => rng.i64(..),
            1 => around[rng.usize(..around.len())],
            _ => {
                let base = around[rng.usize(..around.len())];
                base.saturating_add(rng.i64(-100_000..=100_000))
            }
        }
    }

    #[test]
    fn random_configs_samples_and_frames_never_panic_and_give_valid_readings() {
        let mut rng = fastrand::Rng::with_seed(0x5eed_0011);
        let times = [
            0,
            MIN_DEVICE_TIME_S,
            1_700_000_000,
            MAX_MICROS / MICROS_PER_SEC,
            MIN_MICROS / MICROS_PER_SEC,
            i64::MAX,
            i64::MIN,
        ];
        let micros = [
            0,
            1_700_000_000_000_000,
            MAX_MICROS,
            MIN_MICROS,
            i64::MAX,
            i64::MIN,
        ];
        let counters = [0, 65_535, MAX_SAFE_SEQ, -MAX_SAFE_SEQ, i64::MAX, i64::MIN];
        let (mut ok, mut rejected) = (0, 0);
        for round in 0..20_000 {
            let cfg = DeviceConfig {
                codec: None,
                bin_depth_mm: NonZeroU32::new(rng.u32(1..)).unwrap(),
                offset_mm: rng.u32(..),
                reporting_period_s: NonZeroU32::new(rng.u32(..)).filter(|_| rng.bool()),
                application_port: None,
            };
            let samples = (0..rng.usize(0..6))
                .map(|_| Sample {
                    distance: if rng.u8(0..5) == 0 {
                        Err(NoReading("sentinel"))
                    } else {
                        Ok(rng.u32(..))
                    },
                    device_time_s: rng.bool().then(|| pick_i64(&mut rng, &times)),
                    app_counter: rng.bool().then(|| {
                        if rng.u8(0..8) == 0 {
                            rng.u32(..)
                        } else {
                            rng.u32(..=65_535)
                        }
                    }),
                    periods_ago: rng.bool().then(|| rng.u8(..)),
                })
                .collect();
            let uplink = Uplink {
                samples,
                battery: None,
            };
            let m = FrameMeta {
                received_at: pick_i64(&mut rng, &micros),
                f_cnt: pick_i64(&mut rng, &counters),
                frame: None,
            };
            let reference = rng.bool().then(|| pick_i64(&mut rng, &counters));
            let got = readings(
                &cfg,
                &uplink,
                &m,
                DeviceState {
                    counter_ref: reference,
                    schedule_phase_s: None,
                },
            );
            assert_eq!(
                got,
                readings(
                    &cfg,
                    &uplink,
                    &m,
                    DeviceState {
                        counter_ref: reference,
                        schedule_phase_s: None
                    }
                ),
                "deterministic"
            );
            let got = match got {
                Ok(got) => got,
                Err(e) => {
                    assert_eq!(e, Error::MissingReportingPeriod);
                    assert!(cfg.reporting_period_s.is_none());
                    continue;
                }
            };
            assert_eq!(got.each.len(), uplink.samples.len());
            assert!(got.counter_ref >= reference, "{round}");
            for (sample, r) in uplink.samples.iter().zip(&got.each) {
                match r {
                    Ok(r) => {
                        assert!(sample.distance.is_ok());
                        assert!(r.seq.unsigned_abs() <= MAX_SAFE_SEQ.unsigned_abs());
                        assert!((MIN_MICROS..=MAX_MICROS).contains(&r.ts));
                        assert!((0.0..=100.0).contains(&r.fill_pct));
                        // The core's own validation takes it unchanged.
                        let raw = RawReading {
                            is_object: true,
                            repeated: None,
                            device_id: Some(Scalar::Str("bin-1".into())),
                            seq: Some(Scalar::Int(r.seq)),
                            ts: Some(Scalar::Str(isoformat(r.ts).into())),
                            fill_pct: Some(Scalar::Float(r.fill_pct)),
                        };
                        let v = validate(raw).unwrap();
                        assert_eq!((v.seq, v.ts, v.fill_pct), (r.seq, r.ts, r.fill_pct));
                        ok += 1;
                    }
                    Err(e) => {
                        assert!(
                            matches!(e.code(), "no_reading" | "invalid_ts" | "invalid_seq"),
                            "{e:?}"
                        );
                        assert!(!e.to_string().is_empty());
                        rejected += 1;
                    }
                }
            }
        }
        // Both sides drawn often enough to mean something (5 712 and 28 629 with this seed).
        assert!(
            ok > 4_000 && rejected > 4_000,
            "{ok} readings, {rejected} rejected"
        );
    }
}
