#!/usr/bin/env bash
# Runs every fuzz target (fuzz/fuzz_targets: one per decoder of stored bytes)
# with cargo-fuzz (libFuzzer, AddressSanitizer) for SECONDS each, starting
# from and adding to the committed corpus fuzz/corpus/<target>/. Not part of
# `npm test` (it needs a nightly toolchain and minutes); the corpus itself is
# replayed in every `npm test` by crates/engine/tests/fuzz_corpus.rs.
#
#   bash scripts/fuzz.sh [SECONDS=60] [TARGET...]
#
# Prints one JSON line per target ({"target","seconds","executions","crashes"})
# and writes them to target/reliability/fuzz.json. A crash stops with the
# input saved under fuzz/artifacts/<target>/ and a non-zero exit status.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
seconds=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(block index filter table wal wal_recovery manifest_edit manifest export_stream pool_header)
fi
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz
mkdir -p target/reliability
out=target/reliability/fuzz.json
: >"$out"
status=0
for t in "${targets[@]}"; do
  maxlen=8192
  [ "$t" = table ] && maxlen=131072
  mkdir -p "fuzz/corpus/$t"
  log=$(mktemp)
  # New inputs go to a scratch directory; `cargo fuzz cmin` decides what is
  # worth committing (see fuzz/README.md).
  scratch="target/fuzz-corpus/$t"
  mkdir -p "$scratch"
  if (cd fuzz && cargo +nightly fuzz run -O "$t" "../$scratch" "corpus/$t" -- \
    -max_total_time="$seconds" -max_len="$maxlen" -rss_limit_mb=2048 -print_final_stats=1) >"$log" 2>&1; then
    crashes=0
  else
    crashes=1
    status=1
    tail -40 "$log" >&2
  fi
  runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  line="{\"target\":\"$t\",\"seconds\":$seconds,\"executions\":${runs:-0},\"crashes\":$crashes}"
  echo "$line" | tee -a "$out"
  rm -f "$log"
done
exit $status
