#!/usr/bin/env bash
# The full forms of the reliability suites (power loss, kill trials, model
# check, full disk); writes tests/stress/results/latest.md. Installs what is
# missing and builds first, like `npm test`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
node tests/stress/run.mjs "$@"
