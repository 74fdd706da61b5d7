#!/usr/bin/env bash
# Benchmarks (not tests: they report numbers). `npm run bench -- <name>`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
node benches/run.mjs "$@"
