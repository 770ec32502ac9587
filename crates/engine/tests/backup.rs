//! Exports written by siltdb in Chromium, in both forms (tests/e2e/backup.spec.ts,
//! which checks that Chromium still writes exactly these bytes), imported here
//! by the native engine: the same format in the browser and natively.

mod common;

use std::sync::Arc;

use common::read_all;

use silt_engine::fs::Fs;
use silt_engine::fs::MemFs;
use silt_engine::{Db, ExportForm, ExportOptions, Options, ReadOptions};

const FIXTURE: &[u8] = include_bytes!("fixtures/chromium-export-v1.siltdump");
const FIXTURE_TABLES: &[u8] = include_bytes!("fixtures/chromium-export-v2.siltdump");

fn import(db: &Db, bytes: &[u8]) -> silt_engine::Result<silt_engine::ImportReport> {
    let mut imp = db.import()?;
    imp.push(db, bytes)?;
    imp.finish(db)
}

fn has_the_fixture_entries(db: &Db) {
    let r = ReadOptions::default();
    for i in 0..500 {
        let k = format!("fixture-{i:04}");
        let want = format!("value-{i}-{}", ".".repeat(i % 37));
        assert_eq!(db.get(&r, k.as_bytes()).unwrap().as_deref(), Some(want.as_bytes()), "{k}");
    }
    assert_eq!(db.get(&r, b"").unwrap().as_deref(), Some(&b"the empty key"[..]));
    assert_eq!(db.get(&r, b"!notes!n1").unwrap().as_deref(), Some(&br#"{"title":"from Chromium"}"#[..]));
    assert_eq!(db.count(&r).unwrap(), 502);
    db.verify().unwrap();
}

fn export(db: &Db, form: ExportForm) -> Vec<u8> {
    let mut e = db.export(&ExportOptions { form, ..ExportOptions::default() }).unwrap();
    let mut out = Vec::new();
    while let Some(piece) = e.next_chunk(256 * 1024).unwrap() {
        out.extend_from_slice(&piece);
    }
    out
}

#[test]
fn an_export_from_chromium_imports_natively_with_every_entry() {
    let db = Db::open(Arc::new(MemFs::new()), "db", Options::default()).unwrap();
    let report = import(&db, FIXTURE).unwrap();
    // 500 keys, the empty key, and one key of the sublevel "notes".
    assert_eq!(report.entries, 502);
    has_the_fixture_entries(&db);

    // Exported again natively: the same bytes, but for the sequence number
    // in the end record (this database read at its own).
    let again = export(&db, ExportForm::Entries);
    assert_eq!(again.len(), FIXTURE.len());
    let end = FIXTURE.len() - 16 - 9; // the end record: kind, length, crc, count, sequence
    assert_eq!(again[..end], FIXTURE[..end]);
    assert_eq!(again[end + 9..end + 17], FIXTURE[end + 9..end + 17], "the same count");
}

#[test]
fn a_tables_export_from_chromium_imports_natively_and_exports_the_same_bytes() {
    let db = Db::open(Arc::new(MemFs::new()), "db", Options::default()).unwrap();
    let report = import(&db, FIXTURE_TABLES).unwrap();
    assert_eq!((report.entries, report.table_files), (502, 1), "Chromium's memtable, as one table");
    has_the_fixture_entries(&db);
    assert_eq!(db.latest_sequence(), 502, "the sequence number Chromium's database had");
    // Its tables exported again natively: the very bytes, end record too.
    assert!(export(&db, ExportForm::Tables) == FIXTURE_TABLES);
}

#[test]
fn a_crash_anywhere_in_a_tables_import_leaves_nothing_or_all_of_it() {
    use silt_engine::fs::{CrashMode, FaultFs};
    use silt_engine::WriteOptions;
    // A source with tables on two levels, a range deletion and a memtable.
    let o = Options { write_buffer_size: 64 * 1024, ..Options::default() };
    let src = Db::open(Arc::new(MemFs::new()), "src", o.clone()).unwrap();
    let w = WriteOptions::default();
    for i in 0..3_000u32 {
        src.put(&w, format!("k{i:05}").as_bytes(), &[i as u8; 60]).unwrap();
    }
    src.compact_range(None, None).unwrap();
    for i in (0..3_000u32).step_by(5) {
        src.put(&w, format!("k{i:05}").as_bytes(), b"again").unwrap();
    }
    src.delete_range(&w, b"k00100", b"k00200").unwrap();
    let want = read_all(&src);
    let bytes = export(&src, ExportForm::Tables);
    let import_in_pieces = |db: &Db| -> silt_engine::Result<()> {
        let mut imp = db.import()?;
        for p in bytes.chunks(20_000) {
            if let Err(e) = imp.push(db, p) {
                imp.abort(db);
                return Err(e);
            }
        }
        imp.finish(db).map(|_| ())
    };
    // The file-system calls of a whole import.
    let fs = FaultFs::new(Arc::new(MemFs::new()));
    let db = Db::open(Arc::new(fs.clone()), "db", o.clone()).unwrap();
    fs.start_trace();
    import_in_pieces(&db).unwrap();
    let calls = fs.trace().len() as u64;
    drop(db);
    assert!(calls >= 8, "{calls} calls");
    let (mut nothing, mut all) = (0, 0);
    // Each call failing in turn (and every one after it), then none.
    for point in 0..=calls {
        for mode in [CrashMode::DropUnsynced, CrashMode::TearUnsynced { seed: point * 7 + 1 }] {
            let fs = FaultFs::new(Arc::new(MemFs::new()));
            let db = Db::open(Arc::new(fs.clone()), "db", o.clone()).unwrap();
            fs.start_trace();
            fs.fail_after(Some(point));
            let done = import_in_pieces(&db).is_ok();
            fs.crash(mode).unwrap();
            drop(db);
            let db = Db::open(Arc::new(fs.clone()), "db", o.clone())
                .unwrap_or_else(|e| panic!("point {point} {mode:?}: reopen failed: {e}"));
            let got = read_all(&db);
            if got.is_empty() {
                assert!(!done, "point {point} {mode:?}: an import that returned is lost");
                nothing += 1;
            } else {
                assert!(got == want, "point {point} {mode:?}: part of an import is visible ({} keys)", got.len());
                all += 1;
            }
            db.verify().unwrap_or_else(|e| panic!("point {point} {mode:?}: {e}"));
            let ssts = fs.list("db").unwrap().iter().filter(|n| n.ends_with(".sst")).count() as u64;
            assert_eq!(ssts, db.properties().files_per_level.iter().sum::<u64>(), "point {point}: orphan tables");
        }
    }
    assert!(nothing > 0 && all > 0, "both outcomes reached: {nothing} and {all}");
}

#[test]
fn a_tables_import_waits_for_files_where_they_run_short_and_goes_on() {
    use silt_engine::fs::FaultFs;
    // A source of many small tables on several levels.
    let o = Options { write_buffer_size: 64 * 1024, target_file_size_base: 64 * 1024, ..Options::default() };
    let src = Db::open(Arc::new(MemFs::new()), "src", o.clone()).unwrap();
    let w = silt_engine::WriteOptions::default();
    for i in 0..20_000u32 {
        src.put(&w, format!("k{i:05}").as_bytes(), format!("value {i} {}", i.wrapping_mul(2_654_435_761)).as_bytes())
            .unwrap();
    }
    src.compact_range(None, None).unwrap();
    let tables = src.table_file_count();
    assert!(tables >= 6, "{tables} tables");
    let want = read_all(&src);
    let bytes = export(&src, ExportForm::Tables);
    // A pool that nothing grows during a call: the import is pushed the
    // whole stream at once and stops before a table whenever two files or
    // fewer are left, keeping the rest; each time, three more files.
    let fs = FaultFs::new(Arc::new(MemFs::new()));
    let db = Db::open(Arc::new(fs.clone()), "db", o).unwrap();
    let mut cap = fs.list("db").unwrap().len() + 3;
    fs.set_file_cap(Some(("db", cap)));
    let mut imp = db.import().unwrap();
    imp.push(&db, &bytes).unwrap();
    let mut waits = 0;
    while imp.wants_files() {
        waits += 1;
        cap += 3;
        fs.set_file_cap(Some(("db", cap)));
        imp.push(&db, &[]).unwrap();
    }
    let report = imp.finish(&db).unwrap();
    assert_eq!(report.table_files as usize, tables);
    assert!(waits >= 2, "{waits} waits for {tables} tables");
    assert!(read_all(&db) == want);
    db.verify().unwrap();
}

/// A table's middle entry numbered past the sequence its record and the
/// end record give (both lowered, checks recomputed) is refused: accepted,
/// it would appear once a later write reused its number.
#[test]
fn an_import_refuses_a_table_entry_numbered_past_the_stream() {
    let src = Db::open(Arc::new(MemFs::new()), "db", Options::default()).unwrap();
    let w = silt_engine::WriteOptions::default();
    src.put(&w, b"a", b"1").unwrap(); // sequence 1
    src.put(&w, b"z", b"2").unwrap(); // 2
    src.put(&w, b"m", b"3").unwrap(); // 3: the table's middle entry
    src.flush().unwrap();
    let stream = export(&src, ExportForm::Tables);
    let mut cs = common::export_chunks(&stream).unwrap();
    let mut lowered = 0;
    for (kind, payload) in cs.iter_mut() {
        match *kind {
            3 => {
                // level:u8 size:fixed64 smallest-seq:fixed64 largest-seq:fixed64 ...
                assert_eq!(u64::from_le_bytes(payload[17..25].try_into().unwrap()), 3);
                payload[17..25].copy_from_slice(&2u64.to_le_bytes());
                lowered += 1;
            }
            2 => {
                // count:fixed64 sequence:fixed64 name
                assert_eq!(u64::from_le_bytes(payload[8..16].try_into().unwrap()), 3);
                payload[8..16].copy_from_slice(&2u64.to_le_bytes());
                lowered += 1;
            }
            _ => {}
        }
    }
    assert_eq!(lowered, 2);
    let forged = common::export_stream_of(&stream, &cs);
    // The stream as written imports; the forged one does not.
    let db = Db::open(Arc::new(MemFs::new()), "db", Options::default()).unwrap();
    import(&db, &stream).unwrap();
    let db = Db::open(Arc::new(MemFs::new()), "db", Options::default()).unwrap();
    let e = import(&db, &forged).expect_err("a forged stream was accepted");
    assert!(e.is_corruption(), "{e}");
}

/// A stream pushed in small pieces costs time linear in its size: a chunk
/// of many megabytes in 4 KiB pieces imports as fast as given whole, give
/// or take (each push copied the whole unfinished chunk again before).
#[test]
fn an_import_in_small_pieces_is_linear_in_the_chunk_size() {
    let src = Db::open(Arc::new(MemFs::new()), "db", Options::default()).unwrap();
    let w = silt_engine::WriteOptions::default();
    let value = vec![b'v'; 1000];
    for i in 0..16_000u32 {
        src.put(&w, format!("k{i:06}").as_bytes(), &value).unwrap();
    }
    // One entries chunk of about 16 MB.
    let mut e = src.export(&ExportOptions { form: ExportForm::Entries, ..ExportOptions::default() }).unwrap();
    let mut stream = Vec::new();
    while let Some(piece) = e.next_chunk(64 << 20).unwrap() {
        stream.extend_from_slice(&piece);
    }
    assert!(stream.len() > 15 << 20);
    let db = Db::open(Arc::new(MemFs::new()), "db", Options::default()).unwrap();
    let mut imp = db.import().unwrap();
    // Counted, not timed: the bytes the importer copies to hold chunks
    // back (each push used to copy the whole unfinished chunk again).
    let mut pushes = 0u64;
    for p in stream.chunks(4096) {
        imp.push(&db, p).unwrap();
        pushes += 1;
    }
    assert!(pushes > 3000);
    let report = imp.finish(&db).unwrap();
    assert_eq!(report.entries, 16_000);
    assert_eq!(report.stream_bytes, stream.len() as u64);
    assert!(report.buffered_bytes <= 2 * report.stream_bytes, "{report:?}");
}

/// A snapshot of an empty database must never see an import: the import is
/// refused (`Busy`, saying to release it) while one lives, at the start and
/// at the end, in both forms.
#[test]
fn an_import_is_refused_while_a_snapshot_of_the_empty_database_lives() {
    let src = Db::open(Arc::new(MemFs::new()), "db", Options::default()).unwrap();
    src.put(&silt_engine::WriteOptions::default(), b"k", b"v").unwrap();
    for form in [ExportForm::Tables, ExportForm::Entries] {
        let stream = export(&src, form);
        let db = Db::open(Arc::new(MemFs::new()), "db", Options::default()).unwrap();
        // Taken before the import starts.
        let snap = db.snapshot();
        let e = import(&db, &stream).expect_err("an import under a live snapshot");
        assert!(matches!(e, silt_engine::Error::Busy(_)), "{e}");
        assert_eq!(db.get(&ReadOptions { snapshot: Some(&snap), ..Default::default() }, b"k").unwrap(), None);
        // Taken while it runs.
        drop(snap);
        let mut imp = db.import().unwrap();
        imp.push(&db, &stream).unwrap();
        let snap = db.snapshot();
        let e = imp.finish(&db).expect_err("an import finished under a live snapshot");
        assert!(matches!(e, silt_engine::Error::Busy(_)), "{e}");
        assert_eq!(db.get(&ReadOptions { snapshot: Some(&snap), ..Default::default() }, b"k").unwrap(), None);
        drop(snap);
        import(&db, &stream).unwrap();
        assert_eq!(db.get(&ReadOptions::default(), b"k").unwrap().as_deref(), Some(&b"v"[..]));
    }
}

/// An importer dropped unfinished (without `abort`) gives back the table
/// files it wrote at once, not at the next open.
#[test]
fn a_dropped_importer_deletes_its_files() {
    let src = Db::open(Arc::new(MemFs::new()), "db", Options::default()).unwrap();
    let w = silt_engine::WriteOptions::default();
    for i in 0..2000u32 {
        src.put(&w, format!("k{i:05}").as_bytes(), &[b'v'; 100]).unwrap();
    }
    src.flush().unwrap();
    let stream = export(&src, ExportForm::Tables);
    let fs = MemFs::new();
    let db = Db::open(Arc::new(fs.clone()), "db", Options::default()).unwrap();
    let tables = |fs: &MemFs| fs.list("db").unwrap().iter().filter(|n| n.ends_with(".sst")).count();
    let mut imp = db.import().unwrap();
    imp.push(&db, &stream[..stream.len() - 64]).unwrap(); // all but the end record
    assert!(tables(&fs) > 0, "the import wrote no table yet");
    drop(imp);
    assert_eq!(tables(&fs), 0, "a dropped importer left its files");
    import(&db, &stream).unwrap();
    assert_eq!(db.count(&ReadOptions::default()).unwrap(), 2000);
}

/// Issue 42, item 9: an `append` merge can grow a value past `MAX_VALUE_LEN`
/// (64 MiB), which no import takes. An entries export of it would be a
/// backup that cannot be restored: the export fails instead, naming the
/// key and saying what to do. The tables form, which keeps the value in a
/// table file, exports and imports it.
#[test]
fn a_value_merges_grew_past_the_limit_fails_an_entries_export_and_passes_a_tables_one() {
    let options = || Options { merge_operator: Some(Arc::new(silt_engine::AppendOperator)), ..Options::default() };
    let src = Db::open(Arc::new(MemFs::new()), "db", options()).unwrap();
    let w = silt_engine::WriteOptions::default();
    src.put(&w, b"before", b"1").unwrap();
    let part = vec![7u8; 24 << 20];
    for _ in 0..3 {
        src.merge(&w, b"log", &part).unwrap();
    }
    src.put(&w, b"z", b"2").unwrap();
    let grown = src.get(&ReadOptions::default(), b"log").unwrap().unwrap();
    assert_eq!(grown.len(), 72 << 20);

    let mut e = src.export(&ExportOptions { form: ExportForm::Entries, ..ExportOptions::default() }).unwrap();
    let err = loop {
        match e.next_chunk(256 * 1024) {
            Ok(Some(_)) => {}
            Ok(None) => panic!("an entries export of a value past the limit went through"),
            Err(err) => break err,
        }
    };
    assert_eq!(err.code(), "InvalidArgument", "{err}");
    let message = err.to_string();
    assert!(message.contains("\"log\"") && message.contains("tables"), "{message}");

    let dst = Db::open(Arc::new(MemFs::new()), "db", options()).unwrap();
    import(&dst, &export(&src, ExportForm::Tables)).unwrap();
    assert_eq!(dst.get(&ReadOptions::default(), b"log").unwrap().as_deref(), Some(&grown[..]));
    assert_eq!(dst.get(&ReadOptions::default(), b"z").unwrap().as_deref(), Some(&b"2"[..]));
}

/// A tables export whose table records were given other levels, each
/// record still consistent: a newer version of a key in a table read after
/// an older one. Gets and scans of it would disagree: the import refuses
/// it (found by the import property test's soak, case 21590).
#[test]
fn an_import_refuses_tables_whose_levels_put_a_newer_version_below_an_older_one() {
    let src = Db::open(Arc::new(MemFs::new()), "db", Options::default()).unwrap();
    let w = silt_engine::WriteOptions::default();
    src.put(&w, b"k", b"old").unwrap();
    src.compact_range(None, None).unwrap(); // one table, last level
    src.put(&w, b"k", b"new").unwrap();
    src.flush().unwrap(); // one table, L0
    let stream = export(&src, ExportForm::Tables);
    let chunks = common::export_chunks(&stream).unwrap();
    // Table records (kind 3): the last level's first (oldest data first), then L0's.
    let levels: Vec<u8> = chunks.iter().filter(|c| c.0 == 3).map(|c| c.1[0]).collect();
    assert_eq!(levels, vec![6, 0]);
    let relevel = |old_to: u8, new_to: u8| {
        let mut cs = chunks.clone();
        let mut records = cs.iter_mut().filter(|c| c.0 == 3);
        records.next().unwrap().1[0] = old_to;
        records.next().unwrap().1[0] = new_to;
        common::export_stream_of(&stream, &cs)
    };
    // As exported, and with both tables moved down in order: accepted.
    for (old_to, new_to) in [(6, 0), (6, 5)] {
        let dst = Db::open(Arc::new(MemFs::new()), "db", Options::default()).unwrap();
        import(&dst, &relevel(old_to, new_to)).unwrap();
        assert_eq!(dst.get(&ReadOptions::default(), b"k").unwrap().as_deref(), Some(&b"new"[..]));
    }
    // The old version above the new one: refused, nothing left.
    for (old_to, new_to) in [(4, 5), (0, 6), (1, 2)] {
        let dst = Db::open(Arc::new(MemFs::new()), "db", Options::default()).unwrap();
        let err = import(&dst, &relevel(old_to, new_to)).unwrap_err();
        assert_eq!(err.code(), "Corruption", "{err}");
        assert!(err.to_string().contains("reads would disagree"), "{err}");
        assert_eq!(dst.get(&ReadOptions::default(), b"k").unwrap(), None);
    }
}

/// Table files in the database's directory.
fn tables_on_disk(fs: &MemFs) -> usize {
    fs.list("db").unwrap().iter().filter(|n| n.ends_with(".sst")).count()
}

#[test]
fn a_tables_export_let_go_deletes_the_files_it_alone_kept() {
    // The files a compaction replaced while an export read them are the
    // export's alone: they go when it is dropped, with no background job
    // or write after it (siltdb runs background work only when some is due).
    let fs = Arc::new(MemFs::new());
    let db = Db::open(fs.clone(), "db", Options::default()).unwrap();
    let w = silt_engine::WriteOptions::default();
    for round in 0..3 {
        for i in 0..100 {
            db.put(&w, format!("k{i:03}").as_bytes(), format!("v{round}").as_bytes()).unwrap();
        }
        db.flush().unwrap();
    }
    let live = |db: &Db| db.properties().files_per_level.iter().sum::<u64>() as usize;
    assert_eq!(tables_on_disk(&fs), 3);
    let mut e = db.export(&ExportOptions { form: ExportForm::Tables, ..ExportOptions::default() }).unwrap();
    e.next_chunk(1024).unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(live(&db), 1);
    assert_eq!(tables_on_disk(&fs), 4, "the export's three tables kept beside the compaction's output");
    // Read to the end, or given up half way: either way its files go.
    drop(e);
    assert_eq!(tables_on_disk(&fs), 1);
    // An export that ends where the version is still current deletes nothing.
    let mut e = db.export(&ExportOptions { form: ExportForm::Tables, ..ExportOptions::default() }).unwrap();
    while e.next_chunk(64 * 1024).unwrap().is_some() {}
    drop(e);
    assert_eq!(tables_on_disk(&fs), 1);
    assert_eq!(db.get(&ReadOptions::default(), b"k042").unwrap().as_deref(), Some(&b"v2"[..]));
}
