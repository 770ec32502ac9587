//! Silt: an LSM key-value storage engine whose read path follows RocksDB's,
//! built to run in the browser (wasm32 + OPFS) and natively.
//!
//! ```
//! use std::sync::Arc;
//! use silt_engine::{Db, Options, ReadOptions, WriteOptions, fs::MemFs};
//!
//! let db = Db::open(Arc::new(MemFs::new()), "db", Options::default())?;
//! db.put(&WriteOptions::default(), b"hello", b"world")?;
//! assert_eq!(db.get(&ReadOptions::default(), b"hello")?.as_deref(), Some(&b"world"[..]));
//! # Ok::<(), silt_engine::Error>(())
//! ```
//!
//! This file is the public API; everything else is private to the crate
//! unless re-exported here. `fs` is public on purpose: it is the seam an
//! embedder plugs its storage into (the browser's OPFS pool implements
//! [`fs::Fs`]). Byte layouts are in `docs/format.md`.
//!
//! Test and fuzz tooling is behind features that no shipped build turns on:
//! `testkit` (the [`fs::Fs`] contract suite and the fault-injecting
//! `FaultFs`) and `fuzzing` (one entry point per decoder, for `fuzz/`).

mod batch;
mod cache;
mod clock;
mod compaction;
mod db;
mod error;
mod format;
pub mod fs;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod iter;
mod memtable;
mod merge;
mod range_del;
mod read;
pub mod rocksdb;
#[doc(hidden)]
pub mod sort;
mod sst;
mod stats;
mod version;
mod wal;

pub use batch::{BatchOp, WriteBatch, BOOKKEEPING_MAX};
pub use clock::Clock;
pub use db::{
    repair, Db, DbIterator, DbProperties, ExportForm, ExportOptions, Exporter, Failure, ImportReport, Importer,
    IngestOptions, IngestReport, OptimisticTransaction, Options, PinnedResults, PinnedValue, Progress, ReadOptions,
    Recovery, RepairReport, RocksdbIngest, RocksdbIngestReport, RocksdbPlan, Snapshot, StatsLevel, SuperVersion,
    TransactionIterator, Update, VerifyReport, WriteOptions, EXPORT_MAGIC, EXPORT_VERSION, EXPORT_VERSION_ENTRIES,
    MAX_KEY_LEN, MAX_VALUE_LEN,
};
pub use error::{messages, Error, Result};
pub use merge::{AppendOperator, MergeOperator, U64AddOperator};
pub use sst::format::Compression;
pub use stats::{HistogramSummary, StatisticsSnapshot, Ticker};

/// The masked CRC-32C that checksums every file of the engine (WAL
/// records, blocks, manifest edits; `docs/format.md`), for file layers that
/// checksum their own metadata the same way (silt-wasm's pool headers).
pub mod checksum {
    pub use crate::format::checksum::{crc32c, mask, unmask};
}

/// The bloom filter on its own, for benchmarks of its probes (scalar and,
/// in wasm builds with SIMD128, vectorized: `bench/native/src/bin/bloom_probe.rs`).
pub mod bloom {
    pub use crate::sst::filter::{key_hash, BloomFilter, FilterBuilder};
}

#[cfg(test)]
pub(crate) mod testutil;
