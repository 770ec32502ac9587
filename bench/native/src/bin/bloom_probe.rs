//! Microbenchmark of the bloom filter probe: scalar against SIMD128, for
//! single keys and for batches of 32. Meant for wasm (SIMD128 exists only
//! there); natively it reports the scalar probe alone.
//!
//! ```text
//! node bench/run/bloom.mjs   # builds this for wasm32-wasip1 with SIMD128 and runs it in Node
//! ```

use std::hint::black_box;
use std::time::Instant;

use silt_engine::bloom::{BloomFilter, FilterBuilder};

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// Probes/s of `probe` over `hashes`, best of three rounds.
fn rate(hashes: &[u64], mut probe: impl FnMut(&[u64]) -> u64) -> f64 {
    let mut best = 0f64;
    for _ in 0..3 {
        let t = Instant::now();
        let hits = probe(hashes);
        let secs = t.elapsed().as_secs_f64();
        black_box(hits);
        best = best.max(hashes.len() as f64 / secs);
    }
    best
}

fn main() {
    let mut x = 0x5eed_u64;
    let mut b = FilterBuilder::new(10);
    for i in 0..1_000_000u64 {
        b.add_key(&i.to_le_bytes());
    }
    let filter = BloomFilter::new(b.finish().into()).expect("filter");
    // Half present keys, half absent: both the early-exit and full paths.
    let hashes: Vec<u64> = (0..4_000_000u64)
        .map(|i| {
            if i % 2 == 0 {
                silt_engine::bloom::key_hash(&(xorshift(&mut x) % 1_000_000).to_le_bytes())
            } else {
                xorshift(&mut x)
            }
        })
        .collect();
    let single_scalar = rate(&hashes, |hs| hs.iter().filter(|&&h| filter.may_contain_hash_scalar(h)).count() as u64);
    let batch_scalar = rate(&hashes, |hs| {
        let mut n = 0u64;
        let mut out = [false; 32];
        for chunk in hs.chunks(32) {
            for (o, &h) in out.iter_mut().zip(chunk) {
                *o = filter.may_contain_hash_scalar(h);
            }
            n += out.iter().filter(|&&m| m).count() as u64;
        }
        n
    });
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    let (single_simd, batch_simd) = (
        rate(&hashes, |hs| hs.iter().filter(|&&h| filter.may_contain_hash_simd(h)).count() as u64),
        rate(&hashes, |hs| {
            let mut n = 0u64;
            let mut out = [false; 32];
            for chunk in hs.chunks(32) {
                filter.may_contain_batch(chunk, &mut out[..chunk.len()]);
                n += out.iter().filter(|&&m| m).count() as u64;
            }
            n
        }),
    );
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    let (single_simd, batch_simd) = (0.0, 0.0);
    let simd = cfg!(all(target_arch = "wasm32", target_feature = "simd128"));
    println!(
        "{{\"benchmark\":\"bloom_probe\",\"target\":\"{}\",\"simd128\":{simd},\"keys_in_filter\":1000000,\"bits_per_key\":10,\"lookups\":{},\"single_scalar_per_sec\":{single_scalar:.0},\"single_simd_per_sec\":{single_simd:.0},\"batch32_scalar_per_sec\":{batch_scalar:.0},\"batch32_simd_per_sec\":{batch_simd:.0}}}",
        std::env::consts::ARCH,
        hashes.len()
    );
}
