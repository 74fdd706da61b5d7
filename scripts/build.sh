#!/usr/bin/env bash
# Builds the npm package into pkg/ from scratch or incrementally:
# cargo (Rust + SQLite → wasm) → wasm-bindgen (JS glue) → wasm-opt -O3 (npm
# `binaryen`; Debian's binaryen 108 breaks wasm-bindgen's externref table;
# RESQ_NO_WASM_OPT=1 skips it for quick local rebuilds) → tsc (the page
# client and the worker entry, with their .d.ts) → esbuild (the worker
# entry bundled into one file).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --target wasm32-unknown-unknown
target=${CARGO_TARGET_DIR:-target}
raw=$target/wasm32-unknown-unknown/release/resq_wasm.wasm
out=pkg/wasm
# The stamp records whether pkg/wasm is optimized, so a quick local build
# (RESQ_NO_WASM_OPT=1) is redone by the next full one.
want_stamp=$([ -z "${RESQ_NO_WASM_OPT:-}" ] && echo optimized || echo plain)
if [ ! -f "$out/resq_wasm_bg.wasm" ] || [ "$raw" -nt "$out/resq_wasm_bg.wasm" ] ||
   [ "$(cat "$target/pkg-wasm.stamp" 2>/dev/null)" != "$want_stamp" ]; then
  rm -rf "$out"
  wasm-bindgen --target web --out-dir "$out" --out-name resq_wasm "$raw"
  if [ "$want_stamp" = optimized ]; then
    node_modules/.bin/wasm-opt -O3 "$out/resq_wasm_bg.wasm" -o "$out/resq_wasm_bg.wasm"
  fi
  echo "$want_stamp" > "$target/pkg-wasm.stamp"
fi
npx tsc -p tsconfig.json
# The worker as one file: its imports (the wasm-bindgen glue, protocol.js,
# stage.js) would cost a second round of fetches before it runs, about
# 14 ms of a cold start (benches/experiments/009-one-file-worker.md). The
# glue looks for the wasm beside itself; in the bundle that is wasm/.
node_modules/.bin/esbuild pkg/worker.js --bundle --format=esm --allow-overwrite --outfile=pkg/worker.js --log-level=warning
# The worker's own modules (src/js/worker/) are all in the bundle now:
# nothing else imports them, so they do not ship.
rm -rf pkg/worker pkg/stage.js pkg/stage.d.ts
node scripts/wasm-url.mjs pkg/worker.js
echo "built pkg/: wasm $(wc -c < "$out/resq_wasm_bg.wasm") bytes, gzip $(gzip -9c "$out/resq_wasm_bg.wasm" | wc -c) bytes"
