//! Exports and imports: a consistent snapshot of a database as one byte
//! stream (chunks, each checksummed), and a new database built from one,
//! with one manifest edit at the end: nothing of an import is visible until
//! every chunk and every table has been checked and the stream's end record
//! matches.
//!
//! Two forms (`docs/format.md` has both, with the reasons):
//!
//! - **Entries** (format version 1): the live keys of a range and their
//!   values as reads see them (merges applied, deleted keys absent),
//!   strictly ascending. An import builds table files of the last level
//!   from them.
//! - **Tables** (format version 2), for a whole database: its table files
//!   byte for byte, each with its level and what the manifest records of
//!   it, and the memtables' entries at the snapshot as one more table
//!   built at export time. An import writes the files as they arrive,
//!   reads each back (every block's checksum; its first and last keys
//!   against the bounds the stream gave), and installs
//!   them at their levels: no key is sorted, compressed or filtered again.
//!   What compaction has not yet dropped (older versions, deleted entries)
//!   travels too, as in a copy of the files.
//!
//! ```text
//! stream  := header chunk* end
//! header  := "SILTDUMP" version:fixed32 (1 or 2) flags:fixed32 (= 0)
//! chunk   := kind:u8 length:fixed32 crc:fixed32 payload[length]
//! crc     := version 1: masked CRC32C of kind and payload;
//!            version 2: low 32 bits of XXH3-64(payload, seed = kind)
//! kind 1 (entries, version 1): (varint32 key-length, key, varint32 value-length, value)*
//! kind 3 (table, version 2):   level:u8 size:fixed64 smallest-seq:fixed64 largest-seq:fixed64
//!                              varint32 length, smallest internal key, varint32 length, largest internal key
//! kind 4 (table bytes, v. 2):  the next bytes of the table begun last
//! kind 2 (end):                count:fixed64 sequence:fixed64, and in version 2
//!                              varint32 length, merge operator name
//! ```
//!
//! `count` is the number of entries (version 1) or tables (version 2);
//! `sequence` the sequence number the export read at (version 2: the
//! imported database's last sequence number).

use std::sync::Arc;

use super::{lock, Db, DbInner, ReadOptions, Snapshot, StateGuard, SuperVersion};
use crate::compaction::job::TableJob;
use crate::compaction::resolver::KeyResolver;
use crate::db::options::{check_key, check_value, MAX_KEY_LEN, MAX_VALUE_LEN};
use crate::error::{Error, Result};
use crate::format::checksum::{crc32c, crc32c_extend, mask, unmask};
use crate::format::coding::{decode_fixed32, decode_fixed64, put_fixed32, put_fixed64, put_varint32, Reader};
use crate::format::key::{self, ValueType};
use crate::fs::{read_exact_at, Fs, MemFs};
use crate::iter::{InternalIterator, MergingIterator};
use crate::range_del::FragmentedTombstones;
use crate::sst::{Table, TableBuilder};
use crate::version::set::sort_level;
use crate::version::{table_path, FileMeta, FileMetaData, NUM_LEVELS};
use crate::DbIterator;
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// The first bytes of every export.
pub const EXPORT_MAGIC: &[u8; 8] = b"SILTDUMP";
/// The newest export format this engine writes and reads: the tables form.
pub const EXPORT_VERSION: u32 = 2;
/// The format of the entries form (a range, or asked for).
pub const EXPORT_VERSION_ENTRIES: u32 = 1;
const HEADER_LEN: usize = 16;
const CHUNK_HEADER_LEN: usize = 9;
const KIND_ENTRIES: u8 = 1;
const KIND_END: u8 = 2;
const KIND_TABLE: u8 = 3;
const KIND_TABLE_BYTES: u8 = 4;
/// The largest table an import accepts (a table is a few MiB; a flush of a
/// large write buffer, or a compaction's, may be more).
const MAX_TABLE: u64 = 1 << 34;
/// Tables up to this size are sized at once before their bytes arrive;
/// larger ones grow as they come (a stream must not make an import ask
/// for space it never sends).
const PRESIZE_MAX: u64 = 64 << 20;
/// An import begins a table only while more pooled files than this are
/// free (`Fs::files_left`), leaving one for the manifest at the end; else
/// it waits for its embedder to add files ([`Importer::wants_files`]).
const FILES_KEPT: usize = 2;
/// The largest chunk an import accepts (an export writes far smaller ones).
const MAX_CHUNK: usize = 256 << 20;
/// Entries an import gathers before writing them as table files.
const RUN_BYTES: usize = 8 << 20;
/// The name errors give the stream (it is not a file of the database).
const STREAM: &str = "export stream";

/// The check of a chunk: version 1, the masked CRC32C of its kind and
/// payload; version 2, the low 32 bits of the XXH3-64 of its payload seeded
/// with its kind (the tables' own block check, several times faster than a
/// software CRC32C in wasm).
fn chunk_check(version: u32, kind: u8, payload: &[u8]) -> u32 {
    if version == EXPORT_VERSION_ENTRIES {
        mask(crc32c_extend(crc32c(&[kind]), payload))
    } else {
        xxh3_64_with_seed(payload, u64::from(kind)) as u32
    }
}

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
}

/// The tables of a whole-database export, handed out one after the other.
struct Tables {
    /// Keeps the version's files from being deleted while they are read.
    _sv: Arc<SuperVersion>,
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
            source: Source::Tables(Tables { _sv: sv, fs: inner.fs.clone(), list, next: 0, at: None, merge_operator }),
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
        let mut builder = TableBuilder::new(file.clone(), self.inner.options.table_options());
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

/// The payload of a table record: `level` and what the manifest records of
/// the table.
fn table_record(level: usize, m: &FileMeta) -> Vec<u8> {
    let mut p = Vec::with_capacity(32 + m.smallest.len() + m.largest.len());
    p.push(level as u8);
    put_fixed64(&mut p, m.file_size);
    put_fixed64(&mut p, m.smallest_seq);
    put_fixed64(&mut p, m.largest_seq);
    put_varint32(&mut p, m.smallest.len() as u32);
    p.extend_from_slice(&m.smallest);
    put_varint32(&mut p, m.largest.len() as u32);
    p.extend_from_slice(&m.largest);
    p
}

/// The level and manifest record a table record holds (its number 0), or
/// `None` if it is cut short or has bytes after the largest key.
fn decode_table_record(p: &[u8]) -> Option<(usize, FileMeta)> {
    let mut d = Reader::new(p);
    let level = usize::from(d.u8()?);
    let (file_size, smallest_seq, largest_seq) = (d.fixed64()?, d.fixed64()?, d.fixed64()?);
    let smallest = d.length_prefixed()?.to_vec();
    let largest = d.length_prefixed()?.to_vec();
    d.is_empty().then_some((level, FileMeta { number: 0, file_size, smallest, largest, smallest_seq, largest_seq }))
}

/// Appends one chunk of `kind` around `payload`.
fn put_chunk(out: &mut Vec<u8>, version: u32, kind: u8, payload: &[u8]) {
    out.push(kind);
    put_fixed32(out, payload.len() as u32);
    put_fixed32(out, chunk_check(version, kind, payload));
    out.extend_from_slice(payload);
}

impl Exporter {
    /// The next piece of the stream, about `max_bytes` long (more when one
    /// entry is larger), or `None` once the whole stream was handed out.
    pub fn next_chunk(&mut self, max_bytes: usize) -> Result<Option<Vec<u8>>> {
        if self.end_done {
            return Ok(None);
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
                        put_varint32(&mut payload, k.len() as u32);
                        payload.extend_from_slice(k);
                        let v = it.value();
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

/// What an import read and wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// Entries form: the keys imported. Tables form: the entries of the
    /// tables (every version, deletion and merge operand they still hold).
    pub entries: u64,
    pub table_files: u64,
    pub table_bytes: u64,
    pub stream_bytes: u64,
    /// Bytes the importer copied to keep chunks that pieces split, until
    /// they were whole: at most about twice `stream_bytes`, however small
    /// the pieces (each piece is copied once, and what is left of it once
    /// more after the chunks before it are read).
    pub buffered_bytes: u64,
}

/// Sorted entries gathered for the next table files, as internal keys.
#[derive(Default)]
struct Run {
    /// Internal key, then value, for each entry, back to back.
    bytes: Vec<u8>,
    /// Per entry: start of its key, start of its value, end of its value.
    at: Vec<(u32, u32, u32)>,
}

/// An iterator over a [`Run`] (forward only: what a table job reads).
struct RunIter {
    run: Run,
    pos: usize,
}

impl InternalIterator for RunIter {
    fn valid(&self) -> bool {
        self.pos < self.run.at.len()
    }
    fn seek_to_first(&mut self) {
        self.pos = 0;
    }
    fn seek_to_last(&mut self) {
        self.pos = self.run.at.len().saturating_sub(1);
    }
    fn seek(&mut self, target: &[u8]) {
        self.pos = self
            .run
            .at
            .partition_point(|&(k, v, _)| key::compare(&self.run.bytes[k as usize..v as usize], target).is_lt());
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        let i = self
            .run
            .at
            .partition_point(|&(k, v, _)| key::compare(&self.run.bytes[k as usize..v as usize], target).is_le());
        self.pos = i.checked_sub(1).unwrap_or(self.run.at.len());
    }
    fn next(&mut self) {
        self.pos += 1;
    }
    fn prev(&mut self) {
        self.pos = self.pos.checked_sub(1).unwrap_or(self.run.at.len());
    }
    fn key(&self) -> &[u8] {
        let (k, v, _) = self.run.at[self.pos];
        &self.run.bytes[k as usize..v as usize]
    }
    fn value(&self) -> &[u8] {
        let (_, v, e) = self.run.at[self.pos];
        &self.run.bytes[v as usize..e as usize]
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

enum Stage {
    Header,
    Chunks,
    Done,
}

/// A table of a tables-form stream being written.
struct ImportTable {
    level: usize,
    /// What the stream says of it (its number is the one allocated here).
    meta: FileMeta,
    path: String,
    file: Arc<dyn crate::fs::File>,
    written: u64,
}

/// An import in progress into an empty database: feed it the stream in
/// pieces of any size ([`Importer::push`]), then [`Importer::finish`] (or
/// [`Importer::abort`]). Until `finish` succeeds, nothing is visible.
pub struct Importer {
    buf: Vec<u8>,
    /// Stream bytes consumed before `buf` (for error offsets).
    offset: u64,
    stage: Stage,
    /// The stream's format version (once its header was read).
    version: u32,
    run: Run,
    last_key: Option<Vec<u8>>,
    /// Entries (entries form) or tables (tables form) read.
    count: u64,
    /// Entries form: files written for the last level.
    outputs: Vec<FileMeta>,
    /// Tables form: the table being written, those written and checked
    /// (with their levels), and what the end record says.
    table: Option<ImportTable>,
    tables: Vec<(usize, FileMeta)>,
    sequence: u64,
    merge_operator: String,
    allocated: Vec<u64>,
    report: ImportReport,
    /// The last push stopped before a table for want of free files.
    wants_files: bool,
    /// The database imported into: dropped unfinished, the importer gives
    /// back the files it allocated there.
    owner: Arc<DbInner>,
}

impl Db {
    /// An import into a database with a live snapshot (or a transaction,
    /// which holds one) would show that snapshot the import: entries come
    /// in at sequence 0, tables at the source's numbers, at or below it.
    fn check_no_snapshots(&self) -> Result<()> {
        let live = self.inner.snapshots.sequences().len();
        if live > 0 {
            return Err(Error::Busy(format!(
                "database {} has {live} live snapshot(s) (snapshots, transactions or iterators with a snapshot): an import would show them data that was never theirs; release them, then import",
                self.inner.dir
            )));
        }
        Ok(())
    }

    /// Starts an import. The database must be empty (no table files, no
    /// writes) and hold no live snapshot: the imported entries become its
    /// last level.
    pub fn import(&self) -> Result<Importer> {
        self.check_open()?;
        let st = lock(&self.inner.state);
        let empty = st.mem.is_empty() && st.imm.is_empty() && st.versions.current_ref().files().next().is_none();
        if !empty {
            return Err(Error::InvalidArgument(format!(
                "database {} is not empty: an import makes a new database",
                self.inner.dir
            )));
        }
        self.check_no_snapshots()?;
        Ok(Importer {
            buf: Vec::new(),
            offset: 0,
            stage: Stage::Header,
            version: 0,
            run: Run::default(),
            last_key: None,
            count: 0,
            outputs: Vec::new(),
            table: None,
            tables: Vec::new(),
            sequence: 0,
            merge_operator: String::new(),
            allocated: Vec::new(),
            report: ImportReport::default(),
            wants_files: false,
            owner: self.inner.clone(),
        })
    }

    /// Writes `run` as table files (their numbers kept in `imp`).
    fn write_run(&self, imp: &mut Importer, run: Run) -> Result<()> {
        if run.at.is_empty() {
            return Ok(());
        }
        let inner = &*self.inner;
        let resolver = KeyResolver::new(Vec::new(), Arc::new(FragmentedTombstones::default()), true, None, None);
        let mut job = TableJob::new(
            Box::new(RunIter { run, pos: 0 }),
            resolver,
            inner.options.target_file_size_base,
            inner.options.table_options(),
        );
        let mut st = StateGuard::new(inner);
        st.wait_for_job();
        let result = self.step_job(&mut st, &mut job, usize::MAX).map_err(|(_, e)| e);
        imp.allocated.extend(job.allocated.iter().copied());
        let done = result?;
        debug_assert!(done, "an unlimited step finishes the job");
        imp.report.table_files += job.outputs.len() as u64;
        imp.report.table_bytes += job.bytes_written;
        imp.outputs.extend(job.outputs.iter().cloned());
        Ok(())
    }
}

impl Importer {
    /// Takes the next bytes of the stream: checks each complete chunk
    /// (checksum, key order) and writes table files as entries gather.
    pub fn push(&mut self, db: &Db, bytes: &[u8]) -> Result<()> {
        db.check_open()?;
        self.wants_files = false;
        self.report.stream_bytes += bytes.len() as u64;
        // Pieces that hold whole chunks (an export's own) are read where
        // they are; what a piece leaves of a chunk waits in `buf`, which
        // grows by each piece and gives up only the chunks read (never
        // copied whole per piece: a large chunk in small pieces would
        // cost time quadratic in its size).
        if self.buf.is_empty() {
            let at = self.consume(db, bytes)?;
            self.buf.extend_from_slice(&bytes[at..]);
            self.report.buffered_bytes += (bytes.len() - at) as u64;
            self.offset += at as u64;
        } else {
            self.buf.extend_from_slice(bytes);
            self.report.buffered_bytes += bytes.len() as u64;
            let mut gathered = std::mem::take(&mut self.buf);
            let at = self.consume(db, &gathered)?;
            if at > 0 {
                gathered.drain(..at);
                self.report.buffered_bytes += gathered.len() as u64;
            }
            self.buf = gathered;
            self.offset += at as u64;
        }
        Ok(())
    }

    /// Whether the last push stopped before a table because the file
    /// system had too few free files (a pool its embedder grows between
    /// calls): add files, then push again (an empty piece will do). The
    /// bytes not read yet are kept.
    pub fn wants_files(&self) -> bool {
        self.wants_files
    }

    /// Reads the complete chunks at the start of `data` (its first byte at
    /// `self.offset` in the stream); how many bytes they took.
    fn consume(&mut self, db: &Db, data: &[u8]) -> Result<usize> {
        let mut at = 0;
        loop {
            match self.stage {
                Stage::Header => {
                    if data.len() - at < HEADER_LEN {
                        break;
                    }
                    let h = &data[at..at + HEADER_LEN];
                    if &h[..8] != EXPORT_MAGIC {
                        return Err(Error::corruption(STREAM, 0, "not a Silt export (no SILTDUMP header)"));
                    }
                    let version = decode_fixed32(&h[8..12]).unwrap_or(0);
                    if version != EXPORT_VERSION && version != EXPORT_VERSION_ENTRIES {
                        return Err(Error::NotSupported(format!(
                            "an export of format version {version}; this version of Silt reads versions {EXPORT_VERSION_ENTRIES} and {EXPORT_VERSION}: import it with the version of Silt that wrote it"
                        )));
                    }
                    self.version = version;
                    at += HEADER_LEN;
                    self.stage = Stage::Chunks;
                }
                Stage::Chunks => {
                    if data.len() - at < CHUNK_HEADER_LEN {
                        break;
                    }
                    let here = self.offset + at as u64;
                    let kind = data[at];
                    let len = decode_fixed32(&data[at + 1..at + 5]).unwrap_or(0) as usize;
                    let known = match self.version {
                        EXPORT_VERSION_ENTRIES => kind == KIND_ENTRIES || kind == KIND_END,
                        _ => kind == KIND_TABLE || kind == KIND_TABLE_BYTES || kind == KIND_END,
                    };
                    if len > MAX_CHUNK || !known {
                        return Err(Error::corruption(STREAM, here, format!("a chunk of kind {kind} and {len} bytes")));
                    }
                    if data.len() - at - CHUNK_HEADER_LEN < len {
                        break;
                    }
                    if kind == KIND_TABLE && db.inner.fs.files_left().is_some_and(|n| n <= FILES_KEPT) {
                        self.wants_files = true;
                        break;
                    }
                    let stored = decode_fixed32(&data[at + 5..at + 9]).unwrap_or(0);
                    let start = at + CHUNK_HEADER_LEN;
                    let payload = &data[start..start + len];
                    let got = chunk_check(self.version, kind, payload);
                    if got != stored {
                        let shown = |c| if self.version == EXPORT_VERSION_ENTRIES { unmask(c) } else { c };
                        return Err(Error::ChecksumMismatch {
                            file: STREAM.into(),
                            offset: here,
                            expected: shown(stored),
                            got: shown(got),
                        });
                    }
                    at = start + len;
                    let offset = here + CHUNK_HEADER_LEN as u64;
                    match kind {
                        KIND_END => self.end(payload, here)?,
                        KIND_ENTRIES => self.entries(db, payload, offset)?,
                        KIND_TABLE => self.begin_table(db, payload, here)?,
                        _ => self.table_bytes(db, payload, here)?,
                    }
                }
                Stage::Done => {
                    if at < data.len() {
                        return Err(Error::corruption(STREAM, self.offset + at as u64, "bytes after the end record"));
                    }
                    break;
                }
            }
        }
        Ok(at)
    }

    /// The end record: the count must match what came, and in the tables
    /// form no table may be left unfinished.
    fn end(&mut self, payload: &[u8], here: u64) -> Result<()> {
        let bad = |what: String| Error::corruption(STREAM, here, what);
        let count = decode_fixed64(payload);
        let what = if self.version == EXPORT_VERSION_ENTRIES { "entries" } else { "tables" };
        if self.version == EXPORT_VERSION_ENTRIES && payload.len() != 16 {
            return Err(bad(format!("an end record of {} bytes", payload.len())));
        }
        if count != Some(self.count) {
            return Err(bad(format!("the end record counts {count:?} {what}; the stream held {}", self.count)));
        }
        if self.version == EXPORT_VERSION {
            if self.table.is_some() {
                return Err(bad("the stream ends inside a table".into()));
            }
            let mut d = Reader::new(payload.get(16..).unwrap_or_default());
            let name =
                d.length_prefixed().filter(|_| payload.len() >= 16).ok_or_else(|| bad("a short end record".into()))?;
            if !d.is_empty() {
                return Err(bad("bytes after the end record's merge operator name".into()));
            }
            self.sequence = decode_fixed64(&payload[8..16]).unwrap_or(0);
            // Numbers from OWN_SEQ_BASE up are transactions' own: no
            // database's last sequence number reaches them.
            if self.sequence >= super::transaction::spill::OWN_SEQ_BASE {
                return Err(bad(format!("sequence number {} in the end record", self.sequence)));
            }
            self.merge_operator = String::from_utf8_lossy(name).into_owned();
        }
        self.stage = Stage::Done;
        Ok(())
    }

    /// A table begins: its level and what the manifest records of it.
    fn begin_table(&mut self, db: &Db, payload: &[u8], here: u64) -> Result<()> {
        let bad = |what: &str| Error::corruption(STREAM, here, format!("table record: {what}"));
        if self.table.is_some() {
            return Err(bad("a table begins before the one before it has all its bytes"));
        }
        let (level, FileMeta { file_size, smallest, largest, smallest_seq, largest_seq, .. }) =
            decode_table_record(payload).ok_or_else(|| bad("truncated, or bytes after the largest key"))?;
        if level >= NUM_LEVELS || file_size == 0 || file_size > MAX_TABLE || smallest_seq > largest_seq {
            return Err(bad(&format!(
                "level {level}, {file_size} bytes, sequence numbers {smallest_seq}..{largest_seq}"
            )));
        }
        if key::parse(&smallest).is_none()
            || key::parse(&largest).is_none()
            || key::compare(&smallest, &largest).is_gt()
        {
            return Err(bad("smallest and largest are not internal keys in order"));
        }
        let inner = &*db.inner;
        let number = {
            let mut st = lock(&inner.state);
            let n = st.versions.new_file_number();
            st.pending_outputs.insert(n);
            n
        };
        self.allocated.push(number);
        let path = table_path(&inner.dir, number);
        let file = inner.fs.open(&path, true)?;
        // Sized at once: its bytes then land in place, with no growth per
        // piece (on OPFS each growth is a call of its own).
        file.truncate(0)?;
        if file_size <= PRESIZE_MAX {
            file.truncate(file_size)?;
        }
        let meta = FileMeta { number, file_size, smallest, largest, smallest_seq, largest_seq };
        self.table = Some(ImportTable { level, meta, path, file, written: 0 });
        self.count += 1;
        Ok(())
    }

    /// The next bytes of the table begun last; once it has all of them, it
    /// is synced and read back whole.
    fn table_bytes(&mut self, db: &Db, payload: &[u8], here: u64) -> Result<()> {
        let Some(t) = self.table.as_mut() else {
            return Err(Error::corruption(STREAM, here, "table bytes outside a table"));
        };
        if t.written + payload.len() as u64 > t.meta.file_size {
            return Err(Error::corruption(
                STREAM,
                here,
                format!("more bytes for a table than its {} (record at offset {here})", t.meta.file_size),
            ));
        }
        t.file.write_at(t.written, payload)?;
        t.written += payload.len() as u64;
        self.report.table_bytes += payload.len() as u64;
        if t.written == t.meta.file_size {
            let t = self.table.take().expect("a table is being written");
            self.check_table(db, t)?;
        }
        Ok(())
    }

    /// Syncs `t` and reads it back whole: every block's checksum, its
    /// first and last entries within the bounds and sequence numbers the
    /// stream gave it (which the manifest will record), and its count of
    /// entries.
    fn check_table(&mut self, db: &Db, t: ImportTable) -> Result<()> {
        t.file.sync()?;
        let inner = &*db.inner;
        let table = Arc::new(Table::open(
            t.file.clone(),
            &t.path,
            t.meta.number,
            inner.tables.cache.clone(),
            inner.tables.stats.clone(),
        )?);
        table.verify_checksums()?;
        // Every entry and every range tombstone within the bounds and the
        // sequence numbers the export gave the table, and the table's own
        // largest-seq property no higher: an entry numbered past the
        // stream's sequence would appear once a later write reused its
        // number, and a tombstone "from the future", ignored by reads,
        // would be applied by compaction. (verify_checksums has read every
        // block already: this decodes them once more from the cache.)
        let m = &t.meta;
        let outside = |offset: u64, what: &str| {
            Error::corruption(
                &t.path,
                offset,
                format!("{what} outside the bounds or sequence numbers the export gave its table"),
            )
        };
        let seq_ok = |seq: u64| (m.smallest_seq..=m.largest_seq).contains(&seq);
        let mut it = table.iter(false);
        it.seek_to_first();
        let mut prev: Vec<u8> = Vec::new();
        while it.valid() {
            let k = it.key();
            let Some(p) = key::parse(k) else {
                return Err(Error::corruption(&t.path, it.block_offset(), "bad internal key in data block"));
            };
            if key::compare(k, &m.smallest).is_lt() || key::compare(k, &m.largest).is_gt() || !seq_ok(p.seq) {
                return Err(outside(it.block_offset(), "an entry"));
            }
            if !prev.is_empty() && key::compare(&prev, k).is_ge() {
                return Err(Error::corruption(&t.path, it.block_offset(), "entries out of order"));
            }
            prev.clear();
            prev.extend_from_slice(k);
            it.next();
        }
        it.status()?;
        for ts in table.tombstones().map(|ts| ts.to_tombstones()).unwrap_or_default() {
            let start = key::internal_key(&ts.start, ts.seq, ValueType::RangeDelete);
            let end = key::internal_key(&ts.end, key::MAX_SEQUENCE, ValueType::RangeDelete);
            if !seq_ok(ts.seq) || key::compare(&start, &m.smallest).is_lt() || key::compare(&end, &m.largest).is_gt() {
                return Err(outside(0, "a range tombstone"));
            }
        }
        if table.property(b"silt.largest.seq")?.is_some_and(|s| s > m.largest_seq) {
            return Err(outside(0, "the table's largest-seq property"));
        }
        self.report.entries += table.property(b"silt.num.entries")?.unwrap_or(0);
        self.report.table_files += 1;
        self.tables.push((t.level, t.meta));
        Ok(())
    }

    fn entries(&mut self, db: &Db, payload: &[u8], offset: u64) -> Result<()> {
        let mut d = Reader::new(payload);
        while !d.is_empty() {
            let bad = |what: &str| Error::corruption(STREAM, offset, format!("chunk: {what}"));
            let k = d.length_prefixed().ok_or_else(|| bad("truncated key"))?;
            let v = d.length_prefixed().ok_or_else(|| bad("truncated value"))?;
            check_key(k).map_err(|_| bad("a key longer than keys may be"))?;
            check_value(v).map_err(|_| bad("a value longer than values may be"))?;
            if self.last_key.as_deref().is_some_and(|last| last >= k) {
                return Err(bad("keys out of order"));
            }
            self.last_key = Some(k.to_vec());
            let r = &mut self.run;
            let ks = r.bytes.len() as u32;
            key::append_internal_key(&mut r.bytes, k, 0, ValueType::Put as u8);
            let vs = r.bytes.len() as u32;
            r.bytes.extend_from_slice(v);
            r.at.push((ks, vs, r.bytes.len() as u32));
            self.count += 1;
            if self.run.bytes.len() >= RUN_BYTES {
                let run = std::mem::take(&mut self.run);
                db.write_run(self, run)?;
            }
        }
        Ok(())
    }

    /// Ends the import: the stream must have ended with its end record;
    /// the table files written become the database's last level in one
    /// manifest edit. On an error nothing is visible.
    /// On an error, what the import wrote is deleted.
    pub fn finish(mut self, db: &Db) -> Result<ImportReport> {
        match self.finish_inner(db) {
            Ok(r) => Ok(r),
            Err(e) => {
                self.abort(db);
                Err(e)
            }
        }
    }

    fn finish_inner(&mut self, db: &Db) -> Result<ImportReport> {
        if !matches!(self.stage, Stage::Done) {
            return Err(Error::corruption(
                STREAM,
                self.offset + self.buf.len() as u64,
                "the stream ends early (truncated): no end record",
            ));
        }
        if self.version == EXPORT_VERSION {
            return self.install_tables(db);
        }
        let run = std::mem::take(&mut self.run);
        db.write_run(self, run)?;
        let inner = &*db.inner;
        let mut st = StateGuard::new(inner);
        st.wait_for_job();
        if !st.versions.current_ref().levels[NUM_LEVELS - 1].is_empty() || st.compaction.is_some() {
            return Err(Error::Busy(format!("database {} was written while the import ran", inner.dir)));
        }
        db.check_no_snapshots()?;
        let last = st.versions.last_sequence;
        let added = self.outputs.iter().map(|m| (NUM_LEVELS - 1, m.clone())).collect();
        // From here the files are install_new_tables' to keep or delete.
        let allocated = std::mem::take(&mut self.allocated);
        db.install_new_tables(&mut st, added, &allocated, last)?;
        self.report.entries = self.count;
        Ok(self.report)
    }

    /// The tables form's end: the tables' levels must be consistent (no
    /// two files of a level below L0 overlapping), their entries no newer
    /// than the stream's sequence number, a merge operand only with the
    /// merge operator that wrote it; then one manifest edit adds them all at
    /// their levels and raises the last sequence number to the stream's.
    fn install_tables(&mut self, db: &Db) -> Result<ImportReport> {
        let inner = &*db.inner;
        let mut by_level: Vec<Vec<Arc<FileMetaData>>> = vec![Vec::new(); NUM_LEVELS];
        for (level, m) in &self.tables {
            by_level[*level].push(Arc::new(FileMetaData::new(m.clone())));
        }
        for (level, files) in by_level.iter_mut().enumerate().skip(1) {
            sort_level(level, files);
            // By user key: two files of a level never share one, except
            // where the first ends in a range deletion's sentinel for the
            // next one's first key (its tombstones end before that key).
            let overlap = |a: &FileMetaData, b: &FileMetaData| match a.largest_user_key().cmp(b.smallest_user_key()) {
                std::cmp::Ordering::Less => false,
                std::cmp::Ordering::Equal => !key::is_range_sentinel(&a.meta.largest),
                std::cmp::Ordering::Greater => true,
            };
            if let Some(w) = files.windows(2).find(|w| overlap(&w[0], &w[1])) {
                return Err(Error::corruption(
                    STREAM,
                    0,
                    format!("two tables of level {level} overlap (files {} and {} here)", w[0].number(), w[1].number()),
                ));
            }
        }
        if let Some(m) = self.tables.iter().map(|(_, m)| m).find(|m| m.largest_seq > self.sequence) {
            return Err(Error::corruption(
                STREAM,
                0,
                format!("a table holds sequence number {}, past the export's {}", m.largest_seq, self.sequence),
            ));
        }
        // Its tables may hold merge operands (which only a scan of every
        // entry would rule out): a database exported with a merge operator
        // is imported with the same.
        if !self.merge_operator.is_empty() {
            let ours = inner.options.merge_operator.as_ref().map(|m| m.name()).unwrap_or("");
            if ours != self.merge_operator {
                let theirs = &self.merge_operator;
                return Err(Error::InvalidArgument(format!(
                    "the export is of a database with merge operator {theirs:?}, whose tables may hold merge operands: open the database it is imported into with that merge operator (it has {:?}), or export in the entries form, which applies them",
                    if ours.is_empty() { "none" } else { ours }
                )));
            }
        }
        inner.fs.sync_dir(&inner.dir)?;
        let mut st = StateGuard::new(inner);
        st.wait_for_job();
        let empty = st.mem.is_empty() && st.imm.is_empty() && st.versions.current_ref().files().next().is_none();
        if !empty || st.compaction.is_some() {
            return Err(Error::Busy(format!("database {} was written while the import ran", inner.dir)));
        }
        db.check_no_snapshots()?;
        let last = st.versions.last_sequence.max(self.sequence);
        // From here the files are install_new_tables' to keep or delete.
        let allocated = std::mem::take(&mut self.allocated);
        db.install_new_tables(&mut st, std::mem::take(&mut self.tables), &allocated, last)?;
        Ok(self.report)
    }

    /// Gives up: deletes the table files written so far.
    pub fn abort(self, db: &Db) {
        debug_assert!(Arc::ptr_eq(&self.owner, &db.inner), "an importer aborted on another database");
        drop(self);
    }
}

impl Drop for Importer {
    /// An importer dropped unfinished (aborted, failed, or simply let go)
    /// deletes the table files it wrote: they were pending outputs, which
    /// no version names and nothing else would delete before a reopen.
    /// A finished import handed them to its manifest edit already.
    fn drop(&mut self) {
        if self.allocated.is_empty() {
            return;
        }
        let mut st = lock(&self.owner.state);
        for n in &self.allocated {
            st.pending_outputs.remove(n);
        }
        self.owner.delete_obsolete_files(&mut st);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::db::{Options, WriteOptions};
    use crate::fs::{Fs, MemFs};

    fn open(fs: &MemFs, name: &str) -> Db {
        let o = Options { write_buffer_size: 64 * 1024, ..Options::default() };
        Db::open(Arc::new(fs.clone()), name, o).unwrap()
    }

    fn key(i: u32) -> Vec<u8> {
        format!("key{i:06}").into_bytes()
    }

    fn stream_of(db: &Db, options: &ExportOptions, piece: usize) -> Vec<u8> {
        let mut e = db.export(options).unwrap();
        let mut out = Vec::new();
        while let Some(c) = e.next_chunk(piece).unwrap() {
            out.extend_from_slice(&c);
        }
        out
    }

    fn import(db: &Db, bytes: &[u8], piece: usize) -> Result<ImportReport> {
        let mut imp = db.import()?;
        for p in bytes.chunks(piece.max(1)) {
            if let Err(e) = imp.push(db, p) {
                imp.abort(db);
                return Err(e);
            }
        }
        imp.finish(db)
    }

    fn all(db: &Db) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut it = db.iter(&ReadOptions::default()).unwrap();
        it.seek_to_first();
        let mut out = Vec::new();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        out
    }

    fn entries_form() -> ExportOptions {
        ExportOptions { form: ExportForm::Entries, ..ExportOptions::default() }
    }

    #[test]
    fn an_export_imports_into_the_same_entries_in_any_pieces() {
        let fs = MemFs::new();
        let src = open(&fs, "src");
        let w = WriteOptions::default();
        for i in 0..30_000 {
            src.put(&w, &key(i), &vec![(i % 251) as u8; (i % 300) as usize]).unwrap();
        }
        src.put(&w, b"", b"the empty key").unwrap();
        src.delete_range(&w, &key(100), &key(200)).unwrap();
        let snap_entries = all(&src);
        for (form, options) in [("entries", entries_form()), ("tables", ExportOptions::default())] {
            let bytes = stream_of(&src, &options, 64 * 1024);
            let version = decode_fixed32(&bytes[8..12]).unwrap();
            assert_eq!(version, if form == "entries" { 1 } else { 2 });
            for piece in [1 << 20, 4096, 7] {
                let dst = open(&fs, &format!("dst-{form}-{piece}"));
                let report = import(&dst, &bytes, piece).unwrap();
                if form == "entries" {
                    assert_eq!(report.entries as usize, snap_entries.len());
                } else {
                    // The tables' entries: the 100 deleted by the range too.
                    assert_eq!(report.entries as usize, snap_entries.len() + 100);
                    assert_eq!(
                        dst.properties().files_per_level,
                        src.properties()
                            .files_per_level
                            .iter()
                            .enumerate()
                            .map(|(l, n)| n + u64::from(l == 0))
                            .collect::<Vec<_>>(),
                        "each table at its level, and the memtable's entries as one table more in L0"
                    );
                }
                dst.verify().unwrap();
                import_checks(&fs, dst, &format!("dst-{form}-{piece}"), &snap_entries);
            }
        }
    }

    fn import_checks(fs: &MemFs, dst: Db, name: &str, snap_entries: &[(Vec<u8>, Vec<u8>)]) {
        let w = WriteOptions::default();
        {
            {
                assert_eq!(all(&dst), snap_entries);
                assert_eq!(dst.get(&ReadOptions::default(), b"").unwrap().as_deref(), Some(&b"the empty key"[..]));
                // A new write is newer than every imported entry.
                dst.put(&w, &key(5), b"new").unwrap();
                assert_eq!(dst.get(&ReadOptions::default(), &key(5)).unwrap().as_deref(), Some(&b"new"[..]));
                drop(dst);
                let again = open(fs, name);
                assert_eq!(again.count(&ReadOptions::default()).unwrap() as usize, snap_entries.len());
                assert_eq!(again.get(&ReadOptions::default(), &key(5)).unwrap().as_deref(), Some(&b"new"[..]));
            }
        }
    }

    #[test]
    fn a_tables_export_keeps_its_snapshot_levels_tombstones_and_merges() {
        let fs = MemFs::new();
        let o = Options {
            write_buffer_size: 64 * 1024,
            merge_operator: Some(Arc::new(crate::U64AddOperator)),
            ..Options::default()
        };
        let src = Db::open(Arc::new(fs.clone()), "src", o.clone()).unwrap();
        let w = WriteOptions::default();
        for i in 0..8_000u32 {
            src.put(&w, &key(i), &[i as u8; 40]).unwrap();
        }
        src.compact_range(None, None).unwrap();
        for i in (0..8_000u32).step_by(7) {
            src.put(&w, &key(i), b"overwritten").unwrap();
        }
        src.flush().unwrap();
        src.delete_range(&w, &key(1_000), &key(1_500)).unwrap();
        for i in 0..50u32 {
            src.merge(&w, format!("ctr{i}").as_bytes(), &(i as u64 + 1).to_le_bytes()).unwrap();
            src.merge(&w, format!("ctr{i}").as_bytes(), &1u64.to_le_bytes()).unwrap();
        }
        src.delete(&w, &key(3)).unwrap();
        let want = all(&src);
        let levels = src.properties().files_per_level;
        assert!(levels.iter().filter(|&&n| n > 0).count() >= 2, "files on two levels at least: {levels:?}");
        let mut e = src.export(&ExportOptions::default()).unwrap();
        // Written, flushed and compacted after the export began: not in it,
        // and the files it reads stay readable.
        for i in 0..8_000u32 {
            src.put(&w, &key(i), b"later").unwrap();
        }
        src.compact_range(None, None).unwrap();
        let mut bytes = Vec::new();
        while let Some(c) = e.next_chunk(10_000).unwrap() {
            bytes.extend_from_slice(&c);
        }
        drop(e);
        let dst = Db::open(Arc::new(fs.clone()), "dst", o.clone()).unwrap();
        import(&dst, &bytes, 3_333).unwrap();
        assert_eq!(all(&dst), want);
        assert_eq!(dst.get(&ReadOptions::default(), b"ctr9").unwrap().unwrap(), 11u64.to_le_bytes());
        assert_eq!(dst.properties().files_per_level[1..], levels[1..], "the levels below L0 as they were");
        assert!(dst.latest_sequence() >= src.latest_sequence() - 8_000);
        // Compaction of the imported tables drops what the range covers.
        dst.compact_range(None, None).unwrap();
        assert_eq!(all(&dst), want);

        // Merge operands need the merge operator that wrote them.
        let plain = open(&fs, "plain");
        let e = import(&plain, &bytes, 1 << 20).unwrap_err();
        assert_eq!(e.code(), "InvalidArgument", "{e}");
        assert!(e.to_string().contains("u64add"), "{e}");
        assert_eq!(plain.table_file_count(), 0);
    }

    /// A stream's chunks rewritten by `f` (payload by kind), checksums
    /// made anew: damage the chunk checksums cannot see.
    fn rewritten(bytes: &[u8], mut f: impl FnMut(u8, &mut Vec<u8>)) -> Vec<u8> {
        let mut out = bytes[..HEADER_LEN].to_vec();
        let mut at = HEADER_LEN;
        while at < bytes.len() {
            let kind = bytes[at];
            let len = decode_fixed32(&bytes[at + 1..]).unwrap() as usize;
            let mut payload = bytes[at + CHUNK_HEADER_LEN..at + CHUNK_HEADER_LEN + len].to_vec();
            f(kind, &mut payload);
            put_chunk(&mut out, decode_fixed32(&bytes[8..12]).unwrap(), kind, &payload);
            at += CHUNK_HEADER_LEN + len;
        }
        out
    }

    #[test]
    fn a_tables_import_reads_every_table_back_before_anything_is_visible() {
        let fs = MemFs::new();
        let src = open(&fs, "src");
        for i in 0..6_000 {
            src.put(&WriteOptions::default(), &key(i), &[(i % 7) as u8; 100]).unwrap();
        }
        src.flush().unwrap();
        let bytes = stream_of(&src, &ExportOptions::default(), 16 * 1024);
        assert_eq!(&rewritten(&bytes, |_, _| {}), &bytes);
        let mut n = 0;
        let mut check = |bytes: &[u8], want: &str, says: &str| {
            n += 1;
            let dst = open(&fs, &format!("bad{n}"));
            let e = import(&dst, bytes, 5000).unwrap_err();
            assert_eq!(e.code(), want, "{e}");
            assert!(e.to_string().contains(says), "{e}: want {says:?}");
            assert_eq!(all(&dst), Vec::new(), "nothing visible");
            let files = fs.list(&format!("bad{n}")).unwrap();
            assert!(!files.iter().any(|f| f.ends_with(".sst")), "no table file left: {files:?}");
        };
        // A flipped bit in a data block: its block checksum.
        let mut first = true;
        let flipped = rewritten(&bytes, |kind, p| {
            if kind == KIND_TABLE_BYTES && first {
                p[100] ^= 1;
                first = false;
            }
        });
        check(&flipped, "ChecksumMismatch", ".sst");
        // A table said to end before its last key.
        let narrowed = rewritten(&bytes, |kind, p| {
            if kind == KIND_TABLE {
                let (level, mut m) = decode_table_record(p).unwrap();
                m.largest = m.smallest.clone();
                *p = table_record(level, &m);
            }
        });
        check(&narrowed, "Corruption", "outside the bounds");
        // Entries numbered past the export's sequence number, and a
        // sequence number no database reaches.
        let renumbered = rewritten(&bytes, |kind, p| {
            if kind == KIND_END {
                p[8..16].copy_from_slice(&1u64.to_le_bytes());
            }
        });
        check(&renumbered, "Corruption", "past the export's");
        let too_far = rewritten(&bytes, |kind, p| {
            if kind == KIND_END {
                p[8..16].copy_from_slice(&(1u64 << 55).to_le_bytes());
            }
        });
        check(&too_far, "Corruption", "in the end record");
        // Two tables of one level said to overlap (a bound widened: every
        // entry still inside it).
        let mut smallest = None;
        let overlapping = rewritten(&bytes, |kind, p| {
            if kind == KIND_TABLE {
                let (_, mut m) = decode_table_record(p).unwrap();
                m.smallest = smallest.get_or_insert(m.smallest.clone()).clone();
                *p = table_record(1, &m);
            }
        });
        check(&overlapping, "Corruption", "overlap");
        // A table cut short.
        let mut cut = false;
        let short = rewritten(&bytes, |kind, p| {
            if kind == KIND_TABLE_BYTES && !cut {
                p.truncate(p.len() - 1);
                cut = true;
            }
        });
        check(&short, "Corruption", "before the one before it");
    }

    #[test]
    fn a_range_export_holds_the_range_and_skips_what_it_is_told() {
        let fs = MemFs::new();
        let src = open(&fs, "src");
        for i in 0..100 {
            src.put(&WriteOptions::default(), &key(i), b"v").unwrap();
        }
        let o = ExportOptions {
            lower: Some(key(10)),
            upper: Some(key(20)),
            skip: Some((key(12), key(15))),
            ..ExportOptions::default()
        };
        let bytes = stream_of(&src, &o, 100);
        let dst = open(&fs, "dst");
        import(&dst, &bytes, 33).unwrap();
        let keys: Vec<_> = all(&dst).into_iter().map(|(k, _)| k).collect();
        let want: Vec<_> = (10..20).filter(|i| !(12..15).contains(i)).map(key).collect();
        assert_eq!(keys, want);
    }

    #[test]
    fn damaged_or_truncated_streams_are_refused_and_leave_nothing() {
        let fs = MemFs::new();
        let src = open(&fs, "src");
        for i in 0..2000 {
            src.put(&WriteOptions::default(), &key(i), &[7u8; 100]).unwrap();
        }
        for (form, options) in [("entries", entries_form()), ("tables", ExportOptions::default())] {
            damaged_streams_are_refused(&fs, form, &stream_of(&src, &options, 16 * 1024));
        }
        let o = ExportOptions { lower: Some(key(1)), form: ExportForm::Tables, ..ExportOptions::default() };
        assert_eq!(src.export(&o).err().map(|e| e.code()), Some("InvalidArgument"), "tables are of a whole database");
    }

    fn damaged_streams_are_refused(fs: &MemFs, form: &str, bytes: &[u8]) {
        let bytes = bytes.to_vec();
        let mut n = 0;
        let mut check = |bytes: &[u8], want: &[&str]| {
            n += 1;
            let dst = open(fs, &format!("bad-{form}-{n}"));
            let e = import(&dst, bytes, 5000).unwrap_err();
            assert!(want.contains(&e.code()), "{e}: want one of {want:?}");
            assert_eq!(all(&dst), Vec::new(), "nothing visible");
            assert_eq!(dst.table_file_count(), 0);
            let files = fs.list(&format!("bad-{form}-{n}")).unwrap();
            assert!(!files.iter().any(|f| f.ends_with(".sst")), "no table file left: {files:?}");
        };
        // A flipped byte in a chunk's payload or its checksum: the checksum
        // says so; in a length or kind, the chunk's shape or its checksum.
        for at in [40, 23, bytes.len() / 2, bytes.len() - 3] {
            let mut b = bytes.clone();
            b[at] ^= 0x40;
            check(&b, &["ChecksumMismatch"]);
        }
        for at in [16, 18, 20] {
            let mut b = bytes.clone();
            b[at] ^= 0x40;
            check(&b, &["Corruption", "ChecksumMismatch"]);
        }
        let mut b = bytes.clone();
        b[3] ^= 1;
        check(&b, &["Corruption"]);
        // Truncated anywhere: no end record.
        for len in [0, 10, 16, 100, bytes.len() / 3, bytes.len() - 1] {
            check(&bytes[..len], &["Corruption"]);
        }
        // A newer format version.
        let mut b = bytes.clone();
        b[8] = 3;
        check(&b, &["NotSupported"]);
        // Bytes after the end.
        let mut b = bytes.clone();
        b.push(0);
        check(&b, &["Corruption"]);
    }

    #[test]
    fn an_import_needs_an_empty_database() {
        let fs = MemFs::new();
        let db = open(&fs, "db");
        db.put(&WriteOptions::default(), b"k", b"v").unwrap();
        assert_eq!(db.import().err().map(|e| e.code()), Some("InvalidArgument"));
    }
}
