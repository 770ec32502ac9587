#!/usr/bin/env bash
# The API reference of `siltdb` (docs/api/), generated from the .d.ts files
# tsc emits into js/dist (scripts/build.sh): api-extractor reads them into a
# doc model (target/api/siltdb.api.json), api-documenter writes a Markdown
# page per exported symbol from its TSDoc comments. api-extractor also
# writes the API report, docs/api-report/siltdb.api.md: the whole public
# surface in one file, so a change of it shows as a diff of that file.
#
#   bash scripts/api-docs.sh           writes docs/api/ and the report
#   bash scripts/api-docs.sh --check   fails when docs/api/ or the report is
#                                      not what the code says (run by
#                                      scripts/test.sh, so neither can rot)
set -euo pipefail
cd "$(dirname "$0")/.."
out=docs/api
if [ "${1:-}" = --check ]; then out=target/api/md; fi
rm -rf target/api
# --local updates the report; without it a report that differs fails.
local_flag=--local
if [ "$out" != docs/api ]; then local_flag=; fi
if ! log=$(cd js && npx --no-install api-extractor run $local_flag 2>&1); then
  printf '%s\n' "$log"
  if [ -z "$local_flag" ]; then
    echo "docs/api-report/siltdb.api.md is not what the code says: run bash scripts/api-docs.sh and commit it" >&2
  fi
  exit 1
fi
npx --no-install api-documenter markdown -i target/api -o "$out" >/dev/null
if [ "$out" != docs/api ]; then
  if ! diff -r -q docs/api "$out"; then
    echo "docs/api/ is not what the code says: run bash scripts/api-docs.sh and commit it" >&2
    exit 1
  fi
fi
