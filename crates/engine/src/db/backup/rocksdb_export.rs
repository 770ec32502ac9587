//! The RocksDB form of an export: the live entries of a range at a
//! snapshot (merges applied, deleted keys and range deletions resolved
//! away: none travels) as RocksDB table files that `IngestExternalFile`
//! takes, split at a target size, in a ustar archive
//! (`rocksdb::tar`): `tar -xf` and `ldb ingest_extern_sst` load it into
//! RocksDB. Each table is built in memory before it is handed out (a
//! ustar header gives the size first): the target bounds that memory.

use crate::error::Result;
use crate::rocksdb::{tar, TableWriter, TableWriterOptions};
use crate::{DbIterator, Snapshot};

/// The target size of each table when none is given.
pub(crate) const DEFAULT_TARGET_FILE_SIZE: u64 = 32 << 20;
/// The largest target taken (each table is built in memory).
pub(crate) const MAX_TARGET_FILE_SIZE: u64 = 1 << 30;

pub(super) struct RocksdbTables {
    pub(super) it: Box<DbIterator>,
    pub(super) _snapshot: Snapshot,
    pub(super) skip: Option<(Vec<u8>, Vec<u8>)>,
    pub(super) target: u64,
    pub(super) lz4: bool,
    /// Bytes ready to hand out, from `handed` on.
    pending: Vec<u8>,
    handed: usize,
    /// The last table's buffer, for the next one.
    spare: Vec<u8>,
    /// Tables written so far (their names count from 1).
    files: u64,
    done: bool,
}

impl RocksdbTables {
    pub(super) fn new(
        it: Box<DbIterator>,
        snapshot: Snapshot,
        skip: Option<(Vec<u8>, Vec<u8>)>,
        target: u64,
        lz4: bool,
    ) -> Self {
        let target = if target == 0 { DEFAULT_TARGET_FILE_SIZE } else { target.min(MAX_TARGET_FILE_SIZE) };
        RocksdbTables {
            it,
            _snapshot: snapshot,
            skip,
            target,
            lz4,
            pending: Vec::new(),
            handed: 0,
            spare: Vec::new(),
            files: 0,
            done: false,
        }
    }

    /// The next piece of the archive, or `None` after its end. `entries`
    /// counts the entries written.
    pub(super) fn next_chunk(&mut self, max_bytes: usize, entries: &mut u64) -> Result<Option<Vec<u8>>> {
        let max_bytes = max_bytes.max(1);
        while self.pending.len() - self.handed < max_bytes && !self.done {
            // What was handed out goes before the next table comes (once
            // per table: never the rest moved for each piece).
            self.pending.drain(..self.handed);
            self.handed = 0;
            self.next_table(entries)?;
        }
        if self.handed == self.pending.len() {
            return Ok(None);
        }
        let n = (self.pending.len() - self.handed).min(max_bytes);
        let piece = self.pending[self.handed..self.handed + n].to_vec();
        self.handed += n;
        Ok(Some(piece))
    }

    /// Builds the next table and appends it to the pending bytes, or the
    /// archive's end after the last one. An empty database or range gives
    /// an archive of no table (RocksDB refuses an empty table).
    fn next_table(&mut self, entries: &mut u64) -> Result<()> {
        let options = TableWriterOptions { lz4: self.lz4, ..TableWriterOptions::default() };
        // In the buffer of the table before: grown once, not for each table.
        let mut w = TableWriter::with_buffer(options, std::mem::take(&mut self.spare));
        // At least one entry per table, however small the target.
        while self.it.valid() && (w.count() == 0 || w.approximate_size() < self.target) {
            let k = self.it.key();
            let skipped = self.skip.as_ref().is_some_and(|(lo, hi)| k >= lo.as_slice() && k < hi.as_slice());
            if !skipped {
                w.add(k, self.it.value())?;
            }
            self.it.next();
        }
        self.it.status()?;
        if w.count() > 0 {
            *entries += w.count();
            self.files += 1;
            let bytes = w.finish()?;
            tar::put_header(&mut self.pending, &format!("{:06}.sst", self.files), bytes.len() as u64);
            self.pending.extend_from_slice(&bytes);
            tar::put_padding(&mut self.pending, bytes.len() as u64);
            self.spare = bytes;
        }
        if !self.it.valid() {
            tar::put_end(&mut self.pending);
            self.done = true;
        }
        Ok(())
    }
}
