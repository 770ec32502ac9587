//! Compaction: the picker (what to compact, a pure function), the resolver
//! (what survives of a key's versions) and the resumable job that writes the
//! output tables (shared with flushes).

pub mod job;
pub mod picker;
pub mod resolver;
