//! The read path's shared pieces: the per-lookup `GetContext`.

mod get_context;

pub use get_context::{unsupported_entry, GetContext};
