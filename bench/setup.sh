#!/usr/bin/env bash
# `npm run bench:setup`: what the benchmarks need beyond `npm test`'s setup,
# idempotent (each step checks first and skips what is there):
#   - Debian's emscripten (3.1.6, its frozen cache: no ports), then
#   - LevelDB compiled to WebAssembly for the browser suite
#     (bench/browser/leveldb/build.sh → bench/browser/leveldb/dist/, git-ignored).
# The product's tests never need either: tests/e2e/bench.spec.ts runs LevelDB
# only when its build exists, and says so when it does not.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[bench:setup] %s\n' "$*"; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

bash scripts/setup.sh
if ! command -v emcc >/dev/null; then
  say "installing Debian emscripten"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq emscripten >/dev/null
else
  say "emscripten present: $(NODE_PATH=/usr/share/nodejs emcc --version 2>/dev/null | head -n1)"
fi
bash bench/browser/leveldb/build.sh
say "done"
