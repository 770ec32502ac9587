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
//! unless re-exported here. Byte layouts are in `docs/format.md`.

mod batch;
mod cache;
mod compaction;
mod db;
mod error;
pub mod format;
pub mod fs;
pub mod fuzzing;
mod iter;
mod memtable;
pub mod merge;
mod range_del;
mod read;
mod sst;
pub mod stats;
mod version;
pub mod wal;

pub use batch::{BatchOp, WriteBatch};
pub use db::{
    repair, Clock, Db, DbIterator, DbProperties, Options, PinnedResults, PinnedValue, Progress, ReadOptions,
    RepairReport, Snapshot, SuperVersion, VerifyReport, WriteOptions, MAX_KEY_LEN, MAX_VALUE_LEN,
};
pub use error::{Error, Result};
pub use merge::{MergeOperator, U64AddOperator};
pub use sst::format::Compression;

/// The bloom filter on its own, for tests and benchmarks of its probes
/// (scalar and, in wasm builds with SIMD128, vectorized).
pub mod bloom {
    pub use crate::sst::filter::{key_hash, BloomFilter, FilterBuilder};
}
pub use stats::{HistogramSummary, StatisticsSnapshot, Ticker};

#[cfg(test)]
pub(crate) mod testutil;
