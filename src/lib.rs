//! reconnect-dedupe removes replayed sensor readings from LoRaWAN uplink bursts.
//!
//! A reading is `{device_id, seq, ts, fill_pct}`. Its idempotency key is
//! `device_id:seq:` followed by the first 16 hex digits of SHA-256 over the canonical
//! content `{"fill_pct":…,"ts":"…"}` ([`key`]). A bounded seen-set ([`SeenSet`]:
//! TTL + cap, first write wins) remembers 128-bit fingerprints of admitted keys, and
//! the [`Deduplicator`] accounts for every reading of a burst in one audit record.
//!
//! * [`dedupe`]: the pure Rust core (readings, keys, the seen-set, bursts; a device's
//!   sequence window, [`SeqWindow`], which the worker keeps per device; the reader of
//!   every request body), tested natively.
//! * [`codec`]: sensors' raw payloads → level samples, one file per vendor; fill levels
//!   from bin geometry, and the rules that make samples readings.
//! * [`uplink`]: network-server webhooks → keyed readings, one file per server; a raw
//!   payload's samples → keyed readings.
//! * `wasm` (wasm32 only): the JavaScript API, the one place with `#[wasm_bindgen]`,
//!   one file per part of the API it binds.
//!
//! Each layer uses only those listed before it: `dedupe` nothing else of the crate,
//! `codec` the core, `uplink` both, `wasm` all three; their tests too.

pub mod codec;
pub mod dedupe;
pub mod uplink;
#[cfg(target_arch = "wasm32")]
pub mod wasm;

pub use crate::dedupe::dedup::{
    check_time, Admitted, Audit, AuditContext, AuditCounts, AuditEvent, BurstOutcome, Deduplicator,
    KeyAdmission, Verdict,
};
pub use crate::dedupe::error::{Error, Field, Rejection};
pub use crate::dedupe::key::{idempotency_key, parse_key, write_content};
pub use crate::dedupe::reading::{parse_reading, validate, RawBurst, RawReading, Reading};
pub use crate::dedupe::seen::{Admission, Config, Fingerprint, SeenSet, Stats};
pub use crate::dedupe::window::{Gap, Observation, SeqTotals, SeqWindow};
pub use crate::dedupe::{key, timestamp};
