//! XXPH3 64-bit hash: RocksDB's fork of the xxHash 0.7.2 *preview* XXH3_64bits
//! (default secret, seed 0), as used by RocksDB's `Hash64(data, n)` /
//! `GetSliceHash64` (e.g. for full/partitioned bloom filters).
//!
//! Ported to safe, scalar Rust from RocksDB 7.8.3 `util/xxph3.h`
//! (`XXPH3_64bits`). Note this is NOT the final XXH3 of xxHash 0.8: outputs
//! differ, and RocksDB additionally returns a non-zero hash for empty input.
//! The original xxHash BSD 2-Clause notice is retained below.

// xxHash - Extremely Fast Hash algorithm
// Copyright (C) 2012-2016, Yann Collet. (https://github.com/Cyan4973/xxHash)
//
// BSD 2-Clause License (http://www.opensource.org/licenses/bsd-license.php)
//
// Redistribution and use in source and binary forms, with or without
// modification, are permitted provided that the following conditions are
// met:
//
// * Redistributions of source code must retain the above copyright
// notice, this list of conditions and the following disclaimer.
// * Redistributions in binary form must reproduce the above
// copyright notice, this list of conditions and the following disclaimer
// in the documentation and/or other materials provided with the
// distribution.
//
// THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS
// "AS IS" AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT
// LIMITED TO, THE IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR
// A PARTICULAR PURPOSE ARE DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT
// OWNER OR CONTRIBUTORS BE LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL,
// SPECIAL, EXEMPLARY, OR CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT
// LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR SERVICES; LOSS OF USE,
// DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON ANY
// THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY, OR TORT
// (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE
// OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.

const PRIME32_1: u64 = 0x9E37_79B1;
const PRIME32_2: u64 = 0x85EB_CA77;
const PRIME32_3: u64 = 0xC2B2_AE3D;
const PRIME64_1: u64 = 0x9E37_79B1_85EB_CA87;
const PRIME64_2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const PRIME64_3: u64 = 0x1656_67B1_9E37_79F9;
const PRIME64_4: u64 = 0x85EB_CA77_C2B2_AE63;
const PRIME64_5: u64 = 0x27D4_EB2F_1656_67C5;

/// Bytes per stripe in the long-input loop.
const STRIPE_LEN: usize = 64;
/// Secret bytes consumed per stripe.
const SECRET_CONSUME_RATE: usize = 8;
/// Minimum secret size (offset base for the 129..=240 tail).
const SECRET_SIZE_MIN: usize = 136;
/// Largest input handled by the mid-size path.
const MIDSIZE_MAX: usize = 240;

/// The 192-byte default secret (`kSecret`).
const SECRET: [u8; 192] = [
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c, 0xde, 0xd4, 0x6d,
    0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f, 0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0,
    0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21, 0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0,
    0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c, 0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b,
    0x1b, 0x53, 0x2e, 0xa3, 0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac,
    0xd8, 0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d, 0x8a, 0x51,
    0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64, 0xea, 0xc5, 0xac, 0x83, 0x34,
    0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb, 0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49,
    0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e, 0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8,
    0xd1, 0x7a, 0xd0, 0x31, 0xce, 0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b,
    0x40, 0x7e,
];

/// Reads a little-endian `u32` at `p[i..i + 4]`.
#[inline]
fn r32(p: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([p[i], p[i + 1], p[i + 2], p[i + 3]])
}

/// Reads a little-endian `u64` at `p[i..i + 8]`.
#[inline]
fn r64(p: &[u8], i: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&p[i..i + 8]);
    u64::from_le_bytes(b)
}

/// 64x64 -> 128-bit multiply, folded by XOR of the two halves.
#[inline]
fn mul128_fold64(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

/// Final bit mixer of the preview XXH3.
#[inline]
fn avalanche(mut h: u64) -> u64 {
    h ^= h >> 37;
    h = h.wrapping_mul(PRIME64_3);
    h ^ (h >> 32)
}

/// Hashes 16 input bytes at `input[i..]` against secret bytes at `SECRET[s..]`.
#[inline]
fn mix16(input: &[u8], i: usize, s: usize) -> u64 {
    mul128_fold64(r64(input, i) ^ r64(&SECRET, s), r64(input, i + 8) ^ r64(&SECRET, s + 8))
}

/// Lengths 0..=16.
fn len_0to16(d: &[u8]) -> u64 {
    let len = d.len();
    if len > 8 {
        let lo = r64(d, 0) ^ r64(&SECRET, 0);
        let hi = r64(d, len - 8) ^ r64(&SECRET, 8);
        let acc = (len as u64).wrapping_add(lo.wrapping_add(hi)).wrapping_add(mul128_fold64(lo, hi));
        avalanche(acc)
    } else if len >= 4 {
        let input64 = u64::from(r32(d, 0)) | (u64::from(r32(d, len - 4)) << 32);
        let keyed = input64 ^ r64(&SECRET, 0);
        let mix = (len as u64).wrapping_add((keyed ^ (keyed >> 51)).wrapping_mul(PRIME32_1));
        avalanche((mix ^ (mix >> 47)).wrapping_mul(PRIME64_2))
    } else if len > 0 {
        let combined =
            u32::from(d[0]) | (u32::from(d[len >> 1]) << 8) | (u32::from(d[len - 1]) << 16) | ((len as u32) << 24);
        let keyed = u64::from(combined ^ r32(&SECRET, 0));
        avalanche(keyed.wrapping_mul(PRIME64_1))
    } else {
        // RocksDB modification: hash of the seed (0) instead of a zero result.
        mul128_fold64(r64(&SECRET, 0), PRIME64_2)
    }
}

/// Lengths 17..=128.
fn len_17to128(d: &[u8]) -> u64 {
    let len = d.len();
    let mut acc = (len as u64).wrapping_mul(PRIME64_1);
    if len > 32 {
        if len > 64 {
            if len > 96 {
                acc = acc.wrapping_add(mix16(d, 48, 96));
                acc = acc.wrapping_add(mix16(d, len - 64, 112));
            }
            acc = acc.wrapping_add(mix16(d, 32, 64));
            acc = acc.wrapping_add(mix16(d, len - 48, 80));
        }
        acc = acc.wrapping_add(mix16(d, 16, 32));
        acc = acc.wrapping_add(mix16(d, len - 32, 48));
    }
    acc = acc.wrapping_add(mix16(d, 0, 0));
    acc = acc.wrapping_add(mix16(d, len - 16, 16));
    avalanche(acc)
}

/// Lengths 129..=240.
fn len_129to240(d: &[u8]) -> u64 {
    let len = d.len();
    let mut acc = (len as u64).wrapping_mul(PRIME64_1);
    for i in 0..8 {
        acc = acc.wrapping_add(mix16(d, 16 * i, 16 * i));
    }
    acc = avalanche(acc);
    for i in 8..len / 16 {
        acc = acc.wrapping_add(mix16(d, 16 * i, 16 * (i - 8) + 3));
    }
    acc = acc.wrapping_add(mix16(d, len - 16, SECRET_SIZE_MIN - 17));
    avalanche(acc)
}

/// Accumulates one 64-byte stripe (`stripe`) with secret bytes at `SECRET[s..]`.
#[inline]
fn accumulate_512(acc: &mut [u64; 8], stripe: &[u8], s: usize) {
    for (i, a) in acc.iter_mut().enumerate() {
        let val = r64(stripe, 8 * i);
        let key = val ^ r64(&SECRET, s + 8 * i);
        *a = a.wrapping_add(val).wrapping_add((key & 0xFFFF_FFFF) * (key >> 32));
    }
}

/// Scrambles the accumulators with the last 64 secret bytes.
#[inline]
fn scramble(acc: &mut [u64; 8]) {
    let s = SECRET.len() - STRIPE_LEN;
    for (i, a) in acc.iter_mut().enumerate() {
        let x = (*a ^ (*a >> 47)) ^ r64(&SECRET, s + 8 * i);
        *a = x.wrapping_mul(PRIME32_1);
    }
}

/// Lengths > 240: striped long loop, scramble per block, last stripe, merge.
fn hash_long(d: &[u8]) -> u64 {
    let len = d.len();
    let mut acc = [PRIME32_3, PRIME64_1, PRIME64_2, PRIME64_3, PRIME64_4, PRIME32_2, PRIME64_5, PRIME32_1];
    let stripes_per_block = (SECRET.len() - STRIPE_LEN) / SECRET_CONSUME_RATE;
    let block_len = STRIPE_LEN * stripes_per_block;
    let nb_blocks = len / block_len;
    for b in 0..nb_blocks {
        for n in 0..stripes_per_block {
            let off = b * block_len + n * STRIPE_LEN;
            accumulate_512(&mut acc, &d[off..off + STRIPE_LEN], n * SECRET_CONSUME_RATE);
        }
        scramble(&mut acc);
    }
    // Last partial block.
    let base = nb_blocks * block_len;
    for n in 0..(len - base) / STRIPE_LEN {
        let off = base + n * STRIPE_LEN;
        accumulate_512(&mut acc, &d[off..off + STRIPE_LEN], n * SECRET_CONSUME_RATE);
    }
    // Last stripe (only when len is not a multiple of 64).
    if len & (STRIPE_LEN - 1) != 0 {
        accumulate_512(&mut acc, &d[len - STRIPE_LEN..], SECRET.len() - STRIPE_LEN - 7);
    }
    // Merge accumulators (secret offset 11).
    let mut r = (len as u64).wrapping_mul(PRIME64_1);
    for i in 0..4 {
        let s = 11 + 16 * i;
        let m = mul128_fold64(acc[2 * i] ^ r64(&SECRET, s), acc[2 * i + 1] ^ r64(&SECRET, s + 8));
        r = r.wrapping_add(m);
    }
    avalanche(r)
}

/// RocksDB's `Hash64(data, n)` (= `XXPH3_64bits`, seed 0, default secret).
///
/// This is `GetSliceHash64`, used e.g. by RocksDB's FastLocalBloom filters.
pub(super) fn xxph3_64(data: &[u8]) -> u64 {
    match data.len() {
        0..=16 => len_0to16(data),
        17..=128 => len_17to128(data),
        129..=MIDSIZE_MAX => len_129to240(data),
        _ => hash_long(data),
    }
}

#[cfg(test)]
mod tests {
    use super::xxph3_64;

    /// Values RocksDB 7.8.3's own `XXPH3_64bits` gave (its util/xxph3.h
    /// compiled and run) for bytes `(i * 31 + 7) % 251`, of every length
    /// class; and for strings.
    #[test]
    fn rocksdbs_own_values() {
        let pattern = |n: usize| (0..n).map(|i| ((i * 31 + 7) % 251) as u8).collect::<Vec<u8>>();
        for (len, want) in [
            (0, 0x5342c3010fe1dd04),
            (1, 0xb71d295c7865c7e9),
            (2, 0x44b93c64f7bbbc37),
            (3, 0xf3eb56c8cb2dfcd1),
            (4, 0xf1bda2f29bc8282d),
            (7, 0x37be2f5991815739),
            (8, 0x2d72be8e983e1f57),
            (9, 0xc22068ccc5a461fb),
            (15, 0xb85cffade67c7bbe),
            (16, 0xdd1696da6df20724),
            (17, 0x8175e429e56077c5),
            (31, 0xf6e66f56f2494a26),
            (64, 0x4e0bb7704be90054),
            (127, 0x80ae6e196abb3e18),
            (128, 0x383309a878e6c047),
            (129, 0x4a3e8a470a97bb46),
            (200, 0x9abf5dd4a2d2e627),
            (239, 0xbb190ad2229bd22b),
            (240, 0xb7685e3b88ecf9c3),
            (241, 0x559b20d4dafec177),
            (255, 0x0648ae9624ae5cc1),
            (256, 0x9e669a8f19a4370a),
            (300, 0x2855301885d1eb1c),
            (1000, 0xaf2678d70dd18610),
            (2048, 0xd6e604b9e711b9ab),
            (5000, 0x5c6913c2c5d1a6cb),
            (100000, 0xd465ab5a6e26e100),
        ] {
            assert_eq!(xxph3_64(&pattern(len)), want, "{len} bytes");
        }
        assert_eq!(xxph3_64(b""), 0x5342_c301_0fe1_dd04);
        assert_eq!(xxph3_64(b"a"), 0x88d8_68bf_6076_81c7);
        assert_eq!(xxph3_64(b"abc"), 0xd39e_eb71_bb53_42e8);
        assert_eq!(xxph3_64(b"key1"), 0x6568_09c4_f775_fbc3);
    }
}
