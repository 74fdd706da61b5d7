#!/usr/bin/env bash
# Builds SQLite3 Multiple Ciphers as a native libsqlite3.so.0, for checking
# the power-loss images of an encrypted database (images.py --key): with it
# in LD_PRELOAD, Python's sqlite3 module runs SQLite3MC, which takes
# `PRAGMA key`. The source is the amalgamation of the sqlite3mc-src crate
# that Cargo.lock pins, the same C the wasm with ciphers is built from.
# Prints the library's path; builds it once (about 20 s).
set -euo pipefail
cd "$(dirname "$0")/../.."
version=$(awk '/^name = "sqlite3mc-src"$/ { getline; gsub(/"/, "", $3); print $3 }' Cargo.lock)
out="target/sqlite3mc-$version/libsqlite3.so.0"
if [ ! -f "$out" ]; then
  cargo fetch --locked -q
  src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"sqlite3mc-src-$version"/sqlite3mc | head -1)
  mkdir -p "$(dirname "$out")"
  # Built under a name of this process's own, then moved into place whole:
  # two test files may build it at once.
  gcc -O1 -shared -fPIC -DSQLITE_THREADSAFE=1 -o "$out.$$" "$src/sqlite3mc_amalgamation.c" -lpthread -lm
  mv "$out.$$" "$out"
fi
echo "$PWD/$out"
