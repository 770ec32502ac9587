//! Large transactions: writes spilled into table files of the
//! transaction's own (RocksDB's write-unprepared transactions, PR 3955).
//!
//! Once the writes a transaction holds pass `Options::transaction_spill_bytes`,
//! they go into a table file in the database's directory that no version
//! names: an *own file*. Its entries are numbered from [`OWN_SEQ_BASE`] up
//! (base + the write's position in the transaction), above every real
//! sequence number, so that the transaction's reads search its own files
//! before the shared sources and let its newer writes, deletes, range
//! deletes and merge operands act on older ones and on the snapshot's data
//! (the read callback of RocksDB PR 2850: a version shows to the
//! transaction if it is at most the snapshot's number or at least
//! `OWN_SEQ_BASE`). No other reader ever has these files among its sources,
//! so no one else can see them.
//!
//! Commit publishes them: under the write lock, after the conflict check,
//! every entry of every own file is rewritten into new tables with real
//! sequence numbers (the transaction's first write gets `last_sequence + 1`,
//! each later one the next, as a write batch's entries would), and one
//! manifest edit adds them, at the deepest level nothing above overlaps
//! (L0 if anything does; below L0 split into tables of the target size
//! unless there are range tombstones), after flushing any memtable that
//! overlaps them: reads search memtables first. Like an ingest, it writes no WAL: the file and
//! the edit are synced, so the commit is durable when it returns.
//!
//! Rollback, or a crash at any point before the edit is durable, leaves no
//! trace a reader can see: the own files are in `pending_outputs` while the
//! transaction (or an iterator of it) lives, deleted when the last of those
//! lets go, and deleted at the next open like any file no version names.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::super::ingest::ingest_level;
use super::super::{lock, Db, DbInner, DbState};
use crate::batch::{BatchOp, WriteBatch};
use crate::error::{Error, Result};
use crate::format::key::{self, SequenceNumber, ValueType, MAX_SEQUENCE};
use crate::fs::File;
use crate::iter::{InternalIterator, MergingIterator};
use crate::memtable::MemTable;
use crate::read::GetContext;
use crate::sst::filter::key_hash;
use crate::sst::TableBuilder;
use crate::stats::Ticker;
use crate::version::{table_path, FileMeta, FileMetaData};

/// The first sequence number of a transaction's own entries: far above any
/// real one (a database would need 2^55 writes to reach it), below
/// `MAX_SEQUENCE`, with room for 2^55 writes in one transaction.
pub(crate) const OWN_SEQ_BASE: SequenceNumber = 1 << 55;

/// One table file a transaction spilled its writes into. While it lives,
/// the file is a pending output (no cleanup deletes it); dropping the last
/// reference deletes it.
pub(crate) struct OwnFile {
    pub(crate) meta: FileMetaData,
    owner: Arc<DbInner>,
}

impl Drop for OwnFile {
    fn drop(&mut self) {
        // A closed database's files are left to its next open, which
        // deletes every file no version names.
        if self.owner.closed.load(Ordering::Acquire) {
            return;
        }
        let mut st = lock(&self.owner.state);
        st.pending_outputs.remove(&self.meta.number());
        self.owner.delete_obsolete_files(&mut st);
    }
}

/// A transaction's spilled writes: its own files, oldest first.
pub(crate) struct Spilled {
    pub(crate) files: Arc<[Arc<OwnFile>]>,
    /// Positions used by the entries in the files (the next spilled entry
    /// is numbered `OWN_SEQ_BASE + next`).
    pub(crate) next: u64,
}

/// Writes the entries of `batch`, then the puts of `extra`, into a new own
/// file, numbered from `OWN_SEQ_BASE + first` in the order made. Returns the
/// file (none if nothing in them has an effect: empty range deletes only)
/// and how many positions they used.
pub(crate) fn write_own_file(
    owner: &Arc<DbInner>,
    batch: &WriteBatch,
    extra: &[(Vec<u8>, Vec<u8>)],
    first: u64,
) -> Result<(Option<Arc<OwnFile>>, u64)> {
    // Put in order by a memtable of its own (the same order a flush
    // writes); an empty range delete takes its position and covers nothing.
    let mem = MemTable::new(0);
    let mut pos = first;
    for op in batch.iter() {
        let seq = OWN_SEQ_BASE + pos;
        pos += 1;
        match op.map_err(|e| Error::InvalidArgument(e.to_string()))? {
            BatchOp::Put { key, value } => mem.add(seq, ValueType::Put, key, value),
            BatchOp::Delete { key } => mem.add(seq, ValueType::Delete, key, b""),
            BatchOp::Merge { key, value } => mem.add(seq, ValueType::Merge, key, value),
            BatchOp::RangeDelete { start, end } => {
                if start < end {
                    mem.add(seq, ValueType::RangeDelete, start, end);
                }
            }
        }
    }
    for (k, v) in extra {
        mem.add(OWN_SEQ_BASE + pos, ValueType::Put, k, v);
        pos += 1;
    }
    if mem.is_empty() {
        return Ok((None, pos - first));
    }
    let mem = Arc::new(mem);
    let number = {
        let mut st = lock(&owner.state);
        let n = st.versions.new_file_number();
        st.pending_outputs.insert(n);
        n
    };
    let written = (|| -> Result<FileMeta> {
        let file = owner.fs.open(&table_path(&owner.dir, number), true)?;
        file.truncate(0)?;
        let mut builder = TableBuilder::new(file, owner.options.table_options(false));
        let mut it = mem.iter();
        it.seek_to_first();
        while it.valid() {
            builder.add(it.key(), it.value())?;
            it.next();
        }
        for t in mem.tombstones().map(|ts| ts.to_tombstones()).unwrap_or_default() {
            builder.add_tombstone(t);
        }
        let info = builder.finish()?;
        Ok(FileMeta::of_table(number, info))
    })();
    match written {
        Ok(meta) => {
            owner.stats.add(Ticker::TransactionSpills, 1);
            owner.stats.add(Ticker::TransactionSpilledBytes, meta.file_size);
            Ok((Some(Arc::new(OwnFile { meta: FileMetaData::new(meta), owner: owner.clone() })), pos - first))
        }
        Err(e) => {
            let mut st = lock(&owner.state);
            st.pending_outputs.remove(&number);
            owner.delete_obsolete_files(&mut st);
            Err(e)
        }
    }
}

/// Offers the versions of `key` in the own files `files` (newest file
/// first) to `ctx`, their range tombstones included; true once `ctx` has
/// its answer. The caller goes on to the snapshot's sources otherwise,
/// with the same `ctx`: an own tombstone's number is above all of theirs.
pub(crate) fn lookup_own(db: &Db, files: &[Arc<OwnFile>], key: &[u8], ctx: &mut GetContext) -> Result<bool> {
    let seek = key::lookup_key(key, MAX_SEQUENCE);
    let hash = key_hash(key);
    for f in files.iter().rev() {
        let m = &f.meta;
        if key < m.smallest_user_key() || key > m.largest_user_key() {
            continue;
        }
        let t = m.table(&db.inner.tables)?;
        ctx.cover(t.max_covering_tombstone_seq(key, MAX_SEQUENCE));
        t.get(&seek, hash, ctx)?;
        if ctx.is_done() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Publishes the own files `files` (holding positions `0..positions`),
/// once `check` (the conflict check) passes under the write lock: see the
/// module documentation. Returns the sequence number of the first write.
pub(crate) fn publish(
    db: &Db,
    files: &[Arc<OwnFile>],
    positions: u64,
    check: impl FnOnce(&Db) -> Result<()>,
) -> Result<SequenceNumber> {
    let inner = &*db.inner;
    let lo = files.iter().map(|f| f.meta.smallest_user_key()).min().unwrap_or_default().to_vec();
    let hi = files.iter().map(|f| f.meta.largest_user_key()).max().unwrap_or_default().to_vec();
    let (mut st, _) = db.lock_for_new_tables(&lo, &hi, check)?;
    let base = st.versions.last_sequence + 1;
    let last = base + positions - 1;
    let level = ingest_level(&st, &lo, &hi);
    // Into L0 as one table (an L0 file per target's worth would be many
    // files there at once); into a lower level split between user keys at
    // the target size, as compaction outputs are, unless there are range
    // tombstones (then one table holds them all).
    let target = if level == 0 { u64::MAX } else { inner.options.target_file_size_base.max(1) };
    let mut allocated = Vec::new();
    let written = (|| -> Result<Vec<FileMeta>> {
        let mut tombstones = Vec::new();
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::with_capacity(files.len());
        for f in files {
            let t = f.meta.table(&inner.tables)?;
            if let Some(ts) = t.tombstones() {
                for mut t in ts.to_tombstones() {
                    t.seq = base + (t.seq - OWN_SEQ_BASE);
                    tombstones.push(t);
                }
            }
            children.push(Box::new(t.iter(false)));
        }
        let split_at = if tombstones.is_empty() { target } else { u64::MAX };
        let mut outputs = Vec::new();
        let mut current: Option<Output> = None;
        let mut it = MergingIterator::new(children);
        it.seek_to_first();
        let mut ikey = Vec::new();
        let mut last_key = Vec::new();
        while it.valid() {
            let p = key::parse(it.key()).ok_or_else(|| {
                let (file, offset) = it.origin().unwrap_or(("own file", 0));
                Error::corruption(file, offset, "malformed internal key")
            })?;
            if current.as_ref().is_some_and(|c| c.builder.file_size() >= split_at && p.user_key != last_key.as_slice())
            {
                outputs.push(current.take().expect("an output").finish()?);
            }
            let out = match &mut current {
                Some(c) => c,
                None => current.insert(Output::new(inner, &mut st, &mut allocated)?),
            };
            ikey.clear();
            key::append_internal_key(&mut ikey, p.user_key, base + (p.seq - OWN_SEQ_BASE), p.ty as u8);
            out.builder.add(&ikey, it.value())?;
            last_key.clear();
            last_key.extend_from_slice(p.user_key);
            it.next();
        }
        it.status()?;
        if current.is_none() && !tombstones.is_empty() {
            current = Some(Output::new(inner, &mut st, &mut allocated)?);
        }
        if let Some(mut c) = current.take() {
            for t in tombstones {
                c.builder.add_tombstone(t);
            }
            outputs.push(c.finish()?);
        }
        inner.fs.sync_dir(&inner.dir)?;
        Ok(outputs)
    })();
    let outputs = match written {
        Ok(m) => m,
        Err(e) => {
            db.drop_outputs(&mut st, &allocated);
            return Err(e);
        }
    };
    db.install_new_tables(&mut st, super::super::ingest::at_level(level, outputs), &allocated, last)?;
    inner.stats.add(Ticker::TransactionsPublishedFromFiles, 1);
    Ok(base)
}

/// A table `publish` is writing.
struct Output {
    number: u64,
    file: Arc<dyn File>,
    builder: TableBuilder,
}

impl Output {
    /// A new table file, its number allocated (in `allocated`) and kept
    /// from cleanup until the edit names it.
    fn new(inner: &DbInner, st: &mut DbState, allocated: &mut Vec<u64>) -> Result<Output> {
        let number = st.versions.new_file_number();
        st.pending_outputs.insert(number);
        allocated.push(number);
        let file = inner.fs.open(&table_path(&inner.dir, number), true)?;
        file.truncate(0)?;
        Ok(Output { number, file: file.clone(), builder: TableBuilder::new(file, inner.options.table_options(false)) })
    }

    /// Finishes and syncs the table.
    fn finish(self) -> Result<FileMeta> {
        let info = self.builder.finish()?;
        self.file.sync()?;
        Ok(FileMeta::of_table(self.number, info))
    }
}
