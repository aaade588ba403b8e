//! The hand-written code that could be a crate, measured against the crate
//! (`cargo bench --bench handwritten`; docs/benchmarks.md, "Hand-written code
//! against crates"):
//!
//! * `key::write_py_float_repr` (Python's `repr(float)`) against zmij's and ryu's
//!   shortest digits and against `std::fmt`, each with the same Python fix-ups;
//! * `timestamp::parse_rfc3339` and the isoformat writer against `time`, `chrono` and
//!   `jiff`;
//! * `BurstOutcome::to_json` against `serde_json::to_string` on bursts of 1, 10 and
//!   100 readings;
//! * the body reader (`uplink::read_burst`, src/dedupe/json.rs) against serde_json
//!   with the core's `RawBurst` visitor (the path it replaced), on native bursts of
//!   10 and 100 readings.
//!
//! Before anything is timed, every alternative is compared with the code in the
//! library on seeded samples, and the differences are printed: an alternative that is
//! not exact could only replace the library's code with hand-written checks around it.
//! The float and outcome alternatives must be exact, so a difference there stops the
//! bench. Seeded data; throughput in elements (floats, timestamps, readings).

//! The benches are native only: criterion does not build for wasm32, where this file
//! (compiled by `cargo clippy --all-targets --target wasm32-unknown-unknown`) is empty.

fn main() {
    #[cfg(not(target_arch = "wasm32"))]
    {
        native::check_floats();
        native::check_timestamps();
        native::check_outcomes();
        native::check_burst_reads();
        native::all();
        criterion::Criterion::default()
            .configure_from_args()
            .final_summary();
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use criterion::measurement::{Measurement, ValueFormatter, WallTime};
    use criterion::{criterion_group, BenchmarkGroup, Throughput};
    use reconnect_dedupe::key::write_py_float_repr;
    use reconnect_dedupe::timestamp::{
        parse_rfc3339, write_isoformat, Micros, TsError, MAX_MICROS, MIN_MICROS,
    };
    use reconnect_dedupe::uplink::read_burst;
    use reconnect_dedupe::{BurstOutcome, Config, Deduplicator, RawBurst};
    use std::fmt::Write;
    use std::hint::black_box;
    use std::time::Duration;

    type Criterion = criterion::Criterion<OnCpu>;

    /// This thread's own time on a CPU (`CLOCK_THREAD_CPUTIME_ID`), in nanoseconds.
    ///
    /// The two cores are shared with other engineers' builds and benches; wall time
    /// then counts the time a bench waits for a core, which moved figures of the same
    /// code by 2x between runs. Time on the CPU leaves that out (not the other
    /// tenants' effect on caches).
    pub struct OnCpu;

    fn thread_cpu_ns() -> u64 {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `t` is a valid, writable timespec; the clock id is a constant that
        // Linux supports for the calling thread.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
        t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
    }

    impl Measurement for OnCpu {
        type Intermediate = u64;
        type Value = u64;
        fn start(&self) -> u64 {
            thread_cpu_ns()
        }
        fn end(&self, start: u64) -> u64 {
            thread_cpu_ns().saturating_sub(start)
        }
        fn add(&self, a: &u64, b: &u64) -> u64 {
            a + b
        }
        fn zero(&self) -> u64 {
            0
        }
        fn to_f64(&self, v: &u64) -> f64 {
            *v as f64
        }
        fn formatter(&self) -> &dyn ValueFormatter {
            // Nanoseconds, as wall time's are: its formatter prints them.
            static WALL: WallTime = WallTime;
            WALL.formatter()
        }
    }

    /// The seeded generator of the tests and benches.
    type Rng = fastrand::Rng;

    /// Something that appends a value's text, as the library's writers do.
    type Writer<T> = fn(&mut String, T);

    /// How many of `inputs` `alt` writes differently from `lib`, with the first such
    /// text: `", e.g. <alt's> for <lib's>"`.
    fn differences<T: Copy>(inputs: &[T], lib: Writer<T>, alt: Writer<T>) -> (usize, String) {
        let (mut want, mut got) = (String::new(), String::new());
        let mut example = String::new();
        let mut differ = 0;
        for &x in inputs {
            want.clear();
            got.clear();
            lib(&mut want, x);
            alt(&mut got, x);
            if got != want {
                differ += 1;
                if example.is_empty() {
                    example = format!(", e.g. {got:?} for {want:?}");
                }
            }
        }
        (differ, example)
    }

    /// One bench a writer, each writing every input into a reused `String`.
    fn bench_writers<T: Copy>(
        g: &mut BenchmarkGroup<'_, OnCpu>,
        inputs: &[T],
        writers: &[(&str, Writer<T>)],
    ) {
        let mut out = String::with_capacity(64);
        for &(name, write) in writers {
            g.bench_function(name, |b| {
                b.iter(|| {
                    for &x in inputs {
                        out.clear();
                        write(&mut out, black_box(x));
                        black_box(&out);
                    }
                })
            });
        }
    }

    // ---------------------------------------------------------------- floats

    /// zmij's shortest digits (serde_json's float formatter, already in the tree).
    /// From 1e-4 up, zmij already writes what Python writes: `62.5`, `71.0`, `1e+16`.
    fn repr_zmij(out: &mut String, x: f64) {
        let mut buf = zmij::Buffer::new();
        let s = buf.format_finite(x);
        if x == 0.0 || x >= 1e-4 {
            out.push_str(s);
        } else {
            push_small(out, s);
        }
    }

    /// ryu's shortest digits; it writes `1e16` where Python writes `1e+16`.
    fn repr_ryu(out: &mut String, x: f64) {
        let mut buf = ryu::Buffer::new();
        let s = buf.format_finite(x);
        if x == 0.0 || (1e-4..1e16).contains(&x) {
            out.push_str(s);
        } else if x >= 1e16 {
            let (m, e) = s.split_once('e').unwrap_or((s, "0"));
            out.push_str(m);
            out.push_str("e+");
            out.push_str(e);
        } else {
            push_small(out, s);
        }
    }

    /// `format!("{x}")`, and `{x:e}` outside 1e-4 .. 1e16: the library's code without
    /// its whole-tenths path.
    fn repr_std(out: &mut String, x: f64) {
        if x == 0.0 {
            out.push_str("0.0");
        } else if !(1e-4..1e16).contains(&x) {
            let start = out.len();
            let _ = write!(out, "{x:e}");
            let e_at = start + out[start..].find('e').unwrap_or(out.len() - start);
            let exp: i32 = out[e_at + 1..].parse().unwrap_or(0);
            out.truncate(e_at);
            let sign = if exp < 0 { '-' } else { '+' };
            let _ = write!(out, "e{sign}{:02}", exp.unsigned_abs());
        } else {
            let start = out.len();
            let _ = write!(out, "{x}");
            if !out[start..].contains('.') {
                out.push_str(".0");
            }
        }
    }

    /// Python's form of a value below 1e-4 from a shortest-digits text that is either
    /// decimal (`0.000015`) or exponent (`1.5e-7`): `1.5e-05`, `1.5e-07`.
    fn push_small(out: &mut String, s: &str) {
        let exp = if let Some((m, e)) = s.split_once('e') {
            out.push_str(m);
            e.parse::<i32>().unwrap_or(0)
        } else {
            let frac = s.get(2..).unwrap_or("");
            let zeros = frac.bytes().take_while(|&b| b == b'0').count();
            let digits = &frac[zeros..];
            out.push_str(&digits[..1]);
            if digits.len() > 1 {
                out.push('.');
                out.push_str(&digits[1..]);
            }
            -(zeros as i32) - 1
        };
        let _ = write!(out, "e-{:02}", exp.unsigned_abs());
    }

    /// `Some(k)` when `x` is exactly the double nearest `k / 10` (the library's fast
    /// path for one-decimal fill levels; see `key.rs`).
    fn whole_tenths(x: f64) -> Option<u64> {
        let tenths = (x * 10.0).round();
        (x < 1e9 && tenths / 10.0 == x).then_some(tenths as u64)
    }

    fn push_tenths(out: &mut String, tenths: u64) {
        out.push_str(itoa::Buffer::new().format(tenths / 10));
        out.push('.');
        out.push(char::from(b'0' + (tenths % 10) as u8));
    }

    /// Whole tenths by hand, everything else through zmij.
    fn repr_tenths_zmij(out: &mut String, x: f64) {
        match whole_tenths(x) {
            Some(t) if x >= 1e-4 => push_tenths(out, t),
            _ => repr_zmij(out, x),
        }
    }

    /// Whole tenths by hand, everything else through `std::fmt`: the library's code
    /// until 2026-11-30, which breaks exact ties upwards where Python rounds to even.
    fn repr_tenths_std(out: &mut String, x: f64) {
        match whole_tenths(x) {
            Some(t) if x >= 1e-4 => push_tenths(out, t),
            _ => repr_std(out, x),
        }
    }

    const FLOAT_ALTERNATIVES: [(&str, Writer<f64>); 5] = [
        ("zmij + fix-ups", repr_zmij),
        ("whole tenths, else zmij + fix-ups", repr_tenths_zmij),
        ("ryu + fix-ups", repr_ryu),
        ("std fmt + fix-ups", repr_std),
        ("whole tenths, else std fmt + fix-ups", repr_tenths_std),
    ];

    /// Fill levels as devices send them (the mix of benches/core.rs): 60 % one
    /// decimal, 30 % whole percent, 10 % an arbitrary double in 0 .. 100.
    fn fill_mix(seed: u64, n: usize) -> Vec<f64> {
        let mut rng = Rng::with_seed(seed);
        (0..n)
            .map(|_| match rng.u64(..10) {
                0..=5 => rng.u64(..=1000) as f64 / 10.0,
                6..=8 => rng.u64(..=100) as f64,
                _ => rng.f64() * 100.0,
            })
            .collect()
    }

    /// The sample every alternative must print exactly as the library does.
    fn float_sample() -> Vec<f64> {
        let mut rng = Rng::with_seed(20261130);
        let mut xs: Vec<f64> = (0..=1_000_000).map(|k| k as f64 / 10.0).collect();
        xs.extend((0..=100_000).map(|k| k as f64 / 1000.0));
        xs.extend((0..300_000).map(|_| rng.f64() * 100.0));
        // Every magnitude from the smallest subnormal to 100.
        let top = 100f64.to_bits();
        xs.extend((0..300_000).map(|_| f64::from_bits(rng.u64(..=top))));
        // float32 values (payload formatters decode them), where exact ties occur.
        let top32 = u64::from(100f32.to_bits());
        xs.extend((0..300_000).map(|_| f64::from(f32::from_bits(rng.u64(..=top32) as u32))));
        // Around 1e-4 (exponent form below it) and 1e16 (and above it), ulp by ulp.
        for edge in [1e-4f64, 1e16] {
            let b = edge.to_bits();
            xs.extend((b - 5_000..=b + 5_000).map(f64::from_bits));
        }
        xs.extend((0..100_000).map(|_| 10f64.powf(-6.0 + 3.0 * rng.f64())));
        xs.extend((0..100_000).map(|_| f64::from_bits(rng.u64(..=f64::MAX.to_bits()))));
        xs
    }

    /// Prints where each alternative differs from the library on the sample. zmij's
    /// shortest digits must not differ: `key.rs` pins the library to Python's own
    /// `repr` on the values where `std::fmt` does (exact ties, from float32 values).
    pub fn check_floats() {
        let xs = float_sample();
        for (name, alt) in FLOAT_ALTERNATIVES {
            let (differ, example) = differences(&xs, write_py_float_repr, alt);
            println!(
                "float repr: {name}: {differ} of {} values differ from write_py_float_repr{example}",
                xs.len()
            );
            assert!(
                differ == 0 || !name.contains("zmij"),
                "{name} must be exact"
            );
        }
    }

    fn floats(c: &mut Criterion) {
        let inputs = [
            ("mix", fill_mix(1, 4096)),
            ("arbitrary doubles", {
                let mut rng = Rng::with_seed(2);
                (0..4096).map(|_| rng.f64() * 100.0).collect()
            }),
        ];
        let mut writers = vec![("write_py_float_repr", write_py_float_repr as Writer<f64>)];
        writers.extend(FLOAT_ALTERNATIVES);
        for (label, xs) in &inputs {
            let mut g = c.benchmark_group(format!("float_repr/{label}"));
            g.throughput(Throughput::Elements(xs.len() as u64));
            bench_writers(&mut g, xs, &writers);
            g.finish();
        }
    }

    // ------------------------------------------------------------ timestamps

    type Parsed = Result<Micros, ()>;

    /// A parsed instant as the library holds it: whole microseconds (the fraction
    /// truncated, i.e. floored), refused outside years 0001–9999 in UTC.
    fn in_range(nanos: i128) -> Parsed {
        let us = i64::try_from(nanos.div_euclid(1000)).map_err(|_| ())?;
        (MIN_MICROS..=MAX_MICROS)
            .contains(&us)
            .then_some(us)
            .ok_or(())
    }

    fn parse_time(s: &str) -> Parsed {
        use time::format_description::well_known::Rfc3339;
        let t = time::OffsetDateTime::parse(s, &Rfc3339).map_err(|_| ())?;
        in_range(t.unix_timestamp_nanos())
    }

    fn parse_chrono(s: &str) -> Parsed {
        let t = chrono::DateTime::parse_from_rfc3339(s).map_err(|_| ())?;
        // Leap seconds come back as nanoseconds >= 1e9: the next second.
        let ns = i128::from(t.timestamp()) * 1_000_000_000 + i128::from(t.timestamp_subsec_nanos());
        in_range(ns)
    }

    fn parse_jiff(s: &str) -> Parsed {
        let t: jiff::Timestamp = s.parse().map_err(|_| ())?;
        in_range(t.as_nanosecond())
    }

    fn parse_hand(s: &str) -> Parsed {
        parse_rfc3339(s).map_err(|_| ())
    }

    type Parser = fn(&str) -> Parsed;
    const PARSERS: [(&str, Parser); 3] = [
        ("time (Rfc3339)", parse_time),
        ("chrono (parse_from_rfc3339)", parse_chrono),
        ("jiff (Timestamp::from_str)", parse_jiff),
    ];

    /// The strings the library's tests pin (src/dedupe/timestamp.rs) and the README's
    /// rules, with the library's verdict.
    const PINNED: [(&str, Option<TsError>); 33] = {
        use TsError::*;
        [
            ("2026-07-16T09:00:00Z", None),
            ("2026-07-16t09:00:00.000001z", None),
            ("2026-07-16 09:00:00.000000+00:00", None),
            ("2026-07-16T09:00:00.123456789Z", None),
            ("2027-01-01T01:30:00+02:00", None),
            ("2026-12-31T18:00:00-05:30", None),
            ("0001-01-01T00:00:00Z", None),
            ("9999-12-31T23:59:59.999999Z", None),
            ("2028-02-29T00:00:00Z", None),
            ("2026-07-16T09:00:00.1234567891Z", Some(Syntax)),
            ("0001-01-01T00:30:00+01:00", Some(YearOutOfRange)),
            ("9999-12-31T23:30:00-01:00", Some(YearOutOfRange)),
            ("2026-07-16T09:00:00", Some(NoOffset)),
            ("2026-07-16T09:00:00.5", Some(NoOffset)),
            ("2026-02-30T09:00:00Z", Some(OutOfRange)),
            ("2027-02-29T09:00:00Z", Some(OutOfRange)),
            ("2026-07-16T24:00:00Z", Some(OutOfRange)),
            ("2026-07-16T09:60:00Z", Some(OutOfRange)),
            ("2026-07-16T09:00:60Z", Some(OutOfRange)),
            ("2026-12-31T23:59:60Z", Some(OutOfRange)),
            ("2026-07-16T09:00:00+24:00", Some(OutOfRange)),
            ("0000-01-01T00:00:00Z", Some(OutOfRange)),
            ("2026-07-16", Some(Syntax)),
            ("2026-07-16T09:00Z", Some(Syntax)),
            ("2026-07-16T09:00:00.Z", Some(Syntax)),
            ("2026-07-16T09:00:00+0200", Some(Syntax)),
            ("2026-07-16T09:00:00+02", Some(Syntax)),
            ("2026-07-16T09:00:00 Z", Some(Syntax)),
            ("2026-07-16T09:00:00Z ", Some(Syntax)),
            ("2026-7-16T09:00:00Z", Some(Syntax)),
            ("+2026-07-16T09:00:00Z", Some(Syntax)),
            ("20260716T090000Z", Some(Syntax)),
            ("2026-07-16T09:00:00+02:00[Europe/Berlin]", Some(Syntax)),
        ]
    };

    /// A valid timestamp in any of the accepted shapes, years 0001–9999.
    fn random_valid(rng: &mut Rng) -> String {
        let (y, mo) = (1 + rng.u64(..9999), 1 + rng.u64(..12));
        let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
        let dim = match mo {
            2 if leap => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        let d = 1 + rng.u64(..dim);
        let sep = ["T", "t", " "][rng.u64(..3) as usize];
        let (h, mi, s) = (rng.u64(..24), rng.u64(..60), rng.u64(..60));
        let mut ts = format!("{y:04}-{mo:02}-{d:02}{sep}{h:02}:{mi:02}:{s:02}");
        let digits = rng.u64(..10) as usize;
        if digits > 0 {
            let frac = format!("{:09}", rng.u64(..1_000_000_000));
            ts.push('.');
            ts.push_str(&frac[..digits]);
        }
        match rng.u64(..4) {
            0 => ts.push('Z'),
            1 => ts.push('z'),
            _ => {
                let sign = if rng.u64(..2) == 0 { '+' } else { '-' };
                let _ = write!(ts, "{sign}{:02}:{:02}", rng.u64(..24), rng.u64(..60));
            }
        }
        ts
    }

    /// A valid timestamp with one or two characters replaced, deleted or inserted.
    fn random_mutant(rng: &mut Rng) -> String {
        const ALPHABET: &[u8] = b"0123456789-:+.,TtZz 6";
        let mut b = random_valid(rng).into_bytes();
        for _ in 0..1 + rng.u64(..2) {
            let at = rng.u64(..=b.len() as u64) as usize;
            let c = ALPHABET[rng.u64(..ALPHABET.len() as u64) as usize];
            match rng.u64(..3) {
                0 if at < b.len() => b[at] = c,
                1 if at < b.len() => {
                    b.remove(at);
                }
                _ => b.insert(at, c),
            }
        }
        String::from_utf8(b).unwrap_or_default()
    }

    /// Where each crate's plain parse (plus the same UTC year range) differs from
    /// `parse_rfc3339`: printed, not asserted; the crates are not expected to agree.
    pub fn check_timestamps() {
        let mut rng = Rng::with_seed(20261130);
        let valid: Vec<String> = (0..50_000).map(|_| random_valid(&mut rng)).collect();
        let mutants: Vec<String> = (0..50_000).map(|_| random_mutant(&mut rng)).collect();
        for (s, want) in PINNED {
            assert_eq!(parse_rfc3339(s).err(), want, "{s}");
        }
        println!("timestamp parsing: where a crate's plain parse differs from parse_rfc3339");
        for (name, parse) in PARSERS {
            let pinned: Vec<String> = PINNED
                .iter()
                .filter(|(s, _)| parse(s) != parse_hand(s))
                .map(|(s, want)| {
                    let verdict = match want {
                        None => "refuses".to_string(),
                        Some(e) => format!("accepts ({e:?})"),
                    };
                    format!("{verdict} {s:?}")
                })
                .collect();
            // Accepted where the library refuses / refused where it accepts / both
            // accept with other instants, each with its first example.
            let count = |set: &[String]| {
                let mut kinds: [(usize, Option<&String>); 3] = [(0, None); 3];
                for s in set {
                    let kind = match (parse(s), parse_hand(s)) {
                        (a, b) if a == b => continue,
                        (Ok(_), Err(_)) => 0,
                        (Err(_), Ok(_)) => 1,
                        _ => 2,
                    };
                    kinds[kind].0 += 1;
                    kinds[kind].1.get_or_insert(s);
                }
                let [more, fewer, other] = kinds.map(|(n, first)| match first {
                    Some(s) => format!("{n} ({s:?})"),
                    None => "0".into(),
                });
                format!(
                    "{} strings: accepts {more} that the library refuses, refuses {fewer} it \
                     accepts, other instant for {other}",
                    set.len()
                )
            };
            println!(
                "  {name}: {} of {} pinned strings: {}\n    random valid, {}\n    mutated, {}",
                pinned.len(),
                PINNED.len(),
                if pinned.is_empty() {
                    "none".into()
                } else {
                    pinned.join(", ")
                },
                count(&valid),
                count(&mutants),
            );
        }
        println!(
            "  (none of the crates tells a missing offset from other syntax errors, as the \
             library's `has no UTC offset` reason does)"
        );
        check_isoformat();
    }

    // isoformat: Python's `datetime.isoformat()` of a UTC instant.

    fn iso_time(out: &mut String, t: Micros) {
        use time::macros::format_description;
        let whole = format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]+00:00");
        let frac = format_description!(
            "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]+00:00"
        );
        let Ok(dt) = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(t) * 1000) else {
            return;
        };
        let _ = if t.rem_euclid(1_000_000) == 0 {
            dt.format_into(&mut Fmt(out), whole)
        } else {
            dt.format_into(&mut Fmt(out), frac)
        };
    }

    fn iso_chrono(out: &mut String, t: Micros) {
        use chrono::SecondsFormat;
        let Some(dt) = chrono::DateTime::from_timestamp_micros(t) else {
            return;
        };
        let precision = if t.rem_euclid(1_000_000) == 0 {
            SecondsFormat::Secs
        } else {
            SecondsFormat::Micros
        };
        out.push_str(&dt.to_rfc3339_opts(precision, false));
    }

    fn iso_jiff(out: &mut String, t: Micros) {
        use jiff::fmt::temporal::DateTimePrinter;
        let Ok(ts) = jiff::Timestamp::from_microsecond(t) else {
            return;
        };
        let digits = if t.rem_euclid(1_000_000) == 0 { 0 } else { 6 };
        let _ = DateTimePrinter::new()
            .precision(Some(digits))
            .print_timestamp_with_offset(&ts, jiff::tz::Offset::UTC, &mut *out);
    }

    /// `io::Write` into a `String` for time's `format_into` (it writes ASCII only).
    struct Fmt<'a>(&'a mut String);
    impl std::io::Write for Fmt<'_> {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0
                .push_str(std::str::from_utf8(b).map_err(std::io::Error::other)?);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    const ISO_WRITERS: [(&str, Writer<Micros>); 3] = [
        ("time (format_into, 2 descriptions)", iso_time),
        ("chrono (to_rfc3339_opts)", iso_chrono),
        ("jiff (DateTimePrinter)", iso_jiff),
    ];

    fn random_instants(seed: u64, n: usize) -> Vec<Micros> {
        let mut rng = Rng::with_seed(seed);
        let span = (MAX_MICROS - MIN_MICROS) as u64 + 1;
        let mut ts: Vec<Micros> = (0..n)
            .map(|i| {
                let t = MIN_MICROS + rng.u64(..span) as i64;
                if i % 2 == 0 {
                    t - t.rem_euclid(1_000_000)
                } else {
                    t
                }
            })
            .collect();
        ts.extend([MIN_MICROS, MAX_MICROS, -1, 0, 1, 1_784_192_400_000_000]);
        ts
    }

    /// Timestamps as devices send them (the mix of benches/core.rs).
    fn ts_mix(seed: u64, n: usize) -> Vec<String> {
        let mut rng = Rng::with_seed(seed);
        (0..n)
            .map(|_| {
                let sec = rng.u64(..86_400);
                let (h, m, s) = (sec / 3600, sec / 60 % 60, sec % 60);
                match rng.u64(..4) {
                    0 => format!("2026-07-16T{h:02}:{m:02}:{s:02}Z"),
                    1 => format!("2026-07-16T{h:02}:{m:02}:{s:02}.{:03}Z", rng.u64(..1000)),
                    2 => format!(
                        "2026-07-16T{h:02}:{m:02}:{s:02}.{:09}Z",
                        rng.u64(..1_000_000_000)
                    ),
                    _ => format!("2026-07-16T{h:02}:{m:02}:{s:02}+02:00"),
                }
            })
            .collect()
    }

    fn timestamps(c: &mut Criterion) {
        let strings = ts_mix(3, 1024);
        for s in &strings {
            for (name, parse) in PARSERS {
                assert_eq!(parse(s), parse_hand(s), "{name}: {s}");
            }
        }
        let mut g = c.benchmark_group("timestamp/parse");
        g.throughput(Throughput::Elements(strings.len() as u64));
        g.bench_function("parse_rfc3339", |b| {
            b.iter(|| {
                for s in &strings {
                    black_box(parse_rfc3339(black_box(s)).ok());
                }
            })
        });
        for (name, parse) in PARSERS {
            g.bench_function(name, |b| {
                b.iter(|| {
                    for s in &strings {
                        black_box(parse(black_box(s)).ok());
                    }
                })
            });
        }
        g.finish();

        // The instants of the same mix, as the key and the outcome write them.
        let instants: Vec<Micros> = strings
            .iter()
            .filter_map(|s| parse_rfc3339(s).ok())
            .collect();
        let mut g = c.benchmark_group("timestamp/isoformat");
        g.throughput(Throughput::Elements(instants.len() as u64));
        let mut writers = vec![("write_isoformat", write_isoformat as Writer<Micros>)];
        writers.extend(ISO_WRITERS);
        bench_writers(&mut g, &instants, &writers);
        g.finish();
    }

    /// The isoformat writers must all agree with the library; printed either way.
    fn check_isoformat() {
        let instants = random_instants(4, 100_000);
        for (name, write) in ISO_WRITERS {
            let (differ, example) = differences(&instants, write_isoformat, write);
            println!(
                "isoformat: {name}: {differ} of {} instants differ{example}",
                instants.len()
            );
        }
    }

    // -------------------------------------------------------------- outcomes

    const NOW_MS: f64 = 1_784_192_411_204.0; // 2026-07-16T09:00:11.204Z

    /// A burst of `n` readings from up to four devices, a third of them replays of an
    /// earlier reading of the same burst (suppressed), the shapes of benches/core.rs.
    fn burst_body(seed: u64, n: usize) -> Vec<u8> {
        let mut rng = Rng::with_seed(seed);
        let mut readings: Vec<String> = Vec::with_capacity(n);
        let fills = fill_mix(seed, n);
        let stamps = ts_mix(seed, n);
        for i in 0..n {
            if i > 0 && rng.u64(..3) == 0 {
                let again = readings[rng.u64(..i as u64) as usize].clone();
                readings.push(again);
                continue;
            }
            let device = rng.u64(..4);
            readings.push(format!(
                r#"{{"device_id":"bin-{device:05}","seq":{i},"ts":"{}","fill_pct":{:?},"rssi":-97}}"#,
                stamps[i], fills[i]
            ));
        }
        format!("[{}]", readings.join(",")).into_bytes()
    }

    fn outcome(body: &[u8]) -> BurstOutcome<'_> {
        let mut d = Deduplicator::new(Config::default());
        d.process_json(body, NOW_MS, false)
            .unwrap_or_else(|e| panic!("the bench's own burst was refused: {e}"))
    }

    const BURST_SIZES: [usize; 3] = [1, 10, 100];

    pub fn check_outcomes() {
        for n in BURST_SIZES {
            for seed in 0..200 {
                let body = burst_body(seed, n);
                let o = outcome(&body);
                assert_eq!(o.to_json(), serde_json::to_string(&o).unwrap_or_default());
            }
        }
        println!(
            "outcome: to_json = serde_json::to_string on 200 bursts each of 1, 10, 100 readings"
        );
    }

    fn outcomes(c: &mut Criterion) {
        for n in BURST_SIZES {
            let body = burst_body(5, n);
            let o = outcome(&body);
            let mut g = c.benchmark_group(format!("outcome/{n} readings"));
            g.throughput(Throughput::Elements(n as u64));
            g.bench_function("to_json", |b| b.iter(|| black_box(black_box(&o).to_json())));
            g.bench_function("serde_json::to_string", |b| {
                b.iter(|| black_box(serde_json::to_string(black_box(&o)).unwrap_or_default()))
            });
            g.finish();
        }
    }

    // ----------------------------------------------------------- body reader

    /// serde_json with the core's visitor: how `processBurstJson` read bodies before.
    fn serde_read(body: &[u8]) -> Vec<reconnect_dedupe::RawReading<'_>> {
        serde_json::from_slice::<RawBurst>(body).map_or_else(|_| Vec::new(), |b| b.0)
    }

    const READ_SIZES: [usize; 2] = [10, 100];

    pub fn check_burst_reads() {
        for n in READ_SIZES {
            for seed in 0..200 {
                let body = burst_body(seed, n);
                assert_eq!(read_burst(&body).ok().map(|b| b.0), Some(serde_read(&body)));
            }
        }
        println!("body reader: read_burst = serde_json + RawBurst on 200 bursts each of 10, 100 readings");
    }

    fn burst_reads(c: &mut Criterion) {
        for n in READ_SIZES {
            let body = burst_body(7, n);
            let mut g = c.benchmark_group(format!("read/{n} readings"));
            g.throughput(Throughput::Elements(n as u64));
            g.bench_function("uplink::read_burst", |b| {
                b.iter(|| black_box(read_burst(black_box(&body)).map(|r| r.0.len())))
            });
            g.bench_function("serde_json + RawBurst", |b| {
                b.iter(|| black_box(serde_read(black_box(&body)).len()))
            });
            g.finish();
        }
    }

    criterion_group! {
        name = all;
        config = criterion::Criterion::default()
            .with_measurement(OnCpu)
            .sample_size(20)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(3));
        targets = floats, timestamps, outcomes, burst_reads
    }
}
