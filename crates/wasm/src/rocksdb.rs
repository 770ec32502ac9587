//! RocksDB tables into a database, for JavaScript (`db.ingestRocksdb()`
//! and `importDatabase(..., { format: 'rocksdb' })` in siltdb): the
//! engine's `RocksdbIngest` kept in the database between the pieces
//! JavaScript reads from a stream. (Exports in RocksDB's form go through
//! `exportStart`, backup.rs.)

use silt_engine::RocksdbIngest;
use wasm_bindgen::prelude::*;

use crate::batch::encode_op;
use crate::contract::RocksdbIngestReport;
use crate::database::Database;
use crate::error::{BindingError, JsResult};

fn no_ingest() -> BindingError {
    BindingError::invalid("no ingest of RocksDB tables is in progress (rocksdbIngestStart first)")
}

#[wasm_bindgen]
impl Database {
    /// Starts taking RocksDB tables: a ustar archive of them or one bare
    /// table, pushed in pieces.
    #[wasm_bindgen(js_name = rocksdbIngestStart)]
    pub fn rocksdb_ingest_start(&self) -> JsResult<()> {
        if self.rocksdb_ingest.borrow().is_some() {
            return Err(
                BindingError::invalid("an ingest of RocksDB tables into this database is in progress already").into()
            );
        }
        *self.rocksdb_ingest.borrow_mut() = Some((RocksdbIngest::new(), 0));
        Ok(())
    }

    /// The next bytes: each table is read and its checksums verified once
    /// whole. On an error the ingest is over (nothing was written).
    #[wasm_bindgen(js_name = rocksdbIngestPush)]
    pub fn rocksdb_ingest_push(&self, bytes: &[u8]) -> JsResult<()> {
        let mut slot = self.rocksdb_ingest.borrow_mut();
        let (ingest, pushed) = slot.as_mut().ok_or_else(no_ingest)?;
        *pushed += bytes.len() as u64;
        if let Err(e) = ingest.push(bytes) {
            *slot = None;
            return Err(BindingError::from(e).into());
        }
        Ok(())
    }

    /// Free pooled files the finish needs (its tables, as for `ingest`).
    #[wasm_bindgen(js_name = rocksdbIngestFilesNeeded)]
    pub fn rocksdb_ingest_files_needed(&self) -> u32 {
        let pushed = self.rocksdb_ingest.borrow().as_ref().map_or(0, |(_, n)| *n);
        self.ingest_files_needed(pushed as f64)
    }

    /// Writes what the tables hold in one step: `{ keys, tables }`
    /// (`contract::RocksdbIngestReport`), or the error that wrote nothing.
    #[wasm_bindgen(js_name = rocksdbIngestFinish)]
    pub fn rocksdb_ingest_finish(&self) -> JsResult<JsValue> {
        let (ingest, pushed) = self.rocksdb_ingest.borrow_mut().take().ok_or_else(no_ingest)?;
        let need = self.ingest_files_needed(pushed as f64) as usize;
        let report = self.engine_checked(need, "ingest", |db| ingest.finish(db))?;
        Ok(RocksdbIngestReport { keys: report.keys, tables: report.tables }.into())
    }

    /// Gives the ingest up (nothing of it was written).
    #[wasm_bindgen(js_name = rocksdbIngestAbort)]
    pub fn rocksdb_ingest_abort(&self) {
        self.rocksdb_ingest.borrow_mut().take();
    }
}

/// RocksDB tables read and verified (a ustar archive of them, or one bare
/// table, whole), as the write that applies them (`RocksdbIngest::plan`):
/// `{ batch, count, valuesOnly, keys, tables }`, `batch` in the binding's
/// batch encoding (`docs/format.md`), its `count` ops in the order they
/// apply. A `connect()` leader writes it as a recorded write (an ingest of
/// the values when `valuesOnly`, else a synced write of the batch), so that
/// a request sent again is never applied twice.
#[wasm_bindgen]
impl Database {
    /// (Of no database in particular: a method so that a leader's steps reach it through their database.)
    #[wasm_bindgen(js_name = rocksdbPlan)]
    pub fn rocksdb_plan(&self, bytes: &[u8]) -> JsResult<JsValue> {
        rocksdb_plan(bytes)
    }
}

fn rocksdb_plan(bytes: &[u8]) -> JsResult<JsValue> {
    let mut ingest = RocksdbIngest::new();
    ingest.push(bytes).map_err(BindingError::from)?;
    let plan = ingest.plan().map_err(BindingError::from)?;
    let mut batch = Vec::with_capacity(plan.entries().map(|e| e.key.len() + e.value.len() + 9).sum());
    for e in plan.entries() {
        encode_op(&mut batch, e.kind, e.key, e.value);
    }
    let out = js_sys::Object::new();
    let set = |k: &str, v: JsValue| js_sys::Reflect::set(&out, &JsValue::from_str(k), &v).map(|_| ());
    let r = set("batch", js_sys::Uint8Array::from(batch.as_slice()).into())
        .and(set("count", JsValue::from(plan.entries().len() as u32)))
        .and(set("valuesOnly", JsValue::from(plan.values_only)))
        .and(set("keys", JsValue::from(plan.keys as f64)))
        .and(set("tables", JsValue::from(plan.tables as f64)));
    r.map_err(|_| BindingError::invalid("cannot build the plan's object"))?;
    Ok(out.into())
}
