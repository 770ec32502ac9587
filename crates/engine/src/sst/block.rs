//! Blocks: sorted entries with prefix-compressed keys and restart points
//! (LevelDB's `block_builder.cc` / `block.cc`).
//!
//! ## Format
//! ```text
//! block   := entry*  restart: fixed32le{num_restarts}  [hash_index]  footer: fixed32le
//! footer  := num_restarts | has_hash_index << 31
//! entry   := shared: varint32  non_shared: varint32  value_len: varint32
//!            key_delta[non_shared]  value[value_len]
//! hash_index := bucket: u8{num_buckets}  num_buckets: fixed16le
//! ```
//! Every `restart_interval` entries a *restart point* stores its key whole
//! (`shared == 0`); the restart array holds their offsets, so a seek binary
//! searches restart points and then scans at most `restart_interval` entries.
//!
//! Data blocks may carry a hash index of their user keys (RocksDB's
//! `kDataBlockBinaryAndHash`): the bucket of a user key (`bucket_of`: from
//! its `key_hash`, the hash the bloom filters take) holds the restart
//! interval every entry of the keys hashing there is in, 254 when they are
//! in more than one (the point lookup then binary-searches), or 255 when no
//! key of the block hashes there (the key is not in the block). A point
//! lookup then goes straight to one restart interval, touching two cache
//! lines of the block instead of one per step of a binary search. Blocks
//! with more than 253 restart points carry none. A footer without bit 31 is
//! LevelDB's layout: blocks written before the hash index read the same.

use std::cmp::Ordering;
use std::sync::Arc;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::format::coding::{decode_fixed32, decode_varint32, put_fixed32, put_varint32};
use crate::format::key;
use crate::iter::InternalIterator;

/// Footer bit of a block with a hash index.
const HASH_INDEX_FLAG: u32 = 1 << 31;
/// Bucket values besides restart indexes.
const BUCKET_COLLISION: u8 = 254;
const BUCKET_EMPTY: u8 = 255;
/// The most restart points a hash-indexed block may have (indexes 0..=252).
const MAX_HASHED_RESTARTS: usize = 253;
/// Keys per bucket the hash index is sized for (RocksDB's util ratio).
const HASH_UTIL_RATIO: f64 = 0.75;

/// The bucket of a user key with hash `h` (`sst::filter::key_hash`) among
/// `num_buckets`.
#[inline]
pub fn bucket_of(h: u64, num_buckets: usize) -> usize {
    ((u64::from((h >> 32) as u32) * num_buckets as u64) >> 32) as usize
}

/// Builds one block. Keys must be added in increasing order.
pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    counter: usize,
    restart_interval: usize,
    last_key: Vec<u8>,
    entries: usize,
    /// With a hash index: each entry's user-key hash and restart interval.
    hashed: Option<Vec<(u64, u8)>>,
}

impl BlockBuilder {
    pub fn new(restart_interval: usize) -> Self {
        BlockBuilder {
            buf: Vec::new(),
            restarts: vec![0],
            counter: 0,
            restart_interval: restart_interval.max(1),
            last_key: Vec::new(),
            entries: 0,
            hashed: None,
        }
    }

    /// A builder of data blocks with a hash index of their user keys: add
    /// entries with [`BlockBuilder::add_hashed`].
    pub fn with_hash_index(restart_interval: usize) -> Self {
        BlockBuilder { hashed: Some(Vec::new()), ..Self::new(restart_interval) }
    }

    /// Adds an entry whose user key hashes to `h` (`key_hash`); the hash
    /// goes into the block's hash index, if it has one.
    pub fn add_hashed(&mut self, key: &[u8], value: &[u8], h: u64) {
        self.add(key, value);
        if let Some(hashed) = self.hashed.as_mut() {
            // More restart points than a bucket can name: no index (finish).
            let r = (self.restarts.len() - 1).min(usize::from(u8::MAX)) as u8;
            hashed.push((h, r));
        }
    }

    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        let mut shared = 0;
        if self.counter < self.restart_interval {
            shared = self.last_key.iter().zip(key).take_while(|(a, b)| a == b).count();
        } else {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
        }
        let non_shared = key.len() - shared;
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, non_shared as u32);
        put_varint32(&mut self.buf, value.len() as u32);
        self.buf.extend_from_slice(&key[shared..]);
        self.buf.extend_from_slice(value);
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(&key[shared..]);
        self.counter += 1;
        self.entries += 1;
    }

    /// Size of the block if finished now (the hash index left out: it is
    /// about one byte per entry).
    pub fn estimated_size(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Finishes the block and resets the builder for the next one.
    pub fn finish(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.buf);
        for r in &self.restarts {
            put_fixed32(&mut out, *r);
        }
        let mut footer = self.restarts.len() as u32;
        if let Some(hashed) = self.hashed.as_mut() {
            if !hashed.is_empty() && self.restarts.len() <= MAX_HASHED_RESTARTS {
                let num_buckets = ((hashed.len() as f64 / HASH_UTIL_RATIO) as usize).clamp(1, u16::MAX as usize);
                let mut buckets = vec![BUCKET_EMPTY; num_buckets];
                for &(h, r) in hashed.iter() {
                    let b = &mut buckets[bucket_of(h, num_buckets)];
                    if *b == BUCKET_EMPTY {
                        *b = r;
                    } else if *b != r {
                        *b = BUCKET_COLLISION;
                    }
                }
                out.extend_from_slice(&buckets);
                out.extend_from_slice(&(num_buckets as u16).to_le_bytes());
                footer |= HASH_INDEX_FLAG;
            }
            hashed.clear();
        }
        put_fixed32(&mut out, footer);
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.last_key.clear();
        self.entries = 0;
        out
    }
}

/// Where a block came from, for error messages.
#[derive(Clone, Debug)]
pub struct BlockOrigin {
    pub file: Arc<str>,
    pub offset: u64,
}

/// A decoded (uncompressed) block. Cheap to clone: one reference count (a
/// lookup clones a cached block, and each count it touches is a cache line
/// more); values can be handed out as `Bytes` slices that keep the block's
/// bytes alive.
#[derive(Clone)]
pub struct Block(Arc<BlockInner>);

pub struct BlockInner {
    data: Bytes,
    restarts_at: usize,
    num_restarts: usize,
    /// The hash index's buckets (offset and count), if the block has one.
    buckets: Option<(usize, usize)>,
    origin: BlockOrigin,
}

impl std::ops::Deref for Block {
    type Target = BlockInner;
    fn deref(&self) -> &BlockInner {
        &self.0
    }
}

impl Block {
    /// Checks the restart array's shape; entries are checked as they are read.
    pub fn new(data: Bytes, origin: BlockOrigin) -> Result<Self> {
        let corrupt = |r: &str| Error::corruption(&origin.file, origin.offset, r.to_string());
        if data.len() < 4 {
            return Err(corrupt("block shorter than its restart count"));
        }
        let footer = decode_fixed32(&data[data.len() - 4..]).unwrap_or(0);
        let num_restarts = (footer & !HASH_INDEX_FLAG) as usize;
        let mut end = data.len() - 4;
        let mut buckets = None;
        if footer & HASH_INDEX_FLAG != 0 {
            let n = match data.get(end.wrapping_sub(2)..end) {
                Some(&[a, b]) if end >= 2 => usize::from(u16::from_le_bytes([a, b])),
                _ => return Err(corrupt("block shorter than its hash index")),
            };
            if n == 0 || n + 2 > end || num_restarts > MAX_HASHED_RESTARTS {
                return Err(corrupt("bad hash index in block"));
            }
            end -= 2 + n;
            buckets = Some((end, n));
        }
        if num_restarts == 0 || num_restarts > end / 4 {
            return Err(corrupt("bad restart count in block"));
        }
        let restarts_at = end - 4 * num_restarts;
        Ok(Block(Arc::new(BlockInner { data, restarts_at, num_restarts, buckets, origin })))
    }

    pub fn size(&self) -> usize {
        self.data.len()
    }

    pub fn data(&self) -> &Bytes {
        &self.data
    }

    pub fn iter(&self) -> BlockIter {
        BlockIter {
            block: self.clone(),
            current: self.restarts_at,
            next: self.restarts_at,
            restart_index: self.num_restarts,
            key: KeyBuf::default(),
            value: 0..0,
            err: None,
        }
    }

    fn restart_point(&self, i: usize) -> usize {
        decode_fixed32(&self.data[self.restarts_at + 4 * i..]).unwrap_or(0) as usize
    }
}

/// The key of a block iterator, rebuilt entry by entry from the shared
/// prefix of the previous one and the entry's own bytes. Keys up to
/// `INLINE` bytes live in the iterator itself: a seek allocates nothing.
struct KeyBuf {
    inline: [u8; KeyBuf::INLINE],
    /// Holds the key instead once one was longer than `INLINE`.
    heap: Vec<u8>,
    len: usize,
}

impl Default for KeyBuf {
    fn default() -> Self {
        KeyBuf { inline: [0; KeyBuf::INLINE], heap: Vec::new(), len: 0 }
    }
}

impl KeyBuf {
    const INLINE: usize = 64;

    #[inline]
    fn len(&self) -> usize {
        self.len
    }

    fn clear(&mut self) {
        self.len = 0;
        self.heap.clear();
    }

    #[inline]
    fn as_slice(&self) -> &[u8] {
        if self.heap.is_empty() {
            &self.inline[..self.len]
        } else {
            &self.heap
        }
    }

    /// Keeps the first `shared` bytes (REQUIRES: `shared <= len()`) and
    /// appends `suffix`.
    #[inline]
    fn replace_suffix(&mut self, shared: usize, suffix: &[u8]) {
        let len = shared + suffix.len();
        if self.heap.is_empty() && len <= Self::INLINE {
            self.inline[shared..len].copy_from_slice(suffix);
        } else {
            if self.heap.is_empty() {
                self.heap.extend_from_slice(&self.inline[..shared]);
            }
            self.heap.truncate(shared);
            self.heap.extend_from_slice(suffix);
        }
        self.len = len;
    }
}

/// Iterates a block's entries. Keys compare with the function given to
/// `seek`-style calls through [`InternalIterator`] (internal key order).
pub struct BlockIter {
    block: Block,
    /// Offset of the current entry; `restarts_at` when not valid.
    current: usize,
    /// Offset of the entry after the current one.
    next: usize,
    restart_index: usize,
    key: KeyBuf,
    value: std::ops::Range<usize>,
    err: Option<Error>,
}

impl BlockIter {
    fn corrupt(&mut self, reason: &str) {
        self.err = Some(Error::corruption(
            &self.block.origin.file,
            self.block.origin.offset,
            format!("{reason} (entry at block offset {})", self.current),
        ));
        self.current = self.block.restarts_at;
        self.next = self.block.restarts_at;
        self.restart_index = self.block.num_restarts;
        self.key.clear();
        self.value = 0..0;
    }

    /// Decodes the entry at `self.next` into current; false at the end or
    /// on corruption.
    fn parse_next(&mut self) -> bool {
        self.current = self.next;
        if self.current >= self.block.restarts_at {
            self.current = self.block.restarts_at;
            self.restart_index = self.block.num_restarts;
            return false;
        }
        let limit = self.block.restarts_at;
        let d = &self.block.data[self.current..limit];
        // Fast path (LevelDB's DecodeEntry): all three lengths fit in one byte.
        let (shared, non_shared, vlen, p) = match d {
            [a, b, c, ..] if (a | b | c) < 0x80 => (*a as usize, *b as usize, *c as usize, 3),
            _ => {
                let mut p = 0;
                let mut field = || -> Option<usize> {
                    let (v, n) = decode_varint32(&d[p..])?;
                    p += n;
                    Some(v as usize)
                };
                let (Some(shared), Some(non_shared), Some(vlen)) = (field(), field(), field()) else {
                    self.corrupt("bad entry header in block");
                    return false;
                };
                (shared, non_shared, vlen, p)
            }
        };
        if shared > self.key.len() || p + non_shared + vlen > d.len() {
            self.corrupt("entry runs past the block");
            return false;
        }
        self.key.replace_suffix(shared, &d[p..p + non_shared]);
        let vstart = self.current + p + non_shared;
        self.value = vstart..vstart + vlen;
        self.next = vstart + vlen;
        true
    }

    fn seek_to_restart(&mut self, i: usize) {
        self.key.clear();
        self.restart_index = i;
        let off = self.block.restart_point(i);
        if off > self.block.restarts_at {
            self.corrupt("restart point past the entries");
            return;
        }
        self.next = off;
    }

    /// The key at restart point `i` (whole, since it shares nothing).
    fn restart_key(&self, i: usize) -> Option<&[u8]> {
        let off = self.block.restart_point(i);
        let d = self.block.data.get(off..self.block.restarts_at)?;
        // Fast path, as in parse_next: all three lengths fit in one byte (a
        // tenth of a point lookup's time went to decoding them here).
        let (shared, non_shared, s) = match d {
            [a, b, c, ..] if (a | b | c) < 0x80 => (*a as u32, *b as usize, 3),
            _ => {
                let (shared, a) = decode_varint32(d)?;
                let (non_shared, b) = decode_varint32(&d[a..])?;
                let (_, c) = decode_varint32(&d[a + b..])?;
                (shared, non_shared as usize, a + b + c)
            }
        };
        if shared != 0 {
            return None;
        }
        d.get(s..s + non_shared)
    }

    /// The value as a `Bytes` slice sharing the block's memory.
    pub fn value_bytes(&self) -> Bytes {
        self.block.data.slice(self.value.clone())
    }

    /// Positions at the first entry whose key is >= target under `cmp`.
    /// Generic over `cmp` so that the comparison is inlined into the search
    /// (a function pointer is an indirect call per compare in wasm).
    pub fn seek_by(&mut self, target: &[u8], cmp: impl Fn(&[u8], &[u8]) -> Ordering) {
        self.err = None;
        // Binary search for the last restart point with key < target.
        let (mut lo, mut hi) = (0usize, self.block.num_restarts - 1);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            match self.restart_key(mid) {
                Some(k) if cmp(k, target) == Ordering::Less => lo = mid,
                Some(_) => hi = mid - 1,
                None => {
                    self.current = self.block.restart_point(mid).min(self.block.restarts_at);
                    self.corrupt("bad restart entry");
                    return;
                }
            }
        }
        self.seek_to_restart(lo);
        while self.parse_next() {
            if cmp(self.key.as_slice(), target) != Ordering::Less {
                return;
            }
        }
    }

    /// Positions at the first entry whose internal key is >= `target`, or
    /// at the end, like `seek`, but for a point lookup of `target`'s user
    /// key (whose `key_hash` is `h`): with the block's hash index it goes
    /// straight to the restart interval that holds the key, and to the end
    /// when the block does not hold it. REQUIRES: an internal-key `target`.
    pub fn seek_for_get(&mut self, target: &[u8], h: u64) {
        let Some((at, n)) = self.block.buckets else { return self.seek(target) };
        self.err = None;
        match self.block.data[at + bucket_of(h, n)] {
            BUCKET_EMPTY => {
                self.current = self.block.restarts_at;
                self.next = self.block.restarts_at;
                self.restart_index = self.block.num_restarts;
                self.key.clear();
                self.value = 0..0;
            }
            BUCKET_COLLISION => self.seek(target),
            r if usize::from(r) < self.block.num_restarts => {
                self.seek_to_restart(usize::from(r));
                while self.parse_next() {
                    if key::compare(self.key.as_slice(), target) != Ordering::Less {
                        return;
                    }
                }
            }
            _ => self.corrupt("hash index names a restart point the block does not have"),
        }
    }

    /// Positions at the last entry whose key is <= target under `cmp`.
    pub fn seek_for_prev_by(&mut self, target: &[u8], cmp: impl Fn(&[u8], &[u8]) -> Ordering + Copy) {
        self.seek_by(target, cmp);
        if !self.valid() {
            if self.err.is_none() {
                self.seek_to_last();
            }
        } else if cmp(self.key.as_slice(), target) == Ordering::Greater {
            self.prev();
        }
    }
}

impl InternalIterator for BlockIter {
    fn valid(&self) -> bool {
        self.current < self.block.restarts_at && self.err.is_none()
    }

    fn seek_to_first(&mut self) {
        self.err = None;
        self.seek_to_restart(0);
        self.parse_next();
    }

    fn seek_to_last(&mut self) {
        self.err = None;
        self.seek_to_restart(self.block.num_restarts - 1);
        while self.parse_next() && self.next < self.block.restarts_at {}
    }

    fn seek(&mut self, target: &[u8]) {
        self.seek_by(target, crate::format::key::compare);
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.seek_for_prev_by(target, crate::format::key::compare);
    }

    fn next(&mut self) {
        if self.valid() {
            self.parse_next();
        }
    }

    fn prev(&mut self) {
        if !self.valid() {
            return;
        }
        let original = self.current;
        // Back up to the last restart point before the current entry.
        let (mut lo, mut hi) = (0, self.block.num_restarts);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.block.restart_point(mid) < original {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo == 0 {
            self.current = self.block.restarts_at;
            self.restart_index = self.block.num_restarts;
            return;
        }
        self.seek_to_restart(lo - 1);
        // Scan forward to the entry just before the original.
        while self.parse_next() && self.next < original {}
    }

    fn key(&self) -> &[u8] {
        self.key.as_slice()
    }

    fn value(&self) -> &[u8] {
        &self.block.data[self.value.clone()]
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::key::{internal_key, seek_key, user_key, ValueType};

    fn origin() -> BlockOrigin {
        BlockOrigin { file: Arc::from("t.sst"), offset: 0 }
    }

    type Entries = Vec<(Vec<u8>, Vec<u8>)>;

    fn build(n: usize, interval: usize) -> (Block, Entries) {
        let mut b = BlockBuilder::new(interval);
        let entries: Vec<_> = (0..n)
            .map(|i| {
                (internal_key(format!("key{:05}", i * 2).as_bytes(), 1, ValueType::Put), format!("v{i}").into_bytes())
            })
            .collect();
        for (k, v) in &entries {
            b.add(k, v);
        }
        (Block::new(Bytes::from(b.finish()), origin()).unwrap(), entries)
    }

    #[test]
    fn iterates_forward_and_backward() {
        for interval in [1, 2, 16] {
            let (block, entries) = build(100, interval);
            let mut it = block.iter();
            it.seek_to_first();
            for (k, v) in &entries {
                assert!(it.valid());
                assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
                it.next();
            }
            assert!(!it.valid());
            it.seek_to_last();
            for (k, _) in entries.iter().rev() {
                assert_eq!(it.key(), &k[..]);
                it.prev();
            }
            assert!(!it.valid());
            assert!(it.status().is_ok());
        }
    }

    #[test]
    fn keys_longer_than_the_inline_buffer_round_trip_every_way() {
        // Lengths around KeyBuf::INLINE, sharing long prefixes, so entries
        // cross between inline and heap keys in both directions.
        let mut entries: Vec<(Vec<u8>, Vec<u8>)> = (0..120usize)
            .map(|i| {
                let mut uk = vec![b'p'; 40 + (i * 7) % 60];
                uk.extend_from_slice(format!("{i:04}").as_bytes());
                (internal_key(&uk, 1, ValueType::Put), vec![i as u8; i % 5])
            })
            .collect();
        entries.sort_by(|a, b| crate::format::key::compare(&a.0, &b.0));
        for interval in [1, 4, 16] {
            let mut b = BlockBuilder::new(interval);
            for (k, v) in &entries {
                b.add(k, v);
            }
            let block = Block::new(Bytes::from(b.finish()), origin()).unwrap();
            let mut it = block.iter();
            it.seek_to_first();
            for (k, v) in &entries {
                assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
                it.next();
            }
            it.seek_to_last();
            for (k, _) in entries.iter().rev() {
                assert_eq!(it.key(), &k[..]);
                it.prev();
            }
            for (k, _) in &entries {
                it.seek(k);
                assert_eq!(it.key(), &k[..]);
            }
        }
    }

    #[test]
    fn seeks_land_on_the_right_entry() {
        let (block, _) = build(100, 16);
        let mut it = block.iter();
        it.seek(&seek_key(b"key00051", 9));
        assert_eq!(user_key(it.key()), b"key00052");
        it.seek(&seek_key(b"key00052", 9));
        assert_eq!(user_key(it.key()), b"key00052");
        it.seek(&seek_key(b"zzz", 9));
        assert!(!it.valid());
        it.seek(&seek_key(b"", 9));
        assert_eq!(user_key(it.key()), b"key00000");
        it.seek_for_prev(&seek_key(b"key00051", 0));
        assert_eq!(user_key(it.key()), b"key00050");
        it.seek_for_prev(&seek_key(b"a", 0));
        assert!(!it.valid());
        it.seek_for_prev(&seek_key(b"zzz", 0));
        assert_eq!(user_key(it.key()), b"key00198");
    }

    /// A hash-indexed block of `entries` (sorted internal keys).
    fn build_hashed(entries: &[(Vec<u8>, Vec<u8>)], interval: usize) -> Block {
        let mut b = BlockBuilder::with_hash_index(interval);
        for (k, v) in entries {
            b.add_hashed(k, v, crate::sst::filter::key_hash(user_key(k)));
        }
        Block::new(Bytes::from(b.finish()), origin()).unwrap()
    }

    /// `seek_for_get` must land where `seek` does whenever the key is in
    /// the block, and otherwise on no entry of the key.
    fn check_seek_for_get(block: &Block, user: &[u8], seq: u64) {
        let target = seek_key(user, seq);
        let h = crate::sst::filter::key_hash(user);
        let mut a = block.iter();
        a.seek(&target);
        let mut b = block.iter();
        b.seek_for_get(&target, h);
        b.status().unwrap();
        if a.valid() && user_key(a.key()) == user {
            assert!(b.valid(), "{:?}@{seq} not found", String::from_utf8_lossy(user));
            assert_eq!((a.key(), a.value()), (b.key(), b.value()));
            // And it steps on like `seek`'s iterator.
            a.next();
            b.next();
            assert_eq!(a.valid(), b.valid());
            if a.valid() {
                assert_eq!(a.key(), b.key());
            }
        } else {
            assert!(!b.valid() || user_key(b.key()) != user, "{:?} found where seek finds none", user);
        }
    }

    #[test]
    fn hash_index_finds_what_seek_finds() {
        for interval in [1, 2, 4, 16] {
            // Every key in three versions, so versions straddle restart
            // points (collisions) at small intervals.
            let mut entries = Vec::new();
            for i in 0..60 {
                for seq in [9, 5, 1] {
                    let k = format!("key{:05}", i * 2);
                    entries.push((internal_key(k.as_bytes(), seq, ValueType::Put), format!("v{i}.{seq}").into_bytes()));
                }
            }
            let block = build_hashed(&entries, interval);
            assert!(block.buckets.is_some(), "interval {interval}: no hash index");
            for i in 0..125 {
                let k = format!("key{i:05}");
                for seq in [0, 1, 3, 5, 7, 9, 100] {
                    check_seek_for_get(&block, k.as_bytes(), seq);
                }
            }
            for k in [&b""[..], b"a", b"key", b"zzz", b"key00119\0"] {
                check_seek_for_get(&block, k, 100);
            }
        }
    }

    #[test]
    fn hash_index_answers_absent_keys_without_a_search() {
        let entries: Vec<_> =
            (0..64).map(|i| (internal_key(format!("k{i}").as_bytes(), 1, ValueType::Put), vec![b'v'])).collect();
        let block = build_hashed(&entries, 4);
        let (at, n) = block.buckets.unwrap();
        assert_eq!(n, (64.0 / HASH_UTIL_RATIO) as usize);
        let buckets = &block.data()[at..at + n];
        assert!(buckets.contains(&BUCKET_EMPTY));
        // Some absent key lands in an empty bucket: the iterator is at the
        // end at once.
        let absent = (0..1000)
            .map(|i| format!("absent{i}"))
            .find(|k| buckets[bucket_of(crate::sst::filter::key_hash(k.as_bytes()), n)] == BUCKET_EMPTY)
            .unwrap();
        let mut it = block.iter();
        it.seek_for_get(&seek_key(absent.as_bytes(), 9), crate::sst::filter::key_hash(absent.as_bytes()));
        assert!(!it.valid());
        it.status().unwrap();
        // The iterator is still usable afterwards.
        it.seek_to_first();
        assert_eq!(user_key(it.key()), b"k0");
    }

    #[test]
    fn blocks_with_too_many_restarts_carry_no_hash_index() {
        let entries: Vec<_> =
            (0..300).map(|i| (internal_key(format!("key{i:05}").as_bytes(), 1, ValueType::Put), vec![b'v'])).collect();
        let block = build_hashed(&entries, 1);
        assert!(block.buckets.is_none());
        let block = build_hashed(&entries[..253], 1);
        assert!(block.buckets.is_some());
        for i in (0..300).step_by(7) {
            check_seek_for_get(&block, format!("key{i:05}").as_bytes(), 5);
        }
    }

    #[test]
    fn blocks_without_a_hash_index_read_the_same() {
        // LevelDB's layout (footer bit 31 clear): seek_for_get is seek.
        let (block, entries) = build(100, 4);
        assert!(block.buckets.is_none());
        let hashed = build_hashed(&entries, 4);
        assert!(hashed.data().len() > block.data().len());
        for i in 0..210 {
            let k = format!("key{i:05}");
            check_seek_for_get(&block, k.as_bytes(), 1);
            check_seek_for_get(&hashed, k.as_bytes(), 1);
        }
        let mut a = block.iter();
        let mut b = hashed.iter();
        a.seek_to_first();
        b.seek_to_first();
        while a.valid() {
            assert_eq!((a.key(), a.value()), (b.key(), b.value()));
            a.next();
            b.next();
        }
        assert!(!b.valid());
    }

    #[test]
    fn a_bucket_naming_a_missing_restart_is_corruption() {
        let entries: Vec<_> =
            (0..8).map(|i| (internal_key(format!("k{i}").as_bytes(), 1, ValueType::Put), vec![b'v'])).collect();
        let block = build_hashed(&entries, 4);
        let (at, n) = block.buckets.unwrap();
        let mut raw = block.data().to_vec();
        raw[at..at + n].fill(200);
        let bad = Block::new(Bytes::from(raw), origin()).unwrap();
        let mut it = bad.iter();
        it.seek_for_get(&seek_key(b"k3", 9), crate::sst::filter::key_hash(b"k3"));
        assert!(!it.valid());
        assert!(it.status().is_err_and(|e| e.is_corruption()));
        // A hash index bigger than the block, or on too many restarts.
        for (count, restarts) in [(u16::MAX, 2u32), (1, 300)] {
            let mut raw = block.data().to_vec();
            let len = raw.len();
            raw[len - 6..len - 4].copy_from_slice(&count.to_le_bytes());
            raw[len - 4..].copy_from_slice(&(restarts | HASH_INDEX_FLAG).to_le_bytes());
            assert!(Block::new(Bytes::from(raw), origin()).is_err());
        }
    }

    #[test]
    fn garbage_never_panics() {
        let entries: Vec<_> = (0..40)
            .map(|i| (internal_key(format!("key{:05}", i * 2).as_bytes(), 1, ValueType::Put), vec![b'v'; i % 5]))
            .collect();
        let hashed = build_hashed(&entries, 4).data().to_vec();
        let h = crate::sst::filter::key_hash(b"key00031");
        for raw in [build(40, 4).0.data().to_vec(), hashed] {
            for i in 0..raw.len() {
                for flip in [0x01u8, 0x80, 0xff] {
                    let mut b = raw.clone();
                    b[i] ^= flip;
                    if let Ok(blk) = Block::new(Bytes::from(b), origin()) {
                        let mut it = blk.iter();
                        it.seek_to_first();
                        let mut n = 0;
                        while it.valid() && n < 1000 {
                            it.next();
                            n += 1;
                        }
                        it.seek_to_last();
                        it.prev();
                        it.seek(&seek_key(b"key00031", 1));
                        it.seek_for_prev(&seek_key(b"key00031", 1));
                        it.seek_for_get(&seek_key(b"key00031", 1), h);
                        while it.valid() && n < 2000 {
                            it.next();
                            n += 1;
                        }
                    }
                }
            }
            for cut in 0..raw.len() {
                if let Ok(blk) = Block::new(Bytes::copy_from_slice(&raw[..cut]), origin()) {
                    let mut it = blk.iter();
                    it.seek_to_first();
                    while it.valid() {
                        it.next();
                    }
                    it.seek_for_get(&seek_key(b"key00031", 1), h);
                }
            }
        }
    }
}
