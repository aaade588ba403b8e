//! A valid reading with its idempotency key ([`KeyedReading`]): what the worker is
//! handed to admit, keyed once, for each reading of a network server's webhook or a
//! native burst (`uplink::plan`) and each sample of a raw payload a codec decoded
//! (`uplink::payload_readings`).

use super::timestamp::{isoformat_text, Micros};
use serde::Serialize;

// `frame`'s doc names `RawUplink`, a type of `uplink` (the layer above), as the .d.ts
// shows it (tsify copies the doc text): rustdoc cannot resolve that link from here.
/// A valid reading with its idempotency key; its `device_id` is its group's.
#[allow(rustdoc::broken_intra_doc_links)]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "typescript", derive(tsify::Tsify))]
pub struct KeyedReading {
    /// The reading's index in the request.
    pub index: usize,
    /// `device_id:seq:<16 hex digits of SHA-256 of the content>`.
    pub key: String,
    pub seq: i64,
    /// The UTC instant, written as the key hashed it (Python's `isoformat()`).
    #[serde(serialize_with = "isoformat_text")]
    #[cfg_attr(feature = "typescript", tsify(type = "string"))]
    pub ts: Micros,
    /// Percent, 0.0 ..= 100.0, never `-0.0`.
    pub fill_pct: f64,
    /// When `ts` is the network server's receive time (the decoded payload gave
    /// none): the radio frame's identity, 16 hex digits of SHA-256 over the network
    /// server, session, frame counter, port, raw payload and the reading's place in
    /// the uplink. A copy of the frame received later has the same `frame` and a
    /// later `ts`; the worker keys it with the first copy's `ts`
    /// (docs/network-servers.md "The same frame twice"). `None` when the reading carries its own `ts`. A reading a codec
    /// decoded from [`RawUplink`] has one of [`RawUplink::frame`] and its sample's
    /// place instead (`uplink::payload_readings`), when its `ts` derives from the
    /// receive time.
    pub frame: Option<String>,
}
