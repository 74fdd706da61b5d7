#!/usr/bin/env bash
# Every test, in three layers (each prints its runner's own summary):
#   1. cargo test, natively: the pure core (codec)
#   2. wasm-bindgen-test: the engine in Node (memory) and in a dedicated
#      worker in headless Chromium (OPFS)
#   3. e2e: the packed npm package, imported by a page, in Chromium
#      (Playwright) and then Firefox ESR (Puppeteer, WebDriver BiDi); each
#      engine's counts are printed (RESQ_ENGINES=chromium: Chromium only)
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

# Runs the e2e layer in engine $1. The terminal gets the runner's usual
# report (spec on a terminal, TAP otherwise); a TAP copy goes to file $2.
e2e() {
  local usual=tap
  [ -t 1 ] && usual=spec
  RESQ_ENGINE="$1" node --test --test-concurrency=1 \
    --test-reporter="$usual" --test-reporter-destination=stdout \
    --test-reporter=tap --test-reporter-destination="$2" tests/e2e/
}
# "<engine>: N passed, N failed, N skipped", from the TAP summary in file $2.
counts() {
  awk -v engine="$1" '/^# (pass|fail|skipped) [0-9]+$/ { n[$2] = $3 }
    END { printf "%s: %d passed, %d failed, %d skipped\n", engine, n["pass"], n["fail"], n["skipped"] }' "$2"
}
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# Engines for the e2e layer, both by default; RESQ_ENGINES=chromium (or
# firefox) runs one. Both always run, so one engine's failure does not
# hide the other's result.
engines="${RESQ_ENGINES:-chromium firefox}"
rc=0
for engine in $engines; do
  echo "== 3/3 e2e: the packed package in $engine"
  e2e "$engine" "$logs/$engine" || rc=1
done
echo "== e2e, per engine"
for engine in $engines; do counts "$engine" "$logs/$engine"; done
exit $rc
