//! Criterion benches of the native core (`cargo bench`): key derivation, seen-set
//! insert and lookup at 1 k / 100 k / 1 M keys, and whole bursts through
//! `Deduplicator::process_json`, and a device's sequence window (`SeqWindow::observe`,
//! its bytes). Seeded data; throughput in elements (readings, keys, seqs).
//! Short measurement times keep a full run at a few minutes on two cores.

//! The benches are native only: criterion does not build for wasm32, where this file
//! (compiled by `cargo clippy --all-targets --target wasm32-unknown-unknown`) is empty.

fn main() {
    #[cfg(not(target_arch = "wasm32"))]
    {
        native::all();
        criterion::Criterion::default()
            .configure_from_args()
            .final_summary();
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use criterion::measurement::WallTime;
    use criterion::{criterion_group, BatchSize, BenchmarkGroup, Criterion, Throughput};
    use fastrand::Rng;
    use reconnect_dedupe::key::content_digest;
    use reconnect_dedupe::{
        idempotency_key, parse_reading, Config, Deduplicator, Fingerprint, Reading, SeenSet,
        SeqWindow,
    };
    use std::hint::black_box;
    use std::time::Duration;

    const NOW: i64 = 1_784_192_400_000; // 2026-07-16T09:00:00Z
    const TTL_MS: u64 = 31 * 24 * 3600 * 1000; // nothing expires during a bench

    /// One reading as JSON, in the shapes devices send (whole seconds, milliseconds,
    /// nanoseconds, an offset; one-decimal, integral and full-double fill levels).
    fn reading_json(rng: &mut Rng, device: u64, seq: u64) -> String {
        let sec = rng.u64(..86_400);
        let (h, m, s) = (sec / 3600, sec / 60 % 60, sec % 60);
        let ts = match rng.u64(..4) {
            0 => format!("2026-07-16T{h:02}:{m:02}:{s:02}Z"),
            1 => format!("2026-07-16T{h:02}:{m:02}:{s:02}.{:03}Z", rng.u64(..1000)),
            2 => format!(
                "2026-07-16T{h:02}:{m:02}:{s:02}.{:09}Z",
                rng.u64(..1_000_000_000)
            ),
            _ => format!("2026-07-16T{h:02}:{m:02}:{s:02}+02:00"),
        };
        let fill = match rng.u64(..10) {
            0..=5 => format!("{:.1}", rng.u64(..1001) as f64 / 10.0),
            6..=8 => format!("{}", rng.u64(..101)),
            _ => format!("{:?}", rng.f64() * 100.0),
        };
        format!(
            r#"{{"device_id":"bin-{device:05}","seq":{seq},"ts":"{ts}","fill_pct":{fill},"rssi":-97}}"#
        )
    }

    /// Bursts of 1–100 readings from 20 000 devices, about 30 % of them replays of a
    /// reading already sent.
    fn workload(seed: u64, readings: usize) -> Vec<String> {
        let mut rng = Rng::with_seed(seed);
        let mut seqs = vec![0u64; 20_000];
        let mut sent: Vec<String> = Vec::new();
        let mut bursts = Vec::new();
        let mut total = 0;
        while total < readings {
            let size = rng.usize(1..=100).min(readings - total);
            let mut parts = Vec::with_capacity(size);
            for _ in 0..size {
                if !sent.is_empty() && rng.u64(..10) < 3 {
                    let back = rng.usize(..sent.len().min(5000));
                    parts.push(sent[sent.len() - 1 - back].clone());
                } else {
                    let device = rng.u64(..20_000);
                    seqs[device as usize] += 1;
                    let r = reading_json(&mut rng, device, seqs[device as usize]);
                    sent.push(r.clone());
                    parts.push(r);
                }
            }
            total += size;
            bursts.push(format!("[{}]", parts.join(",")));
        }
        bursts
    }

    fn key_derivation(c: &mut Criterion) {
        let mut rng = Rng::with_seed(1);
        let texts: Vec<String> = (0..1000)
            .map(|i| reading_json(&mut rng, i % 97, i))
            .collect();
        let readings: Vec<Reading> = texts.iter().map(|t| parse_reading(t).unwrap()).collect();
        let mut g = c.benchmark_group("key");
        g.throughput(Throughput::Elements(readings.len() as u64));
        g.bench_function("content_digest", |b| {
            let mut scratch = String::new();
            b.iter(|| {
                readings.iter().fold(0u64, |acc, r| {
                    acc ^ content_digest(black_box(r), &mut scratch)
                })
            })
        });
        g.bench_function("idempotency_key", |b| {
            b.iter(|| {
                readings
                    .iter()
                    .map(|r| idempotency_key(black_box(r)).len())
                    .sum::<usize>()
            })
        });
        g.bench_function("parse_reading+idempotency_key", |b| {
            b.iter(|| {
                texts
                    .iter()
                    .map(|t| idempotency_key(&parse_reading(black_box(t)).unwrap()).len())
                    .sum::<usize>()
            })
        });
        g.finish();
    }

    /// The fingerprint of `device_id`, `seq` and a digest (SipHash-2-4-128 of
    /// `device_id ‖ seq`, `siphasher`), for ids in the workload's two shapes. In the
    /// run before the switch (docs/benchmarks.md) this group compared the hand-written
    /// SipHash with `siphasher`.
    fn fingerprint_hash(c: &mut Criterion) {
        let mut rng = Rng::with_seed(3);
        let ids: Vec<(String, i64)> = (0..1000)
            .map(|i| {
                let id = if i % 2 == 0 {
                    format!("bin-{:05}", rng.u64(..20_000))
                } else {
                    format!("{:016X}", rng.u64(..))
                };
                (id, rng.u64(..1 << 20) as i64)
            })
            .collect();
        let mut set = SeenSet::new(Config::default());
        let mut g = c.benchmark_group("fingerprint_hash");
        g.throughput(Throughput::Elements(ids.len() as u64));
        g.bench_function("seen_set_fingerprint", |b| {
            b.iter(|| {
                ids.iter().fold(0u64, |acc, (id, seq)| {
                    acc ^ set.fingerprint(black_box(id), *seq, 0).unwrap().id
                })
            })
        });
        g.finish();
    }

    /// The `i`-th fingerprint of a seeded sequence (distinct for distinct `i`).
    fn fingerprint(seed: u64, i: u64) -> Fingerprint {
        let mut rng = Rng::with_seed(seed ^ i.wrapping_mul(0x2545_f491_4f6c_dd1d));
        Fingerprint {
            id: rng.u64(..) >> 2,
            tag: rng.u64(..),
        }
    }

    /// A set of `n` keys at its cap `n`.
    fn full_set(n: usize) -> SeenSet {
        let mut s = SeenSet::new(Config::new(TTL_MS, n).unwrap());
        for i in 0..n as u64 {
            s.check_and_add(fingerprint(7, i), NOW, None, 0);
        }
        s
    }

    /// Held keys at `now`: the duplicate path of check_and_add, and the read-only
    /// contains of as many absent keys.
    fn lookups(
        g: &mut BenchmarkGroup<'_, WallTime>,
        set: &mut SeenSet,
        held: &[Fingerprint],
        now: i64,
    ) {
        g.bench_function("lookup_duplicate", |b| {
            b.iter(|| {
                for &f in held {
                    black_box(set.check_and_add(f, now, None, 0));
                }
            })
        });
        let absent: Vec<Fingerprint> = (0..held.len() as u64).map(|i| fingerprint(99, i)).collect();
        g.bench_function("contains_absent", |b| {
            b.iter(|| absent.iter().filter(|&&f| set.contains(f, now)).count())
        });
    }

    fn seen_set(c: &mut Criterion) {
        const BATCH: u64 = 1000;
        for n in [1_000, 100_000, 1_000_000] {
            let mut g = c.benchmark_group(format!("seen_set/{n}_keys"));
            g.throughput(Throughput::Elements(BATCH));
            let mut set = full_set(n);
            // New keys into a full set: each admission also evicts the oldest.
            let mut next = n as u64;
            g.bench_function("insert_evict", |b| {
                b.iter(|| {
                    for _ in 0..BATCH {
                        black_box(set.check_and_add(fingerprint(7, next), NOW, None, 0));
                        next += 1;
                    }
                })
            });
            let held: Vec<Fingerprint> = (0..BATCH)
                .map(|i| fingerprint(7, next - 1 - i * (n as u64 / BATCH)))
                .collect();
            lookups(&mut g, &mut set, &held, NOW);
            g.finish();
        }
        // Per-device sets (default cap, a few keys held): a rolling window where each
        // admission expires the oldest key, then lookups. Up to `SCAN_MAX` (48) held
        // entries a lookup scans the ring; past it, the table answers.
        for n in [8u64, 32, 48, 49, 64] {
            let mut g = c.benchmark_group(format!("seen_set/device_{n}_keys"));
            g.throughput(Throughput::Elements(BATCH));
            let mut set = SeenSet::new(Config::new(n, 100_000).unwrap());
            let mut next = 0;
            let mut roll = |set: &mut SeenSet, count: u64| {
                for _ in 0..count {
                    black_box(set.check_and_add(fingerprint(7, next), NOW + next as i64, None, 0));
                    next += 1;
                }
            };
            roll(&mut set, n);
            g.bench_function("insert_expire", |b| b.iter(|| roll(&mut set, BATCH)));
            let now = NOW + next as i64 - 1;
            let held: Vec<Fingerprint> = (0..BATCH)
                .map(|i| fingerprint(7, next - 1 - i % n))
                .collect();
            lookups(&mut g, &mut set, &held, now);
            g.finish();
        }
        let mut g = c.benchmark_group("seen_set/fill");
        g.throughput(Throughput::Elements(100_000));
        g.bench_function("100k_keys_from_empty", |b| {
            b.iter(|| full_set(100_000).stats().keys)
        });
        g.finish();
    }

    fn bursts(c: &mut Criterion) {
        let stream = workload(20260716, 20_000);
        let count: usize = stream
            .iter()
            .map(|b| {
                serde_json::from_str::<Vec<serde_json::Value>>(b)
                    .unwrap()
                    .len()
            })
            .sum();
        let mut g = c.benchmark_group("process_json");
        g.throughput(Throughput::Elements(count as u64));
        g.bench_function("workload_20k_readings_30pct_replayed", |b| {
            b.iter_batched(
                || Deduplicator::new(Config::new(3_600_000, 100_000).unwrap()),
                |mut d| {
                    for (i, body) in stream.iter().enumerate() {
                        let out =
                            d.process_json(body.as_bytes(), (NOW + i as i64 * 1000) as f64, false);
                        black_box(out.unwrap().to_json());
                    }
                },
                BatchSize::LargeInput,
            )
        });
        g.finish();
    }

    /// The body parse of `parseUplink`: the workload's native bursts, and webhooks
    /// (the with-fill fixtures, each a whole request of one or two readings).
    fn uplink_plans(c: &mut Criterion) {
        use reconnect_dedupe::uplink::{plan, FieldNames, Format};
        let names = FieldNames::default();
        let stream = workload(20260716, 20_000);
        let count: usize = stream
            .iter()
            .map(|b| {
                plan(Format::Readings, b.as_bytes(), &names, 100)
                    .unwrap()
                    .received
            })
            .sum();
        let mut g = c.benchmark_group("plan");
        g.throughput(Throughput::Elements(count as u64));
        g.bench_function("native_workload_20k_readings", |b| {
            b.iter(|| {
                for body in &stream {
                    black_box(plan(Format::Readings, body.as_bytes(), &names, 100).unwrap());
                }
            })
        });
        let webhooks = [
            (
                Format::Tts,
                "ttn",
                include_str!("../tests/fixtures/webhooks/with-fill/tts-v3-uplink.json"),
            ),
            (
                Format::ChirpStack,
                "chirpstack",
                include_str!("../tests/fixtures/webhooks/with-fill/chirpstack-v4-up.json"),
            ),
        ];
        for (format, name, body) in webhooks {
            g.throughput(Throughput::Elements(1));
            g.bench_function(format!("{name}_webhook_request"), |b| {
                b.iter(|| black_box(plan(format, black_box(body.as_bytes()), &names, 100).unwrap()))
            });
        }
        g.finish();
    }

    /// One device's seqs, 10 000 of them in one of three shapes: in order; with about
    /// one in 10 lost (each loss opens a gap); and with those losses delivered 50 seqs
    /// late (each closes a gap: a replayed buffer).
    fn seq_stream(shape: &str) -> Vec<i64> {
        let mut rng = Rng::with_seed(12);
        let mut out = Vec::new();
        let mut late: Vec<i64> = Vec::new();
        for seq in 1_000_000..1_010_000 {
            let lost = shape != "in_order" && rng.u64(..10) == 0;
            if !lost {
                out.push(seq);
            } else if shape == "late_arrivals" {
                late.push(seq);
            }
            if late.first().is_some_and(|&s| seq - s >= 50) {
                out.push(late.remove(0));
            }
        }
        out
    }

    fn seq_window(c: &mut Criterion) {
        let mut g = c.benchmark_group("seq_window");
        for shape in ["in_order", "with_gaps", "late_arrivals"] {
            let seqs = seq_stream(shape);
            g.throughput(Throughput::Elements(seqs.len() as u64));
            g.bench_function(format!("observe_{shape}"), |b| {
                b.iter_batched_ref(
                    SeqWindow::new,
                    |w| {
                        for (i, &s) in seqs.iter().enumerate() {
                            black_box(w.observe(s, (NOW + i as i64 * 60_000) as f64).unwrap());
                        }
                    },
                    BatchSize::SmallInput,
                )
            });
        }
        // The bytes of a device in steady state (every word of the ring in use, gaps
        // listed), written and read back as the worker would per uplink.
        let mut w = SeqWindow::new();
        for (i, &s) in seq_stream("with_gaps").iter().enumerate() {
            w.observe(s, (NOW + i as i64 * 60_000) as f64).unwrap();
        }
        let bytes = w.to_bytes();
        g.throughput(Throughput::Elements(1));
        g.bench_function(format!("to_bytes_{}_bytes", bytes.len()), |b| {
            b.iter(|| black_box(&w).to_bytes())
        });
        g.bench_function(format!("from_bytes_{}_bytes", bytes.len()), |b| {
            b.iter(|| SeqWindow::from_bytes(black_box(&bytes)).unwrap())
        });
        g.finish();
    }

    criterion_group! {
        name = all;
        config = Criterion::default()
            .sample_size(10)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2));
        targets = key_derivation, fingerprint_hash, seen_set, bursts, uplink_plans, seq_window
    }
}
