#!/usr/bin/env bash
# Installs what building and testing need, and only what is missing, so it
# is safe to run before every `npm test` and `npm run demo`:
#   - Debian packages: clang + lld (SQLite → wasm32), chromium + chromedriver
#     (tests, demo, benchmarks), firefox-esr (the e2e tests' second engine),
#     webkit2gtk-driver + xvfb (the third: WebKitGTK, driven by
#     WebKitWebDriver on a virtual display), python3-gi +
#     gir1.2-webkit2-4.1 (the browser it drives, tests/e2e/webkit-browser.py:
#     WebKitGTK with a persistent profile), procps (pkill, for the crash
#     test)
#   - the Rust wasm32 target
#   - wasm-bindgen-cli at exactly the version Cargo.lock pins
#   - npm dev dependencies: typescript, binaryen (wasm-opt), playwright-core
#     (drives Debian's Chromium; it never downloads a browser of its own) and
#     puppeteer-core (drives Debian's Firefox ESR over WebDriver BiDi: the
#     only way to drive stock Firefox here, since Playwright runs only its
#     own patched Firefox build, which cannot be downloaded; it declares
#     Node >= 22.12, npm warns on Node 20, and every e2e test passes with it)
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[setup] %s\n' "$*"; }
has() { command -v "$1" >/dev/null 2>&1; }

sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
missing=()
has clang || missing+=(clang)
has wasm-ld || has lld || missing+=(lld)
has pkill || missing+=(procps)
has chromium || missing+=(chromium)
has chromedriver || missing+=(chromium-driver)
has firefox-esr || missing+=(firefox-esr)
has WebKitWebDriver || missing+=(webkit2gtk-driver)
has Xvfb || missing+=(xvfb)
for pkg in python3-gi gir1.2-webkit2-4.1; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "adding the Rust target wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

want=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
have=$(wasm-bindgen --version 2>/dev/null | awk '{ print $2 }' || true)
if [ "$want" != "$have" ]; then
  say "installing wasm-bindgen-cli $want (have: ${have:-none}); this takes a few minutes"
  # Not --locked: its lock file pins a crate version the registry no longer serves.
  cargo install wasm-bindgen-cli --version "$want"
fi

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "installing npm dev dependencies"
  npm ci --no-audit --no-fund
fi
