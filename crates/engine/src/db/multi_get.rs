//! Batched point lookups (RocksDB's MultiGet, PR 5011) and pinned results
//! (PinnableSlice, PRs 1732/1756).
//!
//! A batch is read at one sequence number on one SuperVersion. Keys are
//! sorted and de-duplicated; memtables are searched per key; then each L0
//! file gets the keys inside its range, and each lower level is walked with
//! the keys grouped by the file that may hold them, so each table sees its
//! keys as one batch (`Table::multi_get`).
//!
//! Values are not copied: each is a slice of the data block (or memtable
//! entry) it was found in, and the result keeps those pinned, one pin per
//! distinct block, counted in `DbProperties::pinned_bytes` until the result
//! is dropped.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;

use super::{Db, ReadOptions, SuperVersion};
use crate::db::options::check_key;
use crate::error::Result;
use crate::format::key;
use crate::merge::MergeStats;
use crate::read::row_cache::RowKey;
use crate::read::GetContext;
use crate::sst::filter::key_hash;
use crate::sst::BatchKey;
use crate::stats::{GetStats, HitCounts};
use crate::version::FileMetaData;

/// Memory kept alive by values handed out without copying.
struct Pins {
    holders: Vec<Bytes>,
    charge: u64,
    counter: Arc<AtomicU64>,
}

impl Pins {
    /// Room for `n` holders: a batch pins at most one per key.
    fn new(counter: Arc<AtomicU64>, n: usize) -> Self {
        Pins { holders: Vec::with_capacity(n), charge: 0, counter }
    }

    /// Pins `holder` once however many values it holds.
    fn pin(&mut self, holder: Bytes) {
        let same = |h: &Bytes| h.as_ptr() == holder.as_ptr() && h.len() == holder.len();
        if !self.holders.iter().any(same) {
            self.charge += holder.len() as u64;
            self.counter.fetch_add(holder.len() as u64, Ordering::Relaxed);
            self.holders.push(holder);
        }
    }
}

impl Drop for Pins {
    fn drop(&mut self) {
        self.counter.fetch_sub(self.charge, Ordering::Relaxed);
    }
}

/// The values of a [`Db::multi_get`], in the order of the keys asked for.
/// They point into pinned blocks; dropping the result releases the pins.
pub struct PinnedResults {
    values: Vec<Option<Bytes>>,
    pins: Pins,
}

impl PinnedResults {
    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The value of the `i`th key, `None` if it does not exist.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        self.values.get(i).and_then(|v| v.as_deref())
    }

    pub fn iter(&self) -> impl Iterator<Item = Option<&[u8]>> {
        self.values.iter().map(|v| v.as_deref())
    }

    /// Bytes of blocks and entries this result keeps alive.
    pub fn pinned_bytes(&self) -> u64 {
        self.pins.charge
    }
}

impl Db {
    /// Looks up every key of `keys` at one consistent point in time (one
    /// SuperVersion, one sequence number). With `batched`, keys are grouped
    /// per table file and each file is searched once for its group (filter
    /// probed for the batch, blocks read once); without, each key is looked
    /// up on its own, as `get` does. Results come back in the order asked,
    /// duplicates included; values are pinned, not copied.
    pub fn multi_get(&self, opts: &ReadOptions, keys: &[&[u8]], batched: bool) -> Result<PinnedResults> {
        for k in keys {
            check_key(k)?;
        }
        self.check_open()?;
        let inner = &*self.inner;
        let (sv, seq) = self.read_view(opts.snapshot);
        let merge_op = inner.options.merge_operator.as_deref();
        let timer = inner.options.timer();
        let fill_cache = opts.fill_cache();
        let new_ctx = |key| {
            let mut ctx = GetContext::new(key, merge_op, timer);
            ctx.fill_cache = fill_cache;
            ctx
        };
        let mut stats = GetStats::default();
        let mut hits = HitCounts::default();
        let mut merged = MergeStats::default();
        let mut pins = Pins::new(inner.pinned.clone(), keys.len());
        let mut values: Vec<Option<Bytes>> = vec![None; keys.len()];
        // Counts are reported whatever happens, as a Get's are: the work
        // once per lookup, where the value was found once per key asked.
        let mut count = |ctx: &GetContext, asked: u32| {
            add_stats(&mut stats, &ctx.stats);
            for _ in 0..asked {
                hits.count(&ctx.stats);
            }
            merged.add(ctx.merge);
        };
        let mut outcome = Ok(());
        // A batch of one has nothing to share: the per-key path is cheaper.
        if !batched || keys.len() == 1 {
            for (i, key) in keys.iter().enumerate() {
                let mut ctx = new_ctx(key);
                let r = self.lookup(&sv, seq, key, &mut ctx).and_then(|()| ctx.finish_pinned());
                count(&ctx, 1);
                match r {
                    Ok(Some((v, holder))) => {
                        pins.pin(holder.unwrap_or_else(|| v.clone()));
                        values[i] = Some(v);
                    }
                    Ok(None) => {}
                    Err(e) => {
                        outcome = Err(e);
                        break;
                    }
                }
            }
        } else {
            // Sorted, de-duplicated keys; `slot[i]` is the lookup of key i.
            let order = crate::sort::order(keys.len(), &mut |a, b| keys[a].cmp(keys[b]));
            // Room for every key at once: a lookup is a few hundred bytes,
            // which growing the vector would copy again at each doubling.
            let mut lookups: Vec<BatchKey> = Vec::with_capacity(keys.len());
            let mut slot = vec![0usize; keys.len()];
            // How many of the keys asked are each lookup's (duplicates).
            let mut asked: Vec<u32> = Vec::with_capacity(keys.len());
            for &i in &order {
                if lookups.last().is_none_or(|l| l.user_key != keys[i]) {
                    lookups.push(BatchKey {
                        user_key: keys[i],
                        seek: key::lookup_key(keys[i], seq),
                        hash: key_hash(keys[i]),
                        ctx: new_ctx(keys[i]),
                    });
                    asked.push(0);
                }
                slot[i] = lookups.len() - 1;
                asked[lookups.len() - 1] += 1;
            }
            outcome = self.batched_lookup(&sv, seq, &mut lookups);
            // Read sampling, as a Get's: a key that searched more than one
            // file charges the first (found again by its number, only for
            // the one lookup in READ_SAMPLE_RATE sampled). A batch that
            // failed part way samples nothing: some keys were not looked up.
            for l in lookups.iter().filter(|_| outcome.is_ok()) {
                if let Some(first) = l.ctx.first_file_searched.filter(|_| l.ctx.files_searched > 1) {
                    if self.read_sampled() {
                        if let Some(f) = sv.version.levels.iter().flatten().find(|f| f.number() == first) {
                            self.charge_read(f);
                        }
                    }
                }
            }
            let mut answers: Vec<Option<Bytes>> = Vec::with_capacity(lookups.len());
            for (mut l, asked) in lookups.into_iter().zip(asked) {
                // After a failed lookup the keys' contexts may be half way:
                // count the work they did, not where they found a value
                // (some never looked), and merge nothing more.
                let answer = if outcome.is_ok() { l.ctx.finish_pinned() } else { Ok(None) };
                count(&l.ctx, if outcome.is_ok() { asked } else { 0 });
                match answer {
                    Ok(a) => answers.push(a.map(|(v, holder)| {
                        pins.pin(holder.unwrap_or_else(|| v.clone()));
                        v
                    })),
                    Err(e) => {
                        if outcome.is_ok() {
                            outcome = Err(e);
                        }
                        answers.push(None);
                    }
                }
            }
            for (i, &s) in slot.iter().enumerate() {
                values[i] = answers[s].clone();
            }
        }
        let found_keys = values.iter().filter(|v| v.is_some()).count() as u64;
        let bytes = values.iter().flatten().map(|v| v.len() as u64).sum();
        stats.report_batch(&inner.stats, keys.len() as u64, found_keys, bytes);
        hits.report(&inner.stats);
        merged.report(&inner.stats);
        outcome?;
        Ok(PinnedResults { values, pins })
    }

    /// Visits memtables per key, then each level with the keys grouped by
    /// file.
    fn batched_lookup(&self, sv: &SuperVersion, seq: u64, lookups: &mut [BatchKey]) -> Result<()> {
        for l in lookups.iter_mut() {
            super::get::lookup_memtables(sv, seq, &l.seek, l.hash, &mut l.ctx)?;
        }
        let n = lookups.len();
        for (level, files) in sv.version.levels.iter().enumerate() {
            if level == 0 {
                for f in files {
                    let (lo, hi) = (f.smallest_user_key(), f.largest_user_key());
                    let wanted = |l: &BatchKey| !l.ctx.is_done() && l.user_key >= lo && l.user_key <= hi;
                    if !lookups.iter().any(wanted) {
                        continue;
                    }
                    // Sized for every key: growing it would allocate again.
                    let mut batch: Vec<&mut BatchKey> = Vec::with_capacity(n);
                    batch.extend(lookups.iter_mut().filter(|l| wanted(l)));
                    self.multi_get_file(f, &mut batch, seq)?;
                    for l in batch.iter_mut() {
                        if l.ctx.found() && l.ctx.stats.hit_level.is_none() && !l.ctx.stats.memtable_hit {
                            l.ctx.stats.hit_level = Some(0);
                        }
                    }
                }
                continue;
            }
            if files.is_empty() {
                continue;
            }
            // Walk the level with the keys in order: each run of keys that
            // one file may hold is one batch for that file.
            let mut pending: Vec<&mut BatchKey> = Vec::with_capacity(n);
            pending.extend(lookups.iter_mut().filter(|l| !l.ctx.is_done()));
            let mut i = 0;
            while i < pending.len() {
                let Some(f) = sv.version.find_file(level, &pending[i].seek) else {
                    i += 1;
                    continue;
                };
                let mut j = i + 1;
                while j < pending.len() && key::compare(&pending[j].seek, &f.meta.largest).is_le() {
                    j += 1;
                }
                let f = f.clone();
                self.multi_get_file(&f, &mut pending[i..j], seq)?;
                for l in &mut pending[i..j] {
                    if l.ctx.found() && l.ctx.stats.hit_level.is_none() && !l.ctx.stats.memtable_hit {
                        l.ctx.stats.hit_level = Some(level);
                    }
                }
                i = j;
            }
        }
        Ok(())
    }
}

impl Db {
    /// Looks `batch` up in table file `f`, through the row cache when there
    /// is one: keys the filter lets through and the cache holds are
    /// answered from it (after the file's tombstones, as `Table::multi_get`
    /// covers the rest); the others go to the file as one batch, and what
    /// it held for them is cached.
    fn multi_get_file(&self, f: &Arc<FileMetaData>, batch: &mut [&mut BatchKey], seq: u64) -> Result<()> {
        let table = f.table(&self.inner.tables)?;
        let Some(rc) = &self.inner.row_cache else { return table.multi_get(batch, seq) };
        let row = |k: &BatchKey| RowKey::new(f.number(), k.hash, seq, f.meta.largest_seq);
        let mut rest: Vec<&mut BatchKey> = Vec::with_capacity(batch.len());
        for k in batch.iter_mut() {
            if table.may_contain_hash(k.hash) {
                if let Some(entry) = rc.get(row(k), k.user_key) {
                    k.ctx.searched_file(f.number());
                    k.ctx.cover(table.max_covering_tombstone_seq(k.user_key, seq));
                    k.ctx.stats.row_cache_hit += 1;
                    // Counted as Table::multi_get counts a key its filter
                    // lets through, without probing the filter again.
                    table.count_true_positive(&mut k.ctx, true);
                    k.ctx.replay(entry.versions())?;
                    continue;
                }
                k.ctx.stats.row_cache_miss += 1;
                if k.ctx.fill_cache && rc.admit(row(k)) {
                    k.ctx.start_recording();
                }
            }
            rest.push(&mut **k);
        }
        table.multi_get(&mut rest, seq)?;
        for k in rest {
            if let Some(versions) = k.ctx.take_recording() {
                rc.insert(row(k), k.user_key, &versions);
            }
        }
        Ok(())
    }
}

fn add_stats(total: &mut GetStats, s: &GetStats) {
    total.cache_hit += s.cache_hit;
    total.cache_miss += s.cache_miss;
    total.cache_add += s.cache_add;
    total.row_cache_hit += s.row_cache_hit;
    total.row_cache_miss += s.row_cache_miss;
    total.bloom_useful += s.bloom_useful;
    total.bloom_positive += s.bloom_positive;
    total.bloom_true_positive += s.bloom_true_positive;
}
