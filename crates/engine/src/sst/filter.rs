//! The full-file bloom filter in RocksDB's FastLocalBloom layout: every key
//! sets all its probe bits inside one 64-byte cache line, so a lookup touches
//! one line. Probes come from one 64-bit XXH3 hash: the low 32 bits pick the
//! line, the high 32 bits seed the probe positions (multiplied by the golden
//! ratio between probes).
//!
//! ## Format
//! ```text
//! filter := line[num_lines]  (64 bytes each)   num_probes: u8   kind: u8 (=1)
//! ```
//! At 10 bits per key this uses 6 probes for about 0.95% false positives.

use xxhash_rust::xxh3::xxh3_64;

pub const LINE_BYTES: usize = 64;
const KIND_FAST_LOCAL_BLOOM: u8 = 1;

/// The hash every filter operation starts from; compute it once per key.
#[inline]
pub fn key_hash(user_key: &[u8]) -> u64 {
    xxh3_64(user_key)
}

/// RocksDB's choice of probe count for a bits-per-key budget (in millibits).
pub(crate) fn num_probes(millibits_per_key: u32) -> u8 {
    match millibits_per_key {
        0..=2080 => 1,
        2081..=3580 => 2,
        3581..=5100 => 3,
        5101..=6640 => 4,
        6641..=8300 => 5,
        8301..=10070 => 6,
        10071..=11720 => 7,
        11721..=14001 => 8,
        14002..=16050 => 9,
        16051..=18300 => 10,
        18301..=22001 => 11,
        22002..=25501 => 12,
        25502..=50000 => ((millibits_per_key - 1) / 2000 - 1) as u8,
        _ => 24,
    }
}

#[inline]
fn fast_range32(h: u32, n: u32) -> u32 {
    ((u64::from(h) * u64::from(n)) >> 32) as u32
}

/// Collects key hashes and builds the filter when the table is finished.
pub struct FilterBuilder {
    bits_per_key: u32,
    hashes: Vec<u64>,
}

impl FilterBuilder {
    pub fn new(bits_per_key: u32) -> Self {
        FilterBuilder { bits_per_key, hashes: Vec::new() }
    }

    pub fn add_key(&mut self, user_key: &[u8]) {
        self.add_hash(key_hash(user_key));
    }

    /// [`FilterBuilder::add_key`] for a key whose `key_hash` is `h`.
    pub fn add_hash(&mut self, h: u64) {
        // Consecutive versions of one key hash alike; add each key once.
        if self.hashes.last() != Some(&h) {
            self.hashes.push(h);
        }
    }

    pub fn num_keys(&self) -> usize {
        self.hashes.len()
    }

    pub fn finish(&mut self) -> Vec<u8> {
        let bits = self.hashes.len() as u64 * u64::from(self.bits_per_key);
        let num_lines = bits.div_ceil(LINE_BYTES as u64 * 8).max(1) as usize;
        let probes = num_probes(self.bits_per_key * 1000);
        let mut out = vec![0u8; num_lines * LINE_BYTES + 2];
        set_bits(&self.hashes, probes, &mut out[..num_lines * LINE_BYTES]);
        let n = out.len();
        out[n - 2] = probes;
        out[n - 1] = KIND_FAST_LOCAL_BLOOM;
        self.hashes.clear();
        out
    }
}

/// Sets each hash's `probes` bits in `lines` (whole 64-byte lines): the
/// low 32 bits choose the line, the high 32 bits seed the probes (RocksDB's
/// FastLocalBloom, which RocksDB's own tables use too: `rocksdb/bloom.rs`).
pub(crate) fn set_bits(hashes: &[u64], probes: u8, lines: &mut [u8]) {
    let num_lines = (lines.len() / LINE_BYTES) as u32;
    if num_lines == 0 {
        return;
    }
    for &h in hashes {
        let line = fast_range32(h as u32, num_lines) as usize * LINE_BYTES;
        let mut p = (h >> 32) as u32;
        for _ in 0..probes {
            let bit = (p >> (32 - 9)) as usize; // 9 bits: a position in 512
            lines[line + (bit >> 3)] |= 1 << (bit & 7);
            p = p.wrapping_mul(0x9e37_79b9);
        }
    }
}

/// One 64-byte line of a filter, aligned to a cache line: a probe touches
/// exactly one line of memory (a filter read from a file at any offset
/// would straddle two for most keys).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; LINE_BYTES]);

/// A filter read back from a table.
#[derive(Clone)]
pub struct BloomFilter {
    lines: std::sync::Arc<[Line]>,
    num_lines: u32,
    probes: u8,
}

impl BloomFilter {
    /// Parses a filter block; `None` if it is not one this version reads
    /// (the table then works without a filter).
    pub fn new(data: bytes::Bytes) -> Option<Self> {
        let n = data.len();
        if n < LINE_BYTES + 2 || !(n - 2).is_multiple_of(LINE_BYTES) || data[n - 1] != KIND_FAST_LOCAL_BLOOM {
            return None;
        }
        let probes = data[n - 2];
        if probes == 0 || probes > 30 {
            return None;
        }
        let lines: std::sync::Arc<[Line]> =
            data[..n - 2].chunks_exact(LINE_BYTES).map(|c| Line(c.try_into().unwrap_or([0; LINE_BYTES]))).collect();
        Some(BloomFilter { num_lines: lines.len() as u32, probes, lines })
    }

    /// False means the key is certainly absent; true means it may be present.
    /// Uses the SIMD128 probe where the build has it.
    #[inline]
    pub fn may_contain_hash(&self, h: u64) -> bool {
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        if self.probes <= 16 {
            return self.may_contain_hash_simd(h);
        }
        self.may_contain_hash_scalar(h)
    }

    fn line(&self, h: u64) -> &[u8] {
        &self.lines[fast_range32(h as u32, self.num_lines) as usize].0
    }

    /// The SIMD128 probe: every probe of the key at once.
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    #[inline]
    pub fn may_contain_hash_simd(&self, h: u64) -> bool {
        super::filter_simd::may_contain(self.line(h), (h >> 32) as u32, self.probes.min(16))
    }

    /// The scalar probe: one bit after another, stopping at the first clear.
    #[inline]
    pub fn may_contain_hash_scalar(&self, h: u64) -> bool {
        let bytes = self.line(h);
        let mut p = (h >> 32) as u32;
        for _ in 0..self.probes {
            let bit = (p >> (32 - 9)) as usize;
            if bytes[bit >> 3] & (1 << (bit & 7)) == 0 {
                return false;
            }
            p = p.wrapping_mul(0x9e37_79b9);
        }
        true
    }

    /// Probes a batch of hashes; `out[i]` is false where key `i` is
    /// certainly absent.
    pub fn may_contain_batch(&self, hashes: &[u64], out: &mut [bool]) {
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        if self.probes <= 16 {
            return self.may_contain_batch_simd(hashes, out);
        }
        for (h, o) in hashes.iter().zip(out.iter_mut()) {
            *o = self.may_contain_hash_scalar(*h);
        }
    }

    /// The batch probe with SIMD128: each key's probes at once.
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    pub fn may_contain_batch_simd(&self, hashes: &[u64], out: &mut [bool]) {
        for (h, o) in hashes.iter().zip(out.iter_mut()) {
            *o = self.may_contain_hash_simd(*h);
        }
    }

    #[cfg(test)]
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(key_hash(user_key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(n: u32, bits: u32) -> BloomFilter {
        let mut b = FilterBuilder::new(bits);
        for i in 0..n {
            b.add_key(&i.to_be_bytes());
        }
        BloomFilter::new(bytes::Bytes::from(b.finish())).expect("valid filter")
    }

    #[test]
    fn no_false_negatives() {
        let f = build(10_000, 10);
        assert!((0..10_000u32).all(|i| f.may_contain(&i.to_be_bytes())));
    }

    #[test]
    fn false_positive_rate_near_one_percent_at_ten_bits() {
        let n = 100_000u32;
        let f = build(n, 10);
        let fp = (n..n + 200_000).filter(|i| f.may_contain(&i.to_be_bytes())).count();
        let rate = fp as f64 / 200_000.0;
        assert!(rate < 0.0125, "false positive rate {rate}");
        assert!(rate > 0.004, "suspiciously low rate {rate}: filter not probing?");
    }

    #[test]
    fn probe_counts_follow_rocksdb() {
        assert_eq!(num_probes(10_000), 6);
        assert_eq!(num_probes(5_000), 3);
        assert_eq!(num_probes(20_000), 11);
    }

    /// The SIMD128 probe must give exactly the scalar probe's answer. Runs
    /// where the build has SIMD128 (the wasm test run, in Node).
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    #[test]
    fn simd_probe_is_identical_to_scalar_on_millions_of_keys() {
        let mut x = 0x1234_5678_9abc_def1u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut checked = 0u64;
        let mut positives = 0u64;
        for bits in [1u32, 4, 7, 10, 12, 16, 20, 24] {
            let mut b = FilterBuilder::new(bits);
            b.hashes = (0..20_000).map(|_| next()).collect();
            let f = BloomFilter::new(bytes::Bytes::from(b.finish())).expect("filter");
            let n = if bits == 10 { 2_000_000 } else { 250_000 };
            for _ in 0..n {
                let h = next();
                let scalar = f.may_contain_hash_scalar(h);
                assert_eq!(f.may_contain_hash_simd(h), scalar, "bits {bits} hash {h:#x}");
                positives += u64::from(scalar);
                checked += 1;
            }
        }
        assert!(checked >= 3_000_000 && positives > 0, "{checked} {positives}");
    }

    #[test]
    fn rejects_unknown_layouts() {
        assert!(BloomFilter::new(bytes::Bytes::from(vec![0u8; 10])).is_none());
        let mut v = vec![0u8; 66];
        v[65] = 9;
        v[64] = 6;
        assert!(BloomFilter::new(bytes::Bytes::from(v.clone())).is_none());
        v[65] = 1;
        assert!(BloomFilter::new(bytes::Bytes::from(v)).is_some());
    }
}
