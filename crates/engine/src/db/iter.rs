//! The user-facing iterator: merges memtables and tables, hides versions the
//! snapshot cannot see, deleted and range-deleted keys and older versions,
//! and resolves merge operands (LevelDB's DBIter, with RocksDB's range
//! tombstones and merges).

use std::sync::Arc;

use bytes::Bytes;

use super::options::ReadOptions;
use super::transaction::spill::OwnFile;
use super::{DbInner, Snapshot, SuperVersion};
use crate::error::{Error, Result};
use crate::format::key::{self, SequenceNumber, ValueType, MAX_SEQUENCE};
use crate::iter::{EmptyIterator, InternalIterator, LevelIter, MergingIterator};
use crate::merge::MergeOperator;
use crate::range_del::{self, FragmentedTombstones};
use crate::read::GetContext;
use crate::stats::{Statistics, Ticker};
use crate::version::TableContext;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// The merged iterator is at the entry that yields the current key
    /// (or, when the value was merged, just past the key's entries).
    Forward,
    /// The merged iterator is just before all entries of the current key,
    /// which is held in `saved_key` / `saved_value`.
    Reverse,
}

/// Iterates user keys in order, as of one sequence number.
///
/// It holds the SuperVersion it was created on (memtables and table files
/// stay alive while it lives). Positioning never fails; check `status()`
/// when `valid()` turns false.
pub struct DbIterator {
    db: Arc<DbInner>,
    sv: Arc<SuperVersion>,
    iter: MergingIterator,
    fill_cache: bool,
    /// Refresh onto new SuperVersions (only with an explicit snapshot).
    auto_refresh: bool,
    /// The iterator's own registration of its explicit snapshot, so that
    /// compaction keeps what it reads even after a refresh.
    snapshot: Option<Snapshot>,
    seq: SequenceNumber,
    /// A transaction's own table files (see `db::transaction`), read
    /// with the shared sources: their entries carry sequence numbers from
    /// `own_from` up, above every real one, and are visible to this
    /// iterator whatever its snapshot (the read callback of RocksDB PR
    /// 2850: a version shows if its number is at most `seq` or at least
    /// `own_from`). None for every other iterator (`own_from` = `u64::MAX`).
    own: Option<Arc<[Arc<OwnFile>]>>,
    own_from: SequenceNumber,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    /// Every range tombstone visible at `seq`, from all sources.
    tombstones: FragmentedTombstones,
    merge_operator: Option<Arc<dyn MergeOperator>>,
    direction: Direction,
    valid: bool,
    saved_key: Vec<u8>,
    saved_value: Vec<u8>,
    /// Forward direction, current value in `saved_value` (merged).
    value_saved: bool,
    err: Option<Error>,
    stats: Arc<Statistics>,
    counts: [u64; 4],
}

impl DbIterator {
    pub(super) fn new(db: Arc<DbInner>, opts: &ReadOptions) -> Self {
        Self::with_own(db, opts, None)
    }

    /// An iterator that also reads a transaction's own table files `own`
    /// (whose entries are numbered from `OWN_SEQ_BASE`).
    pub(super) fn with_own(db: Arc<DbInner>, opts: &ReadOptions, own: Option<Arc<[Arc<OwnFile>]>>) -> Self {
        let (sv, seq) = db.read_view(opts.snapshot.map(|s| s.sequence()));
        let fill = opts.fill_cache();
        let (iter, tombstones) = Self::build(&sv, seq, &db.tables, fill, own.as_deref());
        let snapshot = opts.snapshot.map(|s| Snapshot::new(s.sequence(), db.snapshots.clone()));
        DbIterator {
            merge_operator: db.options.merge_operator.clone(),
            stats: db.tables.stats.clone(),
            auto_refresh: opts.auto_refresh_iterator_with_snapshot && snapshot.is_some(),
            snapshot,
            db,
            sv,
            iter,
            fill_cache: fill,
            seq,
            own_from: if own.is_some() { super::transaction::OWN_SEQ_BASE } else { u64::MAX },
            own,
            lower: opts.lower_bound.clone(),
            upper: opts.upper_bound.clone(),
            tombstones,
            direction: Direction::Forward,
            valid: false,
            saved_key: Vec::new(),
            saved_value: Vec::new(),
            value_saved: false,
            err: None,
            counts: [0; 4],
        }
    }

    /// The merged iterator over every source of `sv` (and the own files
    /// `own`, if given), and the range tombstones visible at `seq` (with
    /// every one of the own files).
    pub(super) fn build(
        sv: &SuperVersion,
        seq: SequenceNumber,
        tables: &TableContext,
        fill: bool,
        own: Option<&[Arc<OwnFile>]>,
    ) -> (MergingIterator, FragmentedTombstones) {
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        let mut own_tombstones: Vec<Arc<FragmentedTombstones>> = Vec::new();
        for f in own.unwrap_or_default() {
            match f.meta.table(tables) {
                Ok(t) => {
                    own_tombstones.extend(t.tombstones().cloned());
                    children.push(Box::new(t.iter(fill)));
                }
                Err(e) => children.push(Box::new(EmptyIterator(Err(e)))),
            }
        }
        let mut tombstones: Vec<Arc<FragmentedTombstones>> = Vec::new();
        for m in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
            children.push(Box::new(m.iter()));
            tombstones.extend(m.tombstones());
        }
        // L0's files overlap: one child each. A lower level's files do not:
        // one child for the level, opening each file's iterator on arrival.
        for (level, files) in sv.version.levels.iter().enumerate() {
            for f in files {
                match f.table(tables) {
                    Ok(t) => {
                        tombstones.extend(t.tombstones().cloned());
                        if level == 0 {
                            children.push(Box::new(t.iter(fill)));
                        }
                    }
                    Err(e) => children.push(Box::new(EmptyIterator(Err(e)))),
                }
            }
            if level > 0 && !files.is_empty() {
                children.push(Box::new(LevelIter::new(files.clone(), tables.clone(), fill)));
            }
        }
        let mut tombstones = if tombstones.is_empty() {
            FragmentedTombstones::default()
        } else {
            range_del::merge_all(&tombstones).visible_at(seq)
        };
        if !own_tombstones.is_empty() {
            own_tombstones.push(Arc::new(tombstones));
            tombstones = range_del::merge_all(&own_tombstones);
        }
        (MergingIterator::new(children), tombstones)
    }

    /// Moves the iterator onto the current SuperVersion, reading as of
    /// `snapshot` (or, with `None`, the latest state). Like RocksDB's
    /// `Iterator::Refresh`, it leaves the iterator unpositioned: seek again.
    /// Obsolete files the old SuperVersion kept alive are deleted.
    pub fn refresh(&mut self, snapshot: Option<&Snapshot>) -> Result<()> {
        if self.db.closed.load(std::sync::atomic::Ordering::Acquire) {
            return Err(Error::Closed(format!("database {} is closed", self.db.dir)));
        }
        self.snapshot = snapshot.map(|s| Snapshot::new(s.sequence(), self.db.snapshots.clone()));
        self.auto_refresh &= self.snapshot.is_some();
        let (sv, seq) = self.db.read_view(snapshot.map(|s| s.sequence()));
        self.seq = seq;
        self.rebuild(sv);
        self.valid = false;
        self.err = None;
        self.saved_key.clear();
        self.saved_value.clear();
        self.value_saved = false;
        self.direction = Direction::Forward;
        Ok(())
    }

    fn rebuild(&mut self, sv: Arc<SuperVersion>) {
        let (iter, tombstones) = Self::build(&sv, self.seq, &self.db.tables, self.fill_cache, self.own.as_deref());
        self.iter = iter;
        self.tombstones = tombstones;
        let old = std::mem::replace(&mut self.sv, sv);
        drop(old);
        self.db.purge_obsolete_files();
    }

    /// With auto refresh on: if the database has a newer SuperVersion,
    /// rebuild on it (same snapshot) and return to the current key in the
    /// current direction. A cheap atomic compare when nothing changed.
    /// After the database is closed every positioning call fails with
    /// `Closed` (its files may be gone with it).
    fn closed(&mut self) -> bool {
        if self.db.closed.load(std::sync::atomic::Ordering::Acquire) {
            self.fail(Error::Closed(format!("database {} is closed", self.db.dir)));
            return true;
        }
        false
    }

    fn maybe_refresh(&mut self) {
        if !self.auto_refresh || self.db.sv_number.load(std::sync::atomic::Ordering::Acquire) == self.sv.number {
            return;
        }
        // Only while the status is OK (the children's status is checked
        // only now, when a refresh is due: it is not free).
        if self.err.is_some() || self.iter.status().is_err() {
            return;
        }
        let position = self.valid.then(|| (self.key().to_vec(), self.direction));
        let (sv, _) = self.db.read_view(Some(self.seq));
        self.rebuild(sv);
        self.stats.add(Ticker::IterAutoRefresh, 1);
        match position {
            Some((k, Direction::Forward)) => self.seek_inner(&k),
            Some((k, Direction::Reverse)) => self.seek_for_prev_inner(&k),
            None => {
                self.valid = false;
                self.direction = Direction::Forward;
            }
        }
    }

    /// The number of the SuperVersion this iterator reads.
    pub fn super_version_number(&self) -> u64 {
        self.sv.number
    }

    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current user key. REQUIRES: `valid()`.
    pub fn key(&self) -> &[u8] {
        if self.direction == Direction::Reverse || self.value_saved {
            &self.saved_key
        } else {
            key::user_key(self.iter.key())
        }
    }

    /// The current value. REQUIRES: `valid()`.
    pub fn value(&self) -> &[u8] {
        if self.direction == Direction::Reverse || self.value_saved {
            &self.saved_value
        } else {
            self.iter.value()
        }
    }

    /// `Ok` unless reading failed (then `valid()` is false).
    pub fn status(&self) -> Result<()> {
        if let Some(e) = &self.err {
            return Err(e.clone());
        }
        self.iter.status()
    }

    fn above_upper(&self, user_key: &[u8]) -> bool {
        self.upper.as_deref().is_some_and(|u| user_key >= u)
    }

    fn below_lower(&self, user_key: &[u8]) -> bool {
        self.lower.as_deref().is_some_and(|l| user_key < l)
    }

    /// Whether a version numbered `seq` shows to this iterator.
    #[inline]
    fn visible(&self, seq: SequenceNumber) -> bool {
        seq <= self.seq || seq >= self.own_from
    }

    /// The read number for tombstones (all of them visible, filtered when
    /// built) and seeks: above the own files' entries when it has some.
    #[inline]
    fn read_seq(&self) -> SequenceNumber {
        if self.own.is_some() {
            MAX_SEQUENCE
        } else {
            self.seq.min(MAX_SEQUENCE)
        }
    }

    fn covered(&self, user_key: &[u8], seq: SequenceNumber) -> bool {
        !self.tombstones.is_empty() && self.tombstones.max_covering_seq(user_key, self.read_seq()) > seq
    }

    /// A full merge with the database's operator, counted in its
    /// statistics (for iterators layered on this one).
    pub(crate) fn full_merge(&self, key: &[u8], base: Option<&[u8]>, operands: &[&[u8]]) -> Result<Vec<u8>> {
        self.db.full_merge(key, base, operands)
    }

    /// The current entry's key does not parse: `Corruption` naming where
    /// it is stored.
    fn malformed(&self) -> Error {
        malformed(&self.iter)
    }

    fn fail(&mut self, e: Error) {
        self.err = Some(e);
        self.valid = false;
    }

    /// Resolves the merge starting at the current entry (a visible Merge),
    /// reading forward through the key's versions. Leaves the merged
    /// iterator past the key. Returns the value, or `None` if it resolves to
    /// a deletion.
    fn merge_forward(&mut self, user_key: &[u8]) -> Result<Option<Bytes>> {
        let cover = self.tombstones.max_covering_seq(user_key, self.read_seq());
        let mut ctx = GetContext::new(user_key, self.merge_operator.as_deref(), self.db.options.timer());
        ctx.cover(cover);
        let (seq, own_from) = (self.seq, self.own_from);
        merge_forward(&mut self.iter, user_key, |s| s <= seq || s >= own_from, ctx, &self.stats)
    }

    /// Moves forward to the newest visible live version of the next user
    /// key; with `skipping`, user keys <= `saved_key` are passed over.
    fn find_next_user_entry(&mut self, mut skipping: bool) {
        self.value_saved = false;
        while self.iter.valid() {
            let Some(p) = key::parse(self.iter.key()) else {
                return self.fail(self.malformed());
            };
            if self.visible(p.seq) && !(skipping && p.user_key <= self.saved_key.as_slice()) {
                if self.above_upper(p.user_key) {
                    break;
                }
                let ty = if self.covered(p.user_key, p.seq) { ValueType::Delete } else { p.ty };
                match ty {
                    ValueType::Put => {
                        self.valid = true;
                        self.saved_key.clear();
                        return;
                    }
                    ValueType::Merge => {
                        let uk = p.user_key.to_vec();
                        match self.merge_forward(&uk) {
                            Err(e) => return self.fail(e),
                            Ok(Some(v)) => {
                                self.saved_key = uk;
                                self.saved_value.clear();
                                self.saved_value.extend_from_slice(&v);
                                self.value_saved = true;
                                self.valid = true;
                                return;
                            }
                            Ok(None) => {
                                self.saved_key = uk;
                                skipping = true;
                                continue; // merge_forward moved past the key
                            }
                        }
                    }
                    ValueType::Delete => {
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(p.user_key);
                        skipping = true;
                    }
                    // As Get says of it, and the reverse direction (through
                    // GetContext): not a deletion.
                    ty @ (ValueType::BlobIndex | ValueType::RangeDelete) => {
                        return self.fail(crate::read::unsupported_entry(ty));
                    }
                }
            }
            self.iter.next();
        }
        self.saved_key.clear();
        self.valid = false;
    }

    /// The value of `user_key` from its visible versions, oldest first.
    fn resolve(&self, user_key: &[u8], versions: &[(ValueType, SequenceNumber, Bytes)]) -> Result<Option<Bytes>> {
        let mut ctx = GetContext::new(user_key, self.merge_operator.as_deref(), self.db.options.timer());
        ctx.cover(self.tombstones.max_covering_seq(user_key, self.read_seq()));
        let mut r = Ok(None);
        for (ty, seq, v) in versions.iter().rev() {
            match ctx.save(*ty, *seq, v) {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    r = Err(e);
                    break;
                }
            }
        }
        if r.is_ok() {
            r = ctx.finish();
        }
        ctx.merge.report(&self.stats);
        r
    }

    /// Moves backward to the previous user key that has a live value,
    /// leaving it in `saved_key`/`saved_value`.
    fn find_prev_user_entry(&mut self) {
        self.value_saved = false;
        let mut pending_key: Option<Vec<u8>> = None;
        let mut pending: Vec<(ValueType, SequenceNumber, Bytes)> = Vec::new();
        let mut found = None;
        while self.iter.valid() {
            let Some(p) = key::parse(self.iter.key()) else {
                return self.fail(self.malformed());
            };
            if self.visible(p.seq) {
                if let Some(k) = pending_key.as_deref() {
                    if p.user_key < k {
                        match self.resolve(k, &pending) {
                            Err(e) => return self.fail(e),
                            Ok(Some(v)) => {
                                found = Some((pending_key.take().unwrap_or_default(), v));
                                break;
                            }
                            Ok(None) => {
                                pending_key = None;
                                pending.clear();
                            }
                        }
                    }
                }
                if pending_key.is_none() {
                    if self.below_lower(p.user_key) {
                        break;
                    }
                    pending_key = Some(p.user_key.to_vec());
                }
                pending.push((p.ty, p.seq, Bytes::copy_from_slice(self.iter.value())));
            }
            self.iter.prev();
        }
        if found.is_none() && self.err.is_none() {
            if let Some(k) = pending_key.take() {
                match self.resolve(&k, &pending) {
                    Err(e) => return self.fail(e),
                    Ok(Some(v)) => found = Some((k, v)),
                    Ok(None) => {}
                }
            }
        }
        match found {
            Some((k, v)) => {
                self.saved_key = k;
                self.saved_value.clear();
                self.saved_value.extend_from_slice(&v);
                self.valid = true;
                self.direction = Direction::Reverse;
            }
            None => {
                self.valid = false;
                self.saved_key.clear();
                self.saved_value.clear();
                self.direction = Direction::Forward;
            }
        }
    }

    /// Positions at the first key >= `target` (and >= the lower bound).
    pub fn seek(&mut self, target: &[u8]) {
        if self.closed() {
            return;
        }
        self.maybe_refresh();
        self.seek_inner(target);
    }

    fn seek_inner(&mut self, target: &[u8]) {
        self.counts[0] += 1;
        self.err = None;
        self.direction = Direction::Forward;
        self.saved_value.clear();
        let target = match self.lower.as_deref() {
            Some(l) if target < l => l.to_vec(),
            _ => target.to_vec(),
        };
        self.iter.seek(&key::seek_key(&target, self.read_seq()));
        self.find_next_user_entry(false);
    }

    /// Positions at the last key <= `target` (and < the upper bound).
    pub fn seek_for_prev(&mut self, target: &[u8]) {
        if self.closed() {
            return;
        }
        self.maybe_refresh();
        self.seek_for_prev_inner(target);
    }

    fn seek_for_prev_inner(&mut self, target: &[u8]) {
        if self.above_upper(target) {
            return self.seek_to_last_inner();
        }
        self.counts[0] += 1;
        self.err = None;
        self.saved_value.clear();
        // The largest internal key of `target` is its oldest possible version.
        self.iter.seek_for_prev(&key::internal_key(target, 0, ValueType::Delete));
        self.find_prev_user_entry();
    }

    pub fn seek_to_first(&mut self) {
        if self.closed() {
            return;
        }
        self.maybe_refresh();
        match self.lower.clone() {
            Some(l) => self.seek_inner(&l),
            None => {
                self.counts[0] += 1;
                self.err = None;
                self.direction = Direction::Forward;
                self.saved_value.clear();
                self.iter.seek_to_first();
                self.find_next_user_entry(false);
            }
        }
    }

    pub fn seek_to_last(&mut self) {
        if self.closed() {
            return;
        }
        self.maybe_refresh();
        self.seek_to_last_inner();
    }

    fn seek_to_last_inner(&mut self) {
        self.counts[0] += 1;
        self.err = None;
        self.saved_value.clear();
        match self.upper.clone() {
            // Every entry of `upper` sorts after its seek key at MAX_SEQUENCE.
            Some(u) => self.iter.seek_for_prev(&key::seek_key(&u, MAX_SEQUENCE)),
            None => self.iter.seek_to_last(),
        }
        self.find_prev_user_entry();
    }

    /// Moves to the next key. REQUIRES: `valid()`.
    pub fn next(&mut self) {
        if !self.valid || self.closed() {
            return;
        }
        self.counts[1] += 1;
        self.counts[3] += (self.key().len() + self.value().len()) as u64;
        if self.direction == Direction::Reverse {
            self.direction = Direction::Forward;
            // The merged iterator is before the current key's entries: step
            // into them and skip them below (saved_key holds the key).
            if self.iter.valid() {
                self.iter.next();
            } else {
                self.iter.seek_to_first();
            }
        } else if !self.value_saved {
            self.saved_key.clear();
            self.saved_key.extend_from_slice(key::user_key(self.iter.key()));
            self.iter.next();
        }
        // (A merged value left the iterator past its key already.)
        if !self.iter.valid() {
            self.valid = false;
            self.saved_key.clear();
            self.value_saved = false;
            return;
        }
        self.find_next_user_entry(true);
        self.maybe_refresh();
    }

    /// Moves to the previous key. REQUIRES: `valid()`.
    pub fn prev(&mut self) {
        if !self.valid || self.closed() {
            return;
        }
        self.counts[2] += 1;
        self.counts[3] += (self.key().len() + self.value().len()) as u64;
        if self.direction == Direction::Forward {
            // Back up to before every entry of the current key.
            let current = self.key().to_vec();
            if self.value_saved {
                if self.iter.valid() {
                    self.iter.prev();
                } else {
                    self.iter.seek_to_last();
                }
            }
            self.value_saved = false;
            self.saved_key = current;
            while self.iter.valid() && key::user_key(self.iter.key()) >= self.saved_key.as_slice() {
                self.iter.prev();
            }
            if !self.iter.valid() {
                self.valid = false;
                self.saved_key.clear();
                self.saved_value.clear();
                return;
            }
            self.direction = Direction::Reverse;
        }
        self.find_prev_user_entry();
        self.maybe_refresh();
    }
}

impl super::Db {
    /// An iterator over the database as of `opts.snapshot` (or now), within
    /// `opts`' bounds. The iterator holds the SuperVersion it was made on.
    pub fn iter(&self, opts: &ReadOptions) -> Result<DbIterator> {
        self.check_open()?;
        Ok(DbIterator::new(self.inner.clone(), opts))
    }
}

impl Drop for DbIterator {
    fn drop(&mut self) {
        // Letting go of an old SuperVersion may make files obsolete.
        if self.db.sv_number.load(std::sync::atomic::Ordering::Acquire) != self.sv.number {
            let sv = std::mem::replace(&mut self.sv, Arc::new(SuperVersion::empty()));
            drop(sv);
            self.db.purge_obsolete_files();
        }
        self.stats.add(Ticker::NumberDbSeek, self.counts[0]);
        self.stats.add(Ticker::NumberDbNext, self.counts[1]);
        self.stats.add(Ticker::NumberDbPrev, self.counts[2]);
        self.stats.add(Ticker::IterBytesRead, self.counts[3]);
    }
}

/// The entry `it` is at has a key that does not parse: `Corruption` naming
/// where it is stored.
pub(super) fn malformed(it: &MergingIterator) -> Error {
    let (file, offset) = it.origin().unwrap_or(("memtable", 0));
    Error::corruption(file, offset, "malformed internal key")
}

/// Resolves a merge from `it`, at the newest visible version of
/// `user_key` (a Merge): offers `ctx` the key's versions that `visible`
/// lets through until it has its answer, leaves `it` past the key, and
/// reports the merge's statistics. The value, or `None` for a deletion.
pub(super) fn merge_forward(
    it: &mut MergingIterator,
    user_key: &[u8],
    visible: impl Fn(SequenceNumber) -> bool,
    mut ctx: GetContext,
    stats: &Statistics,
) -> Result<Option<Bytes>> {
    let r = (|| {
        let mut wanting = true;
        while it.valid() {
            let Some(p) = key::parse(it.key()) else { return Err(malformed(it)) };
            if p.user_key != user_key {
                break;
            }
            if wanting && visible(p.seq) {
                wanting = ctx.save(p.ty, p.seq, &Bytes::copy_from_slice(it.value()))?;
            }
            it.next();
        }
        ctx.finish()
    })();
    ctx.merge.report(stats);
    r
}
