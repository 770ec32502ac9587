//! Point lookups: memtables, then each level, newest data first, with the
//! highest covering range-tombstone sequence number carried down (RocksDB
//! PR 4449: no range-deletion aggregator on the Get path).
//!
//! `get` copies the value out; `get_pinned` hands it out pinned instead
//! ([`PinnedValue`], RocksDB's PinnableSlice, PRs 1732/1756).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;

use super::{Db, ReadOptions};
use crate::db::options::{check_key, READ_SAMPLE_RATE};
use crate::error::Result;
use crate::format::key;
use crate::iter::InternalIterator;
use crate::read::row_cache::RowKey;
use crate::read::GetContext;
use crate::sst::filter::key_hash;
use crate::stats::{Histogram, Ticker};
use crate::version::FileMetaData;

impl Db {
    /// The value of `key`, or `None`. The returned `Bytes` shares memory with
    /// the block cache or memtable it came from (no copy of the value); it
    /// keeps that memory alive while held.
    pub fn get_bytes(&self, opts: &ReadOptions, key: &[u8]) -> Result<Option<Bytes>> {
        Ok(self.get_with_holder(opts, key)?.map(|(value, _)| value))
    }

    /// A point lookup, counted as a Get: the value, and the block (or
    /// memtable entry) that holds it when it is a slice of one.
    fn get_with_holder(&self, opts: &ReadOptions, key: &[u8]) -> Result<Option<(Bytes, Option<Bytes>)>> {
        check_key(key)?;
        self.check_open()?;
        let inner = &*self.inner;
        let timer = inner.options.timer();
        let t0 = timer.map(|c| c.now_micros());
        let (sv, seq) = self.read_view(opts.snapshot);
        let mut ctx = GetContext::new(key, inner.options.merge_operator.as_deref(), timer);
        ctx.fill_cache = opts.fill_cache();
        let result = self.lookup(&sv, seq, key, &mut ctx);
        let value = result.and_then(|()| ctx.finish_pinned());
        ctx.stats.report(&inner.stats, value.as_ref().ok().and_then(|v| v.as_ref()).map(|(v, _)| v.len()));
        ctx.merge.report(&inner.stats);
        if let (Some(t0), Some(c)) = (t0, timer) {
            inner.stats.record(Histogram::DbGet, c.now_micros().saturating_sub(t0));
        }
        value
    }

    /// Walks the sources of `sv` for `key` until `ctx` has its answer.
    pub(super) fn lookup(&self, sv: &super::SuperVersion, seq: u64, key: &[u8], ctx: &mut GetContext) -> Result<()> {
        let seek = key::lookup_key(key, seq);
        // One hash for the memtables' and the tables' bloom filters.
        let hash = key_hash(key);
        if lookup_memtables(sv, seq, &seek, hash, ctx)? {
            return Ok(());
        }
        // The first file whose data was searched, and how many were.
        let mut first: Option<&Arc<FileMetaData>> = None;
        let mut searched = 0u32;
        let mut hit = None;
        'levels: for (level, files) in sv.version.levels.iter().enumerate() {
            if level == 0 {
                for f in files.iter().filter(|f| f.smallest_user_key() <= key && key <= f.largest_user_key()) {
                    if self.search_file(f, key, &seek, hash, seq, ctx)? {
                        searched += 1;
                        first.get_or_insert(f);
                    }
                    if ctx.is_done() {
                        hit = ctx.found().then_some(0);
                        break 'levels;
                    }
                }
            } else if let Some(f) = sv.version.find_file(level, &seek) {
                if self.search_file(f, key, &seek, hash, seq, ctx)? {
                    searched += 1;
                    first.get_or_insert(f);
                }
                if ctx.is_done() {
                    hit = ctx.found().then_some(level);
                    break;
                }
            }
        }
        ctx.stats.hit_level = hit;
        if searched > 1 {
            if let Some(f) = first {
                self.sample_read(f);
            }
        }
        Ok(())
    }

    /// Offers `f`'s versions of `key` to `ctx` (its range tombstones first,
    /// whatever its filter says); whether a data block was searched.
    #[inline]
    fn search_file(
        &self,
        f: &FileMetaData,
        key: &[u8],
        seek: &[u8],
        hash: u64,
        seq: u64,
        ctx: &mut GetContext,
    ) -> Result<bool> {
        let table = f.table(&self.inner.tables)?;
        ctx.cover(table.max_covering_tombstone_seq(key, seq));
        let Some(rc) = self.inner.row_cache.as_ref().filter(|_| ctx.uses_row_cache()) else {
            return table.get(seek, hash, ctx);
        };
        // The filter first: a row cache probe costs more than a filter's.
        if table.filtered_out(hash, ctx) {
            return Ok(false);
        }
        let row = RowKey::new(f.number(), hash, seq, f.meta.largest_seq);
        if let Some(entry) = rc.get(row, key) {
            ctx.stats.row_cache_hit += 1;
            table.count_true_positive(ctx, false);
            ctx.replay(entry.versions())?;
            return Ok(true);
        }
        ctx.stats.row_cache_miss += 1;
        if !ctx.fill_cache || !rc.admit(row) {
            return table.search(seek, hash, ctx);
        }
        ctx.start_recording();
        let searched = table.search(seek, hash, ctx)?;
        if let Some(versions) = ctx.take_recording() {
            rc.insert(row, key, &versions);
        }
        Ok(searched)
    }

    /// A lookup searched `f` in vain and went on to another file: one in
    /// `READ_SAMPLE_RATE` such lookups charges `f` that many
    /// (read-triggered compaction; the background work picks it up).
    fn sample_read(&self, f: &FileMetaData) {
        if self.read_sampled() {
            self.charge_read(f);
        }
    }

    /// Whether this lookup that searched a file in vain is the one in
    /// `READ_SAMPLE_RATE` sampled (false with read-triggered compaction off).
    pub(super) fn read_sampled(&self) -> bool {
        let inner = &*self.inner;
        inner.options.read_triggered_compaction
            && inner.read_samples.fetch_add(1, Ordering::Relaxed).is_multiple_of(READ_SAMPLE_RATE)
    }

    /// Charges `f` for a sampled lookup that searched it in vain.
    pub(super) fn charge_read(&self, f: &FileMetaData) {
        if f.charge_reads(READ_SAMPLE_RATE) {
            self.inner.stats.add(Ticker::ReadCompactionsWanted, 1);
        }
    }

    /// The value of `key` copied into a `Vec`, or `None`.
    pub fn get(&self, opts: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.get_bytes(opts, key)?.map(|b| b.to_vec()))
    }

    /// The value of `key` without copying it: it points into the cached
    /// block (or memtable entry) it was found in, which stays pinned while
    /// the returned value lives — even if compaction deletes its file.
    ///
    /// A point lookup like [`Db::get_bytes`], counted as a Get in the
    /// statistics (`rocksdb.number.keys.read`, memtable and level hits).
    pub fn get_pinned(&self, opts: &ReadOptions, key: &[u8]) -> Result<Option<PinnedValue>> {
        Ok(self.get_with_holder(opts, key)?.map(|(value, holder)| {
            let holder = holder.unwrap_or_else(|| value.clone());
            let counter = self.inner.pinned.clone();
            counter.fetch_add(holder.len() as u64, Ordering::Relaxed);
            PinnedValue { value, holder, counter }
        }))
    }

    /// The sequence number of the last applied write.
    pub fn latest_sequence(&self) -> u64 {
        self.inner.visible_seq.load(Ordering::Acquire)
    }

    /// The sequence number of the newest write to `key` the database still
    /// knows (a put, delete or merge of it, or a range delete covering it),
    /// or `None`: from the memtables while they hold the key's history, and
    /// from the tables' entries when they no longer do (RocksDB D50475). A
    /// version compaction dropped under a newer one is not needed: the
    /// newer one answers. Counted as no Get.
    pub fn latest_sequence_for_key(&self, key: &[u8]) -> Result<Option<u64>> {
        check_key(key)?;
        self.check_open()?;
        let (sv, _) = self.read_view(None);
        let mut ctx = GetContext::for_sequence(key);
        self.lookup(&sv, key::MAX_SEQUENCE, key, &mut ctx)?;
        let newest = ctx.newest_seq.max(ctx.max_covering_tombstone_seq);
        Ok((newest > 0).then_some(newest))
    }

    /// The sequence number of the newest write to any key in `[start, end)`
    /// (a range delete overlapping it counts), or `None`. Reads every entry
    /// of the range: for conflict checks of range deletes in transactions.
    pub fn latest_sequence_in_range(&self, start: &[u8], end: &[u8]) -> Result<Option<u64>> {
        check_key(start)?;
        check_key(end)?;
        self.check_open()?;
        if start >= end {
            return Ok(None);
        }
        let (sv, _) = self.read_view(None);
        let (mut it, tombstones) = super::DbIterator::build(&sv, key::MAX_SEQUENCE, &self.inner.tables, false, None);
        let mut newest = 0;
        for f in tombstones.fragments() {
            if f.start.as_slice() < end && start < f.end.as_slice() {
                newest = newest.max(f.seqs.first().copied().unwrap_or(0));
            }
        }
        it.seek(&key::lookup_key(start, key::MAX_SEQUENCE));
        while it.valid() {
            let Some(p) = key::parse(it.key()) else { break };
            if p.user_key >= end {
                break;
            }
            newest = newest.max(p.seq);
            it.next();
        }
        it.status()?;
        Ok((newest > 0).then_some(newest))
    }
}

/// One value read without copying; it keeps its block pinned until dropped.
pub struct PinnedValue {
    value: Bytes,
    /// The block (or memtable entry) `value` is a slice of.
    holder: Bytes,
    counter: Arc<AtomicU64>,
}

impl PinnedValue {
    pub fn as_slice(&self) -> &[u8] {
        &self.value
    }

    /// Bytes of the block (or entry) this value keeps alive.
    pub fn pinned_bytes(&self) -> u64 {
        self.holder.len() as u64
    }
}

impl Drop for PinnedValue {
    fn drop(&mut self) {
        self.counter.fetch_sub(self.holder.len() as u64, Ordering::Relaxed);
    }
}

impl std::ops::Deref for PinnedValue {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.value
    }
}

/// Offers the versions of the key of `lookup` (its seek key as of `seq`;
/// `hash` its user key's `key_hash`) in the memtables of `sv`, newest first,
/// to `ctx`; true once it has its answer.
pub(super) fn lookup_memtables(
    sv: &super::SuperVersion,
    seq: u64,
    lookup: &[u8],
    hash: u64,
    ctx: &mut GetContext,
) -> Result<bool> {
    let key = key::user_key(lookup);
    for mem in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
        ctx.cover(mem.max_covering_tombstone_seq(key, seq));
        let mut err = None;
        mem.for_each_version(lookup, hash, |ty, s, v| match ctx.save(ty, s, v) {
            Ok(more) => more,
            Err(e) => {
                err = Some(e);
                false
            }
        });
        if let Some(e) = err {
            return Err(e);
        }
        if ctx.is_done() {
            ctx.stats.memtable_hit = true;
            return Ok(true);
        }
    }
    Ok(false)
}
