#!/usr/bin/env bash
# Every test, in three layers (each prints its runner's own summary):
#   1. cargo test, natively: the pure core (codec)
#   2. wasm-bindgen-test: the engine in Node (memory) and in a dedicated
#      worker in headless Chromium (OPFS)
#   3. Playwright: the packed npm package, imported by a page in Chromium
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/build.sh

echo "== 1/3 native: cargo test (codec core)"
cargo test

echo "== 2/3 wasm: engine in Node"
cargo test --target wasm32-unknown-unknown --test node

echo "== 2/3 wasm: engine in a dedicated worker in headless Chromium (OPFS)"
CHROMEDRIVER=/usr/bin/chromedriver cargo test --target wasm32-unknown-unknown --test browser

echo "== 3/3 e2e: the packed package in Chromium (Playwright)"
node --test --test-concurrency=1 tests/e2e/
