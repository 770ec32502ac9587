#!/usr/bin/env bash
# Builds everything the demo and the JS/browser tests load:
#   1. crates/wasm → js/pkg  (wasm-pack, release with fat LTO and one codegen
#      unit, --target web, SIMD128 on), then wasm-opt -O3 from npm's binaryen
#      (WASM_OPT=0 skips it and keeps the function names, for profiles)
#   2. js/src      → js/dist (tsc, with .d.ts)
#   3. with --tests: crates/wasm with the test-only feature fs-contract →
#      target/test-pkg (wasm-pack, dev profile): the engine's Fs contract
#      suite on real OPFS, for the browser tests; never shipped.
# The native crates are built by `cargo test` in scripts/test.sh; the
# benchmarks' LevelDB by `npm run bench:setup`.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

say() { printf '[build] %s\n' "$*"; }

# SIMD128 for the wasm build only: set here rather than in .cargo/config.toml,
# so that native builds of the workspace never see it. wasm-pack passes an
# explicit --target, so RUSTFLAGS reaches only the wasm32 crates, not build
# scripts or proc macros.
#
# --max-memory: a memory must declare a maximum to become a resizable
# ArrayBuffer (toResizableBuffer), which keeps views of pinned values valid
# across growth. 4 GiB is wasm32's limit, so it caps nothing.
export RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }-C target-feature=+simd128 -C link-arg=--max-memory=4294967296"
# A target dir of its own: the wasm build never waits for the lock of a
# native cargo build running at the same time (nor the other way round).
export CARGO_TARGET_DIR="$PWD/target/wasm"

say "wasm-pack: crates/wasm -> js/pkg (release, --target web, +simd128)"
# wasm-opt is off in crates/wasm/Cargo.toml ([package.metadata.wasm-pack]).
# --no-pack: js/pkg is private to `siltdb`, not a package of its own.
# --weak-refs: a handle dropped without close() is freed by a
# FinalizationRegistry instead of leaking wasm memory.
wasm-pack --log-level warn build crates/wasm \
  --release --target web --no-pack --weak-refs \
  --out-dir "$PWD/js/pkg" --out-name silt_wasm

# npm's binaryen (132): Debian's wasm-opt 108 miscompiles wasm-bindgen's
# output. -O3: 17% smaller (gzipped) than LLVM's output alone; V8's own
# optimizer makes it no faster or slower (docs/bench/browser.md).
if [ "${WASM_OPT:-1}" != "0" ]; then
  say "wasm-opt -O3 (binaryen $(node_modules/.bin/wasm-opt --version | awk '{print $3}'))"
  node_modules/.bin/wasm-opt -O3 js/pkg/silt_wasm_bg.wasm -o js/pkg/silt_wasm_bg.wasm
fi

# wasm-pack drops a '*' .gitignore into its output; npm pack honours nested
# ignore files, which would leave pkg/silt_wasm.d.ts (the types the
# package's declarations import) out of the tarball. The repository's own
# .gitignore already keeps js/pkg out.
rm -f js/pkg/.gitignore
node scripts/patch-glue.mjs js/pkg/silt_wasm.js

wasm=js/pkg/silt_wasm_bg.wasm
say "$(printf '%s: %d bytes, %d gzipped' "$wasm" "$(stat -c %s "$wasm")" "$(gzip -9 -c "$wasm" | wc -c)")"

say "tsc: js/src -> js/dist"
rm -rf js/dist
npm run --silent build -w js

say "esbuild: demo/notes/app.jsx -> demo/notes/dist (Silt Notes, with siltdb/esbuild)"
node demo/notes/build.mjs

if [ "${1:-}" = "--tests" ]; then
  say "wasm-pack: crates/wasm --features fs-contract -> target/test-pkg (the browser tests' build)"
  wasm-pack --log-level warn build crates/wasm \
    --dev --target web --no-pack \
    --out-dir "$PWD/target/test-pkg" --out-name silt_wasm_test -- --features fs-contract
  rm -f target/test-pkg/.gitignore
fi
say "done"
