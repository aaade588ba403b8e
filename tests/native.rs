//! Native tests of the public Rust API: the shared vector files, the seed's own three
//! tests re-expressed, and the audit's reconciliation on every burst.

use reconnect_dedupe::{
    idempotency_key, parse_reading, validate, write_content, BurstOutcome, Config, Deduplicator,
    RawReading,
};
use serde::Deserialize;
use serde_json::{json, Value};

const KEYS: &str = include_str!("vectors/keys.json");
const REJECTIONS: &str = include_str!("vectors/rejections.json");
const NOW: f64 = 1_784_192_411_204.0; // 2026-07-16T09:00:11.204Z

fn vectors(file: &str, list: &str) -> Vec<Value> {
    let v: Value = serde_json::from_str(file).unwrap();
    v[list].as_array().unwrap().clone()
}

fn reconciles(out: &BurstOutcome<'_>) {
    let p = out.audit.payload;
    assert_eq!(
        p.received,
        p.unique + p.duplicates_suppressed + p.pending + p.rejected
    );
    assert_eq!(p.unique, out.unique.len());
    assert_eq!(p.rejected, out.rejected.len());
}

#[test]
fn key_vectors_match_the_seed() {
    let all = vectors(KEYS, "vectors");
    assert!(all.len() >= 30);
    for v in &all {
        let name = v["name"].as_str().unwrap();
        let raw = RawReading::deserialize(&v["reading"]).unwrap();
        let reading = validate(raw).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut content = String::new();
        write_content(&mut content, &reading);
        assert_eq!(content, v["content"].as_str().unwrap(), "{name}");
        assert_eq!(
            idempotency_key(&reading),
            v["key"].as_str().unwrap(),
            "{name}"
        );
    }
}

#[test]
fn key_vectors_as_one_burst_through_the_bulk_path() {
    let all = vectors(KEYS, "vectors");
    let body = Value::Array(all.iter().map(|v| v["reading"].clone()).collect()).to_string();
    let mut dedup = Deduplicator::default();
    let out = dedup.process_json(body.as_bytes(), NOW, false).unwrap();
    reconciles(&out);
    assert!(out.rejected.is_empty());
    // Vectors that share a key (one instant, two offsets) collapse: first wins.
    for a in &out.unique {
        assert_eq!(a.key, all[a.index]["key"].as_str().unwrap());
    }
    for &d in &out.duplicates {
        let key = all[d]["key"].as_str().unwrap();
        assert!(out.unique.iter().any(|a| a.key == key && a.index < d));
    }
    assert!(
        !out.duplicates.is_empty(),
        "the vectors include same-instant pairs"
    );
}

#[test]
fn rejection_vectors_name_field_and_code() {
    let all = vectors(REJECTIONS, "cases");
    assert!(all.len() >= 30);
    for v in &all {
        let name = v["name"].as_str().unwrap();
        let err = validate(RawReading::deserialize(&v["reading"]).unwrap()).unwrap_err();
        assert_eq!(err.code(), v["code"].as_str().unwrap(), "{name}");
        assert_eq!(err.field(), v["field"].as_str().unwrap(), "{name}");
    }
    // In a burst, each bad reading is rejected with its index and the good one survives.
    let mut readings: Vec<Value> = all.iter().map(|v| v["reading"].clone()).collect();
    readings.insert(5, vectors(KEYS, "vectors")[0]["reading"].clone());
    let body = json!({ "readings": readings }).to_string();
    let out = Deduplicator::default()
        .process_json(body.as_bytes(), NOW, false)
        .unwrap()
        .clone();
    reconciles(&out);
    assert_eq!(out.unique.len(), 1);
    assert_eq!(out.unique[0].index, 5);
    assert_eq!(out.rejected.len(), all.len());
    for r in &out.rejected {
        let case = if r.index < 5 {
            &all[r.index]
        } else {
            &all[r.index - 1]
        };
        assert_eq!(r.code, case["code"].as_str().unwrap());
        assert!(!r.message.is_empty());
    }
}

fn reading(seq: i64, fill: f64, second: u32) -> Value {
    json!({"device_id": "bin-A17", "seq": seq, "ts": format!("2026-07-16T09:00:{second:02}Z"), "fill_pct": fill})
}

fn burst(dedup: &mut Deduplicator, readings: &[Value]) -> (usize, usize) {
    let body = Value::Array(readings.to_vec()).to_string();
    let out = dedup.process_json(body.as_bytes(), NOW, false).unwrap();
    reconciles(&out);
    (out.unique.len(), out.duplicates_suppressed)
}

// The seed's three tests.

#[test]
fn seed_replayed_burst_is_idempotent() {
    let mut dedup = Deduplicator::default();
    let original = [
        reading(41, 62.5, 0),
        reading(42, 71.0, 0),
        reading(43, 80.0, 0),
    ];
    assert_eq!(burst(&mut dedup, &original), (3, 0));
    assert_eq!(burst(&mut dedup, &original), (0, 3));
}

#[test]
fn seed_same_timestamp_distinct_readings_both_kept() {
    let mut dedup = Deduplicator::default();
    assert_eq!(
        burst(&mut dedup, &[reading(41, 62.5, 0), reading(42, 71.0, 0)]),
        (2, 0)
    );
}

#[test]
fn seed_exact_replay_within_one_burst_collapses() {
    let mut dedup = Deduplicator::default();
    assert_eq!(
        burst(&mut dedup, &[reading(41, 62.5, 0), reading(41, 62.5, 0)]),
        (1, 1)
    );
}

#[test]
fn seed_example_burst_and_audit_line() {
    let mut dedup = Deduplicator::default();
    let mut b04 = reading(8, 15.0, 5);
    b04["device_id"] = json!("bin-B04");
    let body = Value::Array(vec![
        reading(41, 62.5, 0),
        reading(41, 62.5, 0),
        reading(42, 71.0, 0),
        b04,
    ])
    .to_string();
    let out = dedup.process_json(body.as_bytes(), NOW, false).unwrap();
    let audit = serde_json::to_value(&out.audit).unwrap();
    assert_eq!(
        audit,
        json!({"logged_at": "2026-07-16T09:00:11.204000+00:00", "level": "INFO", "event": "burst_deduplicated",
               "payload": {"received": 4, "unique": 3, "duplicates_suppressed": 1, "rejected": 0,
                           "seq_reuses": 0, "evicted_before_ttl": 0}})
    );
}

#[test]
fn seq_reset_after_battery_swap_keeps_both_and_counts_it() {
    let mut dedup = Deduplicator::default();
    burst(&mut dedup, &[reading(1, 10.0, 0), reading(2, 12.0, 10)]);
    // The battery is swapped: seq starts at 1 again, with new content.
    let body = Value::Array(vec![reading(1, 40.0, 30), reading(2, 12.0, 10)]).to_string();
    let out = dedup.process_json(body.as_bytes(), NOW, false).unwrap();
    assert_eq!(
        (out.unique.len(), out.duplicates_suppressed, out.seq_reuses),
        (1, 1, 1)
    );
    assert_eq!(dedup.stats().seq_reuses, 1);
}

#[test]
fn the_same_instant_with_two_offsets_is_one_reading() {
    let mut dedup = Deduplicator::default();
    let mut plus2 = reading(41, 62.5, 0);
    plus2["ts"] = json!("2026-07-16T11:00:00+02:00");
    assert_eq!(burst(&mut dedup, &[reading(41, 62.5, 0), plus2]), (1, 1));
}

#[test]
fn provisional_bursts_hold_replays_as_pending_until_confirmed() {
    let mut dedup = Deduplicator::new(Config::new(60_000, 100).unwrap());
    let body = Value::Array(vec![reading(1, 10.0, 0), reading(2, 11.0, 0)]).to_string();
    let first = dedup.process_json(body.as_bytes(), NOW, true).unwrap();
    let ticket = first.ticket.unwrap();
    assert_eq!(first.unique.len(), 2);
    let again = dedup
        .process_json(body.as_bytes(), NOW + 1.0, false)
        .unwrap();
    reconciles(&again);
    assert_eq!(
        (
            again.unique.len(),
            again.pending.clone(),
            again.duplicates_suppressed
        ),
        (0, vec![0, 1], 0)
    );
    assert_eq!(dedup.release(ticket), Ok(2));
    let retry = dedup
        .process_json(body.as_bytes(), NOW + 2.0, true)
        .unwrap();
    assert_eq!(retry.unique.len(), 2);
    assert_eq!(dedup.confirm(retry.ticket.unwrap()), Ok(2));
    let replay = dedup
        .process_json(body.as_bytes(), NOW + 3.0, false)
        .unwrap();
    assert_eq!(replay.duplicates_suppressed, 2);
}

#[test]
fn whole_body_errors_have_codes() {
    let mut dedup = Deduplicator::default();
    let code = |d: &mut Deduplicator, b: &str| {
        d.process_json(b.as_bytes(), NOW, false).unwrap_err().code()
    };
    assert_eq!(code(&mut dedup, "[{"), "invalid_json");
    assert_eq!(code(&mut dedup, ""), "invalid_json");
    assert_eq!(code(&mut dedup, "42"), "invalid_burst");
    assert_eq!(code(&mut dedup, r#"{"readings": 3}"#), "invalid_burst");
    for bad in [f64::NAN, -1.0, f64::INFINITY, 9e15] {
        assert_eq!(
            dedup.process_json(b"[]", bad, false).unwrap_err().code(),
            "invalid_time"
        );
    }
    // The deduplicator keeps working after errors.
    assert_eq!(burst(&mut dedup, &[reading(1, 1.0, 0)]), (1, 0));
}

#[test]
fn unique_readings_serialise_normalised_with_their_key() {
    let mut dedup = Deduplicator::default();
    let body = r#"[{"device_id":"bin-A17","seq":41.0,"ts":"2026-07-16T11:00:00.5+02:00","fill_pct":-0.0,"rssi":-97}]"#;
    let out = dedup.process_json(body.as_bytes(), NOW, false).unwrap();
    let v = serde_json::to_value(&out.unique).unwrap();
    assert_eq!(
        v,
        json!([{"index": 0, "key": idempotency_key(&parse_reading(r#"{"device_id":"bin-A17","seq":41,"ts":"2026-07-16T09:00:00.500Z","fill_pct":0}"#).unwrap()), "device_id": "bin-A17",
                "seq": 41, "ts": "2026-07-16T09:00:00.500000+00:00", "fill_pct": 0.0}])
    );
}
