#!/usr/bin/env bash
# Every test, in three layers (each prints its runner's own summary), after
# the formatters and linters (rustfmt, clippy on each build, Biome) and the
# unit tests of the TypeScript's pure logic (tests/unit, seconds, no browser):
#   1. cargo test, natively: the pure core (codec)
#   2. wasm-bindgen-test: the engine in Node (memory) and in a dedicated
#      worker in headless Chromium (OPFS)
#   3. e2e: the packed npm package, imported by a page, in Chromium
#      (Playwright), then Firefox ESR (Puppeteer, WebDriver BiDi), then
#      WebKitGTK (WebDriver, tests/e2e/webkit.mjs), then Chromium and
#      Firefox again with IndexedDB storage forced (chromium-idb,
#      firefox-idb: their workers get no OPFS sync access handles, as
#      WebKitGTK's; the files that would do there what they do in the
#      engine's own pass or in WebKitGTK's are left out), then Node (the
#      package's Node entry, for the test files that need only memory
#      storage); tests/e2e/passes.mjs says which files each pass leaves
#      out, and why; each engine's counts are printed
#      (RESQ_ENGINES=chromium: Chromium only)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

# A phase's heading, with the time since the start: CI has 90 minutes.
phase() {
  echo "== $1 (at $((SECONDS / 60)) min $((SECONDS % 60)) s)"
}

phase "lint: rustfmt, clippy (native, wasm, wasm with ciphers), Biome"
cargo fmt --check
cargo clippy --all-targets -- -D warnings
cargo clippy --target wasm32-unknown-unknown --all-targets -- -D warnings
CARGO_TARGET_DIR=target/cipher cargo clippy --target wasm32-unknown-unknown --all-targets --features cipher -- -D warnings
npx biome ci --colors=off .

phase "unit: the page's and the worker's own logic under node --test (no browser)"
node --test tests/unit/

bash scripts/build.sh

phase "1/3 native: cargo test (codec core)"
cargo test

phase "2/3 wasm: engine in Node"
cargo test --target wasm32-unknown-unknown --test node

phase "2/3 wasm: engine in a dedicated worker in headless Chromium (OPFS)"
CHROMEDRIVER=/usr/bin/chromedriver cargo test --target wasm32-unknown-unknown --test browser
phase "2/3 wasm: the engine with ciphers in a dedicated worker in headless Chromium (OPFS)"
# A debug build: Rust checks every pointer it reads through is aligned.
CHROMEDRIVER=/usr/bin/chromedriver CARGO_TARGET_DIR=target/cipher cargo test --target wasm32-unknown-unknown --features cipher --test browser

# Runs the e2e layer in engine $1, one test file at a time. The terminal
# gets the runner's usual report (spec on a terminal, TAP otherwise) and
# each file's time; a TAP copy goes to file $2. A file may not take more
# than 10 minutes (the slowest take 2 to 3): a hang fails that file, with
# the last test it reported, and the pass goes on, instead of holding CI
# until its own limit. timeout(1) signals its whole process group, so the
# browsers and servers go too. (node --test's own --test-timeout marks a
# file cancelled but still waits for a file process that never exits.)
e2e() {
  local usual=tap
  [ -t 1 ] && usual=spec
  local rc=0 code began last limit=10
  local forced=
  [ "${1%-idb}" != "$1" ] && forced=1
  local files why
  mapfile -t files < <(node tests/e2e/passes.mjs "$1")
  # A failed list would leave node --test to its default globs.
  [ "${#files[@]}" -gt 0 ] || { echo "e2e in $1: tests/e2e/passes.mjs gave no files"; return 1; }
  why=$(node tests/e2e/passes.mjs "$1" --why)
  if [ -n "$why" ]; then
    echo "Not run in $1 (tests/e2e/passes.mjs):"
    echo "$why" | sed 's/^/  /'
  fi
  for file in "${files[@]}"; do
    began=$SECONDS
    code=0
    rm -f "$2.file"
    RESQ_ENGINE="${1%-idb}" RESQ_NO_SYNC_HANDLES="$forced" timeout --kill-after=30s "${limit}m" node --test --test-concurrency=1 \
      --test-reporter="$usual" --test-reporter-destination=stdout \
      --test-reporter=tap --test-reporter-destination="$2.file" "$file" || code=$?
    if [ "$code" = 124 ] || [ "$code" = 137 ]; then
      last=$(grep -E '^(not )?ok ' "$2.file" | tail -n 1 || true)
      echo "not ok - ${file##*/} stopped after $limit minutes (a test hangs); the last test it reported: ${last:-none}" >>"$2.file"
      printf '  ---\n  ...\n# fail 1\n' >>"$2.file"
    fi
    [ "$code" = 0 ] || rc=1
    cat "$2.file" >>"$2" 2>/dev/null || true
    echo "-- ${file##*/} in $1: $((SECONDS - began)) s"
    echo "$((SECONDS - began)) ${file##*/}" >>"$2.times"
  done
  rm -f "$2.file"
  return "$rc"
}
# "<engine>: N passed, N failed, N skipped", from the TAP summaries in file
# $2 (one per test file); a test or file cancelled counts as failed.
counts() {
  awk -v engine="$1" '/^# (pass|fail|cancelled|skipped) [0-9]+$/ { n[$2] += $3 }
    END { printf "%s: %d passed, %d failed, %d skipped\n", engine, n["pass"], n["fail"] + n["cancelled"], n["skipped"] }' "$2"
}
logs=$(mktemp -d)
# The package packed and installed once for the whole e2e layer: each test
# file's app is a copy (tests/e2e/harness.mjs, installPackedApp).
RESQ_PACKED_APP=$(node tests/e2e/packed-app.mjs | tail -n 1)
export RESQ_PACKED_APP
trap 'rm -rf "$logs" "$RESQ_PACKED_APP"' EXIT

# Engines for the e2e layer, all three, the two forced onto IndexedDB, and
# Node (the test files that need only memory storage, passes.mjs) by
# default; RESQ_ENGINES=chromium (or "firefox webkit", …) runs those. Each
# always runs, so one engine's failure does not hide another's result.
engines="${RESQ_ENGINES:-chromium firefox webkit chromium-idb firefox-idb node}"
rc=0
for engine in $engines; do
  phase "3/3 e2e: the packed package in $engine"
  e2e "$engine" "$logs/$engine" || rc=1
done
# Each failed or cancelled test of engine $1, with its diagnostics (the TAP
# block from "not ok" to the YAML's closing "..."), from file $2: the
# terminal's report can scroll away, and the TAP files go at exit.
failures() {
  awk -v engine="$1" '/^ *not ok / { on = 1; print "[" engine "] " $0; next }
    on { print "[" engine "] " $0; if ($0 ~ /^ *\.\.\.$/) on = 0 }' "$2"
}
# Engine $1's five slowest test files, from file $2 ("seconds file" lines).
slowest() {
  [ -f "$2" ] || return 0
  sort -rn "$2" | head -n 5 | awk '{ printf "  %4d s  %s\n", $1, $2 }'
}
phase "e2e, per engine"
for engine in $engines; do
  counts "$engine" "$logs/$engine"
  slowest "$engine" "$logs/$engine.times"
done
if [ "$rc" != 0 ]; then
  echo "== e2e, what failed"
  for engine in $engines; do failures "$engine" "$logs/$engine"; done
fi
exit $rc
