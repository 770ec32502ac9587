//! Options of a database and of each read and write.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::sst::format::Compression;
use crate::sst::TableOptions;

use super::snapshot::Snapshot;

/// The largest key the engine accepts (bytes).
pub const MAX_KEY_LEN: usize = 64 * 1024;
/// The largest value the engine accepts (bytes).
pub const MAX_VALUE_LEN: usize = 64 * 1024 * 1024;

/// A source of time, for statistics that measure durations. wasm32 has no
/// clock in `std`; the embedder supplies one (`performance.now()` in the
/// browser, `Instant` natively).
pub trait Clock: Send + Sync {
    /// Microseconds since an arbitrary, fixed origin.
    fn now_micros(&self) -> u64;
}

/// How a database is opened and run.
#[derive(Clone)]
pub struct Options {
    /// Create the database if the directory holds none (default true).
    pub create_if_missing: bool,
    /// Fail if a database already exists (default false).
    pub error_if_exists: bool,
    /// Bytes a memtable holds before it is switched out for flushing
    /// (default 4 MiB; at least 64 KiB).
    pub write_buffer_size: usize,
    /// Memtables in memory at most, the active one included (default 2, at
    /// least 2). A write that finds them all full first flushes the oldest
    /// itself: a write stall, counted in statistics.
    pub max_write_buffer_number: usize,
    /// Uncompressed size of a data block (default 4 KiB).
    pub block_size: usize,
    /// Keys between restart points in a block (default 16).
    pub block_restart_interval: usize,
    /// Block compression (default LZ4).
    pub compression: Compression,
    /// Bloom filter bits per key; 0 disables filters (default 10).
    pub bloom_bits_per_key: u32,
    /// Bytes of uncompressed blocks the block cache keeps (default 8 MiB).
    pub block_cache_capacity: usize,
    /// Clock for duration statistics; none means durations read as zero.
    pub clock: Option<Arc<dyn Clock>>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            error_if_exists: false,
            write_buffer_size: 4 << 20,
            max_write_buffer_number: 2,
            block_size: 4096,
            block_restart_interval: 16,
            compression: Compression::Lz4,
            bloom_bits_per_key: 10,
            block_cache_capacity: 8 << 20,
            clock: None,
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("create_if_missing", &self.create_if_missing)
            .field("error_if_exists", &self.error_if_exists)
            .field("write_buffer_size", &self.write_buffer_size)
            .field("max_write_buffer_number", &self.max_write_buffer_number)
            .field("block_size", &self.block_size)
            .field("block_restart_interval", &self.block_restart_interval)
            .field("compression", &self.compression)
            .field("bloom_bits_per_key", &self.bloom_bits_per_key)
            .field("block_cache_capacity", &self.block_cache_capacity)
            .finish_non_exhaustive()
    }
}

impl Options {
    /// Checks every option; the error names the option and its bounds.
    pub fn validate(&self) -> Result<()> {
        let check = |ok: bool, msg: String| {
            if ok {
                Ok(())
            } else {
                Err(Error::InvalidArgument(msg))
            }
        };
        check(
            self.write_buffer_size >= 64 << 10,
            format!(
                "write_buffer_size must be at least 65536 bytes, got {}",
                self.write_buffer_size
            ),
        )?;
        check(
            (2..=64).contains(&self.max_write_buffer_number),
            format!(
                "max_write_buffer_number must be 2..=64, got {}",
                self.max_write_buffer_number
            ),
        )?;
        check(
            (256..=(4 << 20)).contains(&self.block_size),
            format!(
                "block_size must be 256..=4194304 bytes, got {}",
                self.block_size
            ),
        )?;
        check(
            (1..=1024).contains(&self.block_restart_interval),
            format!(
                "block_restart_interval must be 1..=1024, got {}",
                self.block_restart_interval
            ),
        )?;
        check(
            self.bloom_bits_per_key <= 64,
            format!(
                "bloom_bits_per_key must be 0..=64, got {}",
                self.bloom_bits_per_key
            ),
        )?;
        Ok(())
    }

    pub(crate) fn table_options(&self) -> TableOptions {
        TableOptions {
            block_size: self.block_size,
            restart_interval: self.block_restart_interval,
            compression: self.compression,
            bloom_bits_per_key: self.bloom_bits_per_key,
        }
    }

    pub(crate) fn now_micros(&self) -> u64 {
        self.clock.as_ref().map_or(0, |c| c.now_micros())
    }
}

/// Options of one read.
#[derive(Clone, Default)]
pub struct ReadOptions<'a> {
    /// Read as of this snapshot; `None` reads the latest state.
    pub snapshot: Option<&'a Snapshot>,
    /// Iterators: first key included (inclusive bound).
    pub lower_bound: Option<Vec<u8>>,
    /// Iterators: first key excluded (exclusive bound).
    pub upper_bound: Option<Vec<u8>>,
    /// Put blocks read into the block cache (default true; turn off for
    /// one-off scans).
    pub fill_cache: Option<bool>,
}

impl ReadOptions<'_> {
    pub(crate) fn fill_cache(&self) -> bool {
        self.fill_cache.unwrap_or(true)
    }
}

/// Options of one write.
#[derive(Clone, Copy, Debug, Default)]
pub struct WriteOptions {
    /// Sync the WAL before acknowledging: the write survives a crash. Without
    /// it a crash may lose the most recent writes (never part of a batch, and
    /// never an older write while keeping a newer one).
    pub sync: bool,
}

/// Rejects keys the engine does not store.
pub(crate) fn check_key(key: &[u8]) -> Result<()> {
    if key.is_empty() {
        return Err(Error::InvalidArgument("key is empty".into()));
    }
    if key.len() > MAX_KEY_LEN {
        return Err(Error::InvalidArgument(format!(
            "key of {} bytes exceeds the maximum of {MAX_KEY_LEN}",
            key.len()
        )));
    }
    Ok(())
}

pub(crate) fn check_value(value: &[u8]) -> Result<()> {
    if value.len() > MAX_VALUE_LEN {
        return Err(Error::InvalidArgument(format!(
            "value of {} bytes exceeds the maximum of {MAX_VALUE_LEN}",
            value.len()
        )));
    }
    Ok(())
}
