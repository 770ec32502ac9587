#!/usr/bin/env bash
# Runs every test suite: the lint gate (scripts/lint.sh), type checks of the
# test code, `cargo test --workspace` (native), the engine's unit tests as
# WebAssembly, vitest (the `siltdb` package on the real wasm build, in Node),
# Playwright (Debian's Chromium). Every suite runs even when an earlier one
# failed; the exit status is non-zero if any failed.
#
# REQUIRES: scripts/setup.sh and scripts/build.sh have run (`npm test` does
# all three).
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

results=target/test-results
rm -rf "$results"
mkdir -p "$results"

# Hard watchdogs (seconds) on top of each runner's own timeouts, so that a
# wedged process can never hold CI until its global limit.
CARGO_TEST_TIMEOUT=${CARGO_TEST_TIMEOUT:-2400}
JS_TEST_TIMEOUT=${JS_TEST_TIMEOUT:-1560} # Playwright's own global watchdog (25 min) trips first

failed=()
suite() {
  local name=$1
  shift
  printf '\n=== %s\n' "$name"
  local start=$SECONDS
  "$@"
  local status=$?
  if [ "$status" -eq 0 ]; then
    printf '=== %s: ok (%ss)\n' "$name" "$((SECONDS - start))"
  else
    printf '=== %s: FAILED with exit status %s (%ss)\n' "$name" "$status" "$((SECONDS - start))"
    failed+=("$name")
  fi
}

typecheck() {
  npx --no-install tsc -p js/tsconfig.test.json && npx --no-install tsc -p tests/tsconfig.json &&
    bash scripts/api-docs.sh --check && # docs/api/ is what the .d.ts files say
    bash scripts/package-check.sh       # the npm tarball: publint, attw, no maps or tests
}
cargo_tests() {
  # --no-fail-fast: one failing test binary does not hide the others' results.
  timeout -k 30 "$CARGO_TEST_TIMEOUT" cargo test --workspace --no-fail-fast 2>&1 | tee "$results/cargo.log"
}
wasm_engine_tests() {
  # The engine's unit tests as WebAssembly with SIMD128, run by Node's WASI
  # (the same V8 as Chromium): covers the SIMD bloom probe against the scalar
  # one, and everything else on wasm32.
  RUSTFLAGS="-C target-feature=+simd128" CARGO_TARGET_DIR="$PWD/target/wasi" \
    CARGO_TARGET_WASM32_WASIP1_RUNNER="node $PWD/scripts/wasi-run.mjs" \
    timeout -k 30 "$CARGO_TEST_TIMEOUT" cargo test --target wasm32-wasip1 -p silt-engine --lib -- --test-threads=1 \
    2>&1 | tee "$results/cargo-wasm.log"
}
vitest_tests() {
  (cd js && timeout -k 10 "$JS_TEST_TIMEOUT" npx --no-install vitest run \
    --reporter=default --reporter=json --outputFile.json="../$results/vitest.json")
}
firefox_tests() {
  # Writes target/test-results/firefox.json; has its own watchdog too.
  timeout -k 10 "$JS_TEST_TIMEOUT" node tests/firefox/run.mjs
}
webkit_tests() {
  # Writes target/test-results/webkit.json; has its own watchdog too.
  timeout -k 10 "$JS_TEST_TIMEOUT" node tests/webkit/run.mjs
}
playwright_tests() {
  # The JSON report path is set in tests/playwright.config.ts.
  (cd tests && timeout -k 10 "$JS_TEST_TIMEOUT" npx --no-install playwright test)
}

suite "lint (rustfmt, clippy native and wasm32, biome)" bash scripts/lint.sh
suite "typecheck (tsc, test code; the API reference up to date; the package fit to publish)" typecheck
suite "cargo test --workspace (native)" cargo_tests
suite "cargo test silt-engine as WebAssembly (wasm32-wasip1, SIMD128, Node)" wasm_engine_tests
suite "vitest (js, Node, real wasm build)" vitest_tests
suite "playwright (Chromium)" playwright_tests
suite "firefox (Firefox ESR, puppeteer-core over WebDriver BiDi)" firefox_tests
suite "webkit (WebKitGTK's MiniBrowser under Xvfb: what works, and NotSupported where it cannot)" webkit_tests

printf '\n'
# The totals; this also fails on a missing report or a skipped test, even
# when every runner exited 0.
if ! node scripts/test-summary.mjs "$results" && [ "${#failed[@]}" -eq 0 ]; then
  failed+=("summary")
fi
if [ "${#failed[@]}" -ne 0 ]; then
  printf 'FAILED: %s\n' "${failed[*]}"
  exit 1
fi
