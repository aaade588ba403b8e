#![no_main]
//! See `reconnect_dedupe_fuzz::codec` for the input's shape and the properties checked.

libfuzzer_sys::fuzz_target!(|data: &[u8]| reconnect_dedupe_fuzz::codec::check(data));
