//! Values pinned for JavaScript: the zero-copy side of `get` and
//! `multiGet`.
//!
//! A result owns the `Bytes` the engine returned: each shares memory with
//! the block cache block or the memtable it was read from, so while the
//! result lives those bytes stay where they are in wasm linear memory and
//! JavaScript reads them through `Uint8Array` views (offset and length
//! from [`MultiGetResult::layout`]). `release()` lets go of them at once;
//! without it, freeing the result (wasm-bindgen's FinalizationRegistry, or
//! siltdb's own) does.

use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
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
pub(crate) fn layout(values: &[Option<Bytes>]) -> Vec<u32> {
    let mut out = Vec::with_capacity(values.len() * 2);
    for v in values {
        match v {
            // Addresses fit in u32 on wasm32, the only target JS reads.
            Some(b) => out.extend([b.as_ptr() as usize as u32, b.len() as u32]),
            None => out.extend([0, ABSENT]),
        }
    }
    out
}

/// The values of one `multiGet`, pinned until released.
#[wasm_bindgen]
pub struct MultiGetResult {
    values: Option<Vec<Option<Bytes>>>,
}

impl MultiGetResult {
    pub(crate) fn new(values: Vec<Option<Bytes>>) -> Self {
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
            Some(v) => Ok(layout(v)),
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

    #[test]
    fn layout_gives_two_words_per_key_and_marks_missing_ones() {
        let values = vec![Some(Bytes::from_static(b"abc")), None, Some(Bytes::new())];
        let l = layout(&values);
        assert_eq!(l.len(), 6);
        assert_eq!([l[1], l[2], l[3], l[5]], [3, 0, ABSENT, 0]);
    }

    #[test]
    fn results_count_as_pinned_until_released_or_dropped() {
        let before = pinned_results();
        let mut a = MultiGetResult::new(vec![None]);
        let b = MultiGetResult::new(vec![]);
        assert_eq!(pinned_results(), before + 2);
        a.release();
        a.release();
        assert_eq!(pinned_results(), before + 1);
        drop(b);
        drop(a);
        assert_eq!(pinned_results(), before);
    }
}
