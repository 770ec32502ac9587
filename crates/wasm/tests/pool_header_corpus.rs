//! The OPFS pool's file header decoder (`pool::header`) against its corpus:
//! valid headers, every single-bit flip of each (the checksum must refuse
//! them all: a flipped header reads as a free file, never as another file's
//! name), and seeded random mutations (whatever decodes must round-trip).
//! The same decoder has a `cargo fuzz` target, `fuzz/fuzz_targets/pool_header.rs`.

use silt_wasm::pool::header::{Header, ENCODED_LEN, MAX_PATH_LEN};

fn valid() -> Vec<Header> {
    let mut out = vec![Header { path: None, generation: 0 }, Header { path: None, generation: u64::MAX }];
    for (i, p) in
        ["db/000001.log", "db/MANIFEST-000002", "db/000123.sst", "d/é", &"x".repeat(MAX_PATH_LEN)].iter().enumerate()
    {
        out.push(Header { path: Some(p.to_string()), generation: i as u64 * 0x0101_0101_0101 + 1 });
    }
    out
}

/// splitmix64, for seeded mutations without a dependency.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[test]
fn every_bit_flip_of_a_header_is_refused() {
    let mut flips = 0u64;
    for h in valid() {
        let bytes = h.encode();
        assert_eq!(Header::decode(&bytes).as_ref(), Some(&h));
        for bit in 0..ENCODED_LEN * 8 {
            let mut b = bytes;
            b[bit / 8] ^= 1 << (bit % 8);
            assert_eq!(Header::decode(&b), None, "header {h:?} with bit {bit} flipped decoded");
            flips += 1;
        }
    }
    eprintln!("{{\"pool_header_bit_flips\":{flips}}}");
}

#[test]
fn random_mutations_decode_to_nothing_or_round_trip() {
    let mut state = 0x5117_u64;
    let mut runs = 0u64;
    for h in valid() {
        let bytes = h.encode().to_vec();
        for _ in 0..20_000 {
            let mut b = bytes.clone();
            match next(&mut state) % 4 {
                0 => b.truncate((next(&mut state) % (ENCODED_LEN as u64 + 1)) as usize),
                1 => {
                    for _ in 0..1 + next(&mut state) % 8 {
                        let i = (next(&mut state) % b.len() as u64) as usize;
                        b[i] = next(&mut state) as u8;
                    }
                }
                2 => b.extend((0..next(&mut state) % 64).map(|_| next(&mut state) as u8)),
                _ => b = (0..next(&mut state) % 700).map(|_| next(&mut state) as u8).collect(),
            }
            if let Some(d) = Header::decode(&b) {
                assert_eq!(Header::decode(&d.encode()), Some(d));
            }
            runs += 1;
        }
    }
    eprintln!("{{\"pool_header_mutations\":{runs}}}");
}
