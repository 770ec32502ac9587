//! Sorted string tables: immutable files of sorted internal keys.

pub mod block;
mod builder;
pub mod filter;
pub mod format;
mod table;

pub use builder::{TableBuilder, TableOptions};
pub use table::{BatchKey, Table};
