//! The importer: checks a stream chunk by chunk and builds a new database
//! from it, visible only once the end record matched.

use std::sync::Arc;

use super::format::{
    chunk_check, decode_table_record, CHUNK_HEADER_LEN, EXPORT_MAGIC, EXPORT_VERSION, EXPORT_VERSION_ENTRIES,
    HEADER_LEN, KIND_END, KIND_ENTRIES, KIND_TABLE, KIND_TABLE_BYTES, MAX_CHUNK,
};
use super::run::{Run, RunIter};
use crate::compaction::job::TableJob;
use crate::compaction::resolver::KeyResolver;
use crate::db::options::{check_key, check_value};
use crate::db::{lock, Db, DbInner, StateGuard};
use crate::error::{messages, Error, Result};
use crate::format::checksum::unmask;
use crate::format::coding::{decode_fixed32, decode_fixed64, Reader};
use crate::format::key::{self, ValueType};
use crate::iter::InternalIterator;
use crate::range_del::FragmentedTombstones;
use crate::sst::Table;
use crate::version::set::sort_level;
use crate::version::{table_path, FileMeta, FileMetaData, NUM_LEVELS};

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
/// Entries an import gathers before writing them as table files.
const RUN_BYTES: usize = 8 << 20;
/// The name errors give the stream (it is not a file of the database).
pub(super) const STREAM: &str = "export stream";

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
    /// The tables of `tables`, opened (in the same order), for the read-order check at the end.
    opened: Vec<Arc<Table>>,
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
            return Err(Error::InvalidArgument(messages::IMPORT_NOT_EMPTY.into()));
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
            opened: Vec::new(),
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
            inner.options.table_options(true),
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
            let counted = count.map_or_else(|| "no count of".to_string(), |c| c.to_string());
            return Err(bad(format!("the end record counts {counted} {what}; the stream held {}", self.count)));
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
            if self.sequence >= crate::db::transaction::spill::OWN_SEQ_BASE {
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
        self.opened.push(table);
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
        super::read_order::check_read_order(&self.tables, &self.opened)?;
        self.opened.clear();
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
