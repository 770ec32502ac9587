//! The block cache: uncompressed blocks keyed by (table file number, block
//! offset), charged by their size against a byte budget, evicted by CLOCK
//! (the "second chance" approximation of LRU that RocksDB's clock caches
//! use): a hit only sets the entry's reference bit, where an LRU list
//! relinks the entry and both its neighbours, three more cache lines
//! touched per lookup. Sharded so that concurrent native readers rarely meet
//! on one lock; one shard in wasm, which has one thread.
//!
//! A block handed out stays valid after eviction: it is reference counted,
//! so eviction only drops the cache's own reference.
//!
//! The same cache, [`ClockCache`], holds the row cache's entries
//! (`read/row_cache.rs`): anything [`Cached`] keyed by a table file number
//! and a second number.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::sst::block::Block;

#[cfg(not(target_arch = "wasm32"))]
const SHARDS: usize = 16;
#[cfg(target_arch = "wasm32")]
const SHARDS: usize = 1;
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

/// What a [`ClockCache`] holds: cheap to clone (reference counted), and
/// charged by its size.
pub trait Cached: Clone {
    /// Bytes charged against the cache's capacity (bookkeeping added).
    fn size(&self) -> usize;
}

impl Cached for Block {
    fn size(&self) -> usize {
        Block::size(self)
    }
}

/// One cached value and its CLOCK reference bit.
struct Slot<V> {
    key: Key,
    block: Option<V>,
    referenced: bool,
}

struct Shard<V> {
    /// Where each cached key's slot is.
    index: HashMap<Key, u32, BuildKeyHasher>,
    slots: Vec<Slot<V>>,
    /// Slots whose block was evicted or erased.
    free: Vec<u32>,
    /// The CLOCK hand: the next slot eviction looks at.
    hand: usize,
    usage: usize,
    capacity: usize,
}

impl<V> Default for Shard<V> {
    fn default() -> Self {
        Shard { index: HashMap::default(), slots: Vec::new(), free: Vec::new(), hand: 0, usage: 0, capacity: 0 }
    }
}

impl<V: Cached> Shard<V> {
    fn get(&mut self, key: Key) -> Option<V> {
        let i = *self.index.get(&key)? as usize;
        let slot = &mut self.slots[i];
        slot.referenced = true;
        slot.block.clone()
    }

    fn insert(&mut self, key: Key, block: V) {
        let charge = block.size() + ENTRY_CHARGE;
        if charge > self.capacity {
            return;
        }
        if let Some(&i) = self.index.get(&key) {
            let slot = &mut self.slots[i as usize];
            if let Some(old) = slot.block.replace(block) {
                self.usage -= old.size() + ENTRY_CHARGE;
            }
            slot.referenced = true;
        } else {
            let slot = Slot { key, block: Some(block), referenced: false };
            let i = match self.free.pop() {
                Some(i) => {
                    self.slots[i as usize] = slot;
                    i
                }
                None => {
                    self.slots.push(slot);
                    (self.slots.len() - 1) as u32
                }
            };
            self.index.insert(key, i);
        }
        self.usage += charge;
        while self.usage > self.capacity && self.evict_one() {}
    }

    /// Evicts the first unreferenced block after the hand, clearing the
    /// reference bits it passes (a referenced block gets a second chance).
    /// False when nothing is left to evict.
    fn evict_one(&mut self) -> bool {
        let n = self.slots.len();
        // Two turns at most: the first clears every bit it passes.
        for _ in 0..2 * n {
            let i = self.hand;
            self.hand = (self.hand + 1) % n;
            let slot = &mut self.slots[i];
            if slot.block.is_none() {
                continue;
            }
            if std::mem::take(&mut slot.referenced) {
                continue;
            }
            self.drop_slot(i);
            return true;
        }
        false
    }

    fn drop_slot(&mut self, i: usize) {
        let slot = &mut self.slots[i];
        if let Some(b) = slot.block.take() {
            self.usage -= b.size() + ENTRY_CHARGE;
            self.index.remove(&slot.key);
            self.free.push(i as u32);
        }
    }
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

/// The block cache.
pub type BlockCache = ClockCache<Block>;

/// A sharded CLOCK cache of `V`s keyed by (table file number, a second
/// number), charged by their sizes.
pub struct ClockCache<V> {
    shards: Vec<Mutex<Shard<V>>>,
    capacity: usize,
    hits: AtomicU64,
    misses: AtomicU64,
    adds: AtomicU64,
}

impl<V: Cached> ClockCache<V> {
    /// A cache holding up to `capacity` bytes; 0 caches nothing.
    pub fn new(capacity: usize) -> Self {
        let per = capacity.div_ceil(SHARDS);
        ClockCache {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard { capacity: per, ..Shard::default() })).collect(),
            capacity,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            adds: AtomicU64::new(0),
        }
    }

    fn shard(&self, key: Key) -> std::sync::MutexGuard<'_, Shard<V>> {
        let shard = if SHARDS == 1 {
            0
        } else {
            let h = (key.0.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ key.1.wrapping_mul(0xc2b2_ae3d_27d4_eb4f)) >> 59;
            h as usize % self.shards.len()
        };
        self.shards[shard].lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn get(&self, file: u64, offset: u64) -> Option<V> {
        let found = self.shard((file, offset)).get((file, offset));
        let counter = if found.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    pub fn insert(&self, file: u64, offset: u64, block: V) {
        self.shard((file, offset)).insert((file, offset), block);
        self.adds.fetch_add(1, Ordering::Relaxed);
    }

    /// Drops every entry of a table (after the table is deleted).
    pub fn erase_file(&self, file: u64) {
        for shard in &self.shards {
            let mut s = shard.lock().unwrap_or_else(|p| p.into_inner());
            for i in 0..s.slots.len() {
                if s.slots[i].key.0 == file {
                    s.drop_slot(i);
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
    fn a_block_hit_since_the_hand_passed_gets_a_second_chance() {
        // Room for 3 blocks per shard-less cache (capacity split by shards:
        // use one key space that hashes to shards, and count survivors).
        let c = BlockCache::new(SHARDS * 3 * (1000 + 200));
        for off in 0..3 {
            c.insert(1, off, block(1000));
        }
        // Reading every block keeps all of them while newcomers come and go.
        let mut kept = 0;
        for round in 0..50u64 {
            for off in 0..3 {
                kept += u64::from(c.get(1, off).is_some());
            }
            c.insert(2, round, block(1000));
        }
        assert!(kept > 100, "hot blocks survived {kept} of 150 reads");
        assert!(c.stats().usage <= c.stats().capacity);
    }

    #[test]
    fn replacing_a_block_keeps_the_charge_right() {
        let c = BlockCache::new(1 << 20);
        c.insert(1, 0, block(1000));
        let one = c.stats().usage;
        c.insert(1, 0, block(1000));
        assert_eq!(c.stats().usage, one);
        c.erase_file(1);
        assert_eq!(c.stats().usage, 0);
        assert!(c.get(1, 0).is_none());
    }

    #[test]
    fn zero_capacity_caches_nothing() {
        let c = BlockCache::new(0);
        c.insert(1, 0, block(10));
        assert!(c.get(1, 0).is_none());
    }
}
