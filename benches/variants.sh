#!/usr/bin/env bash
# Builds another variant of the package into target/variants/<name>/ (a
# whole pkg/ with its own wasm), for experiments that compare builds in one
# benchmark run (benches/experiments/007-wasm-size.md):
#
#   bash benches/variants.sh <name> <wasm-opt level> [cargo --config …]
#   bash benches/variants.sh c-os -O3 'profile.release.package.sqlite-wasm-rs.opt-level="s"'
#   node benches/run.mjs compare '[{"engines":["/target/variants/o3/","/target/variants/c-os/"]}, …]' wasm-size
#
# Each variant has its own cargo target directory, so main's build is left
# alone. Run `bash scripts/build.sh` first: the JS side is copied from pkg/.
set -euo pipefail
cd "$(dirname "$0")/.."
name=$1 level=$2
shift 2
configs=()
for c in "$@"; do configs+=(--config "$c"); done
target=target/variants-build/$name
out=target/variants/$name
CARGO_TARGET_DIR=$target cargo build --release --target wasm32-unknown-unknown ${configs[@]+"${configs[@]}"}
rm -rf "$out"
mkdir -p "$out"
cp -r pkg/. "$out/"
rm -rf "$out/wasm"
wasm-bindgen --target web --out-dir "$out/wasm" --out-name resq_wasm "$target/wasm32-unknown-unknown/release/resq_wasm.wasm"
node_modules/.bin/wasm-opt "$level" "$out/wasm/resq_wasm_bg.wasm" -o "$out/wasm/resq_wasm_bg.wasm"
echo "$name: wasm $(wc -c < "$out/wasm/resq_wasm_bg.wasm") bytes, gzip $(gzip -9c "$out/wasm/resq_wasm_bg.wasm" | wc -c) bytes"
