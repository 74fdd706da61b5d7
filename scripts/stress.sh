#!/usr/bin/env bash
# The full forms of the reliability suites (power loss, full disk, soak,
# kill trials, model check, hostile inputs, property tests of the core);
# writes tests/stress/results/latest.md. Installs what is missing and
# builds first, like `npm test`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
node tests/stress/run.mjs "$@"
