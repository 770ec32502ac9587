//! Options of a database and of each read and write.

use std::sync::Arc;

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::merge::MergeOperator;
use crate::sst::format::Compression;
use crate::sst::TableOptions;

use super::snapshot::Snapshot;

/// The largest key the engine accepts (bytes).
pub const MAX_KEY_LEN: usize = 64 * 1024;
/// The largest value the engine accepts (bytes).
pub const MAX_VALUE_LEN: usize = 64 * 1024 * 1024;

/// One lookup in this many that searched more than one table file is
/// sampled for read-triggered compaction (`Options::read_triggered_compaction`).
pub const READ_SAMPLE_RATE: u32 = 16;

/// Which statistics the engine keeps (RocksDB's `StatsLevel`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StatsLevel {
    /// Every counter, but no durations: the engine never reads the clock
    /// (RocksDB's `kExceptTimers`). The default: in the browser each
    /// reading of the clock is a call out of wasm into `performance.now()`,
    /// and two of them cost a point lookup more than all its counters.
    #[default]
    ExceptTimers,
    /// Durations too, read from [`Options::clock`]: the `rocksdb.db.get.micros`,
    /// `rocksdb.db.write.micros`, flush and compaction histograms,
    /// `rocksdb.stall.micros` and `rocksdb.merge.operation.time.nanos`.
    All,
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
    /// Keys between restart points in a data block (default 4: a point
    /// lookup scans at most 4 entries after its binary search, for 0.7%
    /// more bytes than LevelDB's 16; docs/format.md).
    pub block_restart_interval: usize,
    /// Block compression (default LZ4).
    pub compression: Compression,
    /// Bloom filter bits per key; 0 disables filters (default 10).
    pub bloom_bits_per_key: u32,
    /// `close()` flushes the memtables to table files when they hold at
    /// least this many bytes of entries, so that the next open replays at
    /// most about this much WAL; smaller memtables are left to the WAL
    /// (default 128 KiB; `usize::MAX`: never flush at close).
    pub flush_on_close_bytes: usize,
    /// Give each data block a hash index of its user keys, so a point
    /// lookup goes straight to the few entries that may hold its key
    /// (RocksDB's `kDataBlockBinaryAndHash`; default true; docs/format.md).
    pub data_block_hash_index: bool,
    /// The table format new table files are written in: 2 (the default:
    /// XXH3 block checksums, data-block hash indexes) or 1 (CRC32C
    /// checksums, LevelDB's blocks), which builds that predate format 2
    /// read. Every build reads both (RocksDB's `format_version`); tables
    /// with a compression dictionary are written as 3 (which this build
    /// also reads).
    pub format_version: u32,
    /// Bytes of uncompressed blocks the block cache keeps (default 8 MiB).
    pub block_cache_capacity: usize,
    /// Bytes the row cache keeps (default 0: none): what each table file
    /// holds for a key a lookup found there, so the next lookup of that key
    /// skips the file's index and block (`read/row_cache.rs`). Worth it for
    /// a small set of keys read far more often than the rest.
    pub row_cache_capacity: usize,
    /// Give each memtable a bloom filter of its user keys, 1/64 of
    /// `write_buffer_size`, so a point lookup of a key a memtable does not
    /// hold skips its skip list (RocksDB's `memtable_whole_key_filtering`;
    /// default true).
    pub memtable_whole_key_filtering: bool,
    /// L0 files that trigger a compaction into the base level (default 4).
    pub level0_file_num_compaction_trigger: usize,
    /// L0 files at which writes stall: the writer runs compaction itself
    /// until L0 is below this again (default 20).
    pub level0_stop_writes_trigger: usize,
    /// Target size of the base level (default 16 MiB); each lower level
    /// targets `max_bytes_for_level_multiplier` times more (dynamic level
    /// sizes: the last level's size decides the base level).
    pub max_bytes_for_level_base: u64,
    pub max_bytes_for_level_multiplier: u64,
    /// Size at which compaction output files are split (default 4 MiB).
    pub target_file_size_base: u64,
    /// No automatic compactions (manual `compact_range` still works, and
    /// writes never stall on L0).
    pub disable_auto_compactions: bool,
    /// Read-triggered compaction (LevelDB's seek compaction, with RocksDB's
    /// read sampling): a point lookup that had to search more than one table
    /// file charges the first file it searched in vain, one lookup in
    /// [`READ_SAMPLE_RATE`] sampled (and charged that many); a file whose
    /// charges pass its allowance (one lookup per 16 KiB of file, at least
    /// 100) is compacted into the level below when no size-triggered
    /// compaction is due. Default true.
    pub read_triggered_compaction: bool,
    /// Combines merge operands (`Db::merge`); required to write or read them.
    pub merge_operator: Option<Arc<dyn MergeOperator>>,
    /// Clock for duration statistics, read only with [`StatsLevel::All`];
    /// without one, durations read as zero.
    pub clock: Option<Arc<dyn Clock>>,
    /// Which statistics are kept (default [`StatsLevel::ExceptTimers`]).
    pub stats_level: StatsLevel,
    /// Size at which the manifest is rolled over: the next edit goes to a
    /// new manifest that starts with a snapshot of the current state, and
    /// the old one is deleted (default 1 MiB, at least 256 bytes). Without it a
    /// database kept open for hours grows its manifest by every flush and
    /// compaction (RocksDB's `max_manifest_file_size`, whose 1 GiB default
    /// suits servers, not browser quotas).
    pub max_manifest_file_size: u64,
    /// Bytes of writes an optimistic transaction holds in memory before it
    /// spills them into a table file of its own in the database's
    /// directory, visible only to it until commit publishes it (RocksDB's
    /// `write_batch_flush_threshold` of write-unprepared transactions):
    /// a bulk load inside a transaction does not hold every write in
    /// memory. 0 never spills. Default 8 MiB.
    pub transaction_spill_bytes: usize,
    /// Read-optimising compaction when idle ([`Db::start_idle_compaction`]):
    /// once the embedder says the database is idle and no other background
    /// work is due, what lies above the last level that holds data (L0
    /// files, upper levels) is compacted down into it, so that a point
    /// lookup probes one table (a random fill leaves two to four to probe).
    /// Only where the tables total at most this many bytes: the bound on
    /// what one idle compaction rewrites (with random keys, about all of
    /// it, after every flush followed by an idle moment). 0 never, the
    /// default: measured in Chromium at 100,000 keys, it pays 1.13× on
    /// gets only without bloom filters and read-triggered compaction;
    /// with them (the defaults) nothing measurable (docs/bench/idle-compaction.md).
    ///
    /// [`Db::start_idle_compaction`]: crate::Db::start_idle_compaction
    pub idle_compaction_max_bytes: u64,
    /// Compression dictionaries (RocksDB's `max_dict_bytes`): at most this
    /// many bytes of a dictionary per table, sampled from the table's first
    /// MiB of data blocks (`sst/dictionary.rs`) and used by every data block
    /// of it, so that what recurs across blocks (field names, common
    /// values) is stored once per table instead of once per 4 KiB block.
    /// Written by compactions into the bottommost level (where most data
    /// ends up and stays), ingests and imports; by flushes and other
    /// compactions only with [`Options::compression_dict_every_level`].
    /// Ignored without LZ4 or with format_version 1; 0 (the default) makes
    /// none; else 32 to 65,536 (LZ4's window). A table whose data is under
    /// 8 times the dictionary's size, or holds nothing that recurs, gets
    /// none. Tables made with one are format version 3, which builds
    /// before dictionaries refuse as written by a newer version (as
    /// `Corruption`; this build and later say `NotSupported`, and repair
    /// stops at them instead of dropping them).
    pub compression_dict_bytes: usize,
    /// Dictionaries for flushes and compactions into every level too.
    pub compression_dict_every_level: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            error_if_exists: false,
            write_buffer_size: 4 << 20,
            max_write_buffer_number: 2,
            block_size: 4096,
            block_restart_interval: 4,
            compression: Compression::Lz4,
            bloom_bits_per_key: 10,
            data_block_hash_index: true,
            format_version: crate::sst::format::FORMAT_VERSION,
            flush_on_close_bytes: 128 << 10,
            block_cache_capacity: 8 << 20,
            row_cache_capacity: 0,
            memtable_whole_key_filtering: true,
            level0_file_num_compaction_trigger: 4,
            level0_stop_writes_trigger: 20,
            max_bytes_for_level_base: 16 << 20,
            max_bytes_for_level_multiplier: 10,
            target_file_size_base: 4 << 20,
            disable_auto_compactions: false,
            read_triggered_compaction: true,
            merge_operator: None,
            clock: None,
            stats_level: StatsLevel::ExceptTimers,
            max_manifest_file_size: 1 << 20,
            idle_compaction_max_bytes: 0,
            transaction_spill_bytes: 8 << 20,
            compression_dict_bytes: 0,
            compression_dict_every_level: false,
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
            .field("data_block_hash_index", &self.data_block_hash_index)
            .field("format_version", &self.format_version)
            .field("flush_on_close_bytes", &self.flush_on_close_bytes)
            .field("block_cache_capacity", &self.block_cache_capacity)
            .field("row_cache_capacity", &self.row_cache_capacity)
            .field("memtable_whole_key_filtering", &self.memtable_whole_key_filtering)
            .field("level0_file_num_compaction_trigger", &self.level0_file_num_compaction_trigger)
            .field("level0_stop_writes_trigger", &self.level0_stop_writes_trigger)
            .field("max_bytes_for_level_base", &self.max_bytes_for_level_base)
            .field("max_bytes_for_level_multiplier", &self.max_bytes_for_level_multiplier)
            .field("target_file_size_base", &self.target_file_size_base)
            .field("disable_auto_compactions", &self.disable_auto_compactions)
            .field("read_triggered_compaction", &self.read_triggered_compaction)
            .field("max_manifest_file_size", &self.max_manifest_file_size)
            .field("transaction_spill_bytes", &self.transaction_spill_bytes)
            .field("idle_compaction_max_bytes", &self.idle_compaction_max_bytes)
            .field("compression_dict_bytes", &self.compression_dict_bytes)
            .field("compression_dict_every_level", &self.compression_dict_every_level)
            .field("merge_operator", &self.merge_operator.as_ref().map(|m| m.name().to_string()))
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
            format!("write_buffer_size must be at least 65536 bytes, got {}", self.write_buffer_size),
        )?;
        check(
            (2..=64).contains(&self.max_write_buffer_number),
            format!("max_write_buffer_number must be 2..=64, got {}", self.max_write_buffer_number),
        )?;
        check(
            (crate::sst::format::MIN_FORMAT_VERSION..=crate::sst::format::FORMAT_VERSION)
                .contains(&self.format_version),
            format!("format_version must be 1 or 2, got {}", self.format_version),
        )?;
        check(
            (256..=(4 << 20)).contains(&self.block_size),
            format!("block_size must be 256..=4194304 bytes, got {}", self.block_size),
        )?;
        check(
            (1..=1024).contains(&self.block_restart_interval),
            format!("block_restart_interval must be 1..=1024, got {}", self.block_restart_interval),
        )?;
        check(
            self.bloom_bits_per_key <= 64,
            format!("bloom_bits_per_key must be 0..=64, got {}", self.bloom_bits_per_key),
        )?;
        check(
            self.level0_file_num_compaction_trigger >= 1,
            "level0_file_num_compaction_trigger must be at least 1".to_string(),
        )?;
        check(
            self.level0_stop_writes_trigger > self.level0_file_num_compaction_trigger,
            format!(
                "level0_stop_writes_trigger ({}) must exceed level0_file_num_compaction_trigger ({})",
                self.level0_stop_writes_trigger, self.level0_file_num_compaction_trigger
            ),
        )?;
        check(
            self.max_bytes_for_level_base >= 64 << 10,
            "max_bytes_for_level_base must be at least 65536".to_string(),
        )?;
        check(
            (2..=1000).contains(&self.max_bytes_for_level_multiplier),
            format!("max_bytes_for_level_multiplier must be 2..=1000, got {}", self.max_bytes_for_level_multiplier),
        )?;
        check(self.target_file_size_base >= 64 << 10, "target_file_size_base must be at least 65536".to_string())?;
        check(
            self.max_manifest_file_size >= 256,
            format!("max_manifest_file_size must be at least 256, got {}", self.max_manifest_file_size),
        )?;
        check(
            self.compression_dict_bytes == 0
                || (32..=crate::sst::MAX_DICT_BYTES).contains(&self.compression_dict_bytes),
            format!(
                "compression_dict_bytes must be 0 or 32..={} (LZ4's window), got {}",
                crate::sst::MAX_DICT_BYTES,
                self.compression_dict_bytes
            ),
        )?;
        Ok(())
    }

    /// How tables are written: `bottommost` for the outputs of compactions
    /// into the bottommost level, ingests and imports (which may have a
    /// compression dictionary when the rest may not).
    pub(crate) fn table_options(&self, bottommost: bool) -> TableOptions {
        let dict = bottommost || self.compression_dict_every_level;
        TableOptions {
            dict_bytes: if dict { self.compression_dict_bytes } else { 0 },
            dict_buffer_bytes: crate::sst::DEFAULT_DICT_BUFFER_BYTES,
            block_size: self.block_size,
            restart_interval: self.block_restart_interval,
            compression: self.compression,
            bloom_bits_per_key: self.bloom_bits_per_key,
            data_block_hash_index: self.data_block_hash_index,
            format_version: self.format_version,
        }
    }

    pub(crate) fn picker_options(&self) -> crate::compaction::picker::PickerOptions {
        crate::compaction::picker::PickerOptions {
            level0_file_num_compaction_trigger: self.level0_file_num_compaction_trigger,
            max_bytes_for_level_base: self.max_bytes_for_level_base,
            max_bytes_for_level_multiplier: self.max_bytes_for_level_multiplier,
            min_l0_move_bytes: self.target_file_size_base / 4,
        }
    }

    /// Bytes of the bloom filter of a new active memtable (0: none).
    pub(crate) fn memtable_bloom_bytes(&self) -> usize {
        if self.memtable_whole_key_filtering {
            self.write_buffer_size / 64
        } else {
            0
        }
    }

    /// The clock, when durations are measured (`StatsLevel::All` and a clock).
    pub(crate) fn timer(&self) -> Option<&dyn Clock> {
        match self.stats_level {
            StatsLevel::All => self.clock.as_deref(),
            StatsLevel::ExceptTimers => None,
        }
    }

    /// The clock, owned, when durations are measured (for work that
    /// outlives a call: flush and compaction jobs).
    pub(crate) fn timer_owned(&self) -> Option<Arc<dyn Clock>> {
        self.timer().and(self.clock.clone())
    }

    /// Now, when durations are measured; 0 otherwise.
    pub(crate) fn now_micros(&self) -> u64 {
        self.timer().map_or(0, |c| c.now_micros())
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
    /// Iterators with a `snapshot`: when the database installs a new
    /// SuperVersion (after a flush or compaction), move the iterator onto it
    /// at its next positioning call, keeping the snapshot's view and the
    /// position, so it stops pinning obsolete memtables and files (RocksDB's
    /// `auto_refresh_iterator_with_snapshot`). Without a snapshot it has no
    /// effect: the iterator's implicit view would change.
    pub auto_refresh_iterator_with_snapshot: bool,
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

/// Rejects keys the engine does not store: longer than [`MAX_KEY_LEN`].
/// The empty key is a key like any other (the first of all in order), as in
/// LevelDB and RocksDB.
pub(crate) fn check_key(key: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY_LEN {
        return Err(Error::InvalidArgument(format!(
            "key of {} bytes exceeds the maximum of {MAX_KEY_LEN}: keep keys short and put large data in the value",
            key.len()
        )));
    }
    Ok(())
}

pub(crate) fn check_value(value: &[u8]) -> Result<()> {
    if value.len() > MAX_VALUE_LEN {
        return Err(Error::InvalidArgument(format!(
            "value of {} bytes exceeds the maximum of {MAX_VALUE_LEN}: split it across several keys",
            value.len()
        )));
    }
    Ok(())
}
