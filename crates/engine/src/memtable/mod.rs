//! The memtable: a skip list of internal keys laid out in an arena
//! (`skiplist.rs`). One writer inserts (under the DB's write lock, and the
//! list's own writer mutex) while any number of readers look up and iterate
//! without locks. A whole-key bloom filter (`bloom.rs`) lets point lookups
//! of keys it does not hold skip the skip list.
//!
//! Nothing is ever removed from a memtable: its blocks are freed when the
//! memtable is dropped, after every reader let go of it (readers hold an
//! `Arc`), except blocks holding a value a reader took as `Bytes`.

mod bloom;
mod skiplist;

use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex, RwLock};

use bytes::Bytes;

use self::bloom::WholeKeyBloom;
use self::skiplist::{Node, SkipList};
use crate::batch::{BatchOp, WriteBatch};
use crate::format::key::{self, SequenceNumber, ValueType};
use crate::iter::InternalIterator;
use crate::range_del::{FragmentedTombstones, Tombstone};
use crate::sst::filter::key_hash;

/// Bookkeeping charged per range tombstone on top of its two keys.
const RANGE_DEL_OVERHEAD: usize = 64;

pub struct MemTable {
    map: SkipList,
    /// Bytes of range tombstones and the bloom filter (the skip list
    /// counts its own).
    other_bytes: AtomicUsize,
    /// Number of the oldest WAL holding this memtable's updates.
    wal_number: u64,
    /// Range tombstones, and their fragmented form cached for reads
    /// (rebuilt when a tombstone was added since).
    range_dels: Mutex<Vec<Tombstone>>,
    range_del_count: AtomicUsize,
    fragmented: RwLock<Option<(usize, Arc<FragmentedTombstones>)>>,
    /// Every user key inserted (point entries), for lookups to skip the map.
    bloom: Option<WholeKeyBloom>,
}

impl MemTable {
    /// A memtable without a bloom filter (recovery, repair, placeholders).
    pub fn new(wal_number: u64) -> Self {
        Self::with_bloom(wal_number, 0)
    }

    /// A memtable with a whole-key bloom filter of `bloom_bytes` (none if 0).
    pub fn with_bloom(wal_number: u64, bloom_bytes: usize) -> Self {
        let bloom = (bloom_bytes > 0).then(|| WholeKeyBloom::new(bloom_bytes));
        MemTable {
            map: SkipList::new(),
            other_bytes: AtomicUsize::new(bloom.as_ref().map_or(0, WholeKeyBloom::size)),
            wal_number,
            range_dels: Mutex::new(Vec::new()),
            range_del_count: AtomicUsize::new(0),
            fragmented: RwLock::new(None),
            bloom,
        }
    }

    pub fn wal_number(&self) -> u64 {
        self.wal_number
    }

    /// Inserts one version. An equal internal key (the same sequence
    /// number) already present is the same update and is left as it is.
    pub fn add(&self, seq: SequenceNumber, ty: ValueType, user_key: &[u8], value: &[u8]) {
        let mut w = self.map.writer();
        self.add_locked(&mut w, seq, ty, user_key, value);
    }

    fn add_locked(&self, w: &mut skiplist::Writer, seq: SequenceNumber, ty: ValueType, user_key: &[u8], value: &[u8]) {
        if ty == ValueType::RangeDelete {
            let mut dels = self.range_dels.lock().unwrap_or_else(|p| p.into_inner());
            dels.push(Tombstone { start: user_key.to_vec(), end: value.to_vec(), seq });
            self.other_bytes.fetch_add(user_key.len() + value.len() + RANGE_DEL_OVERHEAD, AtomicOrdering::Relaxed);
            self.range_del_count.store(dels.len(), AtomicOrdering::Release);
            return;
        }
        if let Some(b) = &self.bloom {
            b.add(key_hash(user_key));
        }
        self.map.insert(w, user_key, seq, ty, value);
    }

    /// Inserts every update of `batch`, numbered from its sequence number
    /// on; returns the last number used. An empty range is recorded (it is
    /// in the WAL) but covers nothing. REQUIRES: a batch that is not empty.
    pub fn add_batch(&self, batch: &WriteBatch) -> SequenceNumber {
        let mut w = self.map.writer();
        let mut seq = batch.sequence();
        for op in batch.iter().flatten() {
            match op {
                BatchOp::Put { key, value } => self.add_locked(&mut w, seq, ValueType::Put, key, value),
                BatchOp::Delete { key } => self.add_locked(&mut w, seq, ValueType::Delete, key, b""),
                BatchOp::Merge { key, value } => self.add_locked(&mut w, seq, ValueType::Merge, key, value),
                BatchOp::RangeDelete { start, end } => self.add_locked(&mut w, seq, ValueType::RangeDelete, start, end),
            }
            seq += 1;
        }
        seq - 1
    }

    /// The memtable's range tombstones as they were added (not fragmented).
    pub fn range_tombstones(&self) -> Vec<Tombstone> {
        self.range_dels.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The memtable's range tombstones, fragmented; `None` if it has none.
    pub fn tombstones(&self) -> Option<Arc<FragmentedTombstones>> {
        let count = self.range_del_count.load(AtomicOrdering::Acquire);
        if count == 0 {
            return None;
        }
        if let Some((n, f)) = self.fragmented.read().unwrap_or_else(|p| p.into_inner()).as_ref() {
            if *n == count {
                return Some(f.clone());
            }
        }
        let mut cached = self.fragmented.write().unwrap_or_else(|p| p.into_inner());
        let dels = self.range_dels.lock().unwrap_or_else(|p| p.into_inner());
        let f = Arc::new(FragmentedTombstones::new(&dels));
        *cached = Some((dels.len(), f.clone()));
        Some(f)
    }

    /// The highest sequence number <= `read_seq` of a tombstone here
    /// covering `user_key` (0 if none).
    pub fn max_covering_tombstone_seq(&self, user_key: &[u8], read_seq: SequenceNumber) -> SequenceNumber {
        self.tombstones().map_or(0, |t| t.max_covering_seq(user_key, read_seq))
    }

    /// Feeds the versions of the user key of `lookup` (a seek key: user key
    /// and the sequence to read at) visible at its sequence, newest first, to
    /// `f` until it returns false. `hash` is the user key's `key_hash`.
    pub fn for_each_version(
        &self,
        lookup: &[u8],
        hash: u64,
        mut f: impl FnMut(ValueType, SequenceNumber, &Bytes) -> bool,
    ) {
        if self.bloom.as_ref().is_some_and(|b| !b.may_contain(hash)) {
            return;
        }
        let user_key = key::user_key(lookup);
        let mut node = self.map.seek(lookup);
        while let Some(n) = node {
            match key::parse(n.key()) {
                Some(p) if p.user_key == user_key => {
                    if !f(p.ty, p.seq, &n.value_bytes()) {
                        return;
                    }
                }
                _ => return,
            }
            node = self.map.next(n);
        }
    }

    /// Approximate bytes held (keys, values, per-entry overhead and the
    /// bloom filter).
    pub fn approximate_memory_usage(&self) -> usize {
        self.map.bytes() + self.other_bytes.load(AtomicOrdering::Relaxed)
    }

    /// Approximate bytes of the entries (without the bloom filter).
    pub fn data_bytes(&self) -> usize {
        self.approximate_memory_usage() - self.bloom.as_ref().map_or(0, WholeKeyBloom::size)
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty() && self.range_del_count.load(AtomicOrdering::Acquire) == 0
    }

    pub fn iter(self: &Arc<Self>) -> MemTableIter {
        MemTableIter { cur: std::ptr::null(), mem: self.clone() }
    }
}

/// An iterator over a memtable, holding it alive. A step follows the skip
/// list's bottom link from the current entry (O(1) forward; backward is a
/// search, the skip list has no back links). Entries inserted after the
/// iterator was made are seen too; the DB iterator filters them by sequence.
pub struct MemTableIter {
    /// The current node, in `mem`'s skip list (which never frees a node
    /// before it is dropped, and `mem` keeps it).
    cur: *const Node,
    mem: Arc<MemTable>,
}

// SAFETY: `cur` points into the skip list `mem` keeps alive; its bytes
// never change once published, and the list is Send + Sync.
unsafe impl Send for MemTableIter {}

impl MemTableIter {
    fn node(&self) -> Option<&Node> {
        // SAFETY: see the field's doc.
        unsafe { self.cur.as_ref() }
    }
}

fn ptr_of(n: Option<&Node>) -> *const Node {
    n.map_or(std::ptr::null(), |n| n as *const Node)
}

impl InternalIterator for MemTableIter {
    fn valid(&self) -> bool {
        !self.cur.is_null()
    }
    fn seek_to_first(&mut self) {
        self.cur = ptr_of(self.mem.map.first());
    }
    fn seek_to_last(&mut self) {
        self.cur = ptr_of(self.mem.map.last());
    }
    fn seek(&mut self, target: &[u8]) {
        self.cur = ptr_of(self.mem.map.seek(target));
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.cur = ptr_of(self.mem.map.seek_for_prev(target));
    }
    fn next(&mut self) {
        if let Some(n) = self.node() {
            self.cur = ptr_of(self.mem.map.next(n));
        }
    }
    fn prev(&mut self) {
        if let Some(n) = self.node() {
            self.cur = ptr_of(self.mem.map.before(n.key()));
        }
    }
    fn key(&self) -> &[u8] {
        self.node().map_or(&[], Node::key)
    }
    fn value(&self) -> &[u8] {
        self.node().map_or(&[], Node::value)
    }
    fn status(&self) -> crate::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn newest(m: &MemTable, k: &[u8], seq: u64) -> Option<(ValueType, Bytes)> {
        let mut out = None;
        m.for_each_version(&key::seek_key(k, seq), key_hash(k), |ty, _, v| {
            out = Some((ty, v.clone()));
            false
        });
        out
    }

    #[test]
    fn versions_come_newest_first_up_to_the_snapshot() {
        let m = MemTable::new(1);
        m.add(1, ValueType::Put, b"k", b"v1");
        m.add(2, ValueType::Merge, b"k", b"m2");
        m.add(3, ValueType::Delete, b"k", b"");
        m.add(4, ValueType::Put, b"k2", b"x");
        assert_eq!(newest(&m, b"k", 0), None);
        assert_eq!(newest(&m, b"k", 1), Some((ValueType::Put, Bytes::from_static(b"v1"))));
        assert_eq!(newest(&m, b"k", 3).map(|e| e.0), Some(ValueType::Delete));
        assert_eq!(newest(&m, b"j", 100), None);
        assert_eq!(newest(&m, b"k2", 3), None);
        let mut all = vec![];
        m.for_each_version(&key::seek_key(b"k", 2), key_hash(b"k"), |ty, seq, _| {
            all.push((ty, seq));
            true
        });
        assert_eq!(all, vec![(ValueType::Merge, 2), (ValueType::Put, 1)]);
        assert!(m.approximate_memory_usage() > 0);
    }

    #[test]
    fn range_tombstones_are_fragmented_and_cached() {
        let m = MemTable::new(1);
        assert_eq!(m.max_covering_tombstone_seq(b"c", 100), 0);
        m.add(5, ValueType::RangeDelete, b"b", b"d");
        assert_eq!(m.max_covering_tombstone_seq(b"c", 100), 5);
        assert_eq!(m.max_covering_tombstone_seq(b"c", 4), 0);
        assert_eq!(m.max_covering_tombstone_seq(b"d", 100), 0);
        let first = m.tombstones().unwrap();
        assert!(Arc::ptr_eq(&first, &m.tombstones().unwrap()), "cached while unchanged");
        m.add(9, ValueType::RangeDelete, b"a", b"z");
        assert_eq!(m.max_covering_tombstone_seq(b"c", 100), 9);
        assert!(!m.is_empty());
    }

    #[test]
    fn iterator_walks_both_ways() {
        let m = Arc::new(MemTable::new(1));
        for (i, k) in [b"b", b"a", b"c"].iter().enumerate() {
            m.add(i as u64 + 1, ValueType::Put, *k, *k);
        }
        let mut it = m.iter();
        it.seek_to_first();
        let mut fwd = Vec::new();
        while it.valid() {
            fwd.push(key::user_key(it.key()).to_vec());
            it.next();
        }
        assert_eq!(fwd, vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
        it.seek_to_last();
        assert_eq!(key::user_key(it.key()), b"c");
        it.prev();
        assert_eq!(key::user_key(it.key()), b"b");
        it.seek_for_prev(&key::seek_key(b"bb", 0));
        assert_eq!(key::user_key(it.key()), b"b");
        it.seek(&key::seek_key(b"bb", 100));
        assert_eq!(key::user_key(it.key()), b"c");
    }
}
