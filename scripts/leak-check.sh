#!/usr/bin/env bash
# Proves the browser soak's memory check catches a real leak: builds
# crates/wasm with the `leak-test` feature (100 bytes of wasm heap leaked
# per read and write call, crates/wasm/src/leak.rs) into target/leak-pkg,
# bundles siltdb over it into target/leak-dist (js/scripts/bundle.mjs), then
# runs the soak of tests/e2e/reliability.spec.ts against that build (the
# demo server's SILT_DIST_DIR). The soak must fail on its memory check;
# this script fails if it does not. Not in `npm test` (a second wasm build
# and a 45-second soak); run it after changing the soak or its bounds.
#
# REQUIRES: bash scripts/build.sh (js/dist), the setup's toolchain.
#
#   bash scripts/leak-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf '[leak-check] %s\n' "$*"; }

out="$PWD/target/leak-pkg"
say "wasm-pack: crates/wasm --features leak-test -> target/leak-pkg"
# As scripts/build.sh builds js/pkg, but with a target dir of its own and
# without fat LTO (what this checks is memory, not speed).
RUSTFLAGS="-C target-feature=+simd128 -C link-arg=--max-memory=4294967296" \
  CARGO_TARGET_DIR="$PWD/target/wasm-leak" CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
  wasm-pack --log-level warn build crates/wasm --release --target web --no-pack --weak-refs \
  --out-dir "$out" --out-name silt_wasm -- --features leak-test
rm -f "$out/.gitignore"
node scripts/patch-glue.mjs "$out/silt_wasm.js"
dist="$PWD/target/leak-dist"
rm -rf "$dist"
node js/scripts/bundle.mjs --pkg "$out" --out "$dist"

log="$PWD/target/leak-check.log"
say "the soak against the leaking build (log: target/leak-check.log)"
set +e
(cd tests && SILT_DIST_DIR="$dist" SILT_TEST_PORT="${SILT_TEST_PORT:-8797}" \
  timeout -k 10 600 npx --no-install playwright test e2e/reliability.spec.ts -g 'soak' --reporter=line) >"$log" 2>&1
rc=$?
set -e
if [ "$rc" -eq 0 ]; then
  say "FAILED: the soak passed against a build that leaks 100 bytes per call"
  exit 1
fi
if ! grep -q "unaccounted heap bytes grew" "$log"; then
  say "FAILED: the soak failed, but not on its memory check (see the log)"
  tail -30 "$log"
  exit 1
fi
say "ok: the soak caught the leak:"
grep -m3 "unaccounted heap bytes grew" "$log" | sed 's/^/  /'
