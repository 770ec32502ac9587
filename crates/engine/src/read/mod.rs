//! The read path's shared pieces: the per-lookup `GetContext`, and the row
//! cache.

mod get_context;
pub mod row_cache;

pub use get_context::{unsupported_entry, GetContext};
