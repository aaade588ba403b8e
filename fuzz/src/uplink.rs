//! Target `uplink`: one request body through `uplink::plan` (`parseUplink`).
//!
//! Input: the first byte selects the format, `Format::NAMES[b % 5]` (`ttn`,
//! `chirpstack`, `helium`, `loriot`, `readings`), and the readings limit,
//! `LIMITS[b / 5 % 4]`; the rest is the body.
//!
//! Properties: never panics; an error is one of the body-level codes; in a plan every
//! reading is accounted for exactly once (`received = planned + rejected`), every
//! planned reading is valid by the core's rules and its key re-derives from its
//! `(device_id, seq, ts, fill_pct)`, also through the core's validation again; each
//! device's keys are taken by `admit_keys` (the device object's call), whose audit
//! counts reconcile; an ignored message is read no further, a frame identity is 16
//! hex digits and only where a network server's receive time keys the reading;
//! planned device ids are canonical (a DevEUI upper-cased). A native burst (`readings`) gives the same readings keyed and
//! the same rejections (codes included) through `Deduplicator::process_json`.
//! A raw payload (`Plan::raw`) only on a network server's uplink that planned no
//! reading and whose every rejection is `missing_fill_pct` for its device; its payload
//! is 1 ..= 255 bytes in lower-case hex (even length), its port 1 ..= 255, its frame
//! counter 0 ..= 2^32 − 1, its frame identity 16 lower-case hex digits, its receive
//! time in range, its codec hint a known codec id, its config hint within the config
//! route's ranges.

use reconnect_dedupe::codec::{Codec, BIN_DEPTH_MM, OFFSET_MM, REPORTING_PERIOD_S};
use reconnect_dedupe::dedupe::reading::{
    canonical_device_id, check_device_id, Scalar, MAX_SAFE_SEQ,
};
use reconnect_dedupe::timestamp::{isoformat, MAX_MICROS, MIN_MICROS};
use reconnect_dedupe::uplink::{
    plan, FieldNames, Format, Plan, RawUplink, DEFAULT_MAX_READINGS, MAX_PAYLOAD_BYTES,
};
use reconnect_dedupe::{
    idempotency_key, parse_key, validate, Deduplicator, Error, RawReading, Reading,
};
use std::borrow::Cow;
use std::collections::HashSet;

const T0: f64 = 1_784_192_400_000.0; // 2026-07-16T09:00:00Z

/// The readings limits a body is planned under (the default first).
pub const LIMITS: [usize; 4] = [DEFAULT_MAX_READINGS, 0, 1, 3];

pub fn check(data: &[u8]) {
    let Some((&sel, body)) = data.split_first() else {
        return;
    };
    let names = Format::NAMES;
    let name = names[usize::from(sel) % names.len()];
    let limit = LIMITS[usize::from(sel) / names.len() % LIMITS.len()];
    let format = Format::from_name(name).expect("every name of Format::NAMES is a format");
    assert_eq!(format.name(), name, "name round trip");
    let planned = plan(format, body, &FieldNames::default(), limit);
    match &planned {
        Ok(p) => {
            check_plan(p, limit);
            check_message(format, p);
        }
        Err(Error::TooManyReadings(found, max)) => {
            assert!(
                *max == limit && found > max,
                "too_many_readings({found}, {max}) at limit {limit}"
            );
        }
        Err(e) => assert!(
            matches!(e.code(), "invalid_json" | "invalid_burst")
                || (format == Format::Tts && e.code() == "field_mask_incomplete"),
            "unexpected body error {e:?}"
        ),
    }
    if format == Format::Readings {
        same_as_process_json(body, &planned);
    }
}

/// A native burst read two ways, `plan` (the worker's route) and
/// `Deduplicator::process_json` (the library's), through the one reader: the same
/// body errors with the same code, or the same readings are keyed (each admitted,
/// or a duplicate of an earlier one in the burst, under the plan's key) and the
/// same ones rejected with the same field, code and message.
fn same_as_process_json(body: &[u8], planned: &Result<Plan, Error>) {
    let mut d = Deduplicator::default();
    let got = d.process_json(body, T0, false);
    let p = match (planned, got) {
        (Ok(p), Ok(out)) => (p, out),
        (Err(Error::TooManyReadings(found, _)), Ok(out)) => {
            // The readings limit is the worker's; the library counts them all.
            assert_eq!(out.audit.payload.received, *found, "readings counted");
            return;
        }
        (Err(want), Err(e)) if !matches!(want, Error::TooManyReadings(..)) => {
            assert_eq!(e.code(), want.code(), "plan: {want:?}, process_json: {e:?}");
            return;
        }
        (want, got) => panic!(
            "plan gave {want:?}, process_json gave {:?}",
            got.map(|o| o.to_json())
        ),
    };
    let (p, out) = p;
    let mut keys: Vec<Option<&str>> = vec![None; p.received];
    for r in p.devices.iter().flat_map(|g| &g.readings) {
        keys[r.index] = Some(&r.key);
    }
    assert_eq!(out.audit.payload.received, p.received, "readings received");
    assert!(out.pending.is_empty() && out.ticket.is_none());
    let mut seen = HashSet::new();
    let mut keyed = vec![false; p.received];
    for a in &out.unique {
        assert_eq!(
            keys[a.index],
            Some(a.key.as_str()),
            "reading {} keyed",
            a.index
        );
        assert!(seen.insert(a.key.as_str()), "{} admitted twice", a.key);
        keyed[a.index] = true;
    }
    for &i in &out.duplicates {
        let key = keys[i].unwrap_or_else(|| panic!("duplicate {i} not planned"));
        assert!(seen.contains(key), "duplicate {i} of no admitted key");
        keyed[i] = true;
    }
    assert_eq!(
        keyed,
        keys.iter().map(Option::is_some).collect::<Vec<_>>(),
        "the same readings keyed"
    );
    let planned: Vec<_> = p.rejected.iter().map(|r| &r.rejection).collect();
    let rejected: Vec<_> = out.rejected.iter().collect();
    assert_eq!(rejected, planned, "the same rejections");
}

/// A message that is not an uplink is read no further; only The Things Stack marks
/// a simulated uplink; only a reading keyed at the receive time has a frame identity.
fn check_message(format: Format, p: &Plan) {
    if p.ignored {
        assert!(p.received == 0 && p.devices.is_empty() && p.rejected.is_empty());
        assert!(format != Format::Readings && format != Format::ChirpStack);
    }
    assert!(
        !p.simulated || format == Format::Tts,
        "simulated {format:?}"
    );
    if let Some(raw) = &p.raw {
        check_raw(format, p, raw);
    }
    for r in p.devices.iter().flat_map(|g| &g.readings) {
        if let Some(frame) = &r.frame {
            assert!(format != Format::Readings, "a native reading with a frame");
            assert!(is_frame_id(frame), "frame {frame:?}");
        }
    }
}

/// A frame identity as the core writes one: 16 lower-case hex digits.
fn is_frame_id(text: &str) -> bool {
    text.len() == 16
        && text
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

fn check_plan(p: &Plan, limit: usize) {
    assert!(
        p.received <= limit,
        "{} readings planned past the limit {limit}",
        p.received
    );
    let planned: usize = p.devices.iter().map(|d| d.readings.len()).sum();
    assert_eq!(
        p.received,
        planned + p.rejected.len(),
        "received = planned + rejected"
    );
    let mut indices = vec![false; p.received];
    let mut mark = |i: usize| {
        assert!(i < p.received, "index {i} of {} readings", p.received);
        assert!(!std::mem::replace(&mut indices[i], true), "index {i} twice");
    };
    let mut devices = HashSet::new();
    for group in &p.devices {
        assert!(
            devices.insert(group.device_id.as_str()),
            "device {:?} grouped twice",
            group.device_id
        );
        assert!(!group.readings.is_empty(), "an empty group");
        check_device_id(&group.device_id).expect("a planned device id is valid");
        assert_eq!(
            canonical_device_id(Cow::Borrowed(&group.device_id)),
            group.device_id,
            "a planned device id is canonical"
        );
        assert!(
            group.readings.windows(2).all(|w| w[0].index < w[1].index),
            "group out of request order"
        );
        for r in &group.readings {
            mark(r.index);
            assert!(
                r.seq.unsigned_abs() <= MAX_SAFE_SEQ as u64,
                "seq {} out of range",
                r.seq
            );
            assert!(
                (MIN_MICROS..=MAX_MICROS).contains(&r.ts),
                "ts {} out of range",
                r.ts
            );
            assert!(
                (0.0..=100.0).contains(&r.fill_pct) && r.fill_pct.is_sign_positive(),
                "fill_pct {:?}",
                r.fill_pct
            );
            let reading = Reading {
                device_id: Cow::Borrowed(&group.device_id),
                seq: r.seq,
                ts: r.ts,
                fill_pct: r.fill_pct,
            };
            assert_eq!(
                idempotency_key(&reading),
                r.key,
                "key re-derived from the reading"
            );
            let parts = parse_key(&r.key).expect("a planned key parses");
            assert_eq!(
                (parts.device_id, parts.seq),
                (group.device_id.as_str(), r.seq)
            );
            // The same four values, given to the core as raw scalars, validate to the
            // same reading and key (`ts` as the text the key hashed).
            let raw = RawReading {
                is_object: true,
                repeated: None,
                device_id: Some(Scalar::Str(Cow::Borrowed(&group.device_id))),
                seq: Some(Scalar::Int(r.seq)),
                ts: Some(Scalar::Str(Cow::Owned(isoformat(r.ts)))),
                fill_pct: Some(Scalar::Float(r.fill_pct)),
            };
            let again = validate(raw).expect("a planned reading validates again");
            assert_eq!(again, reading, "validated again to the same reading");
        }
    }
    for refused in &p.rejected {
        mark(refused.rejection.index);
        assert!(!refused.rejection.code.is_empty() && !refused.rejection.message.is_empty());
        if let Some(id) = &refused.device_id {
            check_device_id(id).expect("a rejection names only a valid device");
        }
    }
    assert!(p
        .rejected
        .windows(2)
        .all(|w| w[0].rejection.index < w[1].rejection.index));
    // The worker's next step: each device's keys admitted by its own deduplicator.
    for group in &p.devices {
        let keys: Vec<&str> = group.readings.iter().map(|r| r.key.as_str()).collect();
        let refused = p
            .rejected
            .iter()
            .filter(|r| r.device_id.as_deref() == Some(group.device_id.as_str()))
            .count();
        let out = Deduplicator::default()
            .admit_keys(&keys.join("\n"), T0, refused)
            .unwrap_or_else(|e| panic!("admit_keys refused planned keys {keys:?}: {e:?}"));
        assert_eq!(out.verdicts.len(), keys.len());
        let counts = out.audit.payload;
        assert!(counts.reconciles(), "{counts:?}");
        assert_eq!(
            (counts.received, counts.rejected),
            (keys.len() + refused, refused)
        );
    }
    let json: serde_json::Value =
        serde_json::from_str(&p.to_json()).expect("the plan's JSON parses");
    assert_eq!(json["received"], p.received, "the plan's JSON");
}

/// A plan's raw payload: only where the module docs say, and well formed.
fn check_raw(format: Format, p: &Plan, raw: &RawUplink) {
    assert!(
        format != Format::Readings && !p.ignored,
        "raw on {format:?}"
    );
    assert!(p.devices.is_empty(), "raw beside planned readings");
    assert!(!p.rejected.is_empty(), "raw without a rejection");
    for r in &p.rejected {
        assert_eq!(r.rejection.code, "missing_fill_pct", "raw beside {r:?}");
        assert_eq!(r.device_id.as_deref(), Some(raw.device_id.as_str()));
    }
    check_device_id(&raw.device_id).expect("raw names a valid device");
    assert!(
        (1..=MAX_PAYLOAD_BYTES).contains(&raw.payload.len()),
        "payload of {} bytes",
        raw.payload.len()
    );
    assert!((1..=255).contains(&raw.f_port), "f_port {}", raw.f_port);
    assert!(is_frame_id(&raw.frame), "frame {:?}", raw.frame);
    assert!(
        (0..=i64::from(u32::MAX)).contains(&raw.f_cnt),
        "f_cnt {}",
        raw.f_cnt
    );
    assert!(
        (MIN_MICROS..=MAX_MICROS).contains(&raw.received_at),
        "received_at {}",
        raw.received_at
    );
    if let Some(id) = raw.codec_hint {
        assert!(Codec::IDS.contains(&id), "codec_hint {id:?}");
        assert!(
            matches!(format, Format::Tts | Format::ChirpStack),
            "a codec hint from {format:?}"
        );
    }
    let hint = raw.config_hint;
    for (value, (min, max)) in [
        (hint.bin_depth_mm, BIN_DEPTH_MM),
        (hint.offset_mm, OFFSET_MM),
        (hint.reporting_period_s, REPORTING_PERIOD_S),
    ] {
        if let Some(v) = value {
            assert!(
                format == Format::ChirpStack,
                "a config hint from {format:?}"
            );
            assert!(
                (min..=max).contains(&v),
                "config hint {v} outside {min}..={max}"
            );
        }
    }
    let json: serde_json::Value = serde_json::from_str(&p.to_json()).expect("JSON");
    assert_eq!(
        json["raw"]["payload"],
        serde_json::json!(raw.payload),
        "the plan's JSON: the payload's bytes as numbers"
    );
}
