//! `OpfsFs`: the pool (`pool/`) on OPFS `FileSystemSyncAccessHandle`s, and
//! the class JavaScript fills it through.
//!
//! Only a dedicated worker can have sync access handles, and only
//! asynchronously; `siltdb` (js/src/opfs/pool.ts) opens them, adds them here,
//! tops the pool up between engine calls and holds the database's Web Lock.
//! Everything below is synchronous.

#[cfg(target_feature = "atomics")]
compile_error!(
    "silt-wasm's OPFS layer assumes a single-threaded wasm32 build: \
     JavaScript handles are neither Send nor Sync once wasm has threads"
);

use std::rc::Rc;
use std::sync::Arc;

use wasm_bindgen::prelude::*;

use crate::contract::RepairReport;
use crate::database::Database;
use crate::error::JsResult;
use crate::options::OpenOptions;
use crate::pool::{Pool, SlotError, SlotFile};

// When siltdb has made wasm memory a resizable buffer (so that views of
// pinned values survive growth), `buf` is a view of it, and access handles
// refuse such views: the bytes then go through a fixed-length bounce buffer
// (one memcpy; the OPFS call costs far more). Otherwise they go directly.
#[wasm_bindgen(inline_js = r#"
const KEEP = 1 << 20;
let bounce = new Uint8Array(64 * 1024);
function scratch(n) {
  if (n > KEEP) return new Uint8Array(n);
  if (bounce.length < n) bounce = new Uint8Array(KEEP);
  return bounce.subarray(0, n);
}
export function sah_read(h, buf, at) {
  if (!buf.buffer.resizable) return h.read(buf, { at });
  const tmp = scratch(buf.length);
  const n = h.read(tmp, { at });
  buf.set(tmp.subarray(0, n));
  return n;
}
export function sah_write(h, buf, at) {
  if (!buf.buffer.resizable) return h.write(buf, { at });
  const tmp = scratch(buf.length);
  tmp.set(buf);
  return h.write(tmp, { at });
}
export function sah_size(h) { return h.getSize(); }
export function sah_truncate(h, len) { h.truncate(len); }
export function sah_flush(h) { h.flush(); }
export function sah_close(h) { h.close(); }
export function error_text(e) {
  if (e instanceof Error || (e && typeof e === 'object' && 'name' in e)) return `${e.name}: ${e.message}`;
  return String(e);
}
export function error_name(e) { return e && typeof e === 'object' && typeof e.name === 'string' ? e.name : ''; }
"#)]
extern "C" {
    #[wasm_bindgen(catch)]
    fn sah_read(h: &JsValue, buf: &mut [u8], at: f64) -> Result<f64, JsValue>;
    #[wasm_bindgen(catch)]
    fn sah_write(h: &JsValue, buf: &[u8], at: f64) -> Result<f64, JsValue>;
    #[wasm_bindgen(catch)]
    fn sah_size(h: &JsValue) -> Result<f64, JsValue>;
    #[wasm_bindgen(catch)]
    fn sah_truncate(h: &JsValue, len: f64) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn sah_flush(h: &JsValue) -> Result<(), JsValue>;
    #[wasm_bindgen(catch)]
    fn sah_close(h: &JsValue) -> Result<(), JsValue>;
    fn error_text(e: &JsValue) -> String;
    fn error_name(e: &JsValue) -> String;
}

/// One `FileSystemSyncAccessHandle` (or anything with its synchronous
/// methods: the Node tests use an in-memory stand-in).
pub struct AccessHandle(JsValue);

// SAFETY: the engine's `Fs` requires Send + Sync because a native build may
// pump background work from a second thread. This module only exists on
// wasm32 without the `atomics` feature (see the compile_error above), where
// there is exactly one thread: the handle is never sent nor shared across
// threads, because there are none.
unsafe impl Send for AccessHandle {}
// SAFETY: as for Send.
unsafe impl Sync for AccessHandle {}

fn slot_error(e: JsValue) -> SlotError {
    SlotError { quota: error_name(&e) == "QuotaExceededError", message: error_text(&e) }
}

impl SlotFile for AccessHandle {
    fn read_at(&self, at: u64, buf: &mut [u8]) -> Result<usize, SlotError> {
        Ok(sah_read(&self.0, buf, at as f64).map_err(slot_error)? as usize)
    }

    fn write_at(&self, at: u64, data: &[u8]) -> Result<(), SlotError> {
        let mut done = 0usize;
        while done < data.len() {
            let n = sah_write(&self.0, &data[done..], (at + done as u64) as f64).map_err(slot_error)? as usize;
            if n == 0 {
                return Err(SlotError::io("the access handle wrote nothing"));
            }
            done += n;
        }
        Ok(())
    }

    fn size(&self) -> Result<u64, SlotError> {
        Ok(sah_size(&self.0).map_err(slot_error)? as u64)
    }

    fn truncate(&self, len: u64) -> Result<(), SlotError> {
        sah_truncate(&self.0, len as f64).map_err(slot_error)
    }

    fn flush(&self) -> Result<(), SlotError> {
        sah_flush(&self.0).map_err(slot_error)
    }

    fn close(&self) {
        // Closing a closed handle is fine; nothing else can fail here.
        let _ = sah_close(&self.0);
    }
}

/// The pool of OPFS files of one database, filled by `siltdb`.
#[wasm_bindgen]
pub struct OpfsPool {
    pool: Pool<AccessHandle>,
}

impl Default for OpfsPool {
    fn default() -> Self {
        Self::new()
    }
}

#[wasm_bindgen]
impl OpfsPool {
    #[wasm_bindgen(constructor)]
    pub fn new() -> OpfsPool {
        OpfsPool { pool: Pool::new() }
    }

    /// Adds an open sync access handle; its header says which logical file
    /// it holds, if any. `label` (the OPFS file name) appears in messages.
    pub fn add(&self, handle: JsValue, label: &str) -> JsResult<()> {
        self.pool.add(AccessHandle(handle), label).map_err(crate::error::to_js)
    }

    /// Pooled files free for a new logical file.
    #[wasm_bindgen(js_name = freeCount)]
    pub fn free_count(&self) -> u32 {
        self.pool.free_count() as u32
    }

    /// Pooled files in all.
    #[wasm_bindgen(js_name = fileCount)]
    pub fn file_count(&self) -> u32 {
        self.pool.stats().files as u32
    }

    /// Closes up to `max` free pooled files and lets them go from the pool
    /// (siltdb then removes them from the directory, so that the handle
    /// budget gets them back: js/src/opfs/handle-budget.ts). Returns their
    /// OPFS file names.
    #[wasm_bindgen(js_name = closeFree)]
    pub fn close_free(&self, max: u32) -> Vec<String> {
        self.pool.close_free(max as usize)
    }

    /// Closes every handle (a database opened on the pool closes it too).
    pub fn close(&self) {
        self.pool.close();
    }

    /// Rebuilds the database in `dir` on this pool from its intact parts
    /// (the engine's `repair`; the caller holds the database's Web Lock and
    /// the database is not open). Returns what it salvaged and lost:
    /// `{ tablesIntact, tablesDamaged, tablesLost, blocksLost, walRecords,
    /// walsDamaged, entries, rangeDeletions, problems }`
    /// (`contract::RepairReport`).
    pub fn repair(&self, dir: &str, options: &crate::options::OpenOptions) -> JsResult<JsValue> {
        let fs: Arc<dyn silt_engine::fs::Fs> = Arc::new(self.pool.clone());
        let r = silt_engine::repair(fs, dir, &options.to_engine(crate::clock()))
            .map_err(crate::error::BindingError::from)?;
        Ok(RepairReport {
            tables_intact: r.tables_intact,
            tables_damaged: r.tables_damaged,
            tables_lost: r.tables_lost,
            blocks_lost: r.blocks_lost,
            wal_records: r.wal_records,
            wals_damaged: r.wals_damaged,
            entries: r.entries,
            range_deletions: r.range_deletions,
            problems: r.problems,
        }
        .into())
    }

    /// Runs the engine's fs contract suite on this pool inside `dir`;
    /// returns one "check: message" string per failure. For the browser
    /// tests, which must run it on real OPFS handles: only in the test build
    /// (feature `fs-contract`, `scripts/build.sh`), never in the shipped one.
    #[cfg(feature = "fs-contract")]
    #[wasm_bindgen(js_name = runFsContract)]
    pub fn run_fs_contract(&self, dir: &str) -> Vec<String> {
        silt_engine::fs::contract::run_all(&self.pool, dir)
            .into_iter()
            .map(|(check, message)| format!("{check}: {message}"))
            .collect()
    }
}

#[wasm_bindgen]
impl Database {
    /// Opens (or creates) the database in `dir` on a pool of OPFS files.
    /// The caller holds the database's Web Lock. Closing the database
    /// closes the pool.
    #[wasm_bindgen(js_name = openPool)]
    /// With `maxBytes`, the pool's files are capped at that many bytes
    /// (see `pool/`).
    pub fn open_pool(pool: &OpfsPool, dir: &str, options: &OpenOptions) -> JsResult<Database> {
        let max = options.max_bytes()?;
        pool.pool.set_max_bytes(max);
        pool.pool.set_reserve(max.map_or(0, |m| m / crate::options::MAX_BYTES_RESERVE_DIVISOR));
        let fs = Arc::new(pool.pool.clone());
        let control = Rc::new(pool.pool.clone());
        Ok(Database::open_with(fs, dir, options.to_engine(crate::clock()), Some(control))?)
    }
}
