#!/usr/bin/env bash
# Runs the Playwright suite (or the given specs) N times in a row beside two
# CPU hogs, as issue 32 asks ("ten runs in a row green on a loaded
# machine"): a bound that depends on the machine's speed shows up here.
# Each run's result goes to target/loaded-runs/summary (and run-N.log).
#
# REQUIRES: bash scripts/build.sh --tests (js/dist, js/pkg, the test pkg).
#
#   bash scripts/loaded-runs.sh 10                  # the whole suite, ten times
#   bash scripts/loaded-runs.sh 3 e2e/tabs.spec.ts  # one spec, three times
set -uo pipefail
cd "$(dirname "$0")/.."
n=${1:?how many runs}
shift
out="$PWD/target/loaded-runs"
mkdir -p "$out"
hogs=()
for _ in 1 2; do
  (while :; do :; done) &
  hogs+=($!)
done
trap 'kill "${hogs[@]}" 2>/dev/null' EXIT
for i in $(seq 1 "$n"); do
  start=$SECONDS
  (cd tests && timeout -k 10 1800 npx --no-install playwright test "$@") >"$out/run-$i.log" 2>&1
  rc=$?
  totals=$(grep -E '^\s+[0-9]+ (passed|failed|flaky)' "$out/run-$i.log" | tr -s ' \n' ' ')
  echo "run $i of $n at $(git rev-parse --short HEAD): rc=$rc, $((SECONDS - start)) s,$totals" | tee -a "$out/summary"
done
