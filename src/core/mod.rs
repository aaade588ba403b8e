//! The pure-Rust core: no `wasm_bindgen`, no `js_sys`, no clock, no global state.
//! Native tests and benches drive it directly.

pub mod dedup;
pub mod error;
pub mod key;
pub mod reading;
mod ring;
pub mod seen;
#[cfg(test)]
mod seen_tests;
pub mod siphash;
pub mod timestamp;
pub mod uplink;
