//! Making a table's compression dictionary from its first data blocks.
//!
//! An LZ4 dictionary is plain bytes that every block may copy from as if
//! they came just before it, so the best one holds the strings that recur
//! across blocks (field names, common values, key prefixes) and not the ones
//! a block repeats within itself anyway. LZ4 has no trainer of its own; this
//! is a small form of zstd's "fast cover" (`ZDICT_trainFromBuffer_fastCover`):
//!
//! 1. count every 8-byte substring ("d-mer", by hash) of the sample;
//! 2. cut the sample into as many epochs as the dictionary has segments, and
//!    in each pick the segment of `SEGMENT` bytes whose distinct d-mers are
//!    most frequent in the whole sample, then forget those d-mers' counts so
//!    later segments bring something new;
//! 3. lay the segments out with the most valuable last (LZ4 offsets are the
//!    same two bytes near or far, but the end is what survives a trim).
//!
//! It costs two passes over the sample (1 MiB by default, copied once into
//! one buffer) and 1 MiB of counters while it runs.

/// Bytes of the substrings counted.
const DMER: usize = 8;
/// Bytes of each segment copied into the dictionary. Of 128, 256, 512,
/// 1024 and 2048, 512 to 2048 made the smallest tables of bench/browser/records.js's
/// orders (~480 bytes of JSON each) with a 16 KiB dictionary; 128 the
/// largest (3% more): whole runs of a record carry matches on.
const SEGMENT: usize = 512;
/// Counters are indexed by this many bits of a d-mer's hash at most (a
/// sample of 128 KiB or more)...
const HASH_BITS_MAX: u32 = 18;
/// ...and at least: about two counters a d-mer between the two
/// (`hash_bits`). Two tables of 2^18 counters (1 MiB) set up and swept
/// for the small sample of a small table cost more than the sampling: the
/// crash matrix, whose tables are a few KiB, ran 2.3 times as long with
/// dictionaries on as with them off.
const HASH_BITS_MIN: u32 = 10;
/// A dictionary is made only from a sample this many times its size: below
/// that, the bytes it costs in the table outweigh what it saves.
const MIN_SAMPLE_RATIO: usize = 8;
/// And from a sample of at most this many times its size: more is held
/// back for a small dictionary (the first MiB of a table), and sampling all
/// of it cost more than the dictionary saved (a 256-byte one in the crash
/// matrix, from tables of 64 KiB).
const MAX_SAMPLE_RATIO: usize = 100;

/// Bits of a d-mer's hash that index the counters of a sample of `n` d-mers.
fn hash_bits(n: usize) -> u32 {
    (usize::BITS - n.leading_zeros() + 1).clamp(HASH_BITS_MIN, HASH_BITS_MAX)
}

fn dmer_hash(b: &[u8], bits: u32) -> usize {
    let v = u64::from_le_bytes(b[..DMER].try_into().expect("DMER bytes"));
    (v.wrapping_mul(0x9E37_79B1_85EB_CA87) >> (64 - bits)) as usize
}

/// A dictionary of at most `max_bytes` from `blocks`, the uncompressed data
/// blocks sampled; empty when the sample is too small for one to pay or
/// holds nothing that recurs.
pub fn sample<'a>(blocks: impl Iterator<Item = &'a [u8]>, max_bytes: usize) -> Vec<u8> {
    // At most MAX_SAMPLE_RATIO times the dictionary's size, blocks spread
    // evenly over what is held (RocksDB trains on at most 100 times it).
    let blocks: Vec<&[u8]> = blocks.collect();
    let total: usize = blocks.iter().map(|b| b.len()).sum();
    let every = total.div_ceil(max_bytes.saturating_mul(MAX_SAMPLE_RATIO).max(1)).max(1);
    let mut data = Vec::with_capacity(total / every + 4096);
    for b in blocks.iter().step_by(every) {
        data.extend_from_slice(b);
    }
    // A dictionary smaller than a segment is one segment of its size.
    let segment = SEGMENT.min(max_bytes);
    if segment < 4 * DMER || data.len() < max_bytes.saturating_mul(MIN_SAMPLE_RATIO) {
        return Vec::new();
    }
    let n = data.len() - DMER + 1;
    let bits = hash_bits(n);
    // Hashed again where needed (counted, entering a window, leaving it):
    // a table of every position's hash would hold 4 bytes a sampled byte,
    // 4 MiB for a MiB, which a worker's wasm memory keeps once grown.
    let hash = |i: usize| dmer_hash(&data[i..], bits);
    // How often each d-mer occurs in the sample, less one: a d-mer seen
    // once is worth nothing in a dictionary.
    let mut freq = vec![0u16; 1 << bits];
    for i in 0..n {
        let h = hash(i);
        freq[h] = freq[h].saturating_add(1);
    }
    for f in freq.iter_mut() {
        *f = f.saturating_sub(1);
    }
    // Occurrences of each d-mer inside the window being scored, so that a
    // d-mer repeated within one segment counts once.
    let mut in_window = vec![0u16; 1 << bits];
    let segments = max_bytes / segment;
    let epoch = n / segments;
    let window = segment - DMER + 1;
    let mut picked: Vec<(u64, usize)> = Vec::with_capacity(segments);
    for e in 0..segments {
        let (start, end) = (e * epoch, ((e + 1) * epoch).min(n));
        if end - start < window {
            continue;
        }
        let (mut score, mut best) = (0u64, (0u64, start));
        for i in start..end {
            let h = hash(i);
            if in_window[h] == 0 {
                score += u64::from(freq[h]);
            }
            in_window[h] += 1;
            if i >= start + window {
                let out = hash(i - window);
                in_window[out] -= 1;
                if in_window[out] == 0 {
                    score -= u64::from(freq[out]);
                }
            }
            if i + 1 >= start + window && score > best.0 {
                best = (score, i + 1 - window);
            }
        }
        for i in end.saturating_sub(window).max(start)..end {
            in_window[hash(i)] = 0;
        }
        // Worth a place only if its d-mers recur twice each on average
        // (hash collisions alone give noise about one).
        if best.0 < 2 * window as u64 {
            continue;
        }
        for i in best.1..best.1 + window {
            freq[hash(i)] = 0;
        }
        picked.push(best);
    }
    crate::sort::sort_by_key(&mut picked, |p| p.0);
    let mut dict = Vec::with_capacity(picked.len() * segment);
    for (_, at) in picked {
        dict.extend_from_slice(&data[at..at + segment]);
    }
    dict
}

#[cfg(test)]
mod tests {
    use super::*;

    /// JSON-like records: the same field names, values from small sets, and
    /// a unique id.
    fn records(n: usize) -> Vec<u8> {
        let cities = ["Lisbon", "Osaka", "Toronto", "Nairobi", "Lima", "Oslo"];
        let mut out = Vec::new();
        for i in 0..n {
            let s = format!(
                r#"{{"id":"user-{i:08}","name":"Person {}","email":"p{i}@example.com","city":"{}","active":{},"plan":"{}"}}"#,
                i * 7919 % 100_003,
                cities[i % cities.len()],
                i % 3 == 0,
                ["free", "pro", "team"][i % 3],
            );
            out.extend_from_slice(s.as_bytes());
        }
        out
    }

    #[test]
    fn a_dictionary_holds_what_recurs_and_fits_its_size() {
        let data = records(4000);
        let blocks: Vec<&[u8]> = data.chunks(4096).collect();
        let dict = sample(blocks.iter().copied(), 4096);
        assert!(!dict.is_empty() && dict.len() <= 4096, "{}", dict.len());
        let text = String::from_utf8_lossy(&dict);
        for field in ["\"email\":\"", "@example.com", "\"plan\":\""] {
            assert!(text.contains(field), "{field} not in the dictionary");
        }
    }

    #[test]
    fn no_dictionary_from_a_small_sample_or_from_noise() {
        let data = records(100);
        assert!(sample(data.chunks(4096), 4096).is_empty(), "a sample under 8x the dictionary's size");
        // Bytes that never repeat a d-mer: nothing is worth a segment.
        let noise = crate::testutil::incompressible(0x1234_5678, 200_000);
        assert!(sample(noise.chunks(4096), 4096).is_empty());
        assert!(sample(records(4000).chunks(4096), 20).is_empty(), "a size under 4 d-mers");
        assert_eq!(sample(records(4000).chunks(4096), 300).len(), 300, "a dictionary of one segment");
    }

    #[test]
    fn counters_scale_with_the_sample_and_a_small_one_still_finds_what_recurs() {
        assert_eq!(hash_bits(1), HASH_BITS_MIN);
        assert_eq!(hash_bits(2048), 13);
        assert_eq!(hash_bits(100_000), 18);
        assert_eq!(hash_bits(1 << 20), HASH_BITS_MAX);
        // A few KiB, as a small table's (the crash matrix's: 256 bytes of
        // dictionary from a sample of 8x that and more).
        let data = records(24);
        assert!(data.len() >= 2048 && data.len() < 4096, "{}", data.len());
        let dict = sample(data.chunks(512), 256);
        assert_eq!(dict.len(), 256);
        let text = String::from_utf8_lossy(&dict);
        assert!(text.contains("@example.com"), "{text}");
    }

    #[test]
    fn a_large_sample_for_a_small_dictionary_is_thinned_evenly() {
        // Over 400 KiB held for a 1 KiB dictionary: every fifth block
        // sampled (under 100 KiB), which still finds the fields.
        let data = records(4000);
        assert!(data.len() > 400 << 10, "{}", data.len());
        let dict = sample(data.chunks(4096), 1024);
        assert_eq!(dict.len(), 1024);
        assert!(String::from_utf8_lossy(&dict).contains("@example.com"));
        // Below the cap, every block is sampled: the same dictionary from
        // the blocks as from their bytes in one piece.
        let small = records(200);
        assert_eq!(sample(small.chunks(512), 1024), sample(std::iter::once(&small[..]), 1024));
    }

    #[test]
    fn compressing_with_it_saves_bytes_across_blocks() {
        let data = records(8000);
        let blocks: Vec<&[u8]> = data.chunks(4096).collect();
        let dict = sample(blocks.iter().copied(), 16 << 10);
        let (mut plain, mut with) = (0, 0);
        for b in &blocks {
            plain += lz4_flex::block::compress(b).len();
            let c = lz4_flex::block::compress_with_dict(b, &dict);
            assert_eq!(lz4_flex::block::decompress_with_dict(&c, b.len(), &dict).unwrap(), *b);
            with += c.len();
        }
        assert!((with as f64) < plain as f64 * 0.88, "with a dictionary {with} bytes, without {plain}");
    }
}
