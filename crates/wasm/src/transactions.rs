//! Optimistic transactions for JavaScript (`db.transaction()` in siltdb):
//! the engine's `OptimisticTransaction`, kept here by id between calls, so a
//! transaction lives across any number of JavaScript `await`s.

use silt_engine::{Error, OptimisticTransaction, WriteOptions};
use wasm_bindgen::prelude::*;

use crate::database::{Database, WRITE_RESERVE};
use crate::error::{BindingError, Code, JsResult};

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
    /// (siltdb's request record, js/src/leader.ts).
    #[wasm_bindgen(js_name = commitTransaction)]
    pub fn commit_transaction(
        &self,
        id: u32,
        sync: bool,
        record_key: Option<Vec<u8>>,
        record_value: Option<Vec<u8>>,
    ) -> JsResult<()> {
        // The pool is checked first: a commit refused for lack of free
        // files (PoolExhausted) leaves the transaction open, to retry.
        Ok(self.engine(WRITE_RESERVE, |db| {
            let mut t = self.transactions.borrow_mut().remove(&id).ok_or_else(released)?;
            if let (Some(k), Some(v)) = (&record_key, &record_value) {
                t.put_bookkeeping(k, v)?;
            }
            t.commit(db, &WriteOptions { sync }).map_err(BindingError::from)
        })?)
    }

    /// Ends transaction `id` without writing anything. Ending it twice
    /// does nothing.
    #[wasm_bindgen(js_name = releaseTransaction)]
    pub fn release_transaction(&self, id: u32) {
        self.transactions.borrow_mut().remove(&id);
    }
}
