//! RocksDB's full-filter bloom of format_version 5 ("FastLocalBloom",
//! util/bloom_impl.h and table/block_based/filter_policy.cc): every user
//! key hashed with RocksDB's `Hash64` (XXPH3, `xxph3.rs`), each hash
//! setting `num_probes` bits of one 64-byte cache line, then a 5-byte
//! trailer that says which filter it is. Bit for bit what RocksDB writes
//! for the same keys (checked against `ldb write_extern_sst
//! --bloom_bits`), so RocksDB's reads may skip a table the filter rules
//! out.

use super::xxph3::xxph3_64;
use crate::sst::filter::{num_probes, set_bits};

/// Builds a filter from keys added in table order.
pub(super) struct BloomBuilder {
    millibits_per_key: u32,
    hashes: Vec<u64>,
}

impl BloomBuilder {
    /// A builder of `bits_per_key` bits per key (0: no filter).
    pub(super) fn new(bits_per_key: u32) -> Self {
        BloomBuilder { millibits_per_key: bits_per_key.saturating_mul(1000), hashes: Vec::new() }
    }

    pub(super) fn add(&mut self, user_key: &[u8]) {
        if self.millibits_per_key == 0 {
            return;
        }
        let h = xxph3_64(user_key);
        // As RocksDB: a hash equal to the one before is added once.
        if self.hashes.last() != Some(&h) {
            self.hashes.push(h);
        }
    }

    /// The filter block, or `None` when there is no filter.
    pub(super) fn finish(self) -> Option<Vec<u8>> {
        if self.millibits_per_key == 0 {
            return None;
        }
        // Bytes the keys' bits take, rounded up to whole cache lines
        // (FastLocalBloomBitsBuilder::CalculateSpace).
        let raw = (self.hashes.len() as u64 * u64::from(self.millibits_per_key)).div_ceil(8000);
        let len = raw.div_ceil(64) * 64;
        let probes = num_probes(self.millibits_per_key);
        let mut data = vec![0u8; len as usize + 5];
        set_bits(&self.hashes, probes, &mut data[..len as usize]);
        // The trailer: -1 (a newer Bloom), 0 (FastLocalBloom), the probes
        // (64-byte cache lines: the top bits 0), two bytes reserved.
        let at = len as usize;
        data[at] = 0xff;
        data[at + 1] = 0;
        data[at + 2] = probes;
        Some(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn its_size_and_trailer_are_rocksdbs() {
        // 3,000 keys at 10 bits per key: 3,750 bytes, rounded up to 3,776,
        // and the trailer (a RocksDB table's filter block: 3,781 bytes).
        let mut b = BloomBuilder::new(10);
        for i in 0..3000u32 {
            b.add(format!("key{i:06}").as_bytes());
        }
        let f = b.finish().unwrap();
        assert_eq!(f.len(), 3781);
        assert_eq!(&f[3776..], &[0xff, 0, 6, 0, 0]);
        assert_eq!(num_probes(10_000), 6);
        assert!(BloomBuilder::new(0).finish().is_none());
    }
}
