#!/usr/bin/env bash
# The reliability suite at soak size (`--soak`), beyond the bounded slice that
# `npm test` runs on every change. Figures land in target/reliability/*.json
# and are summarised at the end; docs/reliability.md records a run.
#
#   bash scripts/soak.sh --soak [--fuzz-seconds 300] [--browser-minutes 5]
#
# What it runs (SILT_SOAK=1 everywhere):
#   - crash matrix: 30 workloads crashed at every call + 300 crashed at every
#     flush/compaction call, dropping and tearing unsynced bytes;
#   - corruption: a bit flipped in every byte of every file of a database;
#   - the model test over 3,000 seeds, and 50,000 mutated exports imported;
#   - connect()'s models: the tab protocol's 100,000 schedules, the page
#     cache's 20,000;
#   - the fuzz corpus with 50,000 mutations per input, then cargo-fuzz on every
#     target (scripts/fuzz.sh);
#   - the browser: worker kills and closed tabs, the bad-input sequences, and
#     the Chromium soak with memory sampled.
# REQUIRES: setup and build (`npm test` once), and a nightly toolchain for
# cargo-fuzz (installed by scripts/fuzz.sh if missing).
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

soak=0
fuzz_seconds=300
browser_minutes=5
while [ $# -gt 0 ]; do
  case "$1" in
    --soak) soak=1 ;;
    --fuzz-seconds) fuzz_seconds=$2; shift ;;
    --browser-minutes) browser_minutes=$2; shift ;;
    *) echo "unknown argument: $1 (see the header of $0)" >&2; exit 2 ;;
  esac
  shift
done
if [ "$soak" != 1 ]; then
  echo "soak.sh runs for over an hour; pass --soak to mean it (npm test runs the bounded slice)" >&2
  exit 2
fi
export SILT_SOAK=1 SILT_SOAK_MINUTES="$browser_minutes"
mkdir -p target/reliability
failed=()
step() {
  local name=$1
  shift
  printf '\n=== %s\n' "$name"
  local start=$SECONDS
  if "$@"; then
    printf '=== %s: ok (%ss)\n' "$name" "$((SECONDS - start))"
  else
    printf '=== %s: FAILED (%ss)\n' "$name" "$((SECONDS - start))"
    failed+=("$name")
  fi
}
step "crash matrix" cargo test --release -p silt-engine --test crash -- --nocapture
step "corruption" cargo test --release -p silt-engine --test corruption -- --nocapture
step "model (3,000 seeds)" cargo test --release -p silt-engine --test model -- --nocapture
step "import of mutated exports (50,000)" cargo test --release -p silt-engine --test import_property -- --nocapture
step "fuzz corpus" cargo test --release -p silt-engine --test fuzz_corpus -- --nocapture
step "cargo fuzz" bash scripts/fuzz.sh "$fuzz_seconds"
step "browser (kills, closed tabs, soak)" bash -c 'cd tests && npx --no-install playwright test e2e/reliability.spec.ts --global-timeout=0'
step "bad input (Node)" bash -c 'cd js && npx --no-install vitest run test/bad-input.test.ts'
step "tab protocol and page cache models (100,000 and 20,000 schedules)" bash -c 'cd js && npx --no-install vitest run test/protocol-model.test.ts test/page-cache-model.test.ts'
step "bad input (Chromium)" bash -c 'cd tests && npx --no-install playwright test e2e/bad-input.spec.ts'

printf '\n=== figures (target/reliability)\n'
for f in target/reliability/*.json; do
  printf '%s\n' "--- $f"
  cat "$f"
done
if [ ${#failed[@]} -ne 0 ]; then
  printf 'FAILED: %s\n' "${failed[*]}"
  exit 1
fi
