//! The memtable: a concurrent skip list (crossbeam) of internal keys. One
//! writer inserts (under the DB's write lock) while any number of readers
//! look up and iterate without locks. A whole-key bloom filter (`bloom.rs`)
//! lets point lookups of keys it does not hold skip the skip list.
//!
//! Nothing is ever removed from a memtable's skip list: its nodes are freed
//! all at once when the memtable is dropped, after every reader let go of
//! it (readers hold an `Arc`). So readers and the writer use crossbeam's
//! *unprotected* epoch guard, which pins nothing: pinning and unpinning an
//! epoch on every step and counting references on every entry (what
//! crossbeam's `SkipMap` does) cost more than the step itself, and they
//! protect only against removals, which never happen here.

mod bloom;

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex, RwLock};

use bytes::Bytes;
use crossbeam_epoch::Guard;
use crossbeam_skiplist::base::SkipList;

use self::bloom::WholeKeyBloom;
use crate::batch::{BatchOp, WriteBatch};
use crate::format::key::{self, SequenceNumber, ValueType};
use crate::iter::InternalIterator;
use crate::range_del::{FragmentedTombstones, Tombstone};
use crate::sst::filter::key_hash;

/// An encoded internal key ordered as internal keys are.
#[derive(Clone, Debug)]
struct MemKey(Bytes);

/// The borrowed form of [`MemKey`], so lookups need no allocation.
#[repr(transparent)]
struct KeyRef([u8]);

impl KeyRef {
    fn new(b: &[u8]) -> &KeyRef {
        // SAFETY: KeyRef is repr(transparent) over [u8], so the two
        // references have the same layout and metadata.
        unsafe { &*(b as *const [u8] as *const KeyRef) }
    }
}

impl PartialEq for KeyRef {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for KeyRef {}
impl PartialOrd for KeyRef {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for KeyRef {
    fn cmp(&self, other: &Self) -> Ordering {
        key::compare(&self.0, &other.0)
    }
}
impl Borrow<KeyRef> for MemKey {
    fn borrow(&self) -> &KeyRef {
        KeyRef::new(&self.0)
    }
}
impl PartialEq for MemKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for MemKey {}
impl PartialOrd for MemKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for MemKey {
    fn cmp(&self, other: &Self) -> Ordering {
        key::compare(&self.0, &other.0)
    }
}

/// Per-entry bookkeeping charged on top of key and value bytes.
const ENTRY_OVERHEAD: usize = 64;

pub struct MemTable {
    map: SkipList<MemKey, Bytes>,
    bytes: AtomicUsize,
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
            map: SkipList::new(crossbeam_epoch::default_collector().clone()),
            bytes: AtomicUsize::new(bloom.as_ref().map_or(0, WholeKeyBloom::size)),
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

    /// Inserts one version. REQUIRES: one writer at a time, and (seq, key)
    /// never inserted twice.
    pub fn add(&self, seq: SequenceNumber, ty: ValueType, user_key: &[u8], value: &[u8]) {
        if ty == ValueType::RangeDelete {
            let mut dels = self.range_dels.lock().unwrap_or_else(|p| p.into_inner());
            dels.push(Tombstone { start: user_key.to_vec(), end: value.to_vec(), seq });
            self.bytes.fetch_add(user_key.len() + value.len() + ENTRY_OVERHEAD, AtomicOrdering::Relaxed);
            self.range_del_count.store(dels.len(), AtomicOrdering::Release);
            return;
        }
        if let Some(b) = &self.bloom {
            b.add(key_hash(user_key));
        }
        // One allocation holds the internal key and the value.
        let mut buf = Vec::with_capacity(user_key.len() + key::TAG_LEN + value.len());
        key::append_internal_key(&mut buf, user_key, seq, ty as u8);
        let klen = buf.len();
        buf.extend_from_slice(value);
        self.bytes.fetch_add(buf.len() + ENTRY_OVERHEAD, AtomicOrdering::Relaxed);
        let buf = Bytes::from(buf);
        // get_or_insert, never insert: insert removes an equal key it finds,
        // and nothing may ever be removed (see the module doc). An equal
        // internal key (the same sequence number) is the same update.
        let guard = unprotected();
        self.map.get_or_insert(MemKey(buf.slice(..klen)), buf.slice(klen..), guard).release(guard);
    }

    /// Inserts every update of `batch`, numbered from its sequence number
    /// on; returns the last number used. An empty range is recorded (it is
    /// in the WAL) but covers nothing. REQUIRES: as [`MemTable::add`], and a
    /// batch that is not empty.
    pub fn add_batch(&self, batch: &WriteBatch) -> SequenceNumber {
        let mut seq = batch.sequence();
        for op in batch.iter().flatten() {
            match op {
                BatchOp::Put { key, value } => self.add(seq, ValueType::Put, key, value),
                BatchOp::Delete { key } => self.add(seq, ValueType::Delete, key, b""),
                BatchOp::Merge { key, value } => self.add(seq, ValueType::Merge, key, value),
                BatchOp::RangeDelete { start, end } => self.add(seq, ValueType::RangeDelete, start, end),
            }
            seq += 1;
        }
        seq - 1
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
        let mut entry = self.map.lower_bound(Bound::Included(KeyRef::new(lookup)), unprotected());
        while let Some(e) = entry {
            match key::parse(&e.key().0) {
                Some(p) if p.user_key == user_key => {
                    if !f(p.ty, p.seq, e.value()) {
                        return;
                    }
                }
                _ => return,
            }
            entry = e.next();
        }
    }

    /// Approximate bytes held (keys, values, per-entry overhead and the
    /// bloom filter).
    pub fn approximate_memory_usage(&self) -> usize {
        self.bytes.load(AtomicOrdering::Relaxed)
    }

    /// Approximate bytes of the entries (without the bloom filter).
    pub fn data_bytes(&self) -> usize {
        self.approximate_memory_usage() - self.bloom.as_ref().map_or(0, WholeKeyBloom::size)
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty() && self.range_del_count.load(AtomicOrdering::Acquire) == 0
    }

    pub fn iter(self: &Arc<Self>) -> MemTableIter {
        MemTableIter { cur: None, mem: self.clone() }
    }
}

/// The guard every access to a memtable's skip list uses: crossbeam's
/// unprotected guard, which pins no epoch (see the module doc for why that
/// is sound: no node of a memtable is freed before the memtable).
fn unprotected() -> &'static Guard {
    // SAFETY: nodes are never removed from a memtable's skip list (`add`
    // only inserts, with get_or_insert), so no node is retired while a
    // reader may see it; the list frees its nodes in its own drop.
    unsafe { crossbeam_epoch::unprotected() }
}

/// An iterator over a memtable, holding it alive. A step follows the skip
/// list's bottom link from the current entry (O(1) forward; backward is a
/// search, the skip list has no back links). Entries inserted after the
/// iterator was made are seen too; the DB iterator filters them by sequence.
pub struct MemTableIter {
    /// The current entry. It borrows the skip list inside `mem` for as long
    /// as the iterator lives (see `extend`): declared before `mem`, so it is
    /// dropped first.
    cur: Option<Entry<'static, MemKey, Bytes>>,
    mem: Arc<MemTable>,
}

// SAFETY: `cur` holds references into the skip list (Send + Sync) and to
// the static unprotected guard, which has no thread-local state.
unsafe impl Send for MemTableIter {}

type Entry<'a, K, V> = crossbeam_skiplist::base::Entry<'a, 'a, K, V>;

/// Lets an entry of `mem`'s skip list live as long as an iterator that
/// holds `mem`.
///
/// SAFETY: the caller keeps the `Arc<MemTable>` the entry came from for as
/// long as the entry, and drops the entry first. The skip list is inside the
/// `MemTable` behind that `Arc`, so it neither moves nor goes away while the
/// entry lives; and entries are never removed from a memtable. The two types
/// differ only in a lifetime.
unsafe fn extend(e: Option<Entry<'_, MemKey, Bytes>>) -> Option<Entry<'static, MemKey, Bytes>> {
    // SAFETY: see above.
    unsafe { std::mem::transmute::<Option<Entry<'_, MemKey, Bytes>>, Option<Entry<'static, MemKey, Bytes>>>(e) }
}

impl MemTableIter {
    fn set(&mut self, e: Option<Entry<'_, MemKey, Bytes>>) {
        // SAFETY: `e` came from `self.mem`'s map, which `self` holds.
        self.cur = unsafe { extend(e) };
    }
}

impl InternalIterator for MemTableIter {
    fn valid(&self) -> bool {
        self.cur.is_some()
    }
    fn seek_to_first(&mut self) {
        let mem = self.mem.clone();
        self.set(mem.map.front(unprotected()));
    }
    fn seek_to_last(&mut self) {
        let mem = self.mem.clone();
        self.set(mem.map.back(unprotected()));
    }
    fn seek(&mut self, target: &[u8]) {
        let mem = self.mem.clone();
        self.set(mem.map.lower_bound(Bound::Included(KeyRef::new(target)), unprotected()));
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        let mem = self.mem.clone();
        self.set(mem.map.upper_bound(Bound::Included(KeyRef::new(target)), unprotected()));
    }
    fn next(&mut self) {
        if let Some(e) = self.cur.as_mut() {
            if !e.move_next() {
                self.cur = None;
            }
        }
    }
    fn prev(&mut self) {
        if let Some(e) = self.cur.as_mut() {
            if !e.move_prev() {
                self.cur = None;
            }
        }
    }
    fn key(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[], |e| &e.key().0[..])
    }
    fn value(&self) -> &[u8] {
        self.cur.as_ref().map_or(&[], |e| &e.value()[..])
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
