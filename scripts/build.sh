#!/usr/bin/env bash
# Builds the npm package into pkg/ from scratch or incrementally:
# cargo (Rust + SQLite → wasm; again with SQLite3 Multiple Ciphers, the
# `cipher` feature, for open(name, { key }): a second wasm that only users
# of `key` download) → wasm-bindgen (JS glue, one for both) → wasm-opt -O3 (npm
# `binaryen`; Debian's binaryen 108 breaks wasm-bindgen's externref table;
# RESQ_NO_WASM_OPT=1 skips it for quick local rebuilds) → tsc (the page
# client and the worker entry, with their .d.ts) → esbuild (the worker
# entry bundled into one file).
set -euo pipefail
cd "$(dirname "$0")/.."

# The two wasm builds side by side: each ends in one long serial step (LTO
# with one codegen unit), so together they keep both cores busy.
target=${CARGO_TARGET_DIR:-target}
cargo build --release --target wasm32-unknown-unknown &
plain=$!
CARGO_TARGET_DIR=$target/cipher cargo build --release --target wasm32-unknown-unknown --features cipher &
cipher=$!
wait "$plain"
wait "$cipher"
raw=$target/wasm32-unknown-unknown/release/resq_wasm.wasm
raw_cipher=$target/cipher/wasm32-unknown-unknown/release/resq_wasm.wasm
out=pkg/wasm
# The stamp records whether pkg/wasm is optimized, so a quick local build
# (RESQ_NO_WASM_OPT=1) is redone by the next full one.
want_stamp=$([ -z "${RESQ_NO_WASM_OPT:-}" ] && echo optimized || echo plain)
if [ ! -f "$out/resq_wasm_bg.wasm" ] || [ ! -f "$out/resq_wasm_cipher_bg.wasm" ] ||
   [ "$raw" -nt "$out/resq_wasm_bg.wasm" ] || [ "$raw_cipher" -nt "$out/resq_wasm_cipher_bg.wasm" ] ||
   [ "$(cat "$target/pkg-wasm.stamp" 2>/dev/null)" != "$want_stamp" ]; then
  rm -rf "$out" "$target/cipher-glue"
  wasm-bindgen --target web --out-dir "$out" --out-name resq_wasm "$raw"
  wasm-bindgen --target web --out-dir "$target/cipher-glue" --out-name resq_wasm "$raw_cipher"
  # The page's worker drives either wasm with the one glue: their imports
  # and exports must be the same (the glue differs in comments at most).
  if ! diff <(grep -v '^ *//' "$out/resq_wasm.js") <(grep -v '^ *//' "$target/cipher-glue/resq_wasm.js") > /dev/null; then
    echo "build.sh: the wasm with ciphers needs other glue than the plain one" >&2
    exit 1
  fi
  mv "$target/cipher-glue/resq_wasm_bg.wasm" "$out/resq_wasm_cipher_bg.wasm"
  if [ "$want_stamp" = optimized ]; then
    # Side by side too: wasm-opt works mostly on one core.
    node_modules/.bin/wasm-opt -O3 "$out/resq_wasm_bg.wasm" -o "$out/resq_wasm_bg.wasm" &
    plain=$!
    node_modules/.bin/wasm-opt -O3 "$out/resq_wasm_cipher_bg.wasm" -o "$out/resq_wasm_cipher_bg.wasm" &
    cipher=$!
    wait "$plain"
    wait "$cipher"
  fi
  echo "$want_stamp" > "$target/pkg-wasm.stamp"
fi
# tsc writes pkg/ afresh: the wasm glue's resq_wasm.d.ts imports
# ../protocol.js (src/worker/entry.rs), which must be src/js/protocol.ts
# here, not an earlier build's pkg/protocol.d.ts (an output tsc will not
# also read, TS5055).
rm -rf pkg/*.js pkg/*.d.ts pkg/inspector
# The JS ships without its comments: they are about 40% of what a page
# downloads for `import { open }` (gzip), and a bundler's minifier drops
# them anyway. The .d.ts files keep every doc comment, for editors.
# (Declarations first: with pkg/protocol.js there, the glue's import of
# ../protocol.js would find the JS and not src/js/protocol.ts.)
npx tsc -p tsconfig.json --emitDeclarationOnly
npx tsc -p tsconfig.json --removeComments --declaration false
# The worker as one file: its imports (the wasm-bindgen glue, protocol.js,
# stage.js) would cost a second round of fetches before it runs, about
# 14 ms of a cold start (benches/experiments/009-one-file-worker.md). The
# glue looks for the wasm beside itself; in the bundle that is wasm/.
node_modules/.bin/esbuild pkg/worker.js --bundle --format=esm --allow-overwrite --outfile=pkg/worker.js --log-level=warning
# The worker's own modules (src/js/worker/) are all in the bundle now:
# nothing else imports them, so they do not ship.
rm -rf pkg/worker pkg/stage.js pkg/stage.d.ts
node scripts/wasm-url.mjs pkg/worker.js
# Sizes as tests/e2e/size.test.mjs counts them against size-budgets.json
# (zlib level 9; the gzip CLI's -9 gives another number for the same file).
for w in resq_wasm_bg resq_wasm_cipher_bg; do
  node -e 'const f = process.argv[1]; const b = require("node:fs").readFileSync(f);
    console.log(`built ${f}: ${b.length} bytes, gzip ${require("node:zlib").gzipSync(b, { level: 9 }).length} bytes (zlib 9, as size-budgets.json)`);' "$out/$w.wasm"
done
