//! The pure-Rust deduplication core: no `wasm_bindgen`, no `js_sys`, no clock, no
//! global state. Native tests and benches drive it directly.
//!
//! The bottom layer: it uses nothing else of the crate, and `codec`, `uplink` and
//! `wasm` build on it. Every request body is read here, by the JSON reader
//! (`json.rs`) and, for a native burst, the burst reader ([`burst`]).

pub mod burst;
pub(crate) mod bytes;
pub mod dedup;
pub mod error;
pub mod fill;
pub(crate) mod json;
pub mod key;
pub mod keyed;
pub mod reading;
pub mod seen;
#[cfg(test)]
pub(crate) mod test_kit;
pub mod timestamp;
pub mod window;
