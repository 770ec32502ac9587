//! Iterators for JavaScript: entries leave wasm in batches, one boundary
//! crossing per batch rather than per entry.
//!
//! ## Format
//! A batch is a byte buffer JavaScript owns (a copy, so it survives any
//! later change of wasm memory):
//! ```text
//! batch := entry+
//! entry := klen:u32le vlen:u32le key value
//! ```

use std::rc::Rc;

use silt_engine::{DbIterator, Snapshot};
use wasm_bindgen::prelude::*;

use crate::error::{BindingError, Code, JsResult};

/// A positioned scan over a database, forward or in reverse.
#[wasm_bindgen]
pub struct Iterator {
    /// `None` once exhausted or released: the SuperVersion it held (and so
    /// every memtable and table file it pinned) is let go at once.
    it: Option<DbIterator>,
    /// Keeps the snapshot read at alive for as long as the scan.
    _snapshot: Option<Rc<Snapshot>>,
    reverse: bool,
    started: bool,
    released: bool,
}

impl Iterator {
    pub(crate) fn new(it: DbIterator, snapshot: Option<Rc<Snapshot>>, reverse: bool) -> Self {
        Iterator { it: Some(it), _snapshot: snapshot, reverse, started: false, released: false }
    }

    /// The next batch, or `None` at the end.
    pub(crate) fn next_batch_inner(
        &mut self,
        max_entries: u32,
        max_bytes: u32,
    ) -> Result<Option<Vec<u8>>, BindingError> {
        if self.released {
            return Err(BindingError::new(Code::Released, "this iterator was released"));
        }
        let Some(it) = self.it.as_mut() else {
            return Ok(None);
        };
        if !self.started {
            self.started = true;
            if self.reverse {
                it.seek_to_last();
            } else {
                it.seek_to_first();
            }
        }
        let batch = fill_batch(it, self.reverse, max_entries.max(1) as usize, max_bytes as usize);
        if !it.valid() {
            let status = it.status();
            self.it = None;
            status?;
        }
        Ok((!batch.is_empty()).then_some(batch))
    }
}

/// Appends entries from the iterator's position until it is exhausted or
/// the batch holds `max_entries` or at least `max_bytes` (always at least
/// one entry when one is there).
pub(crate) fn fill_batch(it: &mut DbIterator, reverse: bool, max_entries: usize, max_bytes: usize) -> Vec<u8> {
    // Room for a typical batch up front: growing from empty copied the
    // batch several times over.
    let mut out = Vec::with_capacity(max_bytes.min(max_entries.saturating_mul(128)).min(64 << 10));
    let mut n = 0;
    while it.valid() && n < max_entries && (n == 0 || out.len() < max_bytes) {
        let (k, v) = (it.key(), it.value());
        out.extend_from_slice(&(k.len() as u32).to_le_bytes());
        out.extend_from_slice(&(v.len() as u32).to_le_bytes());
        out.extend_from_slice(k);
        out.extend_from_slice(v);
        n += 1;
        if reverse {
            it.prev();
        } else {
            it.next();
        }
    }
    out
}

#[wasm_bindgen]
impl Iterator {
    /// The next entries (see the module's format), or `undefined` at the
    /// end. A read error is thrown, after which the iterator is at its end.
    #[wasm_bindgen(js_name = nextBatch)]
    pub fn next_batch(&mut self, max_entries: u32, max_bytes: u32) -> JsResult<Option<Vec<u8>>> {
        Ok(self.next_batch_inner(max_entries, max_bytes)?)
    }

    /// Lets go of everything the iterator holds. Releasing twice does
    /// nothing; `nextBatch` afterwards throws `Released`.
    pub fn release(&mut self) {
        self.released = true;
        self.it = None;
        self._snapshot = None;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use silt_engine::fs::MemFs;
    use silt_engine::{Db, Options, ReadOptions, WriteOptions};

    use super::*;

    fn entries(batch: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        let mut at = 0;
        let word = |at: usize| u32::from_le_bytes(batch[at..at + 4].try_into().unwrap()) as usize;
        while at < batch.len() {
            let (k, v) = (word(at), word(at + 4));
            at += 8;
            out.push((batch[at..at + k].to_vec(), batch[at + k..at + k + v].to_vec()));
            at += k + v;
        }
        out
    }

    fn db_with(n: u32) -> Db {
        let db = Db::open(Arc::new(MemFs::new()), "db", Options::default()).unwrap();
        for i in 0..n {
            db.put(&WriteOptions::default(), format!("k{i:03}").as_bytes(), format!("v{i}").as_bytes()).unwrap();
        }
        db
    }

    fn drain(db: &Db, opts: &ReadOptions, reverse: bool, max_entries: u32, max_bytes: u32) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut it = Iterator::new(db.iter(opts).unwrap(), None, reverse);
        let mut all = Vec::new();
        while let Some(batch) = it.next_batch_inner(max_entries, max_bytes).unwrap() {
            let got = entries(&batch);
            assert!(!got.is_empty() && got.len() <= max_entries.max(1) as usize);
            all.extend(got);
        }
        assert!(it.it.is_none(), "an exhausted iterator lets go of its SuperVersion");
        all
    }

    #[test]
    fn batches_cover_every_entry_once_in_both_directions() {
        let db = db_with(100);
        let forward = drain(&db, &ReadOptions::default(), false, 7, 1 << 20);
        assert_eq!(forward.len(), 100);
        assert_eq!(forward[0], (b"k000".to_vec(), b"v0".to_vec()));
        assert_eq!(forward[99].0, b"k099");
        let mut backward = drain(&db, &ReadOptions::default(), true, 1000, 30);
        backward.reverse();
        assert_eq!(backward, forward);
    }

    #[test]
    fn bounds_limit_the_scan() {
        let db = db_with(20);
        let opts = ReadOptions {
            lower_bound: Some(b"k005".to_vec()),
            upper_bound: Some(b"k010".to_vec()),
            ..ReadOptions::default()
        };
        let keys: Vec<_> = drain(&db, &opts, false, 2, 1 << 20).into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, [b"k005", b"k006", b"k007", b"k008", b"k009"].map(|k| k.to_vec()));
        let rev: Vec<_> = drain(&db, &opts, true, 2, 1 << 20).into_iter().map(|(k, _)| k).collect();
        assert_eq!(rev.first().map(Vec::as_slice), Some(&b"k009"[..]));
        assert_eq!(rev.len(), 5);
    }

    #[test]
    fn a_released_iterator_refuses_to_go_on() {
        let db = db_with(3);
        let mut it = Iterator::new(db.iter(&ReadOptions::default()).unwrap(), None, false);
        it.release();
        assert_eq!(it.next_batch_inner(10, 10).unwrap_err().code, "Released");
    }

    #[test]
    fn a_byte_budget_still_returns_one_large_entry() {
        let db = Db::open(Arc::new(MemFs::new()), "db", Options::default()).unwrap();
        db.put(&WriteOptions::default(), b"big", &[7u8; 10_000]).unwrap();
        let all = drain(&db, &ReadOptions::default(), false, 10, 16);
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].1.len(), 10_000);
    }
}
