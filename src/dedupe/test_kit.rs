//! What the core's tests share with those of the layers above it (`uplink`'s
//! `test_kit.rs` re-exports it): a reading's JSON text to edit.

/// `body` with `from` (which must occur exactly once) replaced by `to`.
pub(crate) fn edit(body: &str, from: &str, to: &str) -> String {
    assert_eq!(body.matches(from).count(), 1, "{from:?}");
    body.replacen(from, to, 1)
}

pub(crate) const R1: &str =
    r#"{"device_id":"a","seq":1,"ts":"2026-07-16T09:00:00Z","fill_pct":10}"#;
