#!/usr/bin/env bash
# npm run fuzz: runs each cargo-fuzz target (fuzz/fuzz_targets/) for a bounded time,
# one at a time, one process each. Installs the nightly toolchain and cargo-fuzz
# first when missing (seconds when present), and writes the seed corpora
# (fuzz/src/seeds.rs) into fuzz/corpus/<target>/ beside what earlier runs found.
#
#   FUZZ_SECONDS=600 npm run fuzz          # 10 minutes a target (default 60)
#   bash scripts/fuzz.sh snapshot seen_ops # only these targets
#   FUZZ_SANITIZER=address npm run fuzz    # with ASan (default none: the crate
#                                          # has no unsafe code; twice the speed)
#
# A crash leaves its input in fuzz/artifacts/<target>/; the run goes on with the
# next target and exits non-zero at the end. Reproduce one with
#   cd fuzz && cargo +nightly fuzz run <target> artifacts/<target>/crash-…
# and, once fixed, copy the input to fuzz/regressions/<target>/ (replayed on stable
# by `cargo test --manifest-path fuzz/Cargo.toml --no-default-features`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"

seconds="${FUZZ_SECONDS:-60}"
sanitizer="${FUZZ_SANITIZER:-none}"
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "FUZZ_SECONDS must be a whole number of seconds" >&2; exit 2; }
all=(uplink reading snapshot seen_ops codec)
targets=("${@:-${all[@]}}")

command -v rustup >/dev/null 2>&1 || { echo "rustup not found" >&2; exit 1; }
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  echo "installing: rust nightly toolchain"
  rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "installing: cargo-fuzz"
  cargo install cargo-fuzz --locked
fi
echo "ok: $(rustup run nightly rustc --version), $(cargo fuzz --version)"

cd fuzz
cargo run --quiet --no-default-features --example seeds -- corpus

failed=()
summary=()
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t" logs
  log="logs/$t.log"
  echo "==> fuzz $t for ${seconds}s (log: fuzz/$log)"
  # --debug-assertions: integer overflow panics, as in `cargo test`.
  if cargo +nightly fuzz run --debug-assertions --sanitizer "$sanitizer" "$t" "corpus/$t" -- \
      -max_total_time="$seconds" -timeout=10 -print_final_stats=1 >"$log" 2>&1; then
    status="0 crashes"
  else
    status="FAILED (see fuzz/$log and fuzz/artifacts/$t/)"
    failed+=("$t")
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  line="$t: ${seconds}s, ${runs:-?} runs, ${cov:-cov: ?}, corpus $(ls "corpus/$t" | wc -l) inputs, $status"
  summary+=("$line")
  echo "$line"
done

printf '\n%s\n' "${summary[@]}"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "crashed: ${failed[*]}" >&2
  exit 1
fi
