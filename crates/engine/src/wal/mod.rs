//! The record log used for the write-ahead log and the manifest: LevelDB's
//! log format (`log_format.h`).
//!
//! ## Format
//! The file is a sequence of 32 KiB blocks. A record is written as one or
//! more *chunks*; a chunk never spans blocks:
//! ```text
//! chunk  := masked_crc32c: fixed32le   length: fixed16le   type: u8   payload[length]
//! type   := 1 FULL | 2 FIRST | 3 MIDDLE | 4 LAST
//! crc    := crc32c(type byte ++ payload), masked
//! ```
//! When fewer than 7 bytes (a chunk header) remain in a block they are
//! zero-filled and the next chunk starts the next block.

mod reader;
mod writer;

pub use reader::LogReader;
pub use writer::LogWriter;

pub const BLOCK_SIZE: usize = 32 * 1024;
pub const HEADER_SIZE: usize = 7;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum ChunkType {
    Full = 1,
    First = 2,
    Middle = 3,
    Last = 4,
}

#[cfg(test)]
mod tests;
