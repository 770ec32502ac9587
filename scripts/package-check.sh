#!/usr/bin/env bash
# Is the `siltdb` package fit to publish? Packs it as `npm publish` would
# (js/dist and js/pkg must be built: scripts/build.sh) and checks the
# tarball: publint (package.json fields, exports, files), arethetypeswrong
# (every entry point resolves to JavaScript and types under Node and
# bundlers; the package is ESM-only, so its esm-only profile), no source maps
# and no comments pointing at them (they would point at sources the tarball
# does not hold; Vite's dev server prints an error for each missing map), and
# nothing of the tests in it.
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/package
rm -rf "$out"
mkdir -p "$out"
tarball="$out/$(cd js && npm pack --silent --pack-destination "../$out" 2>/dev/null | tail -n1)"
(cd js && npx --no-install publint --strict)
npx --no-install attw "$tarball" --profile esm-only --format ascii
listing=$(tar tzf "$tarball")
if grep -E '\.map$' <<<"$listing"; then
  echo "the tarball holds source maps (above): they point at sources it does not hold" >&2
  exit 1
fi
unpacked="$out/unpacked"
mkdir -p "$unpacked"
tar xzf "$tarball" -C "$unpacked"
if grep -rl 'sourceMappingURL=' "$unpacked"; then
  echo "files in the tarball (above) point at source maps it does not hold" >&2
  exit 1
fi
if grep -E '(^|/)(test|tests|fakes)[/.]|\.test\.' <<<"$listing"; then
  echo "the tarball holds test files (above)" >&2
  exit 1
fi
echo "package: $(basename "$tarball"), $(wc -l <<<"$listing") files, $(du -k "$tarball" | cut -f1) KiB packed: publint, attw (esm-only) clean"
