//! Exports and imports: a consistent snapshot of a range of keys as one
//! byte stream (chunks, each checksummed), and a new database built from
//! one straight into table files of the last level, with one manifest edit
//! at the end: nothing of an import is visible until every chunk has been
//! checked and the stream's end record matches.
//!
//! ## Format
//!
//! ```text
//! stream  := header chunk* end
//! header  := "SILTDUMP" version:fixed32 (= 1) flags:fixed32 (= 0)
//! chunk   := kind:u8 (1) length:fixed32 crc:fixed32 payload[length]
//! end     := kind:u8 (2) length:fixed32 (= 16) crc:fixed32 count:fixed64 sequence:fixed64
//! payload := (varint32 key-length, key, varint32 value-length, value)*
//! crc     := masked CRC32C of kind and payload
//! ```
//!
//! Keys are in strictly ascending order over the whole stream; values are
//! as reads see them (merges applied). `count` is the number of entries,
//! `sequence` the sequence number the export read at (for information).
//! `docs/format.md` has the same, with the reasons.

use std::sync::Arc;

use super::{lock, Db, ReadOptions, Snapshot, StateGuard};
use crate::compaction::job::TableJob;
use crate::compaction::resolver::KeyResolver;
use crate::db::options::{check_key, check_value};
use crate::error::{Error, Result};
use crate::format::checksum::{crc32c, crc32c_extend, mask, unmask};
use crate::format::coding::{decode_fixed32, decode_fixed64, put_fixed32, put_fixed64, put_varint32, Reader};
use crate::format::key::{self, ValueType};
use crate::iter::InternalIterator;
use crate::range_del::FragmentedTombstones;
use crate::version::{FileMeta, VersionEdit, NUM_LEVELS};
use crate::DbIterator;

/// The first bytes of every export.
pub const EXPORT_MAGIC: &[u8; 8] = b"SILTDUMP";
/// The export format this engine writes (and the newest it reads).
pub const EXPORT_VERSION: u32 = 1;
const HEADER_LEN: usize = 16;
const CHUNK_HEADER_LEN: usize = 9;
const KIND_ENTRIES: u8 = 1;
const KIND_END: u8 = 2;
/// The largest chunk an import accepts (an export writes far smaller ones).
const MAX_CHUNK: usize = 256 << 20;
/// Entries an import gathers before writing them as table files.
const RUN_BYTES: usize = 8 << 20;
/// The name errors give the stream (it is not a file of the database).
const STREAM: &str = "export stream";

fn chunk_crc(kind: u8, payload: &[u8]) -> u32 {
    mask(crc32c_extend(crc32c(&[kind]), payload))
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
}

/// An export in progress: hands out the stream in pieces
/// ([`Exporter::next_chunk`]), reading at the snapshot taken when it began.
pub struct Exporter {
    it: DbIterator,
    _snapshot: Snapshot,
    sequence: u64,
    skip: Option<(Vec<u8>, Vec<u8>)>,
    header_done: bool,
    end_done: bool,
    count: u64,
}

impl Db {
    /// Starts an export of the keys `options` cover, as of now.
    pub fn export(&self, options: &ExportOptions) -> Result<Exporter> {
        self.check_open()?;
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
            it,
            sequence: snapshot.sequence(),
            _snapshot: snapshot,
            skip: options.skip.clone(),
            header_done: false,
            end_done: false,
            count: 0,
        })
    }
}

impl Exporter {
    /// The next piece of the stream, about `max_bytes` long (more when one
    /// entry is larger), or `None` once the whole stream was handed out.
    pub fn next_chunk(&mut self, max_bytes: usize) -> Result<Option<Vec<u8>>> {
        if self.end_done {
            return Ok(None);
        }
        let mut out = Vec::with_capacity(max_bytes.min(1 << 20) + 64);
        if !self.header_done {
            out.extend_from_slice(EXPORT_MAGIC);
            put_fixed32(&mut out, EXPORT_VERSION);
            put_fixed32(&mut out, 0);
            self.header_done = true;
        }
        let mut payload = Vec::new();
        while self.it.valid() && payload.len() < max_bytes {
            let k = self.it.key();
            let skipped = self.skip.as_ref().is_some_and(|(lo, hi)| k >= lo.as_slice() && k < hi.as_slice());
            if !skipped {
                put_varint32(&mut payload, k.len() as u32);
                payload.extend_from_slice(k);
                let v = self.it.value();
                put_varint32(&mut payload, v.len() as u32);
                payload.extend_from_slice(v);
                self.count += 1;
            }
            self.it.next();
        }
        self.it.status()?;
        if !payload.is_empty() {
            out.push(KIND_ENTRIES);
            put_fixed32(&mut out, payload.len() as u32);
            put_fixed32(&mut out, chunk_crc(KIND_ENTRIES, &payload));
            out.extend_from_slice(&payload);
        }
        if !self.it.valid() {
            let mut end = Vec::with_capacity(16);
            put_fixed64(&mut end, self.count);
            put_fixed64(&mut end, self.sequence);
            out.push(KIND_END);
            put_fixed32(&mut out, end.len() as u32);
            put_fixed32(&mut out, chunk_crc(KIND_END, &end));
            out.extend_from_slice(&end);
            self.end_done = true;
        }
        Ok(Some(out))
    }

    /// Entries handed out so far.
    pub fn count(&self) -> u64 {
        self.count
    }
}

/// What an import read and wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImportReport {
    pub entries: u64,
    pub table_files: u64,
    pub table_bytes: u64,
    pub stream_bytes: u64,
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

/// An import in progress into an empty database: feed it the stream in
/// pieces of any size ([`Importer::push`]), then [`Importer::finish`] (or
/// [`Importer::abort`]). Until `finish` succeeds, nothing is visible.
pub struct Importer {
    buf: Vec<u8>,
    /// Stream bytes consumed before `buf` (for error offsets).
    offset: u64,
    stage: Stage,
    run: Run,
    last_key: Option<Vec<u8>>,
    count: u64,
    outputs: Vec<FileMeta>,
    allocated: Vec<u64>,
    report: ImportReport,
}

impl Db {
    /// Starts an import. The database must be empty (no table files, no
    /// writes): the imported entries become its last level.
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
        Ok(Importer {
            buf: Vec::new(),
            offset: 0,
            stage: Stage::Header,
            run: Run::default(),
            last_key: None,
            count: 0,
            outputs: Vec::new(),
            allocated: Vec::new(),
            report: ImportReport::default(),
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
        self.report.stream_bytes += bytes.len() as u64;
        self.buf.extend_from_slice(bytes);
        let mut at = 0;
        loop {
            match self.stage {
                Stage::Header => {
                    if self.buf.len() - at < HEADER_LEN {
                        break;
                    }
                    let h = &self.buf[at..at + HEADER_LEN];
                    if &h[..8] != EXPORT_MAGIC {
                        return Err(Error::corruption(STREAM, 0, "not a Silt export (no SILTDUMP header)"));
                    }
                    let version = decode_fixed32(&h[8..12]).unwrap_or(0);
                    if version != EXPORT_VERSION {
                        return Err(Error::NotSupported(format!(
                            "an export of format version {version}; this version of Silt reads version {EXPORT_VERSION}"
                        )));
                    }
                    at += HEADER_LEN;
                    self.stage = Stage::Chunks;
                }
                Stage::Chunks => {
                    if self.buf.len() - at < CHUNK_HEADER_LEN {
                        break;
                    }
                    let here = self.offset + at as u64;
                    let kind = self.buf[at];
                    let len = decode_fixed32(&self.buf[at + 1..at + 5]).unwrap_or(0) as usize;
                    if len > MAX_CHUNK || (kind != KIND_ENTRIES && kind != KIND_END) {
                        return Err(Error::corruption(STREAM, here, format!("a chunk of kind {kind} and {len} bytes")));
                    }
                    if self.buf.len() - at - CHUNK_HEADER_LEN < len {
                        break;
                    }
                    let stored = decode_fixed32(&self.buf[at + 5..at + 9]).unwrap_or(0);
                    let start = at + CHUNK_HEADER_LEN;
                    let payload = self.buf[start..start + len].to_vec();
                    let got = chunk_crc(kind, &payload);
                    if got != stored {
                        return Err(Error::ChecksumMismatch {
                            file: STREAM.into(),
                            offset: here,
                            expected: unmask(stored),
                            got: unmask(got),
                        });
                    }
                    at = start + len;
                    if kind == KIND_END {
                        let count = decode_fixed64(&payload).filter(|_| len == 16);
                        if count != Some(self.count) {
                            return Err(Error::corruption(
                                STREAM,
                                here,
                                format!("the end record counts {count:?} entries; the stream held {}", self.count),
                            ));
                        }
                        self.stage = Stage::Done;
                    } else {
                        self.entries(db, &payload, here + CHUNK_HEADER_LEN as u64)?;
                    }
                }
                Stage::Done => {
                    if at < self.buf.len() {
                        return Err(Error::corruption(STREAM, self.offset + at as u64, "bytes after the end record"));
                    }
                    break;
                }
            }
        }
        self.buf.drain(..at);
        self.offset += at as u64;
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
        let run = std::mem::take(&mut self.run);
        db.write_run(self, run)?;
        let inner = &*db.inner;
        let mut st = StateGuard::new(inner);
        st.wait_for_job();
        if !st.versions.current_ref().levels[NUM_LEVELS - 1].is_empty() || st.compaction.is_some() {
            return Err(Error::Busy(format!("database {} was written while the import ran", inner.dir)));
        }
        let edit = VersionEdit {
            added: self.outputs.iter().map(|m| (NUM_LEVELS - 1, m.clone())).collect(),
            ..VersionEdit::default()
        };
        st.versions.log_and_apply(edit)?;
        for n in &self.allocated {
            st.pending_outputs.remove(n);
        }
        self.allocated.clear();
        db.install_super_version(&mut st);
        self.report.entries = self.count;
        Ok(self.report)
    }

    /// Gives up: deletes the table files written so far.
    pub fn abort(self, db: &Db) {
        let inner = &*db.inner;
        let mut st = lock(&inner.state);
        for n in &self.allocated {
            st.pending_outputs.remove(n);
        }
        inner.delete_obsolete_files(&mut st);
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
        let bytes = stream_of(&src, &ExportOptions::default(), 64 * 1024);
        // Writes after the export began are not in it.
        for piece in [1 << 20, 4096, 7] {
            let dst = open(&fs, &format!("dst{piece}"));
            let report = import(&dst, &bytes, piece).unwrap();
            assert_eq!(report.entries as usize, snap_entries.len());
            assert!(report.table_files >= 1);
            assert_eq!(all(&dst), snap_entries);
            assert_eq!(dst.get(&ReadOptions::default(), b"").unwrap().as_deref(), Some(&b"the empty key"[..]));
            // A new write is newer than every imported entry.
            dst.put(&w, &key(5), b"new").unwrap();
            assert_eq!(dst.get(&ReadOptions::default(), &key(5)).unwrap().as_deref(), Some(&b"new"[..]));
            drop(dst);
            let again = open(&fs, &format!("dst{piece}"));
            assert_eq!(again.count(&ReadOptions::default()).unwrap() as usize, snap_entries.len());
        }
    }

    #[test]
    fn a_range_export_holds_the_range_and_skips_what_it_is_told() {
        let fs = MemFs::new();
        let src = open(&fs, "src");
        for i in 0..100 {
            src.put(&WriteOptions::default(), &key(i), b"v").unwrap();
        }
        let o = ExportOptions { lower: Some(key(10)), upper: Some(key(20)), skip: Some((key(12), key(15))) };
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
        let bytes = stream_of(&src, &ExportOptions::default(), 16 * 1024);
        let mut n = 0;
        let mut check = |bytes: &[u8], want: &[&str]| {
            n += 1;
            let dst = open(&fs, &format!("bad{n}"));
            let e = import(&dst, bytes, 5000).unwrap_err();
            assert!(want.contains(&e.code()), "{e}: want one of {want:?}");
            assert_eq!(all(&dst), Vec::new(), "nothing visible");
            assert_eq!(dst.table_file_count(), 0);
            let files = fs.list(&format!("bad{n}")).unwrap();
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
        b[8] = 2;
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
