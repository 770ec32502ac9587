//! Bulk ingest (RocksDB's `SstFileWriter` + `IngestExternalFile`, in one
//! call): a set of puts becomes table files written directly, added to the
//! LSM by one manifest edit. No WAL, no memtable: the files are synced and
//! the edit is durable when the call returns (the WAL is synced first, so
//! every earlier write is durable too), and a crash before the edit leaves
//! only orphaned files, deleted at the next open (all or nothing). Writers
//! wait while an ingest runs (it holds the write lock).
//!
//! Every entry gets the same new sequence number, one above every write
//! before it: snapshots taken before the ingest do not see it, later ones
//! do. The files go to the deepest level where nothing at or above that
//! level overlaps their key range, so that no older version of a key sits
//! above a newer one (L0, above everything, as one file, when the range
//! overlaps L0 or a running compaction); memtables that overlap the range
//! are flushed first, since reads search them before any table. An empty
//! ingest does nothing at all.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::failure::Stage;
use super::options::{check_key, check_value};
use super::{Db, DbState, StateGuard};
use crate::batch::{BatchOp, WriteBatch};
use crate::compaction::picker;
use crate::error::{Error, Result};
use crate::format::key::{self, ValueType};
use crate::memtable::MemTable;
use crate::sst::TableBuilder;
use crate::stats::Ticker;
use crate::version::{table_path, FileMeta, VersionEdit, NUM_LEVELS};

/// How [`Db::ingest`] takes its entries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IngestOptions {
    /// The caller's keys are in ascending byte order already (equal keys
    /// allowed: the last one wins): the sort is skipped, and keys found out
    /// of order fail the ingest with `InvalidArgument`, writing nothing.
    pub sorted: bool,
}

/// What [`Db::ingest`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IngestReport {
    /// Distinct keys written (a key given twice counts once: its last value).
    pub keys: u64,
    /// Table files added.
    pub files: u64,
    /// Bytes of those files.
    pub bytes: u64,
    /// The level they went to.
    pub level: usize,
    /// The sequence number every entry got (0 for an empty ingest).
    pub sequence: u64,
    /// Whether memtables overlapping the keys had to be flushed first.
    pub flushed_memtables: bool,
}

impl Db {
    /// Adds every put of `batch` (puts only) as new table files in one
    /// atomic, durable step; see the module documentation. Returns once the
    /// files and the manifest edit are synced.
    pub fn ingest(&self, batch: &WriteBatch, opts: &IngestOptions) -> Result<IngestReport> {
        let mut entries = Vec::with_capacity(batch.count() as usize);
        for op in batch.iter() {
            match op.map_err(|e| Error::InvalidArgument(e.to_string()))? {
                BatchOp::Put { key, value } => entries.push((key, value)),
                _ => return Err(Error::InvalidArgument("ingest takes puts only".into())),
            }
        }
        self.ingest_pairs(entries, opts)
    }

    /// [`Db::ingest`] of `(key, value)` pairs, in the order given.
    pub fn ingest_pairs(&self, entries: Vec<(&[u8], &[u8])>, opts: &IngestOptions) -> Result<IngestReport> {
        self.check_open()?;
        let entries = ingest_entries(entries, opts.sorted)?;
        let (Some(first), Some(last)) = (entries.first(), entries.last()) else {
            return Ok(IngestReport::default());
        };
        let (lo, hi) = (first.0, last.0);
        let inner = &*self.inner;
        let (mut st, flushed) = self.lock_for_new_tables(lo, hi, |_| Ok(()))?;
        let seq = st.versions.last_sequence + 1;
        // Where the files go is known before they are written (nothing else
        // changes the LSM meanwhile: this holds the write lock). Into L0
        // they go as one file, so that an ingest adds one L0 file, not
        // enough to stall the next write.
        let level = ingest_level(&st, lo, hi);
        let target = if level == 0 { u64::MAX } else { inner.options.target_file_size_base.max(1) };
        let (outputs, allocated) = match self.write_ingest_tables(&mut st, &entries, seq, target) {
            Ok(r) => r,
            Err((e, allocated)) => {
                self.drop_outputs(&mut st, &allocated);
                return Err(e);
            }
        };
        let bytes = outputs.iter().map(|m| m.file_size).sum();
        let files = outputs.len() as u64;
        self.install_new_tables(&mut st, at_level(level, outputs), &allocated, seq)?;
        inner.stats.add(Ticker::IngestedKeys, entries.len() as u64);
        inner.stats.add(Ticker::IngestedFiles, files);
        Ok(IngestReport { keys: entries.len() as u64, files, bytes, level, sequence: seq, flushed_memtables: flushed })
    }

    /// The write lock, held to add table files whose entries are newer
    /// than every write so far, over user keys `[lo, hi]` (an ingest, a
    /// transaction's commit from its own files). On return: the database is
    /// open and takes writes, no job's step is out of its slot (a level is
    /// chosen from the running compaction too), no memtable overlaps the
    /// range (reads search memtables before any table), `check` passed, and
    /// every earlier write is durable (a crash must never keep the new
    /// tables while losing an earlier write). Also whether memtables were
    /// flushed.
    pub(super) fn lock_for_new_tables(
        &self,
        lo: &[u8],
        hi: &[u8],
        check: impl FnOnce(&Db) -> Result<()>,
    ) -> Result<(StateGuard<'_>, bool)> {
        let mut st = StateGuard::new(&self.inner);
        self.check_open()?;
        st.wait_for_job();
        if let Some(e) = &st.bg_error {
            return Err(e.clone());
        }
        // A flush's steps let the lock go, and a write meanwhile may land
        // in the range again: flushed until no memtable overlaps, with the
        // lock then held to the end.
        let mut flushed = false;
        while memtables_overlap(&st, lo, hi) {
            self.flush_locked(&mut st).map_err(Error::from)?;
            flushed = true;
        }
        // Meanwhile another thread may have closed the database or stopped
        // writes (a failed WAL sync whose record may be durable at the
        // number the new tables would take).
        self.check_open()?;
        if let Some(e) = &st.bg_error {
            return Err(e.clone());
        }
        check(self)?;
        if st.wal_dirty {
            if let Err(e) = st.wal.sync() {
                return Err(self.fail(&mut st, Stage::Sync, e).error);
            }
            st.wal_dirty = false;
        }
        Ok((st, flushed))
    }

    /// Adds `added` (synced table files at their levels, numbered
    /// `allocated`) in one manifest edit that raises the last sequence
    /// number to `last`,
    /// then shows them: the version with the files first, then the number
    /// (a reader never sees the number without them). On failure the files
    /// go, unless it stopped writes: a failed sync may have made the edit
    /// durable, and they stay for the reopen to find.
    pub(super) fn install_new_tables(
        &self,
        st: &mut DbState,
        added: Vec<(usize, FileMeta)>,
        allocated: &[u64],
        last: u64,
    ) -> Result<()> {
        let edit = VersionEdit { added, ..VersionEdit::default() };
        let before = st.versions.last_sequence;
        st.versions.last_sequence = last;
        if let Err(e) = st.versions.log_and_apply(edit) {
            st.versions.last_sequence = before;
            let f = self.fail(st, Stage::Write, e);
            if f.recovery != super::failure::Recovery::StopWrites {
                self.drop_outputs(st, allocated);
            }
            return Err(f.error);
        }
        for n in allocated {
            st.pending_outputs.remove(n);
        }
        self.install_super_version(st);
        self.inner.visible_seq.store(last, Ordering::Release);
        Ok(())
    }

    /// Writes `entries` (sorted, distinct keys) at `seq` into synced table
    /// files of at most about `target` bytes each, in key order. Natively,
    /// a large ingest is cut into parts written by threads of their own
    /// (`ingest_parts`): most of its time is compressing blocks. On error,
    /// the numbers allocated so far, for the caller to delete.
    #[allow(clippy::type_complexity)]
    fn write_ingest_tables(
        &self,
        st: &mut DbState,
        entries: &[(&[u8], &[u8])],
        seq: u64,
        target: u64,
    ) -> std::result::Result<(Vec<FileMeta>, Vec<u64>), (Error, Vec<u64>)> {
        let inner = &*self.inner;
        // File numbers come from the state, one at a time, whichever part asks.
        let numbers = std::sync::Mutex::new((st, Vec::new()));
        let next_number = || {
            let mut g = numbers.lock().unwrap_or_else(|e| e.into_inner());
            let number = g.0.versions.new_file_number();
            g.0.pending_outputs.insert(number);
            g.1.push(number);
            number
        };
        let write_part = |part: &[(&[u8], &[u8])]| -> Result<Vec<FileMeta>> {
            let mut outputs = Vec::new();
            let mut ikey = Vec::new();
            let mut rest = part;
            while !rest.is_empty() {
                let number = next_number();
                let file = inner.fs.open(&table_path(&inner.dir, number), true)?;
                file.truncate(0)?;
                let mut builder = TableBuilder::new(file.clone(), inner.options.table_options(true));
                let mut n = 0;
                for (k, v) in rest {
                    // Split between keys once the file reached its target.
                    if n > 0 && builder.file_size() >= target {
                        break;
                    }
                    ikey.clear();
                    key::append_internal_key(&mut ikey, k, seq, ValueType::Put as u8);
                    builder.add(&ikey, v)?;
                    n += 1;
                }
                let info = builder.finish()?;
                file.sync()?;
                outputs.push(FileMeta::of_table(number, info));
                rest = &rest[n..];
            }
            Ok(outputs)
        };
        let threads = if cfg!(target_arch = "wasm32") || target == u64::MAX {
            1 // one file (into L0), or no threads
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_INGEST_THREADS)
        };
        #[cfg(test)]
        let threads = match tests::THREADS.load(Ordering::Relaxed) {
            0 => threads,
            n => n,
        };
        let parts = ingest_parts(entries, target, threads);
        let written = write_parts(&parts, &write_part);
        let allocated = numbers.into_inner().unwrap_or_else(|e| e.into_inner()).1;
        let mut outputs = Vec::new();
        for part in written {
            match part {
                Ok(files) => outputs.extend(files),
                Err(e) => return Err((e, allocated)),
            }
        }
        inner.fs.sync_dir(&inner.dir).map_err(|e| (e, allocated.clone()))?;
        Ok((outputs, allocated))
    }

    /// Deletes the files of an ingest that failed (no version names them).
    pub(super) fn drop_outputs(&self, st: &mut DbState, allocated: &[u64]) {
        for n in allocated {
            st.pending_outputs.remove(n);
        }
        self.inner.delete_obsolete_files(st);
    }
}

/// `outputs`, each at `level` (what a manifest edit adds).
pub(super) fn at_level(level: usize, outputs: Vec<FileMeta>) -> Vec<(usize, FileMeta)> {
    outputs.into_iter().map(|m| (level, m)).collect()
}

/// `entries`, validated, in ascending key order with one entry per key
/// (the last given).
fn ingest_entries<'a>(mut entries: Vec<(&'a [u8], &'a [u8])>, sorted: bool) -> Result<Vec<(&'a [u8], &'a [u8])>> {
    for (key, value) in &entries {
        check_key(key)?;
        check_value(value)?;
    }
    if sorted {
        if let Some(i) = entries.windows(2).position(|w| w[0].0 > w[1].0) {
            return Err(Error::InvalidArgument(format!(
                "ingest with sorted: entry {} is out of order (its key sorts before the one before it)",
                i + 1
            )));
        }
    } else {
        // Sorts positions by (key prefix, key): most comparisons are of two
        // integers, not of two keys somewhere in the caller's buffer (a
        // cache miss each). The sort is stable: of equal keys the last
        // given stays last.
        let prefixes: Vec<u128> = entries.iter().map(|e| key_prefix(e.0)).collect();
        let order = crate::sort::order(entries.len(), &mut |a, b| {
            prefixes[a].cmp(&prefixes[b]).then_with(|| entries[a].0.cmp(entries[b].0))
        });
        entries = order.into_iter().map(|i| entries[i]).collect();
    }
    // Of equal keys, keep the last.
    let mut out: Vec<(&[u8], &[u8])> = Vec::with_capacity(entries.len());
    for e in entries {
        match out.last_mut() {
            Some(last) if last.0 == e.0 => *last = e,
            _ => out.push(e),
        }
    }
    Ok(out)
}

/// The first 16 bytes of `key` as a big-endian integer, zero-padded. Two
/// keys whose prefixes differ sort as their prefixes do (the first byte
/// that differs is a real byte of both, or the end of the shorter, which
/// sorts first); equal prefixes say nothing.
fn key_prefix(key: &[u8]) -> u128 {
    let mut b = [0u8; 16];
    let n = key.len().min(16);
    b[..n].copy_from_slice(&key[..n]);
    u128::from_be_bytes(b)
}

/// Whether a memtable holds a key, or a range tombstone, in `[lo, hi]`.
fn memtables_overlap(st: &DbState, lo: &[u8], hi: &[u8]) -> bool {
    std::iter::once(&st.mem).chain(st.imm.iter()).any(|m| memtable_overlaps(m, lo, hi))
}

fn memtable_overlaps(m: &Arc<MemTable>, lo: &[u8], hi: &[u8]) -> bool {
    if m.is_empty() {
        return false;
    }
    if let Some(ts) = m.tombstones() {
        if ts.fragments().iter().any(|f| f.start.as_slice() <= hi && f.end.as_slice() > lo) {
            return true;
        }
    }
    use crate::iter::InternalIterator;
    let mut it = m.iter();
    it.seek(&key::seek_key(lo, key::MAX_SEQUENCE));
    it.valid() && key::user_key(it.key()) <= hi
}

/// The deepest level such that no file at it or above overlaps `[lo, hi]`;
/// L0 when L0 does, or a running compaction's inputs do (its outputs may
/// land at any level down to the one it writes).
pub(super) fn ingest_level(st: &DbState, lo: &[u8], hi: &[u8]) -> usize {
    let v = st.versions.current_ref();
    if let Some((spec, _)) = &st.compaction {
        let all = spec.inputs.iter().flat_map(|(_, fs)| fs.iter());
        if picker::key_range(all).is_some_and(|(a, b)| a.as_slice() <= hi && b.as_slice() >= lo) {
            return 0;
        }
    }
    let mut level = 0;
    for l in 0..NUM_LEVELS {
        if !picker::overlapping(v, l, lo, hi).is_empty() {
            break;
        }
        level = l;
    }
    level
}

/// The parts a large ingest is written in, each by one of `threads`
/// threads: contiguous runs of `entries` of about equal bytes, enough for
/// two files of `target` bytes each at least; else the whole. Each part's
/// last file may be smaller than the target.
fn ingest_parts<'e, 'k>(
    entries: &'e [(&'k [u8], &'k [u8])],
    target: u64,
    threads: usize,
) -> Vec<&'e [(&'k [u8], &'k [u8])]> {
    let bytes: u64 = entries.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum();
    let parts = (threads as u64).min(bytes / target.saturating_mul(2).max(1)).max(1);
    if parts == 1 {
        return vec![entries];
    }
    let per_part = bytes / parts;
    let mut out = Vec::with_capacity(parts as usize);
    let (mut start, mut acc) = (0, 0u64);
    for (i, (k, v)) in entries.iter().enumerate() {
        acc += (k.len() + v.len()) as u64;
        if acc >= per_part && (out.len() as u64) < parts - 1 {
            out.push(&entries[start..=i]);
            (start, acc) = (i + 1, 0);
        }
    }
    if start < entries.len() {
        out.push(&entries[start..]);
    }
    out
}

/// The most threads an ingest writes its tables with.
const MAX_INGEST_THREADS: usize = 4;

/// Each part written by `write`, in a thread of its own where there are
/// more than one (by this thread where the system gives none, and always in
/// WebAssembly), the results in the parts' order (a thread that panicked:
/// an error).
fn write_parts<'k, W>(parts: &[&[(&'k [u8], &'k [u8])]], write: &W) -> Vec<Result<Vec<FileMeta>>>
where
    W: Fn(&[(&'k [u8], &'k [u8])]) -> Result<Vec<FileMeta>> + Sync,
{
    #[cfg(not(target_arch = "wasm32"))]
    if parts.len() > 1 {
        return std::thread::scope(|s| {
            let threads: Vec<_> = parts
                .iter()
                .map(|part| {
                    (part, std::thread::Builder::new().name("silt-ingest".into()).spawn_scoped(s, move || write(part)))
                })
                .collect();
            threads
                .into_iter()
                .map(|(part, thread)| match thread {
                    Ok(t) => t.join().unwrap_or_else(|_| {
                        Err(Error::Io {
                            file: "ingest".into(),
                            op: "write",
                            message: "a thread writing its tables panicked".into(),
                        })
                    }),
                    // No thread to be had: this one writes the part.
                    Err(_) => write(part),
                })
                .collect()
        });
    }
    parts.iter().map(|part| write(part)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::{FaultFs, Fs, MemFs};
    use crate::{Options, ReadOptions};

    /// The threads an ingest writes with, where not 0 (whatever the machine has).
    pub(super) static THREADS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    /// An ingest written by 3 threads: every key read back in order from
    /// the last level, files in key order and not overlapping; and one
    /// whose writes fail partway leaves no file of any part behind.
    #[test]
    fn an_ingest_written_by_threads_is_whole_and_in_order_or_leaves_nothing() {
        let options = Options {
            target_file_size_base: 64 << 10,
            block_size: 1024,
            compression: crate::Compression::Lz4,
            ..Options::default()
        };
        let keys: Vec<Vec<u8>> = (0..20_000u32).map(|i| format!("key{i:08}").into_bytes()).collect();
        let values: Vec<Vec<u8>> =
            (0..20_000u32).map(|i| format!("{i}-{}", "v".repeat((i % 50) as usize)).into_bytes()).collect();
        let mut batch = WriteBatch::new();
        for (k, v) in keys.iter().zip(&values) {
            batch.put(k, v);
        }
        THREADS.store(3, Ordering::Relaxed);
        let fault = FaultFs::new(Arc::new(MemFs::new()));
        let fs: Arc<dyn Fs> = Arc::new(fault.clone());
        let db = Db::open(fs.clone(), "db", options.clone()).unwrap();
        let report = db.ingest(&batch, &IngestOptions { sorted: true }).unwrap();
        assert_eq!(report.keys, 20_000);
        assert!(report.files >= 6, "{report:?}");
        let mut it = db.iter(&ReadOptions::default()).unwrap();
        it.seek_to_first();
        for (k, v) in keys.iter().zip(&values) {
            assert!(it.valid());
            assert_eq!((it.key(), it.value()), (k.as_slice(), v.as_slice()));
            it.next();
        }
        assert!(!it.valid());
        db.verify().unwrap();
        drop(it);
        drop(db);
        // Writes that fail partway (and so the deletes after them): nothing
        // is added, and the next open deletes every part's files.
        let fault = FaultFs::new(Arc::new(MemFs::new()));
        let fs: Arc<dyn Fs> = Arc::new(fault.clone());
        let db = Db::open(fs.clone(), "db", options.clone()).unwrap();
        let tables = |fs: &Arc<dyn Fs>| fs.list("db").unwrap().into_iter().filter(|f| f.ends_with(".sst")).count();
        fault.fail_after(Some(12));
        assert!(db.ingest(&batch, &IngestOptions { sorted: true }).is_err());
        fault.fail_after(None);
        assert!(tables(&fs) > 0, "the failure left files of some parts");
        drop(db);
        let db = Db::open(fs.clone(), "db", options).unwrap();
        assert_eq!(tables(&fs), 0, "the files of every part are deleted");
        assert_eq!(db.get(&ReadOptions::default(), &keys[0]).unwrap(), None);
        THREADS.store(0, Ordering::Relaxed);
    }

    /// A large ingest is cut into contiguous parts of about equal bytes,
    /// in order, each worth two files at least; a small one is not cut.
    #[test]
    fn ingest_parts_cut_large_ingests_into_ordered_runs_of_equal_bytes() {
        let keys: Vec<Vec<u8>> = (0..1000u32).map(|i| format!("k{i:05}").into_bytes()).collect();
        let value = [7u8; 94];
        let entries: Vec<(&[u8], &[u8])> = keys.iter().map(|k| (k.as_slice(), &value[..])).collect();
        // 100,000 bytes.
        for (target, threads, parts) in
            [(10_000, 4, 4), (10_000, 1, 1), (20_000, 4, 2), (60_000, 4, 1), (u64::MAX, 4, 1)]
        {
            let got = ingest_parts(&entries, target, threads);
            assert_eq!(got.len(), parts, "target {target}, {threads} threads");
            assert_eq!(got.concat(), entries, "the parts are the entries, in order");
            for part in &got {
                let bytes: usize = part.iter().map(|(k, v)| k.len() + v.len()).sum();
                assert!(parts == 1 || bytes.abs_diff(100_000 / parts) <= 100, "{bytes} bytes in a part of {parts}");
            }
        }
        assert_eq!(ingest_parts(&[], 10, 4), vec![&[][..]]);
    }

    /// Keys of 0 to 24 bytes from a small alphabet with zero bytes in it,
    /// so that prefixes tie, keys end inside and past 16 bytes, and one key
    /// is often a prefix of another.
    fn keys(n: usize) -> Vec<Vec<u8>> {
        let mut x = 0x9e37_79b9_u32;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        (0..n)
            .map(|_| {
                let len = (next() % 25) as usize;
                (0..len).map(|_| [0u8, 1, b'a', 0xff][(next() % 4) as usize]).collect()
            })
            .collect()
    }

    #[test]
    fn prefixes_never_contradict_the_key_order() {
        let ks = keys(2000);
        for a in ks.iter().take(200) {
            for b in &ks {
                let (pa, pb) = (key_prefix(a), key_prefix(b));
                if pa != pb {
                    assert_eq!(pa.cmp(&pb), a.cmp(b), "{a:?} {b:?}");
                }
            }
        }
    }

    #[test]
    fn unsorted_entries_come_out_in_key_order_with_the_last_of_equal_keys() {
        let ks = keys(5000);
        let values: Vec<Vec<u8>> = (0..ks.len()).map(|i| (i as u32).to_le_bytes().to_vec()).collect();
        let given: Vec<(&[u8], &[u8])> = ks.iter().zip(&values).map(|(k, v)| (k.as_slice(), v.as_slice())).collect();
        let mut want = std::collections::BTreeMap::new();
        for &(k, v) in &given {
            want.insert(k, v);
        }
        let got = ingest_entries(given, false).unwrap();
        assert_eq!(got, want.into_iter().collect::<Vec<_>>());
    }
}
