//! Helpers shared by the integration tests (`mod common;` in each).

use std::collections::BTreeMap;

use silt_engine::{Db, ReadOptions};

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
