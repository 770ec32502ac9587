//! The memtable: a concurrent skip list (crossbeam) of internal keys. One
//! writer inserts (under the DB's write lock) while any number of readers
//! look up and iterate without locks.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::Arc;

use bytes::Bytes;
use crossbeam_skiplist::SkipMap;

use crate::format::key::{self, SequenceNumber, ValueType};
use crate::iter::InternalIterator;

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

/// What the memtable knows about a key at a snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemLookup {
    /// The newest visible version is a value (shared, not copied).
    Found(Bytes),
    /// The newest visible version is a deletion.
    Deleted,
    /// No visible version here; look further down.
    Absent,
}

pub struct MemTable {
    map: SkipMap<MemKey, Bytes>,
    bytes: AtomicUsize,
    /// Number of the oldest WAL holding this memtable's updates.
    wal_number: u64,
}

impl MemTable {
    pub fn new(wal_number: u64) -> Self {
        MemTable {
            map: SkipMap::new(),
            bytes: AtomicUsize::new(0),
            wal_number,
        }
    }

    pub fn wal_number(&self) -> u64 {
        self.wal_number
    }

    /// Inserts one version. REQUIRES: one writer at a time, and (seq, key)
    /// never inserted twice.
    pub fn add(&self, seq: SequenceNumber, ty: ValueType, user_key: &[u8], value: &[u8]) {
        let ikey = key::internal_key(user_key, seq, ty);
        self.bytes.fetch_add(
            ikey.len() + value.len() + ENTRY_OVERHEAD,
            AtomicOrdering::Relaxed,
        );
        self.map
            .insert(MemKey(Bytes::from(ikey)), Bytes::copy_from_slice(value));
    }

    /// The newest version of `user_key` with sequence <= `seq`.
    pub fn get(&self, user_key: &[u8], seq: SequenceNumber) -> MemLookup {
        let target = key::seek_key(user_key, seq);
        let Some(entry) = self.map.lower_bound(Bound::Included(KeyRef::new(&target))) else {
            return MemLookup::Absent;
        };
        match key::parse(&entry.key().0) {
            Some(p) if p.user_key == user_key => match p.ty {
                ValueType::Put => MemLookup::Found(entry.value().clone()),
                ValueType::Delete => MemLookup::Deleted,
                // Other types are not written by this version of the engine.
                _ => MemLookup::Absent,
            },
            _ => MemLookup::Absent,
        }
    }

    /// Approximate bytes held (keys, values and per-entry overhead).
    pub fn approximate_memory_usage(&self) -> usize {
        self.bytes.load(AtomicOrdering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn iter(self: &Arc<Self>) -> MemTableIter {
        MemTableIter {
            mem: self.clone(),
            cur: None,
        }
    }
}

/// An iterator over a memtable. It holds the memtable alive; each step
/// re-finds its neighbour in the skip list, so it sees entries inserted
/// after it was created (the DB iterator filters them by sequence).
pub struct MemTableIter {
    mem: Arc<MemTable>,
    cur: Option<(Bytes, Bytes)>,
}

fn owned(e: Option<crossbeam_skiplist::map::Entry<'_, MemKey, Bytes>>) -> Option<(Bytes, Bytes)> {
    e.map(|e| (e.key().0.clone(), e.value().clone()))
}

impl InternalIterator for MemTableIter {
    fn valid(&self) -> bool {
        self.cur.is_some()
    }
    fn seek_to_first(&mut self) {
        self.cur = owned(self.mem.map.front());
    }
    fn seek_to_last(&mut self) {
        self.cur = owned(self.mem.map.back());
    }
    fn seek(&mut self, target: &[u8]) {
        self.cur = owned(
            self.mem
                .map
                .lower_bound(Bound::Included(KeyRef::new(target))),
        );
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.cur = owned(
            self.mem
                .map
                .upper_bound(Bound::Included(KeyRef::new(target))),
        );
    }
    fn next(&mut self) {
        if let Some((k, _)) = self.cur.take() {
            self.cur = owned(self.mem.map.lower_bound(Bound::Excluded(KeyRef::new(&k))));
        }
    }
    fn prev(&mut self) {
        if let Some((k, _)) = self.cur.take() {
            self.cur = owned(self.mem.map.upper_bound(Bound::Excluded(KeyRef::new(&k))));
        }
    }
    fn key(&self) -> &[u8] {
        self.cur.as_ref().map(|(k, _)| &k[..]).unwrap_or(&[])
    }
    fn value(&self) -> &[u8] {
        self.cur.as_ref().map(|(_, v)| &v[..]).unwrap_or(&[])
    }
    fn status(&self) -> crate::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_sees_newest_visible_version() {
        let m = MemTable::new(1);
        m.add(1, ValueType::Put, b"k", b"v1");
        m.add(2, ValueType::Put, b"k", b"v2");
        m.add(3, ValueType::Delete, b"k", b"");
        m.add(4, ValueType::Put, b"k2", b"x");
        assert_eq!(m.get(b"k", 0), MemLookup::Absent);
        assert_eq!(m.get(b"k", 1), MemLookup::Found(Bytes::from_static(b"v1")));
        assert_eq!(m.get(b"k", 2), MemLookup::Found(Bytes::from_static(b"v2")));
        assert_eq!(m.get(b"k", 3), MemLookup::Deleted);
        assert_eq!(m.get(b"k", 100), MemLookup::Deleted);
        assert_eq!(m.get(b"j", 100), MemLookup::Absent);
        assert_eq!(m.get(b"k2", 3), MemLookup::Absent);
        assert!(m.approximate_memory_usage() > 0);
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
