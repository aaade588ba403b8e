//! What every vendor's tests share: the vector files (`tests/vectors/devices/`), hex,
//! a checked decode, and the hostile-bytes sweep (every truncation, every port, seeded
//! random frames); and what the tests of readings share (theirs, and those of
//! `uplink::payload_readings`): a device's config and a frame's metadata.

use super::{decode, Codec, DeviceConfig, FrameMeta, NoReading, Sample, Uplink};
use crate::dedupe::error::Error;
use crate::dedupe::timestamp::parse_rfc3339;
use serde_json::Value;
use std::num::NonZeroU32;

/// A sample with only a distance: a live reading.
pub(super) fn live(distance: Result<u32, NoReading>) -> Sample {
    Sample {
        distance,
        device_time_s: None,
        app_counter: None,
        periods_ago: None,
    }
}

/// One vector of a `tests/vectors/devices/*.json` file.
pub(super) struct Vector {
    pub from: String,
    pub f_port: u32,
    pub bytes: Vec<u8>,
    pub expected: Value,
}

/// The vectors of a device file (`fPort` per vector, else the file's).
pub(super) fn vectors(json: &str) -> Vec<Vector> {
    let file: Value = serde_json::from_str(json).unwrap();
    let port = |v: &Value| v["fPort"].as_u64().map(|p| u32::try_from(p).unwrap());
    let file_port = port(&file).unwrap();
    let list = file["vectors"].as_array().unwrap();
    assert!(!list.is_empty());
    list.iter()
        .map(|v| Vector {
            from: v["from"].as_str().unwrap().to_owned(),
            f_port: port(v).unwrap_or(file_port),
            bytes: hex(v["hex"].as_str().unwrap()),
            expected: v["expected"].clone(),
        })
        .collect()
}

/// Each of a device file's `count` vectors with its decoded uplink (which must be `Ok`).
pub(super) fn decoded(codec: Codec, json: &str, count: usize) -> Vec<(Vector, Uplink)> {
    let vectors = vectors(json);
    assert_eq!(vectors.len(), count);
    vectors
        .into_iter()
        .map(|v| {
            let got = check(codec, v.f_port, &v.bytes);
            let got = got.unwrap_or_else(|e| panic!("{}: {e}", v.from));
            (v, got)
        })
        .collect()
}

/// Bytes of a hex string (white space allowed); panics on bad hex (test input only).
pub(crate) fn hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    assert!(digits.len() % 2 == 0, "odd hex: {text}");
    digits
        .chunks(2)
        .map(|pair| {
            let pair = std::str::from_utf8(pair).unwrap();
            u8::from_str_radix(pair, 16).unwrap_or_else(|_| panic!("bad hex: {text}"))
        })
        .collect()
}

/// A decode that must not panic, and must answer `Ok` (no distance of 0, at most three
/// periods ago) or one of the two codec errors, with a message.
pub(super) fn check(codec: Codec, f_port: u32, bytes: &[u8]) -> Result<Uplink, Error> {
    let got = decode(codec, f_port, bytes);
    match &got {
        Ok(uplink) => {
            for s in &uplink.samples {
                assert_ne!(s.distance, Ok(0), "{codec:?} {f_port} {bytes:02x?}");
                assert!(s.periods_ago.is_none_or(|p| p <= 3));
            }
        }
        Err(e) => assert!(
            matches!(e.code(), "invalid_payload" | "unsupported_port") && !e.to_string().is_empty(),
            "{codec:?} {f_port} {bytes:02x?}: {e}"
        ),
    }
    got
}

/// `frames`, each on `port`.
pub(super) fn at(port: u32, frames: &[Vec<u8>]) -> Vec<(u32, Vec<u8>)> {
    frames.iter().map(|f| (port, f.clone())).collect()
}

/// Every truncation of every frame on its port, every frame and the empty frame on
/// every port 0 ..= 255, and 20 000 seeded random frames of 0 ..= 48 bytes, half on
/// one of the codec's `ports`, half on a random one: all through [`check`].
pub(super) fn hostile(codec: Codec, frames: &[(u32, Vec<u8>)], ports: &[u32], seed: u64) {
    for (port, frame) in frames {
        for end in 0..=frame.len() {
            let _ = check(codec, *port, frame.get(..end).unwrap());
        }
    }
    for any_port in 0..=255 {
        let _ = check(codec, any_port, &[]);
        for (_, frame) in frames {
            let _ = check(codec, any_port, frame);
        }
    }
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut bytes = Vec::with_capacity(48);
    for _ in 0..20_000 {
        bytes.clear();
        bytes.extend((0..rng.usize(0..=48)).map(|_| rng.u8(..)));
        let port = if rng.bool() {
            ports[rng.usize(..ports.len())]
        } else {
            rng.u32(0..=255)
        };
        let _ = check(codec, port, &bytes);
    }
}

/// [`hostile`] over a device file's vectors.
pub(super) fn hostile_vectors(codec: Codec, vectors: &[Vector], ports: &[u32]) {
    let frames: Vec<_> = vectors
        .iter()
        .map(|v| (v.f_port, v.bytes.clone()))
        .collect();
    hostile(codec, &frames, ports, 0x5eed_c0de);
}

/// A device's config: a bin `depth` mm deep, its sensor `offset` mm above the rim,
/// reporting every `period_s` seconds (if given); no codec.
pub(crate) fn config(depth: u32, offset: u32, period_s: Option<u32>) -> DeviceConfig {
    DeviceConfig {
        codec: None,
        bin_depth_mm: NonZeroU32::new(depth).unwrap(),
        offset_mm: offset,
        reporting_period_s: period_s.map(|p| NonZeroU32::new(p).unwrap()),
        application_port: None,
    }
}

/// A frame received at `received_at` (RFC 3339) with frame counter `f_cnt`, no
/// frame identity.
pub(crate) fn meta(received_at: &str, f_cnt: i64) -> FrameMeta {
    FrameMeta {
        received_at: parse_rfc3339(received_at).unwrap(),
        f_cnt,
        frame: None,
    }
}
