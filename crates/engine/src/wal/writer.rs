use std::sync::Arc;

use super::{ChunkType, BLOCK_SIZE, HEADER_SIZE};
use crate::error::{Error, Result};
use crate::format::checksum::{crc32c, crc32c_extend, mask};
use crate::fs::File;

/// Appends records to a log file.
///
/// Invariant: `block_offset` is where the next chunk starts inside the
/// current block, and we never leave fewer than `HEADER_SIZE` bytes of a
/// block unused without zero-filling them.
pub struct LogWriter {
    file: Arc<dyn File>,
    block_offset: usize,
    /// Bytes appended (the file's length as this writer sees it).
    len: u64,
    buf: Vec<u8>,
    /// Set when an append failed and its partial bytes could not be cut off:
    /// a record after them would follow garbage, so none may be added.
    broken: Option<String>,
}

impl LogWriter {
    /// A writer that appends to `file`, which currently holds `len` bytes.
    pub fn new(file: Arc<dyn File>, len: u64) -> Self {
        LogWriter { file, block_offset: (len % BLOCK_SIZE as u64) as usize, len, buf: Vec::new(), broken: None }
    }

    /// Appends one record. The whole record goes to the file in a single
    /// `append` call. Not durable until [`LogWriter::sync`].
    ///
    /// If the append fails (a full disk, a quota), whatever part of it
    /// reached the file is cut off again, so the log stays a sequence of
    /// whole records and later records may follow; if even that fails, every
    /// later call fails with `IoError`.
    pub fn add_record(&mut self, data: &[u8]) -> Result<()> {
        if let Some(why) = &self.broken {
            return Err(Error::io("log", "append", why));
        }
        self.buf.clear();
        let mut left = data;
        let mut begin = true;
        let mut block_offset = self.block_offset;
        loop {
            let leftover = BLOCK_SIZE - block_offset;
            if leftover < HEADER_SIZE {
                self.buf.extend(std::iter::repeat_n(0u8, leftover));
                block_offset = 0;
            }
            let avail = BLOCK_SIZE - block_offset - HEADER_SIZE;
            let n = left.len().min(avail);
            let end = n == left.len();
            let ty = match (begin, end) {
                (true, true) => ChunkType::Full,
                (true, false) => ChunkType::First,
                (false, true) => ChunkType::Last,
                (false, false) => ChunkType::Middle,
            };
            let payload = &left[..n];
            let crc = mask(crc32c_extend(crc32c(&[ty as u8]), payload));
            self.buf.extend_from_slice(&crc.to_le_bytes());
            self.buf.extend_from_slice(&(n as u16).to_le_bytes());
            self.buf.push(ty as u8);
            self.buf.extend_from_slice(payload);
            block_offset += HEADER_SIZE + n;
            left = &left[n..];
            begin = false;
            if end {
                break;
            }
        }
        if let Err(e) = self.file.append(&self.buf) {
            if let Err(t) = self.file.truncate(self.len) {
                self.broken = Some(format!("an append failed ({e}) and its partial bytes could not be cut off ({t})"));
            }
            return Err(e);
        }
        self.len += self.buf.len() as u64;
        self.block_offset = block_offset;
        Ok(())
    }

    /// Makes every record added so far durable.
    pub fn sync(&self) -> Result<()> {
        self.file.sync()
    }

    /// Bytes written to the file so far.
    pub fn len(&self) -> u64 {
        self.len
    }
}
