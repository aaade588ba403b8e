//! reconnect-dedupe removes replayed sensor readings from LoRaWAN uplink bursts.
//!
//! A reading is `{device_id, seq, ts, fill_pct}`. Its idempotency key is
//! `device_id:seq:` followed by the first 16 hex digits of SHA-256 over the canonical
//! content `{"fill_pct":…,"ts":"…"}` ([`key`]). A bounded seen-set ([`SeenSet`]:
//! TTL + cap, first write wins) remembers 128-bit fingerprints of admitted keys, and
//! the [`Deduplicator`] accounts for every reading of a burst in one audit record.
//!
//! * [`core`]: the pure Rust core, tested natively.
//! * `wasm` (wasm32 only): the JavaScript API, the one place with `#[wasm_bindgen]`.

pub mod core;
#[cfg(target_arch = "wasm32")]
pub mod wasm;

pub use crate::core::dedup::{
    check_time, Admitted, Audit, AuditCounts, BurstOutcome, Deduplicator, Rejection,
};
pub use crate::core::error::{Error, Field};
pub use crate::core::key::{idempotency_key, write_content};
pub use crate::core::reading::{parse_reading, validate, RawBurst, RawReading, Reading};
pub use crate::core::seen::{Admission, Config, Fingerprint, SeenSet, Stats};
pub use crate::core::{key, timestamp};
