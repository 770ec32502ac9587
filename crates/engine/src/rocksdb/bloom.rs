//! RocksDB's full-filter bloom of format_version 5 ("FastLocalBloom",
//! util/bloom_impl.h and table/block_based/filter_policy.cc): every user
//! key hashed with RocksDB's `Hash64` (XXPH3, `xxph3.rs`), each hash
//! setting `num_probes` bits of one 64-byte cache line, then a 5-byte
//! trailer that says which filter it is. Bit for bit what RocksDB writes
//! for the same keys (checked against `ldb write_extern_sst
//! --bloom_bits`), so RocksDB's reads may skip a table the filter rules
//! out.

use super::xxph3::xxph3_64;

/// Builds a filter from keys added in table order.
pub(super) struct BloomBuilder {
    millibits_per_key: u64,
    hashes: Vec<u64>,
}

/// The number of probes RocksDB chooses for `millibits` per key
/// (FastLocalBloomImpl::ChooseNumProbes).
fn num_probes(millibits: u64) -> u8 {
    match millibits {
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
        50001.. => 24,
        m => ((m - 1) / 2000 - 1) as u8,
    }
}

impl BloomBuilder {
    /// A builder of `bits_per_key` bits per key (0: no filter).
    pub(super) fn new(bits_per_key: u32) -> Self {
        BloomBuilder { millibits_per_key: u64::from(bits_per_key) * 1000, hashes: Vec::new() }
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
        let raw = (self.hashes.len() as u64 * self.millibits_per_key).div_ceil(8000);
        let len = raw.div_ceil(64) * 64;
        let probes = num_probes(self.millibits_per_key);
        let mut data = vec![0u8; len as usize + 5];
        let lines = (len / 64) as u32;
        if lines > 0 {
            for h in &self.hashes {
                let (h1, mut h2) = (*h as u32, (*h >> 32) as u32);
                let line = ((u64::from(h1) * u64::from(lines)) >> 32) as usize * 64;
                for _ in 0..probes {
                    // A 9-bit position in the 512 bits of the line.
                    let bit = (h2 >> 23) as usize;
                    data[line + (bit >> 3)] |= 1 << (bit & 7);
                    h2 = h2.wrapping_mul(0x9e37_79b9);
                }
            }
        }
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
