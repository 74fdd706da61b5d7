#!/usr/bin/env bash
# The main job: build the package and serve the demo app (www/) on localhost.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
exec node scripts/serve.mjs . "${PORT:-8080}" www/
