//! The deduplicator: validates a burst, keys each reading, asks the seen-set, and
//! accounts for every reading in exactly one bucket, written to one audit record.
//!
//! `received = unique + duplicates_suppressed + pending + rejected` holds for every
//! burst. `pending` is only non-zero while provisional admissions are open, so
//! outside that use it is the seed's `received = unique + duplicates_suppressed`
//! plus the readings rejected at the boundary.

use super::error::{Error, Rejection};
use super::key::{content_digest, format_key, push_i64, push_u64};
use super::reading::{validate, RawBurst, RawReading, Reading};
use super::seen::{Admission, Config, SeenSet, Stats, MAX_TIME_MS};
use super::timestamp::{isoformat, IsoBuf};
use serde::ser::SerializeStruct;
use serde::Serialize;

/// A reading admitted as new, with its idempotency key and its index in the burst.
/// Serialises flat: `{index, key, device_id, seq, ts, fill_pct}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Admitted<'a> {
    pub index: usize,
    pub key: String,
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

/// The counts of one burst, as written to the audit line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AuditCounts {
    pub received: usize,
    pub unique: usize,
    pub duplicates_suppressed: usize,
    pub pending: usize,
    pub rejected: usize,
    pub seq_reuses: usize,
    /// Keys pushed out by the cap during this burst, before their TTL ran out.
    pub evicted_before_ttl: u64,
}

/// One audit record: `{"logged_at","level","event","payload"}`, one per burst.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Audit {
    pub logged_at: String,
    pub level: &'static str,
    pub event: &'static str,
    pub payload: AuditCounts,
}

/// Everything decided about one burst.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(256 + self.unique.len() * 160);
        out.push_str("{\"unique\":[");
        for (i, a) in self.unique.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str("{\"index\":");
            push_u64(&mut out, a.index as u64);
            out.push_str(",\"key\":");
            push_json_str(&mut out, &a.key);
            out.push_str(",\"device_id\":");
            push_json_str(&mut out, &a.reading.device_id);
            out.push_str(",\"seq\":");
            push_i64(&mut out, a.reading.seq);
            out.push_str(",\"ts\":\"");
            out.push_str(IsoBuf::new(a.reading.ts).as_str());
            out.push_str("\",\"fill_pct\":");
            let x = a.reading.fill_pct;
            if x.is_finite() {
                out.push_str(zmij::Buffer::new().format_finite(x));
            } else {
                out.push_str("null");
            }
            out.push('}');
        }
        out.push_str("],\"duplicates_suppressed\":");
        push_u64(&mut out, self.duplicates_suppressed as u64);
        // The rest is per burst, not per reading: serde_json writes it.
        let mut member = |name: &str, json: serde_json::Result<String>| {
            out.push_str(",\"");
            out.push_str(name);
            out.push_str("\":");
            // Serialising these plain structs and numbers cannot fail.
            out.push_str(&json.unwrap_or_default());
        };
        member("duplicates", serde_json::to_string(&self.duplicates));
        member("pending", serde_json::to_string(&self.pending));
        member("rejected", serde_json::to_string(&self.rejected));
        member("seq_reuses", serde_json::to_string(&self.seq_reuses));
        member("ticket", serde_json::to_string(&self.ticket));
        member("audit", serde_json::to_string(&self.audit));
        out.push('}');
        out
    }
}

/// Appends `s` as a JSON string literal, escaped as serde_json escapes: `"`, `\\`
/// and the control characters, nothing else.
fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0x00..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if escape.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 15)]));
        } else {
            out.push_str(escape);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
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
            scratch: String::with_capacity(64),
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
        // Valid UTF-8 (the usual case) is checked once here rather than string by
        // string inside the parser; other bytes take the byte parser, whose errors
        // (and tolerance of bad bytes in ignored members) stay exactly as they were.
        let parsed = match std::str::from_utf8(json) {
            Ok(text) => serde_json::from_str(text),
            Err(_) => serde_json::from_slice(json),
        };
        let burst: RawBurst<'a> = parsed?;
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
    /// `0 ..= 8.64e15`; [`Error::NoEntropy`] if the hash cannot be seeded.
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
        let now = check_time(now_ms)?;
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
        for (index, raw) in readings.into_iter().enumerate() {
            let reading = match validate(raw) {
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
            let fp = self
                .seen
                .fingerprint(&reading.device_id, reading.seq, digest)?;
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
            pending: pending.len(),
            rejected: rejected.len(),
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
            audit: Audit {
                logged_at: isoformat(now * 1000),
                level: "INFO",
                event: "burst_deduplicated",
                payload,
            },
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
            "🗑️-7",
            "del\u{7f}",
            "tab\\tname",
        ] {
            let r = json!({"device_id": id, "seq": -3, "ts": "2026-07-16T09:00:00.5+02:00", "fill_pct": 1e-5});
            same_text(&mut d, &json!([r, r, 7]).to_string(), now, false);
        }
        let r = json!({"device_id": "p", "seq": 1, "ts": "2026-07-16T09:00:00Z", "fill_pct": 33.333333333333336});
        same_text(&mut d, &json!([r]).to_string(), now + 1.0, true);
        same_text(&mut d, &json!([r]).to_string(), now + 2.0, true);
        let mut x = 7u64;
        for burst in 0..200 {
            let readings: Vec<Value> = (0..(burst % 40))
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let fill = match x >> 61 {
                        0 => json!((x >> 20) % 1001),
                        1 => json!(((x >> 20) % 1001) as f64 / 10.0),
                        2 => json!(((x >> 11) as f64) / (1u64 << 53) as f64 * 100.0),
                        3 => json!(-0.0),
                        4 => json!("50"),
                        _ => json!(((x >> 24) % 1000) as f64 / 10.0),
                    };
                    json!({"device_id": format!("dev-{}", (x >> 33) % 7), "seq": (x >> 40) % 9,
                           "ts": format!("2026-07-16T09:00:{:02}.{:03}Z", (x >> 8) % 60, (x >> 16) % 3),
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
}
