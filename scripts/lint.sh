#!/usr/bin/env bash
# The lint gate, the first suite of `npm test` (scripts/test.sh): every
# check runs, and the exit status is non-zero if any failed.
#   - cargo fmt --check (rustfmt.toml);
#   - cargo clippy -D warnings on the workspace natively, every target
#     (tests, benches, examples) and every feature but silt-bench's rocksdb
#     (which builds RocksDB's C++);
#   - cargo clippy -D warnings on the engine and the bindings for wasm32 with
#     SIMD128, as scripts/build.sh builds them (the SIMD bloom probe and the
#     OPFS layer exist only there), with the test-only fs-contract feature;
#   - Biome over the TypeScript and JavaScript (biome.jsonc): lint and format.
# `cargo fmt --all` and `npx biome check --write .` fix most of it.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

failed=()
check() {
  local name=$1
  shift
  printf '[lint] %s\n' "$name"
  if ! "$@"; then
    failed+=("$name")
  fi
}

check "cargo fmt --check" cargo fmt --all -- --check
check "cargo clippy (native, all targets)" \
  cargo clippy --workspace --all-targets --features silt-engine/testkit,silt-engine/fuzzing,silt-wasm/fs-contract --quiet -- -D warnings
# A target dir of its own: the check's flags differ from scripts/build.sh's,
# and sharing one would make each invalidate the other's build.
check "cargo clippy (wasm32 + SIMD128)" env RUSTFLAGS="-C target-feature=+simd128" CARGO_TARGET_DIR="$PWD/target/clippy-wasm" \
  cargo clippy --target wasm32-unknown-unknown -p silt-engine -p silt-wasm --features silt-wasm/fs-contract --quiet -- -D warnings
check "biome (TypeScript, JavaScript)" npx --no-install biome check --error-on-warnings .

if [ "${#failed[@]}" -ne 0 ]; then
  printf '[lint] FAILED: %s\n' "${failed[*]}"
  exit 1
fi
printf '[lint] clean\n'
