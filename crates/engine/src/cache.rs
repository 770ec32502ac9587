//! The block cache: uncompressed blocks keyed by (table file number, block
//! offset), charged by their size against a byte budget, evicted in LRU
//! order. Sharded so concurrent readers rarely meet on one lock.
//!
//! A block handed out stays valid after eviction: it is reference counted,
//! so eviction only drops the cache's own reference.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use lru::LruCache;

use crate::sst::block::Block;

const SHARDS: usize = 16;
/// Per-entry bookkeeping charged on top of the block bytes.
const ENTRY_CHARGE: usize = 96;

type Key = (u64, u64);

/// A fast hash for (file number, offset) keys; the default SipHash-class
/// hashers cost more than the rest of a cache hit.
#[derive(Clone, Copy, Default)]
struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

type BuildKeyHasher = std::hash::BuildHasherDefault<KeyHasher>;

struct Shard {
    lru: LruCache<Key, Block, BuildKeyHasher>,
    usage: usize,
    capacity: usize,
}

/// Counters of the cache, read with [`BlockCache::stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub adds: u64,
    pub usage: u64,
    pub capacity: u64,
}

pub struct BlockCache {
    shards: Vec<Mutex<Shard>>,
    capacity: usize,
    hits: AtomicU64,
    misses: AtomicU64,
    adds: AtomicU64,
}

impl BlockCache {
    /// A cache holding up to `capacity` bytes; 0 caches nothing.
    pub fn new(capacity: usize) -> Self {
        let per = capacity.div_ceil(SHARDS);
        BlockCache {
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        lru: LruCache::unbounded_with_hasher(BuildKeyHasher::default()),
                        usage: 0,
                        capacity: per,
                    })
                })
                .collect(),
            capacity,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            adds: AtomicU64::new(0),
        }
    }

    fn shard(&self, key: Key) -> std::sync::MutexGuard<'_, Shard> {
        let h = (key.0.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ key.1.wrapping_mul(0xc2b2_ae3d_27d4_eb4f)) >> 59;
        self.shards[h as usize % SHARDS].lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn get(&self, file: u64, offset: u64) -> Option<Block> {
        let found = self.shard((file, offset)).lru.get(&(file, offset)).cloned();
        let counter = if found.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    pub fn insert(&self, file: u64, offset: u64, block: Block) {
        let charge = block.size() + ENTRY_CHARGE;
        let mut s = self.shard((file, offset));
        if charge > s.capacity {
            return;
        }
        if let Some(old) = s.lru.put((file, offset), block) {
            s.usage -= old.size() + ENTRY_CHARGE;
        }
        s.usage += charge;
        while s.usage > s.capacity {
            match s.lru.pop_lru() {
                Some((_, b)) => s.usage -= b.size() + ENTRY_CHARGE,
                None => break,
            }
        }
        self.adds.fetch_add(1, Ordering::Relaxed);
    }

    /// Drops every block of a table (after the table is deleted).
    pub fn erase_file(&self, file: u64) {
        for shard in &self.shards {
            let mut s = shard.lock().unwrap_or_else(|p| p.into_inner());
            let keys: Vec<Key> = s.lru.iter().filter(|(k, _)| k.0 == file).map(|(k, _)| *k).collect();
            for k in keys {
                if let Some(b) = s.lru.pop(&k) {
                    s.usage -= b.size() + ENTRY_CHARGE;
                }
            }
        }
    }

    pub fn stats(&self) -> CacheStats {
        let usage = self.shards.iter().map(|s| s.lock().unwrap_or_else(|p| p.into_inner()).usage as u64).sum();
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            adds: self.adds.load(Ordering::Relaxed),
            usage,
            capacity: self.capacity as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bytes::Bytes;

    use super::*;
    use crate::sst::block::{BlockBuilder, BlockOrigin};

    fn block(n: usize) -> Block {
        let mut b = BlockBuilder::new(16);
        b.add(b"k", &vec![0u8; n]);
        Block::new(Bytes::from(b.finish()), BlockOrigin { file: Arc::from("f"), offset: 0 }).unwrap()
    }

    #[test]
    fn hits_misses_and_eviction_by_bytes() {
        let c = BlockCache::new(16 * 4096);
        assert!(c.get(1, 0).is_none());
        c.insert(1, 0, block(1000));
        assert!(c.get(1, 0).is_some());
        for off in 1..2000 {
            c.insert(2, off, block(1000));
        }
        let s = c.stats();
        assert!(s.usage <= s.capacity, "{s:?}");
        assert_eq!((s.hits, s.misses), (1, 1));
        c.erase_file(2);
        assert!(c.stats().usage < 2000, "{:?}", c.stats());
    }

    #[test]
    fn zero_capacity_caches_nothing() {
        let c = BlockCache::new(0);
        c.insert(1, 0, block(10));
        assert!(c.get(1, 0).is_none());
    }
}
