//! Optimistic transactions: read at a snapshot, write into a batch of one's
//! own, and commit only if nothing the transaction depends on was written
//! by anyone else since the snapshot.
//!
//! Reads see the snapshot with the transaction's own writes on top (puts,
//! deletes, merges and range deletes, in the order made). `get_for_update`
//! and every write track their keys, a range delete its range; `commit`
//! checks, under the write lock (`Db::write_checked`), that no tracked key
//! has a write newer than the snapshot (`Db::latest_sequence_for_key`:
//! memtables, then the tables' entries, range tombstones included, as
//! RocksDB D50475) and no tracked range has one
//! (`Db::latest_sequence_in_range`), then applies the batch atomically; or
//! fails with `Busy` and writes nothing. Merges and range deletes count as
//! writes in the check, by anyone (RocksDB issue 10724 missed both).
//!
//! `get`, `multi_get` and iterators (both ways, with bounds) all read
//! through the same overlay of the transaction's own writes
//! ([`Overlay::state`]). An iterator keeps the overlay as it was when the
//! iterator was made (copy on write: the transaction's next write copies it
//! only while such an iterator lives).
//!
//! A transaction whose writes pass `Options::transaction_spill_bytes`
//! spills them into table files of its own, visible only to it, and its
//! commit publishes them ([`spill`]: RocksDB PR 3955, with the visibility of
//! PR 2850's read callback).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{Db, DbInner, ReadOptions, Snapshot, WriteOptions};
use crate::batch::WriteBatch;
use crate::compaction::job::SPLIT_RESERVE_FILES;
use crate::db::options::check_key;
use crate::error::{messages, Error, Result};
use crate::read::GetContext;
use spill::{OwnFile, Spilled};

/// What the transaction's own writes make of one key, as of its last write.
#[derive(Clone, Debug)]
enum Own {
    Value(Vec<u8>),
    Deleted,
    /// Merge operands (oldest first) on top of the snapshot's value.
    Operands(Vec<Vec<u8>>),
}

/// A range delete of the transaction: `[start, end)` and its position
/// among the transaction's writes.
type OwnRange = (Vec<u8>, Vec<u8>, usize);

/// The transaction's own writes, as reads see them.
#[derive(Clone, Default)]
pub(crate) struct Overlay {
    /// Each key written, with the position of its last point write.
    own: Arc<BTreeMap<Vec<u8>, (Own, usize)>>,
    /// Range deletes `[start, end)` and their positions, in order.
    ranges: Arc<Vec<OwnRange>>,
}

impl Overlay {
    /// What the transaction's own writes make of `key`, if they touch it: its
    /// last point write, unless a later range delete covers the key.
    fn state(&self, key: &[u8]) -> Option<Own> {
        let point = self.own.get(key);
        let range_at =
            self.ranges.iter().rev().find(|(s, e, _)| s.as_slice() <= key && key < e.as_slice()).map(|r| r.2);
        match (point, range_at) {
            (Some((own, at)), Some(r)) if r < *at => Some(own.clone()),
            (Some(_), Some(_)) | (None, Some(_)) => Some(Own::Deleted),
            (Some((own, _)), None) => Some(own.clone()),
            (None, None) => None,
        }
    }
}

/// An optimistic transaction on a [`Db`] (see the module documentation).
/// It owns its state and takes the database in each call that reads or
/// commits, so an embedder can keep it as long as it likes (siltdb keeps
/// one across `await`s); a transaction used with another database than the
/// one that began it is refused.
pub struct OptimisticTransaction {
    snapshot: Snapshot,
    batch: WriteBatch,
    overlay: Overlay,
    /// Keys whose newer writes by others fail the commit.
    tracked: BTreeMap<Vec<u8>, ()>,
    tracked_ranges: Vec<(Vec<u8>, Vec<u8>)>,
    writes: usize,
    /// The embedder's bookkeeping puts, written with the commit.
    bookkeeping: Vec<(Vec<u8>, Vec<u8>)>,
    /// Writes spilled into own files (see [`spill`]), older than `batch`'s.
    spilled: Option<Spilled>,
    /// The batch size that spills (0: never).
    spill_at: usize,
    /// The batch size at which the next spill is tried: `spill_at`, or
    /// more after a try found no file to spare.
    spill_next: usize,
    /// The database the transaction began on (spills go into it).
    owner: Arc<DbInner>,
}

impl Db {
    /// Begins an optimistic transaction at a snapshot taken now.
    pub fn begin_optimistic(&self) -> OptimisticTransaction {
        OptimisticTransaction {
            snapshot: self.snapshot(),
            batch: WriteBatch::new(),
            overlay: Overlay::default(),
            tracked: BTreeMap::new(),
            tracked_ranges: Vec::new(),
            writes: 0,
            bookkeeping: Vec::new(),
            spilled: None,
            spill_at: self.inner.options.transaction_spill_bytes,
            spill_next: self.inner.options.transaction_spill_bytes,
            owner: self.inner.clone(),
        }
    }
}

impl OptimisticTransaction {
    /// The snapshot the transaction reads at.
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    fn of(&self, db: &Db) -> Result<()> {
        if !self.snapshot.is_of(&db.inner.snapshots) {
            return Err(Error::InvalidArgument("this transaction belongs to another database".into()));
        }
        db.check_open()
    }

    fn merge_operator(db: &Db) -> Result<&dyn crate::merge::MergeOperator> {
        db.inner
            .options
            .merge_operator
            .as_deref()
            .ok_or_else(|| Error::InvalidArgument(messages::MERGE_NEEDS_OPERATOR.into()))
    }

    pub(crate) fn full_merge(db: &Db, key: &[u8], base: Option<&[u8]>, operands: &[Vec<u8>]) -> Result<Vec<u8>> {
        let refs: Vec<&[u8]> = operands.iter().map(|o| o.as_slice()).collect();
        db.inner.full_merge(key, base, &refs)
    }

    /// The value of `key` at the snapshot with the transaction's own writes
    /// on top. Does not track the key (see [`OptimisticTransaction::get_for_update`]).
    pub fn get(&self, db: &Db, key: &[u8]) -> Result<Option<Vec<u8>>> {
        check_key(key)?;
        self.of(db)?;
        match self.overlay.state(key) {
            Some(Own::Value(v)) => Ok(Some(v)),
            Some(Own::Deleted) => Ok(None),
            Some(Own::Operands(ops)) => {
                let base = self.get_below(db, key)?;
                Self::full_merge(db, key, base.as_deref(), &ops).map(Some)
            }
            None => self.get_below(db, key),
        }
    }

    /// The value of `key` below the writes the transaction holds in memory:
    /// its own files (if it spilled), then the snapshot.
    fn get_below(&self, db: &Db, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let at = ReadOptions { snapshot: Some(&self.snapshot), ..ReadOptions::default() };
        let Some(sp) = &self.spilled else { return db.get(&at, key) };
        let inner = &*db.inner;
        let mut ctx = GetContext::new(key, inner.options.merge_operator.as_deref(), inner.options.timer());
        self.lookup_below(db, sp, key, &mut ctx)?;
        let r = ctx.finish();
        ctx.stats.report(&inner.stats, r.as_ref().ok().and_then(|v| v.as_ref()).map(|v| v.len()));
        ctx.merge.report(&inner.stats);
        Ok(r?.map(|b| b.to_vec()))
    }

    /// Offers `key`'s versions below the transaction's memory, newest
    /// first, to `ctx`: its own files', then the snapshot's.
    fn lookup_below(&self, db: &Db, sp: &Spilled, key: &[u8], ctx: &mut GetContext) -> Result<()> {
        if !spill::lookup_own(db, &sp.files, key, ctx)? {
            let (sv, seq) = db.read_view(Some(&self.snapshot));
            db.lookup(&sv, seq, key, ctx)?;
        }
        Ok(())
    }

    /// [`OptimisticTransaction::get`], and the key is tracked: the commit
    /// fails if anyone else wrote it after the snapshot.
    pub fn get_for_update(&mut self, db: &Db, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let v = self.get(db, key)?;
        self.tracked.insert(key.to_vec(), ());
        Ok(v)
    }

    /// [`OptimisticTransaction::get`] for many keys: the keys the
    /// transaction's writes do not settle are read from the snapshot in one
    /// batched `multi_get`. Tracks nothing.
    pub fn multi_get(&self, db: &Db, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        for key in keys {
            check_key(key)?;
        }
        self.of(db)?;
        let states: Vec<Option<Own>> = keys.iter().map(|k| self.overlay.state(k)).collect();
        let need: Vec<usize> =
            (0..keys.len()).filter(|&i| matches!(states[i], None | Some(Own::Operands(_)))).collect();
        let at = ReadOptions { snapshot: Some(&self.snapshot), ..ReadOptions::default() };
        // After a spill, a key the own files say anything about is settled
        // by them (with the snapshot under them, through the same lookup);
        // the rest go to the snapshot in one batch.
        let mut settled: Vec<Option<Option<Vec<u8>>>> = vec![None; keys.len()];
        let mut batched = Vec::with_capacity(need.len());
        for &i in &need {
            let Some(sp) = &self.spilled else {
                batched.push(i);
                continue;
            };
            let inner = &*db.inner;
            let mut ctx = GetContext::new(keys[i], inner.options.merge_operator.as_deref(), inner.options.timer());
            if !spill::lookup_own(db, &sp.files, keys[i], &mut ctx)? && ctx.is_untouched() {
                // Its own files said nothing: the batch reads it. What
                // probing them cost is counted here, as a Get counts it.
                ctx.stats.report_blocks_and_filters(&inner.stats);
                batched.push(i);
                continue;
            }
            if !ctx.is_done() {
                let (sv, seq) = db.read_view(Some(&self.snapshot));
                db.lookup(&sv, seq, keys[i], &mut ctx)?;
            }
            let r = ctx.finish();
            ctx.stats.report(&inner.stats, r.as_ref().ok().and_then(|v| v.as_ref()).map(|v| v.len()));
            ctx.merge.report(&inner.stats);
            settled[i] = Some(r?.map(|b| b.to_vec()));
        }
        let base_keys: Vec<&[u8]> = batched.iter().map(|&i| keys[i]).collect();
        let base = if base_keys.is_empty() { None } else { Some(db.multi_get(&at, &base_keys, true)?) };
        for (j, &i) in batched.iter().enumerate() {
            settled[i] = Some(base.as_ref().and_then(|b| b.get(j)).map(|v| v.to_vec()));
        }
        let mut out = Vec::with_capacity(keys.len());
        for (i, state) in states.into_iter().enumerate() {
            let below = || settled[i].clone().flatten();
            out.push(match state {
                Some(Own::Value(v)) => Some(v),
                Some(Own::Deleted) => None,
                Some(Own::Operands(ops)) => Some(Self::full_merge(db, keys[i], below().as_deref(), &ops)?),
                None => below(),
            });
        }
        Ok(out)
    }

    /// An iterator over the snapshot with the transaction's own writes on
    /// top, as they are now (later writes of the transaction are not seen
    /// by it), within `opts`' bounds (`opts.snapshot` is ignored: the
    /// transaction's is used; `auto_refresh_iterator_with_snapshot` works
    /// on it). Tracks nothing.
    pub fn iter(&self, db: &Db, opts: &ReadOptions) -> Result<iter::TransactionIterator> {
        self.of(db)?;
        let at = ReadOptions { snapshot: Some(&self.snapshot), ..opts.clone() };
        let base = match &self.spilled {
            None => db.iter(&at)?,
            Some(sp) => super::DbIterator::with_own(db.inner.clone(), &at, Some(sp.files.clone())),
        };
        Ok(iter::TransactionIterator::new(
            base,
            self.overlay.clone(),
            opts.lower_bound.clone(),
            opts.upper_bound.clone(),
        ))
    }

    fn wrote(&mut self, key: &[u8], own: Own) {
        Arc::make_mut(&mut self.overlay.own).insert(key.to_vec(), (own, self.writes));
        self.tracked.insert(key.to_vec(), ());
        self.writes += 1;
    }

    /// Moves the writes held in memory into an own file once they reached
    /// the spill size (before the write that would add to them). With no
    /// file to spare (the file layer's supply is short: a spill leaves
    /// [`SPLIT_RESERVE_FILES`] for flushes and logs), they stay in memory,
    /// and a spill is tried again once another quarter of the spill size
    /// was written.
    fn spill_if_due(&mut self) -> Result<()> {
        let size = self.batch.approximate_size();
        if self.spill_at == 0 || size < self.spill_next {
            return Ok(());
        }
        let short = self.owner.fs.files_left().is_some_and(|n| n <= SPLIT_RESERVE_FILES);
        let r = if short {
            Err(Error::PoolExhausted { file: String::new(), message: String::new() })
        } else {
            self.spill()
        };
        match r {
            Err(Error::PoolExhausted { .. }) => {
                self.spill_next = size + (self.spill_at / 4).max(1);
                Ok(())
            }
            Ok(()) => {
                self.spill_next = self.spill_at;
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Moves every write held in memory (and, with `with_bookkeeping`, the
    /// bookkeeping puts) into a new own file.
    fn spill_with(&mut self, with_bookkeeping: bool) -> Result<()> {
        if self.owner.closed.load(std::sync::atomic::Ordering::Acquire) {
            return Err(Error::Closed(format!("database {} is closed", self.owner.dir)));
        }
        let extra: &[(Vec<u8>, Vec<u8>)] = if with_bookkeeping { &self.bookkeeping } else { &[] };
        if self.batch.is_empty() && extra.is_empty() {
            return Ok(());
        }
        let first = self.spilled.as_ref().map_or(0, |s| s.next);
        let (file, used) = spill::write_own_file(&self.owner, &self.batch, extra, first)?;
        let mut files: Vec<Arc<OwnFile>> = self.spilled.as_ref().map(|s| s.files.to_vec()).unwrap_or_default();
        files.extend(file);
        self.spilled = Some(Spilled { files: files.into(), next: first + used });
        self.batch.clear();
        self.overlay = Overlay::default();
        if with_bookkeeping {
            self.bookkeeping.clear();
        }
        Ok(())
    }

    fn spill(&mut self) -> Result<()> {
        self.spill_with(false)
    }

    /// Sets the size of the writes held in memory at which this transaction
    /// spills them into an own file (0: never); it starts with
    /// `Options::transaction_spill_bytes`.
    pub fn set_spill_bytes(&mut self, bytes: usize) {
        self.spill_at = bytes;
        self.spill_next = bytes;
    }

    /// Whether the transaction spilled writes into own files (see [`spill`]).
    pub fn spilled(&self) -> bool {
        self.spilled.is_some()
    }

    /// Sets `key` to `value` when the transaction commits.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        check_key(key)?;
        super::options::check_value(value)?;
        self.spill_if_due()?;
        self.batch.put(key, value);
        self.wrote(key, Own::Value(value.to_vec()));
        Ok(())
    }

    /// Removes `key` when the transaction commits.
    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        check_key(key)?;
        self.spill_if_due()?;
        self.batch.delete(key);
        self.wrote(key, Own::Deleted);
        Ok(())
    }

    /// Adds a merge operand for `key`; the transaction's reads combine it
    /// at once (needs `Options::merge_operator`).
    pub fn merge(&mut self, db: &Db, key: &[u8], operand: &[u8]) -> Result<()> {
        check_key(key)?;
        super::options::check_value(operand)?;
        self.of(db)?;
        let op = Self::merge_operator(db)?;
        op.check_operand(operand)
            .map_err(|e| Error::InvalidArgument(format!("{} {} operator: {e}", messages::BAD_OPERAND, op.name())))?;
        self.spill_if_due()?;
        let next = match self.overlay.state(key) {
            Some(Own::Value(v)) => Own::Value(Self::full_merge(db, key, Some(&v), &[operand.to_vec()])?),
            Some(Own::Deleted) => Own::Value(Self::full_merge(db, key, None, &[operand.to_vec()])?),
            Some(Own::Operands(mut ops)) => {
                ops.push(operand.to_vec());
                Own::Operands(ops)
            }
            None => Own::Operands(vec![operand.to_vec()]),
        };
        self.batch.merge(key, operand);
        self.wrote(key, next);
        Ok(())
    }

    /// Removes every key in `[start, end)` when the transaction commits; the
    /// range is tracked (a write by anyone else into it after the snapshot
    /// fails the commit).
    pub fn delete_range(&mut self, start: &[u8], end: &[u8]) -> Result<()> {
        check_key(start)?;
        check_key(end)?;
        self.spill_if_due()?;
        self.batch.delete_range(start, end);
        if start < end {
            Arc::make_mut(&mut self.overlay.ranges).push((start.to_vec(), end.to_vec(), self.writes));
            self.tracked_ranges.push((start.to_vec(), end.to_vec()));
        }
        self.writes += 1;
        Ok(())
    }

    /// Adds the embedder's bookkeeping put to the commit
    /// (`WriteBatch::put_bookkeeping`: siltdb's request record): written
    /// with the transaction, neither read nor tracked by it.
    pub fn put_bookkeeping(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        check_key(key)?;
        self.bookkeeping.push((key.to_vec(), value.to_vec()));
        Ok(())
    }

    /// Bytes of the writes the transaction holds in memory (all of them,
    /// unless it spilled).
    pub fn approximate_size(&self) -> usize {
        self.batch.approximate_size()
    }

    /// Updates the transaction holds.
    pub fn len(&self) -> usize {
        self.writes
    }

    pub fn is_empty(&self) -> bool {
        self.writes == 0
    }

    /// Applies every write of the transaction atomically, unless a tracked
    /// key or range was written by anyone else after the snapshot: then
    /// `Busy`, naming the key, and nothing is written.
    pub fn commit(self, db: &Db, opts: &WriteOptions) -> Result<()> {
        self.commit_or_keep(db, opts).map_err(|(e, _)| e)
    }

    /// [`OptimisticTransaction::commit`], handing the transaction back when
    /// the commit wrote nothing only because the file layer had no file to
    /// give (`PoolExhausted`): it can be committed again once it has.
    pub fn commit_or_keep(
        mut self,
        db: &Db,
        opts: &WriteOptions,
    ) -> std::result::Result<(), (Error, Option<Box<Self>>)> {
        if let Err(e) = self.of(db) {
            return Err((e, None));
        }
        let seq = self.snapshot.sequence();
        let r = if self.spilled.as_ref().is_some_and(|s| !s.files.is_empty()) {
            // The rest joins the own files, then all of them are published
            // (durably, whatever `opts.sync` says: as an ingest is).
            self.spill_with(true).and_then(|()| {
                let sp = self.spilled.as_ref().expect("spilled");
                let check = |db: &Db| check_conflicts(db, seq, &self.tracked, &self.tracked_ranges);
                spill::publish(db, &sp.files, sp.next, check).map(|_| ())
            })
        } else {
            for (k, v) in self.bookkeeping.drain(..) {
                self.batch.put_bookkeeping(&k, &v);
            }
            let (tracked, ranges) = (&self.tracked, &self.tracked_ranges);
            db.write_checked(opts, &mut self.batch, |db| check_conflicts(db, seq, tracked, ranges))
        };
        match r {
            Ok(()) => Ok(()),
            Err(e @ Error::PoolExhausted { .. }) => Err((e, Some(Box::new(self)))),
            Err(e) => Err((e, None)),
        }
    }

    /// Drops every write; the transaction ends (as dropping it does).
    pub fn rollback(self) {}
}

/// `Busy` if a key of `tracked` or a key in one of `ranges` has a write
/// newer than `seq`.
fn check_conflicts(db: &Db, seq: u64, tracked: &BTreeMap<Vec<u8>, ()>, ranges: &[(Vec<u8>, Vec<u8>)]) -> Result<()> {
    for key in tracked.keys() {
        if let Some(newer) = db.latest_sequence_for_key(key)?.filter(|&s| s > seq) {
            return Err(Error::Busy(format!(
                "transaction conflict: key {} was written at sequence {newer}, after this transaction's snapshot ({seq})",
                show(key)
            )));
        }
    }
    for (start, end) in ranges {
        if let Some(newer) = db.latest_sequence_in_range(start, end)?.filter(|&s| s > seq) {
            return Err(Error::Busy(format!(
                "transaction conflict: a key in [{}, {}) was written at sequence {newer}, after this transaction's snapshot ({seq})",
                show(start),
                show(end)
            )));
        }
    }
    Ok(())
}

/// A key for a message: text if it is printable ASCII, else hex.
fn show(key: &[u8]) -> String {
    if key.iter().all(|b| (0x20..0x7f).contains(b)) {
        format!("{:?}", String::from_utf8_lossy(key))
    } else {
        key.iter().map(|b| format!("{b:02x}")).collect()
    }
}

mod iter;
pub(crate) mod spill;
pub use iter::TransactionIterator;
pub(crate) use spill::OWN_SEQ_BASE;

#[cfg(test)]
mod tests;
