//! The database as JavaScript sees it.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use silt_engine::fs::Fs;
use silt_engine::{BatchOp, Db, Error, Options, PinnedValue, ReadOptions, Snapshot, WriteOptions};
use wasm_bindgen::prelude::*;

use crate::batch::{decode_batch, decode_puts};
use crate::contract::{Histogram, IngestReport, PoolStatistics, Statistics, VerifyReport};
use crate::error::{BindingError, Code, JsResult};
use crate::exchange::Exchange;
use crate::iterator::Iterator;
use crate::pool::{PoolControl, ReserveGuard};
use crate::report::{FieldValue, Named};
use crate::results::{pinned_results, PinTable};

// Free pooled files the binding needs before it lets the engine start a
// step of background work, a manual compaction or an open; siltdb keeps at
// least the largest of these free (contract.rs hands them over). Writes
// need none: a write that finds no file for the work that would make room
// waits in memory (the engine's `make_room_for_write`).
/// A write that switches the memtable (a new log) and flushes one (a table):
/// what `startCompactRange` may create at once.
pub(crate) const WRITE_RESERVE: usize = 2;
/// A step of background work: at most one output file per target file size
/// of its budget, plus one (siltdb's budget is far below a target file size).
pub(crate) const BACKGROUND_RESERVE: usize = 4;
/// Opening: a new manifest and a new log.
pub(crate) const OPEN_RESERVE: usize = 2;

/// Background work a write pays for, in bytes per byte it wrote: writes do
/// their share of flushes and compactions as they go (a slice at a time),
/// so that a loop of writes that never yields to the event loop (where
/// siltdb's pump runs) neither piles up L0 files until a write stalls to
/// compact them all at once, nor holds more pooled files than its data
/// needs.
const PACE_FACTOR: u64 = 4;
/// Writes pay in slices of at least this many bytes of work.
const PACE_SLICE_BYTES: u64 = 256 << 10;
/// What each write pays while L0 is halfway from its compaction trigger to
/// its stop trigger (compactions are behind): RocksDB's slowdown, a bounded
/// slice of work per write instead of a stall that compacts all of L0.
const PACE_BEHIND_BYTES: u64 = 1 << 20;
/// At most this much work owed (more is forgiven: the pump catches up).
const PACE_MAX_BYTES: u64 = 4 << 20;

// `backgroundWork` result bits (contract.rs hands them over).
pub(crate) const DID_WORK: u32 = 1;
pub(crate) const WORK_LEFT: u32 = 2;
/// Skipped until the pool has free files again (with WORK_LEFT).
pub(crate) const WAITING_FOR_POOL: u32 = 4;

/// An open database. Every call after `close()` throws `Closed`.
///
/// On a pool of OPFS files, calls that may create files first check that
/// enough pooled files are free and throw `PoolExhausted` when not, before
/// the engine starts anything it could not finish. With a size cap
/// (`maxBytes`), calls that free space or must not fail for lack of it
/// (deletes, flushes, compactions, background work, open and close) may use
/// the pool's space reserve; puts stop short of it (`QuotaExceeded`).
#[wasm_bindgen]
pub struct Database {
    /// `None` once closed.
    db: RefCell<Option<Db>>,
    pool: Option<Rc<dyn PoolControl>>,
    snapshots: RefCell<HashMap<u32, Rc<Snapshot>>>,
    next_snapshot: Cell<u32>,
    /// Open transactions by id (transactions.rs).
    pub(crate) transactions: RefCell<HashMap<u32, silt_engine::OptimisticTransaction>>,
    pub(crate) next_transaction: Cell<u32>,
    /// Requests and answers of `getPinned` / `multiGetPinned` (reads.rs).
    pub(crate) exchange: RefCell<Exchange>,
    /// Results JavaScript holds, by handle; kept past `close()`.
    pub(crate) pins: RefCell<PinTable>,
    /// The value of the last `get`, pinned until the next exchange call
    /// so that JavaScript can copy it out right after the call returns.
    pub(crate) transient: RefCell<Option<PinnedValue>>,
    /// The import in progress (`importStart` .. `importFinish`), if any.
    pub(crate) importer: RefCell<Option<silt_engine::Importer>>,
    /// The ingest of RocksDB tables in progress (`rocksdbIngestStart` ..
    /// `rocksdbIngestFinish`), if any, and the bytes pushed to it.
    pub(crate) rocksdb_ingest: RefCell<Option<(silt_engine::RocksdbIngest, u64)>>,
    /// Bytes of background work writes owe (see [`PACE_FACTOR`]).
    pace_debt: Cell<u64>,
    /// Paced work failed: writes leave background work to siltdb's pump
    /// (which retries with a backoff) until a pump step succeeds, rather
    /// than redo the failing work at every write.
    pace_paused: Cell<bool>,
    /// The engine's data block size: background work budgets count blocks.
    block_size: u64,
    /// L0 files from which writes pay [`PACE_BEHIND_BYTES`] each.
    l0_behind: usize,
    /// The engine's `target_file_size_base` and `max_write_buffer_number`:
    /// how many files an ingest needs.
    target_file_size: u64,
    max_write_buffer_number: u64,
}

fn closed() -> BindingError {
    Error::Closed("the database was closed".to_string()).into()
}

impl Database {
    pub(crate) fn open_with(
        fs: Arc<dyn Fs>,
        dir: &str,
        options: Options,
        pool: Option<Rc<dyn PoolControl>>,
    ) -> Result<Database, BindingError> {
        if let Some(p) = &pool {
            reserve(&**p, OPEN_RESERVE, "open the database")?;
        }
        // Opening writes a new manifest and log before it deletes the old
        // ones: the space reserve is there so that a full database reopens.
        let space = pool.as_ref().map(|p| p.use_reserve());
        let block_size = (options.block_size as u64).max(1);
        let l0_behind = (options.level0_file_num_compaction_trigger + options.level0_stop_writes_trigger).div_ceil(2);
        let target_file_size = options.target_file_size_base.max(1);
        let max_write_buffer_number = options.max_write_buffer_number as u64;
        let db = Db::open(fs, dir, options)?;
        drop(space);
        Ok(Database {
            db: RefCell::new(Some(db)),
            pool,
            snapshots: RefCell::new(HashMap::new()),
            next_snapshot: Cell::new(1),
            transactions: RefCell::new(HashMap::new()),
            next_transaction: Cell::new(1),
            exchange: RefCell::new(Exchange::default()),
            pins: RefCell::new(PinTable::default()),
            transient: RefCell::new(None),
            importer: RefCell::new(None),
            rocksdb_ingest: RefCell::new(None),
            pace_debt: Cell::new(0),
            pace_paused: Cell::new(false),
            block_size,
            l0_behind,
            target_file_size,
            max_write_buffer_number,
        })
    }

    /// Runs `f` on the open engine, first checking that `reserve` pooled
    /// files are free.
    pub(crate) fn engine<T, E: Into<BindingError>>(
        &self,
        reserve_files: usize,
        f: impl FnOnce(&Db) -> Result<T, E>,
    ) -> Result<T, BindingError> {
        self.engine_checked(reserve_files, "write", f)
    }

    /// [`Database::engine`], naming `what` needs the files in its error.
    pub(crate) fn engine_checked<T, E: Into<BindingError>>(
        &self,
        reserve_files: usize,
        what: &str,
        f: impl FnOnce(&Db) -> Result<T, E>,
    ) -> Result<T, BindingError> {
        let guard = self.db.borrow();
        let db = guard.as_ref().ok_or_else(closed)?;
        if let (Some(p), true) = (&self.pool, reserve_files > 0) {
            reserve(&**p, reserve_files, what)?;
        }
        f(db).map_err(Into::into)
    }

    /// [`Database::engine`] for work that frees space or must not fail for
    /// lack of it: it may use the pool's space reserve (see `pool/`).
    pub(crate) fn engine_freeing<T, E: Into<BindingError>>(
        &self,
        reserve_files: usize,
        f: impl FnOnce(&Db) -> Result<T, E>,
    ) -> Result<T, BindingError> {
        let _space: Option<ReserveGuard> = self.pool.as_ref().map(|p| p.use_reserve());
        self.engine(reserve_files, f)
    }

    pub(crate) fn snapshot_for(&self, id: u32) -> Result<Option<Rc<Snapshot>>, BindingError> {
        if id == 0 {
            return Ok(None);
        }
        match self.snapshots.borrow().get(&id) {
            Some(s) => Ok(Some(s.clone())),
            None => {
                Err(BindingError::new(Code::Released, "this snapshot was released: take a new one (db.snapshot())"))
            }
        }
    }

    fn write_options(sync: bool) -> WriteOptions {
        WriteOptions { sync }
    }

    /// After a write of `bytes`: runs the background work the writes so far
    /// owe, a slice at a time (see [`PACE_FACTOR`]). Its failures are left
    /// to siltdb's pump, which meets them again and acts on them (the write
    /// itself went through); until a pump step succeeds, writes pace no more.
    pub(crate) fn pace_background_work(&self, bytes: usize) {
        let owed = (self.pace_debt.get() + bytes as u64 * PACE_FACTOR).min(PACE_MAX_BYTES);
        if self.pace_paused.get() {
            self.pace_debt.set(owed);
            return;
        }
        let behind = self.db.borrow().as_ref().is_some_and(|db| db.level0_file_count() >= self.l0_behind);
        let pay = if behind {
            owed.max(PACE_BEHIND_BYTES)
        } else if owed >= PACE_SLICE_BYTES {
            owed
        } else {
            self.pace_debt.set(owed);
            return;
        };
        self.pace_debt.set(0);
        if self.background_work_inner((pay / self.block_size).max(1) as usize).is_err() {
            self.pace_paused.set(true);
        }
    }

    /// A write, then its share of background work.
    fn written<T>(&self, bytes: usize, r: Result<T, BindingError>) -> Result<T, BindingError> {
        let v = r?;
        self.pace_background_work(bytes);
        Ok(v)
    }

    /// [`Database::put`].
    pub(crate) fn put_inner(&self, key: &[u8], value: &[u8], sync: bool) -> Result<(), BindingError> {
        self.written(key.len() + value.len(), self.engine(0, |db| db.put(&Self::write_options(sync), key, value)))
    }

    /// [`Database::background_work`]; skipped (WAITING_FOR_POOL) while the
    /// pool has no free file. With few, the engine's steps create at most
    /// one each (compactions keep their outputs open rather than split,
    /// `Fs::files_left`), and a step that finds none is left queued: that
    /// too is WAITING_FOR_POOL (siltdb tops the pool up), not an error.
    pub(crate) fn background_work_inner(&self, budget: usize) -> Result<u32, BindingError> {
        if let Some(p) = &self.pool {
            if self.db.borrow().is_some() && p.free_count() == 0 {
                return Ok(WORK_LEFT | WAITING_FOR_POOL);
            }
        }
        // Flushes and compactions end by deleting what they replace: they
        // may use the space reserve.
        let progress = match self.engine_freeing(0, |db| db.do_background_work(budget)) {
            Err(e) if e.code == "PoolExhausted" => return Ok(WORK_LEFT | WAITING_FOR_POOL),
            r => r?,
        };
        Ok((u32::from(progress.did_work) * DID_WORK) | (u32::from(progress.work_left) * WORK_LEFT))
    }
}

/// Fails with `PoolExhausted` unless `n` pooled files are free.
fn reserve(pool: &dyn PoolControl, n: usize, what: &str) -> Result<(), BindingError> {
    let free = pool.free_count();
    if free >= n {
        return Ok(());
    }
    Err(BindingError::from(Error::PoolExhausted {
        file: "the OPFS file pool".into(),
        message: format!(
            "it has {free} free files and may need {n} to {what}; \
             siltdb tops the pool up between calls, so let the worker's event loop run \
             (await something), or open with a larger poolReserve"
        ),
    }))
}

#[wasm_bindgen]
impl Database {
    /// Opens a new, empty database on an in-memory file system. Nothing is
    /// persisted: the data is gone when the database is closed or dropped.
    #[wasm_bindgen(js_name = openMemory)]
    pub fn open_memory(options: &crate::options::OpenOptions) -> JsResult<Database> {
        if options.max_bytes()?.is_some() {
            return Err(BindingError::from(Error::NotSupported(
                "maxBytes caps a database's OPFS files; an in-memory database has none (use open() in a worker)".into(),
            ))
            .into());
        }
        let fs: Arc<dyn Fs> = Arc::new(silt_engine::fs::MemFs::new());
        Ok(Database::open_with(fs, "db", options.to_engine(crate::clock()), None)?)
    }

    /// Stores `value` under `key`; with `sync`, durable before it returns.
    pub fn put(&self, key: &[u8], value: &[u8], sync: bool) -> JsResult<()> {
        crate::leak::leak_per_call();
        Ok(self.put_inner(key, value, sync)?)
    }

    /// Records a merge operand for `key` (the database's merge operator,
    /// chosen at open, combines it with the value when read).
    pub fn merge(&self, key: &[u8], operand: &[u8], sync: bool) -> JsResult<()> {
        Ok(self.written(
            key.len() + operand.len(),
            self.engine(0, |db| db.merge(&Self::write_options(sync), key, operand)),
        )?)
    }

    /// Removes `key`. Removing a missing key is not an error. May use the
    /// space reserve: deleting is how a full database is emptied.
    pub fn delete(&self, key: &[u8], sync: bool) -> JsResult<()> {
        Ok(self.written(key.len(), self.engine_freeing(0, |db| db.delete(&Self::write_options(sync), key)))?)
    }

    /// Removes every key in `[start, end)` (one range tombstone). May use
    /// the space reserve.
    #[wasm_bindgen(js_name = deleteRange)]
    pub fn delete_range(&self, start: &[u8], end: &[u8], sync: bool) -> JsResult<()> {
        Ok(self.written(
            start.len() + end.len(),
            self.engine_freeing(0, |db| db.delete_range(&Self::write_options(sync), start, end)),
        )?)
    }

    /// Applies a batch encoded by siltdb (see `batch.rs`) atomically. A
    /// batch of deletes only may use the space reserve.
    pub fn write(&self, ops: &[u8], sync: bool) -> JsResult<()> {
        crate::leak::leak_per_call();
        let batch = decode_batch(ops)?;
        // Deletes only, and bookkeeping puts (the engine's rule, Db::write).
        let mut puts = 0;
        let frees = batch.iter().all(|op| match op {
            Ok(BatchOp::Delete { .. } | BatchOp::RangeDelete { .. }) => true,
            Ok(BatchOp::Put { .. }) => {
                puts += 1;
                puts <= batch.bookkeeping_puts()
            }
            _ => false,
        });
        let write = |db: &Db| db.write(&Self::write_options(sync), batch);
        Ok(self.written(ops.len(), if frees { self.engine_freeing(0, write) } else { self.engine(0, write) })?)
    }

    /// Pooled files an ingest of `bytes` of encoded batch may create: its
    /// tables (at most one per target file size of input, plus one), a
    /// flush of every memtable first (a new log, a table each), and a new
    /// manifest. None for an empty one.
    #[wasm_bindgen(js_name = ingestFilesNeeded)]
    pub fn ingest_files_needed(&self, bytes: f64) -> u32 {
        if bytes <= 0.0 {
            return 0;
        }
        let tables = (bytes as u64).div_ceil(self.target_file_size) + 1;
        (tables + self.max_write_buffer_number + 2).min(u32::MAX as u64) as u32
    }

    /// Adds the puts of a batch encoded by siltdb as new table files, in
    /// one atomic, durable step (the engine's `Db::ingest`): `{ keys, files,
    /// bytes, level, sequence, flushedMemtables }` (`contract::IngestReport`).
    /// With `sorted`, keys out of order are refused (`InvalidArgument`)
    /// instead of sorted. Fails with `PoolExhausted` before writing anything
    /// unless enough pooled files are free (`ingestFilesNeeded`).
    pub fn ingest(&self, ops: &[u8], sorted: bool) -> JsResult<JsValue> {
        let entries = decode_puts(ops)?;
        let need = self.ingest_files_needed(ops.len() as f64) as usize;
        let report =
            self.engine_checked(need, "ingest", |db| db.ingest_pairs(entries, &silt_engine::IngestOptions { sorted }))?;
        Ok(IngestReport {
            keys: report.keys,
            files: report.files,
            bytes: report.bytes,
            level: report.level,
            sequence: report.sequence,
            flushed_memtables: report.flushed_memtables,
        }
        .into())
    }

    /// Takes a snapshot; returns its id (never 0).
    pub fn snapshot(&self) -> JsResult<u32> {
        let snap = self.engine(0, |db| Ok::<_, Error>(db.snapshot()))?;
        let id = self.next_snapshot.get();
        self.next_snapshot.set(id.checked_add(1).unwrap_or(1).max(1));
        self.snapshots.borrow_mut().insert(id, Rc::new(snap));
        Ok(id)
    }

    /// Releases a snapshot. Iterators made on it keep it until they end.
    /// Releasing twice does nothing.
    #[wasm_bindgen(js_name = releaseSnapshot)]
    pub fn release_snapshot(&self, id: u32) {
        self.snapshots.borrow_mut().remove(&id);
    }

    /// An iterator from `lower` (inclusive) to `upper` (exclusive), either
    /// bound optional, read at `snapshot` (0 = now). With `auto_refresh` it
    /// reads as of a snapshot (the one given, or one taken for it) and moves
    /// onto each new SuperVersion at its next step, so that it stops pinning
    /// memtables and files that flushes and compactions made obsolete
    /// (RocksDB's `auto_refresh_iterator_with_snapshot`).
    pub fn iterator(
        &self,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
        reverse: bool,
        snapshot: u32,
        auto_refresh: bool,
    ) -> JsResult<Iterator> {
        let mut snap = self.snapshot_for(snapshot)?;
        if auto_refresh && snap.is_none() {
            snap = Some(Rc::new(self.engine(0, |db| Ok::<_, Error>(db.snapshot()))?));
        }
        let opts = ReadOptions {
            snapshot: snap.as_deref(),
            lower_bound: lower,
            upper_bound: upper,
            auto_refresh_iterator_with_snapshot: auto_refresh,
            ..ReadOptions::default()
        };
        let it = self.engine(0, |db| db.iter(&opts))?;
        Ok(Iterator::new(it, snap, reverse))
    }

    /// The number of keys from `lower` (inclusive) to `upper` (exclusive),
    /// either bound optional, at `snapshot` (0 = now): counted inside the
    /// engine, no key or value crosses into JavaScript. A `f64`: exact up
    /// to 2^53 keys.
    pub fn count(&self, lower: Option<Vec<u8>>, upper: Option<Vec<u8>>, snapshot: u32) -> JsResult<f64> {
        let snap = self.snapshot_for(snapshot)?;
        let opts =
            ReadOptions { snapshot: snap.as_deref(), lower_bound: lower, upper_bound: upper, ..ReadOptions::default() };
        Ok(self.engine(0, |db| db.count(&opts))? as f64)
    }

    /// The bytes of table files holding keys from `start` (inclusive) to
    /// `end` (exclusive), either optional: from the index blocks, no data
    /// block read; unflushed writes not counted.
    #[wasm_bindgen(js_name = approximateSize)]
    pub fn approximate_size(&self, start: Option<Vec<u8>>, end: Option<Vec<u8>>) -> JsResult<f64> {
        Ok(self.engine(0, |db| db.approximate_size(start.as_deref(), end.as_deref()))? as f64)
    }

    /// Flushes every memtable to table files and waits for it.
    pub fn flush(&self) -> JsResult<()> {
        Ok(self.engine_freeing(BACKGROUND_RESERVE, |db| db.flush())?)
    }

    /// Starts compacting every key in `[begin, end]` (either bound
    /// optional) down to the last level. [`Database::background_work`]
    /// carries it out in budgeted steps, after flushing the memtable this
    /// switches out, so the worker goes on serving requests meanwhile; work
    /// is left until it is done.
    #[wasm_bindgen(js_name = startCompactRange)]
    pub fn start_compact_range(&self, begin: Option<Vec<u8>>, end: Option<Vec<u8>>) -> JsResult<()> {
        Ok(self.engine_freeing(WRITE_RESERVE, |db| db.start_compact_range(begin.as_deref(), end.as_deref()))?)
    }

    /// Starts a read-optimising compaction if the database is idle enough
    /// for one (the engine's `start_idle_compaction`: no other background
    /// work due, more than one sorted run for a lookup to probe, tables
    /// within `idleCompactionMaxBytes`); [`Database::background_work`]
    /// carries it out in budgeted steps. Returns whether it started. The
    /// worker calls it once the database has had no write for a while.
    #[wasm_bindgen(js_name = startIdleCompaction)]
    pub fn start_idle_compaction(&self) -> JsResult<bool> {
        Ok(self.engine(0, |db| db.start_idle_compaction())?)
    }

    /// Whether background work is due ([`Db::background_work_due`]): after a
    /// write, siltdb's pump runs a step only then. True once closed (the
    /// step reports it).
    #[wasm_bindgen(js_name = backgroundDue)]
    pub fn background_due(&self) -> bool {
        self.db.borrow().as_ref().is_none_or(Db::background_work_due)
    }

    /// Runs at most about `budget` blocks of background work. Returns bits
    /// (DID_WORK, WORK_LEFT, WAITING_FOR_POOL: see `contract.rs`). A failed
    /// step throws its error with a `recovery` property: what the engine
    /// decided it means (`retryLater`, `failAlone`, `stopWrites`; the
    /// engine's `Recovery`).
    #[wasm_bindgen(js_name = backgroundWork)]
    pub fn background_work(&self, budget: u32) -> JsResult<u32> {
        let bits = self.background_work_inner(budget as usize)?;
        if bits & WAITING_FOR_POOL == 0 {
            self.pace_paused.set(false);
        }
        Ok(bits)
    }

    /// Statistics: `{ properties, tickers, histograms, pinnedResults, pool? }`
    /// (`contract::Statistics`).
    /// `properties` are gauges of the database (camelCase names),
    /// `tickers` counters by their RocksDB names (`rocksdb.block.cache.hit`,
    /// `rocksdb.bloom.filter.useful`, ...), `pool` the OPFS pool's files
    /// (counts, and `paths`: the logical files their headers name).
    pub fn statistics(&self) -> JsResult<JsValue> {
        // The last get's value was copied out long ago: it pins nothing.
        self.transient.borrow_mut().take();
        let (properties, tickers, histograms) = self.engine(0, |db| Ok::<_, Error>(engine_statistics(db)))?;
        let pool = self.pool.as_ref().map(|pool| {
            let s = pool.stats();
            PoolStatistics {
                files: s.files,
                free: s.free,
                removed_open: s.removed_open,
                data_bytes: s.data_bytes,
                exhausted: s.exhausted,
                bytes: s.bytes,
                max_bytes: s.max_bytes,
                reserve_bytes: s.max_bytes.map(|_| s.reserve_bytes),
                paths: pool.paths(),
            }
        });
        Ok(Statistics { properties, tickers, histograms, pinned_results: pinned_results(), pool }.into())
    }

    /// Reads every block of every table file and checks every checksum and
    /// key: `{ tables, entries, tableBytes }` (`contract::VerifyReport`), or
    /// the first damage found (`Corruption` / `ChecksumMismatch`, with file
    /// and offset).
    pub fn verify(&self) -> JsResult<JsValue> {
        let r = self.engine(0, |db| db.verify())?;
        Ok(VerifyReport { tables: r.tables, entries: r.entries, table_bytes: r.table_bytes }.into())
    }

    /// Free pooled files right now (`undefined` for an in-memory database).
    #[wasm_bindgen(js_name = poolFree)]
    pub fn pool_free(&self) -> Option<u32> {
        self.pool.as_ref().map(|p| p.free_count() as u32)
    }

    /// Closes the database: syncs the log, lets go of every snapshot, and
    /// closes the pooled files. Closing twice does nothing. If the engine
    /// reports an error while closing, everything is closed all the same
    /// and the error is thrown.
    pub fn close(&self) -> JsResult<()> {
        Ok(self.close_inner(true)?)
    }

    /// Closes the database as `close` does, but leaves the pooled files
    /// open: the caller keeps the pool for a reopen (siltdb parks it, see
    /// js/src/opfs/parking.ts) and closes it itself.
    #[wasm_bindgen(js_name = closeKeepingPool)]
    pub fn close_keeping_pool(&self) -> JsResult<()> {
        Ok(self.close_inner(false)?)
    }
}

impl Database {
    pub(crate) fn close_inner(&self, close_pool: bool) -> Result<(), BindingError> {
        let Some(db) = self.db.borrow_mut().take() else {
            return Ok(());
        };
        self.transient.borrow_mut().take();
        let space = self.pool.as_ref().map(|p| p.use_reserve());
        let result = db.close();
        drop(space);
        drop(db);
        self.snapshots.borrow_mut().clear();
        self.transactions.borrow_mut().clear();
        if let (true, Some(p)) = (close_pool, &self.pool) {
            p.close();
        }
        result.map_err(BindingError::from)
    }
}

#[wasm_bindgen]
impl Database {
    /// Whether `close()` has run.
    #[wasm_bindgen(getter, js_name = isClosed)]
    pub fn is_closed(&self) -> bool {
        self.db.borrow().is_none()
    }

    /// The sequence number of the last applied write (0 for a new
    /// database; each update of a write takes one). Exact as a JavaScript
    /// number below 2^53. `Closed` once closed.
    #[wasm_bindgen(getter, js_name = latestSequence)]
    pub fn latest_sequence(&self) -> JsResult<f64> {
        Ok(self.engine(0, |db| Ok::<_, Error>(db.latest_sequence() as f64))?)
    }

    /// The updates still in memory (not yet flushed to a table) with
    /// sequence numbers above `after`, oldest first, at most `max_bytes` of
    /// them (the newest that fit; see `Db::unflushed_updates`): after an
    /// open, what the WAL replay recovered. Encoded back to back, each:
    /// `seq:f64le kind:u8 klen:u32le key elen:u32le end` (kind as in a
    /// write batch: 0 delete, 1 put, 2 merge, 3 range delete; `end` a range
    /// delete's, else empty). `connect()`'s leader publishes from them the
    /// changes a leader that crashed did not (issue 40, item 3).
    #[wasm_bindgen(js_name = unflushedUpdates)]
    pub fn unflushed_updates(&self, after: f64, max_bytes: u32) -> JsResult<Vec<u8>> {
        let updates = self.engine(0, |db| Ok::<_, Error>(db.unflushed_updates(after as u64, max_bytes as usize)))?;
        let mut out = Vec::with_capacity(updates.iter().map(|u| u.key.len() + u.end.len() + 17).sum());
        for u in updates {
            out.extend_from_slice(&(u.seq as f64).to_le_bytes());
            out.push(u.kind as u8);
            out.extend_from_slice(&(u.key.len() as u32).to_le_bytes());
            out.extend_from_slice(&u.key);
            out.extend_from_slice(&(u.end.len() as u32).to_le_bytes());
            out.extend_from_slice(&u.end);
        }
        Ok(out)
    }
}

/// Results pinning values right now, across every database of the module
/// (a leak check for tests and for the FinalizationRegistry safety net).
#[wasm_bindgen(js_name = pinnedResults)]
pub fn pinned_results_js() -> u32 {
    pinned_results() as u32
}

/// A property value: a number or a list of numbers (per level).
pub(crate) enum Prop {
    Num(u64),
    List(Vec<u64>),
}

impl FieldValue for Prop {
    fn into_js(self) -> Option<JsValue> {
        match self {
            Prop::Num(x) => x.into_js(),
            Prop::List(xs) => {
                Some(xs.into_iter().map(|x| JsValue::from_f64(x as f64)).collect::<js_sys::Array>().into())
            }
        }
    }
}

/// Gauges, counters and histograms, by their JavaScript names.
pub(crate) type EngineStatistics = (Named<Prop>, Named<u64>, Named<Histogram>);

/// The engine's gauges, counters and histograms, named for JavaScript.
/// The one place that knows which engine call provides which statistic.
pub(crate) fn engine_statistics(db: &Db) -> EngineStatistics {
    let p = db.properties();
    let props = vec![
        ("superVersionNumber", Prop::Num(p.super_version_number)),
        ("lastSequence", Prop::Num(p.last_sequence)),
        ("memtableBytes", Prop::Num(p.memtable_bytes)),
        ("immutableMemtables", Prop::Num(p.immutable_memtables)),
        ("filesPerLevel", Prop::List(p.files_per_level)),
        ("bytesPerLevel", Prop::List(p.bytes_per_level)),
        ("tableBytes", Prop::Num(p.table_bytes)),
        ("allMemtableBytes", Prop::Num(p.all_memtable_bytes)),
        ("liveTableBytes", Prop::Num(p.live_table_bytes)),
        ("pinnedBytes", Prop::Num(p.pinned_bytes)),
        ("blockCacheUsage", Prop::Num(p.block_cache_usage)),
        ("blockCacheCapacity", Prop::Num(p.block_cache_capacity)),
        ("rowCacheUsage", Prop::Num(p.row_cache_usage)),
        ("liveSnapshots", Prop::Num(p.live_snapshots)),
        ("backgroundWorkPending", Prop::Num(u64::from(p.background_work_pending))),
    ];
    let stats = db.statistics();
    let hists = stats
        .histograms
        .iter()
        .map(|h| {
            let summary =
                Histogram { count: h.count, sum: h.sum, min: h.min, max: h.max, p50: h.p50, p95: h.p95, p99: h.p99 };
            (h.name, summary)
        })
        .collect();
    (props, stats.tickers, hists)
}
