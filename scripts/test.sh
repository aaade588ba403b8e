#!/usr/bin/env bash
# Full check, in order: format, lint, native tests, browser tests, build, type check
# of the generated .d.ts, JS tests.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
# node_modules/.bin first: wasm-pack must use npm binaryen's wasm-opt, not /usr/bin.
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
# wasm-bindgen-test-runner drives Debian's chromium and firefox-esr through these
# drivers, with the capabilities in ./webdriver.json.
export CHROMEDRIVER="${CHROMEDRIVER:-$(command -v chromedriver)}"
export GECKODRIVER="${GECKODRIVER:-$(command -v geckodriver)}"

step() { printf '\n==> %s\n' "$*"; "$@"; }
step cargo fmt --all -- --check
step cargo clippy --all-targets -- -D warnings
step cargo clippy --all-targets --target wasm32-unknown-unknown -- -D warnings
step cargo test
# The API docs build without a broken or private link.
step env RUSTDOCFLAGS='-D warnings' cargo doc --no-deps --quiet
# The fuzz targets' properties (fuzz/src/), replayed on stable over the seed corpora,
# fuzz/regressions/ and seeded pseudo-random inputs; `npm run fuzz` runs libFuzzer.
step cargo fmt --manifest-path fuzz/Cargo.toml -- --check
step cargo clippy --manifest-path fuzz/Cargo.toml --no-default-features --all-targets -- -D warnings
step cargo test --manifest-path fuzz/Cargo.toml --no-default-features
step wasm-pack test --headless --chrome
step wasm-pack test --headless --firefox
step npm run --silent build   # the JS tests load pkg/
step npx tsc -p tests/types   # real use of the API against the generated pkg/*.d.ts
step node --test tests/js/
step node --test --test-concurrency=1 tests/worker/   # the worker in workerd (Miniflare)
step node --test tests/demo/   # the demo page (www/): its modules in Node, the page in headless Chromium
step node --test tests/e2e/   # signing in to /v1 and the packed npm package, in headless Chromium
