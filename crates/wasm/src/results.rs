//! Values pinned for JavaScript: the zero-copy side of `get` and
//! `multiGet`.
//!
//! A result owns the engine's pinned values: each points into the block
//! cache block or the memtable entry it was read from, which stays pinned
//! (even if compaction deletes its file) while the result lives, so those
//! bytes stay where they are in wasm linear memory and
//! JavaScript reads them through `Uint8Array` views (offset and length
//! from [`MultiGetResult::layout`]). `release()` lets go of them at once;
//! without it, freeing the result (wasm-bindgen's FinalizationRegistry, or
//! siltdb's own) does.

use std::sync::atomic::{AtomicUsize, Ordering};

use silt_engine::{PinnedResults, PinnedValue};
use wasm_bindgen::prelude::*;

use crate::error::{BindingError, Code, JsResult};

/// Results whose bytes are pinned right now, across all databases.
static PINNED_RESULTS: AtomicUsize = AtomicUsize::new(0);

/// The length in a layout that marks a key with no value.
pub const ABSENT: u32 = u32::MAX;

/// Results still pinning values (not yet released nor freed).
pub fn pinned_results() -> usize {
    PINNED_RESULTS.load(Ordering::Relaxed)
}

/// Offset (a wasm32 address) and length of each value, two `u32`s per key;
/// a missing value has length [`ABSENT`].
pub(crate) fn layout<'a>(values: impl Iterator<Item = Option<&'a [u8]>>) -> Vec<u32> {
    let mut out = Vec::new();
    for v in values {
        match v {
            // Addresses fit in u32 on wasm32, the only target JS reads.
            Some(b) => out.extend([b.as_ptr() as usize as u32, b.len() as u32]),
            None => out.extend([0, ABSENT]),
        }
    }
    out
}

/// What a result pins: the values of a batch, or one value.
pub(crate) enum Pinned {
    Many(PinnedResults),
    One(PinnedValue),
}

impl Pinned {
    fn layout(&self) -> Vec<u32> {
        match self {
            Pinned::Many(r) => layout(r.iter()),
            Pinned::One(v) => layout(std::iter::once(Some(v.as_slice()))),
        }
    }
}

/// The values of one `multiGet` (or one `get`), pinned until released.
#[wasm_bindgen]
pub struct MultiGetResult {
    values: Option<Pinned>,
}

impl MultiGetResult {
    pub(crate) fn new(values: Pinned) -> Self {
        PINNED_RESULTS.fetch_add(1, Ordering::Relaxed);
        MultiGetResult { values: Some(values) }
    }

    fn unpin(&mut self) {
        if self.values.take().is_some() {
            PINNED_RESULTS.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

#[wasm_bindgen]
impl MultiGetResult {
    /// Offsets and lengths into wasm memory, two per key, in key order.
    /// Fails with `Released` after [`MultiGetResult::release`].
    pub fn layout(&self) -> JsResult<Vec<u32>> {
        match &self.values {
            Some(v) => Ok(v.layout()),
            None => Err(BindingError::new(Code::Released, "this multiGet result was released").into()),
        }
    }

    /// Unpins the values; views of them must not be read afterwards.
    /// Releasing twice does nothing.
    pub fn release(&mut self) {
        self.unpin();
    }
}

impl Drop for MultiGetResult {
    fn drop(&mut self) {
        self.unpin();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::Arc;

    use silt_engine::fs::MemFs;
    use silt_engine::{Db, Options, ReadOptions, WriteOptions};

    #[test]
    fn layout_gives_two_words_per_key_and_marks_missing_ones() {
        let values = [Some(&b"abc"[..]), None, Some(&b""[..])];
        let l = layout(values.into_iter());
        assert_eq!(l.len(), 6);
        assert_eq!([l[1], l[2], l[3], l[5]], [3, 0, ABSENT, 0]);
    }

    fn db() -> Db {
        let db = Db::open(Arc::new(MemFs::new()), "db", Options::default()).unwrap();
        db.put(&WriteOptions::default(), b"a", b"alpha").unwrap();
        db
    }

    #[test]
    fn a_pinned_batch_lays_out_its_values_in_key_order() {
        let db = db();
        let r = db.multi_get(&ReadOptions::default(), &[b"a", b"b", b"a"], true).unwrap();
        let l = Pinned::Many(r).layout();
        assert_eq!([l[1], l[3], l[5]], [5, ABSENT, 5]);
        assert_eq!(l[0], l[4], "the same pinned bytes for the same key");
    }

    #[test]
    fn results_count_as_pinned_until_released_or_dropped() {
        let db = db();
        let one = || Pinned::One(db.get_pinned(&ReadOptions::default(), b"a").unwrap().unwrap());
        let before = pinned_results();
        let mut a = MultiGetResult::new(one());
        let b = MultiGetResult::new(one());
        assert_eq!(pinned_results(), before + 2);
        a.release();
        a.release();
        assert_eq!(pinned_results(), before + 1);
        drop(b);
        drop(a);
        assert_eq!(pinned_results(), before);
    }
}
