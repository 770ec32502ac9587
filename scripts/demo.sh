#!/usr/bin/env bash
# `npm run demo`: set up, build, then serve the demo on 127.0.0.1 (PORT, or
# 8080) and print its URL. Ctrl-C stops the server.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
exec node demo/server.mjs
