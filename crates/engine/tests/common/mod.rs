//! Helpers shared by the integration tests (`mod common;` in each).

use std::collections::BTreeMap;

use silt_engine::{Db, ReadOptions};

/// A database's contents, or an oracle's.
pub type State = BTreeMap<Vec<u8>, Vec<u8>>;

/// Every key and value a full forward scan yields (checking its status).
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
