//! Helpers shared by the integration tests (`mod common;` in each).

use std::collections::BTreeMap;

use silt_engine::{Db, Options, ReadOptions};

/// Options with small buffers, blocks, files and levels: flushes and
/// compactions across levels within a few thousand writes.
#[allow(dead_code)] // not every test binary uses every helper
pub fn small_options() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        block_size: 512,
        target_file_size_base: 64 << 10,
        max_bytes_for_level_base: 64 << 10,
        ..Options::default()
    }
}

/// A database's contents, or an oracle's.
pub type State = BTreeMap<Vec<u8>, Vec<u8>>;

/// Every key and value a full forward scan yields (checking its status).
#[allow(dead_code)] // not every test binary uses every helper
pub fn read_all(db: &Db) -> State {
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut out = State::new();
    while it.valid() {
        out.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().unwrap();
    out
}

/// `len` bytes LZ4 cannot shrink (xorshift of `seed`), so table sizes follow
/// the data.
#[allow(dead_code)] // not every test binary uses every helper
pub fn incompressible(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// The chunks of an export stream in the tables form, (kind, payload)
/// each, after its 16-byte header (`docs/format.md`, "Export stream");
/// `None` if the framing does not parse.
#[allow(dead_code)] // not every test binary uses every helper
pub fn export_chunks(stream: &[u8]) -> Option<Vec<(u8, Vec<u8>)>> {
    let mut out = Vec::new();
    let mut at = 16;
    while at < stream.len() {
        let len = u32::from_le_bytes(stream.get(at + 1..at + 5)?.try_into().ok()?) as usize;
        out.push((stream[at], stream.get(at + 9..at + 9 + len)?.to_vec()));
        at += 9 + len;
    }
    Some(out)
}

/// A tables-form export stream of `header`'s first 16 bytes and `chunks`,
/// with every chunk's check (XXH3, seeded with its kind) computed anew.
#[allow(dead_code)] // not every test binary uses every helper
pub fn export_stream_of(header: &[u8], chunks: &[(u8, Vec<u8>)]) -> Vec<u8> {
    let mut out = header[..16].to_vec();
    for (kind, payload) in chunks {
        out.push(*kind);
        out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        let check = xxhash_rust::xxh3::xxh3_64_with_seed(payload, u64::from(*kind)) as u32;
        out.extend_from_slice(&check.to_le_bytes());
        out.extend_from_slice(payload);
    }
    out
}
