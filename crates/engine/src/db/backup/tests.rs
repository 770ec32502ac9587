//! Round trips of both forms, and streams damaged in every way an import
//! must refuse.

use std::sync::Arc;

use super::format::{
    decode_table_record, put_chunk, table_record, CHUNK_HEADER_LEN, HEADER_LEN, KIND_END, KIND_TABLE, KIND_TABLE_BYTES,
};
use super::{ExportForm, ExportOptions, ImportReport};
use crate::db::{Db, Options, ReadOptions, WriteOptions};
use crate::error::Result;
use crate::format::coding::decode_fixed32;
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
