// TODO(lead): replace with real browser tests
//! Throwaway smoke test proving `wasm-pack test --headless --chrome` runs in Chromium.
#![cfg(target_arch = "wasm32")]

use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
fn runs_in_a_browser() {
    let ua = js_sys::eval("navigator.userAgent")
        .ok()
        .and_then(|v| v.as_string())
        .unwrap_or_default();
    assert!(ua.contains("Chrome"), "unexpected user agent: {ua}");
}
