use std::sync::Arc;

use super::{ChunkType, BLOCK_SIZE, HEADER_SIZE};
use crate::error::{Error, Result};
use crate::format::checksum::{crc32c, crc32c_extend, unmask};
use crate::fs::File;

/// Reads the records of a log file, checking every chunk.
///
/// A damaged or incomplete chunk at the *end* of the file is what a crash in
/// the middle of an append leaves; it is tolerated and the records before it
/// are returned (see [`LogReader::tail_corruption`]). Damage followed by any
/// intact record cannot come from a crash: it is reported as `Corruption`
/// with the offset of the first bad byte.
pub struct LogReader {
    file: Arc<dyn File>,
    path: String,
    file_len: u64,
    /// Offset of the block in `block`.
    block_start: u64,
    block: Vec<u8>,
    pos: usize,
    /// First damage seen and not yet known to be the tail.
    pending: Option<(u64, String)>,
    tail: Option<(u64, String)>,
    started: bool,
}

enum Chunk {
    Data { ty: ChunkType, start: u64, payload_at: usize, len: usize },
    Bad { at: u64, reason: String },
    Eof,
}

impl LogReader {
    pub fn new(file: Arc<dyn File>, path: &str) -> Result<Self> {
        let file_len = file.len()?;
        Ok(LogReader {
            file,
            path: path.to_string(),
            file_len,
            block_start: 0,
            block: Vec::new(),
            pos: 0,
            pending: None,
            tail: None,
            started: false,
        })
    }

    /// Where the tail of the file was damaged or incomplete, if it was.
    pub fn tail_corruption(&self) -> Option<&(u64, String)> {
        self.tail.as_ref()
    }

    fn load_block(&mut self, start: u64) -> Result<bool> {
        if start >= self.file_len {
            return Ok(false);
        }
        let n = (self.file_len - start).min(BLOCK_SIZE as u64) as usize;
        self.block.resize(n, 0);
        crate::fs::read_exact_at(&*self.file, &self.path, start, &mut self.block)?;
        self.block_start = start;
        self.pos = 0;
        Ok(true)
    }

    fn next_chunk(&mut self) -> Result<Chunk> {
        loop {
            if !self.started {
                self.started = true;
                if !self.load_block(0)? {
                    return Ok(Chunk::Eof);
                }
                continue;
            }
            if self.block.len() - self.pos < HEADER_SIZE {
                // The rest of a full block shorter than a header is padding; in
                // the last, partial block it is an incomplete header.
                let partial = self.block.len() < BLOCK_SIZE && self.pos < self.block.len();
                let next = self.block_start + self.block.len() as u64;
                if partial {
                    let at = self.block_start + self.pos as u64;
                    self.pos = self.block.len();
                    return Ok(Chunk::Bad { at, reason: "truncated chunk header".into() });
                }
                if !self.load_block(next)? {
                    return Ok(Chunk::Eof);
                }
                continue;
            }
            let start = self.block_start + self.pos as u64;
            let h = &self.block[self.pos..self.pos + HEADER_SIZE];
            let stored = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
            let len = u16::from_le_bytes([h[4], h[5]]) as usize;
            let ty_byte = h[6];
            let payload_at = self.pos + HEADER_SIZE;
            if payload_at + len > self.block.len() {
                let reason = if self.block.len() < BLOCK_SIZE {
                    "chunk runs past the end of the file"
                } else {
                    "chunk length runs past the block"
                };
                self.pos = self.block.len();
                return Ok(Chunk::Bad { at: start, reason: reason.into() });
            }
            if ty_byte == 0 && len == 0 && stored == 0 {
                // Zero-filled space (preallocation, or a torn write that never
                // landed): skip the rest of this block.
                self.pos = self.block.len();
                return Ok(Chunk::Bad { at: start, reason: "zero-filled chunk".into() });
            }
            let payload = &self.block[payload_at..payload_at + len];
            let actual = crc32c_extend(crc32c(&[ty_byte]), payload);
            if unmask(stored) != actual {
                // Trust the length to find the next chunk: if what follows is
                // intact, this was not a torn tail but damage, and the caller
                // reports it. A damaged length sends us to garbage, which
                // fails and skips to the next block.
                self.pos = payload_at + len;
                return Ok(Chunk::Bad { at: start, reason: "chunk checksum mismatch".into() });
            }
            let ty = match ty_byte {
                1 => ChunkType::Full,
                2 => ChunkType::First,
                3 => ChunkType::Middle,
                4 => ChunkType::Last,
                t => {
                    self.pos = self.block.len();
                    return Ok(Chunk::Bad { at: start, reason: format!("unknown chunk type {t}") });
                }
            };
            self.pos = payload_at + len;
            return Ok(Chunk::Data { ty, start, payload_at, len });
        }
    }

    fn damage(&mut self, at: u64, reason: String) {
        if self.pending.is_none() {
            self.pending = Some((at, reason));
        }
    }

    /// The next intact record and its offset in the file, `None` at the end.
    pub fn next_record(&mut self) -> Result<Option<(Vec<u8>, u64)>> {
        let mut record: Option<(Vec<u8>, u64)> = None;
        loop {
            match self.next_chunk()? {
                Chunk::Eof => {
                    if let Some((_, start)) = record {
                        self.damage(start, "record without its last chunk".into());
                    }
                    self.tail = self.pending.take();
                    return Ok(None);
                }
                Chunk::Bad { at, reason } => {
                    if let Some((_, start)) = record.take() {
                        self.damage(start, "record cut by a damaged chunk".into());
                    }
                    self.damage(at, reason);
                }
                Chunk::Data { ty, start, payload_at, len } => {
                    let range = payload_at..payload_at + len;
                    match ty {
                        ChunkType::Full | ChunkType::First => {
                            if let Some((_, s)) = record.take() {
                                self.damage(s, "record without its last chunk".into());
                            }
                            if ty == ChunkType::Full {
                                self.fail_if_damaged()?;
                                return Ok(Some((self.block[range].to_vec(), start)));
                            }
                            record = Some((self.block[range].to_vec(), start));
                        }
                        ChunkType::Middle | ChunkType::Last => match record.as_mut() {
                            Some((buf, _)) => {
                                buf.extend_from_slice(&self.block[range]);
                                if ty == ChunkType::Last {
                                    self.fail_if_damaged()?;
                                    return Ok(record.take());
                                }
                            }
                            None => self.damage(start, "continuation chunk without a first chunk".into()),
                        },
                    }
                }
            }
        }
    }

    fn fail_if_damaged(&mut self) -> Result<()> {
        match self.pending.take() {
            Some((at, reason)) => Err(Error::corruption(&self.path, at, reason)),
            None => Ok(()),
        }
    }
}
