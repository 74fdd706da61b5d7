#!/usr/bin/env bash
# Benchmarks (not tests: they report numbers). `npm run bench -- <name>`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
# `tabs` drives two pages (benches/tabs.mjs); the others are one page module each.
if [ "${1:-}" = tabs ]; then
  node benches/tabs.mjs
else
  node benches/run.mjs "$@"
fi
