#!/usr/bin/env bash
# The API reference of `siltdb` (docs/api/), generated from the .d.ts files
# tsc emits into js/dist (scripts/build.sh): api-extractor reads them into a
# doc model (target/api/siltdb.api.json), api-documenter writes a Markdown
# page per exported symbol from its TSDoc comments.
#
#   bash scripts/api-docs.sh           writes docs/api/
#   bash scripts/api-docs.sh --check   fails when docs/api/ is not what the
#                                      code says (run by scripts/test.sh, so
#                                      the reference cannot rot)
set -euo pipefail
cd "$(dirname "$0")/.."
out=docs/api
if [ "${1:-}" = --check ]; then out=target/api/md; fi
rm -rf target/api
if ! log=$(cd js && npx --no-install api-extractor run --local 2>&1); then
  printf '%s\n' "$log"
  exit 1
fi
npx --no-install api-documenter markdown -i target/api -o "$out" >/dev/null
if [ "$out" != docs/api ]; then
  if ! diff -r -q docs/api "$out"; then
    echo "docs/api/ is not what the code says: run bash scripts/api-docs.sh and commit it" >&2
    exit 1
  fi
fi
