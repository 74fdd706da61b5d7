#!/usr/bin/env bash
# Benchmarks (not tests: they report numbers). `npm run bench -- <name>`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
# `tabs` drives two pages (benches/tabs.mjs), `demo` the demo app
# (benches/demo.mjs); the others are one page module each.
case "${1:-}" in
  tabs | demo | follower-cost | big-file) node "benches/$1.mjs" ;;
  *) node benches/run.mjs "$@" ;;
esac
