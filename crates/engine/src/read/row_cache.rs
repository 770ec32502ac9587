//! The row cache (RocksDB's, D39849, with pinned results, PR 2492): what a
//! table file holds for one user key as seen at one visibility, so that a
//! lookup that finds it skips the file's index, block cache and block search.
//!
//! An entry is the file's versions of the key, newest first, with their
//! types and sequence numbers as stored (a Put or Delete and the merge
//! operands above it), not a resolved value. A lookup replays them into its
//! `GetContext`, which applies what it carries from newer sources — range
//! tombstones, a newer version — exactly as it would to the file's own
//! entries: a `deleteRange` written after an entry was cached hides it at
//! once, because the tombstone is applied outside the entry (RocksDB's row
//! cache applied it inside, issue 4122, and RocksDB now refuses
//! `DeleteRange` with a row cache).
//!
//! Keys: the file number (numbers are never reused, and a file's entries
//! are erased when it is deleted), and a number mixing the key's filter
//! hash with its visibility: 0 for a lookup at or after the file's largest
//! sequence number (it sees every version in the file, as every later
//! lookup does), else the lookup's own sequence number (a snapshot older
//! than some of the file's versions). The entry keeps the user key, and a
//! lookup takes it only when it matches. Values are copies (not slices of
//! data blocks, which an entry would otherwise keep alive); a result that
//! comes from an entry holds the entry's value bytes (`pinned_bytes`).
//!
//! Admission: an entry is made on a key's second miss within a short
//! memory of recent misses (the doorkeeper), so that uniform reads over
//! more keys than the cache holds cost a probe, not an entry each.

use std::sync::atomic::{AtomicU32, Ordering};

use bytes::Bytes;

use crate::cache::{Cached, ClockCache};
use crate::format::key::{SequenceNumber, ValueType};

/// Bookkeeping charged per entry on top of its bytes.
const ENTRY_OVERHEAD: usize = 64;

/// What one table file holds for one user key, newest first.
pub struct RowEntry {
    user_key: Box<[u8]>,
    versions: Box<[(ValueType, SequenceNumber, Bytes)]>,
    size: usize,
}

impl RowEntry {
    pub fn versions(&self) -> &[(ValueType, SequenceNumber, Bytes)] {
        &self.versions
    }
}

impl Cached for std::sync::Arc<RowEntry> {
    fn size(&self) -> usize {
        self.size
    }
}

/// The row cache of a database.
pub struct RowCache {
    cache: ClockCache<std::sync::Arc<RowEntry>>,
    /// The doorkeeper: the last key missed in each of its slots. An entry
    /// is made only for a key missed twice while its slot remembered it, so
    /// reads spread over many keys (each read once in a while) do not pay
    /// for entries nobody reads again (TinyLFU's doorkeeper, direct-mapped).
    seen: Box<[AtomicU32]>,
}

/// Where an entry of the row cache is: its file and mixed key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowKey {
    file: u64,
    mixed: u64,
}

impl RowKey {
    /// The key of `user_key` (whose filter hash is `hash`) in table `file`,
    /// for a lookup at `seq` in a file whose newest version is `largest_seq`.
    pub fn new(file: u64, hash: u64, seq: SequenceNumber, largest_seq: SequenceNumber) -> Self {
        // 0 for "sees every version"; a snapshot older than some (even
        // one at sequence 0, on a database that was empty) is its own.
        let visibility = if seq >= largest_seq { 0 } else { seq + 1 };
        RowKey { file, mixed: hash ^ visibility.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15) }
    }
}

impl RowCache {
    pub fn new(capacity: usize) -> Self {
        // A slot per 128 bytes of capacity (about an entry), at most 65,536
        // (256 KiB, so that the check, paid on every miss, stays in a near
        // cache level).
        let slots = (capacity / 128).next_power_of_two().clamp(1 << 12, 1 << 16);
        RowCache { cache: ClockCache::new(capacity), seen: (0..slots).map(|_| AtomicU32::new(0)).collect() }
    }

    /// Whether a lookup that missed `key` should make an entry of what it
    /// finds: the second miss of a key while the doorkeeper remembers it.
    pub fn admit(&self, key: RowKey) -> bool {
        let h = key.mixed ^ key.file.wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
        let slot = &self.seen[(h as usize) & (self.seen.len() - 1)];
        let tag = ((h >> 32) as u32) | 1;
        slot.swap(tag, Ordering::Relaxed) == tag
    }

    /// The entry for `user_key` at `key`, if cached.
    pub fn get(&self, key: RowKey, user_key: &[u8]) -> Option<std::sync::Arc<RowEntry>> {
        self.cache.get(key.file, key.mixed).filter(|e| &*e.user_key == user_key)
    }

    /// Caches what the file holds for `user_key` at `key`: `versions`,
    /// newest first, copied out of the blocks they were read from.
    pub fn insert(&self, key: RowKey, user_key: &[u8], versions: &[(ValueType, SequenceNumber, Bytes)]) {
        let copied: Box<[(ValueType, SequenceNumber, Bytes)]> =
            versions.iter().map(|(ty, seq, v)| (*ty, *seq, Bytes::copy_from_slice(v))).collect();
        let size = ENTRY_OVERHEAD + user_key.len() + copied.iter().map(|(_, _, v)| v.len() + 24).sum::<usize>();
        let entry = RowEntry { user_key: user_key.into(), versions: copied, size };
        self.cache.insert(key.file, key.mixed, std::sync::Arc::new(entry));
    }

    /// Drops every entry of a table file (once it is deleted).
    pub fn erase_file(&self, file: u64) {
        self.cache.erase_file(file);
    }

    /// Bytes held.
    pub fn usage(&self) -> u64 {
        self.cache.stats().usage
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(seq: u64, v: &[u8]) -> (ValueType, SequenceNumber, Bytes) {
        (ValueType::Put, seq, Bytes::copy_from_slice(v))
    }

    #[test]
    fn entries_are_found_by_file_visibility_and_user_key() {
        let c = RowCache::new(1 << 20);
        let at_latest = RowKey::new(7, 42, 100, 50);
        c.insert(at_latest, b"k", &[put(40, b"v")]);
        let e = c.get(RowKey::new(7, 42, 1_000, 50), b"k").expect("a later lookup sees the same versions");
        assert_eq!(e.versions()[0].2.as_ref(), b"v");
        assert!(c.get(RowKey::new(8, 42, 100, 50), b"k").is_none(), "another file");
        assert!(c.get(RowKey::new(7, 42, 45, 50), b"k").is_none(), "a snapshot older than the file's newest version");
        assert!(c.get(at_latest, b"other key, same hash").is_none(), "the user key must match");
        c.erase_file(7);
        assert!(c.get(at_latest, b"k").is_none());
        assert_eq!(c.usage(), 0);
    }

    #[test]
    fn the_doorkeeper_admits_a_key_on_its_second_miss() {
        let c = RowCache::new(1 << 20);
        let k = RowKey::new(3, 99, 10, 10);
        assert!(!c.admit(k), "a first miss only remembers the key");
        assert!(c.admit(k), "a second miss admits it");
        let other = RowKey::new(4, 99, 10, 10);
        assert!(!c.admit(other));
    }

    #[test]
    fn values_are_copies_that_outlive_the_blocks_they_came_from() {
        let c = RowCache::new(1 << 20);
        let block = Bytes::from(vec![9u8; 4096]);
        let value = block.slice(100..110);
        c.insert(RowKey::new(1, 1, 10, 10), b"k", &[(ValueType::Put, 5, value)]);
        drop(block);
        let e = c.get(RowKey::new(1, 1, 10, 10), b"k").unwrap();
        assert_eq!(e.versions()[0].2.as_ref(), &[9u8; 10][..]);
        assert!(c.usage() < 4096, "the entry does not keep the block: {}", c.usage());
    }
}
