//! The deduplicator: validates a burst, keys each reading, asks the seen-set, and
//! accounts for every reading in exactly one bucket, written to one audit record.
//!
//! Two ways in:
//! * [`Deduplicator::process_burst`] / [`Deduplicator::process_json`] take readings,
//!   validate and key them here (the library's API, Node and browsers);
//! * [`Deduplicator::admit_keys`] takes keys already derived elsewhere (the worker
//!   keys each reading once in its stateless tier) and only admits them, and
//!   [`Deduplicator::from_keys`] rebuilds a seen-set from stored keys; neither
//!   validates a reading or computes a SHA-256.
//!
//! `received = unique + duplicates_suppressed + pending + rejected` holds for every
//! burst. `pending` is only non-zero while provisional admissions are open (library
//! only), so outside that use it is the seed's `received = unique +
//! duplicates_suppressed` plus the readings rejected at the boundary.

use super::burst::read_burst;
use super::error::{Error, Rejection};
use super::key::{content_digest, format_key, parse_key};
use super::reading::{validate, RawBurst, RawReading, Reading};
use super::seen::{fingerprint_under, Admission, Config, SeenSet, Stats, MAX_TIME_MS};
use super::timestamp::{isoformat, IsoBuf};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize};

/// A reading admitted as new, with its idempotency key and its index in the burst.
/// Serialises flat: `{index, key, device_id, seq, ts, fill_pct}`.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct Admitted<'a> {
    pub index: usize,
    pub key: String,
    // For the TypeScript declaration only (`extends Reading`); the hand-written
    // `Serialize` below writes the reading's members flat.
    #[cfg_attr(feature = "typescript", serde(flatten))]
    pub reading: Reading<'a>,
}

/// By hand rather than `#[serde(flatten)]`, which goes through a map serialiser.
impl Serialize for Admitted<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Admitted", 6)?;
        st.serialize_field("index", &self.index)?;
        st.serialize_field("key", &self.key)?;
        self.reading.serialize_fields(&mut st)?;
        st.end()
    }
}

/// The counts of one burst, as written to the audit line:
/// `received = unique + duplicates_suppressed + pending + rejected + not_stored +
/// parked`. `pending` (provisional admissions, library only), `not_stored` (a burst
/// whose rows could not be written) and `parked` are written only when not zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
#[serde(deny_unknown_fields)]
pub struct AuditCounts {
    pub received: usize,
    pub unique: usize,
    pub duplicates_suppressed: usize,
    /// Of `duplicates_suppressed`, the readings the worker recognised as a reading
    /// already stored under another key: a sensor's datalog record (device time) of a
    /// measurement first sent live (receive time). Never more than
    /// `duplicates_suppressed`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cross_path_duplicates: usize,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pending: usize,
    pub rejected: usize,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_stored: usize,
    /// Readings of an uplink the worker kept undecoded because its device has no
    /// usable configuration (`device_not_configured`): neither admitted nor
    /// rejected yet. When the device is configured they are decoded and counted
    /// again, as received, in the line of that burst.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub parked: usize,
    pub seq_reuses: usize,
    /// Keys pushed out by the cap during this burst, before their TTL ran out.
    pub evicted_before_ttl: u64,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl AuditCounts {
    /// Whether every reading is in exactly one bucket (and the cross-path duplicates
    /// among the duplicates). A sum that overflows does not reconcile (it would wrap
    /// to a small number on wasm32).
    pub fn reconciles(&self) -> bool {
        self.cross_path_duplicates <= self.duplicates_suppressed
            && [
                self.duplicates_suppressed,
                self.pending,
                self.rejected,
                self.not_stored,
                self.parked,
            ]
            .into_iter()
            .try_fold(self.unique, usize::checked_add)
                == Some(self.received)
    }
}

/// One audit record: `{"logged_at","level","event","payload"}`, one per burst.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct Audit {
    pub logged_at: String,
    pub level: &'static str,
    pub event: &'static str,
    pub payload: AuditCounts,
}

/// Where a burst came from and what went wrong, appended to its audit line by
/// [`Audit::line`]. Absent members are left out of the line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
#[serde(deny_unknown_fields)]
pub struct AuditContext {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The audit events: a burst decided (`INFO`) and a burst whose admitted readings
/// could not be stored (`ERROR`; they are in `not_stored` and the sender retries).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
#[serde(rename_all = "snake_case")]
pub enum AuditEvent {
    BurstDeduplicated,
    BurstNotStored,
}

impl Audit {
    /// The record of one burst at `now_ms`.
    ///
    /// # Errors
    /// [`Error::InvalidTime`] for a bad `now_ms`; [`Error::InvalidBurst`] when the
    /// counts do not reconcile.
    pub fn new(event: AuditEvent, payload: AuditCounts, now_ms: f64) -> Result<Audit, Error> {
        let now = check_time(now_ms)?;
        if !payload.reconciles() {
            return Err(Error::InvalidBurst(format!(
                "audit counts do not reconcile: {payload:?}"
            )));
        }
        Ok(Audit::at(event, payload, now))
    }

    /// The record at `now` (whole ms, checked), of counts known to reconcile.
    fn at(event: AuditEvent, payload: AuditCounts, now: i64) -> Audit {
        let (level, event) = match event {
            AuditEvent::BurstDeduplicated => ("INFO", "burst_deduplicated"),
            AuditEvent::BurstNotStored => ("ERROR", "burst_not_stored"),
        };
        Audit {
            logged_at: isoformat(now * 1000),
            level,
            event,
            payload,
        }
    }

    /// The one-line JSON text of this record with `context` appended:
    /// `{"logged_at","level","event","payload","device_id","route","burst_id","error"}`.
    pub fn line(&self, context: &AuditContext) -> String {
        #[derive(Serialize)]
        struct Line<'a> {
            #[serde(flatten)]
            audit: &'a Audit,
            #[serde(flatten)]
            context: &'a AuditContext,
        }
        // Plain structs of strings and numbers always serialise.
        serde_json::to_string(&Line {
            audit: self,
            context,
        })
        .unwrap_or_default()
    }
}

/// What [`Deduplicator::admit_keys`] decided for one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Verdict {
    /// New, now remembered.
    Admitted = 0,
    /// New, but its device and seq were held with other content (a counter reset).
    AdmittedSeqReuse = 1,
    /// Held already: first write wins, this copy is suppressed.
    Duplicate = 2,
    /// Held provisionally by another call's open ticket (library use only): neither
    /// admitted nor a duplicate, since those rows may yet fail to store; retry it.
    Pending = 3,
}

/// The outcome of [`Deduplicator::admit_keys`]: a verdict per key, in order, and
/// the burst's audit record.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyAdmission {
    pub verdicts: Vec<Verdict>,
    pub audit: Audit,
}

/// Everything decided about one burst.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct BurstOutcome<'a> {
    /// Admitted readings in arrival order, normalised.
    pub unique: Vec<Admitted<'a>>,
    pub duplicates_suppressed: usize,
    /// Indices of the suppressed duplicates.
    pub duplicates: Vec<usize>,
    /// Indices of readings whose key an earlier burst holds provisionally.
    pub pending: Vec<usize>,
    pub rejected: Vec<Rejection>,
    pub seq_reuses: usize,
    /// The ticket to `confirm` or `release` a provisional admission.
    pub ticket: Option<u32>,
    pub audit: Audit,
}

impl BurstOutcome<'_> {
    /// The outcome as JSON text: byte for byte `serde_json::to_string(self)`, but the
    /// admitted readings (the bulk path's per-reading output) are written directly
    /// instead of through serde's per-field machinery.
    ///
    /// That takes 6.2–6.5 µs per 100-reading burst against 10.4–10.6 µs for
    /// `serde_json::to_string` (0.9–1.0 against 1.5 µs for 10 readings, 0.39 against
    /// 0.47–0.49 µs for one), native (benches/handwritten.rs, 2026-11-30; docs/benchmarks.md).
    pub fn to_json(&self) -> String {
        let mut out = Vec::with_capacity(256 + self.unique.len() * 160);
        out.extend_from_slice(b"{\"unique\":[");
        for (i, a) in self.unique.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"index\":");
            out.extend_from_slice(itoa::Buffer::new().format(a.index).as_bytes());
            out.extend_from_slice(b",\"key\":");
            push_json_str(&mut out, &a.key);
            out.extend_from_slice(b",\"device_id\":");
            push_json_str(&mut out, &a.reading.device_id);
            out.extend_from_slice(b",\"seq\":");
            out.extend_from_slice(itoa::Buffer::new().format(a.reading.seq).as_bytes());
            out.extend_from_slice(b",\"ts\":\"");
            out.extend_from_slice(IsoBuf::new(a.reading.ts).as_str().as_bytes());
            out.extend_from_slice(b"\",\"fill_pct\":");
            let x = a.reading.fill_pct;
            if x.is_finite() {
                out.extend_from_slice(zmij::Buffer::new().format_finite(x).as_bytes());
            } else {
                out.extend_from_slice(b"null");
            }
            out.push(b'}');
        }
        out.extend_from_slice(b"],\"duplicates_suppressed\":");
        out.extend_from_slice(
            itoa::Buffer::new()
                .format(self.duplicates_suppressed)
                .as_bytes(),
        );
        // The rest is per burst, not per reading: serde_json writes it. Writing these
        // plain structs and numbers into a Vec cannot fail.
        let mut member = |name: &str, write: &dyn Fn(&mut Vec<u8>) -> serde_json::Result<()>| {
            out.extend_from_slice(b",\"");
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"\":");
            let _ = write(&mut out);
        };
        member("duplicates", &|o| {
            serde_json::to_writer(o, &self.duplicates)
        });
        member("pending", &|o| serde_json::to_writer(o, &self.pending));
        member("rejected", &|o| serde_json::to_writer(o, &self.rejected));
        member("seq_reuses", &|o| {
            serde_json::to_writer(o, &self.seq_reuses)
        });
        member("ticket", &|o| serde_json::to_writer(o, &self.ticket));
        member("audit", &|o| serde_json::to_writer(o, &self.audit));
        out.push(b'}');
        // Only UTF-8 was written: JSON punctuation, digits and serde_json's output.
        String::from_utf8(out).unwrap_or_default()
    }
}

/// Appends `s` as a JSON string literal, escaped by serde_json itself.
fn push_json_str(out: &mut Vec<u8>, s: &str) {
    // Writing into a Vec cannot fail.
    let _ = serde_json::to_writer(out, s);
}

/// A seen-set with the burst logic around it.
#[derive(Debug, Clone)]
pub struct Deduplicator {
    seen: SeenSet,
    scratch: String,
}

impl Default for Deduplicator {
    fn default() -> Self {
        Deduplicator::new(Config::default())
    }
}

impl Deduplicator {
    pub fn new(config: Config) -> Deduplicator {
        Deduplicator::from_seen(SeenSet::new(config))
    }

    pub fn from_seen(seen: SeenSet) -> Deduplicator {
        Deduplicator {
            seen,
            // Sized on first use: the worker's path (admit_keys) never hashes content.
            scratch: String::new(),
        }
    }

    pub fn seen(&self) -> &SeenSet {
        &self.seen
    }

    pub fn stats(&self) -> Stats {
        self.seen.stats()
    }

    /// Parses a JSON burst (an array, or `{"readings": [...]}`) and processes it.
    ///
    /// # Errors
    /// [`Error::InvalidJson`] / [`Error::InvalidBurst`] when the body cannot be read as a
    /// burst at all, [`Error::InvalidTime`] for a bad `now_ms`. Bad readings are not
    /// errors: they come back in `rejected`.
    pub fn process_json<'a>(
        &mut self,
        json: &'a [u8],
        now_ms: f64,
        provisional: bool,
    ) -> Result<BurstOutcome<'a>, Error> {
        // The body rules of every route (src/dedupe/json.rs): a member given twice,
        // numbers out of range, lone surrogates.
        let burst: RawBurst<'a> = read_burst(json)?;
        self.process_burst(burst.0, now_ms, provisional)
    }

    /// Processes one burst at `now_ms` (ms since the Unix epoch, the caller's clock).
    ///
    /// Every reading ends in exactly one of `unique`, `duplicates`, `pending`,
    /// `rejected`. With `provisional`, admitted keys stay pending under the returned
    /// ticket until [`Self::confirm`] or [`Self::release`].
    ///
    /// # Errors
    /// [`Error::InvalidTime`] for a `now_ms` that is not finite or outside
    /// `0 ..= 8.64e15`; [`Error::NoEntropy`] if the hash cannot be seeded. Both are
    /// found before anything changes: a call that fails admits nothing.
    ///
    /// ```
    /// use reconnect_dedupe::{Deduplicator, RawBurst};
    /// let body = br#"[
    ///   {"device_id":"bin-A17","seq":41,"ts":"2026-07-16T09:00:00Z","fill_pct":62.5},
    ///   {"device_id":"bin-A17","seq":41,"ts":"2026-07-16T09:00:00Z","fill_pct":62.5},
    ///   {"device_id":"bin-A17","seq":42,"ts":"2026-07-16T09:00:00Z","fill_pct":71.0},
    ///   {"device_id":"bin-B04","seq":8,"ts":"2026-07-16T09:00:05Z","fill_pct":15.0}
    /// ]"#;
    /// let mut dedup = Deduplicator::default();
    /// let out = dedup.process_json(body, 1_784_192_411_204.0, false).unwrap();
    /// assert_eq!((out.unique.len(), out.duplicates_suppressed), (3, 1));
    /// ```
    pub fn process_burst<'a>(
        &mut self,
        readings: Vec<RawReading<'a>>,
        now_ms: f64,
        provisional: bool,
    ) -> Result<BurstOutcome<'a>, Error> {
        self.process_readings(readings.into_iter().map(validate), now_ms, provisional)
    }

    /// [`Self::process_burst`] over readings the caller has already validated, each
    /// `Ok` or the `Err` to reject it with (its index in the burst is its position):
    /// the JavaScript API refuses strings that lost a lone surrogate this way.
    ///
    /// # Errors
    /// As [`Self::process_burst`].
    pub fn process_readings<'a, I>(
        &mut self,
        readings: I,
        now_ms: f64,
        provisional: bool,
    ) -> Result<BurstOutcome<'a>, Error>
    where
        I: ExactSizeIterator<Item = Result<Reading<'a>, Error>>,
    {
        // Everything that can fail is checked before the first change (the sweep).
        let now = check_time(now_ms)?;
        let hash_key = self.seen.hash_key()?;
        // Content is hashed here: one right-sized buffer for it, once per deduplicator.
        self.scratch.reserve(64);
        let received = readings.len();
        let evicted_before = self.seen.stats().evicted_before_ttl;
        self.seen.sweep(now);
        let ticket = provisional.then(|| self.seen.open_ticket());
        let burst_start = self.seen.next_position();
        let mut unique = Vec::with_capacity(received);
        let mut duplicates = Vec::new();
        let mut pending = Vec::new();
        let mut rejected = Vec::new();
        let mut seq_reuses = 0;
        for (index, reading) in readings.enumerate() {
            let reading = match reading {
                Ok(r) => r,
                Err(e) => {
                    rejected.push(Rejection {
                        index,
                        field: e.field(),
                        code: e.code(),
                        message: e.to_string(),
                    });
                    continue;
                }
            };
            let digest = content_digest(&reading, &mut self.scratch);
            let fp = fingerprint_under(hash_key, &reading.device_id, reading.seq, digest);
            match self.seen.check_and_add(fp, now, ticket, burst_start) {
                Admission::Admitted { seq_reuse } => {
                    seq_reuses += usize::from(seq_reuse);
                    unique.push(Admitted {
                        index,
                        key: format_key(&reading.device_id, reading.seq, digest),
                        reading,
                    });
                }
                Admission::Duplicate => duplicates.push(index),
                Admission::Pending => pending.push(index),
            }
        }
        let payload = AuditCounts {
            received,
            unique: unique.len(),
            duplicates_suppressed: duplicates.len(),
            cross_path_duplicates: 0,
            pending: pending.len(),
            rejected: rejected.len(),
            not_stored: 0,
            parked: 0,
            seq_reuses,
            evicted_before_ttl: self.seen.stats().evicted_before_ttl - evicted_before,
        };
        debug_assert_eq!(
            payload.received,
            payload.unique + payload.duplicates_suppressed + payload.pending + payload.rejected
        );
        Ok(BurstOutcome {
            unique,
            duplicates_suppressed: duplicates.len(),
            duplicates,
            pending,
            rejected,
            seq_reuses,
            ticket,
            audit: Audit::at(AuditEvent::BurstDeduplicated, payload, now),
        })
    }

    /// Makes a provisional admission permanent; see [`SeenSet::confirm`].
    ///
    /// # Errors
    /// [`Error::UnknownTicket`] for a ticket never issued.
    pub fn confirm(&mut self, ticket: u32) -> Result<usize, Error> {
        self.seen.confirm(ticket)
    }

    /// Withdraws a provisional admission so a retry is admitted; see [`SeenSet::release`].
    ///
    /// # Errors
    /// [`Error::UnknownTicket`] for a ticket never issued.
    pub fn release(&mut self, ticket: u32) -> Result<usize, Error> {
        self.seen.release(ticket)
    }

    /// Admits keys derived elsewhere, one per line (`device_id:seq:<16 hex>`, as
    /// [`format_key`] writes them), at `now_ms`: the worker's device object, whose
    /// stateless tier already validated and keyed each reading once. No reading is
    /// validated and no SHA-256 computed here: a key carries its content digest, and
    /// its fingerprint needs only SipHash of its device and seq.
    ///
    /// `refused` is the number of this burst's readings rejected before they were
    /// keyed; they count in the audit record's `received` and `rejected`. Keys are
    /// decided in order, so a key repeated within the call is a duplicate the
    /// second time. An empty `keys` is a burst with no keys.
    ///
    /// ```
    /// use reconnect_dedupe::{Deduplicator, Verdict};
    /// let mut d = Deduplicator::default();
    /// let keys = "bin-A17:41:76c73ee2946cc70e\nbin-A17:41:76c73ee2946cc70e";
    /// let out = d.admit_keys(keys, 1_784_192_411_204.0, 1).unwrap();
    /// assert_eq!(out.verdicts, [Verdict::Admitted, Verdict::Duplicate]);
    /// assert_eq!(out.audit.payload.received, 3);
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidKey`] if any line is not a canonical key,
    /// [`Error::InvalidTime`] for a bad `now_ms`, [`Error::NoEntropy`] if the hash
    /// cannot be seeded. A call that fails admits nothing.
    pub fn admit_keys(
        &mut self,
        keys: &str,
        now_ms: f64,
        refused: usize,
    ) -> Result<KeyAdmission, Error> {
        let now = check_time(now_ms)?;
        // Every key is read and fingerprinted, and the counts checked, before the
        // first change (the sweep).
        let hash_key = self.seen.hash_key()?;
        let fingerprints = lines(keys)
            .map(|k| {
                let p = parse_key(k)?;
                Ok(fingerprint_under(hash_key, p.device_id, p.seq, p.digest))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let received = fingerprints.len().checked_add(refused).ok_or_else(|| {
            Error::InvalidBurst(format!(
                "{} keys and {refused} refused readings are more than one burst can count",
                fingerprints.len()
            ))
        })?;
        let evicted_before = self.seen.stats().evicted_before_ttl;
        self.seen.sweep(now);
        let burst_start = self.seen.next_position();
        let mut counts = AuditCounts {
            received,
            rejected: refused,
            ..AuditCounts::default()
        };
        let verdicts = fingerprints
            .into_iter()
            .map(
                |fp| match self.seen.check_and_add(fp, now, None, burst_start) {
                    Admission::Admitted { seq_reuse } => {
                        counts.unique += 1;
                        counts.seq_reuses += usize::from(seq_reuse);
                        if seq_reuse {
                            Verdict::AdmittedSeqReuse
                        } else {
                            Verdict::Admitted
                        }
                    }
                    Admission::Duplicate => {
                        counts.duplicates_suppressed += 1;
                        Verdict::Duplicate
                    }
                    // A key of another call's open ticket (`process_burst` with
                    // `provisional`); this call opens none.
                    Admission::Pending => {
                        counts.pending += 1;
                        Verdict::Pending
                    }
                },
            )
            .collect();
        counts.evicted_before_ttl = self.seen.stats().evicted_before_ttl - evicted_before;
        debug_assert!(counts.reconciles());
        Ok(KeyAdmission {
            verdicts,
            audit: Audit::at(AuditEvent::BurstDeduplicated, counts, now),
        })
    }

    /// Rebuilds a deduplicator from stored keys (one per line, as in
    /// [`Self::admit_keys`]) and the time each was admitted (`admitted_at_ms`, same
    /// order, oldest first): every key is admitted again at its own time, so TTL
    /// and the cap hold exactly as if the set had never been dropped. Linear in the
    /// keys; no SHA-256. A fresh hash secret is drawn (fingerprints are recomputed).
    ///
    /// # Errors
    /// [`Error::InvalidKey`] for a key that does not parse, a count that differs
    /// from the times', or times out of order; [`Error::InvalidTime`] for a time
    /// outside `0 ..= 8.64e15`.
    pub fn from_keys(
        config: Config,
        keys: &str,
        admitted_at_ms: &[f64],
    ) -> Result<Deduplicator, Error> {
        let mut d = Deduplicator::new(config);
        let mut times = admitted_at_ms.iter();
        let mut last = i64::MIN;
        for key in lines(keys) {
            let at = check_time(
                *times
                    .next()
                    .ok_or(Error::InvalidKey("more keys than admission times"))?,
            )?;
            if at < last {
                return Err(Error::InvalidKey("admission times out of order"));
            }
            last = at;
            let p = parse_key(key)?;
            let fp = d.seen.fingerprint(p.device_id, p.seq, p.digest)?;
            let start = d.seen.next_position();
            d.seen.check_and_add(fp, at, None, start);
        }
        if times.next().is_some() {
            return Err(Error::InvalidKey("more admission times than keys"));
        }
        Ok(d)
    }

    /// Whether the reading's key is held at `now_ms`; changes no order, expiry or
    /// counter (it may seed the hash key on first use).
    ///
    /// # Errors
    /// [`Error::InvalidTime`] for a bad `now_ms`.
    pub fn contains(&mut self, reading: &Reading<'_>, now_ms: f64) -> Result<bool, Error> {
        let now = check_time(now_ms)?;
        let digest = content_digest(reading, &mut self.scratch);
        let fp = self
            .seen
            .fingerprint(&reading.device_id, reading.seq, digest)?;
        Ok(self.seen.contains(fp, now))
    }

    /// See [`SeenSet::snapshot`].
    pub fn snapshot(&self) -> Vec<u8> {
        self.seen.snapshot()
    }

    /// See [`SeenSet::restore`].
    ///
    /// # Errors
    /// [`Error::InvalidSnapshot`] for bytes that are not a valid snapshot,
    /// [`Error::InvalidConfig`] for an override out of range.
    pub fn restore(
        bytes: &[u8],
        ttl_ms: Option<u64>,
        max_keys: Option<usize>,
    ) -> Result<Deduplicator, Error> {
        SeenSet::restore(bytes, ttl_ms, max_keys).map(Deduplicator::from_seen)
    }
}

/// The lines of a key list; an empty text has none.
fn lines(keys: &str) -> impl Iterator<Item = &str> {
    keys.split('\n').filter(move |_| !keys.is_empty())
}

/// Checks a caller's `now_ms` and turns it into whole milliseconds.
///
/// # Errors
/// [`Error::InvalidTime`] unless finite and within `0 ..= 8.64e15`.
pub fn check_time(now_ms: f64) -> Result<i64, Error> {
    if now_ms.is_finite() && (0.0..=MAX_TIME_MS).contains(&now_ms) {
        Ok(now_ms.floor() as i64)
    } else {
        Err(Error::InvalidTime(now_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dedupe::reading::MAX_SAFE_SEQ;
    use serde_json::{json, Value};

    fn same_text(d: &mut Deduplicator, body: &str, now: f64, provisional: bool) {
        let out = d.process_json(body.as_bytes(), now, provisional).unwrap();
        assert_eq!(
            out.to_json(),
            serde_json::to_string(&out).unwrap(),
            "{body}"
        );
    }

    /// `to_json` is `serde_json::to_string`, byte for byte: over the shared vectors,
    /// rejections, escapes in device ids, tickets and pending keys, and random bursts.
    #[test]
    fn to_json_writes_what_serde_json_writes() {
        let mut d = Deduplicator::new(Config::new(60_000, 50).unwrap());
        let now = 1_784_192_411_204.0;
        for file in [
            include_str!("../../tests/vectors/keys.json"),
            include_str!("../../tests/vectors/rejections.json"),
        ] {
            let v: Value = serde_json::from_str(file).unwrap();
            for list in ["vectors", "cases"] {
                for case in v[list].as_array().into_iter().flatten() {
                    let body = json!([case["reading"], case["reading"]]).to_string();
                    same_text(&mut d, &body, now, false);
                }
            }
        }
        for id in [
            "a\"b",
            "back\\slash",
            "ünï",
            "🗑-7",
            "del\u{7f}",
            "tab\\tname",
        ] {
            let r = json!({"device_id": id, "seq": -3, "ts": "2026-07-16T09:00:00.5+02:00", "fill_pct": 1e-5});
            same_text(&mut d, &json!([r, r, 7]).to_string(), now, false);
        }
        let r = json!({"device_id": "p", "seq": 1, "ts": "2026-07-16T09:00:00Z", "fill_pct": 33.333333333333336});
        same_text(&mut d, &json!([r]).to_string(), now + 1.0, true);
        same_text(&mut d, &json!([r]).to_string(), now + 2.0, true);
        let mut rng = fastrand::Rng::with_seed(7);
        for burst in 0..200 {
            let readings: Vec<Value> = (0..(burst % 40))
                .map(|_| {
                    let fill = match rng.u8(0..6) {
                        0 => json!(rng.u32(0..=1000)),
                        1 => json!(f64::from(rng.u32(0..=1000)) / 10.0),
                        2 => json!(rng.f64() * 100.0),
                        3 => json!(-0.0),
                        4 => json!("50"),
                        _ => json!(f64::from(rng.u32(0..1000)) / 10.0),
                    };
                    json!({"device_id": format!("dev-{}", rng.u8(0..7)), "seq": rng.u8(0..9),
                           "ts": format!("2026-07-16T09:00:{:02}.{:03}Z", rng.u8(0..60), rng.u8(0..3)),
                           "fill_pct": fill})
                })
                .collect();
            same_text(
                &mut d,
                &json!({ "readings": readings }).to_string(),
                now + f64::from(burst) * 700.0,
                false,
            );
        }
    }

    const T0: f64 = 1_784_192_400_000.0; // 2026-07-16T09:00:00Z

    /// A random reading of a small fleet, so replays, seq reuses and evictions occur.
    fn random_reading(rng: &mut fastrand::Rng) -> Value {
        json!({"device_id": format!("bin-{}", rng.u8(0..4)), "seq": rng.u8(0..12),
               "ts": format!("2026-07-16T09:{:02}:00Z", rng.u8(0..3)),
               "fill_pct": f64::from(rng.u8(0..3)) * 12.5})
    }

    fn keys_of(burst: &[Value]) -> String {
        burst
            .iter()
            .map(|r| crate::idempotency_key(&crate::parse_reading(&r.to_string()).unwrap()))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Keys admitted through `admit_keys` get exactly the decisions the same readings
    /// get through `process_json`: verdicts, seq reuses, evictions, audit counts.
    #[test]
    fn admit_keys_decides_as_process_burst_does() {
        let mut rng = fastrand::Rng::with_seed(11);
        for (ttl, cap) in [(60_000, 1000), (90_000, 7), (1, 3)] {
            let config = Config::new(ttl, cap).unwrap();
            let (mut by_reading, mut by_key) =
                (Deduplicator::new(config), Deduplicator::new(config));
            let mut now = T0;
            for _ in 0..400 {
                now += f64::from(rng.u32(0..20_000));
                let burst: Vec<Value> = (0..rng.usize(0..12))
                    .map(|_| random_reading(&mut rng))
                    .collect();
                let body = json!(burst).to_string();
                let a = by_reading
                    .process_json(body.as_bytes(), now, false)
                    .unwrap();
                let b = by_key.admit_keys(&keys_of(&burst), now, 0).unwrap();
                let admitted: Vec<usize> = a.unique.iter().map(|u| u.index).collect();
                let admitted_b: Vec<usize> = (0..burst.len())
                    .filter(|&i| b.verdicts[i] != Verdict::Duplicate)
                    .collect();
                assert_eq!(admitted, admitted_b);
                assert_eq!(
                    a.duplicates,
                    (0..burst.len())
                        .filter(|&i| b.verdicts[i] == Verdict::Duplicate)
                        .collect::<Vec<_>>()
                );
                let reuses = b
                    .verdicts
                    .iter()
                    .filter(|v| **v == Verdict::AdmittedSeqReuse)
                    .count();
                assert_eq!((a.seq_reuses, a.audit.payload), (reuses, b.audit.payload));
                assert!(b.audit.payload.reconciles());
            }
            assert_eq!(by_reading.stats(), by_key.stats());
        }
    }

    /// One bad key in a call: an error, and not one of the good keys is remembered.
    #[test]
    fn a_failed_admit_keys_admits_nothing() {
        let mut d = Deduplicator::default();
        let good = "bin-1:1:0123456789abcdef";
        for bad in [
            format!("{good}\nbin-1:01:0123456789abcdef"),
            format!("{good}\n"),
            format!("{good}\n{good}X"),
        ] {
            assert_eq!(
                d.admit_keys(&bad, T0, 0).unwrap_err().code(),
                "invalid_key",
                "{bad:?}"
            );
            assert_eq!(d.stats().keys, 0);
        }
        assert_eq!(
            d.admit_keys(good, f64::NAN, 0).unwrap_err().code(),
            "invalid_time"
        );
        assert_eq!(d.stats().admitted, 0);
        let out = d.admit_keys("", T0, 2).unwrap();
        assert!(out.verdicts.is_empty());
        assert_eq!(
            (out.audit.payload.received, out.audit.payload.rejected),
            (2, 2)
        );
        assert_eq!(
            d.admit_keys(good, T0, 0).unwrap().verdicts,
            [Verdict::Admitted]
        );
    }

    /// A hostile value for a reading's member, or a valid one.
    fn hostile_reading(rng: &mut fastrand::Rng) -> String {
        let device = ["bin-1", "bin-2", ".", "..", "", "a\\u0000b", "\\ud800x"][rng.usize(0..7)];
        let seq = [
            "1",
            "2",
            "-9223372036854775808",
            "9223372036854775807",
            "9007199254740991",
            "-9007199254740991",
            "9007199254740992",
            "-9007199254740992",
            "18446744073709551615",
            "1e300",
            "41.5",
            "\"7\"",
        ][rng.usize(0..12)];
        let fill = ["50", "-1", "1e400", "100.0"][rng.usize(0..4)];
        let ts = ["2026-07-16T09:00:00Z", "2026-07-16T09:00:01Z", "x"][rng.usize(0..3)];
        format!(r#"{{"device_id":"{device}","seq":{seq},"ts":"{ts}","fill_pct":{fill}}}"#)
    }

    /// Property: a call that returns an error leaves the deduplicator exactly as it
    /// was (snapshot bytes and counters), and no admitted reading is outside the
    /// rules. Seeded random calls of every mutating method, half of them hostile.
    #[test]
    fn a_call_that_fails_changes_nothing() {
        let mut rng = fastrand::Rng::with_seed(9);
        let mut d = Deduplicator::new(Config::new(30_000, 40).unwrap());
        let mut now = T0;
        let (mut failed, mut succeeded) = (0, 0);
        for step in 0..3000 {
            now += f64::from(rng.u32(0..3000));
            let at = match rng.u8(0..10) {
                0 => [f64::NAN, -1.0, f64::INFINITY, 8.64e15 + 1.0, -0.0][rng.usize(0..5)],
                _ => now,
            };
            let before = (d.snapshot(), d.stats());
            let result: Result<(), Error> = match rng.u8(0..5) {
                0 | 1 => {
                    let readings: Vec<String> = (0..rng.usize(0..6))
                        .map(|_| hostile_reading(&mut rng))
                        .collect();
                    let mut body = format!("[{}]", readings.join(","));
                    if rng.u8(0..8) == 0 {
                        body.truncate(body.len() / 2);
                    }
                    d.process_json(body.as_bytes(), at, rng.bool()).map(|out| {
                        for a in &out.unique {
                            assert!(a.reading.seq.unsigned_abs() <= MAX_SAFE_SEQ as u64);
                            assert!(!matches!(&*a.reading.device_id, "." | ".."));
                        }
                        assert!(out.audit.payload.reconciles());
                    })
                }
                2 => {
                    let keys: Vec<String> = (0..rng.usize(0..4))
                        .map(|_| {
                            let seq = ["1", "2", "-9223372036854775808", "9007199254740992"]
                                [rng.usize(0..4)];
                            format!("bin-{}:{seq}:0123456789abcdef", rng.u8(0..3))
                        })
                        .collect();
                    let refused = [0, 1, usize::MAX, usize::MAX - 1][rng.usize(0..4)];
                    d.admit_keys(&keys.join("\n"), at, refused)
                        .map(|out| assert!(out.audit.payload.reconciles()))
                }
                3 => d.confirm(rng.u32(0..6)).map(drop),
                _ => d.release(rng.u32(0..6)).map(drop),
            };
            match result {
                Err(e) => {
                    failed += 1;
                    assert_eq!((d.snapshot(), d.stats()), before, "step {step}: {e}");
                }
                Ok(()) => succeeded += 1,
            }
            d.seen.validate();
        }
        assert!(
            failed > 500 && succeeded > 500,
            "{failed} failed, {succeeded} succeeded"
        );
    }

    /// What the worker does: rows (key, admitted_at) are kept for every admission;
    /// at random points the deduplicator is dropped and rebuilt from the rows still
    /// within the TTL. Every later decision equals a deduplicator never dropped, at
    /// the TTL boundary and under cap evictions alike.
    #[test]
    fn from_keys_keeps_ttl_and_cap_as_if_never_dropped() {
        let mut rng = fastrand::Rng::with_seed(5);
        for (ttl, cap) in [(30_000, 1000), (45_000, 5), (10_000, 1)] {
            let config = Config::new(ttl, cap).unwrap();
            let mut kept = Deduplicator::new(config);
            let mut rebuilt = Deduplicator::new(config);
            // key -> (admitted_at, insertion order): a row renewed on re-admission.
            let mut rows: std::collections::HashMap<String, (f64, u64)> = Default::default();
            let (mut now, mut order) = (T0, 0u64);
            for step in 0..600 {
                // Steps land exactly on TTL boundaries now and then.
                now += match rng.u8(0..4) {
                    0 => ttl as f64,
                    1 => 0.0,
                    _ => f64::from(rng.u32(0..(ttl as u32 / 3).max(2))),
                };
                if step % 7 == 3 {
                    let mut live: Vec<(&String, &(f64, u64))> = rows
                        .iter()
                        .filter(|(_, (at, _))| *at > now - ttl as f64)
                        .collect();
                    live.sort_by(|a, b| a.1.partial_cmp(b.1).unwrap());
                    let keys = live
                        .iter()
                        .map(|(k, _)| k.as_str())
                        .collect::<Vec<_>>()
                        .join("\n");
                    let times: Vec<f64> = live.iter().map(|(_, (at, _))| *at).collect();
                    rebuilt = Deduplicator::from_keys(config, &keys, &times).unwrap();
                }
                let burst: Vec<Value> = (0..rng.usize(1..6))
                    .map(|_| random_reading(&mut rng))
                    .collect();
                let keys = keys_of(&burst);
                let a = kept.admit_keys(&keys, now, 0).unwrap();
                let b = rebuilt.admit_keys(&keys, now, 0).unwrap();
                assert_eq!(a.verdicts, b.verdicts, "step {step}, ttl {ttl}, cap {cap}");
                for (key, v) in keys.split('\n').zip(&a.verdicts) {
                    if *v != Verdict::Duplicate {
                        order += 1;
                        rows.insert(key.to_owned(), (now, order));
                    }
                }
            }
        }
    }

    #[test]
    fn from_keys_refuses_keys_and_times_that_do_not_pair_up() {
        let c = Config::default();
        let k = "bin-1:1:0123456789abcdef\nbin-1:2:0123456789abcdef";
        for (keys, times) in [
            (k, vec![T0]),
            (k, vec![T0, T0, T0]),
            (k, vec![T0 + 1.0, T0]),
            ("bin-1:x:0", vec![T0]),
        ] {
            let e = Deduplicator::from_keys(c, keys, &times).unwrap_err();
            assert_eq!(e.code(), "invalid_key", "{keys:?} {times:?}");
        }
        assert_eq!(
            Deduplicator::from_keys(c, k, &[T0, f64::INFINITY])
                .unwrap_err()
                .code(),
            "invalid_time"
        );
        let d = Deduplicator::from_keys(c, k, &[T0, T0]).unwrap();
        assert_eq!(d.stats().keys, 2);
    }

    /// Audit lines: the seed's members first, then the context; `pending`,
    /// `not_stored` and `parked` only when not zero; counts that do not reconcile are
    /// refused.
    #[test]
    fn audit_lines_are_written_by_the_core() {
        let counts = AuditCounts {
            received: 3,
            unique: 1,
            duplicates_suppressed: 1,
            rejected: 1,
            ..AuditCounts::default()
        };
        let audit = Audit::new(AuditEvent::BurstDeduplicated, counts, 1_784_192_411_204.0).unwrap();
        let context = AuditContext {
            device_id: Some("bin-A17".into()),
            route: Some("readings".into()),
            ..AuditContext::default()
        };
        assert_eq!(
            audit.line(&context),
            r#"{"logged_at":"2026-07-16T09:00:11.204000+00:00","level":"INFO","event":"burst_deduplicated","payload":{"received":3,"unique":1,"duplicates_suppressed":1,"rejected":1,"seq_reuses":0,"evicted_before_ttl":0},"device_id":"bin-A17","route":"readings"}"#
        );
        let lost = AuditCounts {
            received: 2,
            not_stored: 2,
            ..AuditCounts::default()
        };
        let line = Audit::new(AuditEvent::BurstNotStored, lost, T0)
            .unwrap()
            .line(&AuditContext {
                error: Some("storage_unavailable".into()),
                ..AuditContext::default()
            });
        assert_eq!(
            line,
            r#"{"logged_at":"2026-07-16T09:00:00+00:00","level":"ERROR","event":"burst_not_stored","payload":{"received":2,"unique":0,"duplicates_suppressed":0,"rejected":0,"not_stored":2,"seq_reuses":0,"evicted_before_ttl":0},"error":"storage_unavailable"}"#
        );
        // An uplink of two readings, one parked until its device is configured; a
        // datalog record of a reading first sent live: a duplicate, counted apart too.
        let parked = AuditCounts {
            received: 2,
            rejected: 1,
            parked: 1,
            ..AuditCounts::default()
        };
        let crossed = AuditCounts {
            received: 2,
            unique: 1,
            duplicates_suppressed: 1,
            cross_path_duplicates: 1,
            ..AuditCounts::default()
        };
        for (counts, payload) in [
            (
                parked,
                r#"{"received":2,"unique":0,"duplicates_suppressed":0,"rejected":1,"parked":1,"seq_reuses":0,"evicted_before_ttl":0}"#,
            ),
            (
                crossed,
                r#"{"received":2,"unique":1,"duplicates_suppressed":1,"cross_path_duplicates":1,"rejected":0,"seq_reuses":0,"evicted_before_ttl":0}"#,
            ),
        ] {
            let line = Audit::new(AuditEvent::BurstDeduplicated, counts, T0)
                .unwrap()
                .line(&AuditContext::default());
            assert_eq!(
                line,
                format!(
                    r#"{{"logged_at":"2026-07-16T09:00:00+00:00","level":"INFO","event":"burst_deduplicated","payload":{payload}}}"#
                )
            );
        }
        let crossed_too_many = AuditCounts {
            cross_path_duplicates: 2,
            ..crossed
        };
        let wrong = AuditCounts {
            received: 2,
            unique: 1,
            ..AuditCounts::default()
        };
        let parked_too_many = AuditCounts {
            parked: 2,
            ..parked
        };
        for counts in [crossed_too_many, wrong, parked_too_many] {
            assert_eq!(
                Audit::new(AuditEvent::BurstDeduplicated, counts, T0)
                    .unwrap_err()
                    .code(),
                "invalid_burst",
                "{counts:?}"
            );
        }
    }
}
