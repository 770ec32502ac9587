//! A whole-key bloom filter over a memtable's user keys (RocksDB's
//! `memtable_whole_key_filtering`, its `DynamicBloom`): a point lookup of a
//! key the memtable does not hold skips the skip list search. Filled as
//! keys are inserted, so it is sized up front from the write buffer size.
//!
//! It takes the hash the table filters use (`sst::filter::key_hash`), so a
//! lookup hashes its key once for both, and probes the same way: the low 32
//! bits pick a 64-byte line, the high 32 bits six bits inside it.
//!
//! One writer sets bits while readers probe: bits are atomic words, set
//! with `fetch_or`. A reader only looks for keys whose write it can see (a
//! write is visible once its sequence number is published, after the key
//! was added here), so a bit set late never hides a visible key.

use std::sync::atomic::{AtomicU64, Ordering};

/// Probes per key: enough for a false-positive rate well under 1% at the
/// size below (about 20 bits per key for entries of ~100 bytes).
const PROBES: u32 = 6;

/// 64 bytes of bits, aligned to a cache line: a probe touches one line.
#[repr(C, align(64))]
struct Line([AtomicU64; 8]);

pub struct WholeKeyBloom {
    lines: Box<[Line]>,
}

impl WholeKeyBloom {
    /// A filter of about `bytes` bytes (whole 64-byte lines, at least one).
    pub fn new(bytes: usize) -> Self {
        let n = (bytes / size_of::<Line>()).clamp(1, u32::MAX as usize);
        WholeKeyBloom { lines: (0..n).map(|_| Line(Default::default())).collect() }
    }

    #[inline]
    fn line(&self, h: u64) -> &Line {
        &self.lines[((u64::from(h as u32) * self.lines.len() as u64) >> 32) as usize]
    }

    /// Records a key by its hash.
    pub fn add(&self, h: u64) {
        let line = self.line(h);
        let mut p = (h >> 32) as u32;
        for _ in 0..PROBES {
            let bit = (p >> (32 - 9)) as usize;
            line.0[bit / 64].fetch_or(1 << (bit % 64), Ordering::Relaxed);
            p = p.wrapping_mul(0x9e37_79b9);
        }
    }

    /// False when no key of this hash was added.
    #[inline]
    pub fn may_contain(&self, h: u64) -> bool {
        let line = self.line(h);
        let mut p = (h >> 32) as u32;
        for _ in 0..PROBES {
            let bit = (p >> (32 - 9)) as usize;
            if line.0[bit / 64].load(Ordering::Relaxed) & (1 << (bit % 64)) == 0 {
                return false;
            }
            p = p.wrapping_mul(0x9e37_79b9);
        }
        true
    }

    /// Bytes the filter takes.
    pub fn size(&self) -> usize {
        self.lines.len() * size_of::<Line>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sst::filter::key_hash;

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        let f = WholeKeyBloom::new(64 << 10);
        let n = 25_000u32;
        for i in 0..n {
            f.add(key_hash(format!("key{i:08}").as_bytes()));
        }
        for i in 0..n {
            assert!(f.may_contain(key_hash(format!("key{i:08}").as_bytes())), "key {i}");
        }
        let fp = (0..100_000u32).filter(|i| f.may_contain(key_hash(format!("other{i:08}").as_bytes()))).count();
        assert!(fp < 1_000, "{fp} false positives in 100,000 (over 1%)");
        assert_eq!(f.size(), 64 << 10);
    }

    #[test]
    fn a_tiny_filter_still_has_a_line() {
        let f = WholeKeyBloom::new(0);
        assert!(!f.may_contain(key_hash(b"x")));
        f.add(key_hash(b"x"));
        assert!(f.may_contain(key_hash(b"x")));
    }
}
