//! Exports and imports: a consistent snapshot of a database as one byte
//! stream (chunks, each checksummed), and a new database built from one,
//! with one manifest edit at the end: nothing of an import is visible until
//! every chunk and every table has been checked and the stream's end record
//! matches.
//!
//! Two forms (`docs/format.md` has both, with the reasons):
//!
//! - **Entries** (format version 1): the live keys of a range and their
//!   values as reads see them (merges applied, deleted keys absent),
//!   strictly ascending. An import builds table files of the last level
//!   from them.
//! - **Tables** (format version 2), for a whole database: its table files
//!   byte for byte, each with its level and what the manifest records of
//!   it, and the memtables' entries at the snapshot as one more table
//!   built at export time. An import writes the files as they arrive,
//!   reads each back (every block's checksum; its first and last keys
//!   against the bounds the stream gave), and installs
//!   them at their levels: no key is sorted, compressed or filtered again.
//!   What compaction has not yet dropped (older versions, deleted entries)
//!   travels too, as in a copy of the files.
//!
//! The stream's byte layout is in `format.rs`; the exporter in `export.rs`,
//! the importer in `import.rs`.

mod export;
mod format;
mod import;
mod read_order;
mod rocksdb_export;
mod rocksdb_ingest;
mod run;
#[cfg(test)]
mod tests;

pub use export::{ExportForm, ExportOptions, Exporter};
pub use format::{EXPORT_MAGIC, EXPORT_VERSION, EXPORT_VERSION_ENTRIES};
pub use import::{ImportReport, Importer};
pub use rocksdb_ingest::{RocksdbIngest, RocksdbIngestReport, RocksdbPlan};
