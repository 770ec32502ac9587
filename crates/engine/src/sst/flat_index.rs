//! A table's index block, decoded once when the table is opened into flat
//! arrays, so that finding the data block of a key is a binary search on
//! integers rather than a walk through prefix-compressed entries.
//!
//! The index block (`docs/format.md`) holds one entry per data block: a
//! separator internal key, at least the block's last key and below the next
//! block's first, and the block's handle. Here each separator becomes:
//! - `prefixes[i]`: 8 bytes of its user key past the prefix all the
//!   separators share, as an integer (`format/key_prefix.rs`). If
//!   `prefix(a) < prefix(b)` then `a < b` in internal-key order (and
//!   likewise `>`), so most comparisons of a search are one integer
//!   compare; only equal prefixes compare whole keys;
//! - its whole internal key, in one buffer (`keys[ends[i-1]..ends[i]]`);
//! - its handle.
//!
//! Every handle is checked here (inside the file, before the index block),
//! so a damaged index is reported when the table is opened, with the
//! entry's position, rather than at the read that meets it.

use std::cmp::Ordering;

use super::block::Block;
use super::format::{BlockHandle, BLOCK_TRAILER_LEN};
use crate::error::{Error, Result};
use crate::format::key;
use crate::format::key_prefix::KeyPrefixes;
use crate::iter::InternalIterator;

pub struct FlatIndex {
    prefixes: KeyPrefixes,
    keys: Vec<u8>,
    ends: Vec<u32>,
    handles: Vec<BlockHandle>,
}

impl FlatIndex {
    /// Decodes the index block `block` (at `index_offset`) of the table at
    /// `path`, whose data blocks all end by `data_end`.
    pub fn decode(block: &Block, path: &str, index_offset: u64, data_end: u64) -> Result<FlatIndex> {
        let mut out =
            FlatIndex { prefixes: KeyPrefixes::default(), keys: Vec::new(), ends: Vec::new(), handles: Vec::new() };
        let mut it = block.iter();
        it.seek_to_first();
        while it.valid() {
            let n = out.handles.len();
            let corrupt = |reason: &str| Error::corruption(path, index_offset, format!("index entry {n}: {reason}"));
            let handle = BlockHandle::decode(it.value()).ok_or_else(|| corrupt("bad block handle"))?;
            let end = handle.offset.checked_add(handle.size).and_then(|e| e.checked_add(BLOCK_TRAILER_LEN as u64));
            if end.is_none_or(|end| end > data_end) {
                return Err(corrupt("block handle outside the data blocks"));
            }
            let ikey = it.key();
            if ikey.len() < key::TAG_LEN {
                return Err(corrupt("separator shorter than an internal key"));
            }
            if let Some(last) = out.key_at(n.wrapping_sub(1)) {
                if key::compare(last, ikey) != Ordering::Less {
                    return Err(corrupt("separators out of order"));
                }
            }
            out.keys.extend_from_slice(ikey);
            let end = u32::try_from(out.keys.len()).map_err(|_| corrupt("index too large"))?;
            out.ends.push(end);
            out.handles.push(handle);
            it.next();
        }
        it.status()?;
        let n = out.len();
        out.prefixes = KeyPrefixes::new((0..n).map(|i| key::user_key(out.key(i))));
        Ok(out)
    }

    pub fn len(&self) -> usize {
        self.handles.len()
    }

    fn key_at(&self, i: usize) -> Option<&[u8]> {
        let end = *self.ends.get(i)? as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        Some(&self.keys[start..end])
    }

    /// The separator key of entry `i`. REQUIRES: `i < len()`.
    pub fn key(&self, i: usize) -> &[u8] {
        self.key_at(i).unwrap_or(&[])
    }

    /// The handle of entry `i`. REQUIRES: `i < len()`.
    pub fn handle(&self, i: usize) -> BlockHandle {
        self.handles[i]
    }

    /// Whether entry `i`'s separator is at or after `target` (`target`'s
    /// prefix given, if it has one), i.e. its block is the first that may
    /// hold `target`.
    #[inline]
    fn at_or_after(&self, i: usize, target: &[u8], prefix: Option<u64>) -> bool {
        !self.prefixes.below(i, prefix, || key::compare(self.key(i), target).is_lt())
    }

    /// The first entry whose separator is >= `target` (an internal key): the
    /// only block that may hold it; `len()` when `target` is past the last.
    pub fn seek(&self, target: &[u8]) -> usize {
        self.search(0, self.len(), target, self.prefixes.of(key::user_key(target)))
    }

    /// The first entry of `lo..hi` at or after `target`, if the answer is in
    /// there (`hi` otherwise): a binary search.
    #[inline]
    fn search(&self, lo: usize, hi: usize, target: &[u8], prefix: Option<u64>) -> usize {
        self.prefixes.search(lo, hi, prefix, |i| key::compare(self.key(i), target).is_lt())
    }

    /// [`FlatIndex::seek`] for a `target` known to be >= every separator
    /// before `from` (the next key of a sorted batch): gallops forward from
    /// `from`, so close keys cost a few compares instead of a whole search.
    pub fn seek_from(&self, from: usize, target: &[u8]) -> usize {
        let prefix = self.prefixes.of(key::user_key(target));
        let n = self.len();
        let mut lo = from.min(n);
        // Gallop: find a bound `hi` whose entry is at or after the target.
        let mut step = 1;
        let mut hi = lo;
        while hi < n && !self.at_or_after(hi, target, prefix) {
            lo = hi + 1;
            hi = hi.saturating_add(step).min(n);
            step *= 2;
        }
        // The answer is in lo..=hi (hi == n: none at or after).
        self.search(lo, hi, target, prefix)
    }
}

/// The index entries as an iterator, for tests that compare it with the block.
#[cfg(test)]
impl FlatIndex {
    fn entries(&self) -> Vec<(Vec<u8>, BlockHandle)> {
        (0..self.len()).map(|i| (self.key(i).to_vec(), self.handle(i))).collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bytes::Bytes;

    use super::*;
    use crate::format::key::{internal_key, seek_key, ValueType};
    use crate::sst::block::{BlockBuilder, BlockOrigin};

    fn index_block(entries: &[(Vec<u8>, BlockHandle)]) -> Block {
        let mut b = BlockBuilder::new(1);
        for (k, h) in entries {
            let mut v = Vec::new();
            h.encode_to(&mut v);
            b.add(k, &v);
        }
        Block::new(Bytes::from(b.finish()), BlockOrigin { file: Arc::from("t.sst"), offset: 0 }).unwrap()
    }

    fn sample() -> Vec<(Vec<u8>, BlockHandle)> {
        // Keys shorter than, equal to and longer than the 8-byte prefix,
        // with equal prefixes, and two versions of one user key.
        let uks: [&[u8]; 9] =
            [b"", b"a", b"a\0", b"abcdefgh", b"abcdefgh\0", b"abcdefghij", b"abcdefgi", b"b", b"\xff\xff"];
        let mut out = Vec::new();
        let mut off = 0;
        for (i, uk) in uks.iter().enumerate() {
            out.push((internal_key(uk, 100 - i as u64, ValueType::Put), BlockHandle { offset: off, size: 10 }));
            off += 10;
            if *uk == b"b" {
                out.push((internal_key(uk, 3, ValueType::Put), BlockHandle { offset: off, size: 10 }));
                off += 10;
            }
        }
        out
    }

    #[test]
    fn decodes_every_entry_as_the_block_holds_it() {
        let entries = sample();
        let ix = FlatIndex::decode(&index_block(&entries), "t.sst", 500, 500).unwrap();
        assert_eq!(ix.entries(), entries);
    }

    #[test]
    fn seek_agrees_with_a_linear_scan_for_every_target_and_start() {
        let entries = sample();
        let ix = FlatIndex::decode(&index_block(&entries), "t.sst", 500, 500).unwrap();
        let mut targets: Vec<Vec<u8>> = Vec::new();
        for uk in [
            &b""[..],
            b"\0",
            b"a",
            b"a\0",
            b"a\0\0",
            b"abcdefg",
            b"abcdefgh",
            b"abcdefgh\0\0",
            b"abcdefghz",
            b"abcdefgi",
            b"b",
            b"c",
            b"\xff\xff\xff",
        ] {
            for seq in [0, 3, 4, 50, 200] {
                targets.push(seek_key(uk, seq));
            }
        }
        for t in &targets {
            let want = entries.iter().position(|(k, _)| key::compare(k, t) != Ordering::Less).unwrap_or(entries.len());
            assert_eq!(ix.seek(t), want, "{t:?}");
            for from in 0..=want {
                assert_eq!(ix.seek_from(from, t), want, "from {from}: {t:?}");
            }
        }
    }

    #[test]
    fn keys_sharing_a_prefix_seek_as_a_linear_scan_says_also_from_outside_it() {
        // A sublevel's keys: all begin with its name, so the integers are
        // made of what follows it; targets outside the name compare whole.
        let uks: Vec<Vec<u8>> = ["", "a", "a\0", "abcdefgh", "abcdefgh\0", "abcdefghij", "abcdefgi", "b"]
            .iter()
            .map(|k| [&b"!notes!"[..], k.as_bytes()].concat())
            .collect();
        let entries: Vec<(Vec<u8>, BlockHandle)> = uks
            .iter()
            .enumerate()
            .map(|(i, uk)| {
                (internal_key(uk, 50 - i as u64, ValueType::Put), BlockHandle { offset: 10 * i as u64, size: 10 })
            })
            .collect();
        let ix = FlatIndex::decode(&index_block(&entries), "t.sst", 500, 500).unwrap();
        let mut targets: Vec<Vec<u8>> = uks.clone();
        for t in ["", "!", "!notes", "!notes!", "!notes!abcdefgh\0\0", "!notes!c", "!notes\x01", "!notez", "!a", "\x7f"]
        {
            targets.push(t.as_bytes().to_vec());
        }
        for uk in &targets {
            for seq in [0, 47, key::MAX_SEQUENCE] {
                let t = seek_key(uk, seq);
                let want =
                    entries.iter().position(|(k, _)| key::compare(k, &t) != Ordering::Less).unwrap_or(entries.len());
                assert_eq!(ix.seek(&t), want, "{uk:?} at {seq}");
                for from in 0..=want {
                    assert_eq!(ix.seek_from(from, &t), want, "from {from}: {uk:?} at {seq}");
                }
            }
        }
    }

    #[test]
    fn damaged_entries_are_corruption_at_decode() {
        let mut entries = sample();
        entries[3].1 = BlockHandle { offset: 490, size: 10 }; // its trailer is past the data
        let e = FlatIndex::decode(&index_block(&entries), "t.sst", 500, 500).err().unwrap();
        assert!(e.to_string().contains("index entry 3"), "{e}");
        let mut entries = sample();
        entries.swap(1, 2);
        let e = FlatIndex::decode(&index_block(&entries), "t.sst", 500, 500).err().unwrap();
        assert!(e.to_string().contains("out of order"), "{e}");
        let block = {
            let mut b = BlockBuilder::new(1);
            b.add(b"short", b"\x01\x02");
            Block::new(Bytes::from(b.finish()), BlockOrigin { file: Arc::from("t.sst"), offset: 0 }).unwrap()
        };
        assert!(FlatIndex::decode(&block, "t.sst", 500, 500).is_err());
    }
}
