//! Exports and imports for JavaScript (`db.export()`, `db.import()` and
//! `importDatabase()` in siltdb): the engine's `Exporter` handed out piece
//! by piece, and its `Importer` kept in the database between the pieces
//! JavaScript reads from a stream.

use silt_engine::{ExportForm, ExportOptions, Exporter};
use wasm_bindgen::prelude::*;

use crate::contract::ImportReport;
use crate::database::{Database, BACKGROUND_RESERVE};
use crate::error::{BindingError, JsResult};

/// An export in progress: `next()` gives the stream piece by piece.
#[wasm_bindgen]
pub struct Export {
    exporter: Option<Exporter>,
}

#[wasm_bindgen]
impl Export {
    /// The next piece of the stream (about `maxBytes`), or `undefined` once
    /// all of it was handed out (the export is then released).
    pub fn next(&mut self, max_bytes: u32) -> JsResult<Option<Vec<u8>>> {
        let Some(e) = self.exporter.as_mut() else { return Ok(None) };
        let piece = e.next_chunk(max_bytes as usize).map_err(BindingError::from)?;
        if piece.is_none() {
            self.exporter = None;
        }
        Ok(piece)
    }

    /// Lets go of the export's snapshot and iterator.
    pub fn release(&mut self) {
        self.exporter = None;
    }
}

fn no_import() -> BindingError {
    BindingError::invalid("no import is in progress (importStart first)")
}

#[wasm_bindgen]
impl Database {
    /// Starts an export of the keys from `lower` (inclusive) to `upper`
    /// (exclusive), either optional, as of now; keys in `[skipLower,
    /// skipUpper)` are left out (a `connect()` leader's write records).
    /// `form`: `"tables"`, `"entries"`, or none (tables for a whole
    /// database, entries otherwise), or `"rocksdb"` (the live entries as
    /// RocksDB table files in a ustar archive, data blocks compressed with
    /// LZ4 where `lz4`, each table about `targetFileSize` bytes, 0 for
    /// 32 MiB).
    #[wasm_bindgen(js_name = exportStart)]
    // Positional, as JavaScript calls it (an options object would cost a
    // decode of it per export for nothing).
    #[allow(clippy::too_many_arguments)]
    pub fn export_start(
        &self,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
        skip_lower: Option<Vec<u8>>,
        skip_upper: Option<Vec<u8>>,
        form: Option<String>,
        lz4: Option<bool>,
        target_file_size: Option<f64>,
    ) -> JsResult<Export> {
        let skip = skip_lower.zip(skip_upper);
        let form = match form.as_deref() {
            None => ExportForm::Auto,
            Some("tables") => ExportForm::Tables,
            Some("entries") => ExportForm::Entries,
            Some("rocksdb") => ExportForm::Rocksdb,
            Some(other) => {
                return Err(BindingError::invalid(format!(
                    "export form must be 'tables', 'entries' or 'rocksdb', got {other:?}"
                ))
                .into())
            }
        };
        let options = ExportOptions {
            lower,
            upper,
            skip,
            form,
            lz4: lz4.unwrap_or(false),
            target_file_size: target_file_size.unwrap_or(0.0).max(0.0) as u64,
        };
        let exporter = self.engine(0, |db| db.export(&options))?;
        Ok(Export { exporter: Some(exporter) })
    }

    /// Starts an import into this database, which must be empty.
    #[wasm_bindgen(js_name = importStart)]
    pub fn import_start(&self) -> JsResult<()> {
        if self.importer.borrow().is_some() {
            return Err(BindingError::invalid("an import into this database is in progress already").into());
        }
        let imp = self.engine(0, |db| db.import())?;
        *self.importer.borrow_mut() = Some(imp);
        Ok(())
    }

    /// The next bytes of the stream being imported. Needs free pooled files
    /// (it may write table files). Returns true when it stopped before a
    /// table for want of free pooled files: add files, then push again (an
    /// empty piece will do; the bytes not read yet are kept). On an error
    /// the import is aborted.
    #[wasm_bindgen(js_name = importPush)]
    pub fn import_push(&self, bytes: &[u8]) -> JsResult<bool> {
        let mut slot = self.importer.borrow_mut();
        let imp = slot.as_mut().ok_or_else(no_import)?;
        let r = self.engine(BACKGROUND_RESERVE, |db| imp.push(db, bytes).map(|()| imp.wants_files()));
        let wants_files = match r {
            Ok(w) => w,
            Err(e) => {
                // Whatever failed (a damaged stream, no free pooled file for a
                // table), the import is over and what it wrote is deleted.
                if let Some(imp) = slot.take() {
                    let _ = self.engine(0, |db| {
                        imp.abort(db);
                        Ok::<_, silt_engine::Error>(())
                    });
                }
                return Err(e.into());
            }
        };
        Ok(wants_files)
    }

    /// Ends the import: `{ entries, tableFiles, tableBytes, streamBytes }`
    /// (`contract::ImportReport`), or the error that left nothing of it
    /// visible.
    #[wasm_bindgen(js_name = importFinish)]
    pub fn import_finish(&self) -> JsResult<JsValue> {
        let imp = self.importer.borrow_mut().take().ok_or_else(no_import)?;
        let report = self.engine(BACKGROUND_RESERVE, |db| imp.finish(db))?;
        Ok(ImportReport {
            entries: report.entries,
            table_files: report.table_files,
            table_bytes: report.table_bytes,
            stream_bytes: report.stream_bytes,
        }
        .into())
    }

    /// Gives the import up, deleting what it wrote.
    #[wasm_bindgen(js_name = importAbort)]
    pub fn import_abort(&self) {
        if let Some(imp) = self.importer.borrow_mut().take() {
            let _ = self.engine(0, |db| {
                imp.abort(db);
                Ok::<_, silt_engine::Error>(())
            });
        }
    }
}
