//! The database: write path, point reads, snapshots, iterators, background
//! work, and the reference-counted `SuperVersion` that readers hold.
//!
//! Concurrency: one `Mutex<DbState>` serializes writers and background
//! work; readers take the current `SuperVersion` (memtables + version) under
//! a short lock and then read without any lock.

mod flush;
mod iter;
mod open;
pub mod options;
pub(crate) mod snapshot;

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;

pub use iter::DbIterator;
pub use options::{Clock, Options, ReadOptions, WriteOptions, MAX_KEY_LEN, MAX_VALUE_LEN};
pub use snapshot::Snapshot;

use self::flush::FlushJob;
use self::options::{check_key, check_value};
use self::snapshot::SnapshotList;
use crate::batch::{BatchOp, WriteBatch};
use crate::error::{Error, Result};
use crate::format::key::{self, SequenceNumber, ValueType};
use crate::fs::{Fs, FsLock};
use crate::memtable::{MemLookup, MemTable};
use crate::sst::filter::key_hash;
use crate::sst::TableGet;
use crate::version::{parse_file_name, wal_path, FileKind, TableContext, Version, VersionSet};
use crate::wal::LogWriter;

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

/// The result of one call to [`Db::do_background_work`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// This call did some work.
    pub did_work: bool,
    /// Work is still waiting (call again).
    pub work_left: bool,
}

/// Counters and gauges of a database, for the demo, the tests and tuning.
/// (The full RocksDB-named statistics arrive with the compaction issue.)
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DbProperties {
    pub super_version_number: u64,
    pub last_sequence: u64,
    pub memtable_bytes: u64,
    pub immutable_memtables: u64,
    pub files_per_level: Vec<u64>,
    pub table_bytes: u64,
    pub block_cache_hits: u64,
    pub block_cache_misses: u64,
    pub block_cache_adds: u64,
    pub block_cache_usage: u64,
    pub flushes: u64,
    pub write_stalls: u64,
    pub stall_micros: u64,
    pub wal_bytes_written: u64,
    pub bloom_useful: u64,
    pub live_snapshots: u64,
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
    flush: Option<FlushJob>,
    /// A failed WAL, manifest or flush write stops all writes until reopen:
    /// the files may end in a partial record that must not be followed.
    bg_error: Option<Error>,
    /// Table files being written, not yet in any version.
    pending_outputs: HashSet<u64>,
}

#[derive(Default)]
struct Counters {
    flushes: AtomicU64,
    write_stalls: AtomicU64,
    stall_micros: AtomicU64,
    wal_bytes: AtomicU64,
    bloom_useful: AtomicU64,
}

struct DbInner {
    fs: Arc<dyn Fs>,
    dir: String,
    options: Options,
    tables: TableContext,
    state: Mutex<DbState>,
    current: Mutex<Arc<SuperVersion>>,
    sv_number: AtomicU64,
    /// The last sequence number whose write is fully applied.
    visible_seq: AtomicU64,
    snapshots: Arc<SnapshotList>,
    closed: AtomicBool,
    counters: Counters,
    lock: Mutex<Option<Box<dyn FsLock>>>,
}

/// An open database. Safe to share between threads (`Arc<Db>`). Dropping it
/// closes it.
pub struct Db {
    inner: Arc<DbInner>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Db {
    /// Opens (or creates) the database in directory `dir` of `fs`, replaying
    /// its WAL. Fails with `Busy` if another handle holds it open.
    pub fn open(fs: Arc<dyn Fs>, dir: &str, options: Options) -> Result<Db> {
        open::open(fs, dir, options)
    }

    fn check_open(&self) -> Result<()> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(Error::Closed(format!(
                "database {} is closed",
                self.inner.dir
            )));
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

    /// Applies every update of `batch` atomically: after a crash either all
    /// of it is there or none; readers never see part of it.
    pub fn write(&self, opts: &WriteOptions, mut batch: WriteBatch) -> Result<()> {
        self.check_open()?;
        for op in batch.iter() {
            match op.map_err(|e| Error::InvalidArgument(e.to_string()))? {
                BatchOp::Put { key, value } => {
                    check_key(key)?;
                    check_value(value)?;
                }
                BatchOp::Delete { key } => check_key(key)?,
                BatchOp::Merge { .. } | BatchOp::RangeDelete { .. } => {
                    return Err(Error::NotSupported(
                        "merge and range deletion arrive with the compaction issue".into(),
                    ))
                }
            }
        }
        if batch.is_empty() {
            return Ok(());
        }
        let inner = &*self.inner;
        let mut st = lock(&inner.state);
        if let Some(e) = &st.bg_error {
            return Err(e.clone());
        }
        self.make_room_for_write(&mut st)?;
        let seq = st.versions.last_sequence + 1;
        batch.set_sequence(seq);
        if let Err(e) = st.wal.add_record(batch.data()) {
            st.bg_error = Some(e.clone());
            return Err(e);
        }
        inner
            .counters
            .wal_bytes
            .fetch_add(batch.data().len() as u64, Ordering::Relaxed);
        if opts.sync {
            if let Err(e) = st.wal.sync() {
                st.bg_error = Some(e.clone());
                return Err(e);
            }
            st.wal_dirty = false;
        } else {
            st.wal_dirty = true;
        }
        let mut s = seq;
        for op in batch.iter().flatten() {
            match op {
                BatchOp::Put { key, value } => st.mem.add(s, ValueType::Put, key, value),
                BatchOp::Delete { key } => st.mem.add(s, ValueType::Delete, key, b""),
                BatchOp::Merge { .. } | BatchOp::RangeDelete { .. } => {}
            }
            s += 1;
        }
        st.versions.last_sequence = s - 1;
        inner.visible_seq.store(s - 1, Ordering::Release);
        Ok(())
    }

    /// Makes sure the active memtable has room, switching it out when full.
    /// When every memtable slot is taken, the writer flushes the oldest
    /// itself (a write stall) rather than wait for a pump that, in a
    /// single-threaded worker, cannot run meanwhile.
    fn make_room_for_write(&self, st: &mut DbState) -> Result<()> {
        let inner = &*self.inner;
        loop {
            if st.mem.approximate_memory_usage() < inner.options.write_buffer_size {
                return Ok(());
            }
            if st.imm.len() + 1 >= inner.options.max_write_buffer_number {
                let t0 = inner.options.now_micros();
                inner.counters.write_stalls.fetch_add(1, Ordering::Relaxed);
                while !st.imm.is_empty() {
                    self.flush_step(st, usize::MAX)?;
                }
                let dt = inner.options.now_micros().saturating_sub(t0);
                inner.counters.stall_micros.fetch_add(dt, Ordering::Relaxed);
                continue;
            }
            self.switch_memtable(st)?;
        }
    }

    /// Freezes the active memtable and starts a new one with a new WAL.
    fn switch_memtable(&self, st: &mut DbState) -> Result<()> {
        let inner = &*self.inner;
        // Sync the old WAL first: a crash must never keep later writes (in
        // the new WAL) while losing earlier ones. Synced even when clean, so
        // that a WAL the manifest still needs always exists after a crash.
        if let Err(e) = st.wal.sync() {
            st.bg_error = Some(e.clone());
            return Err(e);
        }
        st.wal_dirty = false;
        let number = st.versions.new_file_number();
        let file = create_wal(&*inner.fs, &inner.dir, number)?;
        st.wal = LogWriter::new(file, 0);
        st.wal_number = number;
        let old = std::mem::replace(&mut st.mem, Arc::new(MemTable::new(number)));
        st.imm.push_back(old);
        self.install_super_version(st);
        Ok(())
    }

    fn install_super_version(&self, st: &mut DbState) {
        let inner = &*self.inner;
        let mut cur = lock(&inner.current);
        let number = inner.sv_number.load(Ordering::Relaxed) + 1;
        *cur = Arc::new(SuperVersion {
            mem: st.mem.clone(),
            imm: st.imm.iter().rev().cloned().collect(),
            version: st.versions.current(),
            number,
        });
        inner.sv_number.store(number, Ordering::Release);
    }

    /// The current SuperVersion and the sequence number to read at, taken
    /// together so that no flush can have dropped a version that sequence
    /// still needs.
    fn read_view(&self, snapshot: Option<&Snapshot>) -> (Arc<SuperVersion>, SequenceNumber) {
        let cur = lock(&self.inner.current);
        let seq = self.inner.visible_seq.load(Ordering::Acquire);
        (cur.clone(), snapshot.map_or(seq, |s| s.sequence()))
    }

    /// The number of the current SuperVersion (cheap; no lock).
    pub fn super_version_number(&self) -> u64 {
        self.inner.sv_number.load(Ordering::Acquire)
    }

    /// The value of `key`, or `None`. The returned `Bytes` shares memory with
    /// the block cache or memtable it came from (no copy of the value).
    pub fn get_bytes(&self, opts: &ReadOptions, key: &[u8]) -> Result<Option<Bytes>> {
        check_key(key)?;
        self.check_open()?;
        let (sv, seq) = self.read_view(opts.snapshot);
        for mem in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
            match mem.get(key, seq) {
                MemLookup::Found(v) => return Ok(Some(v)),
                MemLookup::Deleted => return Ok(None),
                MemLookup::Absent => {}
            }
        }
        let seek = key::seek_key(key, seq);
        let hash = key_hash(key);
        for level in 0..sv.version.levels.len() {
            let candidates: Vec<_> = if level == 0 {
                sv.version.levels[0]
                    .iter()
                    .filter(|f| f.smallest_user_key() <= key && key <= f.largest_user_key())
                    .collect()
            } else {
                sv.version.find_file(level, key).into_iter().collect()
            };
            for f in candidates {
                let table = f.table(&self.inner.tables)?;
                match table.get(&seek, hash)? {
                    TableGet::FilteredOut => {
                        self.inner
                            .counters
                            .bloom_useful
                            .fetch_add(1, Ordering::Relaxed);
                    }
                    TableGet::Absent => {}
                    TableGet::Found {
                        ty: ValueType::Put,
                        value,
                        ..
                    } => return Ok(Some(value)),
                    TableGet::Found {
                        ty: ValueType::Delete,
                        ..
                    } => return Ok(None),
                    TableGet::Found { ty, .. } => {
                        return Err(Error::corruption(
                            crate::version::table_path(&self.inner.dir, f.number()),
                            0,
                            format!("entry of type {ty:?} that this version does not write"),
                        ))
                    }
                }
            }
        }
        Ok(None)
    }

    /// The value of `key` copied into a `Vec`, or `None`.
    pub fn get(&self, opts: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.get_bytes(opts, key)?.map(|b| b.to_vec()))
    }

    /// A snapshot of the current state.
    pub fn snapshot(&self) -> Snapshot {
        let seq = self.inner.visible_seq.load(Ordering::Acquire);
        Snapshot::new(seq, self.inner.snapshots.clone())
    }

    /// An iterator over the database as of `opts.snapshot` (or now), within
    /// `opts`' bounds. The iterator holds the SuperVersion it was made on.
    pub fn iter(&self, opts: &ReadOptions) -> Result<DbIterator> {
        self.check_open()?;
        let (sv, seq) = self.read_view(opts.snapshot);
        Ok(DbIterator::new(sv, seq, opts, &self.inner.tables))
    }

    /// Runs background work (flushing immutable memtables) for at most
    /// about `budget` data blocks written, then returns. The embedder calls
    /// it between requests (the browser worker) or from a thread (native).
    pub fn do_background_work(&self, budget: usize) -> Result<Progress> {
        self.check_open()?;
        let mut st = lock(&self.inner.state);
        if let Some(e) = &st.bg_error {
            return Err(e.clone());
        }
        let mut did_work = false;
        if !st.imm.is_empty() {
            self.flush_step(&mut st, budget.max(1))?;
            did_work = true;
        }
        // Readers may have let go of old versions since the last call.
        self.delete_obsolete_files(&mut st);
        Ok(Progress {
            did_work,
            work_left: !st.imm.is_empty(),
        })
    }

    /// Flushes every memtable (the active one included) to table files and
    /// waits for that to finish.
    pub fn flush(&self) -> Result<()> {
        self.check_open()?;
        let mut st = lock(&self.inner.state);
        if let Some(e) = &st.bg_error {
            return Err(e.clone());
        }
        if !st.mem.is_empty() {
            self.switch_memtable(&mut st)?;
        }
        while !st.imm.is_empty() {
            self.flush_step(&mut st, usize::MAX)?;
        }
        Ok(())
    }

    /// Deletes files no live version, memtable or job needs. Failures are
    /// left for the next call (an orphan is harmless; it is retried).
    fn delete_obsolete_files(&self, st: &mut DbState) {
        let inner = &*self.inner;
        let mut live = st.versions.live_files();
        live.extend(st.pending_outputs.iter().copied());
        let Ok(names) = inner.fs.list(&inner.dir) else {
            return;
        };
        for name in names {
            let obsolete = match parse_file_name(&name) {
                Some(FileKind::Table(n)) => !live.contains(&n),
                Some(FileKind::Wal(n)) => n < st.versions.log_number && n != st.wal_number,
                Some(FileKind::Manifest(n)) => n != st.versions.manifest_number(),
                Some(FileKind::Lock) | None => false,
            };
            if obsolete && inner.fs.remove(&crate::fs::join(&inner.dir, &name)).is_ok() {
                if let Some(FileKind::Table(n)) = parse_file_name(&name) {
                    inner.tables.cache.erase_file(n);
                }
            }
        }
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

    /// Counters and gauges.
    pub fn properties(&self) -> DbProperties {
        let inner = &*self.inner;
        let (sv, _) = self.read_view(None);
        let cache = inner.tables.cache.stats();
        let c = &inner.counters;
        DbProperties {
            super_version_number: sv.number,
            last_sequence: inner.visible_seq.load(Ordering::Acquire),
            memtable_bytes: std::iter::once(&sv.mem)
                .chain(sv.imm.iter())
                .map(|m| m.approximate_memory_usage() as u64)
                .sum(),
            immutable_memtables: sv.imm.len() as u64,
            files_per_level: sv.version.levels.iter().map(|l| l.len() as u64).collect(),
            table_bytes: sv.version.files().map(|(_, f)| f.meta.file_size).sum(),
            block_cache_hits: cache.hits,
            block_cache_misses: cache.misses,
            block_cache_adds: cache.adds,
            block_cache_usage: cache.usage,
            flushes: c.flushes.load(Ordering::Relaxed),
            write_stalls: c.write_stalls.load(Ordering::Relaxed),
            stall_micros: c.stall_micros.load(Ordering::Relaxed),
            wal_bytes_written: c.wal_bytes.load(Ordering::Relaxed),
            bloom_useful: c.bloom_useful.load(Ordering::Relaxed),
            live_snapshots: inner.snapshots.sequences().len() as u64,
        }
    }

    /// Syncs the WAL and releases the database. Every later call fails with
    /// `Closed`. Closing twice is fine.
    pub fn close(&self) -> Result<()> {
        let inner = &*self.inner;
        if inner.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let result = {
            let mut st = lock(&inner.state);
            let r = if st.wal_dirty && st.bg_error.is_none() {
                st.wal.sync()
            } else {
                Ok(())
            };
            st.wal_dirty = false;
            r
        };
        lock(&inner.lock).take();
        result
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.close();
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
mod tests;
