//! Iterators for JavaScript: entries leave wasm in batches, one boundary
//! crossing per batch rather than per entry, and no object per entry.
//!
//! ## Format
//! `fill` writes a batch of `n` entries into two buffers the iterator owns
//! and reuses, and their places into its header (three `u32` words at
//! `headerPtr()`, a fixed address):
//! ```text
//! header  := data_ptr: u32  data_len: u32  offsets_ptr: u32
//! data    := (key value){n}                   keys and values, back to back
//! offsets := u32{2n + 1}                      into data: key i is
//!            data[offsets[2i] .. offsets[2i+1]], value i is
//!            data[offsets[2i+1] .. offsets[2i+2]]; offsets[0] = 0
//! ```
//! JavaScript copies both out before the next call on the iterator (which
//! rewrites them); see `js/src/local/iterator.ts`.

use std::rc::Rc;

use silt_engine::{DbIterator, Error, Snapshot, TransactionIterator};
use wasm_bindgen::prelude::*;

use crate::error::{BindingError, Code, JsResult};

/// What an iterator scans: the database, or a transaction's view of it
/// (its snapshot with its own writes on top).
pub(crate) enum Cursor {
    Db(DbIterator),
    Transaction(TransactionIterator),
}

macro_rules! each {
    ($self:ident, $it:ident => $e:expr) => {
        match $self {
            Cursor::Db($it) => $e,
            Cursor::Transaction($it) => $e,
        }
    };
}

impl Cursor {
    fn valid(&self) -> bool {
        each!(self, it => it.valid())
    }
    fn key(&self) -> &[u8] {
        each!(self, it => it.key())
    }
    fn value(&self) -> &[u8] {
        each!(self, it => it.value())
    }
    fn status(&self) -> Result<(), Error> {
        each!(self, it => it.status())
    }
    fn next(&mut self) {
        each!(self, it => it.next())
    }
    fn prev(&mut self) {
        each!(self, it => it.prev())
    }
    fn seek(&mut self, target: &[u8]) {
        each!(self, it => it.seek(target))
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        each!(self, it => it.seek_for_prev(target))
    }
    fn seek_to_first(&mut self) {
        each!(self, it => it.seek_to_first())
    }
    fn seek_to_last(&mut self) {
        each!(self, it => it.seek_to_last())
    }
}

impl From<DbIterator> for Cursor {
    fn from(it: DbIterator) -> Self {
        Cursor::Db(it)
    }
}

impl From<TransactionIterator> for Cursor {
    fn from(it: TransactionIterator) -> Self {
        Cursor::Transaction(it)
    }
}

/// A positioned scan over a database, forward or in reverse.
#[wasm_bindgen]
pub struct Iterator {
    /// `None` once released: the SuperVersion it held (and so every
    /// memtable and table file it pinned) is let go at once.
    it: Option<Cursor>,
    /// Keeps the snapshot read at alive for as long as the scan.
    _snapshot: Option<Rc<Snapshot>>,
    reverse: bool,
    started: bool,
    data: Vec<u8>,
    offsets: Vec<u32>,
    header: Box<[u32; 3]>,
}

impl Iterator {
    pub(crate) fn new(it: impl Into<Cursor>, snapshot: Option<Rc<Snapshot>>, reverse: bool) -> Self {
        Iterator {
            it: Some(it.into()),
            _snapshot: snapshot,
            reverse,
            started: false,
            data: Vec::new(),
            offsets: Vec::new(),
            header: Box::new([0; 3]),
        }
    }

    fn live(&mut self) -> Result<&mut Cursor, BindingError> {
        self.it.as_mut().ok_or_else(|| {
            BindingError::new(Code::Released, "this iterator was released: make a new one (db.iterator()) to read on")
        })
    }

    /// Fills the next batch; returns its number of entries, 0 at the end.
    pub(crate) fn fill_inner(&mut self, max_entries: u32, max_bytes: u32) -> Result<u32, BindingError> {
        let reverse = self.reverse;
        let started = std::mem::replace(&mut self.started, true);
        let it = self.it.as_mut().ok_or_else(|| {
            BindingError::new(Code::Released, "this iterator was released: make a new one (db.iterator()) to read on")
        })?;
        if !started {
            if reverse {
                it.seek_to_last();
            } else {
                it.seek_to_first();
            }
        }
        self.data.clear();
        self.offsets.clear();
        let n =
            fill_batch(it, reverse, max_entries.max(1) as usize, max_bytes as usize, &mut self.data, &mut self.offsets);
        if !it.valid() {
            it.status()?;
        }
        // Addresses in wasm memory (32-bit there; the header is only read
        // by JavaScript).
        *self.header =
            [self.data.as_ptr() as usize as u32, self.data.len() as u32, self.offsets.as_ptr() as usize as u32];
        Ok(n as u32)
    }

    /// Positions at the first key >= `target` (forward) or the last key <=
    /// `target` (reverse), within the bounds; the next batch starts there.
    pub(crate) fn seek_inner(&mut self, target: &[u8]) -> Result<(), BindingError> {
        let reverse = self.reverse;
        self.started = true;
        let it = self.live()?;
        if reverse {
            it.seek_for_prev(target);
        } else {
            it.seek(target);
        }
        if !it.valid() {
            it.status()?;
        }
        Ok(())
    }

    /// The last batch: its data and offsets (see the module's format).
    #[cfg(test)]
    pub(crate) fn batch(&self) -> (&[u8], &[u32]) {
        (&self.data, &self.offsets)
    }
}

/// Appends entries from the iterator's position to `data` and `offsets`
/// until it is exhausted or the batch holds `max_entries` or at least
/// `max_bytes` (always at least one entry when one is there); returns how
/// many.
pub(crate) fn fill_batch(
    it: &mut Cursor,
    reverse: bool,
    max_entries: usize,
    max_bytes: usize,
    data: &mut Vec<u8>,
    offsets: &mut Vec<u32>,
) -> usize {
    offsets.push(data.len() as u32);
    let mut n = 0;
    while it.valid() && n < max_entries && (n == 0 || data.len() < max_bytes) {
        data.extend_from_slice(it.key());
        offsets.push(data.len() as u32);
        data.extend_from_slice(it.value());
        offsets.push(data.len() as u32);
        n += 1;
        if reverse {
            it.prev();
        } else {
            it.next();
        }
    }
    n
}

#[wasm_bindgen]
impl Iterator {
    /// Reads the next entries into the iterator's buffers (see the
    /// module's format); returns how many, 0 at the end. A read error is
    /// thrown; a later `seek` may go on.
    pub fn fill(&mut self, max_entries: u32, max_bytes: u32) -> JsResult<u32> {
        Ok(self.fill_inner(max_entries, max_bytes)?)
    }

    /// Where the header (data pointer, data length, offsets pointer) of the
    /// last batch is in wasm memory; the same for the iterator's life.
    #[wasm_bindgen(js_name = headerPtr)]
    pub fn header_ptr(&self) -> u32 {
        self.header.as_ptr() as usize as u32
    }

    /// Repositions the iterator at `target` (see `seek_inner`).
    pub fn seek(&mut self, target: &[u8]) -> JsResult<()> {
        Ok(self.seek_inner(target)?)
    }

    /// Lets go of everything the iterator holds. Releasing twice does
    /// nothing; `fill` and `seek` afterwards throw `Released`.
    pub fn release(&mut self) {
        self.it = None;
        self._snapshot = None;
        self.data = Vec::new();
        self.offsets = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use silt_engine::fs::MemFs;
    use silt_engine::{Db, Options, ReadOptions, WriteOptions};

    use super::*;

    type Entries = Vec<(Vec<u8>, Vec<u8>)>;

    fn entries(it: &Iterator, n: u32) -> Entries {
        let (data, offsets) = it.batch();
        assert_eq!(offsets.len(), 2 * n as usize + 1);
        assert_eq!(offsets[0], 0);
        assert_eq!(*offsets.last().unwrap() as usize, data.len());
        (0..n as usize)
            .map(|i| {
                let at = |j: usize| offsets[j] as usize;
                (data[at(2 * i)..at(2 * i + 1)].to_vec(), data[at(2 * i + 1)..at(2 * i + 2)].to_vec())
            })
            .collect()
    }

    fn db_with(n: u32) -> Db {
        let db = Db::open(Arc::new(MemFs::new()), "db", Options::default()).unwrap();
        for i in 0..n {
            db.put(&WriteOptions::default(), format!("k{i:03}").as_bytes(), format!("v{i}").as_bytes()).unwrap();
        }
        db
    }

    fn drain_from(it: &mut Iterator, max_entries: u32, max_bytes: u32) -> Entries {
        let mut all = Vec::new();
        loop {
            let n = it.fill_inner(max_entries, max_bytes).unwrap();
            if n == 0 {
                break;
            }
            assert!(n <= max_entries.max(1));
            all.extend(entries(it, n));
        }
        all
    }

    fn drain(db: &Db, opts: &ReadOptions, reverse: bool, max_entries: u32, max_bytes: u32) -> Entries {
        let mut it = Iterator::new(db.iter(opts).unwrap(), None, reverse);
        drain_from(&mut it, max_entries, max_bytes)
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
    fn seek_repositions_a_live_iterator_in_its_direction_and_bounds() {
        let db = db_with(50);
        let opts = ReadOptions { upper_bound: Some(b"k040".to_vec()), ..ReadOptions::default() };
        let mut it = Iterator::new(db.iter(&opts).unwrap(), None, false);
        it.seek_inner(b"k010").unwrap();
        assert_eq!(it.fill_inner(2, 1 << 20).unwrap(), 2);
        assert_eq!(entries(&it, 2)[0].0, b"k010");
        // Back to an earlier key, then run to the end of the bounds.
        it.seek_inner(b"k0055").unwrap();
        let rest = drain_from(&mut it, 8, 1 << 20);
        assert_eq!(rest.first().unwrap().0, b"k006");
        assert_eq!(rest.len(), 34);
        // An exhausted iterator seeks again.
        it.seek_inner(b"k039").unwrap();
        assert_eq!(drain_from(&mut it, 8, 1 << 20).len(), 1);
        it.seek_inner(b"k040").unwrap();
        assert_eq!(it.fill_inner(8, 1 << 20).unwrap(), 0);
        // Reverse: the last key <= the target.
        let mut it = Iterator::new(db.iter(&ReadOptions::default()).unwrap(), None, true);
        it.seek_inner(b"k0205").unwrap();
        assert_eq!(it.fill_inner(3, 1 << 20).unwrap(), 3);
        let keys: Vec<_> = entries(&it, 3).into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, [b"k020", b"k019", b"k018"].map(|k| k.to_vec()));
    }

    #[test]
    fn a_released_iterator_refuses_to_go_on() {
        let db = db_with(3);
        let mut it = Iterator::new(db.iter(&ReadOptions::default()).unwrap(), None, false);
        it.release();
        assert_eq!(it.fill_inner(10, 10).unwrap_err().code, "Released");
        assert_eq!(it.seek_inner(b"k").unwrap_err().code, "Released");
        it.release();
    }

    #[test]
    fn a_byte_budget_still_returns_one_large_entry() {
        let db = Db::open(Arc::new(MemFs::new()), "db", Options::default()).unwrap();
        db.put(&WriteOptions::default(), b"big", &[7u8; 10_000]).unwrap();
        db.put(&WriteOptions::default(), b"big2", &[8u8; 10_000]).unwrap();
        let mut it = Iterator::new(db.iter(&ReadOptions::default()).unwrap(), None, false);
        assert_eq!(it.fill_inner(10, 16).unwrap(), 1);
        assert_eq!(entries(&it, 1)[0].1.len(), 10_000);
        assert_eq!(it.fill_inner(10, 16).unwrap(), 1);
        assert_eq!(it.fill_inner(10, 16).unwrap(), 0);
    }
}
