//! The pure-Rust deduplication core: no `wasm_bindgen`, no `js_sys`, no clock, no
//! global state. Native tests and benches drive it directly.

pub(crate) mod bytes;
pub mod dedup;
pub mod error;
pub mod key;
pub mod reading;
pub mod seen;
pub mod timestamp;
pub mod window;
