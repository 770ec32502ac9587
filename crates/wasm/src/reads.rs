//! Reads as JavaScript makes them: one call into wasm per
//! `get`, `getPinned` or `multiGet`, the request and the answer passed through the
//! database's exchange buffer (`exchange.rs`), the values left pinned where
//! they are (`results.rs`) or, for a copy, pinned only until JavaScript has
//! copied them (the next call).

use silt_engine::{PinnedValue, ReadOptions};
use wasm_bindgen::prelude::*;

use crate::database::Database;
use crate::error::{BindingError, JsResult};
use crate::results::{place, Pinned};

impl Database {
    /// Lets go of the results JavaScript released since the last call, and
    /// of the last `get`'s value (JavaScript copied it already).
    fn drain_releases(&self) {
        self.transient.borrow_mut().take();
        let released = self.exchange.borrow_mut().take_releases();
        let mut pins = self.pins.borrow_mut();
        for handle in released {
            pins.release(handle);
        }
    }

    /// The value of the key of `key_len` bytes in the exchange request, as
    /// of `snapshot` (0: the latest), after the queued releases are let go.
    fn lookup(&self, key_len: usize, snapshot: u32) -> Result<Option<PinnedValue>, BindingError> {
        self.drain_releases();
        let snap = self.snapshot_for(snapshot)?;
        let opts = ReadOptions { snapshot: snap.as_deref(), ..ReadOptions::default() };
        let exchange = self.exchange.borrow();
        let key = exchange.key(key_len)?;
        self.engine(0, |db| db.get_pinned(&opts, key))
    }

    pub(crate) fn get_pinned_inner(&self, key_len: usize, snapshot: u32) -> Result<u32, BindingError> {
        let Some(value) = self.lookup(key_len, snapshot)? else {
            self.exchange.borrow_mut().answer(0, crate::results::ABSENT);
            return Ok(0);
        };
        let [at, len] = place(Some(value.as_slice()));
        let (handle, _) = self.pins.borrow_mut().insert(Pinned::One(value))?;
        self.exchange.borrow_mut().answer(at, len);
        Ok(handle)
    }

    /// The value of the key of `key_len` bytes in the exchange request,
    /// pinned until the next call: answers its offset and length (ABSENT =
    /// none) for JavaScript to copy out at once.
    pub(crate) fn get_transient_inner(&self, key_len: usize, snapshot: u32) -> Result<(), BindingError> {
        let value = self.lookup(key_len, snapshot)?;
        let [at, len] = place(value.as_deref());
        *self.transient.borrow_mut() = value;
        self.exchange.borrow_mut().answer(at, len);
        Ok(())
    }

    pub(crate) fn multi_get_pinned_inner(
        &self,
        count: usize,
        key_bytes: usize,
        snapshot: u32,
        batched: bool,
    ) -> Result<u32, BindingError> {
        self.drain_releases();
        let snap = self.snapshot_for(snapshot)?;
        let opts = ReadOptions { snapshot: snap.as_deref(), ..ReadOptions::default() };
        let values = {
            let exchange = self.exchange.borrow();
            let keys = exchange.keys(count, key_bytes)?;
            self.engine(0, |db| db.multi_get(&opts, &keys, batched))?
        };
        let (handle, layout_at) = self.pins.borrow_mut().insert(Pinned::Many(values))?;
        self.exchange.borrow_mut().answer(layout_at, 0);
        Ok(handle)
    }
}

#[wasm_bindgen]
impl Database {
    /// The address of the exchange buffer, grown first to at least
    /// `min_bytes`. Its address changes only here.
    #[wasm_bindgen(js_name = exchangeBuffer)]
    pub fn exchange_buffer(&self, min_bytes: u32) -> u32 {
        self.exchange.borrow_mut().reserve(min_bytes as usize) as u32
    }

    /// The value of the key of `key_len` bytes in the exchange request,
    /// pinned: returns its handle and writes its offset and length into the
    /// exchange answer; returns 0 when the key has no value. `snapshot` is
    /// an id from [`Database::snapshot`], or 0 for now. Results released
    /// in the exchange header are let go first, whatever happens next.
    #[wasm_bindgen(js_name = getPinned)]
    pub fn get_pinned(&self, key_len: u32, snapshot: u32) -> JsResult<u32> {
        crate::leak::leak_per_call();
        Ok(self.get_pinned_inner(key_len as usize, snapshot)?)
    }

    /// The value of the key of `key_len` bytes in the exchange request, for
    /// JavaScript to copy: writes its offset and length (ABSENT = none) into
    /// the exchange answer, and keeps it pinned until the next call on the
    /// database. Releases first, as [`Database::get_pinned`].
    #[wasm_bindgen(js_name = getTransient)]
    pub fn get_transient(&self, key_len: u32, snapshot: u32) -> JsResult<()> {
        crate::leak::leak_per_call();
        Ok(self.get_transient_inner(key_len as usize, snapshot)?)
    }

    /// The values of the `count` keys in the exchange request (`key_bytes`
    /// bytes of keys), read at one point in time and pinned together:
    /// returns the result's handle and writes the address of its layout
    /// (offset and length of each value, see `results.rs`) into the
    /// exchange answer. `batched` uses the engine's batched MultiGet (each
    /// table file searched once for its keys); without, each key is looked
    /// up on its own. Releases first, as [`Database::get_pinned`].
    #[wasm_bindgen(js_name = multiGetPinned)]
    pub fn multi_get_pinned(&self, count: u32, key_bytes: u32, snapshot: u32, batched: bool) -> JsResult<u32> {
        Ok(self.multi_get_pinned_inner(count as usize, key_bytes as usize, snapshot, batched)?)
    }

    /// Lets go of the results released in the exchange header, now. Works
    /// after `close()` too.
    #[wasm_bindgen(js_name = releasePinned)]
    pub fn release_pinned(&self) {
        self.drain_releases();
    }
}

#[cfg(test)]
impl Database {
    /// Results this database holds for JavaScript right now.
    fn held_results(&self) -> u32 {
        self.pins.borrow().len() as u32
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use silt_engine::fs::MemFs;

    use super::*;
    use crate::exchange::REQUEST;
    use crate::options::OpenOptions;

    fn db() -> Database {
        let options = OpenOptions::default().to_engine(None);
        let db = Database::open_with(Arc::new(MemFs::new()), "db", options, None).unwrap();
        db.put(b"a", b"alpha", false).unwrap();
        db.put(b"c", b"charlie", false).unwrap();
        db
    }

    /// Writes a request at REQUEST as JavaScript would, through the buffer's address.
    fn write_request(db: &Database, request: &[u8]) {
        let mut ex = db.exchange.borrow_mut();
        ex.reserve(REQUEST + request.len());
        ex.write_at(REQUEST, request);
    }

    fn keys_request(keys: &[&[u8]]) -> (Vec<u8>, usize) {
        let mut r: Vec<u8> = keys.iter().flat_map(|k| (k.len() as u32).to_le_bytes()).collect();
        let bytes: Vec<u8> = keys.concat();
        r.extend_from_slice(&bytes);
        (r, bytes.len())
    }

    fn answer(db: &Database) -> [u32; 2] {
        let ex = db.exchange.borrow();
        [ex.read_word(4), ex.read_word(8)]
    }

    #[test]
    fn get_answers_where_the_value_is_or_zero() {
        let db = db();
        write_request(&db, b"c");
        let h = db.get_pinned_inner(1, 0).unwrap();
        assert_ne!(h, 0);
        let [_, len] = answer(&db);
        assert_eq!(len, 7);
        write_request(&db, b"b");
        assert_eq!(db.get_pinned_inner(1, 0).unwrap(), 0);
        assert_eq!(answer(&db)[1], crate::results::ABSENT);
        assert_eq!(db.held_results(), 1);
    }

    #[test]
    fn a_transient_get_answers_where_the_value_is_and_pins_it_until_the_next_call() {
        let db = db();
        db.flush().unwrap();
        write_request(&db, b"c");
        db.get_transient_inner(1, 0).unwrap();
        let [at, len] = answer(&db);
        assert_eq!(len, 7);
        assert_ne!(at, 0);
        assert!(db.transient.borrow().is_some(), "pinned until the next call");
        let pinned =
            |db: &Database| db.engine(0, |d| Ok::<_, silt_engine::Error>(d.properties().pinned_bytes)).unwrap();
        assert!(pinned(&db) > 0);
        write_request(&db, b"zz");
        db.get_transient_inner(2, 0).unwrap();
        assert_eq!(answer(&db)[1], crate::results::ABSENT);
        assert_eq!(pinned(&db), 0, "the next call let go of the previous value");
        assert_eq!(db.held_results(), 0, "nothing for JavaScript to release");
    }

    #[test]
    fn multi_get_batched_or_not_gives_the_same_layout_lengths() {
        let db = db();
        let (request, bytes) = keys_request(&[b"a", b"b", b"c", b"a"]);
        for batched in [true, false] {
            write_request(&db, &request);
            let h = db.multi_get_pinned_inner(4, bytes, 0, batched).unwrap();
            assert_ne!(h, 0);
            let [layout_at, _] = answer(&db);
            assert_ne!(layout_at, 0);
        }
        assert_eq!(db.held_results(), 2);
    }

    #[test]
    fn released_handles_in_the_header_are_let_go_at_the_next_call_even_a_failing_one() {
        let db = db();
        let (request, bytes) = keys_request(&[b"a"]);
        write_request(&db, &request);
        let h1 = db.multi_get_pinned_inner(1, bytes, 0, true).unwrap();
        let h2 = db.multi_get_pinned_inner(1, bytes, 0, true).unwrap();
        assert_eq!(db.held_results(), 2);
        db.exchange.borrow_mut().write_releases(&[h1]);
        // Lengths that do not add up: the call fails, the release happened.
        assert_eq!(db.multi_get_pinned_inner(1, bytes + 1, 0, true).unwrap_err().code, "InvalidArgument");
        assert_eq!(db.held_results(), 1);
        db.exchange.borrow_mut().write_releases(&[h2, 12345]);
        db.release_pinned();
        assert_eq!(db.held_results(), 0);
    }

    #[test]
    fn results_outlive_close_and_are_still_released_after_it() {
        let db = db();
        write_request(&db, b"a");
        let h = db.get_pinned_inner(1, 0).unwrap();
        db.close().unwrap();
        assert_eq!(db.get_pinned_inner(1, 0).unwrap_err().code, "Closed");
        assert_eq!(db.held_results(), 1);
        db.exchange.borrow_mut().write_releases(&[h]);
        db.release_pinned();
        assert_eq!(db.held_results(), 0);
    }

    #[test]
    fn a_released_snapshot_is_refused() {
        let db = db();
        write_request(&db, b"a");
        assert_eq!(db.get_pinned_inner(1, 99).unwrap_err().code, "Released");
    }
}
