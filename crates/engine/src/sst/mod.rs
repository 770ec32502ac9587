//! Sorted string tables: immutable files of sorted internal keys.

pub mod block;
mod builder;
pub mod filter;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod filter_simd;
pub mod flat_index;
pub mod format;
mod table;

pub use builder::{TableBuilder, TableInfo, TableOptions};
pub use table::{BatchKey, Table, TableIter};
