#!/usr/bin/env bash
# Regenerates THIRD_PARTY_NOTICES.md, the licenses of everything compiled
# into the shipped wasms (the cipher build's crates include the plain one's), with cargo-about (scripts/notices/about.toml says
# which crates and licenses, and where sqlite-wasm-rs's C sources carry their
# notices; scripts/notices/notices.hbs lays the file out). Run it after a
# change of Rust dependencies; tests/e2e/package.test.mjs fails while a
# crate of the wasm is missing from the notices.
#
# Installs cargo-about (a pinned version; compiling it takes minutes) when it
# is missing. Needs the network for crates.io only: the crates are fetched,
# then cargo-about reads their files offline.
set -euo pipefail
cd "$(dirname "$0")/.."

version=0.9.3
if [ "$(cargo about --version 2>/dev/null)" != "cargo-about $version" ]; then
  echo "[notices] installing cargo-about $version"
  cargo install cargo-about --version "$version" --locked --features cli
fi

cargo fetch --locked
out=$(mktemp)
log=$(mktemp)
trap 'rm -f "$out" "$log"' EXIT
cargo about generate --frozen --fail --features cipher -c scripts/notices/about.toml -o "$out" scripts/notices/notices.hbs 2>"$log" || { cat "$log" >&2; exit 1; }
# A clarification whose checksum no longer matches is only a warning to
# cargo-about, which then leaves that notice out (SQLite's blessing, say).
if grep -q -E 'WARN|ERROR' "$log"; then
  cat "$log" >&2
  echo "[notices] cargo-about warned: THIRD_PARTY_NOTICES.md left as it was; see scripts/notices/about.toml" >&2
  exit 1
fi
chmod 644 "$out"
mv "$out" THIRD_PARTY_NOTICES.md
echo "[notices] wrote THIRD_PARTY_NOTICES.md"
