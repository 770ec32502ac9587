//! The FastLocalBloom probe with WebAssembly SIMD128: all probes of a key
//! at once instead of one after another.
//!
//! Probe `i` of a key tests bit `(p * φ^i) >> 23` of its 64-byte line
//! (`p` the upper 32 bits of the hash, φ = 0x9e3779b9, mod 2^32). Here
//! four `i32x4_mul`s give 16 probe values, shifts turn them into byte
//! indices (0..63) and bit numbers (0..7) narrowed into one `i8x16`, four
//! `i8x16_swizzle`s gather the probed bytes from the line's four 16-byte
//! quarters (an index outside a quarter yields 0), and one compare checks
//! every probed bit. Lanes past `num_probes` are masked out. Answers are
//! bit-identical to the scalar loop (tested in wasm against it).

use core::arch::wasm32::*;

const PHI: u32 = 0x9e37_79b9;

const fn phi_pow(n: u32) -> u32 {
    let mut x = 1u32;
    let mut i = 0;
    while i < n {
        x = x.wrapping_mul(PHI);
        i += 1;
    }
    x
}

const POWERS: [[u32; 4]; 4] = {
    let mut out = [[0u32; 4]; 4];
    let mut i = 0;
    while i < 16 {
        out[i / 4][i % 4] = phi_pow(i as u32);
        i += 1;
    }
    out
};

/// Whether every probed bit of `line` (64 bytes) is set, for up to 16
/// probes. REQUIRES: `line.len() == 64`, `1 <= probes <= 16`.
#[inline]
pub fn may_contain(line: &[u8], p: u32, probes: u8) -> bool {
    debug_assert!(line.len() == 64 && (1..=16).contains(&probes));
    // SAFETY: `line` is 64 bytes, so each 16-byte unaligned load is in bounds.
    let q = unsafe {
        [
            v128_load(line.as_ptr() as *const v128),
            v128_load(line.as_ptr().add(16) as *const v128),
            v128_load(line.as_ptr().add(32) as *const v128),
            v128_load(line.as_ptr().add(48) as *const v128),
        ]
    };
    if probes <= 8 {
        return may_contain_8(&q, p, probes);
    }
    let ps = u32x4_splat(p);
    let bits = |pw: [u32; 4]| u32x4_shr(i32x4_mul(ps, u32x4(pw[0], pw[1], pw[2], pw[3])), 23);
    let (b0, b1, b2, b3) = (bits(POWERS[0]), bits(POWERS[1]), bits(POWERS[2]), bits(POWERS[3]));
    // 9-bit positions -> byte index (0..63) and bit number (0..7), as bytes.
    let narrow =
        |a: v128, b: v128, c: v128, d: v128| u8x16_narrow_i16x8(u16x8_narrow_i32x4(a, b), u16x8_narrow_i32x4(c, d));
    let bytes = narrow(u32x4_shr(b0, 3), u32x4_shr(b1, 3), u32x4_shr(b2, 3), u32x4_shr(b3, 3));
    let seven = u32x4_splat(7);
    let bitno = narrow(v128_and(b0, seven), v128_and(b1, seven), v128_and(b2, seven), v128_and(b3, seven));
    // Gather the probed bytes from the four quarters of the line.
    let mut gathered = i8x16_swizzle(q[0], bytes);
    gathered = v128_or(gathered, i8x16_swizzle(q[1], i8x16_sub(bytes, i8x16_splat(16))));
    gathered = v128_or(gathered, i8x16_swizzle(q[2], i8x16_sub(bytes, i8x16_splat(32))));
    gathered = v128_or(gathered, i8x16_swizzle(q[3], i8x16_sub(bytes, i8x16_splat(48))));
    // One bit per lane, and none for lanes past the probe count.
    let onehot = i8x16_swizzle(u8x16(1, 2, 4, 8, 16, 32, 64, 128, 0, 0, 0, 0, 0, 0, 0, 0), bitno);
    let active = u8x16_lt(u8x16(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), u8x16_splat(probes));
    let mask = v128_and(onehot, active);
    i8x16_all_true(i8x16_eq(v128_and(gathered, mask), mask))
}

/// Up to 8 probes: half the multiplies and narrowing of the general case.
#[inline]
fn may_contain_8(q: &[v128; 4], p: u32, probes: u8) -> bool {
    let ps = u32x4_splat(p);
    let b0 = u32x4_shr(i32x4_mul(ps, u32x4(POWERS[0][0], POWERS[0][1], POWERS[0][2], POWERS[0][3])), 23);
    let b1 = u32x4_shr(i32x4_mul(ps, u32x4(POWERS[1][0], POWERS[1][1], POWERS[1][2], POWERS[1][3])), 23);
    // Eight 16-bit positions, then bytes (the upper eight lanes repeat).
    let pos = u16x8_narrow_i32x4(b0, b1);
    let bytes = u8x16_narrow_i16x8(u16x8_shr(pos, 3), u16x8_shr(pos, 3));
    let bitno = u8x16_narrow_i16x8(v128_and(pos, u16x8_splat(7)), v128_and(pos, u16x8_splat(7)));
    let mut gathered = i8x16_swizzle(q[0], bytes);
    gathered = v128_or(gathered, i8x16_swizzle(q[1], i8x16_sub(bytes, i8x16_splat(16))));
    gathered = v128_or(gathered, i8x16_swizzle(q[2], i8x16_sub(bytes, i8x16_splat(32))));
    gathered = v128_or(gathered, i8x16_swizzle(q[3], i8x16_sub(bytes, i8x16_splat(48))));
    let onehot = i8x16_swizzle(u8x16(1, 2, 4, 8, 16, 32, 64, 128, 0, 0, 0, 0, 0, 0, 0, 0), bitno);
    let lane = u8x16(0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7);
    let mask = v128_and(onehot, u8x16_lt(lane, u8x16_splat(probes)));
    i8x16_all_true(i8x16_eq(v128_and(gathered, mask), mask))
}
