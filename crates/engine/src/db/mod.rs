//! The database: write path, snapshots, and the reference-counted
//! `SuperVersion` that readers hold. Point reads are in `get.rs`, iterators
//! in `iter.rs`, flushes and compactions in `background.rs`, opening in
//! `open.rs`.
//!
//! Concurrency: one `Mutex<DbState>` serializes writers and the
//! bookkeeping of background work; readers take the current `SuperVersion`
//! (memtables + version) under a short lock and then read without any lock.
//! A flush's or compaction's step takes its job out under the lock, writes
//! its table files without it (LevelDB's pattern: writers go on meanwhile),
//! and installs the result under it again; one job runs at a time
//! (`DbState::job_running`, waited for on `DbInner::job_done`).

mod background;
mod backup;
mod failure;
mod get;
mod ingest;
mod iter;
mod multi_get;
mod open;
pub mod options;
mod ranges;
mod repair;
pub(crate) mod snapshot;
mod transaction;
mod unflushed;

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

pub use backup::{
    ExportForm, ExportOptions, Exporter, ImportReport, Importer, RocksdbIngest, RocksdbIngestReport, RocksdbPlan,
    EXPORT_MAGIC, EXPORT_VERSION, EXPORT_VERSION_ENTRIES,
};
pub use failure::{Failure, Recovery};
pub use get::PinnedValue;
pub use ingest::{IngestOptions, IngestReport};
pub use iter::DbIterator;
pub use multi_get::PinnedResults;
pub use options::{Options, ReadOptions, StatsLevel, WriteOptions, MAX_KEY_LEN, MAX_VALUE_LEN};
pub use repair::{repair, RepairReport};
pub use snapshot::Snapshot;
pub use transaction::{OptimisticTransaction, TransactionIterator};
pub use unflushed::Update;

use self::failure::{Attempt, Stage};
use self::options::{check_key, check_value};
use self::snapshot::SnapshotList;
use crate::batch::{BatchOp, WriteBatch};
use crate::compaction::job::TableJob;
use crate::compaction::picker::CompactionSpec;
use crate::error::{messages, Error, Result};
use crate::format::key::SequenceNumber;
use crate::fs::{Fs, FsLock};
use crate::memtable::MemTable;
use crate::stats::{Histogram, Statistics, StatisticsSnapshot, Ticker};
use crate::version::{wal_path, TableContext, Version, VersionSet, NUM_LEVELS};
use crate::wal::LogWriter;

/// How many times `write_buffer_size` the active memtable may hold while
/// the file layer has no file for the flush that would empty it
/// (`Db::make_room_for_write`).
const WAITING_MEMTABLE_FACTOR: usize = 8;

/// What a read sees: the active memtable, the immutable ones waiting to be
/// flushed (newest first), and the table files of one version. Readers hold
/// it by `Arc`; everything it references lives until the last reader lets go.
pub struct SuperVersion {
    pub(crate) mem: Arc<MemTable>,
    pub(crate) imm: Vec<Arc<MemTable>>,
    pub(crate) version: Arc<Version>,
    /// Increases by one each time a new SuperVersion is installed.
    pub number: u64,
}

impl SuperVersion {
    /// A SuperVersion of nothing (a placeholder once a reader let go).
    pub(crate) fn empty() -> Self {
        SuperVersion {
            mem: Arc::new(MemTable::new(0)),
            imm: Vec::new(),
            version: Arc::new(Version::default()),
            number: 0,
        }
    }
}

/// The result of one call to [`Db::do_background_work`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// This call did some work.
    pub did_work: bool,
    /// Work is still waiting (call again).
    pub work_left: bool,
}

/// Gauges of a database's shape, for the demo, the tests and tuning.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DbProperties {
    pub super_version_number: u64,
    pub last_sequence: u64,
    /// Bytes of the active and immutable memtables.
    pub memtable_bytes: u64,
    pub immutable_memtables: u64,
    pub files_per_level: Vec<u64>,
    pub bytes_per_level: Vec<u64>,
    pub table_bytes: u64,
    /// Bytes of every memtable still in memory: active, waiting to flush,
    /// and flushed ones readers still pin (RocksDB's size-all-mem-tables).
    pub all_memtable_bytes: u64,
    /// Bytes of every table file still held: the current version's and
    /// obsolete ones readers still pin.
    pub live_table_bytes: u64,
    pub block_cache_usage: u64,
    pub block_cache_capacity: u64,
    /// Bytes the row cache holds (0 without one).
    pub row_cache_usage: u64,
    /// Bytes of blocks and memtable entries pinned by values handed out
    /// without copying (`get_pinned`, `multi_get`), until they are dropped.
    pub pinned_bytes: u64,
    pub live_snapshots: u64,
    /// A flush or compaction is in progress or due.
    pub background_work_pending: bool,
}

/// What [`Db::verify`] checked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VerifyReport {
    pub tables: u64,
    pub entries: u64,
    pub table_bytes: u64,
}

struct DbState {
    mem: Arc<MemTable>,
    /// Oldest first.
    imm: VecDeque<Arc<MemTable>>,
    wal: LogWriter,
    wal_number: u64,
    /// The WAL holds bytes not yet synced.
    wal_dirty: bool,
    versions: VersionSet,
    /// The flush of `imm[0]`, once started.
    flush: Option<TableJob>,
    compaction: Option<(CompactionSpec, TableJob)>,
    /// A `compact_range` in progress, advanced by background steps.
    manual: Option<ManualCompaction>,
    /// Per level, the largest key of the file last compacted out of it.
    cursors: [Vec<u8>; NUM_LEVELS],
    /// A failure whose [`Recovery`] is `StopWrites` (`failure.rs`): every
    /// later write fails with it until reopen, as the files may end in a
    /// partial record that must not be followed.
    bg_error: Option<Error>,
    /// Table files being written, not yet in any version.
    pending_outputs: HashSet<u64>,
    /// A stall's flush or compaction last failed for lack of space: batches
    /// of deletes only skip that work until a background step succeeds.
    out_of_space: bool,
    /// Bytes flushes and compactions have read so far (budgets count them).
    work_bytes: u64,
    /// A write's stall or memtable switch found no file to create (this
    /// error): later writes wait in memory without trying again until a
    /// background step (which the embedder runs once it has files) gets
    /// work done.
    waiting_for_file: Option<Error>,
    /// A flush's or compaction's step runs with the lock released: its job
    /// is out of `flush` / `compaction`, and no other job may start (nor
    /// may anything that reads those slots decide) until it is back.
    job_running: bool,
}

/// A manual compaction of `[begin, end]`, working down from `level`.
struct ManualCompaction {
    begin: Option<Vec<u8>>,
    end: Option<Vec<u8>>,
    level: usize,
    /// An idle compaction's (`start_idle_compaction`): it ends at the last
    /// level that holds data instead of rewriting that level alone
    /// (RocksDB's `BottommostLevelCompaction::kSkip`).
    skip_bottommost: bool,
}

struct DbInner {
    fs: Arc<dyn Fs>,
    dir: String,
    options: Options,
    tables: TableContext,
    stats: Arc<Statistics>,
    state: Mutex<DbState>,
    /// Signalled when a job's step ends (`DbState::job_running` cleared).
    job_done: Condvar,
    current: Mutex<Arc<SuperVersion>>,
    sv_number: AtomicU64,
    /// L0 files of the current SuperVersion's version (kept with it, so
    /// that asking costs no lock: the browser binding asks at every write).
    l0_files: AtomicUsize,
    /// The last sequence number whose write is fully applied.
    visible_seq: AtomicU64,
    snapshots: Arc<SnapshotList>,
    closed: AtomicBool,
    lock: Mutex<Option<Box<dyn FsLock>>>,
    /// Every memtable created, to measure what readers pin.
    memtables: Mutex<Vec<std::sync::Weak<MemTable>>>,
    /// Bytes of blocks and entries pinned by values handed out uncopied.
    pinned: Arc<AtomicU64>,
    /// Lookups that searched more than one file, for read sampling.
    read_samples: AtomicU32,
    /// `Options::row_cache_capacity` > 0.
    row_cache: Option<crate::read::row_cache::RowCache>,
}

/// An open database. Safe to share between threads (`Arc<Db>`). Dropping it
/// closes it.
pub struct Db {
    inner: Arc<DbInner>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The database's state lock, held, that can be let go for the duration of
/// a job's step and waited on ([`StateGuard::run_job`],
/// [`StateGuard::wait_for_job`]). Derefs to the state.
struct StateGuard<'a> {
    inner: &'a DbInner,
    /// `None` only while a step runs unlocked.
    guard: Option<MutexGuard<'a, DbState>>,
}

impl<'a> StateGuard<'a> {
    fn new(inner: &'a DbInner) -> Self {
        StateGuard { inner, guard: Some(lock(&inner.state)) }
    }

    /// Waits (the lock let go meanwhile) until no job's step is running
    /// unlocked. Only another thread's step can be running: with one
    /// thread (wasm32) this never waits.
    fn wait_for_job(&mut self) {
        while self.job_running {
            let g = self.guard.take().expect("state lock held");
            self.guard = Some(self.inner.job_done.wait(g).unwrap_or_else(|p| p.into_inner()));
        }
    }

    /// Runs `step` with the lock let go and `job_running` set, then takes
    /// the lock again, clears it and wakes the waiters (also if `step`
    /// panics). The caller has taken the job out of the state, and waited
    /// for any other step first.
    fn run_job<R>(&mut self, step: impl FnOnce() -> R) -> R {
        debug_assert!(!self.job_running, "one job step at a time");
        self.job_running = true;
        self.guard = None;
        struct Relock<'g, 'a>(&'g mut StateGuard<'a>);
        impl Drop for Relock<'_, '_> {
            fn drop(&mut self) {
                let mut g = lock(&self.0.inner.state);
                g.job_running = false;
                self.0.guard = Some(g);
                self.0.inner.job_done.notify_all();
            }
        }
        let _relock = Relock(self);
        step()
    }
}

impl std::ops::Deref for StateGuard<'_> {
    type Target = DbState;
    fn deref(&self) -> &DbState {
        self.guard.as_deref().expect("state lock held")
    }
}

impl std::ops::DerefMut for StateGuard<'_> {
    fn deref_mut(&mut self) -> &mut DbState {
        self.guard.as_deref_mut().expect("state lock held")
    }
}

impl Db {
    /// Opens (or creates) the database in directory `dir` of `fs`, replaying
    /// its WAL. Fails with `Busy` if another handle holds it open.
    pub fn open(fs: Arc<dyn Fs>, dir: &str, options: Options) -> Result<Db> {
        open::open(fs, dir, options)
    }

    fn check_open(&self) -> Result<()> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(Error::Closed(format!("database {} is closed", self.inner.dir)));
        }
        Ok(())
    }

    /// Sets `key` to `value`.
    pub fn put(&self, opts: &WriteOptions, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(key, value);
        self.write(opts, b)
    }

    /// Removes `key` (a no-op if absent).
    pub fn delete(&self, opts: &WriteOptions, key: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.write(opts, b)
    }

    /// Removes every key in `[start, end)`. An empty range (`start >= end`)
    /// removes nothing.
    pub fn delete_range(&self, opts: &WriteOptions, start: &[u8], end: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete_range(start, end);
        self.write(opts, b)
    }

    /// Records a merge operand for `key`, combined with the key's value by
    /// the configured merge operator when read.
    pub fn merge(&self, opts: &WriteOptions, key: &[u8], operand: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.merge(key, operand);
        self.write(opts, b)
    }

    /// Applies every update of `batch` atomically: after a crash either all
    /// of it is there or none; readers never see part of it.
    pub fn write(&self, opts: &WriteOptions, mut batch: WriteBatch) -> Result<()> {
        self.write_checked(opts, &mut batch, |_| Ok(()))
    }

    /// [`Db::write`], with `check` run first under the write lock, after the
    /// memtables hold every write so far: nothing is written between the
    /// check and the batch (RocksDB's `WriteWithCallback`, which optimistic
    /// transactions commit through). An error from `check` fails the write,
    /// which writes nothing. An empty batch is checked too. A write that
    /// failed wrote nothing and leaves `batch` as it was.
    pub(crate) fn write_checked(
        &self,
        opts: &WriteOptions,
        batch: &mut WriteBatch,
        check: impl FnOnce(&Db) -> Result<()>,
    ) -> Result<()> {
        self.check_open()?;
        // Deletes only (and bookkeeping puts): the batch frees space (see
        // make_room_for_write).
        let mut frees_space = true;
        let mut puts = 0u32;
        for op in batch.iter() {
            match op.map_err(|e| Error::InvalidArgument(e.to_string()))? {
                BatchOp::Put { key, value } => {
                    puts += 1;
                    if puts > batch.bookkeeping_puts() {
                        frees_space = false;
                    }
                    check_key(key)?;
                    check_value(value)?;
                }
                BatchOp::Delete { key } => check_key(key)?,
                BatchOp::Merge { key, value } => {
                    frees_space = false;
                    check_key(key)?;
                    check_value(value)?;
                    match &self.inner.options.merge_operator {
                        None => return Err(Error::InvalidArgument(messages::MERGE_NEEDS_OPERATOR.into())),
                        Some(op) => op.check_operand(value).map_err(|e| {
                            Error::InvalidArgument(format!("{} {} operator: {e}", messages::BAD_OPERAND, op.name()))
                        })?,
                    }
                }
                BatchOp::RangeDelete { start, end } => {
                    check_key(start)?;
                    check_key(end)?;
                }
            }
        }
        let inner = &*self.inner;
        if batch.is_empty() {
            let _st = lock(&inner.state);
            return check(self);
        }
        let t0 = inner.options.now_micros();
        let mut st = StateGuard::new(inner);
        // Closed while this write waited for the lock.
        self.check_open()?;
        if let Some(e) = &st.bg_error {
            return Err(e.clone());
        }
        self.make_room_for_write(&mut st, frees_space)?;
        // A stall's step let the lock go: another thread's step may have
        // stopped writes meanwhile.
        if let Some(e) = &st.bg_error {
            return Err(e.clone());
        }
        check(self)?;
        let seq = st.versions.last_sequence + 1;
        batch.set_sequence(seq);
        // Out of space, the log writer cut off whatever part of the record
        // reached the file, so the log is as it was and the write fails
        // alone (failure.rs).
        if let Err(e) = st.wal.add_record(batch.data()) {
            return Err(self.fail(&mut st, Stage::Write, e).error);
        }
        inner.stats.add(Ticker::WalBytes, batch.data().len() as u64);
        if opts.sync {
            if let Err(e) = st.wal.sync() {
                return Err(self.fail(&mut st, Stage::Sync, e).error);
            }
            inner.stats.add(Ticker::WalSynced, 1);
            st.wal_dirty = false;
        } else {
            st.wal_dirty = true;
        }
        let last = st.mem.add_batch(batch);
        st.versions.last_sequence = last;
        inner.visible_seq.store(last, Ordering::Release);
        drop(st);
        inner.stats.add(Ticker::NumberKeysWritten, last + 1 - seq);
        inner.stats.add(Ticker::BytesWritten, batch.approximate_size() as u64);
        if inner.options.timer().is_some() {
            inner.stats.record(Histogram::DbWrite, inner.options.now_micros().saturating_sub(t0));
        }
        Ok(())
    }

    /// Makes sure the active memtable has room, switching it out when full.
    ///
    /// Write stalls: when every memtable slot is taken, or L0 holds
    /// `level0_stop_writes_trigger` files, the writer does the background
    /// work itself (flush, then compaction) until there is room, rather than
    /// wait for a pump that, in a single-threaded worker, cannot run
    /// meanwhile. The time is counted in `rocksdb.stall.micros`.
    ///
    /// Out of space, that work cannot run; a batch of deletes only
    /// (`frees_space`) then goes into the active memtable anyway, a little
    /// past its size: refusing it would leave no way to empty a full
    /// database (the deletes let the next compaction drop the data).
    ///
    /// When the file layer has no file to give yet (a pool of files whose
    /// embedder adds more between calls: `PoolExhausted`), the work that
    /// needs one (a new log, a flush's table, a compaction's next output) is
    /// left queued as it is and the write goes into the active memtable,
    /// which grows past its size up to [`WAITING_MEMTABLE_FACTOR`] times it;
    /// only past that does the write fail with `PoolExhausted` (writing
    /// nothing). Counted in `silt.write.waiting.for.files`.
    ///
    /// A stall's flush or compaction step lets the lock go while it writes
    /// (other writers may go meanwhile); each turn of the loop looks again.
    fn make_room_for_write(&self, st: &mut StateGuard, frees_space: bool) -> Result<()> {
        let inner = &*self.inner;
        let o = &inner.options;
        let mut stalled_at = None;
        // Whether the stall's work went through; work that failed alone for
        // lack of space lets a batch of deletes only go on without it (and
        // remembers, so that the next such batch does not redo the work
        // that cannot fit).
        let went = |st: &mut DbState, r: Attempt<bool>| match r {
            Err(f) if frees_space && f.recovery == Recovery::FailAlone => {
                st.out_of_space = true;
                Ok(false)
            }
            Ok(did) => {
                st.out_of_space = false;
                Ok(did)
            }
            Err(f) => Err(f.error),
        };
        // L0's stall could not run for want of a file: the memtable checks
        // still apply. Until a background step got through again (the
        // embedder runs them once it has files), nothing a stall would do
        // can create its file either: no retry per write (each would take a
        // file number and find no file again).
        let mut l0_waits = st.waiting_for_file.is_some();
        let result = loop {
            if frees_space && st.out_of_space {
                // Past twice its size the memtable takes no more: the
                // deletes would only grow memory until space comes back.
                let used = st.mem.approximate_memory_usage();
                if used >= 2 * o.write_buffer_size {
                    break Err(Error::QuotaExceeded {
                        file: inner.dir.clone(),
                        message: format!(
                            "out of space: {used} bytes of writes wait in memory for room to flush them; \
                             free space (or raise the limit) and retry"
                        ),
                    });
                }
                break Ok(());
            }
            let l0 = st.versions.current_ref().levels[0].len();
            if !l0_waits && !o.disable_auto_compactions && l0 >= o.level0_stop_writes_trigger {
                stalled_at.get_or_insert_with(|| o.now_micros());
                match self.background_step(st, usize::MAX).map(|p| p.did_work) {
                    Err(f) if f.waits_for_file() => {
                        st.waiting_for_file = Some(f.error);
                        l0_waits = true;
                    }
                    r => {
                        if !went(st, r)? {
                            break Ok(());
                        }
                    }
                }
                continue;
            }
            if st.mem.approximate_memory_usage() < o.write_buffer_size {
                break Ok(());
            }
            if let Some(e) = st.waiting_for_file.clone() {
                match self.wait_for_files(st, e) {
                    Err(e) => match self.compact_for_files(st, &mut stalled_at) {
                        Ok(true) => l0_waits = false,
                        Ok(false) => break Err(e),
                        Err(e) => break Err(e),
                    },
                    r => break r,
                }
                continue;
            }
            if st.imm.len() + 1 >= o.max_write_buffer_number {
                stalled_at.get_or_insert_with(|| o.now_micros());
                match self.flush_step(st, usize::MAX).map(|()| true) {
                    Err(f) if f.waits_for_file() => st.waiting_for_file = Some(f.error),
                    r => {
                        if !went(st, r)? {
                            break Ok(());
                        }
                    }
                }
                continue;
            }
            match self.switch_memtable(st) {
                Ok(()) => {}
                Err(f) if f.waits_for_file() => st.waiting_for_file = Some(f.error),
                Err(f) if frees_space && f.recovery == Recovery::FailAlone => {
                    st.out_of_space = true;
                    break Ok(());
                }
                Err(f) => break Err(f.error),
            }
        };
        if let Some(t0) = stalled_at {
            inner.stats.add(Ticker::WriteStalls, 1);
            inner.stats.add(Ticker::StallMicros, o.now_micros().saturating_sub(t0));
        }
        result
    }

    /// A write that waits for a file can wait no more (its memtable holds
    /// all it may): a compaction (the running one, else one the picker
    /// wants), which needs at most one file (its outputs go on past their
    /// target: `compaction/job.rs`) and frees its inputs' when it ends, is
    /// run to its end by the write (a stall). Returns whether one ended or
    /// moved files: the write looks again.
    fn compact_for_files(&self, st: &mut StateGuard, stalled_at: &mut Option<u64>) -> Result<bool> {
        stalled_at.get_or_insert_with(|| self.inner.options.now_micros());
        let step = if st.compaction.is_some() {
            self.compaction_step(st, usize::MAX)
        } else if self.inner.options.disable_auto_compactions {
            return Ok(false);
        } else {
            // None running: one the picker wants, run whole, if a file for
            // its first output is there (a move needs none).
            match self.pick_compaction(st, usize::MAX) {
                Ok(true) => Ok(()),
                Ok(false) => return Ok(false),
                Err(f) => Err(f),
            }
        };
        match step {
            Ok(()) if st.compaction.is_none() => {
                st.waiting_for_file = None;
                self.inner.delete_obsolete_files(st);
                Ok(true)
            }
            Ok(()) => Ok(false),
            Err(f) if f.waits_for_file() => Ok(false),
            Err(f) => Err(f.error),
        }
    }

    /// A write whose memtable is full finds no file for the work that would
    /// make room (`error`, a `PoolExhausted`, now or when the wait began):
    /// it goes into the active memtable all the same, unless that already
    /// holds [`WAITING_MEMTABLE_FACTOR`] times `write_buffer_size`.
    fn wait_for_files(&self, st: &mut DbState, error: Error) -> Result<()> {
        let inner = &*self.inner;
        let used = st.mem.approximate_memory_usage();
        let cap = inner.options.write_buffer_size.saturating_mul(WAITING_MEMTABLE_FACTOR);
        if used < cap {
            st.waiting_for_file = Some(error);
            inner.stats.add(Ticker::WritesWaitingForFiles, 1);
            return Ok(());
        }
        let (file, why) = match &error {
            Error::PoolExhausted { file, message } => (file.clone(), message.clone()),
            e => (inner.dir.clone(), e.to_string()),
        };
        st.waiting_for_file = Some(error);
        Err(Error::PoolExhausted {
            file,
            message: format!(
                "{used} bytes of writes wait in memory for a file to flush them to, the most that may wait \
                 ({WAITING_MEMTABLE_FACTOR} times a memtable's size); the file layer has none to give yet: {why}"
            ),
        })
    }

    /// Freezes the active memtable and starts a new one with a new WAL.
    fn switch_memtable(&self, st: &mut DbState) -> Attempt<()> {
        let inner = &*self.inner;
        let number = st.versions.new_file_number();
        // A new WAL nothing points at yet: if it cannot be made, the old
        // one goes on and a later write tries again (without syncing the
        // old one each time: a write that waits for a file costs no sync).
        let file = create_wal(&*inner.fs, &inner.dir, number).map_err(|e| self.fail(st, Stage::Create, e))?;
        // Sync the old WAL before the new one takes a write: a crash must
        // never keep later writes while losing earlier ones. Synced even
        // when clean, so that a WAL the manifest still needs always exists
        // after a crash. (If this fails, the new WAL stays empty: a reopen
        // replays nothing from it.)
        if let Err(e) = st.wal.sync() {
            return Err(self.fail(st, Stage::Sync, e));
        }
        st.wal_dirty = false;
        st.wal = LogWriter::new(file, 0);
        st.wal_number = number;
        let mem = Arc::new(MemTable::with_bloom(number, inner.options.memtable_bloom_bytes()));
        inner.track_memtable(&mem);
        let old = std::mem::replace(&mut st.mem, mem);
        st.imm.push_back(old);
        self.install_super_version(st);
        Ok(())
    }

    fn install_super_version(&self, st: &mut DbState) {
        let inner = &*self.inner;
        let mut cur = lock(&inner.current);
        let number = inner.sv_number.load(Ordering::Relaxed) + 1;
        let version = st.versions.current();
        inner.l0_files.store(version.levels[0].len(), Ordering::Release);
        *cur = Arc::new(SuperVersion {
            mem: st.mem.clone(),
            imm: st.imm.iter().rev().cloned().collect(),
            version,
            number,
        });
        inner.sv_number.store(number, Ordering::Release);
    }

    /// The current SuperVersion and the sequence number to read at, taken
    /// together so that no flush can have dropped a version that sequence
    /// still needs.
    fn read_view(&self, snapshot: Option<&Snapshot>) -> (Arc<SuperVersion>, SequenceNumber) {
        self.inner.read_view(snapshot.map(|s| s.sequence()))
    }

    /// The number of the current SuperVersion (cheap; no lock).
    pub fn super_version_number(&self) -> u64 {
        self.inner.sv_number.load(Ordering::Acquire)
    }

    /// A snapshot of the current state.
    pub fn snapshot(&self) -> Snapshot {
        let visible = &self.inner.visible_seq;
        Snapshot::of_current(|| visible.load(Ordering::Acquire), self.inner.snapshots.clone())
    }

    /// Reads every block of every table file of the current version and
    /// checks every checksum and every key. Returns what it checked; the
    /// first damage found is the error (with file and offset).
    pub fn verify(&self) -> Result<VerifyReport> {
        self.check_open()?;
        let (sv, _) = self.read_view(None);
        let mut report = VerifyReport::default();
        for (_, f) in sv.version.files() {
            report.entries += f.table(&self.inner.tables)?.verify()?;
            report.tables += 1;
            report.table_bytes += f.meta.file_size;
        }
        Ok(report)
    }

    /// The number of L0 files of the current version (an atomic load: for
    /// pacing background work against writes).
    pub fn level0_file_count(&self) -> usize {
        self.inner.l0_files.load(Ordering::Acquire)
    }

    /// The number of table files of the current version.
    pub fn table_file_count(&self) -> usize {
        let (sv, _) = self.read_view(None);
        sv.version.levels.iter().map(Vec::len).sum()
    }

    /// Every ticker and histogram (RocksDB's names where it has them).
    pub fn statistics(&self) -> StatisticsSnapshot {
        self.inner.stats.snapshot()
    }

    /// Gauges of the database's current shape.
    pub fn properties(&self) -> DbProperties {
        let inner = &*self.inner;
        let (sv, _) = self.read_view(None);
        let cache = inner.tables.cache.stats();
        let (pending, live_table_bytes) = {
            let mut st = lock(&inner.state);
            let pending = self.background_due(&st);
            (pending, st.versions.live_file_bytes())
        };
        let all_memtable_bytes = {
            let mut all = lock(&inner.memtables);
            all.retain(|w| w.strong_count() > 0);
            all.iter().filter_map(|w| w.upgrade()).map(|m| m.approximate_memory_usage() as u64).sum()
        };
        DbProperties {
            super_version_number: sv.number,
            last_sequence: inner.visible_seq.load(Ordering::Acquire),
            memtable_bytes: std::iter::once(&sv.mem)
                .chain(sv.imm.iter())
                .map(|m| m.approximate_memory_usage() as u64)
                .sum(),
            immutable_memtables: sv.imm.len() as u64,
            files_per_level: sv.version.levels.iter().map(|l| l.len() as u64).collect(),
            bytes_per_level: sv.version.levels.iter().map(|l| l.iter().map(|f| f.meta.file_size).sum()).collect(),
            table_bytes: sv.version.files().map(|(_, f)| f.meta.file_size).sum(),
            all_memtable_bytes,
            live_table_bytes,
            block_cache_usage: cache.usage,
            block_cache_capacity: cache.capacity,
            row_cache_usage: inner.row_cache.as_ref().map_or(0, |c| c.usage()),
            pinned_bytes: inner.pinned.load(Ordering::Relaxed),
            live_snapshots: inner.snapshots.sequences().len() as u64,
            background_work_pending: pending,
        }
    }

    /// Syncs the WAL and releases the database. Every later call fails with
    /// `Closed`. Closing twice is fine. After writes were stopped by an
    /// error (a sync or an append that failed), the database is still
    /// released, and the close fails with that error: writes acknowledged
    /// without `sync` since the last good sync may not be durable.
    pub fn close(&self) -> Result<()> {
        let inner = &*self.inner;
        if inner.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let result = {
            let mut st = StateGuard::new(inner);
            // A step running on another thread ends first (and that
            // thread's `do_background_work` then sees the database closed).
            st.wait_for_job();
            // Writes stopped on an error (a failed sync or append): what was
            // acknowledged since the last good sync may not be durable, and
            // the close says so rather than return as if all were well.
            let r = match &st.bg_error {
                Some(e) => Err(e.clone()),
                None if st.wal_dirty => st.wal.sync(),
                None => Ok(()),
            };
            st.wal_dirty = false;
            if r.is_ok() && st.bg_error.is_none() {
                self.flush_for_close(&mut st);
            }
            // Work still in progress ends here: its outputs, which no
            // version names, go now rather than at the next open (so a
            // clean reopen writes nothing).
            if let Some(job) = st.flush.take() {
                self.abandon_job(&mut st, job);
            }
            if let Some((_, job)) = st.compaction.take() {
                self.abandon_job(&mut st, job);
            }
            r
        };
        lock(&inner.lock).take();
        result
    }

    /// At close, with every write already durable in the WAL: flushes the
    /// memtables if they hold at least `flush_on_close_bytes`, so that the
    /// next open has (almost) nothing to replay. Best effort: if a step
    /// fails, the WAL still has everything and the next open replays it.
    fn flush_for_close(&self, st: &mut StateGuard) {
        let held: usize = st.mem.data_bytes() + st.imm.iter().map(|m| m.data_bytes()).sum::<usize>();
        if held == 0 || held < self.inner.options.flush_on_close_bytes {
            return;
        }
        if !st.mem.is_empty() && self.switch_memtable(st).is_err() {
            return;
        }
        while !st.imm.is_empty() {
            if self.flush_step(st, usize::MAX).is_err() {
                return;
            }
        }
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

impl DbInner {
    /// A full merge of `key` with the database's operator, counted in its
    /// statistics (time when durations are measured; failures): for the
    /// paths that merge outside a `GetContext` (transactions).
    pub(crate) fn full_merge(&self, key: &[u8], base: Option<&[u8]>, operands: &[&[u8]]) -> Result<Vec<u8>> {
        let op = self
            .options
            .merge_operator
            .as_deref()
            .ok_or_else(|| Error::InvalidArgument(messages::MERGE_NEEDS_OPERATOR.into()))?;
        let mut counted = crate::merge::MergeStats::default();
        let r = crate::merge::full_merge(op, key, base, operands, self.options.timer(), &mut counted);
        counted.report(&self.stats);
        r
    }

    fn track_memtable(&self, m: &Arc<MemTable>) {
        let mut all = lock(&self.memtables);
        all.retain(|w| w.strong_count() > 0);
        all.push(Arc::downgrade(m));
    }

    /// See [`Db::read_view`]; `snapshot` is a snapshot's sequence number.
    fn read_view(&self, snapshot: Option<SequenceNumber>) -> (Arc<SuperVersion>, SequenceNumber) {
        let cur = lock(&self.current);
        let seq = self.visible_seq.load(Ordering::Acquire);
        (cur.clone(), snapshot.unwrap_or(seq))
    }

    /// Deletes what no reader holds any more (after an iterator let go of an
    /// old SuperVersion). Does nothing on a closed database.
    fn purge_obsolete_files(&self) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        let mut st = lock(&self.state);
        self.delete_obsolete_files(&mut st);
    }
}

/// Creates an empty WAL and makes its existence durable.
pub(crate) fn create_wal(fs: &dyn Fs, dir: &str, number: u64) -> Result<Arc<dyn crate::fs::File>> {
    let file = fs.open(&wal_path(dir, number), true)?;
    file.truncate(0)?;
    file.sync()?;
    fs.sync_dir(dir)?;
    Ok(file)
}

#[cfg(test)]
mod read_stats_tests;
#[cfg(test)]
mod tests;
