//! Questions about a range of keys as a whole: how many keys it holds
//! (exact, a scan inside the engine) and how many bytes of table files it
//! takes (approximate, from the index blocks alone).

use super::iter::{malformed, merge_forward};
use super::{Db, DbIterator, ReadOptions};
use crate::error::Result;
use crate::format::key::{self, ValueType, MAX_SEQUENCE};
use crate::iter::InternalIterator;
use crate::read::{unsupported_entry, GetContext};

impl Db {
    /// The number of keys visible in `opts`' bounds as of `opts.snapshot`
    /// (or now): what an iterator with the same options would visit,
    /// counted inside the engine (no key or value leaves it).
    ///
    /// One pass over the merged sources, as an iterator's, that looks at
    /// each key's newest visible version only: a put counts, a deletion or
    /// a version under a newer range tombstone does not, and a merge
    /// operand is resolved as an iterator would (so it fails where an
    /// iterator would); the older versions of the key are stepped over
    /// unread. Values are never touched.
    pub fn count(&self, opts: &ReadOptions) -> Result<u64> {
        self.check_open()?;
        let inner = &*self.inner;
        let (sv, seq) = self.read_view(opts.snapshot);
        let (mut it, tombstones) = DbIterator::build(&sv, seq, &inner.tables, opts.fill_cache(), None);
        let upper = opts.upper_bound.as_deref();
        match opts.lower_bound.as_deref() {
            Some(l) => it.seek(&key::seek_key(l, MAX_SEQUENCE)),
            None => it.seek_to_first(),
        }
        let mut n = 0u64;
        // The user key whose newest visible version was looked at.
        let mut last: Option<Vec<u8>> = None;
        while it.valid() {
            let Some(p) = key::parse(it.key()) else { return Err(malformed(&it)) };
            if upper.is_some_and(|u| p.user_key >= u) {
                break;
            }
            if p.seq > seq || last.as_deref() == Some(p.user_key) {
                it.next();
                continue;
            }
            let l = last.get_or_insert_with(Vec::new);
            l.clear();
            l.extend_from_slice(p.user_key);
            let cover = if tombstones.is_empty() { 0 } else { tombstones.max_covering_seq(p.user_key, seq) };
            let ty = if p.seq < cover { ValueType::Delete } else { p.ty };
            match ty {
                ValueType::Put => n += 1,
                ValueType::Delete => {}
                ValueType::Merge => {
                    // Resolved from this key's visible versions, as an
                    // iterator resolves it.
                    let key = l.clone();
                    let mut ctx = GetContext::new(&key, inner.options.merge_operator.as_deref(), inner.options.timer());
                    ctx.cover(cover);
                    n += u64::from(merge_forward(&mut it, &key, |s| s <= seq, ctx, &inner.stats)?.is_some());
                    continue;
                }
                other => return Err(unsupported_entry(other)),
            }
            it.next();
        }
        it.status()?;
        Ok(n)
    }

    /// The bytes of table files that hold keys from `start` (included) to
    /// `end` (excluded); `None` is unbounded. From file metadata and index
    /// blocks, no data block read: a file wholly inside the range counts its
    /// size, a file at an edge the data blocks that may hold keys of the
    /// range (whole blocks: a range with data is never 0, a range smaller
    /// than a block counts the block). Writes still in memtables are not
    /// counted (RocksDB's
    /// `GetApproximateSizes` with its default `include_memtables: false`).
    pub fn approximate_size(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<u64> {
        self.check_open()?;
        if let (Some(s), Some(e)) = (start, end) {
            if s >= e {
                return Ok(0);
            }
        }
        let (sv, _) = self.read_view(None);
        let mut total = 0u64;
        for files in &sv.version.levels {
            for f in files.iter() {
                let (lo, hi) = (f.smallest_user_key(), f.largest_user_key());
                if start.is_some_and(|s| hi < s) || end.is_some_and(|e| lo >= e) {
                    continue;
                }
                let whole_start = start.is_none_or(|s| s <= lo);
                let whole_end = end.is_none_or(|e| hi < e);
                if whole_start && whole_end {
                    total += f.meta.file_size;
                    continue;
                }
                let table = f.table(&self.inner.tables)?;
                let from = if whole_start { 0 } else { table.approximate_offset_of(start.unwrap_or_default(), false) };
                let to = if whole_end {
                    f.meta.file_size
                } else {
                    table.approximate_offset_of(end.unwrap_or_default(), true)
                };
                total += to.saturating_sub(from);
            }
        }
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::db::{Db, Options, ReadOptions, WriteOptions};
    use crate::fs::MemFs;

    fn db() -> Db {
        let o = Options { write_buffer_size: 64 * 1024, ..Options::default() };
        Db::open(Arc::new(MemFs::new()), "db", o).unwrap()
    }

    fn key(i: u32) -> Vec<u8> {
        format!("key{i:06}").into_bytes()
    }

    fn bounds(lo: Option<&[u8]>, hi: Option<&[u8]>) -> ReadOptions<'static> {
        ReadOptions {
            lower_bound: lo.map(<[u8]>::to_vec),
            upper_bound: hi.map(<[u8]>::to_vec),
            ..ReadOptions::default()
        }
    }

    #[test]
    fn count_sees_what_an_iterator_sees() {
        let db = db();
        let w = WriteOptions::default();
        for i in 0..3000 {
            db.put(&w, &key(i), &[7u8; 50]).unwrap();
        }
        db.flush().unwrap();
        for i in (0..3000).step_by(3) {
            db.delete(&w, &key(i)).unwrap();
        }
        db.delete_range(&w, &key(1000), &key(1100)).unwrap();
        let snap = db.snapshot();
        db.put(&w, b"", b"the empty key").unwrap();
        assert_eq!(db.count(&ReadOptions::default()).unwrap(), 2000 - 67 + 1);
        let at = ReadOptions { snapshot: Some(&snap), ..ReadOptions::default() };
        assert_eq!(db.count(&at).unwrap(), 2000 - 67);
        assert_eq!(db.count(&bounds(Some(&key(0)), Some(&key(30)))).unwrap(), 20);
        assert_eq!(db.count(&bounds(None, Some(b"key"))).unwrap(), 1, "only the empty key");
        assert_eq!(db.count(&bounds(Some(b"z"), None)).unwrap(), 0);
    }

    #[test]
    fn approximate_size_follows_the_data_and_reads_no_data_block() {
        let db = db();
        let w = WriteOptions::default();
        for i in 0..20_000 {
            db.put(&w, &key(i), &[i as u8; 100]).unwrap();
        }
        db.flush().unwrap();
        let all = db.approximate_size(None, None).unwrap();
        let tables: u64 = db.properties().table_bytes;
        assert_eq!(all, tables, "every file wholly inside");
        let half = db.approximate_size(Some(&key(0)), Some(&key(10_000))).unwrap();
        let ratio = half as f64 / all as f64;
        assert!((0.45..0.55).contains(&ratio), "half the keys, {ratio} of the bytes");
        let small = db.approximate_size(Some(&key(5000)), Some(&key(5100))).unwrap();
        assert!(small < all / 50, "a hundred keys: {small} of {all}");
        assert_eq!(db.approximate_size(Some(&key(10)), Some(&key(10))).unwrap(), 0);
        let one = db.approximate_size(Some(&key(10)), Some(&key(11))).unwrap();
        assert!(one > 0 && one <= 2 * 4096 + 64, "one key counts its block: {one}");
        assert_eq!(db.approximate_size(Some(b"zzz"), None).unwrap(), 0);
        let misses = db.statistics().ticker("rocksdb.block.cache.miss");
        db.approximate_size(Some(&key(123)), Some(&key(17_000))).unwrap();
        assert_eq!(db.statistics().ticker("rocksdb.block.cache.miss"), misses, "no block read");
    }
}
