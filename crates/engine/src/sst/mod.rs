//! Sorted string tables: immutable files of sorted internal keys.

pub mod block;
mod builder;
mod dictionary;
pub mod filter;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod filter_simd;
pub mod flat_index;
pub mod format;
mod table;

pub use builder::{TableBuilder, TableInfo, TableOptions, DEFAULT_DICT_BUFFER_BYTES, MAX_DICT_BYTES};
pub use table::{BatchKey, Table, TableIter};
