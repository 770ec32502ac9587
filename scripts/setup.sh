#!/usr/bin/env bash
# One idempotent setup for a fresh Debian machine of this kind. `npm run demo`
# and `npm test` both call it; every step checks first and skips what is there.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[setup] %s\n' "$*"; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# --- Chromium + chromedriver from Debian (never a downloaded browser) -------
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  say "installing Debian chromium + chromium-driver"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq chromium chromium-driver >/dev/null
else
  say "chromium present: $(/usr/bin/chromium --version 2>/dev/null | head -n1)"
fi

# --- Firefox ESR from Debian, for the Firefox suite (tests/firefox/run.mjs,
# driven by puppeteer-core over WebDriver BiDi: no geckodriver needed) --------
if [ ! -x /usr/bin/firefox-esr ]; then
  say "installing Debian firefox-esr"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq firefox-esr >/dev/null
else
  say "firefox-esr present: $(/usr/bin/firefox-esr --version 2>/dev/null | head -n1)"
fi

# --- WebKitGTK's MiniBrowser (in libwebkit2gtk-4.1-0) and Xvfb, for the
# WebKit suite (tests/webkit/run.mjs) -------------------------------------
# (MiniBrowser's folder names the architecture: /usr/lib/<triplet>/webkit2gtk-4.1.)
if ! compgen -G '/usr/lib/*/webkit2gtk-4.1/MiniBrowser' >/dev/null || ! command -v xvfb-run >/dev/null || ! command -v xauth >/dev/null; then
  say "installing Debian libwebkit2gtk-4.1-0 (MiniBrowser), xvfb, xauth"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq libwebkit2gtk-4.1-0 xvfb xauth >/dev/null
else
  say "MiniBrowser present: libwebkit2gtk-4.1-0 $(dpkg-query -W -f='${Version}' libwebkit2gtk-4.1-0 2>/dev/null)"
fi

# --- RocksDB's own tools from Debian (sst_dump, ldb), against which the
# RocksDB tables Silt writes and reads are checked (crates/engine/tests/rocksdb_tables.rs)
if ! command -v sst_dump >/dev/null || ! command -v ldb >/dev/null; then
  say "installing Debian rocksdb-tools (sst_dump, ldb)"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq rocksdb-tools >/dev/null
else
  say "rocksdb-tools present: $(dpkg-query -W -f='${Version}' rocksdb-tools 2>/dev/null)"
fi

# --- Rust: wasm32 target, lint components, wasm-bindgen-cli (pinned), wasm-pack (pinned)
export PATH="$HOME/.cargo/bin:$PATH"
for component in clippy rustfmt; do
  if ! rustup component list --installed | grep -q "^$component"; then
    say "adding rust component $component"
    rustup component add "$component"
  fi
done
# wasm32-unknown-unknown for the browser build; wasm32-wasip1 to run the
# engine's unit tests as WebAssembly in Node (scripts/wasi-run.mjs).
for target in wasm32-unknown-unknown wasm32-wasip1; do
  if ! rustup target list --installed | grep -qx "$target"; then
    say "adding rust target $target"
    rustup target add "$target"
  fi
done
WASM_BINDGEN_VERSION=0.2.129
if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$WASM_BINDGEN_VERSION" ]; then
  say "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (compiles; a few minutes)"
  cargo install --locked --force wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION"
fi
WASM_PACK_VERSION=0.15.1
if [ "$(wasm-pack --version 2>/dev/null | awk '{print $2}')" != "$WASM_PACK_VERSION" ]; then
  say "installing wasm-pack $WASM_PACK_VERSION (compiles; a few minutes)"
  cargo install --locked --force wasm-pack --version "$WASM_PACK_VERSION"
fi

# --- npm workspaces: reinstall only when package-lock.json changed ----------
if [ -f package-lock.json ]; then
  stamp=node_modules/.silt-lock-hash
  want=$(sha256sum package-lock.json | awk '{print $1}')
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    say "npm ci"
    npm ci --no-audit --no-fund
    echo "$want" > "$stamp"
  else
    say "node_modules up to date"
  fi
fi
say "done"
