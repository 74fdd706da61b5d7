#!/usr/bin/env bash
# Every test, in three layers (each prints its runner's own summary), after
# the formatters and linters (rustfmt, clippy on each build, Biome) and the
# unit tests of the TypeScript's pure logic (tests/unit, seconds, no browser):
#   1. cargo test, natively: the pure core (codec)
#   2. wasm-bindgen-test: the engine in Node (memory) and in a dedicated
#      worker in headless Chromium (OPFS)
#   3. e2e: the packed npm package, imported by a page, in Chromium
#      (Playwright), Firefox ESR (Puppeteer, WebDriver BiDi) and WebKitGTK
#      (WebDriver, tests/e2e/webkit.mjs); in Chromium and Firefox again
#      with IndexedDB storage forced (chromium-idb, firefox-idb: their
#      workers get no OPFS sync access handles, as WebKitGTK's; the files
#      that would do there what they do in the engine's own pass or in
#      WebKitGTK's are left out); and in Node (the package's Node entry,
#      for the test files that need only memory storage).
#      tests/e2e/passes.mjs says which files each pass leaves out, and why;
#      tests/e2e/run.mjs runs them, several at once.
# The closing lines give each phase's time and the total.
set -euo pipefail
cd "$(dirname "$0")/.."

# A phase's heading, with the time since the start: CI has 90 minutes.
# Each phase's time goes into the summary printed at the end.
phases=()
phase_began=
phase_name=
minutes() { echo "$(($1 / 60)) min $(($1 % 60)) s"; }
done_phase() {
  if [ -n "$phase_name" ]; then
    phases+=("$(printf '%14s  %s' "$(minutes $((SECONDS - phase_began)))" "$phase_name")")
  fi
  phase_name=
}
phase() {
  done_phase
  phase_name=$1
  phase_began=$SECONDS
  echo "== $1 (at $(minutes $SECONDS))"
}
summary() {
  echo "== npm test: $(minutes $SECONDS) in all"
  printf '%s\n' "${phases[@]}"
}

phase "setup: what is missing (scripts/setup.sh)"
bash scripts/setup.sh

phase "lint: rustfmt, clippy (native, wasm, wasm with ciphers), Biome"
cargo fmt --check
cargo clippy --all-targets -- -D warnings
# The two wasm builds' checks side by side (their target folders differ):
# each compiles SQLite's C in its build script, one compiler on one core.
cargo clippy --target wasm32-unknown-unknown --all-targets -- -D warnings &
plain=$!
CARGO_TARGET_DIR=target/cipher cargo clippy --target wasm32-unknown-unknown --all-targets --features cipher -- -D warnings &
cipher=$!
wait "$plain"
wait "$cipher"
npx biome ci --colors=off .

phase "unit: the page's and the worker's own logic under node --test (no browser)"
node --test tests/unit/

phase "build: the package (scripts/build.sh)"
bash scripts/build.sh

phase "1/3 native: cargo test (codec core)"
# The native SQLite3MC that the power-loss checks open encrypted images
# with (tests/powerloss/sqlite3mc.sh), built once before the e2e layer
# rather than by the first test file that needs it; beside the Rust and
# wasm tests, which leave a core idle while they run.
bash tests/powerloss/sqlite3mc.sh >/dev/null &
sqlite3mc=$!
cargo test

phase "2/3 wasm: engine in Node"
cargo test --target wasm32-unknown-unknown --test node

phase "2/3 wasm: engine in a dedicated worker in headless Chromium (OPFS)"
CHROMEDRIVER=/usr/bin/chromedriver cargo test --target wasm32-unknown-unknown --test browser
phase "2/3 wasm: the engine with ciphers in a dedicated worker in headless Chromium (OPFS)"
# A debug build: Rust checks every pointer it reads through is aligned.
CHROMEDRIVER=/usr/bin/chromedriver CARGO_TARGET_DIR=target/cipher cargo test --target wasm32-unknown-unknown --features cipher --test browser

phase "e2e, before: the package packed once; the power-loss checker's SQLite3MC"
wait "$sqlite3mc"

# The package packed and installed once for the whole e2e layer: each test
# file's app is a copy (tests/e2e/harness.mjs, installPackedApp).
RESQ_PACKED_APP=$(node tests/e2e/packed-app.mjs | tail -n 1)
export RESQ_PACKED_APP
trap 'rm -rf "$RESQ_PACKED_APP"' EXIT

# The e2e layer: every pass's files, several at once (tests/e2e/run.mjs,
# which prints each pass's counts, time and slowest files at its end). The
# passes: all three engines, the two forced onto IndexedDB, and Node (the
# test files that need only memory storage, passes.mjs) by default;
# RESQ_ENGINES=chromium (or "firefox webkit", …) runs those, RESQ_FILES=kill
# (or "kill,api") only the files whose names hold those words.
engines="${RESQ_ENGINES:-chromium firefox webkit chromium-idb firefox-idb node}"
phase "3/3 e2e: the packed package in ${engines// /, }"
rc=0
# shellcheck disable=SC2086 # one word a pass
node tests/e2e/run.mjs ${RESQ_FILES:+--only "$RESQ_FILES"} $engines || rc=1
done_phase
summary
exit $rc
