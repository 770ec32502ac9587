#!/usr/bin/env bash
# Builds LevelDB to WebAssembly for the browser benchmark:
#   bench/browser/leveldb/dist/leveldb.js   (ES module factory, emscripten glue)
#   bench/browser/leveldb/dist/leveldb.wasm
# from the LevelDB and snappy sources that the npm package classic-level
# ships in deps/ (fetched with `npm pack`, pinned and integrity-checked, never
# committed), plus this directory's C API and single-threaded Env.
#
# Idempotent: does nothing when both outputs are newer than every input (this
# script and the sources next to it); recompiles only objects older than
# their source or this script. Needs Debian's emscripten (bench/setup.sh installs it).
# JOBS=n sets the parallel compiles (default 2).
set -euo pipefail
cd "$(dirname "$0")/../../.."

say() { printf '[leveldb] %s\n' "$*"; }
die() { printf '[leveldb] error: %s\n' "$*" >&2; exit 1; }

CLASSIC_LEVEL_VERSION=3.0.0
# `npm view classic-level@3.0.0 dist.integrity`
CLASSIC_LEVEL_INTEGRITY=sha512-yGy8j8LjPbN0Bh3+ygmyYvrmskVita92pD/zCoalfcC9XxZj6iDtZTAnz+ot7GG8p9KLTG+MZ84tSA4AhkgVZQ==

here=bench/browser/leveldb
out=$here/dist
cache=target/leveldb-src
obj=target/leveldb-obj
tarball=$cache/classic-level-$CLASSIC_LEVEL_VERSION.tgz
deps=$cache/classic-level-$CLASSIC_LEVEL_VERSION/deps

# --- up to date? -------------------------------------------------------------
inputs=("$here/build.sh" "$here"/*.cc "$here"/*.h)
if [ -f "$out/leveldb.js" ] && [ -f "$out/leveldb.wasm" ]; then
  stale=0
  for f in "${inputs[@]}"; do
    if [ "$f" -nt "$out/leveldb.js" ] || [ "$f" -nt "$out/leveldb.wasm" ]; then stale=1; fi
  done
  if [ "$stale" -eq 0 ]; then
    say "up to date: $out/leveldb.{js,wasm}"
    exit 0
  fi
fi

command -v em++ >/dev/null || die "em++ not found: run npm run bench:setup (installs Debian's emscripten)"
# Debian's emscripten finds its node modules (acorn, ...) only through NODE_PATH.
export NODE_PATH="${NODE_PATH:+$NODE_PATH:}/usr/share/nodejs"
# Run through npm (`npm run bench:setup`), PATH starts with node_modules/.bin,
# whose wasm-opt (npm's binaryen 132, for our own wasm) emscripten 3.1.6 would
# take over Debian's: it then minifies the wasm's import names but not the
# glue's, and the module fails to instantiate ("function import requires a
# callable"). Emscripten gets PATH without node_modules.
PATH=$(printf '%s' "$PATH" | tr ':' '\n' | { grep -v '/node_modules/' || true; } | paste -sd: -)
export PATH
emcc_version=$(em++ --version | head -n1 | sed -E 's/.* ([0-9]+\.[0-9]+\.[0-9]+).*/\1/')
say "emscripten $emcc_version"

# --- sources: classic-level's tarball, pinned and checked -------------------
integrity_of() {
  node -e 'const c = require("crypto"), fs = require("fs");
           process.stdout.write("sha512-" + c.createHash("sha512").update(fs.readFileSync(process.argv[1])).digest("base64"))' "$1"
}
if [ ! -d "$deps" ]; then
  mkdir -p "$cache"
  if [ ! -f "$tarball" ]; then
    say "npm pack classic-level@$CLASSIC_LEVEL_VERSION -> $cache"
    (cd "$cache" && npm pack --silent "classic-level@$CLASSIC_LEVEL_VERSION" >/dev/null)
  fi
  got=$(integrity_of "$tarball")
  if [ "$got" != "$CLASSIC_LEVEL_INTEGRITY" ]; then
    rm -f "$tarball"
    die "classic-level-$CLASSIC_LEVEL_VERSION.tgz has integrity $got, expected $CLASSIC_LEVEL_INTEGRITY (deleted; run again to refetch)"
  fi
  tmp=$(mktemp -d "$cache/extract.XXXXXX")
  tar -xzf "$tarball" -C "$tmp" --strip-components=1 package/deps
  rm -rf "${deps%/deps}"
  mv "$tmp" "${deps%/deps}"
  say "extracted classic-level $CLASSIC_LEVEL_VERSION deps (integrity ok)"
fi
ldb=$deps/leveldb/leveldb-1.20
snappy=$deps/snappy
[ -d "$ldb" ] || die "$ldb is missing: classic-level $CLASSIC_LEVEL_VERSION no longer ships LevelDB 1.20?"

# --- compile ------------------------------------------------------------------
# The library sources only: no tests, tools, db_bench, C binding or repair;
# port_single_thread.cc here instead of port/port_posix.cc.
sources=(
  "$here/silt_leveldb.cc" "$here/single_thread_env.cc" "$here/port_single_thread.cc"
  "$ldb"/db/{builder,db_impl,db_iter,dbformat,filename,log_reader,log_writer,memtable,table_cache,version_edit,version_set,write_batch}.cc
  "$ldb"/table/{block,block_builder,filter_block,format,iterator,merger,table,table_builder,two_level_iterator}.cc
  "$ldb"/util/{arena,bloom,cache,coding,comparator,crc32c,env,env_posix,filter_policy,hash,logging,options,status}.cc
  "$ldb"/port/port_posix_sse.cc
  "$snappy"/snappy/{snappy,snappy-sinksource,snappy-stubs-internal}.cc
)
# -O3 -DNDEBUG: release, asserts off. -msimd128: lets clang vectorize loops
# (the checksum, crc32c's tables do not) for Chromium's wasm SIMD.
# LEVELDB_ATOMIC_PRESENT: port/atomic_pointer.h has no wasm case but <atomic>.
# SNAPPY: LevelDB compresses blocks with the bundled snappy (1.1.4, configured
# by classic-level's linux/config.h).
CXXFLAGS="-O3 -DNDEBUG -msimd128 -std=c++11 -fno-exceptions -Wno-sign-compare -Wno-unused-function
  -DLEVELDB_PLATFORM_POSIX=1 -DLEVELDB_ATOMIC_PRESENT=1 -DSNAPPY=1 -DHAVE_CONFIG_H=1
  -I$ldb -I$ldb/include -I$snappy/linux -I$snappy/snappy -I$here"
export CXXFLAGS
mkdir -p "$obj"
objects=()
todo=()
for src in "${sources[@]}"; do
  [ -f "$src" ] || die "source $src is missing"
  o=$obj/$(basename "$(dirname "$src")")_$(basename "${src%.cc}").o
  objects+=("$o")
  if [ ! -f "$o" ] || [ "$src" -nt "$o" ] || [ "$here/build.sh" -nt "$o" ] ||
    { [[ "$src" == "$here"/* ]] && [ -n "$(find "$here" -name '*.h' -newer "$o")" ]; }; then
    todo+=("$src" "$o")
  fi
done
if [ "${#todo[@]}" -gt 0 ]; then
  say "compiling $((${#todo[@]} / 2)) of ${#sources[@]} sources (-O3, ${JOBS:-2} at a time)"
  # shellcheck disable=SC2016 # expanded by the inner bash
  printf '%s\n' "${todo[@]}" | xargs -d '\n' -n2 -P "${JOBS:-2}" bash -c 'em++ $CXXFLAGS -c "$0" -o "$1"'
fi

# --- link -------------------------------------------------------------------
# MODULARIZE + EXPORT_ES6: `export default createLevelDB(moduleArg)`.
# ENVIRONMENT=worker (the benchmark) and node (bench/browser/leveldb/smoke.mjs).
# No FS flags: LevelDB's PosixEnv does POSIX file I/O, which emscripten backs
# with MEMFS (emscripten 3.1.6 has no OPFS backend; see README.md).
# INITIAL_MEMORY 32 MiB holds the 8 MiB block cache and two 4 MiB memtables
# without growing at once; ALLOW_MEMORY_GROWTH lets it grow past that.
exports=_malloc,_free,_ldb_last_error,_ldb_open,_ldb_close,_ldb_destroy,_ldb_put_batch,_ldb_get,_ldb_multi_get,_ldb_scan,_ldb_property,_ldb_settle,_ldb_out,_ldb_get_copy,_ldb_multi_get_copy,_ldb_scan_copy
LDFLAGS="-O3 -msimd128 -sMODULARIZE=1 -sEXPORT_ES6=1 -sEXPORT_NAME=createLevelDB -sENVIRONMENT=worker,node
  -sALLOW_MEMORY_GROWTH=1 -sINITIAL_MEMORY=33554432 -sEXPORTED_FUNCTIONS=$exports
  -sEXPORTED_RUNTIME_METHODS=UTF8ToString"
say "linking -> $out/leveldb.{js,wasm}"
link=$obj/link
rm -rf "$link"
mkdir -p "$link"
# shellcheck disable=SC2086 # flag lists
em++ $LDFLAGS "${objects[@]}" -o "$link/leveldb.js"
# The flags, for the adapter's `options` record and for anyone reading the build.
printf '{"emscripten":"%s","classicLevel":"%s","leveldb":"1.20","snappy":"1.1.4","cxxflags":"%s","ldflags":"%s"}\n' \
  "$emcc_version" "$CLASSIC_LEVEL_VERSION" \
  "$(echo "$CXXFLAGS" | tr -s ' \n' ' ' | sed -E 's/ -I[^ ]+//g')" "$(echo "$LDFLAGS" | tr -s ' \n' ' ')" \
  >"$link/build.json"
mkdir -p "$out"
mv "$link/leveldb.wasm" "$link/build.json" "$out/"
mv "$link/leveldb.js" "$out/" # last: its mtime marks the build complete
say "$(printf '%s: %d bytes, %d gzipped; leveldb.js %d bytes' "$out/leveldb.wasm" "$(stat -c %s "$out/leveldb.wasm")" \
  "$(gzip -9 -c "$out/leveldb.wasm" | wc -c)" "$(stat -c %s "$out/leveldb.js")")"
