//! The exporter: a consistent snapshot of a database handed out as the
//! stream's chunks, in the entries form or the tables form.

use std::sync::Arc;

use super::format::{
    chunk_check, put_chunk, table_record, EXPORT_MAGIC, EXPORT_VERSION, EXPORT_VERSION_ENTRIES, KIND_END, KIND_ENTRIES,
    KIND_TABLE, KIND_TABLE_BYTES, MAX_CHUNK,
};
use crate::db::options::{MAX_KEY_LEN, MAX_VALUE_LEN};
use crate::db::{Db, DbInner, ReadOptions, Snapshot, SuperVersion};
use crate::error::{Error, Result};
use crate::format::coding::{put_fixed32, put_fixed64, put_varint32};
use crate::format::key;
use crate::fs::{read_exact_at, Fs, MemFs};
use crate::iter::{InternalIterator, MergingIterator};
use crate::sst::TableBuilder;
use crate::version::{table_path, FileMeta};
use crate::DbIterator;

use super::rocksdb_export::RocksdbTables;

/// The form of an export.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ExportForm {
    /// Tables for a whole database, entries for a range or with `skip`.
    #[default]
    Auto,
    /// The live entries only (format version 1): smaller when much is
    /// deleted or overwritten, and nothing deleted travels; slower to
    /// import (its tables are built anew).
    Entries,
    /// The table files as they are (format version 2): a whole database
    /// only.
    Tables,
    /// The live entries as RocksDB table files in a ustar archive, for
    /// RocksDB's `IngestExternalFile` (`rocksdb_export.rs`): not a Silt
    /// stream (`import` does not take it; `ingest_rocksdb` does).
    Rocksdb,
}

/// What an export covers.
#[derive(Clone, Debug, Default)]
pub struct ExportOptions {
    /// First key included.
    pub lower: Option<Vec<u8>>,
    /// First key excluded.
    pub upper: Option<Vec<u8>>,
    /// Keys in `[skip.0, skip.1)` are left out (an embedder's bookkeeping).
    pub skip: Option<(Vec<u8>, Vec<u8>)>,
    /// Entries or tables.
    pub form: ExportForm,
    /// RocksDB form: each table's target size (0: 32 MiB).
    pub target_file_size: u64,
    /// RocksDB form: data blocks compressed with LZ4 where it pays.
    pub lz4: bool,
}

/// An export in progress: hands out the stream in pieces
/// ([`Exporter::next_chunk`]), reading at the snapshot taken when it began.
pub struct Exporter {
    source: Source,
    sequence: u64,
    header_done: bool,
    end_done: bool,
    count: u64,
}

enum Source {
    Entries { it: Box<DbIterator>, _snapshot: Snapshot, skip: Option<(Vec<u8>, Vec<u8>)> },
    Tables(Tables),
    Rocksdb(RocksdbTables),
}

/// The tables of a whole-database export, handed out one after the other.
struct Tables {
    /// Keeps the version's files from being deleted while they are read
    /// (let go when the export is dropped: see its `Drop`).
    sv: Option<Arc<SuperVersion>>,
    db: Arc<DbInner>,
    fs: Arc<dyn Fs>,
    list: Vec<ExportTable>,
    /// The table being handed out, and how many of its bytes were.
    next: usize,
    at: Option<u64>,
    merge_operator: String,
}

struct ExportTable {
    level: usize,
    meta: FileMeta,
    bytes: TableBytes,
}

enum TableBytes {
    /// Opened when its turn comes (one file open at a time).
    File { path: String, file: Option<Arc<dyn crate::fs::File>> },
    /// The memtables' entries, built into a table when the export began.
    Memory(Vec<u8>),
}

impl Drop for Tables {
    fn drop(&mut self) {
        // Files a compaction replaced while the export read them were kept
        // for it alone: they go now, as an iterator's do when it is let go
        // (no background job may come for a long while to sweep them).
        if let Some(sv) = self.sv.take() {
            let stale = self.db.sv_number.load(std::sync::atomic::Ordering::Acquire) != sv.number;
            drop(sv);
            if stale {
                self.db.purge_obsolete_files();
            }
        }
    }
}

impl Db {
    /// Starts an export of the keys `options` cover, as of now.
    pub fn export(&self, options: &ExportOptions) -> Result<Exporter> {
        self.check_open()?;
        let whole = options.lower.is_none() && options.upper.is_none() && options.skip.is_none();
        match options.form {
            ExportForm::Tables if !whole => return Err(Error::InvalidArgument(
                "an export in the tables form is of a whole database: leave out the range, or ask for the entries form"
                    .into(),
            )),
            ExportForm::Tables | ExportForm::Auto if whole => return self.export_tables(),
            _ => {}
        }
        let snapshot = self.snapshot();
        let opts = ReadOptions {
            snapshot: Some(&snapshot),
            lower_bound: options.lower.clone(),
            upper_bound: options.upper.clone(),
            fill_cache: Some(false),
            ..ReadOptions::default()
        };
        let mut it = self.iter(&opts)?;
        it.seek_to_first();
        if options.form == ExportForm::Rocksdb {
            let sequence = snapshot.sequence();
            let tables =
                RocksdbTables::new(Box::new(it), snapshot, options.skip.clone(), options.target_file_size, options.lz4);
            return Ok(Exporter {
                sequence,
                source: Source::Rocksdb(tables),
                header_done: true,
                end_done: false,
                count: 0,
            });
        }
        Ok(Exporter {
            sequence: snapshot.sequence(),
            source: Source::Entries { it: Box::new(it), _snapshot: snapshot, skip: options.skip.clone() },
            header_done: false,
            end_done: false,
            count: 0,
        })
    }

    /// The tables form: the current version's files (kept while the export
    /// lives) and the memtables' entries up to now as one table more.
    fn export_tables(&self) -> Result<Exporter> {
        let inner = &*self.inner;
        let (sv, seq) = self.read_view(None);
        // A commit that added tables (an ingest) shows the version before
        // the number: a file of the version may be numbered past `seq`,
        // and was committed all the same.
        let seq = sv.version.files().map(|(_, f)| f.meta.largest_seq).fold(seq, u64::max);
        let mut list = Vec::new();
        // Oldest data first: the last level up to L0, whose files are
        // newest first. An import keeps each file's level.
        for (level, files) in sv.version.levels.iter().enumerate().rev() {
            let in_order: Vec<_> = if level == 0 { files.iter().rev().collect() } else { files.iter().collect() };
            for f in in_order {
                let path = table_path(&inner.dir, f.number());
                list.push(ExportTable { level, meta: f.meta.clone(), bytes: TableBytes::File { path, file: None } });
            }
        }
        if let Some(t) = self.memtables_as_table(&sv, seq)? {
            list.push(t);
        }
        let merge_operator = inner.options.merge_operator.as_ref().map(|m| m.name().to_string()).unwrap_or_default();
        Ok(Exporter {
            source: Source::Tables(Tables {
                sv: Some(sv),
                db: self.inner.clone(),
                fs: inner.fs.clone(),
                list,
                next: 0,
                at: None,
                merge_operator,
            }),
            sequence: seq,
            header_done: false,
            end_done: false,
            count: 0,
        })
    }

    /// The entries of `sv`'s memtables numbered up to `seq` (range
    /// deletions included), as the bytes of one table for L0, or `None`.
    fn memtables_as_table(&self, sv: &SuperVersion, seq: u64) -> Result<Option<ExportTable>> {
        let mems = || std::iter::once(&sv.mem).chain(sv.imm.iter());
        let tombstones: Vec<_> = mems()
            .flat_map(|m| m.tombstones().map(|ts| ts.to_tombstones()).unwrap_or_default())
            .filter(|t| t.seq <= seq)
            .collect();
        let mut it = MergingIterator::new(mems().map(|m| Box::new(m.iter()) as Box<dyn InternalIterator>).collect());
        it.seek_to_first();
        let scratch = MemFs::new();
        let file = scratch.open("memtables.sst", true)?;
        let mut builder = TableBuilder::new(file.clone(), self.inner.options.table_options(false));
        let mut any = !tombstones.is_empty();
        while it.valid() {
            // Entries written after the export began are left out.
            if key::parse(it.key()).is_some_and(|p| p.seq <= seq) {
                builder.add(it.key(), it.value())?;
                any = true;
            }
            it.next();
        }
        it.status()?;
        if !any {
            return Ok(None);
        }
        for t in tombstones {
            builder.add_tombstone(t);
        }
        let info = builder.finish()?;
        let bytes = crate::fs::read_all(&*file, "memtables.sst")?;
        Ok(Some(ExportTable { level: 0, meta: FileMeta::of_table(0, info), bytes: TableBytes::Memory(bytes) }))
    }
}

impl Exporter {
    /// The next piece of the stream, about `max_bytes` long (more when one
    /// entry is larger), or `None` once the whole stream was handed out.
    pub fn next_chunk(&mut self, max_bytes: usize) -> Result<Option<Vec<u8>>> {
        if self.end_done {
            return Ok(None);
        }
        if let Source::Rocksdb(t) = &mut self.source {
            return t.next_chunk(max_bytes, &mut self.count);
        }
        // Every chunk must stay under the importer's MAX_CHUNK: at most half
        // of it before the entry that passes max_bytes, which adds at most
        // a key and a value of their largest sizes.
        const _: () = assert!(MAX_CHUNK / 2 + MAX_KEY_LEN + MAX_VALUE_LEN + 16 < MAX_CHUNK);
        let max_bytes = max_bytes.clamp(1, MAX_CHUNK / 2);
        let mut out = Vec::with_capacity(max_bytes.min(1 << 20) + 64);
        if !self.header_done {
            out.extend_from_slice(EXPORT_MAGIC);
            put_fixed32(&mut out, self.version());
            put_fixed32(&mut out, 0);
            self.header_done = true;
        }
        let done = match &mut self.source {
            Source::Entries { it, skip, .. } => {
                let mut payload = Vec::new();
                while it.valid() && payload.len() < max_bytes {
                    let k = it.key();
                    let skipped = skip.as_ref().is_some_and(|(lo, hi)| k >= lo.as_slice() && k < hi.as_slice());
                    if !skipped {
                        let v = it.value();
                        if v.len() > MAX_VALUE_LEN {
                            // Merges (an `append`) can grow a value past what
                            // a put may write, and no import takes it: fail
                            // now rather than hand out a backup that cannot
                            // be restored.
                            return Err(Error::InvalidArgument(format!(
                                "key {:?} holds a value of {} bytes, made by merges, past the {MAX_VALUE_LEN} \
                                 an entry of a backup may hold: export with the tables form (it keeps the value \
                                 in a table file), or rewrite the value smaller first",
                                String::from_utf8_lossy(k),
                                v.len()
                            )));
                        }
                        put_varint32(&mut payload, k.len() as u32);
                        payload.extend_from_slice(k);
                        put_varint32(&mut payload, v.len() as u32);
                        payload.extend_from_slice(v);
                        self.count += 1;
                    }
                    it.next();
                }
                it.status()?;
                if !payload.is_empty() {
                    put_chunk(&mut out, EXPORT_VERSION_ENTRIES, KIND_ENTRIES, &payload);
                }
                !it.valid()
            }
            Source::Tables(t) => t.next_pieces(&mut out, max_bytes, &mut self.count)?,
            Source::Rocksdb(_) => unreachable!("handed out above"),
        };
        if done {
            let mut end = Vec::with_capacity(32);
            put_fixed64(&mut end, self.count);
            put_fixed64(&mut end, self.sequence);
            if let Source::Tables(t) = &self.source {
                put_varint32(&mut end, t.merge_operator.len() as u32);
                end.extend_from_slice(t.merge_operator.as_bytes());
            }
            put_chunk(&mut out, self.version(), KIND_END, &end);
            self.end_done = true;
        }
        Ok(Some(out))
    }

    /// The format version of the stream.
    fn version(&self) -> u32 {
        if matches!(self.source, Source::Tables(_)) {
            EXPORT_VERSION
        } else {
            EXPORT_VERSION_ENTRIES
        }
    }

    /// Entries (entries form) or tables (tables form) handed out so far.
    pub fn count(&self) -> u64 {
        self.count
    }
}

impl Tables {
    /// Appends table chunks to `out` until it holds about `max_bytes`;
    /// whether every table was handed out.
    fn next_pieces(&mut self, out: &mut Vec<u8>, max_bytes: usize, count: &mut u64) -> Result<bool> {
        while out.len() < max_bytes {
            let Some(t) = self.list.get_mut(self.next) else { return Ok(true) };
            let at = match self.at {
                Some(at) => at,
                None => {
                    put_chunk(out, EXPORT_VERSION, KIND_TABLE, &table_record(t.level, &t.meta));
                    *count += 1;
                    0
                }
            };
            let n = (t.meta.file_size - at).min((max_bytes - out.len().min(max_bytes)).max(4096) as u64) as usize;
            if n > 0 {
                // Read straight into the chunk, its check filled in after.
                let start = out.len();
                out.push(KIND_TABLE_BYTES);
                put_fixed32(out, n as u32);
                put_fixed32(out, 0);
                let data = out.len();
                out.resize(data + n, 0);
                match &mut t.bytes {
                    TableBytes::Memory(b) => out[data..].copy_from_slice(&b[at as usize..at as usize + n]),
                    TableBytes::File { path, file } => {
                        let file = match file {
                            Some(f) => f.clone(),
                            None => file.insert(self.fs.open(path, false)?).clone(),
                        };
                        read_exact_at(&*file, path, at, &mut out[data..])?;
                    }
                }
                let check = chunk_check(EXPORT_VERSION, KIND_TABLE_BYTES, &out[data..]);
                out[start + 5..start + 9].copy_from_slice(&check.to_le_bytes());
            }
            if at + n as u64 >= t.meta.file_size {
                t.bytes = TableBytes::Memory(Vec::new()); // its file let go of
                self.next += 1;
                self.at = None;
            } else {
                self.at = Some(at + n as u64);
            }
        }
        Ok(self.next >= self.list.len())
    }
}
