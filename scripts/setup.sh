#!/usr/bin/env bash
# Idempotent tool setup for reconnect-dedupe. A no-op (seconds) when everything
# is already present; on a fresh Debian machine it installs what is missing.
#
#   bash scripts/setup.sh build   what building and running need (npm run build, and so
#                                 npm start, serve:workerd, demo): the wasm target,
#                                 wasm-bindgen-cli, wasm-pack, the npm packages
#   bash scripts/setup.sh         all of it: that, and what npm test needs besides
#                                 (rustfmt, clippy, Chromium, Firefox ESR, their
#                                 drivers, python3, promtool)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$HOME/.cargo/bin:$PATH"
case "${1:-all}" in
  build) all=false ;;
  all) all=true ;;
  *) printf 'usage: bash scripts/setup.sh [build]\n' >&2; exit 2 ;;
esac

ok()   { printf 'ok: %s\n' "$*"; }
doing() { printf 'installing: %s\n' "$*"; }
die()  { printf 'error: %s\n' "$*" >&2; exit 1; }
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else die "need root (or sudo) to run: $*"; fi
}

# --- Rust: wasm target and the components `npm test` uses -------------------
command -v rustup >/dev/null 2>&1 || die "rustup not found; install it from https://rustup.rs"
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  doing "rust target wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi
ok "rust target wasm32-unknown-unknown ($(rustc --version | cut -d' ' -f2))"
if $all; then
  for comp in rustfmt clippy; do
    if ! rustup component list --installed | grep -q "^$comp"; then
      doing "rust component $comp"
      rustup component add "$comp"
    fi
  done
  ok "rustfmt, clippy"
fi

# --- wasm-bindgen-cli: must match the wasm-bindgen version in Cargo.lock -----
wb_want=$(awk '$0 == "name = \"wasm-bindgen\"" { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
[ -n "$wb_want" ] || die "could not find wasm-bindgen in Cargo.lock"
wb_have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ "$wb_have" != "$wb_want" ]; then
  doing "wasm-bindgen-cli $wb_want (found: ${wb_have:-none})"
  # --locked can fail when the registry mirror lacks a pinned dependency
  # (seen: webpki-roots); fall back to a fresh resolution.
  cargo install wasm-bindgen-cli --version "$wb_want" --force --locked \
    || cargo install wasm-bindgen-cli --version "$wb_want" --force
fi
ok "wasm-bindgen $wb_want"

# --- wasm-pack: any recent version -------------------------------------------
if ! command -v wasm-pack >/dev/null 2>&1; then
  doing "wasm-pack"
  cargo install wasm-pack --locked || cargo install wasm-pack
fi
ok "$(wasm-pack --version)"

# --- Debian packages: headless browser and its driver --------------------------
# binary -> Debian package: the two headless browsers of the wasm-bindgen tests
# (Chromium and Firefox ESR), python3 (the worker tests that inject SQLite faults) and
# promtool, in Debian's prometheus package (the alert rules' checks and unit tests,
# tests/worker/metrics-queries.test.mjs).
# wasm-opt comes from npm, see below: Debian's binaryen 108 exports the wrong table
# as __wbindgen_externrefs.
if $all; then
  declare -A apt_pkg=([chromium]=chromium [chromedriver]=chromium-driver [firefox-esr]=firefox-esr [python3]=python3 [promtool]=prometheus)
  missing=()
  for bin in "${!apt_pkg[@]}"; do
    command -v "$bin" >/dev/null 2>&1 || missing+=("${apt_pkg[$bin]}")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    command -v apt-get >/dev/null 2>&1 || die "missing ${missing[*]} and no apt-get; install them by hand"
    doing "apt packages ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
    # The package starts a Prometheus server (port 9090) where systemd runs; the
    # tests need only its promtool, so a server installed here is not left running.
    if [[ " ${missing[*]} " == *" prometheus "* ]] && [ -d /run/systemd/system ]; then
      as_root systemctl disable --now prometheus.service || true
    fi
  fi
  ok "chromium $(chromium --version 2>/dev/null | awk '{print $2}'), chromedriver, $(firefox-esr --version 2>/dev/null)"
  ok "$(promtool --version 2>/dev/null | head -1)"

  # --- geckodriver: Firefox's WebDriver, not packaged by Debian 12 ----------------
  if ! command -v geckodriver >/dev/null 2>&1; then
    doing "geckodriver (cargo install, about 3 minutes)"
    cargo install geckodriver --locked || cargo install geckodriver
  fi
  ok "$(geckodriver --version | head -1)"
fi

# --- Node dependencies ---------------------------------------------------------
# The oldest Node is package.json's `engines.node` (">=MAJOR.MINOR"), read, not restated.
node_min=$(node -p 'require("./package.json").engines.node.replace(">=", "")' 2>/dev/null) \
  || die "node/npm not found (need the node of package.json engines)"
command -v npm >/dev/null 2>&1 || die "npm not found (need node >= $node_min)"
node -e 'const [a, b] = process.versions.node.split(".").map(Number); const [x, y] = process.argv[1].split(".").map(Number); process.exit(a > x || (a === x && b >= y) ? 0 : 1)' "$node_min" \
  || die "node >= $node_min required (package.json engines), found $(node --version)"
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  doing "npm ci"
  npm ci --no-audit --no-fund
fi
ok "node $(node --version), node_modules"
# npm puts node_modules/.bin first on PATH, so wasm-pack picks this wasm-opt.
ok "wasm-opt $(node_modules/.bin/wasm-opt --version | awk '{print $3}') (npm binaryen)"
