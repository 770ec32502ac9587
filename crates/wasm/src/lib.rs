//! wasm-bindgen bindings of the Silt engine.
//!
//! This crate is the only place where the engine meets JavaScript. It stays
//! thin: argument marshalling, error conversion, and (in a later issue) the
//! OPFS file layer. The generated glue is private to the npm package `siltdb`
//! (`js/pkg`, gitignored); users import `siltdb`, never this module.
//!
//! Errors cross the boundary as a JavaScript `Error` whose `code` property is
//! the engine's stable [`silt_engine::Error::code`] and whose message is the
//! engine's `Display` text; `siltdb` turns it into a typed `SiltError`.

mod error;

use std::cell::RefCell;
use std::sync::Arc;

use silt_engine::fs::{Fs, MemFs};
use silt_engine::{Db, Error, Options, ReadOptions, WriteOptions};
use wasm_bindgen::prelude::*;

use crate::error::to_js;

/// The directory the in-memory database lives in, inside its own `MemFs`.
const MEMORY_DB_DIR: &str = "db";

/// An open database, as JavaScript sees it.
///
/// Calls after [`Database::close`] fail with code `"Closed"`.
#[wasm_bindgen]
pub struct Database {
    /// `None` once closed: closing drops the engine (and, for an in-memory
    /// database, all its data), so wasm memory is reusable at once instead of
    /// waiting for the JS object to be garbage collected.
    db: RefCell<Option<Db>>,
}

#[wasm_bindgen]
impl Database {
    /// Opens a new, empty database on an in-memory file system. Nothing is
    /// persisted: the data is gone when the database is closed or dropped.
    #[wasm_bindgen(js_name = openMemory)]
    pub fn open_memory() -> Result<Database, JsValue> {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let db = Db::open(fs, MEMORY_DB_DIR, Options::default()).map_err(to_js)?;
        Ok(Database {
            db: RefCell::new(Some(db)),
        })
    }

    /// Stores `value` under `key`, replacing any previous value.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<(), JsValue> {
        self.with_db(|db| db.put(&WriteOptions::default(), key, value))
    }

    /// The value stored under `key`, copied out of wasm memory, or
    /// `undefined` when there is none.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, JsValue> {
        self.with_db(|db| db.get(&ReadOptions::default(), key))
    }

    /// Removes `key`. Removing a missing key is not an error.
    pub fn delete(&self, key: &[u8]) -> Result<(), JsValue> {
        self.with_db(|db| db.delete(&WriteOptions::default(), key))
    }

    /// Closes the database and releases its memory. Closing a closed
    /// database does nothing. If the engine reports an error while closing,
    /// the database is closed all the same and the error is thrown.
    pub fn close(&self) -> Result<(), JsValue> {
        let Some(db) = self.db.borrow_mut().take() else {
            return Ok(());
        };
        db.close().map_err(to_js)
    }
}

impl Database {
    fn with_db<T>(&self, f: impl FnOnce(&Db) -> Result<T, Error>) -> Result<T, JsValue> {
        let guard = self.db.borrow();
        let db = guard.as_ref().ok_or_else(|| to_js(closed()))?;
        f(db).map_err(to_js)
    }
}

fn closed() -> Error {
    Error::Closed("the database was closed".to_string())
}

/// Whether this build of the module uses WebAssembly SIMD128 instructions
/// (the bloom filter probes have a SIMD128 path). Fixed at compile time.
#[wasm_bindgen(js_name = simd128Enabled)]
pub fn simd128_enabled() -> bool {
    cfg!(target_feature = "simd128")
}
