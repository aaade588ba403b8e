//! The fuzz targets' properties on stable, in `npm test`: every seed, every
//! committed regression (`regressions/<target>/*`, inputs that once failed), and
//! seeded pseudo-random inputs, half random bytes and half mutated seeds.

use reconnect_dedupe_fuzz::seeds::{check_fn, seeds};
use std::path::Path;

/// Runs `target` over its seeds, its regressions and `random` generated inputs.
fn replay(target: &str, random: usize) {
    let check = check_fn(target).expect("a target");
    let seeds: Vec<Vec<u8>> = seeds(target).into_iter().map(|(_, b)| b).collect();
    assert!(!seeds.is_empty(), "{target} has seeds");
    for seed in &seeds {
        check(seed);
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("regressions")
        .join(target);
    if let Ok(files) = std::fs::read_dir(&dir) {
        for file in files {
            let path = file.expect("a directory entry").path();
            check(&std::fs::read(&path).expect("a regression input"));
        }
    }
    let mut rng = fastrand::Rng::with_seed(0x5eed ^ target.len() as u64);
    for i in 0..random {
        let input = if i % 2 == 0 {
            let n = rng.usize(0..600);
            (0..n).map(|_| rng.u8(..)).collect()
        } else {
            let seed = &seeds[rng.usize(..seeds.len())];
            mutate(&mut rng, seed)
        };
        check(&input);
    }
}

/// A seed with a few bytes flipped, inserted, removed or overwritten.
fn mutate(rng: &mut fastrand::Rng, seed: &[u8]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for _ in 0..rng.usize(1..8) {
        let at = rng.usize(..=v.len());
        match rng.u8(..4) {
            0 if at < v.len() => v[at] ^= 1 << rng.u8(..8),
            1 => v.insert(at, rng.u8(..)),
            2 if at < v.len() => drop(v.remove(at)),
            _ if at < v.len() => v[at] = [0, 1, 0x7f, 0x80, 0xff, b'"', b'9', b'-'][rng.usize(..8)],
            _ => {}
        }
    }
    v
}

#[test]
fn uplink() {
    replay("uplink", 3000);
}

#[test]
fn reading() {
    replay("reading", 5000);
}

#[test]
fn snapshot() {
    replay("snapshot", 3000);
}

#[test]
fn seen_ops() {
    replay("seen_ops", 2000);
}

/// The generated operation sequences reach every outcome the model knows: without
/// this, a model that agreed only on trivial runs would pass unnoticed.
#[test]
fn seen_ops_inputs_reach_every_outcome() {
    use reconnect_dedupe_fuzz::seen_ops::{run, Coverage};
    let mut total = Coverage::default();
    for (_, seed) in seeds("seen_ops") {
        total.add(&run(&seed));
    }
    let mut rng = fastrand::Rng::with_seed(0x5eed);
    for _ in 0..500 {
        let n = rng.usize(0..600);
        let input: Vec<u8> = (0..n).map(|_| rng.u8(..)).collect();
        total.add(&run(&input));
    }
    let c = total;
    for (what, n) in [
        ("admitted", c.admitted),
        ("seq reuses", c.seq_reuses),
        ("duplicates", c.duplicates),
        ("pending hits", c.pending),
        ("expired", c.expired),
        ("evicted", c.evicted),
        ("released", c.released),
        ("confirmed", c.confirmed),
        ("restores", c.restores),
        ("rebuilds", c.rebuilds),
        ("failed calls", c.failed_calls),
    ] {
        assert!(n > 0, "no {what}: {c:?}");
    }
    assert!(c.max_keys_held > 48, "never past the scanning size: {c:?}");
}

#[test]
fn codec() {
    replay("codec", 3000);
}
