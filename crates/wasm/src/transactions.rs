//! Optimistic transactions for JavaScript (`db.transaction()` in siltdb):
//! the engine's `OptimisticTransaction`, kept here by id between calls, so a
//! transaction lives across any number of JavaScript `await`s.

use silt_engine::{Error, OptimisticTransaction, ReadOptions, WriteOptions};
use wasm_bindgen::prelude::*;

use crate::database::Database;
use crate::error::{BindingError, Code, JsResult};
use crate::iterator::Iterator;

/// `transactionMultiGet`'s answer, per key: `u32` length (little-endian,
/// `u32::MAX` for no value) then the value's bytes.
const ABSENT: u32 = u32::MAX;

fn released() -> BindingError {
    BindingError::new(Code::Released, "this transaction has ended (committed, rolled back or failed)")
}

impl Database {
    /// Runs `f` on transaction `id` and the open engine.
    fn with_transaction<T>(
        &self,
        id: u32,
        f: impl FnOnce(&mut OptimisticTransaction, &silt_engine::Db) -> Result<T, Error>,
    ) -> Result<T, BindingError> {
        self.engine(0, |db| {
            let mut txns = self.transactions.borrow_mut();
            let t = txns.get_mut(&id).ok_or_else(released)?;
            f(t, db).map_err(BindingError::from)
        })
    }
}

#[wasm_bindgen]
impl Database {
    /// Begins an optimistic transaction at a snapshot taken now; returns its
    /// id (never 0).
    #[wasm_bindgen(js_name = beginTransaction)]
    pub fn begin_transaction(&self) -> JsResult<u32> {
        let t = self.engine(0, |db| Ok::<_, Error>(db.begin_optimistic()))?;
        let id = self.next_transaction.get();
        self.next_transaction.set(id.checked_add(1).unwrap_or(1).max(1));
        self.transactions.borrow_mut().insert(id, t);
        Ok(id)
    }

    /// The value of `key` in transaction `id` (a copy), or `undefined`; with
    /// `forUpdate`, the key is tracked for the commit's conflict check.
    #[wasm_bindgen(js_name = transactionGet)]
    pub fn transaction_get(&self, id: u32, key: &[u8], for_update: bool) -> JsResult<Option<Vec<u8>>> {
        Ok(self.with_transaction(id, |t, db| if for_update { t.get_for_update(db, key) } else { t.get(db, key) })?)
    }

    /// The values of many keys in transaction `id` (copies, tracking
    /// nothing): `keys` is the keys back to back, `lengths` their lengths.
    /// Answers per key a `u32` length (`0xffffffff`: no value) and the bytes.
    #[wasm_bindgen(js_name = transactionMultiGet)]
    pub fn transaction_multi_get(&self, id: u32, keys: &[u8], lengths: &[u32]) -> JsResult<Vec<u8>> {
        let mut split = Vec::with_capacity(lengths.len());
        let mut at = 0usize;
        for &len in lengths {
            let end = at
                .checked_add(len as usize)
                .filter(|&e| e <= keys.len())
                .ok_or_else(|| BindingError::invalid("multiGet: key lengths run past the keys"))?;
            split.push(&keys[at..end]);
            at = end;
        }
        let values = self.with_transaction(id, |t, db| t.multi_get(db, &split))?;
        let mut out = Vec::with_capacity(values.iter().map(|v| 4 + v.as_ref().map_or(0, Vec::len)).sum());
        for v in values {
            match v {
                Some(v) => {
                    out.extend_from_slice(&(v.len() as u32).to_le_bytes());
                    out.extend_from_slice(&v);
                }
                None => out.extend_from_slice(&ABSENT.to_le_bytes()),
            }
        }
        Ok(out)
    }

    /// An iterator over transaction `id`'s view (its snapshot with its own
    /// writes, as they are now, on top), from `lower` (inclusive) to `upper`
    /// (exclusive). It outlives the transaction (it keeps its snapshot).
    #[wasm_bindgen(js_name = transactionIterator)]
    pub fn transaction_iterator(
        &self,
        id: u32,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
        reverse: bool,
        auto_refresh: bool,
    ) -> JsResult<Iterator> {
        let opts = ReadOptions {
            lower_bound: lower,
            upper_bound: upper,
            auto_refresh_iterator_with_snapshot: auto_refresh,
            ..ReadOptions::default()
        };
        let it = self.with_transaction(id, |t, db| t.iter(db, &opts))?;
        Ok(Iterator::new(it, None, reverse))
    }

    /// Adds a merge operand for `key` in transaction `id` (tracked); its
    /// reads combine it at once.
    #[wasm_bindgen(js_name = transactionMerge)]
    pub fn transaction_merge(&self, id: u32, key: &[u8], operand: &[u8]) -> JsResult<()> {
        Ok(self.with_transaction(id, |t, db| t.merge(db, key, operand))?)
    }

    #[wasm_bindgen(js_name = transactionPut)]
    pub fn transaction_put(&self, id: u32, key: &[u8], value: &[u8]) -> JsResult<()> {
        Ok(self.with_transaction(id, |t, _| t.put(key, value))?)
    }

    #[wasm_bindgen(js_name = transactionDelete)]
    pub fn transaction_delete(&self, id: u32, key: &[u8]) -> JsResult<()> {
        Ok(self.with_transaction(id, |t, _| t.delete(key))?)
    }

    #[wasm_bindgen(js_name = transactionDeleteRange)]
    pub fn transaction_delete_range(&self, id: u32, start: &[u8], end: &[u8]) -> JsResult<()> {
        Ok(self.with_transaction(id, |t, _| t.delete_range(start, end))?)
    }

    /// Commits transaction `id` (which ends, whatever the outcome): `Busy`
    /// if a key or range it tracked was written after its snapshot. With
    /// `record`, a bookkeeping put (key, value) goes into the same batch
    /// (siltdb's request record, js/src/tabs/leader-writer.ts).
    #[wasm_bindgen(js_name = commitTransaction)]
    pub fn commit_transaction(
        &self,
        id: u32,
        sync: bool,
        record_key: Option<Vec<u8>>,
        record_value: Option<Vec<u8>>,
    ) -> JsResult<()> {
        // A commit that found no pooled file for what it needed (past what
        // may wait in memory: PoolExhausted) wrote nothing and leaves the
        // transaction open, to retry once siltdb has added files.
        let mut bytes = 0;
        let written = self.engine(0, |db| {
            let mut t = self.transactions.borrow_mut().remove(&id).ok_or_else(released)?;
            bytes = t.approximate_size();
            if let (Some(k), Some(v)) = (&record_key, &record_value) {
                t.put_bookkeeping(k, v)?;
            }
            t.commit_or_keep(db, &WriteOptions { sync }).map_err(|(e, kept)| {
                if let Some(t) = kept {
                    self.transactions.borrow_mut().insert(id, *t);
                }
                match e {
                    Error::Busy(m) => BindingError::new(Code::Conflict, m),
                    e => BindingError::from(e),
                }
            })
        });
        if written.is_ok() {
            self.pace_background_work(bytes);
        }
        Ok(written?)
    }

    /// Ends transaction `id` without writing anything. Ending it twice
    /// does nothing.
    #[wasm_bindgen(js_name = releaseTransaction)]
    pub fn release_transaction(&self, id: u32) {
        self.transactions.borrow_mut().remove(&id);
    }
}
