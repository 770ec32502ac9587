//! Open options as JavaScript sets them, turned into the engine's.

use std::sync::Arc;

use silt_engine::{Clock, Compression, Options};
use wasm_bindgen::prelude::*;

/// How to open a database. `siltdb` checks types and ranges first; zero
/// (or -1 for `bloomBitsPerKey`) keeps the engine's default, and the engine
/// validates the rest (`InvalidArgument` names the option).
#[wasm_bindgen]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
    #[wasm_bindgen(js_name = bloomBitsPerKey)]
    pub bloom_bits_per_key: i32,
    /// Store blocks uncompressed instead of LZ4.
    #[wasm_bindgen(js_name = noCompression)]
    pub no_compression: bool,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            create_if_missing: true,
            error_if_exists: false,
            write_buffer_size: 0,
            max_write_buffer_number: 0,
            block_size: 0,
            block_cache_capacity: 0,
            bloom_bits_per_key: -1,
            no_compression: false,
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
        if let Ok(bits) = u32::try_from(self.bloom_bits_per_key) {
            o.bloom_bits_per_key = bits;
        }
        if self.no_compression {
            o.compression = Compression::None;
        }
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
            bloom_bits_per_key: 0,
            no_compression: true,
        }
        .to_engine(None);
        assert!(!o.create_if_missing && o.error_if_exists);
        assert_eq!(o.write_buffer_size, 1 << 20);
        assert_eq!(o.max_write_buffer_number, 3);
        assert_eq!(o.block_size, 8192);
        assert_eq!(o.block_cache_capacity, 1 << 22);
        assert_eq!(o.bloom_bits_per_key, 0);
        assert_eq!(o.compression, Compression::None);
    }
}
