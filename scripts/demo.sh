#!/usr/bin/env bash
# The main job: build the package and serve the demo app on localhost. The
# app (www/) is served at / and the package at /node_modules/resq-wasm/pkg/,
# where a page without a bundler finds an installed package: both inside
# the app's service worker scope, so the worker and the wasm work offline too.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
exec node scripts/serve.mjs www "${PORT:-8080}" "" --mount /node_modules/resq-wasm/pkg/=pkg
