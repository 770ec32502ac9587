//! Open options as JavaScript sets them, turned into the engine's.

use std::sync::Arc;

use silt_engine::{AppendOperator, Clock, Compression, Options, StatsLevel, U64AddOperator};
use wasm_bindgen::prelude::*;

/// How to open a database. `siltdb` checks types and ranges first; zero
/// (or -1 for `bloomBitsPerKey`) keeps the engine's default, and the engine
/// validates the rest (`InvalidArgument` names the option).
#[wasm_bindgen]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpenOptions {
    #[wasm_bindgen(js_name = createIfMissing)]
    pub create_if_missing: bool,
    #[wasm_bindgen(js_name = errorIfExists)]
    pub error_if_exists: bool,
    #[wasm_bindgen(js_name = writeBufferSize)]
    pub write_buffer_size: u32,
    #[wasm_bindgen(js_name = maxWriteBufferNumber)]
    pub max_write_buffer_number: u32,
    #[wasm_bindgen(js_name = blockSize)]
    pub block_size: u32,
    #[wasm_bindgen(js_name = blockCacheCapacity)]
    pub block_cache_capacity: u32,
    /// Bytes of the row cache (0: none, the default).
    #[wasm_bindgen(js_name = rowCacheCapacity)]
    pub row_cache_capacity: u32,
    #[wasm_bindgen(js_name = bloomBitsPerKey)]
    pub bloom_bits_per_key: i32,
    /// Store blocks uncompressed instead of LZ4.
    #[wasm_bindgen(js_name = noCompression)]
    pub no_compression: bool,
    /// Cap on the bytes the database's OPFS files take, headers included
    /// (0 = none but the browser's quota); a whole number below 2^53.
    /// Ordinary writes stop [`MAX_BYTES_RESERVE_DIVISOR`]-th short of it.
    #[wasm_bindgen(js_name = maxBytes)]
    pub max_bytes: f64,
    /// Measure durations (`StatsLevel::All`): each reading of the clock is
    /// a call out of wasm to `performance.now()`, so they are off by default.
    pub timers: bool,
    /// The merge operator: 0 none, 1 `u64add` (a counter: 8-byte
    /// little-endian unsigned integers added), 2 `append` (bytes appended).
    #[wasm_bindgen(js_name = mergeOperator)]
    pub merge_operator: u8,
    /// Compact files that lookups search in vain (the engine's
    /// `read_triggered_compaction`; default true).
    #[wasm_bindgen(js_name = readTriggeredCompaction)]
    pub read_triggered_compaction: bool,
    /// Bytes of writes a transaction holds in memory before it spills them
    /// into a file of its own (the engine's `transaction_spill_bytes`): -1
    /// keeps the engine's default, 0 never spills.
    #[wasm_bindgen(js_name = transactionSpillBytes)]
    pub transaction_spill_bytes: i32,
    /// The bound on what one idle compaction rewrites (the engine's
    /// `idle_compaction_max_bytes`): a whole number of bytes below 2^53,
    /// 0 for none; -1 keeps the engine's default.
    #[wasm_bindgen(js_name = idleCompactionMaxBytes)]
    pub idle_compaction_max_bytes: f64,
    /// The most bytes of a table's compression dictionary (the engine's
    /// `compression_dict_bytes`, with `compression_dict_every_level`: a
    /// database fed in key order reaches its last level by trivial moves of
    /// flushed tables, which only flushes could give a dictionary): 0 for
    /// none, -1 keeps the engine's default.
    #[wasm_bindgen(js_name = compressionDictBytes)]
    pub compression_dict_bytes: i32,
}

/// Ordinary writes leave `maxBytes / 4` free: the room for deletes,
/// flushes, compactions and reopening, so that a database that hit its cap
/// can always be emptied and reopened (RocksDB's SstFileManager keeps a
/// compaction buffer for the same reason).
#[cfg_attr(not(target_arch = "wasm32"), expect(dead_code, reason = "only the OPFS pool (wasm32) has a size cap"))]
pub const MAX_BYTES_RESERVE_DIVISOR: u64 = 4;

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            create_if_missing: true,
            error_if_exists: false,
            write_buffer_size: 0,
            max_write_buffer_number: 0,
            block_size: 0,
            block_cache_capacity: 0,
            row_cache_capacity: 0,
            bloom_bits_per_key: -1,
            no_compression: false,
            max_bytes: 0.0,
            timers: false,
            merge_operator: 0,
            read_triggered_compaction: true,
            transaction_spill_bytes: -1,
            idle_compaction_max_bytes: -1.0,
            compression_dict_bytes: -1,
        }
    }
}

#[wasm_bindgen]
impl OpenOptions {
    #[wasm_bindgen(constructor)]
    pub fn new() -> OpenOptions {
        OpenOptions::default()
    }
}

impl OpenOptions {
    /// The size cap in bytes, if one is set; `InvalidArgument` if it is not
    /// a whole, non-negative number of bytes below 2^53.
    pub(crate) fn max_bytes(&self) -> Result<Option<u64>, crate::error::BindingError> {
        let m = self.max_bytes;
        if !(m.is_finite() && m >= 0.0 && m.fract() == 0.0 && m < 9_007_199_254_740_992.0) {
            return Err(crate::error::BindingError::invalid(String::from(
                // Not the number itself: formatting an f64 would bring float
                // formatting into the module (16 KB before wasm-opt) for a
                // message the package's own check (js/src/local/options.ts)
                // gives first, with the number.
                "maxBytes must be a whole number of bytes from 0 to 2^53 - 1",
            )));
        }
        Ok((m > 0.0).then_some(m as u64))
    }

    pub(crate) fn to_engine(self, clock: Option<Arc<dyn Clock>>) -> Options {
        let mut o = Options {
            create_if_missing: self.create_if_missing,
            error_if_exists: self.error_if_exists,
            clock,
            ..Options::default()
        };
        if self.write_buffer_size != 0 {
            o.write_buffer_size = self.write_buffer_size as usize;
        }
        if self.max_write_buffer_number != 0 {
            o.max_write_buffer_number = self.max_write_buffer_number as usize;
        }
        if self.block_size != 0 {
            o.block_size = self.block_size as usize;
        }
        if self.block_cache_capacity != 0 {
            o.block_cache_capacity = self.block_cache_capacity as usize;
        }
        o.row_cache_capacity = self.row_cache_capacity as usize;
        if let Ok(bits) = u32::try_from(self.bloom_bits_per_key) {
            o.bloom_bits_per_key = bits;
        }
        if self.no_compression {
            o.compression = Compression::None;
        }
        if self.timers {
            o.stats_level = StatsLevel::All;
        }
        o.read_triggered_compaction = self.read_triggered_compaction;
        if let Ok(bytes) = usize::try_from(self.transaction_spill_bytes) {
            o.transaction_spill_bytes = bytes;
        }
        // (Checked by the package: a whole number; anything else keeps the default.)
        let idle = self.idle_compaction_max_bytes;
        if (0.0..=9_007_199_254_740_991.0).contains(&idle) && idle.fract() == 0.0 {
            o.idle_compaction_max_bytes = idle as u64;
        }
        if let Ok(bytes) = usize::try_from(self.compression_dict_bytes) {
            o.compression_dict_bytes = bytes;
            o.compression_dict_every_level = bytes > 0;
        }
        o.merge_operator = match self.merge_operator {
            1 => Some(Arc::new(U64AddOperator)),
            2 => Some(Arc::new(AppendOperator)),
            _ => None,
        };
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeros_keep_the_engine_defaults() {
        let o = OpenOptions::default().to_engine(None);
        let d = Options::default();
        assert_eq!(format!("{o:?}"), format!("{d:?}"));
    }

    #[test]
    fn set_values_reach_the_engine() {
        let o = OpenOptions {
            create_if_missing: false,
            error_if_exists: true,
            write_buffer_size: 1 << 20,
            max_write_buffer_number: 3,
            block_size: 8192,
            block_cache_capacity: 1 << 22,
            row_cache_capacity: 1 << 20,
            bloom_bits_per_key: 0,
            no_compression: true,
            max_bytes: 0.0,
            timers: true,
            merge_operator: 2,
            read_triggered_compaction: false,
            transaction_spill_bytes: 0,
            idle_compaction_max_bytes: 0.0,
            compression_dict_bytes: 16384,
        }
        .to_engine(None);
        assert_eq!(o.idle_compaction_max_bytes, 0);
        assert_eq!(o.compression_dict_bytes, 16384);
        assert!(o.compression_dict_every_level);
        assert!(!o.create_if_missing && o.error_if_exists);
        assert_eq!(o.write_buffer_size, 1 << 20);
        assert_eq!(o.max_write_buffer_number, 3);
        assert_eq!(o.block_size, 8192);
        assert_eq!(o.block_cache_capacity, 1 << 22);
        assert_eq!(o.row_cache_capacity, 1 << 20);
        assert_eq!(o.bloom_bits_per_key, 0);
        assert_eq!(o.compression, Compression::None);
        assert_eq!(o.stats_level, StatsLevel::All);
        assert_eq!(o.merge_operator.as_deref().map(|m| m.name()), Some("append"));
        assert!(!o.read_triggered_compaction);
        assert_eq!(o.transaction_spill_bytes, 0);
        let o = OpenOptions { transaction_spill_bytes: 1 << 16, ..OpenOptions::default() }.to_engine(None);
        assert_eq!(o.transaction_spill_bytes, 1 << 16);
    }

    #[test]
    fn max_bytes_is_a_whole_number_of_bytes_or_none() {
        let with = |max_bytes| OpenOptions { max_bytes, ..OpenOptions::default() }.max_bytes();
        assert_eq!(with(0.0), Ok(None));
        assert_eq!(with(4096.0), Ok(Some(4096)));
        assert_eq!(with(9_007_199_254_740_991.0), Ok(Some(9_007_199_254_740_991)));
        for bad in [-1.0, 1.5, f64::NAN, f64::INFINITY, 9_007_199_254_740_992.0] {
            let err = with(bad).expect_err("a bad maxBytes");
            assert_eq!(err.code, "InvalidArgument");
            assert!(err.message.contains("maxBytes"), "{}", err.message);
        }
    }
}
